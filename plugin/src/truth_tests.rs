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

#[test]
fn a_summary_older_than_the_status_says_so_and_why() {
    // The case: status FAILED 1 on the new run, the summary still
    // the run before, the Debugger ConfigMapNotFound.
    let mut d = dbg("d", "uid");
    d.status = Some(DebuggerStatus {
        last_run_at: Some(NEW.into()),
        completed_nodes: 1,
        failed_items: 1,
        conditions: vec![ready(
            "False",
            "ConfigMapNotFound",
            "configMap \"scripts\": ConfigMap not found",
        )],
        ..DebuggerStatus::default()
    });
    let old = BTreeMap::from([("node-1".to_string(), value(OLD, 0))]);
    let line = stale(&d, &old).expect("stale");
    assert!(line.starts_with("STALE: "), "{line}");
    assert!(
        line.contains("shows run 20261122T060000Z on 1 node(s), 0 failed")
            && line.contains("status has run 20261122T120000Z on 1 node(s), 1 failed")
            && line.contains("ConfigMapNotFound"),
        "{line}"
    );
    let current = BTreeMap::from([("node-1".to_string(), value(NEW, 1))]);
    assert_eq!(stale(&d, &current), None, "the same run: not stale");
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
    assert!(line.contains("look again in a moment"), "{line}");
    let none = BTreeMap::new();
    assert!(stale(&d, &none).unwrap().contains("shows no run"));
    d.status.as_mut().unwrap().last_run_at = None;
    assert_eq!(
        stale(&d, &kept),
        None,
        "no run in the status: nothing to compare"
    );
}
