use chrono::TimeZone;

use super::*;

const T: &str = "2026-11-22T05:30:00Z";

fn at(seconds_after_t: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 22, 5, 30, 0).unwrap() + Duration::seconds(seconds_after_t)
}

fn pods(desired: i32, ready: i32) -> Option<PodCounts> {
    Some(PodCounts {
        desired,
        ready,
        ..PodCounts::default()
    })
}

fn no_node() -> Option<PodCounts> {
    Some(PodCounts {
        no_node: true,
        ..PodCounts::default()
    })
}

fn serving(counts: Option<PodCounts>, served: i32) -> Serving<'static> {
    Serving {
        counts,
        invalid: None,
        served,
    }
}

fn condition(a: &Answer) -> (&str, &str, &str) {
    let c = a.condition.as_ref().expect("a RunNow condition");
    assert_eq!(c.type_, CONDITION_RUN_NOW);
    (c.status.as_str(), c.reason.as_str(), c.message.as_str())
}

#[test]
fn a_debugger_never_asked_has_no_run_now_condition() {
    let a = answer(None, &[], serving(pods(3, 3), 0), 1, at(0));
    assert_eq!(a, Answer::default());
}

/// The answer once the status holds `first`'s condition.
fn then(first: &Answer, serving: Serving<'static>, now: DateTime<Utc>) -> Answer {
    let previous = vec![first.condition.clone().unwrap()];
    answer(Some(T), &previous, serving, 1, now)
}

#[test]
fn a_request_while_no_node_is_selected_is_dropped_then_taken_off() {
    let a = answer(Some(T), &[], serving(no_node(), 0), 1, at(1));
    let (status, reason, message) = condition(&a);
    assert_eq!((status, reason), ("False", REASON_DROPPED));
    assert!(
        message.starts_with("run-now request of 2026-11-22T05:30:00Z dropped: NoNodesSelected"),
        "{message}"
    );
    // Taken off once the status says it: looked at again after the
    // status write.
    assert_eq!((a.remove.as_deref(), a.recheck), (None, Some(at(4))));
    let written = then(&a, serving(no_node(), 0), at(4));
    assert_eq!(written.condition, a.condition);
    assert_eq!(written.remove.as_deref(), Some(T));
}

#[test]
fn a_dropped_request_stays_dropped_when_the_nodes_come_back() {
    let dropped = answer(Some(T), &[], serving(no_node(), 0), 1, at(1));
    let previous = vec![dropped.condition.clone().unwrap()];
    // The selector matches again, and the annotation is still there (its
    // removal failed, or a tool set it again).
    let later = answer(Some(T), &previous, serving(pods(3, 3), 0), 1, at(300));
    assert_eq!(later.condition, dropped.condition);
    assert_eq!(later.remove.as_deref(), Some(T));
}

#[test]
fn a_request_of_a_debugger_without_workload_is_dropped_with_the_specs_reason() {
    let s = Serving {
        counts: None,
        invalid: Some("PingerNotFound"),
        served: 0,
    };
    let a = answer(Some(T), &[], s, 1, at(1));
    assert!(condition(&a).2.contains("dropped: PingerNotFound"), "{a:?}");
    assert_eq!(then(&a, s, at(4)).remove.as_deref(), Some(T));
}

#[test]
fn a_request_on_a_workload_being_created_waits_for_its_pods() {
    let a = answer(Some(T), &[], serving(None, 0), 1, at(1));
    assert_eq!(condition(&a).1, REASON_WAITING);
    assert_eq!(a.remove, None);
    assert_eq!(a.recheck, Some(at(121)));
}

#[test]
fn a_request_every_node_reported_ran() {
    let a = answer(Some(T), &[], serving(pods(3, 3), 3), 1, at(5));
    assert_eq!(
        condition(&a),
        (
            "True",
            REASON_RAN,
            "run-now request of 2026-11-22T05:30:00Z ran on 3 of 3 node(s)"
        )
    );
    assert_eq!((a.remove, a.recheck), (None, None));
}

