use std::sync::Arc;

use super::*;
use crate::core::images::Images;
use crate::core::validate::Valid;
use crate::reports::aggregate::NodeReport;
use combo_api::report::report_name;
use combo_api::summary::{ItemResult, NodeSummary};
use combo_api::{DebuggerReportSpec, RunAt};
use combo_testkit::fixtures::debugger;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;

const RUN: &str = "2026-11-22T06:00:00Z";

fn scripts_missing() -> Rejected {
    Rejected::after(
        Valid::of(
            &debugger("ops", "d").build(),
            RunAt::parse(RUN).unwrap(),
            None,
            &Images::default(),
        ),
        Invalid::ConfigMapNotFound("configMap \"scripts\": ConfigMap not found".into()),
    )
}

fn invalid_spec() -> Rejected {
    Rejected {
        invalid: Invalid::InvalidSpec("categories is empty".into()),
        run_at: RunAt::parse(RUN).ok(),
    }
}

/// A report of `node` for `RUN` with `failed` failed disk items.
fn report(node: &str, failed: usize) -> Arc<NodeReport> {
    let mut result = NodeSummary {
        run_at: RUN.into(),
        finished_at: "2026-11-22T06:00:07Z".into(),
        ..Default::default()
    };
    let disk = result.categories.entry("disk".into()).or_default();
    disk.insert("sda".into(), ItemResult::ok());
    for i in 0..failed {
        disk.insert(format!("bad{i}"), ItemResult::err("broken"));
    }
    Arc::new(NodeReport::new(
        report_name("d", node),
        DebuggerReportSpec::of("d", node, &result),
    ))
}

/// What the cluster holds: `reports`, and the summary rendered from
/// `summarised` (reports of an earlier run) with `owner` as its controller.
fn observed(
    d: &Debugger,
    reports: &[(&str, usize)],
    summarised: &[(&str, usize)],
    owner: Option<&Debugger>,
) -> Observed {
    let by_node = |rs: &[(&str, usize)]| {
        rs.iter()
            .map(|(n, f)| (n.to_string(), report(n, *f)))
            .collect()
    };
    let old = Observed {
        reports: by_node(summarised),
        ..Observed::default()
    };
    let mut cm = desired(owner.unwrap_or(d), &old);
    if owner.is_none() {
        cm.metadata.owner_references = None;
    }
    cm.metadata.name = Some(d.spec.summary_name("d"));
    Observed {
        reports: by_node(reports),
        summary: Some(Summary::of(&cm)),
        ..Observed::default()
    }
}

#[test]
fn a_debugger_whose_scripts_are_gone_keeps_its_summary_with_the_status() {
    // The case: a run with one failed item on a Debugger whose
    // scripts ConfigMap was deleted. The summary written is the one the
    // status's run fields come from, not the run before.
    let d = debugger("ops", "d").config_map("scripts").build();
    let o = observed(
        &d,
        &[("node-1", 1), ("node-2", 0)],
        &[("node-1", 0)],
        Some(&d),
    );
    let (cm, how) = when_rejected(&d, &scripts_missing(), &o).expect("a summary write is due");
    assert_eq!(how, SummaryWrite::Apply);
    let data = cm.data.unwrap_or_default();
    assert_eq!(data.len(), 2, "{data:?}");
    assert!(data["node-1"].contains("broken"), "{data:?}");
    let runs = crate::reports::runs::run_summary(o.reports.values().map(|r| r.as_ref()));
    assert_eq!(runs.failed_items, 1, "the status counts the same failure");
    assert_eq!(runs.completed_nodes, 2);

    // Once written, nothing more is due.
    let written = Observed {
        summary: Some(Summary::of(&desired(&d, &o))),
        ..o.clone()
    };
    assert_eq!(when_rejected(&d, &scripts_missing(), &written), None);
    // A summary deleted by hand comes back, as a valid Debugger's does.
    let deleted = Observed { summary: None, ..o };
    assert_eq!(
        when_rejected(&d, &scripts_missing(), &deleted).map(|(_, how)| how),
        Some(SummaryWrite::Create)
    );
}

#[test]
fn an_invalid_spec_updates_its_own_summary_but_creates_none() {
    // The other way round: a failure the newest run no longer has leaves.
    let d = debugger("ops", "d").build();
    let o = observed(&d, &[("node-1", 0)], &[("node-1", 2)], Some(&d));
    let (cm, how) = when_rejected(&d, &invalid_spec(), &o).expect("its own summary is updated");
    assert_eq!(how, SummaryWrite::Apply);
    assert!(!cm.data.unwrap_or_default()["node-1"].contains("broken"));
    let none = Observed { summary: None, ..o };
    assert_eq!(
        when_rejected(&d, &invalid_spec(), &none),
        None,
        "an invalid spec's summary name may be no name: nothing is created"
    );
}

#[test]
fn a_summary_named_like_the_scripts_is_not_written_by_an_invalid_spec() {
    let d = debugger("ops", "d").config_map("d-summary").build();
    let o = observed(&d, &[("node-1", 1)], &[], Some(&d));
    assert_eq!(when_rejected(&d, &invalid_spec(), &o), None);
}

#[test]
fn a_summary_another_controls_is_never_written() {
    let d = debugger("ops", "d").summary_config_map("shared").build();
    let first = debugger("ops", "first")
        .summary_config_map("shared")
        .build();
    for owner in [Some(&first), None] {
        let o = observed(&d, &[("node-1", 1)], &[("node-9", 0)], owner);
        assert_eq!(when_rejected(&d, &scripts_missing(), &o), None);
        let cm = desired(&d, &o);
        assert_eq!(
            due_when_rejected(&d, &scripts_missing(), &cm, o.summary.as_ref()),
            None
        );
    }
}

/// A ConfigMap `name` controlled by UID `uid`, labelled as Debugger `d`'s
/// workload when `labelled`.
fn controlled(name: &str, uid: &str, labelled: bool) -> Summary {
    let d = debugger("ops", "d").build();
    let mut owner = d.controller_owner_ref(&()).unwrap();
    owner.uid = uid.into();
    Summary {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("ops".into()),
            uid: Some(format!("uid-of-{name}")),
            labels: labelled.then(|| keys::workload_labels("d")),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        foreign_managers: false,
    }
}

#[test]
fn only_the_summaries_written_under_a_former_name_are_deleted() {
    let d = debugger("ops", "d")
        .summary_config_map("now")
        .config_map("scripts")
        .build();
    let seen = [
        controlled("now", "uid-d", true),
        controlled("before", "uid-d", true),
        controlled("scripts", "uid-d", true),
        controlled("unlabelled", "uid-d", false),
        controlled("anothers", "uid-other", true),
    ];
    assert_eq!(
        former_summaries(&d, &seen),
        vec![("before".to_string(), "uid-of-before".to_string())]
    );
}

#[test]
fn a_summary_name_is_taken_when_a_configmap_it_does_not_control_holds_it() {
    let d = debugger("ops", "d").build();
    let other = debugger("ops", "d").uid("uid-other").build();
    assert!(!taken(&d, &observed(&d, &[], &[], Some(&d))), "its own");
    assert!(taken(&d, &observed(&d, &[], &[], None)), "the user's");
    assert!(
        taken(&d, &observed(&d, &[], &[], Some(&other))),
        "another's"
    );
    assert!(!taken(&d, &Observed::default()), "none yet");
}
