//! Whether the summary `kubectl combo summary` reads is the Debugger's own
//! and agrees with its status (docs/reference.md, "`kubectl-combo`"):
//! a ConfigMap another controls is never shown as this Debugger's, and a
//! summary whose newest run is not the status's says so at its top. Pure.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use combo_api::{Debugger, NodeSummary};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// Why the ConfigMap with `meta` is not the summary of `dbg`: its
/// controller is another Debugger, or it has none. `None` when `dbg`
/// controls it.
pub fn not_owned(dbg: &Debugger, meta: &ObjectMeta) -> Option<String> {
    let controller = meta
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true));
    let ours = controller.is_some_and(|o| {
        o.kind == "Debugger"
            && o.api_version.split('/').next() == Some(combo_api::keys::GROUP)
            && dbg.metadata.uid.as_deref().is_none_or(|uid| uid == o.uid)
            && Some(o.name.as_str()) == dbg.metadata.name.as_deref()
    });
    if ours {
        return None;
    }
    let whose = match controller {
        Some(o) if o.kind == "Debugger" => format!("it is the summary of Debugger {:?}", o.name),
        Some(o) => format!("its controller is {} {:?}", o.kind, o.name),
        None => "no Debugger controls it".to_string(),
    };
    Some(format!(
        "ConfigMap {} is not this Debugger's summary: {whose}{}",
        meta.name.as_deref().unwrap_or_default(),
        not_ready(dbg)
            .map(|why| format!("; the Debugger is {why}"))
            .unwrap_or_default()
    ))
}

/// `Ready=False (<reason>: <message>)` when `dbg`'s Ready condition is not
/// True.
pub fn not_ready(dbg: &Debugger) -> Option<String> {
    let c = dbg
        .status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready")?;
    (c.status != "True").then(|| format!("Ready={} ({}: {})", c.status, c.reason, c.message))
}

/// The newest run of a summary's `data` (the value that finished last, as
/// the operator picks the status's `lastRunAt`), the nodes that hold it
/// and their failed items.
fn newest_run(data: &BTreeMap<String, String>) -> Option<(DateTime<Utc>, i32, i32)> {
    let time = |s: &str| DateTime::parse_from_rfc3339(s).ok().map(|t| t.to_utc());
    let runs: Vec<(DateTime<Utc>, Option<DateTime<Utc>>, i32)> = data
        .values()
        .filter_map(|v| NodeSummary::from_yaml(v).ok())
        .filter_map(|s| {
            let run = time(&s.run_at)?;
            let finished = time(&s.finished_at).or(Some(run));
            Some((run, finished, s.failed_count() as i32))
        })
        .collect();
    let (last, _, _) = runs.iter().max_by_key(|(run, fin, _)| (*fin, *run))?;
    let current = runs.iter().filter(|(run, _, _)| run == last);
    Some((
        *last,
        current.clone().count() as i32,
        current.map(|(_, _, f)| f).sum(),
    ))
}

/// What a summary with `data` disagrees with in `dbg`'s status, and why,
/// in words for the top of its output; `None` when it shows the status's
/// run (`lastRunAt`, `completedNodes`, `failedItems`) or the status has
/// no run yet.
pub fn stale(dbg: &Debugger, data: &BTreeMap<String, String>) -> Option<String> {
    let status = dbg.status.as_ref()?;
    let last = status.last_run_at.as_deref()?;
    let status_run = DateTime::parse_from_rfc3339(last).ok()?.to_utc();
    let run_id = |t: DateTime<Utc>| combo_api::RunId::at(t).to_string();
    let shown = newest_run(data);
    if shown == Some((status_run, status.completed_nodes, status.failed_items)) {
        return None;
    }
    let summary = match shown {
        Some((run, nodes, failed)) => {
            format!("run {} on {nodes} node(s), {failed} failed", run_id(run))
        }
        None => "no run".to_string(),
    };
    let why = match not_ready(dbg) {
        Some(why) => format!("the Debugger is {why}"),
        None => "the operator paces its summary and status writes (a large summary waits longer); look again in a moment".to_string(),
    };
    Some(format!(
        "STALE: this summary shows {summary}; the Debugger's status has run {} on {} node(s), {} failed ({why})",
        run_id(status_run),
        status.completed_nodes,
        status.failed_items
    ))
}

#[cfg(test)]
#[path = "truth_tests.rs"]
mod tests;
