//! When to run (docs/runner.md, "runAt"), as a pure decision: given the schedule,
//! the time, and what this node already did, run now, wait, or stay idle.

use chrono::{DateTime, Duration, Utc};
use combo_api::{RunAt, RunId, WorkloadType};

/// A cron fire this recent before the runner saw the schedule still runs: a
/// runner that starts (or restarts) just after a fire does not skip it.
pub const CRON_CATCH_UP: Duration = Duration::seconds(60);

/// What this node has done so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct History {
    /// The last run of `runAt` this node completed (from its report, then
    /// from memory). A run-now run leaves it as it is, so that a timestamp
    /// already run is not run again after one.
    pub completed: Option<RunId>,
    /// The last run-now request this node ran (from its report, then from
    /// memory).
    pub run_now: Option<RunId>,
    /// Whether this runner process has run at all (for an empty runAt on a Pod).
    pub ran_since_start: bool,
}

/// What to do next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Run this run of `runAt` now.
    Run(RunId),
    /// Run this run-now request now (docs/runner.md, "Run now").
    RunNow(RunId),
    /// Nothing is due; look again at this time (or when the Debugger changes).
    Wait(DateTime<Utc>),
    /// Nothing will ever be due until the Debugger changes.
    Idle,
}

/// Decides what to do at `now`. `since` is when this runner first saw the
/// current runAt value; cron fires before `since - CRON_CATCH_UP` are missed,
/// not caught up. A timestamp in the past runs at once unless it is the run
/// this node already completed.
pub fn decide(
    run_at: &RunAt,
    workload: WorkloadType,
    now: DateTime<Utc>,
    since: DateTime<Utc>,
    history: History,
) -> Decision {
    match run_at {
        RunAt::Empty => match workload {
            WorkloadType::Pod if !history.ran_since_start => Decision::Run(RunId::at(now)),
            _ => Decision::Idle,
        },
        RunAt::Once(t) => {
            let id = RunId::at(*t);
            if *t > now {
                Decision::Wait(*t)
            } else if history.completed == Some(id) {
                Decision::Idle
            } else {
                Decision::Run(id)
            }
        }
        RunAt::Cron(..) => {
            if let Some(due) = run_at.latest_due(now) {
                let id = RunId::at(due);
                // A fire before a run-now this node ran is not run after
                // it: the node has been inspected since, and its result
                // would go back in time.
                let fresh = history.completed.is_none_or(|c| c < id)
                    && history.run_now.is_none_or(|r| r < id);
                if fresh && due >= since - CRON_CATCH_UP {
                    return Decision::Run(id);
                }
            }
            match run_at.next_after(now) {
                Some(t) => Decision::Wait(t),
                None => Decision::Idle,
            }
        }
    }
}

/// `scheduled`, what `runAt` asks for (see [`decide`]), with the run-now
/// request `asked` folded in. A request this node has not run yet runs
/// first once its time has come; before that it is waited for like a
/// scheduled time. It never changes what `runAt` asks for: the schedule's
/// runs still happen, before and after it.
pub fn with_run_now(
    scheduled: Decision,
    asked: Option<RunId>,
    now: DateTime<Utc>,
    history: History,
) -> Decision {
    let Some(asked) = asked.filter(|a| history.run_now != Some(*a)) else {
        return scheduled;
    };
    if asked.0 <= now {
        return Decision::RunNow(asked);
    }
    match scheduled {
        Decision::Run(_) | Decision::RunNow(_) => scheduled,
        Decision::Wait(t) if t <= asked.0 => scheduled,
        Decision::Wait(_) | Decision::Idle => Decision::Wait(asked.0),
    }
}

