use std::sync::Arc;

use super::*;
use crate::marks::state::{reason_of, REASON_MAX};
use crate::marks::taints::TaintWrite;
use combo_api::{DebuggerReportSpec, ItemResult};
use combo_testkit::fixtures::{debugger, DebuggerBuilder};
use k8s_openapi::api::core::v1::Taint;

/// The categories of the Debugger `check` and of its reports.
const CATEGORIES: &[Category] = &[Category::Disk, Category::Net];

/// Debugger `check` of `ops`, checking [`CATEGORIES`].
fn check() -> DebuggerBuilder {
    debugger("ops", "check").categories(CATEGORIES)
}

fn now() -> DateTime<Utc> {
    "2026-01-01T06:10:00Z".parse().unwrap()
}

/// A report of `node`: `disk` with one item failing when `failing`,
/// `net` healthy.
fn report(node: &str, failing: bool) -> Arc<NodeReport> {
    let mut spec = DebuggerReportSpec {
        debugger: "check".into(),
        node: node.into(),
        run_at: "2026-01-01T06:00:00Z".into(),
        ..DebuggerReportSpec::default()
    };
    let disk = if failing {
        ItemResult::err("97% used")
    } else {
        ItemResult::ok()
    };
    spec.categories
        .insert("disk".into(), [("/var".into(), disk)].into());
    spec.categories
        .insert("net".into(), [("eth0".into(), ItemResult::ok())].into());
    Arc::new(NodeReport::new(format!("check.{node}"), spec))
}

fn reports(n: usize, failing: impl Fn(usize) -> bool) -> NodeReports {
    (0..n)
        .map(|i| {
            let node = format!("node-{i:04}");
            (node.clone(), report(&node, failing(i)))
        })
        .collect()
}

/// What the nodes carry once `plan`'s writes landed on `nodes`.
fn applied(nodes: &mut BTreeMap<String, NodeMarks>, plan: &MarksPlan) {
    for w in &plan.conditions {
        let m = nodes.entry(w.node.clone()).or_default();
        m.conditions
            .retain(|c| !w.remove.contains(&c.type_) && !w.set.iter().any(|s| s.type_ == c.type_));
        m.conditions.extend(w.set.iter().cloned());
    }
    for TaintWrite { node, add, remove } in &plan.taints {
        let m = nodes.entry(node.clone()).or_default();
        m.taints.retain(|t| !remove.contains(&t.key));
        m.taints.extend(add.iter().map(|k| Taint {
            key: k.clone(),
            effect: "NoSchedule".into(),
            ..Taint::default()
        }));
    }
    nodes.retain(|_, m| !m.is_empty());
}

fn plan_for(
    wanted: &Wanted,
    reports: &NodeReports,
    missed: &BTreeSet<String>,
    nodes: &BTreeMap<String, NodeMarks>,
    at: DateTime<Utc>,
) -> MarksPlan {
    for_nodes(&Inputs {
        wanted,
        reports,
        missed,
        nodes,
        node_count: reports.len(),
        now: at,
    })
}

#[test]
fn a_node_that_starts_failing_costs_one_write_and_an_unchanged_run_none() {
    let wanted = Wanted::of(&check().node_conditions(true).build(), true);
    let mut nodes = BTreeMap::new();
    let healthy = reports(3, |_| false);
    let first = plan_for(&wanted, &healthy, &BTreeSet::new(), &nodes, now());
    assert_eq!(
        first.conditions.len(),
        3,
        "every node gets its conditions once"
    );
    assert_eq!(first.conditions[0].set.len(), 2, "disk and net, one write");
    applied(&mut nodes, &first);
    let again = plan_for(&wanted, &healthy, &BTreeSet::new(), &nodes, now());
    assert_eq!(again.writes(), 0, "nothing changed, nothing written");

    let one_fails = reports(3, |i| i == 1);
    let p = plan_for(&wanted, &one_fails, &BTreeSet::new(), &nodes, now());
    assert_eq!(p.writes(), 1);
    let w = &p.conditions[0];
    assert_eq!(w.node, "node-0001");
    assert_eq!(w.set.len(), 1);
    let c = &w.set[0];
    assert_eq!(c.type_, "kubecombo.io/ops.check.disk");
    assert_eq!(c.status, "True");
    assert_eq!(c.reason.as_deref(), Some("Var"));
    assert_eq!(c.message.as_deref(), Some("/var: 97% used"));
}

