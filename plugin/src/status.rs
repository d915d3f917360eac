//! `kubectl combo status`: one row per Debugger, its last run and
//! failures. The rows are pure; [`run`] lists the Debuggers.

use anyhow::Result;
use combo_api::{Debugger, ScriptSet};
use kube::api::ListParams;
use kube::{Api, Client, ResourceExt};
use serde::Serialize;

use crate::cli::Output;
use crate::cluster::{api_error, namespace_missing};
use crate::errors::NotFound;
use crate::{output, scripts, table};

/// `kubectl combo status -o json|yaml`: the Debuggers listed
/// (docs/reference.md, "`kubectl-combo`", field names).
#[derive(Serialize, Debug, PartialEq)]
pub struct View {
    /// One entry per Debugger, by namespace and name.
    pub debuggers: Vec<DebuggerView>,
}

/// One Debugger in a [`View`]: its status's fields.
#[derive(Serialize, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DebuggerView {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// `daemonset` or `pod`.
    pub workload_type: String,
    /// Pods Ready.
    pub ready_pods: i32,
    /// Pods the workload should have.
    pub desired_pods: i32,
    /// The newest run (RFC 3339), else null.
    pub last_run_at: Option<String>,
    /// The next scheduled run (RFC 3339), else null.
    pub next_run_at: Option<String>,
    /// Nodes that reported the newest run.
    pub completed_nodes: i32,
    /// Failed items of the newest run over all nodes.
    pub failed_items: i32,
    /// Skipped items of the newest run over all nodes.
    pub skipped_items: i32,
    /// The script sets of the newest run, the set of most nodes first.
    pub script_sets: Vec<ScriptSet>,
    /// The Ready condition, else null.
    pub ready: Option<ReadyView>,
}

/// The Ready condition in a [`DebuggerView`].
#[derive(Serialize, Debug, PartialEq, Eq)]
pub struct ReadyView {
    /// `True` or `False`.
    pub status: String,
    /// Its reason (`WorkloadReady`, `InvalidSpec`, ...).
    pub reason: String,
    /// Its message.
    pub message: String,
}

/// The [`View`] of `debuggers`, sorted by namespace and name.
pub fn view(debuggers: &[Debugger]) -> View {
    let mut debuggers: Vec<DebuggerView> = debuggers
        .iter()
        .map(|d| {
            let s = d.status.clone().unwrap_or_default();
            let ready = s
                .conditions
                .iter()
                .find(|c| c.type_ == "Ready")
                .map(|c| ReadyView {
                    status: c.status.clone(),
                    reason: c.reason.clone(),
                    message: c.message.clone(),
                });
            DebuggerView {
                namespace: d.namespace().unwrap_or_default(),
                name: d.name_any(),
                workload_type: workload_type(d),
                ready_pods: s.ready_pods,
                desired_pods: s.desired_pods,
                last_run_at: s.last_run_at,
                next_run_at: s.next_run_at,
                completed_nodes: s.completed_nodes,
                failed_items: s.failed_items,
                skipped_items: s.skipped_items,
                script_sets: s.script_sets,
                ready,
            }
        })
        .collect();
    debuggers.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    View { debuggers }
}

