//! What one event of the pinger's own peer watch (`maxPeers` 0 or above
//! 1,000) costs, without a cluster: the table watch event of one pod as
//! the API server sends it, for a single-stack pinger (cells only,
//! `includeObject=None`) and a dual-stack one (the whole Pod in the row,
//! `includeObject=Object`), their ratio, a list page of each, and one
//! update of every pod at 5,000 nodes. The Pod is the operator's own pod
//! template completed as a cluster stores it (support/pod.rs). Prints;
//! `cargo bench -p combo-operator --bench peer_watch`
//! (docs/benchmarks.md, "Peer watch event size, single and dual stack").

#[path = "support/pod.rs"]
mod pod;

use k8s_openapi::api::core::v1::Pod;
use serde_json::{json, Value};

const NODES: usize = 5000;

/// The cells `kubectl get pods -o wide` shows, as the API server prints
/// them: Name, Ready, Status, Restarts, Age, IP, Node, Nominated Node,
/// Readiness Gates.
fn cells(pod: &Value) -> Value {
    let ready = pod["status"]["containerStatuses"]
        .as_array()
        .map_or(0, Vec::len);
    json!([
        pod["metadata"]["name"],
        format!("{ready}/{ready}"),
        "Running",
        0,
        "13d",
        pod["status"]["podIP"],
        pod["spec"]["nodeName"],
        "<none>",
        "<none>"
    ])
}

/// A table of `pods` with or without (`object`) the whole Pod in each row;
/// `columns` as the first watch event and a list carry them (their
/// descriptions left empty).
fn table(pods: &[Value], object: bool, columns: bool) -> Value {
    let rows: Vec<Value> = pods
        .iter()
        .map(|p| json!({"cells": cells(p), "object": if object { p.clone() } else { Value::Null }}))
        .collect();
    let defs: Vec<Value> = [
        "Name",
        "Ready",
        "Status",
        "Restarts",
        "Age",
        "IP",
        "Node",
        "Nominated Node",
        "Readiness Gates",
    ]
    .iter()
    .map(|n| {
        let format = if *n == "Name" { "name" } else { "" };
        json!({"name": n, "type": "string", "format": format, "description": "", "priority": 0})
    })
    .collect();
    json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": "48213977"},
        "columnDefinitions": if columns { json!(defs) } else { Value::Null },
        "rows": rows})
}

/// The bytes of `v` as the API server writes it: compact JSON with `<`,
/// `>` and `&` escaped (Go's encoder), so `<none>` is 16 bytes.
fn wire(v: &Value) -> usize {
    let s = serde_json::to_string(v).expect("serialises");
    s.len() + 5 * s.matches(['<', '>', '&']).count()
}

/// One MODIFIED event of the table watch for `pod`, with its newline.
fn event(pod: &Value, object: bool) -> usize {
    wire(&json!({"type": "MODIFIED", "object": table(std::slice::from_ref(pod), object, false)}))
        + 1
}

/// The Pod, read back as a typed Pod, is the same object (no misspelt
/// field; Go writes its zero times as null, the typed Pod leaves them
/// out), and has `ips` addresses.
fn check(pod: &Value, ips: usize) {
    let typed: Pod = serde_json::from_value(pod.clone()).expect("a Pod");
    let listed = typed.status.as_ref().and_then(|s| s.pod_ips.as_ref());
    assert_eq!(listed.map_or(0, Vec::len), ips);
    let back = serde_json::to_value(&typed).expect("serialises");
    assert!(back == without_nulls(pod), "a field a Pod does not have");
}

fn without_nulls(v: &Value) -> Value {
    match v {
        Value::Object(m) => m
            .iter()
            .filter(|(_, x)| !x.is_null())
            .map(|(k, x)| (k.clone(), without_nulls(x)))
            .collect::<serde_json::Map<_, _>>()
            .into(),
        Value::Array(a) => a.iter().map(without_nulls).collect(),
        _ => v.clone(),
    }
}

fn main() {
    let template = pod::template();
    let single: Vec<Value> = (0..500)
        .map(|i| pod::pod(&template, i, &["10.244.17.23"]))
        .collect();
    let dual: Vec<Value> = (0..500)
        .map(|i| pod::pod(&template, i, &["10.244.17.23", "fd00:10:244:11::17"]))
        .collect();
    check(&single[1], 1);
    check(&dual[1], 2);
    let whole = wire(&dual[1]);
    let managed = wire(&dual[1]["metadata"]["managedFields"]);
    println!(
        "the pod: {} containers; as stored, dual-stack: {whole} B, of it managed fields {managed} B",
        dual[1]["spec"]["containers"].as_array().map_or(0, Vec::len)
    );
    let none = event(&single[1], false);
    let object = event(&dual[1], true);
    println!("watch event, single-stack, includeObject=None (cells only): {none} B");
    println!("watch event, dual-stack, includeObject=Object (cells and the whole Pod): {object} B");
    println!("ratio: {:.1}x (Object / None)", object as f64 / none as f64);
    let page_none = wire(&table(&single, false, true));
    let page_object = wire(&table(&dual[..100], true, true));
    println!(
        "list page: 500 rows None {:.0} kB; 100 rows Object {:.0} kB",
        page_none as f64 / 1e3,
        page_object as f64 / 1e3
    );
    // Each update of any pod reaches every pinger that follows the pods.
    let all = (NODES * NODES) as f64;
    println!(
        "one update of every pod at {NODES} nodes, all pingers: {:.1} GB None, {:.1} GB Object",
        all * none as f64 / 1e9,
        all * object as f64 / 1e9
    );
}