#[test]
fn the_transition_time_moves_only_with_the_status() {
    let wanted = Wanted::of(&check().node_conditions(true).build(), true);
    let mut nodes = BTreeMap::new();
    let failing = reports(1, |_| true);
    let done = plan_for(&wanted, &failing, &BTreeSet::new(), &nodes, now());
    applied(&mut nodes, &done);
    let before = nodes["node-0000"]
        .condition("kubecombo.io/ops.check.disk")
        .cloned()
        .unwrap();
    // The message changes: a write that keeps the transition time.
    let mut spec = failing["node-0000"].kept_spec();
    spec.categories
        .get_mut("disk")
        .unwrap()
        .insert("/var".into(), ItemResult::err("98% used"));
    let changed: NodeReports = [(
        "node-0000".to_string(),
        Arc::new(NodeReport::new("r".into(), spec)),
    )]
    .into();
    let later = now() + chrono::Duration::hours(1);
    let p = plan_for(&wanted, &changed, &BTreeSet::new(), &nodes, later);
    let after = &p.conditions[0].set[0];
    assert_eq!(after.message.as_deref(), Some("/var: 98% used"));
    assert_eq!(after.last_transition_time, before.last_transition_time);
    assert_ne!(after.last_heartbeat_time, before.last_heartbeat_time);
    // Recovery is a transition.
    let healthy = reports(1, |_| false);
    let p = plan_for(&wanted, &healthy, &BTreeSet::new(), &nodes, later);
    let recovered = &p.conditions[0].set[0];
    assert_eq!(recovered.status, "False");
    assert_eq!(recovered.reason.as_deref(), Some("NoFailures"));
    assert_eq!(recovered.message.as_deref(), Some("no disk item failed"));
    assert_ne!(recovered.last_transition_time, before.last_transition_time);
}

#[test]
fn a_node_that_missed_a_run_turns_unknown_once() {
    let wanted = Wanted::of(&check().node_conditions(true).build(), true);
    let mut nodes = BTreeMap::new();
    let r = reports(2, |_| false);
    let done = plan_for(&wanted, &r, &BTreeSet::new(), &nodes, now());
    applied(&mut nodes, &done);
    let missed: BTreeSet<String> = ["node-0001".to_string()].into();
    let p = plan_for(&wanted, &r, &missed, &nodes, now());
    assert_eq!(p.writes(), 1);
    let w = &p.conditions[0];
    assert_eq!(w.node, "node-0001");
    assert!(w.set.iter().all(|c| c.status == "Unknown"
        && c.reason.as_deref() == Some("RunMissed")
        && c.message.as_deref() == Some("no report of a run since 2026-01-01T06:00:00Z")));
    applied(&mut nodes, &p);
    assert_eq!(plan_for(&wanted, &r, &missed, &nodes, now()).writes(), 0);
}

#[test]
fn turning_conditions_off_or_deleting_removes_only_this_debuggers_marks() {
    let d = check()
        .node_conditions(true)
        .taints(&[Category::Disk])
        .max_tainted_percent(100)
        .build();
    let wanted = Wanted::of(&d, true);
    let mut nodes = BTreeMap::new();
    let r = reports(2, |_| true);
    let done = plan_for(&wanted, &r, &BTreeSet::new(), &nodes, now());
    applied(&mut nodes, &done);
    let other = NodeCondition {
        type_: "kubecombo.io/ops.other.disk".into(),
        status: "True".into(),
        ..NodeCondition::default()
    };
    nodes
        .get_mut("node-0000")
        .unwrap()
        .conditions
        .push(other.clone());
    assert_eq!(nodes["node-0000"].taints.len(), 1);
    // Deleted: no report counts any more, every mark goes.
    let gone = Wanted::nothing(&d, true);
    let p = plan_for(&gone, &NodeReports::new(), &BTreeSet::new(), &nodes, now());
    assert_eq!(p.conditions.len(), 2);
    assert_eq!(p.taints.len(), 2);
    applied(&mut nodes, &p);
    assert_eq!(
        nodes["node-0000"].conditions,
        [other],
        "another Debugger's stays"
    );
    assert!(!gone.any());
    assert!(wanted.any());
}

#[test]
fn reasons_are_camel_case_and_start_with_a_letter() {
    assert_eq!(reason_of("smart/sda"), "SmartSda");
    assert_eq!(reason_of("errors:eth0"), "ErrorsEth0");
    assert_eq!(
        reason_of("(3 failed items omitted)"),
        "Item3FailedItemsOmitted"
    );
    assert_eq!(reason_of("/"), "Item");
    assert_eq!(reason_of(&"x".repeat(100)).len(), REASON_MAX);
}

#[test]
fn a_cut_report_names_a_real_item_and_counts_the_omitted_ones() {
    let mut spec = report("n", true).kept_spec();
    let disk = spec.categories.get_mut("disk").unwrap();
    disk.insert("(4 failed items omitted)".into(), ItemResult::err("4 more"));
    let s = states(&NodeReport::new("r".into(), spec), &[Category::Disk], false);
    assert_eq!(
        s,
        [(
            Category::Disk,
            State::Failed {
                item: "/var".into(),
                message: "97% used".into(),
                more: 4
            }
        )]
    );
}

