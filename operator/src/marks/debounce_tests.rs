use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::*;
use crate::core::node_marks::NodeMarks;
use crate::marks::plan::{for_nodes, Inputs, MarksPlan};
use crate::reports::aggregate::NodeReport;
use crate::reports::store::NodeReports;
use chrono::{DateTime, Utc};
use combo_api::history::History;
use combo_api::{DebuggerReportSpec, ItemResult, NodeSummary};
use combo_testkit::fixtures::debugger;
use k8s_openapi::api::core::v1::Taint;

const NODE: &str = "node-0000";
const DISK: &str = "kubecombo.io/ops.check.disk";

/// Debugger `check` of `ops`: disk and net, conditions on, disk taints on
/// every node it needs, with thresholds `failure` and `success`.
fn wanted(failure: u32, success: u32, conditions: bool) -> Wanted {
    let d = debugger("ops", "check")
        .categories(&[Category::Disk, Category::Net])
        .node_conditions(conditions)
        .taints(&[Category::Disk])
        .max_tainted_percent(100)
        .spec_with(|s| {
            s.failure_threshold = failure;
            s.success_threshold = success;
        });
    Wanted::of(&d.build(), true)
}

fn now() -> DateTime<Utc> {
    "2026-01-02T00:00:00Z".parse().unwrap()
}

/// One node's runs one after another as its runner reports them: each
/// report carries the history of the runs so far (without history when
/// `history` is off, as an older runner writes it).
struct Runs {
    history: History,
    run: u32,
    with_history: bool,
}

impl Runs {
    fn new() -> Runs {
        Runs {
            history: History::default(),
            run: 0,
            with_history: true,
        }
    }

    fn without_history() -> Runs {
        Runs {
            with_history: false,
            ..Runs::new()
        }
    }

    /// The report of the next run: `/var` failing or not, `eth0` healthy.
    fn next(&mut self, failing: bool) -> NodeReports {
        self.run += 1;
        let disk = if failing {
            ItemResult::err("97% used")
        } else {
            ItemResult::ok()
        };
        let mut result = NodeSummary {
            run_at: format!("2026-01-01T{:02}:00:00Z", self.run),
            ..NodeSummary::default()
        };
        result
            .categories
            .insert("disk".into(), [("/var".into(), disk)].into());
        result
            .categories
            .insert("net".into(), [("eth0".into(), ItemResult::ok())].into());
        let mut spec = DebuggerReportSpec {
            debugger: "check".into(),
            node: NODE.into(),
            run_at: result.run_at.clone(),
            categories: result.categories.clone(),
            ..DebuggerReportSpec::default()
        };
        if self.with_history {
            self.history = self.history.next(&result);
            spec = spec.with_history(self.history.clone());
        }
        let report = NodeReport::new(format!("check.{NODE}"), spec);
        [(NODE.to_string(), Arc::new(report))].into()
    }
}

/// The plan for `reports`, then its writes landed on `nodes`.
fn step(
    wanted: &Wanted,
    reports: &NodeReports,
    missed: &BTreeSet<String>,
    nodes: &mut BTreeMap<String, NodeMarks>,
) -> MarksPlan {
    let plan = for_nodes(&Inputs {
        wanted,
        reports,
        missed,
        nodes,
        node_count: reports.len(),
        now: now(),
    });
    for w in &plan.conditions {
        let m = nodes.entry(w.node.clone()).or_default();
        m.conditions
            .retain(|c| !w.remove.contains(&c.type_) && !w.set.iter().any(|s| s.type_ == c.type_));
        m.conditions.extend(w.set.iter().cloned());
    }
    for w in &plan.taints {
        let m = nodes.entry(w.node.clone()).or_default();
        m.taints.retain(|t| !w.remove.contains(&t.key));
        m.taints.extend(w.add.iter().map(|k| Taint {
            key: k.clone(),
            effect: "NoSchedule".into(),
            ..Taint::default()
        }));
    }
    plan
}

/// The node's disk condition as (status, reason, message), and whether
/// it carries the disk taint.
fn disk(nodes: &BTreeMap<String, NodeMarks>) -> (String, String, String, bool) {
    let m = &nodes[NODE];
    let c = m.condition(DISK).expect("a disk condition");
    (
        c.status.clone(),
        c.reason.clone().unwrap_or_default(),
        c.message.clone().unwrap_or_default(),
        m.tainted(DISK),
    )
}

