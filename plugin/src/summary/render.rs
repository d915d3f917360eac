//! The pure part of `kubectl combo summary`: a summary ConfigMap's data,
//! with its nodes' report histories ([`crate::history`]), made into the
//! table's rows ([`summary_rows`]) and into the `-o json|yaml` document
//! ([`View`]). Nothing here reads the cluster; [`super::run`] does.

use std::collections::BTreeMap;

use chrono::DateTime;
use combo_api::summary::Verdict;
use combo_api::{NodeSummary, RunId};
use serde::Serialize;

use crate::history::{self, Nodes};
use crate::scripts;

/// `kubectl combo summary -o json|yaml`: the summary of one Debugger
/// (docs/reference.md, "`kubectl-combo`", field names).
#[derive(Serialize, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct View {
    /// The Debugger's namespace.
    pub namespace: String,
    /// The Debugger.
    pub debugger: String,
    /// Its summary ConfigMap.
    pub config_map: String,
    /// The `STALE: ...` line when the summary is behind the status, else null.
    pub stale: Option<String>,
    /// One entry per node key, in node order.
    pub nodes: Vec<NodeView>,
}

/// One node's value in a [`View`].
#[derive(Serialize, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct NodeView {
    /// The node (the key).
    pub node: String,
    /// The run's scheduled time (RFC 3339), as the value has it.
    pub run_at: String,
    /// Its run id (`20261122T060000Z`).
    pub run: String,
    /// When the node started the run (RFC 3339), empty when the value
    /// does not say.
    pub started_at: String,
    /// When the run finished (RFC 3339), empty when the value does not say.
    pub finished_at: String,
    /// The scripts hash, empty when the value has none.
    pub scripts: String,
    /// Failed items, those a shortened value leaves out counted.
    pub failed_items: u32,
    /// Skipped items, those a shortened value leaves out counted.
    pub skipped_items: u32,
    /// The DebuggerReport holding the whole result when the value is
    /// shortened, else null.
    pub report: Option<String>,
    /// Why the value cannot be read (not the summary format), else null.
    pub unreadable: Option<String>,
    /// Its failed items, every item with `--all`.
    pub items: Vec<ItemView>,
}

/// One item in a [`NodeView`].
#[derive(Serialize, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ItemView {
    /// `disk`, `net`, `mem`, `svc` or `custom`.
    pub category: String,
    /// The item.
    pub item: String,
    /// `failed`, `skipped` or `healthy`.
    pub state: &'static str,
    /// The err message of a failed item, the reason of a skipped one,
    /// else null.
    pub message: Option<String>,
    /// Of a failed item, its consecutive failed runs up to this one among
    /// the last 20 its node's report history lists; null for other items
    /// and when the history does not tell.
    pub failing_runs: Option<u32>,
}

/// The [`View`] of Debugger `ns/name`'s summary `data` (ConfigMap
/// `config_map`), `stale` as [`crate::truth::stale`] says: failed items only
/// unless `all`, each with its streak in the history of `reports`.
pub fn view(
    ns: &str,
    name: &str,
    config_map: &str,
    data: &BTreeMap<String, String>,
    stale: Option<String>,
    all: bool,
    reports: &Nodes,
) -> View {
    let nodes = data
        .iter()
        .map(|(node, value)| node_view(node, value, all, reports))
        .collect();
    View {
        namespace: ns.to_string(),
        debugger: name.to_string(),
        config_map: config_map.to_string(),
        stale,
        nodes,
    }
}

fn node_view(node: &str, value: &str, all: bool, reports: &Nodes) -> NodeView {
    let s = match NodeSummary::from_yaml(value) {
        Ok(s) => s,
        Err(e) => {
            return NodeView {
                node: node.to_string(),
                run_at: String::new(),
                run: String::new(),
                started_at: String::new(),
                finished_at: String::new(),
                scripts: String::new(),
                failed_items: 0,
                skipped_items: 0,
                report: None,
                unreadable: Some(e.to_string()),
                items: Vec::new(),
            }
        }
    };
    let mut items = Vec::new();
    for (category, results) in &s.categories {
        for (item, r) in results {
            let (state, message) = match r.verdict() {
                Verdict::Failed => ("failed", r.err.clone()),
                Verdict::Skipped => ("skipped", r.skip.clone()),
                Verdict::Healthy => ("healthy", None),
            };
            if all || state == "failed" {
                let failing_runs = (state == "failed")
                    .then(|| history::streak_of(reports, node, &s.run_at, category, item))
                    .flatten()
                    .map(|streak| streak.runs as u32);
                items.push(ItemView {
                    category: category.clone(),
                    item: item.clone(),
                    state,
                    message,
                    failing_runs,
                });
            }
        }
    }
    let skipped = (s.skipped().count() as u32).max(s.skipped_items.unwrap_or(0));
    NodeView {
        node: node.to_string(),
        run: run_id_of(&s.run_at),
        run_at: s.run_at.clone(),
        started_at: s.started_at.clone(),
        finished_at: s.finished_at.clone(),
        scripts: s.scripts.clone(),
        failed_items: s.failed_count() as u32,
        skipped_items: skipped,
        report: s.report.clone(),
        unreadable: None,
        items,
    }
}

