//! `kubectl combo status`: one row per Debugger, its last run and
//! failures. The rows are pure; [`run`] lists the Debuggers.

use anyhow::Result;
use combo_api::Debugger;
use kube::api::ListParams;
use kube::{Api, Client, ResourceExt};

use crate::cluster::api_error;
use crate::{scripts, table};

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
                serde_json::to_value(d.spec.workload_type)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
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
/// one script set.
pub async fn run(client: Client, ns: &str, all_namespaces: bool) -> Result<()> {
    let api: Api<Debugger> = if all_namespaces {
        Api::all(client)
    } else {
        Api::namespaced(client, ns)
    };
    let list = api.list(&ListParams::default()).await.map_err(|e| {
        let scope = if all_namespaces {
            "any namespace".to_string()
        } else {
            format!("namespace {ns}")
        };
        api_error(e, &format!("listing the Debuggers of {scope}"))
    })?;
    if list.items.is_empty() {
        eprintln!("no Debuggers found");
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
        let rows = status_rows(&[d]);
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
    }
}