fn mark_of(
    status: &str,
    reason: &str,
    message: &str,
    tainted: bool,
) -> (String, String, String, bool) {
    (status.into(), reason.into(), message.into(), tainted)
}

#[test]
fn with_failure_threshold_three_the_condition_turns_true_and_taints_only_at_the_third_failed_run() {
    let w = wanted(3, 1, true);
    let (mut runs, mut nodes, none) = (Runs::new(), BTreeMap::new(), BTreeSet::new());
    step(&w, &runs.next(false), &none, &mut nodes);
    step(&w, &runs.next(true), &none, &mut nodes);
    let below = "BelowFailureThreshold";
    assert_eq!(
        disk(&nodes),
        mark_of("False", below, "/var: 97% used (failed 1 of 3 runs)", false)
    );
    let p = step(&w, &runs.next(true), &none, &mut nodes);
    assert!(p.taints.is_empty(), "no taint below the threshold");
    assert_eq!(
        disk(&nodes),
        mark_of("False", below, "/var: 97% used (failed 2 of 3 runs)", false)
    );
    assert_eq!(p.limit.map(|l| l.failing), Some(0), "not failing yet");
    let p = step(&w, &runs.next(true), &none, &mut nodes);
    assert_eq!(
        disk(&nodes),
        mark_of("True", "Var", "/var: 97% used (failed 3 runs)", true)
    );
    assert_eq!(p.limit.map(|l| l.failing), Some(1));
    step(&w, &runs.next(true), &none, &mut nodes);
    assert_eq!(disk(&nodes).2, "/var: 97% used (failed 4 runs)");
}

#[test]
fn a_healthy_run_below_the_failure_threshold_starts_the_count_again() {
    let w = wanted(3, 1, true);
    let (mut runs, mut nodes, none) = (Runs::new(), BTreeMap::new(), BTreeSet::new());
    for failing in [true, true, false, true, true] {
        step(&w, &runs.next(failing), &none, &mut nodes);
    }
    assert_eq!(
        disk(&nodes),
        mark_of(
            "False",
            "BelowFailureThreshold",
            "/var: 97% used (failed 2 of 3 runs)",
            false
        )
    );
}

#[test]
fn with_success_threshold_two_a_failing_node_stays_true_and_tainted_after_one_healthy_run() {
    let w = wanted(2, 2, true);
    let (mut runs, mut nodes, none) = (Runs::new(), BTreeMap::new(), BTreeSet::new());
    for _ in 0..4 {
        step(&w, &runs.next(true), &none, &mut nodes);
    }
    assert_eq!(
        disk(&nodes),
        mark_of("True", "Var", "/var: 97% used (failed 4 runs)", true)
    );
    let p = step(&w, &runs.next(false), &none, &mut nodes);
    assert!(p.taints.is_empty(), "the taint stays while recovering");
    assert_eq!(
        disk(&nodes),
        mark_of(
            "True",
            "Recovering",
            "/var: 97% used (failed 4 runs; healthy 1 of 2 runs to clear)",
            true
        )
    );
    assert_eq!(p.limit.map(|l| l.failing), Some(1), "recovering is failing");
    step(&w, &runs.next(false), &none, &mut nodes);
    assert_eq!(
        disk(&nodes),
        mark_of("False", "NoFailures", "no disk item failed", false)
    );
}

#[test]
fn a_failure_while_recovering_keeps_the_condition_true_below_the_failure_threshold() {
    let w = wanted(3, 3, true);
    let (mut runs, mut nodes, none) = (Runs::new(), BTreeMap::new(), BTreeSet::new());
    for failing in [true, true, true, false, false, true] {
        step(&w, &runs.next(failing), &none, &mut nodes);
    }
    assert_eq!(
        disk(&nodes),
        mark_of("True", "Var", "/var: 97% used (failed 1 run)", true)
    );
}

#[test]
fn taints_alone_follow_the_thresholds_and_a_tainted_node_counts_as_failing() {
    let w = wanted(2, 2, false);
    let (mut runs, mut nodes, none) = (Runs::new(), BTreeMap::new(), BTreeSet::new());
    let tainted =
        |nodes: &BTreeMap<String, NodeMarks>| nodes.get(NODE).is_some_and(|m| m.tainted(DISK));
    let expected = [
        (true, false),
        (true, true),
        (false, true),
        (true, true),
        (false, true),
        (false, false),
    ];
    for (i, (failing, want)) in expected.into_iter().enumerate() {
        let p = step(&w, &runs.next(failing), &none, &mut nodes);
        assert!(p.conditions.is_empty(), "conditions are off");
        assert_eq!(tainted(&nodes), want, "run {}", i + 1);
    }
}

