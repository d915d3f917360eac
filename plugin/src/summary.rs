//! `kubectl combo summary`: the table of a Debugger's summary ConfigMap,
//! NODE, RUN, CATEGORY, ITEM, ERROR, its failed items only unless `--all`,
//! a failed item's error followed by how many runs it has failed for, from
//! its node's report history ([`crate::history`]).
//! The rows are pure; [`run`] reads the Debugger, its summary and reports.

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use chrono::DateTime;
use combo_api::summary::Verdict;
use combo_api::{Debugger, NodeSummary, RunId};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, Client};
use serde::Serialize;

use crate::cli::Output;
use crate::cluster::{api_error, debugger};
use crate::history::{self, Nodes};
use crate::{output, scripts, table, truth};

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
/// `config_map`), `stale` as [`truth::stale`] says: failed items only
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

/// Prints the summary of Debugger `ns/name`: its failed items, or every
/// item with `all`; on stderr first what disagrees with its status or
/// between its nodes, then the skipped items not listed. With `format`,
/// the [`View`] as one document instead of the table.
pub async fn run(
    client: Client,
    ns: &str,
    name: &str,
    all: bool,
    format: Option<Output>,
) -> Result<()> {
    let dbg = debugger(client.clone(), ns, name).await?;
    let cm_name = dbg.spec.summary_name(name);
    let data = summary_data(client.clone(), ns, &dbg).await?;
    let reports = failing_reports(&client, ns, name, &data).await;
    // At the top: a summary behind the status's run says so.
    let stale = truth::stale(&dbg, &data);
    if let Some(stale) = &stale {
        eprintln!("{stale}");
    }
    if let Some(format) = format {
        let v = view(ns, name, &cm_name, &data, stale, all, &reports);
        print!("{}", output::document(format, &v));
        return Ok(());
    }
    // Nodes of the newest run that ran different scripts say so too.
    if let Some(differ) = scripts::differ_in_summary(&data) {
        eprintln!("{differ}");
    }
    let rows = summary_rows(&data, all, &reports);
    if rows.is_empty() {
        eprintln!(
            "no {}items in ConfigMap {ns}/{cm_name}",
            if all { "" } else { "failed " }
        );
    } else {
        let header: &[&str] = if all {
            &SUMMARY_ALL_HEADER
        } else {
            &SUMMARY_HEADER
        };
        print!("{}", table(header, &rows));
    }
    let skipped = skipped_count(&data);
    if skipped > 0 && !all {
        eprintln!(
            "{skipped} item(s) skipped: not checked, the pods lack what they need (kubectl combo summary {name} -n {ns} --all lists them)"
        );
    }
    Ok(())
}

/// The reports of the nodes of `data` with a failed item, for their
/// histories: one paged list, none when no item failed. The history only
/// adds to the summary, so a list that fails (no right to read reports)
/// leaves it out.
async fn failing_reports(
    client: &Client,
    ns: &str,
    name: &str,
    data: &BTreeMap<String, String>,
) -> Nodes {
    let failing: std::collections::BTreeSet<String> = data
        .iter()
        .filter(|(_, v)| NodeSummary::from_yaml(v).is_ok_and(|s| s.failed().next().is_some()))
        .map(|(node, _)| node.clone())
        .collect();
    if failing.is_empty() {
        return Nodes::new();
    }
    match history::reports(client, ns, name, Some(&failing)).await {
        Ok(reports) => history::nodes_of(&reports),
        Err(_) => Nodes::new(),
    }
}

