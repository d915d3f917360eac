//! Which scripts the nodes ran: the lines `kubectl combo summary` and
//! `kubectl combo status` print when the nodes of the newest run ran
//! different script sets (docs/runner.md, "Which scripts a run used"). Pure.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use combo_api::{DebuggerStatus, NodeSummary, RunId};

/// Nodes named per script set before the rest are counted.
pub const NAMED_NODES: usize = 5;

/// What a value without a scripts hash shows (a runner that does not tell).
pub const UNKNOWN: &str = "-";

/// The scripts hash of a summary value, or [`UNKNOWN`].
pub fn shown(summary: &NodeSummary) -> String {
    if summary.scripts.is_empty() {
        UNKNOWN.to_string()
    } else {
        summary.scripts.clone()
    }
}

/// A node of a summary: its name, run, end of the run and scripts hash.
type NodeRun<'a> = (&'a str, DateTime<Utc>, Option<DateTime<Utc>>, String);

/// When the nodes of the newest run of a summary's `data` (the value that
/// finished last, as the status's `lastRunAt`) ran more than one script
/// set: `<N> script sets among <M> nodes of run <id>: <hash> on <node>,
/// ...; <hash> on ...`, the set of most nodes first, each naming its first
/// [`NAMED_NODES`] nodes and counting the others. `None` when they ran one.
pub fn differ_in_summary(data: &BTreeMap<String, String>) -> Option<String> {
    let time = |s: &str| DateTime::parse_from_rfc3339(s).ok().map(|t| t.to_utc());
    let values: Vec<NodeRun> = data
        .iter()
        .filter_map(|(node, v)| {
            let s = NodeSummary::from_yaml(v).ok()?;
            let run = time(&s.run_at)?;
            Some((
                node.as_str(),
                run,
                time(&s.finished_at).or(Some(run)),
                shown(&s),
            ))
        })
        .collect();
    let (_, last, _, _) = values.iter().max_by_key(|(_, run, fin, _)| (*fin, *run))?;
    let mut sets: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (node, _, _, hash) in values.iter().filter(|(_, run, _, _)| run == last) {
        sets.entry(hash.as_str()).or_default().push(node);
    }
    if sets.len() < 2 {
        return None;
    }
    let nodes: usize = sets.values().map(Vec::len).sum();
    let mut sets: Vec<(&str, Vec<&str>)> = sets.into_iter().collect();
    sets.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then_with(|| a.0.cmp(b.0)));
    let listed: Vec<String> = sets
        .iter()
        .map(|(hash, nodes)| {
            let mut names = nodes[..nodes.len().min(NAMED_NODES)].join(", ");
            if nodes.len() > NAMED_NODES {
                names.push_str(&format!(" and {} more", nodes.len() - NAMED_NODES));
            }
            format!("{hash} on {names}")
        })
        .collect();
    Some(format!(
        "{} script sets among {nodes} nodes of run {}: {}",
        sets.len(),
        RunId::at(*last),
        listed.join("; ")
    ))
}

/// The SCRIPTS cell of `kubectl combo status`: the one script set the
/// nodes of `lastRunAt` ran; `<hash> (<n>/<m>)` when only n of its m
/// nodes tell theirs; `<N> sets` when they ran several; `-` when no
/// report tells.
pub fn status_cell(status: &DebuggerStatus) -> String {
    match status.script_sets.as_slice() {
        [] => UNKNOWN.to_string(),
        [one] if one.nodes >= status.completed_nodes => one.scripts.clone(),
        [one] => format!("{} ({}/{})", one.scripts, one.nodes, status.completed_nodes),
        sets => format!("{} sets", sets.len()),
    }
}

/// When the nodes of `lastRunAt` ran more than one script set, the line
/// `kubectl combo status` prints for Debugger `ns/name`: `<N> script sets
/// among <M> nodes of run <id>: <hash> on <n> node(s), ...`, then the
/// nodes not in a listed set (sets past the status's five, reports without
/// a hash) counted.
pub fn differ_in_status(ns: &str, name: &str, status: &DebuggerStatus) -> Option<String> {
    let sets = &status.script_sets;
    if sets.len() < 2 {
        return None;
    }
    let listed: i32 = sets.iter().map(|s| s.nodes).sum();
    let mut parts: Vec<String> = sets
        .iter()
        .map(|s| format!("{} on {} node(s)", s.scripts, s.nodes))
        .collect();
    let rest = status.completed_nodes - listed;
    if rest > 0 {
        parts.push(format!("{rest} node(s) of other sets or without a hash"));
    }
    let run = status
        .last_run_at
        .as_deref()
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| RunId::at(t.to_utc()).to_string())
        .unwrap_or_else(|| "-".into());
    Some(format!(
        "{ns}/{name}: {}{} script sets among {} nodes of run {run}: {} (kubectl combo summary {name} -n {ns} --all shows each node's)",
        sets.len(),
        if rest > 0 { "+" } else { "" },
        status.completed_nodes,
        parts.join(", ")
    ))
}

#[cfg(test)]
#[path = "scripts_tests.rs"]
mod tests;