/// The run id of a summary's `runAt`, or the value itself if it is not a time.
pub fn run_id_of(run_at: &str) -> String {
    DateTime::parse_from_rfc3339(run_at)
        .map(|t| RunId::at(t.to_utc()).to_string())
        .unwrap_or_else(|_| run_at.to_string())
}

/// Rows NODE, RUN, CATEGORY, ITEM, ERROR of a summary ConfigMap's data:
/// failed items only unless `all`. With `all` every row also has the
/// node's scripts hash after RUN ([`SUMMARY_ALL_HEADER`]), and a node
/// without any item gets a row `(no items)`, so each node's hash shows.
/// Values that do not parse are shown as one row with the parse error.
/// A failed item's error ends with `failing for N runs` when the node's
/// history in `reports` shows more than one.
pub fn summary_rows(
    data: &BTreeMap<String, String>,
    all: bool,
    reports: &Nodes,
) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for (node, value) in data {
        let first = rows.len();
        let parsed = NodeSummary::from_yaml(value);
        node_rows(&mut rows, node, &parsed, all, reports);
        if all {
            let scripts = parsed.as_ref().map(scripts::shown);
            let scripts = scripts.unwrap_or_else(|_| "-".into());
            if rows.len() == first {
                let run = parsed.as_ref().map(|s| run_id_of(&s.run_at));
                let run = run.unwrap_or_else(|_| "-".into());
                rows.push(vec![
                    node.clone(),
                    run,
                    "-".into(),
                    "(no items)".into(),
                    "-".into(),
                ]);
            }
            for row in &mut rows[first..] {
                row.insert(2, scripts.clone());
            }
        }
    }
    rows
}

/// The rows of one node's value, as [`summary_rows`] without the scripts.
fn node_rows(
    rows: &mut Vec<Vec<String>>,
    node: &str,
    parsed: &Result<NodeSummary, serde_yaml::Error>,
    all: bool,
    reports: &Nodes,
) {
    let summary = match parsed {
        Ok(s) => s,
        Err(e) => {
            rows.push(vec![
                node.to_string(),
                "-".into(),
                "-".into(),
                "-".into(),
                format!("unreadable summary: {e}"),
            ]);
            return;
        }
    };
    let run = run_id_of(&summary.run_at);
    for (category, items) in &summary.categories {
        for (item, result) in items {
            if result.err.is_none() && !all {
                continue;
            }
            let error = match (&result.err, result.skip_reason()) {
                (Some(e), _) => {
                    match history::failing_for(reports, node, &summary.run_at, category, item) {
                        Some(streak) => format!("{e}   {streak}"),
                        None => e.clone(),
                    }
                }
                (None, Some(why)) => format!("(skipped: {why})"),
                (None, None) => "-".into(),
            };
            rows.push(vec![
                node.to_string(),
                run.clone(),
                category.clone(),
                item.clone(),
                error,
            ]);
        }
    }
    counted_rows(rows, node, &run, summary, all);
}

/// The rows of what a node's value counts without listing: failed items
/// left out of a shortened value, and with `all` its healthy items.
fn counted_rows(
    rows: &mut Vec<Vec<String>>,
    node: &str,
    run: &str,
    summary: &NodeSummary,
    all: bool,
) {
    // A value shortened to fit a large cluster's ConfigMap counts what
    // it leaves out and names the DebuggerReport that has it all.
    let listed = summary.failed().count() as u32;
    if let Some(more) = summary
        .failed_items
        .map(|n| n.saturating_sub(listed))
        .filter(|n| *n > 0)
    {
        let whole = match &summary.report {
            Some(r) => format!("kubectl get dbgr {r} -o yaml"),
            None => "see the node's DebuggerReport".into(),
        };
        rows.push(vec![
            node.to_string(),
            run.to_string(),
            "-".into(),
            format!("({more} more failed)"),
            whole,
        ]);
    }
    if let (true, Some(n)) = (all, summary.healthy_items) {
        rows.push(vec![
            node.to_string(),
            run.to_string(),
            "-".into(),
            format!("({n} healthy)"),
            "-".into(),
        ]);
    }
}

/// Skipped items over every node of a summary: listed ones, or the count
/// of a shortened value, whichever is larger.
pub fn skipped_count(data: &BTreeMap<String, String>) -> u32 {
    data.values()
        .filter_map(|v| NodeSummary::from_yaml(v).ok())
        .map(|s| {
            let listed = s.skipped().count() as u32;
            s.skipped_items.unwrap_or(0).max(listed)
        })
        .sum()
}

/// Header of [`summary_rows`].
pub const SUMMARY_HEADER: [&str; 5] = ["NODE", "RUN", "CATEGORY", "ITEM", "ERROR"];

/// Header of [`summary_rows`] with `all`: the node's scripts hash after RUN.
pub const SUMMARY_ALL_HEADER: [&str; 6] = ["NODE", "RUN", "SCRIPTS", "CATEGORY", "ITEM", "ERROR"];