#[test]
fn a_request_some_nodes_reported_waits_for_the_others_until_the_grace_ends() {
    let a = answer(Some(T), &[], serving(pods(3, 3), 2), 1, at(5));
    assert_eq!(
        condition(&a).2,
        "run-now request of 2026-11-22T05:30:00Z runs: 2 of 3 node(s) reported it"
    );
    let a = answer(Some(T), &[], serving(pods(3, 2), 2), 1, at(120));
    assert_eq!(condition(&a).1, REASON_RAN);
}

#[test]
fn a_request_no_ready_pod_could_run_in_time_is_dropped() {
    let waiting = answer(Some(T), &[], serving(pods(2, 0), 0), 1, at(119));
    assert_eq!(condition(&waiting).1, REASON_WAITING);
    let a = answer(Some(T), &[], serving(pods(2, 0), 0), 1, at(120));
    let (_, reason, message) = condition(&a);
    assert_eq!(reason, REASON_DROPPED);
    assert!(message.contains("dropped: WorkloadNotReady"), "{message}");
    assert_eq!(
        then(&a, serving(pods(2, 0), 0), at(124)).remove.as_deref(),
        Some(T)
    );
}

#[test]
fn a_ready_pod_still_running_the_request_keeps_it_waiting() {
    let a = answer(Some(T), &[], serving(pods(1, 1), 0), 1, at(600));
    assert_eq!(condition(&a).1, REASON_WAITING);
    assert_eq!(a.remove, None);
}

#[test]
fn a_request_still_to_come_waits_for_its_time_even_with_no_node() {
    let a = answer(Some(T), &[], serving(no_node(), 0), 1, at(-60));
    assert_eq!(
        condition(&a),
        (
            "Unknown",
            REASON_WAITING,
            "run-now request of 2026-11-22T05:30:00Z waits for its time"
        )
    );
    assert_eq!((a.remove, a.recheck), (None, Some(at(0))));
}

#[test]
fn a_request_that_ran_is_taken_off_once_no_node_is_selected() {
    let ran = answer(Some(T), &[], serving(pods(3, 3), 3), 1, at(5));
    let previous = vec![ran.condition.clone().unwrap()];
    let kept = answer(Some(T), &previous, serving(pods(3, 3), 3), 1, at(60));
    assert_eq!(
        (kept.condition.clone(), kept.remove),
        (ran.condition.clone(), None)
    );
    // Their reports go with the nodes: a node selected again would run it
    // again under its old time.
    let gone = answer(Some(T), &previous, serving(no_node(), 0), 1, at(300));
    assert_eq!(gone.condition, ran.condition);
    assert_eq!(gone.remove.as_deref(), Some(T));
}

#[test]
fn a_value_that_is_no_time_is_dropped_naming_it() {
    let a = answer(Some("soon"), &[], serving(pods(3, 3), 0), 1, at(0));
    let (status, reason, message) = condition(&a);
    assert_eq!((status, reason), ("False", REASON_DROPPED));
    assert!(
        message.starts_with("run-now request of soon dropped: \"soon\" is not"),
        "{message}"
    );
    let previous = vec![a.condition.clone().unwrap()];
    let written = answer(Some("soon"), &previous, serving(pods(3, 3), 0), 1, at(4));
    assert_eq!(written.remove.as_deref(), Some("soon"));
}

#[test]
fn a_new_request_replaces_the_answer_to_the_last_one() {
    let ran = answer(Some(T), &[], serving(pods(3, 3), 3), 1, at(5));
    let previous = vec![ran.condition.unwrap()];
    let next = "2026-11-22T05:40:00Z";
    let a = answer(Some(next), &previous, serving(pods(3, 3), 0), 1, at(601));
    assert!(condition(&a)
        .2
        .starts_with("run-now request of 2026-11-22T05:40:00Z runs"));
    // Once the annotation is gone, the last answer stays.
    let gone = answer(None, &previous, serving(pods(3, 3), 0), 1, at(700));
    assert_eq!(gone.condition, previous.first().cloned());
}
