use super::*;
use crate::cache::Summary;
use crate::render::{self, Images};
use combo_api::{DebuggerSpec, WorkloadType};
use k8s_openapi::api::core::v1::ConfigMap;

fn images() -> Images {
    Images {
        runner: "r:1".into(),
        pinger: "p:1".into(),
        pull_secrets: Vec::new(),
    }
}

fn dbg(wt: WorkloadType, cpu: &str) -> Debugger {
    let mut d = Debugger::new(
        "d",
        DebuggerSpec {
            workload_type: wt,
            cpu: cpu.into(),
            ..DebuggerSpec::default()
        },
    );
    d.metadata.namespace = Some("ops".into());
    d.metadata.uid = Some("uid-d".into());
    d
}

/// What the API server would hold after applying `d`'s workload.
fn existing(d: &Debugger) -> Observed {
    match render::workload(d, None, &images(), None) {
        Workload::DaemonSet(ds) => Observed {
            daemonset: Some(*ds),
            ..Observed::default()
        },
        Workload::Pod(p) => Observed {
            pod: Some(*p),
            ..Observed::default()
        },
    }
}

fn plan_for(d: &Debugger, observed: &Observed) -> Result<Plan, Error> {
    plan(d, &render::workload(d, None, &images(), None), observed)
}

#[test]
fn a_missing_workload_is_created() {
    let d = dbg(WorkloadType::Daemonset, "100m");
    let p = plan_for(&d, &Observed::default()).unwrap();
    assert!(p.apply);
    assert_eq!(p.change, Change::Created);
}

#[test]
fn an_unchanged_workload_is_not_written() {
    for wt in [WorkloadType::Daemonset, WorkloadType::Pod] {
        let d = dbg(wt, "100m");
        let p = plan_for(&d, &existing(&d)).unwrap();
        assert_eq!(
            p,
            Plan {
                delete_pod: false,
                delete_daemonset: false,
                apply: false,
                change: Change::Unchanged
            }
        );
    }
}

#[test]
fn a_changed_daemonset_is_updated_in_place() {
    let old = dbg(WorkloadType::Daemonset, "100m");
    let new = dbg(WorkloadType::Daemonset, "200m");
    let p = plan_for(&new, &existing(&old)).unwrap();
    assert!(p.apply && !p.delete_pod);
    assert_eq!(p.change, Change::Updated);
}

#[test]
fn a_changed_pod_is_deleted_then_recreated() {
    let old = dbg(WorkloadType::Pod, "100m");
    let new = dbg(WorkloadType::Pod, "200m");
    let p = plan_for(&new, &existing(&old)).unwrap();
    assert!(p.delete_pod && !p.apply);
    assert_eq!(p.change, Change::Replacing);
    let mut terminating = existing(&old);
    terminating
        .pod
        .as_mut()
        .unwrap()
        .metadata
        .deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
    ));
    let p = plan_for(&new, &terminating).unwrap();
    assert_eq!(p.change, Change::Waiting);
    assert!(!p.apply && !p.delete_pod);
    let gone = plan_for(&new, &Observed::default()).unwrap();
    assert_eq!(gone.change, Change::Created);
}

#[test]
fn switching_workload_type_deletes_the_other_kind() {
    let as_ds = dbg(WorkloadType::Daemonset, "100m");
    let as_pod = dbg(WorkloadType::Pod, "100m");
    let p = plan_for(&as_pod, &existing(&as_ds)).unwrap();
    assert!(p.delete_daemonset && p.apply);
    let p = plan_for(&as_ds, &existing(&as_pod)).unwrap();
    assert!(p.delete_pod && p.apply);
}

#[test]
fn a_workload_owned_by_someone_else_is_never_touched() {
    let d = dbg(WorkloadType::Daemonset, "100m");
    let mut foreign = existing(&d);
    foreign
        .daemonset
        .as_mut()
        .unwrap()
        .metadata
        .owner_references = None;
    let err = plan_for(&d, &foreign).unwrap_err();
    assert!(
        matches!(
            err,
            Error::NotOwned {
                kind: "DaemonSet",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn the_summary_is_created_when_missing_applied_when_stale_and_a_foreign_one_is_never_written() {
    let d = dbg(WorkloadType::Daemonset, "100m");
    let desired = render::summary_config_map(&d, Default::default());
    assert_eq!(
        summary_due(&d, &desired, None).unwrap(),
        Some(SummaryWrite::Create),
        "missing"
    );
    let as_rendered = Summary::of(&desired);
    assert_eq!(summary_due(&d, &desired, Some(&as_rendered)).unwrap(), None);
    let mut stale = desired.clone();
    stale
        .metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(crate::render::ANNOTATION_SPEC_HASH.into(), "old".into());
    assert_eq!(
        summary_due(&d, &desired, Some(&Summary::of(&stale))).unwrap(),
        Some(SummaryWrite::Apply)
    );

    // The user's own ConfigMap (no ownerReference) is never adopted.
    let mut by_hand = ConfigMap::default();
    by_hand.metadata.name = desired.metadata.name.clone();
    by_hand.data = Some([("important".to_string(), "do-not-lose".to_string())].into());
    assert!(matches!(
        summary_due(&d, &desired, Some(&Summary::of(&by_hand))),
        Err(Error::NotOwned {
            kind: "ConfigMap",
            ..
        })
    ));

    let mut by_runners = desired.clone();
    by_runners.metadata.managed_fields = Some(vec![
        k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry {
            manager: Some("combo-runner/node-1".into()),
            operation: Some("Apply".into()),
            ..Default::default()
        },
    ]);
    assert_eq!(
        summary_due(&d, &desired, Some(&Summary::of(&by_runners))).unwrap(),
        Some(SummaryWrite::TakeOver),
        "its own, written by runners of an earlier version: taken over"
    );
    let entry = |manager: &str, operation: &str| {
        k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry {
            manager: Some(manager.into()),
            operation: Some(operation.into()),
            ..Default::default()
        }
    };
    let mut applied = desired.clone();
    applied.metadata.managed_fields = Some(vec![
        entry("combo-runner/gone", "Apply"),
        entry("combo-operator", "Apply"),
        entry("kubectl-edit", "Update"),
    ]);
    applied.data = Some(
        [("node-1", "a"), ("gone", "b")]
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .into(),
    );
    let mut want = desired.clone();
    want.data = Some([("node-1".to_string(), "a".to_string())].into());
    let replaced = takeover(&applied, &want);
    assert_eq!(
        replaced.metadata.managed_fields,
        Some(vec![entry("combo-operator", "Apply")])
    );
    assert_eq!(replaced.data, want.data, "keys of nodes not reported go");
    assert!(!Summary::of(&replaced).foreign_managers);

    let mut other = desired.clone();
    for o in other.metadata.owner_references.iter_mut().flatten() {
        o.uid = "uid-other".into();
    }
    assert!(matches!(
        summary_due(&d, &desired, Some(&Summary::of(&other))),
        Err(Error::NotOwned {
            kind: "ConfigMap",
            ..
        })
    ));
}
