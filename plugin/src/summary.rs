//! `kubectl combo summary`: the table of a Debugger's summary ConfigMap,
//! NODE, RUN, CATEGORY, ITEM, ERROR, its failed items only unless `--all`,
//! a failed item's error followed by how many runs it has failed for, from
//! its node's report history ([`crate::history`]).
//! The rows and the document are pure, in [`render`]; [`run`] reads the
//! Debugger, its summary and reports.

pub mod render;

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use combo_api::{Debugger, NodeSummary};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, Client};

use crate::cli::Output;
use crate::cluster::{api_error, debugger};
use crate::history::{self, Nodes};
use crate::{output, scripts, table, truth};
pub use render::{
    run_id_of, skipped_count, summary_rows, view, ItemView, NodeView, View, SUMMARY_ALL_HEADER,
    SUMMARY_HEADER,
};

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
#[path = "summary_tests.rs"]
mod tests;
