//! Node marks: the conditions and taints a Debugger's results put on the
//! nodes it runs on, decided from its reports, the runs nodes missed and
//! what the nodes carry now. Pure: no I/O, the clock passed in. A node is
//! written only where a mark differs from what it carries
//! (docs/operator.md#node-conditions-taints-and-missed-runs).

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use combo_api::keys::{node_mark_name, NODE_MARK_PREFIX};
use combo_api::{Category, Debugger};
use k8s_openapi::api::core::v1::{Node, NodeCondition, Taint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;

use crate::aggregate::NodeReport;
pub use crate::node_state::State;
use crate::node_state::{condition_of, states};
use crate::reports::NodeReports;
use crate::taints::{self, Limit};

/// The operator's marks on one node: its conditions and taints whose
/// names start with `kubecombo.io/`, of every Debugger.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeMarks {
    /// Conditions, in the node's order.
    pub conditions: Vec<NodeCondition>,
    /// Taints, in the node's order.
    pub taints: Vec<Taint>,
}

impl NodeMarks {
    /// The marks `node` carries; nothing else of it is kept.
    pub fn of(node: &Node) -> NodeMarks {
        let ours = |name: &str| name.starts_with(NODE_MARK_PREFIX);
        NodeMarks {
            conditions: node
                .status
                .iter()
                .flat_map(|s| s.conditions.iter().flatten())
                .filter(|c| ours(&c.type_))
                .cloned()
                .collect(),
            taints: node
                .spec
                .iter()
                .flat_map(|s| s.taints.iter().flatten())
                .filter(|t| ours(&t.key))
                .cloned()
                .collect(),
        }
    }

    /// Whether the node carries no mark at all.
    pub fn is_empty(&self) -> bool {
        self.conditions.is_empty() && self.taints.is_empty()
    }

    /// The condition of type `name`.
    pub fn condition(&self, name: &str) -> Option<&NodeCondition> {
        self.conditions.iter().find(|c| c.type_ == name)
    }

    /// Whether a taint with key `name` is on the node.
    pub fn tainted(&self, name: &str) -> bool {
        self.taints.iter().any(|t| t.key == name)
    }
}

/// What one Debugger asks of its nodes.
#[derive(Clone, Debug, PartialEq)]
pub struct Wanted {
    /// The condition type and taint key of each category, all five.
    pub names: Vec<(Category, String)>,
    /// Set conditions (`nodeConditions`).
    pub conditions: bool,
    /// The categories that run.
    pub categories: Vec<Category>,
    /// The categories that taint, when the operator may taint.
    pub taints: Vec<Category>,
    /// Whether the operator may write taints (not `--no-taints`).
    pub taints_writable: bool,
    /// `taints` lists categories but the operator may not taint.
    pub taints_disabled: bool,
    /// `maxTaintedPercent`.
    pub max_tainted_percent: u32,
}

impl Wanted {
    /// What `dbg` asks for; `taints_allowed` is false under `--no-taints`.
    pub fn of(dbg: &Debugger, taints_allowed: bool) -> Wanted {
        let spec = &dbg.spec;
        let ns = dbg.namespace().unwrap_or_default();
        let name = dbg.name_any();
        Wanted {
            names: Category::all()
                .into_iter()
                .map(|c| (c, node_mark_name(&ns, &name, c)))
                .collect(),
            conditions: spec.node_conditions,
            categories: spec.categories.clone(),
            taints: if taints_allowed {
                spec.taints.clone()
            } else {
                Vec::new()
            },
            taints_writable: taints_allowed,
            taints_disabled: !taints_allowed && !spec.taints.is_empty(),
            max_tainted_percent: spec.max_tainted_percent,
        }
    }

    /// Nothing: every mark of `dbg` goes (it is deleted).
    pub fn nothing(dbg: &Debugger, taints_allowed: bool) -> Wanted {
        Wanted {
            conditions: false,
            taints: Vec::new(),
            taints_disabled: false,
            ..Wanted::of(dbg, taints_allowed)
        }
    }

    /// Whether marks may be on nodes because of this: the finalizer stays
    /// while this holds.
    pub fn any(&self) -> bool {
        self.conditions || !self.taints.is_empty()
    }

    /// Whether `marks` hold a condition or taint of this Debugger.
    pub fn owns(&self, marks: &NodeMarks) -> bool {
        self.names
            .iter()
            .any(|(_, n)| marks.condition(n).is_some() || marks.tainted(n))
    }

    /// The name of `category`.
    pub fn name(&self, category: Category) -> &str {
        self.names
            .iter()
            .find(|(c, _)| *c == category)
            .map(|(_, n)| n.as_str())
            .expect("every category has a name")
    }
}

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
pub fn plan(inputs: &Inputs<'_>) -> MarksPlan {
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
    let mut states = BTreeMap::new();
    for node in nodes {
        let current = inputs.nodes.get(node).unwrap_or(&none);
        let state = inputs
            .reports
            .get(node)
            .map(|r| {
                let missed = inputs.missed.contains(node);
                states_of(r, &inputs.wanted.categories, missed)
            })
            .unwrap_or_default();
        if let Some(w) = condition_write(inputs.wanted, node, current, &state, inputs.now) {
            conditions.push(w);
        }
        states.insert(node.clone(), state);
    }
    let (taints, limit) = taints::plan(inputs.wanted, &states, inputs.nodes, inputs.node_count);
    MarksPlan {
        conditions,
        taints,
        limit,
    }
}

fn states_of(r: &NodeReport, categories: &[Category], missed: bool) -> BTreeMap<Category, State> {
    states(r, categories, missed).into_iter().collect()
}

/// The write that brings `current` to the conditions `state` asks for, if
/// any is needed. Pure.
fn condition_write(
    wanted: &Wanted,
    node: &str,
    current: &NodeMarks,
    state: &BTreeMap<Category, State>,
    now: DateTime<Utc>,
) -> Option<ConditionWrite> {
    let mut write = ConditionWrite {
        node: node.to_string(),
        ..ConditionWrite::default()
    };
    for (category, name) in &wanted.names {
        let had = current.condition(name);
        let desired = state.get(category).filter(|_| wanted.conditions);
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
                let stamp = Time(crate::status::to_timestamp(now));
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
#[path = "node_marks_tests.rs"]
mod tests;
