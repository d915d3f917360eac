//! Run-now requests folded into the schedule ([`with_run_now`]).

use super::*;

fn t(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().to_utc()
}

fn id(s: &str) -> RunId {
    RunId::at(t(s))
}

const DS: WorkloadType = WorkloadType::Daemonset;

/// A node that ran the 06:00 fire.
fn ran_six() -> History {
    History {
        completed: Some(id("2026-11-22T06:00:00Z")),
        ..History::default()
    }
}

/// What a runner decides at `now` with `history`, the request `asked` and
/// `runAt` `run_at` seen since `since`.
fn next(run_at: &str, asked: Option<&str>, now: &str, since: &str, history: History) -> Decision {
    let run_at = RunAt::parse(run_at).unwrap();
    let scheduled = decide(&run_at, DS, t(now), t(since), history);
    with_run_now(scheduled, asked.map(id), t(now), history)
}

#[test]
fn a_request_runs_once_at_once_and_the_cron_schedule_goes_on() {
    let cron = "0 */6 * * *";
    let done = ran_six();
    let asked = Some("2026-11-22T07:29:50Z");
    let now = "2026-11-22T07:30:00Z";
    assert_eq!(
        next(cron, asked, now, "2026-11-22T05:00:00Z", done),
        Decision::RunNow(id("2026-11-22T07:29:50Z"))
    );
    let after = History {
        run_now: Some(id("2026-11-22T07:29:50Z")),
        ..done
    };
    assert_eq!(
        next(
            cron,
            asked,
            "2026-11-22T07:31:00Z",
            "2026-11-22T05:00:00Z",
            after
        ),
        Decision::Wait(t("2026-11-22T12:00:00Z")),
        "ran once, and the next fire is still waited for"
    );
    assert_eq!(
        next(
            cron,
            asked,
            "2026-11-22T12:00:00Z",
            "2026-11-22T05:00:00Z",
            after
        ),
        Decision::Run(id("2026-11-22T12:00:00Z")),
        "the fire after the request runs"
    );
}

#[test]
fn no_request_or_one_already_run_leaves_the_schedule_alone() {
    let cron = "0 */6 * * *";
    let since = "2026-11-22T05:00:00Z";
    let plain = next(cron, None, "2026-11-22T07:30:00Z", since, ran_six());
    assert_eq!(plain, Decision::Wait(t("2026-11-22T12:00:00Z")));
    let ran = History {
        run_now: Some(id("2026-11-22T07:00:00Z")),
        ..ran_six()
    };
    assert_eq!(
        next(
            cron,
            Some("2026-11-22T07:00:00Z"),
            "2026-11-22T07:30:00Z",
            since,
            ran
        ),
        plain
    );
    assert_eq!(
        next(
            cron,
            Some("2026-11-22T07:10:00Z"),
            "2026-11-22T07:30:00Z",
            since,
            ran
        ),
        Decision::RunNow(id("2026-11-22T07:10:00Z")),
        "a new value is a new request"
    );
}

#[test]
fn a_request_for_a_later_time_waits_unless_the_schedule_comes_first() {
    let cron = "0 */6 * * *";
    let since = "2026-11-22T05:00:00Z";
    let now = "2026-11-22T07:30:00Z";
    let h = ran_six();
    assert_eq!(
        next(cron, Some("2026-11-22T11:00:00Z"), now, since, h),
        Decision::Wait(t("2026-11-22T11:00:00Z"))
    );
    assert_eq!(
        next(cron, Some("2026-11-22T13:00:00Z"), now, since, h),
        Decision::Wait(t("2026-11-22T12:00:00Z"))
    );
    assert_eq!(
        next("", Some("2026-11-22T13:00:00Z"), now, since, h),
        Decision::Wait(t("2026-11-22T13:00:00Z")),
        "an idle Debugger waits for the request"
    );
    let due = next(
        cron,
        Some("2026-11-22T13:00:00Z"),
        "2026-11-22T12:00:00Z",
        since,
        h,
    );
    assert_eq!(due, Decision::Run(id("2026-11-22T12:00:00Z")));
}

