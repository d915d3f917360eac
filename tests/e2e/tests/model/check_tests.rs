//! The checker on made-up snapshots: each failure the operator once
//! had (docs/testing.md, "Model-based test") is caught.

use super::rules::{pod_state, NODES_TURN};
use super::*;
use crate::plan::{Action, Categories, Nodes, Ref, Spec, Workload};
use combo_api::keys;
use serde_json::json;

fn node(i: usize) -> Node {
    serde_json::from_value(json!({"metadata": {
        "name": format!("node-{i}"),
        "labels": {"kubernetes.io/hostname": format!("node-{i}")},
    }}))
    .unwrap()
}

fn empty() -> Snapshot {
    Snapshot {
        debuggers: BTreeMap::new(),
        pingers: BTreeMap::new(),
        configmaps: BTreeMap::new(),
        daemonsets: BTreeMap::new(),
        pods: Vec::new(),
        processes: Vec::new(),
    }
}

fn configmap(name: &str, data: &BTreeMap<String, String>, owner: Option<&str>) -> ConfigMap {
    let owners: Vec<_> = owner
        .map(|o| json!({"apiVersion": "kubecombo.io/v1", "kind": "Debugger", "name": o, "uid": "u", "controller": true}))
        .into_iter()
        .collect();
    serde_json::from_value(json!({
        "metadata": {"name": name, "ownerReferences": owners},
        "data": data,
    }))
    .unwrap()
}

fn debugger(name: &str, spec: &Spec, reason: &str, ready: bool) -> Debugger {
    serde_json::from_value(json!({
        "apiVersion": "kubecombo.io/v1", "kind": "Debugger",
        "metadata": {"name": name, "generation": 1},
        "spec": spec.json(),
        "status": {"observedGeneration": 1, "conditions": [{
            "type": "Ready", "status": if ready { "True" } else { "False" },
            "reason": reason, "message": "", "lastTransitionTime": "2026-11-25T00:00:00Z",
        }]},
    }))
    .unwrap()
}

fn pod(name: &str, debugger: &str, owner: &str, ready: bool) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {keys::LABEL_DEBUGGER: debugger},
            "ownerReferences": [{"apiVersion": "v1", "kind": owner, "name": debugger, "uid": "u", "controller": true}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]},
    }))
    .unwrap()
}

fn spec() -> Spec {
    Spec {
        workload: Workload::Pod,
        nodes: Nodes::One(1),
        scripts: Ref::Off,
        pinger: Ref::Off,
        categories: Categories::Default,
        summary: None,
    }
}

fn kinds(v: &[Violation]) -> Vec<&'static str> {
    v.iter().map(|v| v.invariant).collect()
}

#[test]
fn an_adopted_user_configmap_is_a_violation_of_the_users_data() {
    let mut m = Model::default();
    let data = BTreeMap::from([("note".to_string(), "mine".to_string())]);
    m.apply(&Action::CreateConfigMap {
        name: "d1-summary".into(),
        data: data.clone(),
    });
    m.apply(&Action::CreateDebugger {
        name: "d1".into(),
        spec: spec(),
    });
    let mut snap = empty();
    snap.debuggers
        .insert("d1".into(), debugger("d1", &spec(), "InvalidSpec", false));
    snap.configmaps
        .insert("d1-summary".into(), configmap("d1-summary", &data, None));
    assert!(violations(&m, &snap, &[node(1)]).is_empty());

    // Adopted: an owner and the summary's data.
    let summary = BTreeMap::from([("node-1".to_string(), "ok".to_string())]);
    snap.configmaps.insert(
        "d1-summary".into(),
        configmap("d1-summary", &summary, Some("d1")),
    );
    snap.debuggers.insert(
        "d1".into(),
        debugger("d1", &spec(), "WorkloadNotReady", false),
    );
    let found = violations(&m, &snap, &[node(1)]);
    assert_eq!(kinds(&found), [USER_DATA, USER_DATA, REASON], "{found:#?}");
    // Deleted with the Debugger.
    snap.configmaps.clear();
    assert!(kinds(&violations(&m, &snap, &[node(1)])).contains(&USER_DATA));
}

#[test]
fn ready_without_ready_pods_or_with_a_missing_scripts_configmap_is_a_violation() {
    let mut m = Model::default();
    let s = Spec {
        scripts: Ref::Named("s".into()),
        ..spec()
    };
    m.apply(&Action::CreateDebugger {
        name: "d1".into(),
        spec: s.clone(),
    });
    let mut snap = empty();
    snap.debuggers
        .insert("d1".into(), debugger("d1", &s, "WorkloadReady", true));
    snap.pods.push(pod("d1", "d1", "Debugger", false));
    let found = violations(&m, &snap, &[node(1)]);
    assert_eq!(kinds(&found), [READY_CLAIM, REASON], "{found:#?}");
    assert!(found[0].what.contains("pods not Ready"), "{found:#?}");
    assert!(found[0].what.contains("scripts ConfigMap"), "{found:#?}");
}

