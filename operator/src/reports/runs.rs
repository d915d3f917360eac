//! Runs: what the newest run of a Debugger looks like across its nodes
//! (the status's run fields, its script sets) and which nodes' reports
//! to drop at a new run. Pure.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use combo_api::debugger::MAX_SCRIPT_SETS;
use combo_api::{RunId, ScriptSet};

use crate::core::status::RunSummary;
use crate::reports::aggregate::NodeReport;

/// The status's run fields from the reports: the newest `runAt`, the nodes
/// that reported it and their failed items.
pub fn run_summary<'a>(reports: impl IntoIterator<Item = &'a NodeReport>) -> RunSummary {
    let runs: Vec<(DateTime<Utc>, &NodeReport)> = reports
        .into_iter()
        .filter_map(|r| Some((r.run_at()?, r)))
        .collect();
    // The newest run is the one that ran last, not the latest scheduled
    // time: a timestamp in the past set after a cron run is the newer run.
    let Some(last) = runs
        .iter()
        .max_by_key(|(t, r)| (r.finished_at(), *t))
        .map(|(t, _)| *t)
    else {
        return RunSummary::default();
    };
    let current = runs.iter().filter(|(t, _)| *t == last);
    RunSummary {
        last_run_at: Some(last.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
        completed_nodes: current.clone().count() as i32,
        failed_items: current
            .clone()
            .map(|(_, r)| r.spec.failed_items as i32)
            .sum(),
        skipped_items: current
            .clone()
            .map(|(_, r)| r.spec.skipped_items as i32)
            .sum(),
        script_sets: script_sets(current.map(|(_, r)| r.spec.scripts.as_str())),
    }
}

/// The script sets of one run's reports (their scripts hashes): the set of
/// most nodes first (ties by hash), at most [`MAX_SCRIPT_SETS`]; reports
/// without a hash are not counted.
pub fn script_sets<'a>(hashes: impl IntoIterator<Item = &'a str>) -> Vec<ScriptSet> {
    let mut nodes: BTreeMap<&str, i32> = BTreeMap::new();
    for h in hashes.into_iter().filter(|h| !h.is_empty()) {
        *nodes.entry(h).or_default() += 1;
    }
    let mut sets: Vec<ScriptSet> = nodes
        .into_iter()
        .map(|(scripts, nodes)| ScriptSet {
            scripts: scripts.to_string(),
            nodes,
        })
        .collect();
    sets.sort_by(|a, b| {
        b.nodes
            .cmp(&a.nodes)
            .then_with(|| a.scripts.cmp(&b.scripts))
    });
    sets.truncate(MAX_SCRIPT_SETS);
    sets
}

/// Reports whose node ran the run-now request `value` (the annotation as
/// written) last: its time compared, not its spelling. Pure.
pub fn served<'a>(reports: impl IntoIterator<Item = &'a NodeReport>, value: &str) -> i32 {
    let Ok(asked) = combo_api::runat::parse_run_now(value) else {
        return 0;
    };
    reports
        .into_iter()
        .filter(|r| r.run_now().and_then(RunId::from_rfc3339) == Some(asked))
        .count() as i32
}

/// Reports to delete at a new run: those of nodes that run no pod of the
/// Debugger any more and did not report the newest run (whether that run
/// was scheduled earlier or later than theirs). Pure.
pub fn departed<'a>(
    reports: impl IntoIterator<Item = &'a NodeReport>,
    last_run_at: &str,
    nodes_with_pods: &BTreeSet<String>,
) -> Vec<String> {
    let Ok(last) = DateTime::parse_from_rfc3339(last_run_at) else {
        return Vec::new();
    };
    reports
        .into_iter()
        .filter(|r| !nodes_with_pods.contains(&r.spec.node))
        .filter(|r| r.run_at() != Some(last.to_utc()))
        .map(|r| r.name.clone())
        .collect()
}
