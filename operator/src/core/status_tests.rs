use super::*;
use combo_testkit::fixtures::{debugger, DebuggerBuilder};
use k8s_openapi::api::apps::v1::DaemonSetStatus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// `super::compute` with the Debugger's own `runAt`, parsed.
fn compute(
    d: &Debugger,
    invalid: Option<&Invalid>,
    counts: Option<PodCounts>,
    runs: &RunSummary,
    now: DateTime<Utc>,
) -> DebuggerStatus {
    let run_at = RunAt::parse(&d.spec.run_at).ok();
    super::compute(d, invalid, counts, runs, run_at.as_ref(), now, None)
}

/// Debugger `node-check` of `ops` at generation 3.
fn node_check() -> DebuggerBuilder {
    debugger("ops", "node-check").generation(3)
}

/// The status of [`node_check`], valid, with no run yet and `counts`.
fn status_with(counts: Option<PodCounts>) -> DebuggerStatus {
    compute(
        &node_check().build(),
        None,
        counts,
        &RunSummary::default(),
        now(),
    )
}

fn now() -> DateTime<Utc> {
    "2026-11-22T05:00:00Z".parse().unwrap()
}

#[test]
fn all_pods_ready_makes_ready_true_with_counts() {
    let s = compute(
        &node_check().build(),
        None,
        Some(PodCounts {
            desired: 3,
            ready: 3,
            no_node: false,
            ..PodCounts::default()
        }),
        &RunSummary::default(),
        now(),
    );
    assert_eq!((s.desired_pods, s.ready_pods), (3, 3));
    assert_eq!(s.ready, "3/3");
    assert_eq!(s.observed_generation, 3);
    let c = &s.conditions[0];
    assert_eq!(
        (c.type_.as_str(), c.status.as_str(), c.reason.as_str()),
        ("Ready", "True", "WorkloadReady")
    );
    assert_eq!(c.observed_generation, Some(3));
}

#[test]
fn missing_workload_is_not_ready_with_zero_counts() {
    let s = status_with(None);
    assert_eq!(s.ready, "0/0");
    assert_eq!(s.conditions[0].status, "False");
    assert_eq!(s.conditions[0].reason, "WorkloadNotReady");
}

#[test]
fn invalid_spec_sets_ready_false_with_its_reason_and_message() {
    let invalid = Invalid::PingerNotFound("Pinger \"mesh\" not found".into());
    let s = compute(
        &node_check().build(),
        Some(&invalid),
        Some(PodCounts {
            desired: 2,
            ready: 2,
            no_node: false,
            ..PodCounts::default()
        }),
        &RunSummary::default(),
        now(),
    );
    let c = &s.conditions[0];
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("False", "PingerNotFound")
    );
    assert!(c.message.contains("mesh"));
    assert_eq!(s.ready_pods, 2, "the existing workload is still counted");
}

#[test]
fn unchanged_condition_keeps_its_transition_time_so_status_is_stable() {
    let mut d = node_check().build();
    let counts = Some(PodCounts {
        desired: 1,
        ready: 1,
        no_node: false,
        ..PodCounts::default()
    });
    let first = compute(&d, None, counts, &RunSummary::default(), now());
    d.status = Some(first.clone());
    let later = now() + chrono::Duration::hours(1);
    let second = compute(&d, None, counts, &RunSummary::default(), later);
    assert_eq!(first, second);
    assert!(!changed(&d, &second));
    let third = compute(&d, None, None, &RunSummary::default(), later);
    assert!(changed(&d, &third));
    assert_ne!(
        third.conditions[0].last_transition_time,
        first.conditions[0].last_transition_time
    );
}

#[test]
fn next_run_at_follows_the_cron_and_is_absent_for_past_or_empty_times() {
    let s = compute(
        &node_check().run_at("0 */6 * * *").build(),
        None,
        None,
        &RunSummary::default(),
        now(),
    );
    assert_eq!(s.next_run_at.as_deref(), Some("2026-11-22T06:00:00Z"));
    let past = compute(
        &node_check().run_at("2026-11-22T04:00:00Z").build(),
        None,
        None,
        &RunSummary::default(),
        now(),
    );
    assert_eq!(past.next_run_at, None);
    assert_eq!(status_with(None).next_run_at, None);
}

