//! Missed runs: which run is checked now, which nodes have not reported
//! it, and the Debugger's `RunsMissed` condition. Pure; the clock and the
//! time the operator first expected runs of the current `runAt` are passed
//! in (docs/operator.md#missed-runs).

use std::collections::BTreeSet;

use chrono::{DateTime, Duration, SecondsFormat, Utc};
use combo_api::RunAt;

use crate::reports::store::NodeReports;

/// Rounds of scripts a run of the default scripts takes at most: 34
/// scripts, 8 at a time (`--parallel`).
pub const ROUNDS: i64 = 5;
/// Added to the rounds: the runners' write spread (at most 10 s) and the
/// pods' own lateness.
pub const SLACK: Duration = Duration::seconds(30);
/// Nodes named in the `RunsMissed` message; the count covers the others.
pub const NAMED: usize = 5;

/// Type of the Debugger condition that tells of missed runs.
pub const CONDITION_RUNS_MISSED: &str = "RunsMissed";
/// Reason of `RunsMissed=False`.
pub const REASON_NO_RUNS_MISSED: &str = "NoRunsMissed";

/// How long after a run is due a node has to report it:
/// `5 × scriptTimeoutSeconds + 30 s`.
pub fn grace(script_timeout_seconds: u32) -> Duration {
    Duration::seconds(ROUNDS * i64::from(script_timeout_seconds.max(1))) + SLACK
}

/// The run checked at a time, and when the check changes next.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Check {
    /// The newest run whose deadline has passed, that runners were
    /// expected to run; `None` when there is none (yet).
    pub run: Option<DateTime<Utc>>,
    /// When the next run's deadline passes: the Debugger is looked at again
    /// then.
    pub recheck_at: Option<DateTime<Utc>>,
}

/// The run `run_at` has nodes report by `now`, given `grace` and `since`,
/// when the operator began to expect runs of this `runAt` (the
/// Debugger's creation, or when the operator saw the value change).
///
/// A cron fire before `since` is not expected: a runner skips fires more
/// than 60 s old when it starts or sees a new `runAt`. A one-off time
/// already past is run at once, so it is due from `since`.
pub fn check(run_at: &RunAt, since: DateTime<Utc>, grace: Duration, now: DateTime<Utc>) -> Check {
    match run_at {
        RunAt::Empty => Check::default(),
        RunAt::Once(t) => {
            let deadline = (*t).max(since) + grace;
            if now >= deadline {
                Check {
                    run: Some(*t),
                    recheck_at: None,
                }
            } else {
                Check {
                    run: None,
                    recheck_at: Some(deadline),
                }
            }
        }
        RunAt::Cron(..) => {
            let passed = now - grace;
            Check {
                run: run_at.latest_due(passed).filter(|d| *d >= since),
                recheck_at: run_at.next_after(passed).map(|d| d + grace),
            }
        }
    }
}

/// The nodes whose report holds neither `run` nor a later one (a `runAt`
/// that does not parse counts as earlier). Pure.
pub fn missed_by(reports: &NodeReports, run: DateTime<Utc>) -> BTreeSet<String> {
    reports
        .iter()
        .filter(|(_, r)| {
            DateTime::parse_from_rfc3339(&r.spec.run_at).map_or(true, |t| t.to_utc() < run)
        })
        .map(|(node, _)| node.clone())
        .collect()
}

