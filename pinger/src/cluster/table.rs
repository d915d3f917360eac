//! Peer pods as the API server prints them: the `Table` form of a pod list
//! or watch (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`,
//! `includeObject=None`). A row is the few cells `kubectl get pods -o wide`
//! shows, about 150 bytes, instead of the whole Pod (several KiB with its
//! managed fields), and it holds all a pinger needs to pick peers. Pure.

use std::net::IpAddr;

use serde_json::Value;

/// The `Accept` header that asks for tables.
pub const ACCEPT_TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";

/// Positions of the columns a pinger reads, from `columnDefinitions`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Columns {
    name: usize,
    ready: usize,
    status: usize,
    ip: usize,
    gates: Option<usize>,
}

impl Columns {
    /// Finds the columns by name; `None` when the server prints pods
    /// without one of Name, Ready, Status, IP.
    pub fn from_table(table: &Value) -> Option<Columns> {
        let defs = table.get("columnDefinitions")?.as_array()?;
        let find = |n: &str| {
            defs.iter()
                .position(|d| d.get("name").and_then(Value::as_str) == Some(n))
        };
        Some(Columns {
            name: find("Name")?,
            ready: find("Ready")?,
            status: find("Status")?,
            ip: find("IP")?,
            gates: find("Readiness Gates"),
        })
    }
}

/// One pod of a table: its name, and its address when it can be a peer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// Pod name.
    pub name: String,
    /// The address when the pod is Running (not Terminating), all its
    /// containers and readiness gates are ready, and it has an IP.
    pub peer_ip: Option<IpAddr>,
}

/// The rows of a table.
pub fn rows(table: &Value, cols: Columns) -> Vec<Row> {
    let Some(rows) = table.get("rows").and_then(Value::as_array) else {
        return Vec::new();
    };
    rows.iter()
        .filter_map(|r| {
            let cells = r.get("cells")?.as_array()?;
            let cell = |i: usize| cells.get(i).and_then(Value::as_str).unwrap_or("");
            let name = cell(cols.name);
            if name.is_empty() {
                return None;
            }
            let gates_ok = cols
                .gates
                .is_none_or(|g| matches!(cell(g), "" | "<none>") || all_of(cell(g)));
            let eligible = cell(cols.status) == "Running" && all_of(cell(cols.ready)) && gates_ok;
            Some(Row {
                name: name.to_string(),
                peer_ip: eligible.then(|| cell(cols.ip).parse().ok()).flatten(),
            })
        })
        .collect()
}

/// `"2/2"`: every one of a positive number is ready.
fn all_of(cell: &str) -> bool {
    match cell.split_once('/') {
        Some((a, b)) => a == b && b.parse::<u32>().is_ok_and(|n| n > 0),
        None => false,
    }
}

/// The table's `metadata.resourceVersion`, where a watch resumes.
pub fn resource_version(table: &Value) -> Option<String> {
    table
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Column definitions as kube-apiserver v1.20 prints pods (abridged).
    fn table(rows: Value) -> Value {
        json!({
            "kind": "Table",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": {"resourceVersion": "4711"},
            "columnDefinitions": [
                {"name": "Name"}, {"name": "Ready"}, {"name": "Status"},
                {"name": "Restarts"}, {"name": "Age"}, {"name": "IP"},
                {"name": "Node"}, {"name": "Nominated Node"}, {"name": "Readiness Gates"}
            ],
            "rows": rows,
        })
    }

    fn row(name: &str, ready: &str, status: &str, ip: &str, gates: &str) -> Value {
        json!({"cells": [name, ready, status, 0, "5m", ip, "node-1", "<none>", gates]})
    }

    #[test]
    fn running_pods_with_every_container_and_gate_ready_and_an_ip_are_peers() {
        let t = table(json!([
            row("ok", "2/2", "Running", "10.16.0.5", "<none>"),
            row("v6", "1/1", "Running", "fd00::5", "1/1"),
            row("half-ready", "1/2", "Running", "10.16.0.6", "<none>"),
            row("pending", "0/2", "Pending", "<none>", "<none>"),
            row("leaving", "2/2", "Terminating", "10.16.0.7", "<none>"),
            row("gated", "2/2", "Running", "10.16.0.8", "0/1"),
            row("no-ip", "2/2", "Running", "<none>", "<none>"),
            row("crash", "1/2", "CrashLoopBackOff", "10.16.0.9", "<none>"),
        ]));
        let cols = Columns::from_table(&t).unwrap();
        let got: Vec<(String, Option<String>)> = rows(&t, cols)
            .into_iter()
            .map(|r| (r.name, r.peer_ip.map(|ip| ip.to_string())))
            .collect();
        let want = [
            ("ok", Some("10.16.0.5")),
            ("v6", Some("fd00::5")),
            ("half-ready", None),
            ("pending", None),
            ("leaving", None),
            ("gated", None),
            ("no-ip", None),
            ("crash", None),
        ];
        let want: Vec<(String, Option<String>)> = want
            .iter()
            .map(|(n, ip)| (n.to_string(), ip.map(String::from)))
            .collect();
        assert_eq!(got, want);
        assert_eq!(resource_version(&t).as_deref(), Some("4711"));
    }

    #[test]
    fn a_table_without_the_needed_columns_is_refused() {
        let t = json!({"columnDefinitions": [{"name": "Name"}, {"name": "Ready"}]});
        assert_eq!(Columns::from_table(&t), None);
        assert_eq!(Columns::from_table(&json!({})), None);
    }
}