#[test]
fn daemonset_and_pod_counts_read_their_status() {
    let ds = DaemonSet {
        metadata: ObjectMeta {
            generation: Some(1),
            ..ObjectMeta::default()
        },
        status: Some(DaemonSetStatus {
            desired_number_scheduled: 4,
            number_ready: 3,
            observed_generation: Some(1),
            updated_number_scheduled: Some(4),
            ..DaemonSetStatus::default()
        }),
        ..DaemonSet::default()
    };
    assert_eq!(
        daemonset_counts(&ds),
        PodCounts {
            desired: 4,
            ready: 3,
            no_node: false,
            ..PodCounts::default()
        }
    );
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "status": {"conditions": [{"type": "Ready", "status": "True"}]}
    }))
    .unwrap();
    assert_eq!(pod_counts(&pod).ready, 1);
    assert_eq!(pod_counts(&Pod::default()).ready, 0);
}

#[test]
fn a_daemonset_that_schedules_no_pod_is_not_ready_with_no_nodes_selected() {
    let mut ds = DaemonSet {
        metadata: ObjectMeta {
            generation: Some(2),
            ..ObjectMeta::default()
        },
        status: Some(DaemonSetStatus {
            desired_number_scheduled: 0,
            observed_generation: Some(1),
            ..DaemonSetStatus::default()
        }),
        ..DaemonSet::default()
    };
    assert!(
        !daemonset_counts(&ds).no_node,
        "the controller has not seen the new selector yet"
    );
    ds.status.as_mut().unwrap().observed_generation = Some(2);
    let counts = daemonset_counts(&ds);
    assert!(counts.no_node);
    let s = status_with(Some(counts));
    let ready = ready_of(&s.conditions).unwrap();
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("False", "NoNodesSelected")
    );
}

#[test]
fn a_pod_no_node_admits_is_no_nodes_selected_but_one_short_of_cpu_is_not() {
    let pending = |message: &str| -> Pod {
        serde_json::from_value(serde_json::json!({
            "status": {"phase": "Pending", "conditions": [{
                "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                "message": message
            }]}
        }))
        .unwrap()
    };
    let counts = pod_counts(&pending(
        "0/3 nodes are available: 3 node(s) didn't match node selector.",
    ));
    assert!(counts.no_node);
    let s = status_with(Some(counts));
    assert_eq!(ready_of(&s.conditions).unwrap().reason, "NoNodesSelected");
    assert!(!pod_counts(&pending("0/3 nodes are available: 3 Insufficient cpu.")).no_node);
    assert!(!pod_counts(&Pod::default()).no_node);
}

#[test]
fn a_pod_debugger_whose_node_does_not_exist_is_no_nodes_selected_naming_it() {
    // kube-scheduler's words, old and new, for a node named in matchFields
    // that no node has.
    for message in [
        "0/3 nodes are available: 3 node(s) didn't match node selector.",
        "0/3 nodes are available: 3 node is filtered out by the prefilter result.",
        "0/3 nodes are available: 3 node(s) didn't satisfy plugin(s) [NodeAffinity].",
    ] {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "status": {"phase": "Pending", "conditions": [{
                "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                "message": message
            }]}
        }))
        .unwrap();
        let counts = pod_counts(&pod);
        assert!(counts.no_node, "{message}");
        let d = node_check()
            .workload_type(combo_api::WorkloadType::Pod)
            .node_name("node-x")
            .build();
        let s = compute(&d, None, Some(counts), &RunSummary::default(), now());
        let ready = ready_of(&s.conditions).unwrap();
        assert_eq!(
            (ready.status.as_str(), ready.reason.as_str()),
            ("False", "NoNodesSelected")
        );
        assert!(
            ready
                .message
                .starts_with("no node named \"node-x\" (nodeName)")
                && ready.message.contains("waits, unscheduled"),
            "{}",
            ready.message
        );
    }
}