/// Status, reason and message of `RunsMissed` for the nodes `missed` of
/// the run `run`.
pub fn condition(run: Option<DateTime<Utc>>, missed: &BTreeSet<String>) -> (bool, String, String) {
    match run {
        Some(run) if !missed.is_empty() => {
            let names: Vec<&str> = missed.iter().take(NAMED).map(String::as_str).collect();
            let more = missed.len().saturating_sub(NAMED);
            let mut list = names.join(", ");
            if more > 0 {
                list.push_str(&format!(" and {more} more"));
            }
            let nodes = if missed.len() == 1 {
                "node has"
            } else {
                "nodes have"
            };
            (
                true,
                CONDITION_RUNS_MISSED.to_string(),
                format!(
                    "{} {nodes} not reported the run due at {}: {list}",
                    missed.len(),
                    run.to_rfc3339_opts(SecondsFormat::Secs, true)
                ),
            )
        }
        _ => (
            false,
            REASON_NO_RUNS_MISSED.to_string(),
            "no node missed a run".to_string(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reports::aggregate::NodeReport;
    use combo_api::DebuggerReportSpec;
    use std::sync::Arc;

    fn t(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    fn reports(runs: &[(&str, &str)]) -> NodeReports {
        runs.iter()
            .map(|(node, run)| {
                let spec = DebuggerReportSpec {
                    debugger: "d".into(),
                    node: node.to_string(),
                    run_at: run.to_string(),
                    ..DebuggerReportSpec::default()
                };
                (
                    node.to_string(),
                    Arc::new(NodeReport::new(format!("d.{node}"), spec)),
                )
            })
            .collect()
    }

    #[test]
    fn the_grace_is_five_script_timeouts_and_thirty_seconds() {
        assert_eq!(grace(60), Duration::seconds(330));
        assert_eq!(grace(2), Duration::seconds(40));
    }

    #[test]
    fn a_cron_run_is_checked_once_its_deadline_passed_and_the_next_deadline_is_the_recheck() {
        let hourly = RunAt::parse("@hourly").unwrap();
        let since = t("2026-01-01T00:00:00Z");
        let g = grace(60);
        let before = check(&hourly, since, g, t("2026-01-01T06:05:00Z"));
        assert_eq!(
            before.run,
            Some(t("2026-01-01T05:00:00Z")),
            "06:00 is not past its deadline"
        );
        assert_eq!(before.recheck_at, Some(t("2026-01-01T06:05:30Z")));
        let after = check(&hourly, since, g, t("2026-01-01T06:05:30Z"));
        assert_eq!(after.run, Some(t("2026-01-01T06:00:00Z")));
        assert_eq!(after.recheck_at, Some(t("2026-01-01T07:05:30Z")));
    }

    #[test]
    fn a_cron_fire_before_the_runat_was_seen_is_not_expected() {
        let hourly = RunAt::parse("@hourly").unwrap();
        let since = t("2026-01-01T06:20:00Z");
        let c = check(&hourly, since, grace(60), t("2026-01-01T06:30:00Z"));
        assert_eq!(c.run, None);
        assert_eq!(c.recheck_at, Some(t("2026-01-01T07:05:30Z")));
    }

    #[test]
    fn a_past_one_off_run_is_due_from_when_it_was_seen() {
        let once = RunAt::parse("2026-01-01T00:00:00Z").unwrap();
        let since = t("2026-01-02T00:00:00Z");
        let g = grace(2);
        let c = check(&once, since, g, t("2026-01-02T00:00:10Z"));
        assert_eq!(c.run, None);
        assert_eq!(c.recheck_at, Some(t("2026-01-02T00:00:40Z")));
        let c = check(&once, since, g, t("2026-01-02T00:00:40Z"));
        assert_eq!(c.run, Some(t("2026-01-01T00:00:00Z")));
        assert_eq!(c.recheck_at, None, "a one-off run is checked once");
        assert_eq!(check(&RunAt::Empty, since, g, since), Check::default());
    }

    #[test]
    fn nodes_whose_report_is_older_than_the_checked_run_missed_it() {
        let r = reports(&[
            ("a", "2026-01-01T06:00:00Z"),
            ("b", "2026-01-01T05:00:00Z"),
            ("c", "2026-01-01T07:00:00Z"),
            ("d", "garbage"),
        ]);
        let missed = missed_by(&r, t("2026-01-01T06:00:00Z"));
        assert_eq!(missed.into_iter().collect::<Vec<_>>(), ["b", "d"]);
    }

    #[test]
    fn the_message_counts_every_missing_node_and_names_the_first_five() {
        let missed: BTreeSet<String> = (1..=7).map(|i| format!("n{i}")).collect();
        let (status, reason, message) = condition(Some(t("2026-01-01T06:00:00Z")), &missed);
        assert!(status);
        assert_eq!(reason, "RunsMissed");
        assert_eq!(
            message,
            "7 nodes have not reported the run due at 2026-01-01T06:00:00Z: n1, n2, n3, n4, n5 and 2 more"
        );
        let (status, reason, message) =
            condition(Some(t("2026-01-01T06:00:00Z")), &BTreeSet::new());
        assert!(!status);
        assert_eq!(
            (reason.as_str(), message.as_str()),
            ("NoRunsMissed", "no node missed a run")
        );
    }
}