#[test]
fn taints_stay_within_the_limit_and_the_first_nodes_by_name_get_them() {
    let wanted = Wanted::of(&check().taints(&[Category::Disk]).build(), true);
    let mut nodes = BTreeMap::new();
    let r = reports(25, |i| i % 5 == 0); // 5 failing of 25: at most 2 tainted
    let p = plan_for(&wanted, &r, &BTreeSet::new(), &nodes, now());
    assert!(p.conditions.is_empty(), "conditions are off");
    let tainted: Vec<&str> = p.taints.iter().map(|t| t.node.as_str()).collect();
    assert_eq!(tainted, ["node-0000", "node-0005"]);
    let limit = p.limit.unwrap();
    assert_eq!(
        (limit.failing, limit.tainted, limit.left_out, limit.limit),
        (5, 2, 3, 2)
    );
    assert!(limit.reached());
    applied(&mut nodes, &p);
    // node-0000 recovers: its taint goes and the next failing node gets one.
    let r = reports(25, |i| i % 5 == 0 && i != 0);
    let p = plan_for(&wanted, &r, &BTreeSet::new(), &nodes, now());
    let writes: Vec<(&str, usize, usize)> = p
        .taints
        .iter()
        .map(|t| (t.node.as_str(), t.add.len(), t.remove.len()))
        .collect();
    assert_eq!(writes, [("node-0000", 0, 1), ("node-0010", 1, 0)]);
    applied(&mut nodes, &p);
    assert_eq!(
        plan_for(&wanted, &r, &BTreeSet::new(), &nodes, now()).writes(),
        0
    );
}

#[test]
fn a_lower_limit_removes_taints_and_an_unknown_node_keeps_its_own() {
    let mut nodes = BTreeMap::new();
    let r = reports(10, |i| i < 4);
    // Disk taints on at most `percent` of the nodes.
    let limited = |percent| {
        let d = check()
            .taints(&[Category::Disk])
            .max_tainted_percent(percent);
        Wanted::of(&d.build(), true)
    };
    let wide = limited(40);
    let done = plan_for(&wide, &r, &BTreeSet::new(), &nodes, now());
    applied(&mut nodes, &done);
    assert_eq!(nodes.len(), 4);
    let missed: BTreeSet<String> = ["node-0001".to_string()].into();
    let narrow = limited(20);
    let p = plan_for(&narrow, &r, &missed, &nodes, now());
    let removed: Vec<&str> = p.taints.iter().map(|t| t.node.as_str()).collect();
    assert_eq!(removed, ["node-0002", "node-0003"], "the last by name go");
    applied(&mut nodes, &p);
    assert!(
        nodes["node-0001"].tainted("kubecombo.io/ops.check.disk"),
        "unknown keeps it"
    );
}

#[test]
fn without_the_right_to_taint_no_taint_is_planned() {
    let wanted = Wanted::of(
        &check()
            .node_conditions(true)
            .taints(&[Category::Disk])
            .max_tainted_percent(100)
            .build(),
        false,
    );
    assert!(wanted.taints_disabled);
    let p = plan_for(
        &wanted,
        &reports(3, |_| true),
        &BTreeSet::new(),
        &BTreeMap::new(),
        now(),
    );
    assert!(p.taints.is_empty());
    assert_eq!(p.limit, None);
    assert_eq!(p.conditions.len(), 3);
}

/// 5,000 nodes: the writes the planner asks for when 50 start failing and
/// when nothing changed (docs/benchmarks.md#node-marks-at-5000-nodes).
#[test]
fn at_five_thousand_nodes_fifty_new_failures_cost_fifty_writes_and_no_change_none() {
    let wanted = Wanted::of(
        &check()
            .node_conditions(true)
            .taints(&[Category::Disk])
            .build(),
        true,
    );
    let mut nodes = BTreeMap::new();
    let healthy = reports(5000, |_| false);
    let done = plan_for(&wanted, &healthy, &BTreeSet::new(), &nodes, now());
    applied(&mut nodes, &done);
    assert_eq!(
        plan_for(&wanted, &healthy, &BTreeSet::new(), &nodes, now()).writes(),
        0
    );
    let fifty = reports(5000, |i| i % 100 == 7);
    let p = plan_for(&wanted, &fifty, &BTreeSet::new(), &nodes, now());
    assert_eq!(p.conditions.len(), 50);
    assert_eq!(p.taints.len(), 50, "10 % of 5,000 leaves room for all 50");
    applied(&mut nodes, &p);
    assert_eq!(
        plan_for(&wanted, &fifty, &BTreeSet::new(), &nodes, now()).writes(),
        0
    );
}

#[test]
fn the_debuggers_pods_tolerate_its_own_taints_and_nothing_else_is_added() {
    let plain = check().node_conditions(true).build();
    assert_eq!(
        crate::workload::tolerations::tolerations(&plain),
        None,
        "the rendered pods stay as they were"
    );
    let tainting = check().taints(&[Category::Disk, Category::Net]).build();
    let t = crate::workload::tolerations::tolerations(&tainting).unwrap();
    let keys: Vec<(&str, &str, &str)> = t
        .iter()
        .map(|t| {
            (
                t.key.as_deref().unwrap(),
                t.operator.as_deref().unwrap(),
                t.effect.as_deref().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        keys,
        [
            ("kubecombo.io/ops.check.disk", "Exists", "NoSchedule"),
            ("kubecombo.io/ops.check.net", "Exists", "NoSchedule")
        ]
    );
}