/// The summary ConfigMap's data of `dbg`: an error when the Debugger has no
/// result yet (no summary, or one without a node), never an empty table
/// that would read as "no failures", and when the ConfigMap of that name
/// is not the Debugger's own (another Debugger's summary, or the user's).
async fn summary_data(
    client: Client,
    ns: &str,
    dbg: &Debugger,
) -> Result<BTreeMap<String, String>> {
    let name = dbg.metadata.name.as_deref().unwrap_or_default();
    let cm_name = dbg.spec.summary_name(name);
    let cm = Api::<ConfigMap>::namespaced(client, ns)
        .get_opt(&cm_name)
        .await
        .map_err(|e| api_error(e, &format!("ConfigMap {ns}/{cm_name}")))?;
    if let Some(why) = cm.as_ref().and_then(|c| truth::not_owned(dbg, &c.metadata)) {
        bail!("Debugger {ns}/{name} has no summary to show: {why}");
    }
    let data = cm.and_then(|c| c.data).unwrap_or_default();
    if data.is_empty() {
        bail!(
            "Debugger {ns}/{name} has no result yet: its summary ConfigMap {cm_name} {}{} (see kubectl describe dbg {name} -n {ns})",
            if dbg.status.as_ref().and_then(|s| s.last_run_at.as_ref()).is_some() {
                "holds no node"
            } else {
                "has no node's run yet"
            },
            truth::not_ready(dbg)
                .map(|why| format!("; the Debugger is {why}"))
                .unwrap_or_default()
        );
    }
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data() -> BTreeMap<String, String> {
        [
            (
                "node-1".to_string(),
                "runAt: \"2026-11-22T06:00:00Z\"\ndisk:\n  sdb1: {err: \"disk full\"}\n  sdb2: {}\n"
                    .to_string(),
            ),
            (
                "node-2".to_string(),
                "runAt: \"2026-11-22T06:00:00Z\"\nnet:\n  eth0: {}\n".to_string(),
            ),
        ]
        .into()
    }

    #[test]
    fn summary_shows_failed_items_only_unless_all() {
        let failed = summary_rows(&data(), false, &Nodes::new());
        assert_eq!(
            failed,
            vec![vec![
                "node-1".to_string(),
                "20261122T060000Z".into(),
                "disk".into(),
                "sdb1".into(),
                "disk full".into()
            ]]
        );
        let all = summary_rows(&data(), true, &Nodes::new());
        assert_eq!(all.len(), 3);
        assert!(all.iter().any(|r| r[0] == "node-2" && r[5] == "-"));
    }

    #[test]
    fn all_shows_each_nodes_scripts_hash_even_without_items() {
        let data = BTreeMap::from([
            (
                "node-1".to_string(),
                "runAt: \"2026-11-22T06:00:00Z\"\nscripts: 0a1b2c3d4e5f\ndisk:\n  sdb1: {err: full}\n  sdb2: {}\n".to_string(),
            ),
            (
                "node-2".to_string(),
                "runAt: \"2026-11-22T06:00:00Z\"\nscripts: 5f4e3d2c1b0a\n".to_string(),
            ),
            (
                "node-3".to_string(),
                "runAt: \"2026-11-22T06:00:00Z\"\nnet:\n  eth0: {}\n".to_string(),
            ),
        ]);
        let all = summary_rows(&data, true, &Nodes::new());
        let shown: Vec<String> = all.iter().map(|r| r[..4].join(" ")).collect();
        assert_eq!(
            shown,
            [
                "node-1 20261122T060000Z 0a1b2c3d4e5f disk",
                "node-1 20261122T060000Z 0a1b2c3d4e5f disk",
                "node-2 20261122T060000Z 5f4e3d2c1b0a -",
                "node-3 20261122T060000Z - net",
            ]
        );
        assert_eq!(all[2][4], "(no items)");
        let out = table(&SUMMARY_ALL_HEADER, &all);
        assert!(
            out.starts_with("NODE     RUN                SCRIPTS        CATEGORY"),
            "{out}"
        );
        let failed = summary_rows(&data, false, &Nodes::new());
        assert_eq!(failed.len(), 1);
        assert_eq!(
            failed[0].len(),
            SUMMARY_HEADER.len(),
            "no SCRIPTS without --all"
        );
    }

    #[test]
    fn a_shortened_value_counts_what_it_leaves_out_and_names_the_report() {
        let data = BTreeMap::from([
            (
                "node-1".to_string(),
                "runAt: \"2026-11-22T06:00:00Z\"\nhealthyItems: 9\nfailedItems: 5\nreport: dbg.node-1\ndisk:\n  sdb1: {err: full}\n".to_string(),
            ),
            (
                "node-2".to_string(),
                "runAt: \"2026-11-22T06:00:00Z\"\nhealthyItems: 12\n".to_string(),
            ),
        ]);
        let failed = summary_rows(&data, false, &Nodes::new());
        assert_eq!(failed.len(), 2, "{failed:?}");
        assert_eq!(failed[0][3], "sdb1");
        assert_eq!(failed[1][3], "(4 more failed)");
        assert_eq!(failed[1][4], "kubectl get dbgr dbg.node-1 -o yaml");
        let all = summary_rows(&data, true, &Nodes::new());
        assert!(all
            .iter()
            .any(|r| r[0] == "node-2" && r[4] == "(12 healthy)"));
    }

    #[test]
    fn skipped_items_are_listed_with_all_and_counted_apart() {
        let data = BTreeMap::from([(
            "node-1".to_string(),
            "runAt: \"2026-11-22T06:00:00Z\"\ndisk:\n  smart: {skip: \"no smartctl in the image\"}\n  sda: {}\n"
                .to_string(),
        )]);
        assert!(
            summary_rows(&data, false, &Nodes::new()).is_empty(),
            "a skip is no failure"
        );
        let all = summary_rows(&data, true, &Nodes::new());
        assert!(
            all.iter()
                .any(|r| r[4] == "smart" && r[5] == "(skipped: no smartctl in the image)"),
            "{all:?}"
        );
        assert_eq!(skipped_count(&data), 1);
        assert_eq!(skipped_count(&self::tests::data()), 0);
    }

    #[test]
    fn the_json_view_has_the_documented_fields_and_counts_omitted_failures() {
        let mut d = data();
        d.insert(
            "node-3".into(),
            "runAt: \"2026-11-22T06:00:00Z\"\nfinishedAt: \"2026-11-22T06:00:07Z\"\nscripts: 0a1b\ndisk:\n  sda: {err: full}\n  (229 failed items omitted): {err: omitted}\n  smart: {skip: no smartctl}\n".into(),
        );
        d.insert("node-4".into(), "- not a summary".into());
        let v = view(
            "ops",
            "check",
            "check-summary",
            &d,
            None,
            false,
            &Nodes::new(),
        );
        let json = serde_json::to_value(&v).unwrap();
        let keys = |o: &serde_json::Value| {
            let mut k: Vec<String> = o.as_object().unwrap().keys().cloned().collect();
            k.sort();
            k
        };
        assert_eq!(
            keys(&json),
            ["configMap", "debugger", "namespace", "nodes", "stale"]
        );
        let node3 = &json["nodes"][2];
        assert_eq!(
            keys(node3),
            [
                "failedItems",
                "finishedAt",
                "items",
                "node",
                "report",
                "run",
                "runAt",
                "scripts",
                "skippedItems",
                "startedAt",
                "unreadable"
            ]
        );
        assert_eq!(node3["failedItems"], 230);
        assert_eq!(node3["skippedItems"], 1);
        assert_eq!(node3["run"], "20261122T060000Z");
        assert_eq!(node3["items"].as_array().unwrap().len(), 2, "failed only");
        assert_eq!(
            keys(&node3["items"][0]),
            ["category", "failingRuns", "item", "message", "state"]
        );
        assert_eq!(node3["items"][1]["item"], "sda");
        assert_eq!(node3["items"][1]["state"], "failed");
        assert_eq!(node3["items"][1]["message"], "full");
        assert!(json["nodes"][3]["unreadable"].is_string());
        assert!(json["stale"].is_null());
        let all = view(
            "ops",
            "check",
            "check-summary",
            &d,
            Some("STALE: x".into()),
            true,
            &Nodes::new(),
        );
        let states: Vec<&str> = all.nodes[2].items.iter().map(|i| i.state).collect();
        assert_eq!(states, ["failed", "failed", "skipped"]);
        assert_eq!(all.stale.as_deref(), Some("STALE: x"));
    }

    #[test]
    fn a_failed_item_failing_for_runs_says_so_after_its_error_and_in_json() {
        // node-1's disk/sdb1 failed in its last 3 runs (the summary's is
        // the last); node-2 has no history.
        let mut h = combo_api::history::History::default();
        for (at, failed) in [("03", false), ("04", true), ("05", true), ("06", true)] {
            let mut run = NodeSummary {
                run_at: format!("2026-11-22T{at}:00:00Z"),
                ..NodeSummary::default()
            };
            let r = if failed {
                combo_api::ItemResult::err("disk full")
            } else {
                combo_api::ItemResult::ok()
            };
            run.categories
                .entry("disk".into())
                .or_default()
                .insert("sdb1".into(), r);
            h = h.next(&run);
        }
        let reports = Nodes::from([(
            "node-1".to_string(),
            history::Reported {
                history: h,
                ..Default::default()
            },
        )]);
        let rows = summary_rows(&data(), false, &reports);
        assert_eq!(rows[0][4], "disk full   failing for 3 runs");
        let all = summary_rows(&data(), true, &reports);
        let healthy: Vec<&Vec<String>> = all.iter().filter(|r| r[4] == "sdb2").collect();
        assert_eq!(healthy[0][5], "-", "only a failed item's line grows");
        let v = view(
            "ops",
            "check",
            "check-summary",
            &data(),
            None,
            true,
            &reports,
        );
        let json = serde_json::to_value(&v).unwrap();
        assert_eq!(json["nodes"][0]["items"][0]["failingRuns"], 3);
        assert!(json["nodes"][0]["items"][1]["failingRuns"].is_null());
        // A summary of a run the history does not list says nothing.
        let mut stale = data();
        stale.insert(
            "node-1".into(),
            "runAt: \"2026-11-22T07:00:00Z\"\ndisk:\n  sdb1: {err: \"disk full\"}\n".into(),
        );
        assert_eq!(summary_rows(&stale, false, &reports)[0][4], "disk full");
    }

    #[test]
    fn table_aligns_columns_under_the_header() {
        let out = table(
            &SUMMARY_HEADER,
            &summary_rows(&data(), false, &Nodes::new()),
        );
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(lines[0].starts_with("NODE     RUN"), "{out}");
        assert_eq!(lines[0].find("CATEGORY"), lines[1].find("disk"));
    }
}
