use super::*;
use crate::core::images::Images;
use crate::workload::render;
use combo_api::WorkloadType;
use combo_testkit::fixtures::debugger;

fn images() -> Images {
    Images {
        runner: "r:1".into(),
        pinger: "p:1".into(),
        pull_secrets: Vec::new(),
    }
}

/// What the API server would hold after applying `d`'s workload.
fn existing(d: &Debugger) -> Observed {
    match render::tests::rendered(d, None, &images(), None) {
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
    decide(
        d,
        &render::tests::rendered(d, None, &images(), None),
        observed,
    )
}

#[test]
fn a_missing_workload_is_created() {
    let d = debugger("ops", "d").build();
    let p = plan_for(&d, &Observed::default()).unwrap();
    assert!(p.apply);
    assert_eq!(p.change, Change::Created);
}

#[test]
fn an_unchanged_workload_is_not_written() {
    for wt in [WorkloadType::Daemonset, WorkloadType::Pod] {
        let d = debugger("ops", "d").workload_type(wt).build();
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
    let old = debugger("ops", "d").build();
    let new = debugger("ops", "d").cpu("200m").build();
    let p = plan_for(&new, &existing(&old)).unwrap();
    assert!(p.apply && !p.delete_pod);
    assert_eq!(p.change, Change::Updated);
}

#[test]
fn a_changed_pod_is_deleted_then_recreated() {
    let old = debugger("ops", "d")
        .workload_type(WorkloadType::Pod)
        .build();
    let new = debugger("ops", "d")
        .workload_type(WorkloadType::Pod)
        .cpu("200m")
        .build();
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
    let as_ds = debugger("ops", "d").build();
    let as_pod = debugger("ops", "d")
        .workload_type(WorkloadType::Pod)
        .build();
    let p = plan_for(&as_pod, &existing(&as_ds)).unwrap();
    assert!(p.delete_daemonset && p.apply);
    let p = plan_for(&as_ds, &existing(&as_pod)).unwrap();
    assert!(p.delete_pod && p.apply);
}

#[test]
fn a_workload_owned_by_someone_else_is_never_touched() {
    let d = debugger("ops", "d").build();
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
