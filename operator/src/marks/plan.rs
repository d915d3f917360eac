//! Node marks: the conditions and taints a Debugger's results put on the
//! nodes it runs on, decided from its reports, the runs nodes missed and
//! what the nodes carry now. Pure: no I/O, the clock passed in. A node is
//! written only where a mark differs from what it carries
//! (docs/operator.md#node-conditions-taints-and-missed-runs).

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use combo_api::Category;
use k8s_openapi::api::core::v1::NodeCondition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::core::node_marks::{NodeMarks, Wanted};
use crate::marks::debounce::{self, condition_of, Carried, Mark, Thresholds};
use crate::marks::state::{states, State};
use crate::marks::taints::{self, Limit};
use crate::reports::aggregate::NodeReport;
use crate::reports::store::NodeReports;

/// The conditions to set on one node and the types to remove from it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ConditionWrite {
    /// The node.
    pub node: String,
    /// Conditions to set (by type).
    pub set: Vec<NodeCondition>,
    /// Condition types to remove.
    pub remove: Vec<String>,
}

/// Everything one reconcile writes to nodes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MarksPlan {
    /// Node status writes, one per node at most.
    pub conditions: Vec<ConditionWrite>,
    /// Taint writes, one per node at most.
    pub taints: Vec<taints::TaintWrite>,
    /// How the taints stand against `maxTaintedPercent`, when `taints`
    /// lists a category the operator may write.
    pub limit: Option<Limit>,
}

impl MarksPlan {
    /// How many node writes the plan holds.
    pub fn writes(&self) -> usize {
        self.conditions.len() + self.taints.len()
    }
}

/// Everything a marks plan is made from.
pub struct Inputs<'a> {
    /// What the Debugger asks for.
    pub wanted: &'a Wanted,
    /// Its reports, by node.
    pub reports: &'a NodeReports,
    /// The nodes that missed the checked run.
    pub missed: &'a BTreeSet<String>,
    /// What the nodes carry now: every node with a mark of this Debugger,
    /// and any others the caller knows (a node absent carries nothing).
    pub nodes: &'a BTreeMap<String, NodeMarks>,
    /// The Debugger's nodes: its DaemonSet's desired pods, or the reports
    /// if more.
    pub node_count: usize,
    /// The time of the plan.
    pub now: DateTime<Utc>,
}

/// The node writes of one reconcile. Pure.
pub fn for_nodes(inputs: &Inputs<'_>) -> MarksPlan {
    let none = NodeMarks::default();
    let nodes: BTreeSet<&String> = inputs
        .reports
        .keys()
        .chain(
            inputs
                .nodes
                .iter()
                .filter(|(_, m)| inputs.wanted.owns(m))
                .map(|(n, _)| n),
        )
        .collect();
    let mut conditions = Vec::new();
    let mut marks = BTreeMap::new();
    for node in nodes {
        let current = inputs.nodes.get(node).unwrap_or(&none);
        let mark = inputs
            .reports
            .get(node)
            .map(|r| marks_of(inputs.wanted, r, current, inputs.missed.contains(node)))
            .unwrap_or_default();
        if let Some(w) = condition_write(inputs.wanted, node, current, &mark, inputs.now) {
            conditions.push(w);
        }
        marks.insert(node.clone(), mark);
    }
    let (taints, limit) =
        taints::within_limit(inputs.wanted, &marks, inputs.nodes, inputs.node_count);
    MarksPlan {
        conditions,
        taints,
        limit,
    }
}

/// The mark of each category of `wanted` that `r` holds, on a node that
/// carries `current` and `missed` the checked run or not: its latest
/// state, debounced (docs/operator.md#debounce).
fn marks_of(
    wanted: &Wanted,
    r: &NodeReport,
    current: &NodeMarks,
    missed: bool,
) -> BTreeMap<Category, Mark> {
    let thresholds = Thresholds::of(wanted);
    states(r, &wanted.categories, missed)
        .into_iter()
        .map(|(c, state): (Category, State)| {
            let name = wanted.name(c);
            let carried = Carried {
                condition: current.condition(name).filter(|_| wanted.conditions),
                tainted: wanted.taints.contains(&c) && current.tainted(name),
            };
            let streaks = r.category_streaks(c.as_str());
            (c, debounce::mark(state, streaks, carried, thresholds))
        })
        .collect()
}

/// The write that brings `current` to the conditions `marks` ask for, if
/// any is needed. Pure.
fn condition_write(
    wanted: &Wanted,
    node: &str,
    current: &NodeMarks,
    marks: &BTreeMap<Category, Mark>,
    now: DateTime<Utc>,
) -> Option<ConditionWrite> {
    let mut write = ConditionWrite {
        node: node.to_string(),
        ..ConditionWrite::default()
    };
    for (category, name) in &wanted.names {
        let had = current.condition(name);
        let desired = marks.get(category).filter(|_| wanted.conditions);
        match (desired, had) {
            (None, Some(_)) => write.remove.push(name.clone()),
            (None, None) => {}
            (Some(s), had) => {
                let (status, reason, message) = condition_of(*category, s);
                let same = had.is_some_and(|h| {
                    h.status == status
                        && h.reason.as_deref() == Some(reason.as_str())
                        && h.message.as_deref() == Some(message.as_str())
                });
                if same {
                    continue;
                }
                let stamp = Time(crate::core::status::to_timestamp(now));
                let kept = had
                    .filter(|h| h.status == status)
                    .and_then(|h| h.last_transition_time.clone());
                write.set.push(NodeCondition {
                    type_: name.clone(),
                    status: status.into(),
                    reason: Some(reason),
                    message: Some(message),
                    last_heartbeat_time: Some(stamp.clone()),
                    last_transition_time: Some(kept.unwrap_or(stamp)),
                });
            }
        }
    }
    (!write.set.is_empty() || !write.remove.is_empty()).then_some(write)
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
