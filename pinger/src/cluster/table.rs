//! Peer pods as the API server prints them: the `Table` form of a pod list
//! or watch (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`). A
//! row is the few cells `kubectl get pods -o wide` shows, under 200 bytes,
//! instead of the whole Pod (about 11 KiB with its managed fields), and it
//! holds all a single-stack pinger needs to pick peers. Its IP cell is the
//! pod's first address only, so a dual-stack pinger has the whole Pod
//! included in each row for `status.podIPs` ([`Include`]). Pure.

use std::net::IpAddr;

use combo_api::peers;
use serde_json::Value;

use super::peers::Me;

/// The `Accept` header that asks for tables.
pub const ACCEPT_TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";

/// What each row carries besides its cells (`includeObject`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Include {
    /// The cells alone (`None`): one address per pod, its IP cell.
    None,
    /// The whole Pod too (`Object`): every address of its `status.podIPs`.
    Object,
}

impl Include {
    /// What the pinger of pod `me` asks for: whole Pods only when the pod
    /// is dual-stack itself, as its peers are then too; a single-stack
    /// cluster pays nothing for them (docs/pinger.md, "Peer discovery").
    pub fn for_pod(me: &Me) -> Include {
        if me.dual_stack() {
            Include::Object
        } else {
            Include::None
        }
    }

    /// The value of the `includeObject` parameter.
    pub fn param(self) -> &'static str {
        match self {
            Include::None => "None",
            Include::Object => "Object",
        }
    }
}

/// Positions of the columns a pinger reads, from `columnDefinitions`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Columns {
    name: usize,
    ready: usize,
    status: usize,
    ip: usize,
    node: Option<usize>,
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
            node: find("Node"),
            gates: find("Readiness Gates"),
        })
    }
}

/// One pod of a table: its name, and its addresses when it can be a peer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// Pod name.
    pub name: String,
    /// The addresses when the pod is Running (not Terminating), all its
    /// containers and readiness gates are ready, and it has an IP; else
    /// none.
    pub peer_ips: Vec<IpAddr>,
    /// The node it runs on ("" while unscheduled, or without the column).
    pub node: String,
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
            let node = cols.node.map(cell).filter(|n| *n != "<none>");
            Some(Row {
                name: name.to_string(),
                node: node.unwrap_or_default().to_string(),
                peer_ips: if eligible {
                    addresses(r, cell(cols.ip))
                } else {
                    Vec::new()
                },
            })
        })
        .collect()
}

/// The addresses of `row`: those of its included Pod's `status.podIPs`
/// or, without an included Pod or an address there, its IP cell `ip`.
fn addresses(row: &Value, ip: &str) -> Vec<IpAddr> {
    let listed = row
        .pointer("/object/status/podIPs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| p.get("ip")?.as_str());
    peers::pod_addresses(listed, Some(ip))
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
        assert_peers(&t, &want);
        assert_eq!(resource_version(&t).as_deref(), Some("4711"));
    }

    /// Each row's name and its peer addresses joined by commas (None when
    /// it is no peer) are `want`.
    fn assert_peers(t: &Value, want: &[(&str, Option<&str>)]) {
        let cols = Columns::from_table(t).unwrap();
        let got: Vec<(String, Option<String>)> = rows(t, cols)
            .into_iter()
            .map(|r| (r.name, joined(&r.peer_ips)))
            .collect();
        let want: Vec<(String, Option<String>)> = want
            .iter()
            .map(|(n, ip)| (n.to_string(), ip.map(String::from)))
            .collect();
        assert_eq!(got, want);
    }

    /// The addresses of a row joined by commas; None for none.
    fn joined(ips: &[IpAddr]) -> Option<String> {
        let all: Vec<String> = ips.iter().map(IpAddr::to_string).collect();
        (!all.is_empty()).then(|| all.join(","))
    }

    /// A row of a ready pod whose IP cell is `ip`, with `object` included.
    fn with_object(name: &str, ip: &str, ready: &str, object: Value) -> Value {
        let mut r = row(name, ready, "Running", ip, "<none>");
        r["object"] = object;
        r
    }

    #[test]
    fn rows_with_their_pods_included_give_every_address_of_status_pod_ips() {
        let pod_ips =
            |ips: Value| json!({"kind": "Pod", "status": {"podIP": "10.16.0.5", "podIPs": ips}});
        let t = table(json!([
            with_object(
                "dual",
                "10.16.0.5",
                "1/1",
                pod_ips(json!([{"ip": "10.16.0.5"}, {"ip": "fd00::5"}]))
            ),
            with_object(
                "v6-first",
                "fd00::6",
                "1/1",
                pod_ips(json!([{"ip": "fd00::6"}, {"ip": "10.16.0.6"}]))
            ),
            with_object(
                "no-list",
                "10.16.0.7",
                "1/1",
                json!({"kind": "Pod", "status": {}})
            ),
            with_object(
                "bad-list",
                "10.16.0.8",
                "1/1",
                pod_ips(json!([{"ip": "x"}, {"ip": 5}, "fd00::8"]))
            ),
            with_object("null", "10.16.0.9", "1/1", Value::Null),
            with_object(
                "not-ready",
                "10.16.0.10",
                "0/1",
                pod_ips(json!([{"ip": "10.16.0.10"}, {"ip": "fd00::a"}]))
            ),
            row("cells-only", "1/1", "Running", "10.16.0.11", "<none>"),
        ]));
        let want = [
            ("dual", Some("10.16.0.5,fd00::5")),
            ("v6-first", Some("fd00::6,10.16.0.6")),
            ("no-list", Some("10.16.0.7")),
            ("bad-list", Some("10.16.0.8")),
            ("null", Some("10.16.0.9")),
            ("not-ready", None),
            ("cells-only", Some("10.16.0.11")),
        ];
        assert_peers(&t, &want);
    }

    #[test]
    fn only_a_dual_stack_pod_asks_for_whole_pods() {
        let ask = |ips: &str| Include::for_pod(&Me::new("p", Some(ips), None)).param();
        assert_eq!(ask("10.0.0.1,fd00::1"), "Object");
        assert_eq!(ask("10.0.0.1"), "None");
        assert_eq!(ask("fd00::1"), "None");
        assert_eq!(ask(""), "None");
    }

    #[test]
    fn a_table_without_the_needed_columns_is_refused() {
        let t = json!({"columnDefinitions": [{"name": "Name"}, {"name": "Ready"}]});
        assert_eq!(Columns::from_table(&t), None);
        assert_eq!(Columns::from_table(&json!({})), None);
    }
}
