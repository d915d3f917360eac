use super::*;
use combo_api::{DebuggerSpec, DebuggerStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, OwnerReference, Time};
use kube::Resource;

fn dbg(name: &str, uid: &str) -> Debugger {
    let mut d = Debugger::new(name, DebuggerSpec::default());
    d.metadata.namespace = Some("ops".into());
    d.metadata.uid = Some(uid.into());
    d
}

fn ready(status: &str, reason: &str, message: &str) -> Condition {
    Condition {
        type_: "Ready".into(),
        status: status.into(),
        reason: reason.into(),
        message: message.into(),
        last_transition_time: Time(k8s_openapi::jiff::Timestamp::now()),
        observed_generation: None,
    }
}

fn controlled_by(d: &Debugger) -> ObjectMeta {
    ObjectMeta {
        name: Some("shared".into()),
        owner_references: d.controller_owner_ref(&()).map(|o| vec![o]),
        ..ObjectMeta::default()
    }
}

/// A summary value of `run` with `failed` failed disk items.
fn value(run: &str, failed: usize) -> String {
    let mut v = format!("runAt: \"{run}\"\nfinishedAt: \"{run}\"\ndisk:\n  sda: {{}}\n");
    for i in 0..failed {
        v.push_str(&format!("  bad{i}: {{err: broken}}\n"));
    }
    v
}

const OLD: &str = "2026-11-22T06:00:00Z";
const NEW: &str = "2026-11-22T12:00:00Z";

#[test]
fn a_summary_another_debugger_controls_is_not_this_ones() {
    let first = dbg("first", "uid-1");
    let mut second = dbg("second", "uid-2");
    second.status = Some(DebuggerStatus {
        conditions: vec![ready(
            "False",
            "InvalidSpec",
            "ConfigMap \"shared\" already exists and is not owned by this Debugger",
        )],
        ..DebuggerStatus::default()
    });
    assert_eq!(not_owned(&first, &controlled_by(&first)), None);
    let why = not_owned(&second, &controlled_by(&first)).expect("not the second's");
    assert!(
        why.contains("is the summary of Debugger \"first\"") && why.contains("InvalidSpec"),
        "{why}"
    );
    // A Debugger of the same name made again (another UID) is another.
    let again = dbg("first", "uid-3");
    assert!(not_owned(&again, &controlled_by(&first)).is_some());
    let by_hand = ObjectMeta {
        name: Some("shared".into()),
        ..ObjectMeta::default()
    };
    assert!(not_owned(&first, &by_hand)
        .unwrap()
        .contains("no Debugger controls it"));
    let other = ObjectMeta {
        owner_references: Some(vec![OwnerReference {
            controller: Some(true),
            kind: "Deployment".into(),
            name: "app".into(),
            ..OwnerReference::default()
        }]),
        ..by_hand
    };
    assert!(not_owned(&first, &other)
        .unwrap()
        .contains("its controller is Deployment \"app\""));
}

fn status(run: &str, nodes: i32, failed: i32, condition: Condition) -> DebuggerStatus {
    DebuggerStatus {
        last_run_at: Some(run.into()),
        completed_nodes: nodes,
        failed_items: failed,
        conditions: vec![condition],
        ..DebuggerStatus::default()
    }
}

#[test]
fn a_summary_older_than_the_status_blames_the_pace_not_an_unrelated_condition() {
    // The case: status FAILED 1 on the new run, the summary still
    // the run before, the Debugger ConfigMapNotFound, which holds no write.
    let mut d = dbg("d", "uid");
    let lost = ready(
        "False",
        "ConfigMapNotFound",
        "configMap \"scripts\": ConfigMap not found",
    );
    d.status = Some(status(NEW, 1, 1, lost));
    let old = BTreeMap::from([("node-1".to_string(), value(OLD, 0))]);
    let line = stale(&d, &old).expect("stale");
    assert_eq!(
        line,
        "STALE: this summary shows run 20261122T060000Z on 1 node(s), 0 failed; the Debugger's status has run 20261122T120000Z on 1 node(s), 1 failed (the operator paces its summary writes: one of this size lands within 2 s of the report it shows; look again in 2 s)"
    );
    let current = BTreeMap::from([("node-1".to_string(), value(NEW, 1))]);
    assert_eq!(stale(&d, &current), None, "the same run: not stale");
    // An InvalidSpec of another field holds no write either.
    let invalid = ready("False", "InvalidSpec", "categories is empty");
    d.status = Some(status(NEW, 1, 1, invalid));
    let line = stale(&d, &old).expect("stale");
    assert!(
        !line.contains("InvalidSpec") && line.contains("paces"),
        "{line}"
    );
}