#[cfg(test)]
#[path = "schedule_tests.rs"]
mod run_now_tests;

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().to_utc()
    }

    fn ran(s: &str) -> History {
        History {
            completed: Some(RunId::at(t(s))),
            ran_since_start: true,
            ..History::default()
        }
    }

    const DS: WorkloadType = WorkloadType::Daemonset;

    #[test]
    fn empty_run_at_idles_a_daemonset_and_runs_a_pod_once_at_start() {
        let now = t("2026-11-22T06:00:00.5Z");
        assert_eq!(
            decide(&RunAt::Empty, DS, now, now, History::default()),
            Decision::Idle
        );
        assert_eq!(
            decide(
                &RunAt::Empty,
                WorkloadType::Pod,
                now,
                now,
                History::default()
            ),
            Decision::Run(RunId::at(now))
        );
        let after = History {
            ran_since_start: true,
            ..History::default()
        };
        assert_eq!(
            decide(&RunAt::Empty, WorkloadType::Pod, now, now, after),
            Decision::Idle
        );
    }

    #[test]
    fn a_future_timestamp_waits_for_its_time_then_runs_once() {
        let at = RunAt::parse("2026-11-22T06:00:00Z").unwrap();
        let before = t("2026-11-22T05:59:00Z");
        assert_eq!(
            decide(&at, DS, before, before, History::default()),
            Decision::Wait(t("2026-11-22T06:00:00Z"))
        );
        let now = t("2026-11-22T06:00:00Z");
        assert_eq!(
            decide(&at, DS, now, before, History::default()),
            Decision::Run(RunId::at(now))
        );
        assert_eq!(
            decide(&at, DS, now, before, ran("2026-11-22T06:00:00Z")),
            Decision::Idle
        );
    }

    #[test]
    fn a_past_timestamp_runs_at_once_but_never_twice_even_after_a_restart() {
        let at = RunAt::parse("2026-11-20T00:00:00Z").unwrap();
        let now = t("2026-11-22T06:00:00Z");
        assert_eq!(
            decide(&at, DS, now, now, ran("2026-11-19T00:00:00Z")),
            Decision::Run(RunId::at(t("2026-11-20T00:00:00Z")))
        );
        // A restarted runner knows only what its summary key records.
        let restarted = History {
            completed: Some(RunId::at(t("2026-11-20T00:00:00Z"))),
            ..History::default()
        };
        assert_eq!(decide(&at, DS, now, now, restarted), Decision::Idle);
    }

    #[test]
    fn cron_waits_for_the_next_fire_and_runs_each_fire_once() {
        let cron = RunAt::parse("0 */6 * * *").unwrap();
        let since = t("2026-11-22T05:00:00Z");
        assert_eq!(
            decide(
                &cron,
                DS,
                t("2026-11-22T05:30:00Z"),
                since,
                History::default()
            ),
            Decision::Wait(t("2026-11-22T06:00:00Z"))
        );
        let fire = t("2026-11-22T06:00:00Z");
        assert_eq!(
            decide(&cron, DS, fire, since, History::default()),
            Decision::Run(RunId::at(fire))
        );
        assert_eq!(
            decide(
                &cron,
                DS,
                t("2026-11-22T06:00:09Z"),
                since,
                ran("2026-11-22T06:00:00Z")
            ),
            Decision::Wait(t("2026-11-22T12:00:00Z"))
        );
    }

    #[test]
    fn cron_does_not_catch_up_old_fires_but_runs_one_just_missed() {
        let cron = RunAt::parse("0 */6 * * *").unwrap();
        let late = t("2026-11-22T08:00:00Z");
        assert_eq!(
            decide(&cron, DS, late, late, History::default()),
            Decision::Wait(t("2026-11-22T12:00:00Z"))
        );
        let just_after = t("2026-11-22T06:00:30Z");
        assert_eq!(
            decide(&cron, DS, just_after, just_after, History::default()),
            Decision::Run(RunId::at(t("2026-11-22T06:00:00Z")))
        );
    }

    #[test]
    fn a_timestamp_far_in_the_past_runs_once_and_then_stays_idle() {
        let now = t("2026-11-24T03:00:00Z");
        let epoch = RunAt::parse("1970-01-01T00:00:00Z").unwrap();
        let id = RunId::at(t("1970-01-01T00:00:00Z"));
        assert_eq!(
            decide(&epoch, DS, now, now, History::default()),
            Decision::Run(id)
        );
        assert_eq!(
            decide(&epoch, DS, now, now, ran("1970-01-01T00:00:00Z")),
            Decision::Idle
        );
    }

    #[test]
    fn a_timestamp_far_in_the_future_waits_for_it() {
        let now = t("2026-11-24T03:00:00Z");
        let far = t("9999-12-31T23:59:59Z");
        let at = RunAt::parse("9999-12-31T23:59:59Z").unwrap();
        assert_eq!(
            decide(&at, DS, now, now, History::default()),
            Decision::Wait(far)
        );
        // An offset that moves it past the year 9999 in UTC is still a time.
        assert!(RunAt::parse("9999-12-31T23:59:59-01:00").is_ok());
    }

    #[test]
    fn a_leap_day_cron_fires_only_in_leap_years() {
        let leap = RunAt::parse("0 6 29 2 *").unwrap();
        // From 2026 the next 29 February is in 2028.
        assert_eq!(
            decide(
                &leap,
                DS,
                t("2026-11-24T03:00:00Z"),
                t("2026-11-24T03:00:00Z"),
                History::default()
            ),
            Decision::Wait(t("2028-02-29T06:00:00Z"))
        );
        // At the fire time it runs; the next one is four years on (2100 is
        // not a leap year, but that is far).
        let fire = t("2028-02-29T06:00:00Z");
        assert_eq!(
            decide(&leap, DS, fire, fire, History::default()),
            Decision::Run(RunId::at(fire))
        );
        assert_eq!(
            decide(&leap, DS, fire, fire, ran("2028-02-29T06:00:00Z")),
            Decision::Wait(t("2032-02-29T06:00:00Z"))
        );
        // A leap-day timestamp is a valid time; 29 February of 2027 is not.
        assert!(RunAt::parse("2028-02-29T00:00:00Z").is_ok());
        assert!(RunAt::parse("2027-02-29T00:00:00Z").is_err());
    }

    #[test]
    fn a_cron_that_never_fires_leaves_the_runner_idle() {
        // 30 February: refused by RunAt::parse (the operator says
        // InvalidSpec), yet a schedule like it stays idle here.
        assert!(RunAt::parse("0 0 30 2 *").is_err());
        let never = RunAt::Cron(
            Box::new(std::str::FromStr::from_str("0 0 0 30 2 *").unwrap()),
            "0 0 30 2 *".into(),
        );
        let now = t("2026-11-24T03:00:00Z");
        assert_eq!(
            decide(&never, DS, now, now, History::default()),
            Decision::Idle
        );
    }

    #[test]
    fn invalid_cron_fields_are_refused_with_the_value_named() {
        for bad in [
            "60 * * * *",
            "* 24 * * *",
            "* * 0 * *",
            "* * 32 * *",
            "* * * 13 *",
            "* * * * 8",
            "*/0 * * * *",
            "a b c d e",
            "* * * * * *",
            "1-",
        ] {
            let e = RunAt::parse(bad).expect_err(bad);
            assert_eq!(e.value, bad);
            assert!(e.to_string().contains(bad), "{e}");
        }
    }
}