/// Counts of a DaemonSet of 2 pods, `ready` of them Ready.
fn two(ready: i32, rolling: bool) -> Option<PodCounts> {
    Some(PodCounts {
        desired: 2,
        ready,
        no_node: false,
        rolling,
    })
}

fn ready_reason(s: &DebuggerStatus) -> (&str, &str) {
    let c = &s.conditions[0];
    (c.status.as_str(), c.reason.as_str())
}

#[test]
fn a_ready_daemonset_rolling_out_a_new_template_stays_ready_within_the_grace() {
    let mut d = node_check().build();
    let ready = compute(&d, None, two(2, false), &RunSummary::default(), now());
    d.status = Some(ready);
    // The template changed: every pod is replaced at once.
    let t = now() + chrono::Duration::seconds(5);
    let rolling = compute(&d, None, two(0, true), &RunSummary::default(), t);
    assert_eq!(ready_reason(&rolling), ("True", "RollingOut"));
    assert_eq!(
        rolling.conditions[0].message,
        "rolling out a new pod template: 0/2 pods ready"
    );
    assert_eq!(
        rollout_recheck(&rolling),
        Some(t + ROLLOUT_GRACE + chrono::Duration::seconds(1))
    );
    d.status = Some(rolling);
    let later = t + chrono::Duration::seconds(60);
    let still = compute(&d, None, two(1, true), &RunSummary::default(), later);
    assert_eq!(ready_reason(&still), ("True", "RollingOut"));
    // Every new pod scheduled (updated), not all Ready yet: still rolling.
    d.status = Some(still);
    let still = compute(&d, None, two(1, false), &RunSummary::default(), later);
    assert_eq!(ready_reason(&still), ("True", "RollingOut"));
    d.status = Some(still);
    let done = compute(&d, None, two(2, false), &RunSummary::default(), later);
    assert_eq!(ready_reason(&done), ("True", "WorkloadReady"));
    assert_eq!(rollout_recheck(&done), None);
}

#[test]
fn a_roll_past_its_grace_or_of_a_debugger_that_was_not_ready_is_not_ready() {
    let mut d = node_check().build();
    d.status = Some(compute(
        &d,
        None,
        two(2, false),
        &RunSummary::default(),
        now(),
    ));
    let rolling = compute(&d, None, two(0, true), &RunSummary::default(), now());
    d.status = Some(rolling);
    let stalled = now() + ROLLOUT_GRACE;
    let s = compute(&d, None, two(0, true), &RunSummary::default(), stalled);
    assert_eq!(ready_reason(&s), ("False", "WorkloadNotReady"));
    d.status = Some(s);
    // Not Ready before the roll: a roll does not make it Ready.
    let s = compute(&d, None, two(1, true), &RunSummary::default(), stalled);
    assert_eq!(ready_reason(&s), ("False", "WorkloadNotReady"));
    // Pods missing without a roll are not Ready either.
    let mut d = node_check().build();
    d.status = Some(compute(
        &d,
        None,
        two(2, false),
        &RunSummary::default(),
        now(),
    ));
    let s = compute(&d, None, two(1, false), &RunSummary::default(), now());
    assert_eq!(ready_reason(&s), ("False", "WorkloadNotReady"));
}

#[test]
fn a_daemonset_rolls_while_its_controller_has_not_seen_the_spec_or_pods_are_not_updated() {
    let ds = |generation: i64, observed: i64, updated: i32| DaemonSet {
        metadata: ObjectMeta {
            generation: Some(generation),
            ..ObjectMeta::default()
        },
        status: Some(DaemonSetStatus {
            desired_number_scheduled: 2,
            number_ready: 2,
            observed_generation: Some(observed),
            updated_number_scheduled: Some(updated),
            ..DaemonSetStatus::default()
        }),
        ..DaemonSet::default()
    };
    assert!(!daemonset_counts(&ds(2, 2, 2)).rolling);
    assert!(daemonset_counts(&ds(3, 2, 2)).rolling);
    assert!(daemonset_counts(&ds(2, 2, 1)).rolling);
}