/// `daemonset` or `pod`, as the spec spells it.
fn workload_type(d: &Debugger) -> String {
    serde_json::to_value(d.spec.workload_type)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// Header of [`status_rows`].
pub const STATUS_HEADER: [&str; 11] = [
    "NAMESPACE",
    "NAME",
    "TYPE",
    "READY",
    "LAST-RUN",
    "NEXT-RUN",
    "COMPLETED",
    "FAILED",
    "SKIPPED",
    "SCRIPTS",
    "CONDITION",
];

/// One row per Debugger: its last run and failures.
pub fn status_rows(debuggers: &[Debugger]) -> Vec<Vec<String>> {
    let mut rows: Vec<Vec<String>> = debuggers
        .iter()
        .map(|d| {
            let s = d.status.clone().unwrap_or_default();
            let scripts = scripts::status_cell(&s);
            let condition = s
                .conditions
                .iter()
                .find(|c| c.type_ == "Ready")
                .map(|c| format!("Ready={} ({})", c.status, c.reason))
                .unwrap_or_else(|| "-".into());
            vec![
                d.namespace().unwrap_or_default(),
                d.name_any(),
                workload_type(d),
                format!("{}/{}", s.ready_pods, s.desired_pods),
                s.last_run_at.unwrap_or_else(|| "-".into()),
                s.next_run_at.unwrap_or_else(|| "-".into()),
                s.completed_nodes.to_string(),
                s.failed_items.to_string(),
                s.skipped_items.to_string(),
                scripts,
                condition,
            ]
        })
        .collect();
    rows.sort();
    rows
}

/// Lists the Debuggers of namespace `ns`, or of every namespace, with
/// their last run and failures; on stderr, those whose nodes ran more than
/// one script set. With `format`, the [`View`] as one document instead.
/// A namespace that does not exist is [`NotFound`].
pub async fn run(
    client: Client,
    ns: &str,
    all_namespaces: bool,
    format: Option<Output>,
) -> Result<()> {
    let api: Api<Debugger> = if all_namespaces {
        Api::all(client.clone())
    } else {
        Api::namespaced(client.clone(), ns)
    };
    let list = api.list(&ListParams::default()).await.map_err(|e| {
        let scope = if all_namespaces {
            "any namespace".to_string()
        } else {
            format!("namespace {ns}")
        };
        api_error(e, &format!("listing the Debuggers of {scope}"))
    })?;
    if list.items.is_empty() && !all_namespaces && namespace_missing(&client, ns).await {
        return Err(NotFound::namespace(ns).into());
    }
    if let Some(format) = format {
        print!("{}", output::document(format, &view(&list.items)));
        return Ok(());
    }
    if list.items.is_empty() {
        let scope = if all_namespaces {
            String::new()
        } else {
            format!(" in namespace {ns}")
        };
        eprintln!("no Debuggers found{scope}");
        return Ok(());
    }
    print!("{}", table(&STATUS_HEADER, &status_rows(&list.items)));
    for d in &list.items {
        let ns = d.metadata.namespace.as_deref().unwrap_or_default();
        let name = d.metadata.name.as_deref().unwrap_or_default();
        let differ = d
            .status
            .as_ref()
            .and_then(|s| scripts::differ_in_status(ns, name, s));
        if let Some(line) = differ {
            eprintln!("{line}");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use combo_api::{DebuggerSpec, DebuggerStatus};

    #[test]
    fn status_lists_each_debugger_with_its_last_run_and_failures() {
        let mut d = Debugger::new("node-check", DebuggerSpec::default());
        d.metadata.namespace = Some("ops".into());
        d.status = Some(DebuggerStatus {
            desired_pods: 3,
            ready_pods: 2,
            last_run_at: Some("2026-11-22T06:00:00Z".into()),
            failed_items: 4,
            completed_nodes: 3,
            ..DebuggerStatus::default()
        });
        let rows = status_rows(std::slice::from_ref(&d));
        assert_eq!(rows[0].len(), STATUS_HEADER.len());
        assert_eq!(rows[0][9], "-", "no report told its scripts");
        assert_eq!(
            rows[0][..8],
            [
                "ops",
                "node-check",
                "daemonset",
                "2/3",
                "2026-11-22T06:00:00Z",
                "-",
                "3",
                "4"
            ]
        );
        let json = serde_json::to_value(view(&[d])).unwrap();
        let entry = &json["debuggers"][0];
        let mut keys: Vec<&String> = entry.as_object().unwrap().keys().collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "completedNodes",
                "desiredPods",
                "failedItems",
                "lastRunAt",
                "name",
                "namespace",
                "nextRunAt",
                "ready",
                "readyPods",
                "scriptSets",
                "skippedItems",
                "workloadType"
            ]
        );
        assert_eq!(entry["failedItems"], 4);
        assert_eq!(entry["workloadType"], "daemonset");
        assert!(entry["nextRunAt"].is_null() && entry["ready"].is_null());
    }
}
