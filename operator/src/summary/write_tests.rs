use super::*;
use crate::edge::apply::Error;
use crate::state::cache::Summary;
use crate::summary::render;
use combo_testkit::fixtures::debugger;
use k8s_openapi::api::core::v1::ConfigMap;

#[test]
fn the_summary_is_created_when_missing_applied_when_stale_and_a_foreign_one_is_never_written() {
    let d = debugger("ops", "d").build();
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
        .insert(
            crate::core::spec_hash::ANNOTATION_SPEC_HASH.into(),
            "old".into(),
        );
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