#[test]
fn a_summary_named_as_the_scripts_configmap_is_held_and_says_by_what() {
    let mut d = dbg("held", "uid");
    d.spec.enable_config_map = true;
    d.spec.config_map = "held-summary".into();
    let invalid = ready(
        "False",
        "InvalidSpec",
        "summary would replace the scripts ConfigMap",
    );
    d.status = Some(status(NEW, 1, 1, invalid));
    let old = BTreeMap::from([("node-1".to_string(), value(OLD, 0))]);
    let line = stale(&d, &old).expect("stale");
    assert!(
        line.ends_with("(the operator does not write it: ConfigMap held-summary is also the Debugger's scripts ConfigMap (configMap), which a summary would replace; the Debugger is Ready=False (InvalidSpec: summary would replace the scripts ConfigMap))"),
        "{line}"
    );
    // Without enableConfigMap the name is the summary's alone.
    d.spec.enable_config_map = false;
    assert_eq!(held(&d), None);
}

#[test]
fn a_shortened_value_counts_its_omitted_row_as_the_status_does() {
    // A script printed 300 err items: the value lists 147 and a row for
    // the 229 left out (and the runner's count of lines past its limit).
    let mut d = dbg("d", "uid");
    let ok = ready("True", "WorkloadReady", "1/1 pods ready");
    d.status = Some(status(NEW, 1, 376, ok));
    let mut v = value(NEW, 147);
    v.push_str("  (229 failed items omitted): {err: omitted}\n");
    let data = BTreeMap::from([("node-1".to_string(), v)]);
    assert_eq!(stale(&d, &data), None);
}

#[test]
fn a_summary_ahead_of_the_status_is_not_stale() {
    let mut d = dbg("d", "uid");
    let ok = ready("True", "WorkloadReady", "2/2 pods ready");
    // The status still has one node of the run, the summary has both.
    d.status = Some(status(NEW, 1, 0, ok.clone()));
    let both = BTreeMap::from([
        ("node-1".to_string(), value(NEW, 0)),
        ("node-2".to_string(), value(NEW, 0)),
    ]);
    assert_eq!(stale(&d, &both), None);
    // The status still has the run before, the summary the new one.
    d.status = Some(status(OLD, 2, 0, ok.clone()));
    assert_eq!(stale(&d, &both), None);
    // Fewer nodes than the status: behind.
    d.status = Some(status(NEW, 2, 0, ok));
    let one = BTreeMap::from([("node-1".to_string(), value(NEW, 0))]);
    assert!(stale(&d, &one)
        .unwrap()
        .contains("shows run 20261122T120000Z on 1 node(s)"));
}

#[test]
fn a_large_summary_is_given_the_time_its_pace_takes() {
    let big: BTreeMap<String, String> = (0..1000)
        .map(|i| (format!("node-{i:04}"), value(NEW, 10)))
        .collect();
    let bytes: usize = big.iter().map(|(k, v)| k.len() + v.len()).sum();
    let secs = pace_seconds(&big);
    assert_eq!(secs, bytes.div_ceil(16 * 1024));
    assert!(secs > 2, "{secs}");
    let small = BTreeMap::from([("node-1".to_string(), value(NEW, 0))]);
    assert_eq!(pace_seconds(&small), 2);
}

#[test]
fn a_summary_that_kept_a_failure_the_newest_run_lost_is_stale() {
    let mut d = dbg("d", "uid");
    d.status = Some(DebuggerStatus {
        last_run_at: Some(NEW.into()),
        completed_nodes: 1,
        failed_items: 0,
        conditions: vec![ready("True", "WorkloadReady", "1/1 pods ready")],
        ..DebuggerStatus::default()
    });
    let kept = BTreeMap::from([("node-1".to_string(), value(NEW, 2))]);
    let line = stale(&d, &kept).expect("the counts differ");
    assert!(line.contains("look again in 2 s"), "{line}");
    let none = BTreeMap::new();
    assert!(stale(&d, &none).unwrap().contains("shows no run"));
    d.status.as_mut().unwrap().last_run_at = None;
    assert_eq!(
        stale(&d, &kept),
        None,
        "no run in the status: nothing to compare"
    );
}