#[test]
fn a_request_is_not_a_run_of_a_timestamp_which_stays_run() {
    let once = "2026-11-20T00:00:00Z";
    let now = "2026-11-22T06:00:00Z";
    // The timestamp ran, then a request ran: neither runs again.
    let both = History {
        completed: Some(id(once)),
        run_now: Some(id("2026-11-21T00:00:00Z")),
        ran_since_start: false,
    };
    assert_eq!(
        next(once, Some("2026-11-21T00:00:00Z"), now, now, both),
        Decision::Idle
    );
    // A request on an idle Debugger runs, and then it is idle again.
    assert_eq!(
        next(
            "",
            Some("2026-11-21T00:00:00Z"),
            now,
            now,
            History::default()
        ),
        Decision::RunNow(id("2026-11-21T00:00:00Z"))
    );
}

#[test]
fn a_runner_whose_run_at_does_not_parse_still_takes_a_request() {
    let asked = Some(id("2026-11-22T07:00:00Z"));
    let now = t("2026-11-22T07:00:01Z");
    assert_eq!(
        with_run_now(Decision::Idle, asked, now, History::default()),
        Decision::RunNow(id("2026-11-22T07:00:00Z"))
    );
    assert_eq!(
        with_run_now(Decision::Idle, None, now, History::default()),
        Decision::Idle
    );
}

#[test]
fn a_pod_with_an_empty_run_at_takes_the_request_as_its_start_run() {
    let now = t("2026-11-22T07:00:01Z");
    let asked = Some(id("2026-11-22T07:00:00Z"));
    let fresh = decide(
        &RunAt::Empty,
        WorkloadType::Pod,
        now,
        now,
        History::default(),
    );
    assert_eq!(
        with_run_now(fresh, asked, now, History::default()),
        Decision::RunNow(id("2026-11-22T07:00:00Z"))
    );
    let after = History {
        run_now: asked,
        ran_since_start: true,
        ..History::default()
    };
    let later = decide(&RunAt::Empty, WorkloadType::Pod, now, now, after);
    assert_eq!(with_run_now(later, asked, now, after), Decision::Idle);
}

#[test]
fn a_fire_before_a_request_already_run_is_not_caught_up_after_it() {
    // A runner that starts at 07:00:20, sees the request of 07:00:15 and
    // the fire of 07:00:00 (20 s old, within the catch-up) at once: the
    // request runs first, and the older fire not after it, so the node's
    // newest result is the request's.
    let cron = "* * * * *";
    let asked = Some("2026-11-22T07:00:15Z");
    let (now, since) = ("2026-11-22T07:00:20Z", "2026-11-22T07:00:20Z");
    let fresh = History::default();
    assert_eq!(
        next(cron, asked, now, since, fresh),
        Decision::RunNow(id("2026-11-22T07:00:15Z"))
    );
    let after = History {
        run_now: Some(id("2026-11-22T07:00:15Z")),
        ran_since_start: true,
        ..fresh
    };
    assert_eq!(
        next(cron, asked, "2026-11-22T07:00:21Z", since, after),
        Decision::Wait(t("2026-11-22T07:01:00Z"))
    );
    // The next fire runs as ever.
    assert_eq!(
        next(cron, asked, "2026-11-22T07:01:00Z", since, after),
        Decision::Run(id("2026-11-22T07:01:00Z"))
    );
    // A fire after the request, missed while it ran, is still caught up.
    let request_at_59 = History {
        run_now: Some(id("2026-11-22T07:00:59Z")),
        ..after
    };
    assert_eq!(
        next(
            cron,
            Some("2026-11-22T07:00:59Z"),
            "2026-11-22T07:01:02Z",
            since,
            request_at_59
        ),
        Decision::Run(id("2026-11-22T07:01:00Z"))
    );
}
