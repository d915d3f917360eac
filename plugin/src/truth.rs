//! Whether the summary `kubectl combo summary` reads is the Debugger's own
//! and agrees with its status (docs/reference.md, "`kubectl-combo`"):
//! a ConfigMap another controls is never shown as this Debugger's, and a
//! summary behind the status's run says so at its top, and why. Pure.

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

/// One run as a summary or the status shows it: its scheduled time, the
/// nodes that reported it and their failed items.
type Shown = (DateTime<Utc>, i32, i32);

/// The newest run of a summary's `data` (the value that finished last, as
/// the operator picks the status's `lastRunAt`), the nodes that hold it
/// and their failed items, counted as the status counts them (an item
/// `(N failed items omitted)` for its N: [`NodeSummary::failed_count`]).
fn newest_run(data: &BTreeMap<String, String>) -> Option<Shown> {
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

/// Whether the summary, showing `shown`, is behind the status's `status`
/// run: it has no run, an earlier one, fewer of the run's nodes, or as
/// many with other counts (the summary is the one written at the slower
/// pace: docs/operator.md, "Summary writes"). A summary ahead of the
/// status (a later run, more nodes: the status's write comes next) is not.
fn behind(shown: Option<Shown>, status: Shown) -> bool {
    let Some((run, nodes, failed)) = shown else {
        return true;
    };
    let (status_run, status_nodes, status_failed) = status;
    match run.cmp(&status_run) {
        std::cmp::Ordering::Less => true,
        std::cmp::Ordering::Greater => false,
        std::cmp::Ordering::Equal => {
            nodes < status_nodes || (nodes == status_nodes && failed != status_failed)
        }
    }
}

/// Bytes of summary per second the operator writes while reports keep
/// changing it: a write lands at most `max(2 s, size ÷ 16 KiB/s)` after
/// the report it shows (docs/operator.md, "Summary writes").
pub const PACE_BYTES_PER_SECOND: usize = 16 * 1024;
/// The least time between two writes of a summary, whatever its size.
pub const PACE_WINDOW_SECONDS: usize = 2;

/// Seconds within which the operator writes a summary of `data`'s size
/// after the report it is behind on: [`PACE_WINDOW_SECONDS`], or longer
/// in proportion to its size. Pure.
pub fn pace_seconds(data: &BTreeMap<String, String>) -> usize {
    let bytes: usize = data.iter().map(|(k, v)| k.len() + v.len()).sum();
    PACE_WINDOW_SECONDS.max(bytes.div_ceil(PACE_BYTES_PER_SECOND))
}

/// Why the operator does not write `dbg`'s summary while the Debugger is
/// as it is, when it does not: the summary is named as its scripts
/// ConfigMap, which a summary would replace
/// (docs/operator.md, "Reports, summary and status"). Any other condition (`ConfigMapNotFound`,
/// `PingerNotFound`, an `InvalidSpec` of another field) leaves the writes
/// going.
pub fn held(dbg: &Debugger) -> Option<String> {
    let name = dbg.metadata.name.as_deref().unwrap_or_default();
    let spec = &dbg.spec;
    let summary = spec.summary_name(name);
    if !(spec.enable_config_map && summary == spec.config_map) {
        return None;
    }
    let condition = not_ready(dbg)
        .map(|why| format!("; the Debugger is {why}"))
        .unwrap_or_default();
    Some(format!(
        "the operator does not write it: ConfigMap {summary} is also the Debugger's scripts ConfigMap (configMap), which a summary would replace{condition}"
    ))
}

/// What a summary with `data` is behind on in `dbg`'s status, and why,
/// in words for the top of its output; `None` when it shows the status's
/// run (`lastRunAt`, `completedNodes`, `failedItems`), is ahead of it (the
/// status's write comes next), or the status has no run yet. Why: the
/// condition that holds the write ([`held`]), else the operator's pace,
/// with the time a write of this size takes to land ([`pace_seconds`]).
pub fn stale(dbg: &Debugger, data: &BTreeMap<String, String>) -> Option<String> {
    let status = dbg.status.as_ref()?;
    let last = status.last_run_at.as_deref()?;
    let status_run = DateTime::parse_from_rfc3339(last).ok()?.to_utc();
    let run_id = |t: DateTime<Utc>| combo_api::RunId::at(t).to_string();
    let shown = newest_run(data);
    let ours = (status_run, status.completed_nodes, status.failed_items);
    if !behind(shown, ours) {
        return None;
    }
    let summary = match shown {
        Some((run, nodes, failed)) => {
            format!("run {} on {nodes} node(s), {failed} failed", run_id(run))
        }
        None => "no run".to_string(),
    };
    let why = held(dbg).unwrap_or_else(|| {
        let secs = pace_seconds(data);
        format!("the operator paces its summary writes: one of this size lands within {secs} s of the report it shows; look again in {secs} s")
    });
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