#[test]
fn a_pinger_with_an_address_in_dns_must_be_invalid_naming_it() {
    let mut m = Model::default();
    m.apply(&Action::CreatePinger {
        name: "p-1".into(),
        bad_dns: Some("172.31.0.101".into()),
    });
    let pinger = |status: &str, reason: &str, message: &str| -> Pinger {
        serde_json::from_value(json!({
            "apiVersion": "kubecombo.io/v1", "kind": "Pinger",
            "metadata": {"name": "p-1", "generation": 1},
            "spec": crate::plan::pinger_json(Some("172.31.0.101")),
            "status": {"observedGeneration": 1, "conditions": [{"type": "Ready", "status": status,
                "reason": reason, "message": message, "lastTransitionTime": "2026-11-25T00:00:00Z"}]},
        }))
        .unwrap()
    };
    let mut snap = empty();
    snap.pingers.insert(
        "p-1".into(),
        pinger("True", "TargetsValid", "2 target(s) valid"),
    );
    assert_eq!(kinds(&violations(&m, &snap, &[])), [PINGER]);
    snap.pingers.insert(
        "p-1".into(),
        pinger(
            "False",
            "InvalidSpec",
            "dns \"172.31.0.101\" is an address, not a name",
        ),
    );
    assert!(violations(&m, &snap, &[]).is_empty());
}

#[test]
fn pods_of_deleted_debuggers_and_processes_of_gone_pods_are_violations() {
    let mut m = Model::default();
    m.apply(&Action::CreateDebugger {
        name: "d1".into(),
        spec: spec(),
    });
    m.apply(&Action::DeleteDebugger { name: "d1".into() });
    let mut snap = empty();
    snap.pods.push(pod("d1", "d1", "Debugger", true));
    snap.processes.push((keys::BIN_RUNNER, "d1".into()));
    assert_eq!(kinds(&violations(&m, &snap, &[])), [PODS_GONE]);
    snap.pods.clear();
    assert_eq!(kinds(&violations(&m, &snap, &[])), [PROCESS]);
    snap.processes.clear();
    assert!(violations(&m, &snap, &[]).is_empty());
}

#[test]
fn after_a_switch_the_old_kind_must_go() {
    let mut m = Model::default();
    let ds = Spec {
        workload: Workload::DaemonSet,
        ..spec()
    };
    m.apply(&Action::CreateDebugger {
        name: "d1".into(),
        spec: ds.clone(),
    });
    m.apply(&Action::EditDebugger {
        name: "d1".into(),
        change: crate::plan::Change::Workload(Workload::Pod),
    });
    let mut snap = empty();
    snap.debuggers.insert(
        "d1".into(),
        debugger("d1", &spec(), "WorkloadNotReady", false),
    );
    snap.pods.push(pod("d1-x7k2p", "d1", "DaemonSet", true));
    let found = violations(&m, &snap, &[node(1)]);
    assert_eq!(kinds(&found), [PODS_GONE]);
    // A pod of the old kind that nobody deleted yet is the garbage
    // collector's: it gets the longer bound.
    assert!(found.iter().all(awaits_gc), "{found:?}");
}

#[test]
fn pods_not_yet_deleted_or_deleted_within_the_bound_may_wait_longer() {
    let remains = violation(
        PODS_GONE,
        "DaemonSet d1 remains after the switch to a Pod".into(),
    );
    assert!(!awaits_gc(&remains), "the operator deletes the DaemonSet");
    let deleted = violation(
        PODS_GONE,
        "pod d1-a of deleted Debugger d1 still exists (Running, deleted at 2026-11-25T00:00:00Z, node Some(\"node-1\"))".into(),
    );
    assert!(
        !awaits_gc(&deleted),
        "its node's turn, past the bound, not the collector's"
    );
    let just_deleted = violation(
        PODS_GONE,
        "pod d1-a of deleted Debugger d1 still exists (Running, deleted 3 s ago, its node's turn)"
            .into(),
    );
    assert!(awaits_gc(&just_deleted), "deleted late by the collector");
    let ready = violation(READY_CLAIM, "pod d1-a not deleted yet)".into());
    assert!(!awaits_gc(&ready));
}

#[test]
fn a_pod_deleted_within_the_bound_is_its_nodes_turn_and_one_deleted_before_is_late() {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let deleted = |ago: i64, grace: i64| {
        let mut p = Pod::default();
        p.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::from_second(now - ago + grace).unwrap(),
        ));
        p.metadata.deletion_grace_period_seconds = Some(grace);
        pod_state(&p)
    };
    // Deleted 5 s ago with a 30 s grace: deletionTimestamp is 25 s ahead.
    assert!(deleted(5, 30).ends_with(NODES_TURN), "{}", deleted(5, 30));
    assert!(
        !deleted(25, 30).ends_with(NODES_TURN),
        "{}",
        deleted(25, 30)
    );
    assert!(!deleted(25, 0).ends_with(NODES_TURN));
}