#[test]
fn default_thresholds_mark_the_first_failed_run_and_clear_at_the_first_healthy_one() {
    let w = wanted(1, 1, true);
    let (mut runs, mut nodes, none) = (Runs::new(), BTreeMap::new(), BTreeSet::new());
    step(&w, &runs.next(true), &none, &mut nodes);
    assert_eq!(
        disk(&nodes),
        mark_of("True", "Var", "/var: 97% used", true),
        "one failed run: no count"
    );
    step(&w, &runs.next(true), &none, &mut nodes);
    assert_eq!(disk(&nodes).2, "/var: 97% used (failed 2 runs)");
    step(&w, &runs.next(false), &none, &mut nodes);
    assert_eq!(
        disk(&nodes),
        mark_of("False", "NoFailures", "no disk item failed", false)
    );
}

#[test]
fn a_report_without_history_decides_alone_as_with_thresholds_of_one() {
    let w = wanted(3, 3, true);
    let (mut runs, mut nodes, none) = (Runs::without_history(), BTreeMap::new(), BTreeSet::new());
    step(&w, &runs.next(true), &none, &mut nodes);
    assert_eq!(
        disk(&nodes),
        mark_of("True", "Var", "/var: 97% used", true),
        "nothing to count: the run counts as one and decides"
    );
    step(&w, &runs.next(false), &none, &mut nodes);
    assert_eq!(
        disk(&nodes),
        mark_of("False", "NoFailures", "no disk item failed", false),
        "never recovering for good"
    );
}

#[test]
fn a_missed_run_is_unknown_whatever_the_thresholds() {
    let w = wanted(3, 3, true);
    let (mut runs, mut nodes) = (Runs::new(), BTreeMap::new());
    let reports = runs.next(true);
    step(&w, &reports, &BTreeSet::new(), &mut nodes);
    let missed: BTreeSet<String> = [NODE.to_string()].into();
    step(&w, &reports, &missed, &mut nodes);
    let (status, reason, _, tainted) = disk(&nodes);
    assert_eq!(
        (status.as_str(), reason.as_str(), tainted),
        ("Unknown", "RunMissed", false)
    );
}

#[test]
fn the_note_survives_the_cut_of_a_long_message() {
    let m = Mark::Failing {
        item: "/var".into(),
        message: "x".repeat(400),
        more: 0,
        runs: 7,
        threshold: 3,
    };
    let (_, _, message) = condition_of(Category::Disk, &m);
    assert!(message.ends_with("x [cut] (failed 7 runs)"), "{message}");
    assert!(
        message.len() <= MESSAGE_MAX + " [cut]".len(),
        "{}",
        message.len()
    );
    assert_eq!(split_note(&message).1, Some(7));
}

#[test]
fn a_note_is_split_off_only_when_it_is_the_operators() {
    let split = |m: &str| split_note(m);
    assert_eq!(
        split("/var: 97% used (failed 4 runs)"),
        ("/var: 97% used".into(), Some(4))
    );
    assert_eq!(
        split("/var: 97% used (+2 more failed) (failed 1 run; healthy 1 of 3 runs to clear)"),
        ("/var: 97% used (+2 more failed)".into(), Some(1))
    );
    assert_eq!(
        split("/var: 97% used (healthy 2 of 3 runs to clear)"),
        ("/var: 97% used".into(), None)
    );
    for own in [
        "/var: 97% used (+2 more failed)",
        "svc: unit failed (exit 3)",
        "/var: 97% used",
    ] {
        assert_eq!(split(own), (own.to_string(), None));
    }
}

#[test]
fn a_recovering_node_with_only_a_taint_says_no_item_failed() {
    let m = Mark::Recovering {
        last: None,
        failed: None,
        healthy: 1,
        threshold: 2,
    };
    assert_eq!(
        condition_of(Category::Disk, &m),
        (
            "True",
            "Recovering".to_string(),
            "no disk item failed (healthy 1 of 2 runs to clear)".to_string()
        )
    );
}
