//! Taints: which failing nodes a Debugger taints, never more than
//! `maxTaintedPercent` of its nodes at once. Pure
//! (docs/operator.md#taints-and-their-limit).

use std::collections::{BTreeMap, BTreeSet};

use combo_api::Category;

use crate::core::node_marks::{NodeMarks, Wanted};
use crate::marks::debounce::Mark;

/// The taint keys to add to one node and those to remove.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaintWrite {
    /// The node.
    pub node: String,
    /// Keys to add (effect [`EFFECT`](crate::workload::tolerations::EFFECT), empty value).
    pub add: Vec<String>,
    /// Keys to remove.
    pub remove: Vec<String>,
}

/// How a Debugger's taints stand against its limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limit {
    /// Nodes failing a tainting category.
    pub failing: usize,
    /// Nodes with a taint of the Debugger after the plan.
    pub tainted: usize,
    /// Failing nodes left without a taint they should have: the limit
    /// was reached.
    pub left_out: usize,
    /// Most nodes that may be tainted at once.
    pub limit: usize,
    /// The Debugger's nodes.
    pub nodes: usize,
    /// `maxTaintedPercent`.
    pub percent: u32,
}

impl Limit {
    /// Whether failing nodes were left untainted.
    pub fn reached(&self) -> bool {
        self.left_out > 0
    }
}

/// Most of `nodes` that may be tainted at once: `percent` of them, rounded
/// down, so that the limit is never exceeded. Pure.
pub fn limit(percent: u32, nodes: usize) -> usize {
    nodes.saturating_mul(percent.min(100) as usize) / 100
}

/// The taint writes for `states` (node -> category -> debounced mark;
/// every node with a report or a mark of the Debugger), given what `nodes`
/// carry, and the limit's standing. A category taints while it is failing
/// ([`Mark::failing`]: recovering too). New taints go to failing nodes in
/// name order; a limit lower than the taints in place removes those of
/// the last nodes by name. A node `Unknown` keeps its taints and gets no
/// new one. Pure.
pub fn within_limit(
    wanted: &Wanted,
    states: &BTreeMap<String, BTreeMap<Category, Mark>>,
    nodes: &BTreeMap<String, NodeMarks>,
    node_count: usize,
) -> (Vec<TaintWrite>, Option<Limit>) {
    if !wanted.taints_writable {
        return (Vec::new(), None);
    }
    let none = NodeMarks::default();
    let current = |node: &str| nodes.get(node).unwrap_or(&none);
    let is_failing = |s: Option<&Mark>| s.is_some_and(Mark::failing);
    // Taints that stay: a listed category still failing, or unknown.
    let mut keep: BTreeMap<&str, BTreeSet<Category>> = BTreeMap::new();
    for (node, st) in states {
        for c in &wanted.taints {
            let holds = is_failing(st.get(c)) || matches!(st.get(c), Some(Mark::Unknown { .. }));
            if holds && current(node).tainted(wanted.name(*c)) {
                keep.entry(node).or_default().insert(*c);
            }
        }
    }
    let most = limit(wanted.max_tainted_percent, node_count);
    while keep.len() > most {
        keep.pop_last();
    }
    let (mut failing, mut left_out) = (BTreeSet::new(), BTreeSet::new());
    for (node, st) in states {
        for c in wanted.taints.iter().filter(|c| is_failing(st.get(c))) {
            failing.insert(node.as_str());
            let room = keep.contains_key(node.as_str()) || keep.len() < most;
            if room {
                keep.entry(node).or_default().insert(*c);
            } else {
                left_out.insert(node.as_str());
            }
        }
    }
    let writes = states
        .keys()
        .filter_map(|node| {
            let kept = keep.get(node.as_str());
            let mut w = TaintWrite {
                node: node.clone(),
                ..TaintWrite::default()
            };
            for (c, name) in &wanted.names {
                let want = kept.is_some_and(|k| k.contains(c));
                match (want, current(node).tainted(name)) {
                    (true, false) => w.add.push(name.clone()),
                    (false, true) => w.remove.push(name.clone()),
                    _ => {}
                }
            }
            (!w.add.is_empty() || !w.remove.is_empty()).then_some(w)
        })
        .collect();
    let standing = (!wanted.taints.is_empty()).then_some(Limit {
        failing: failing.len(),
        tainted: keep.len(),
        left_out: left_out.len(),
        limit: most,
        nodes: node_count,
        percent: wanted.max_tainted_percent,
    });
    (writes, standing)
}
