//! Node marks at 5,000 nodes, without a cluster: the node writes the
//! planner asks for in a run where nothing changed and in one where 50
//! nodes start failing, the time a plan takes, what the node watch keeps
//! per node, and what one Node update costs it to read and strip. Prints;
//! `cargo bench -p combo-operator --bench node_marks`
//! (docs/benchmarks.md#node-marks-at-5000-nodes).

#[path = "support/fixture.rs"]
mod fixture;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use chrono::Utc;
use combo_api::{Category, Debugger};
use combo_operator::core::node_marks::{NodeMarks, Wanted};
use combo_operator::marks::plan::{for_nodes, Inputs, MarksPlan};
use combo_operator::reports::store::NodeReports;
use combo_testkit::fixtures;
use k8s_openapi::api::core::v1::{Node, Taint};
use serde_json::json;

const NODES: usize = 5000;

fn debugger() -> Debugger {
    fixtures::debugger("ops", "node-check")
        .node_conditions(true)
        .taints(&[Category::Disk])
        .build()
}

/// The default scripts' 34 items over four categories, `/var` failing on
/// the nodes `failing` picks.
fn reports(failing: impl Fn(usize) -> bool) -> NodeReports {
    let categories = [("disk", 8), ("net", 11), ("mem", 6), ("svc", 9)];
    fixture::reports(NODES, &categories, |i, cat| {
        (cat == "disk" && failing(i)).then_some("/var")
    })
}

fn land(nodes: &mut BTreeMap<String, NodeMarks>, p: &MarksPlan) {
    for w in &p.conditions {
        let m = nodes.entry(w.node.clone()).or_default();
        m.conditions
            .retain(|c| !w.remove.contains(&c.type_) && !w.set.iter().any(|s| s.type_ == c.type_));
        m.conditions.extend(w.set.iter().cloned());
    }
    for w in &p.taints {
        let m = nodes.entry(w.node.clone()).or_default();
        m.taints.retain(|t| !w.remove.contains(&t.key));
        m.taints.extend(w.add.iter().map(|k| Taint {
            key: k.clone(),
            effect: "NoSchedule".into(),
            ..Taint::default()
        }));
    }
}

fn timed(
    wanted: &Wanted,
    reports: &NodeReports,
    nodes: &BTreeMap<String, NodeMarks>,
) -> (MarksPlan, f64) {
    let none = BTreeSet::new();
    let inputs = Inputs {
        wanted,
        reports,
        missed: &none,
        nodes,
        node_count: NODES,
        now: Utc::now(),
    };
    let rounds = 20;
    let start = Instant::now();
    let mut p = for_nodes(&inputs);
    for _ in 1..rounds {
        p = for_nodes(&inputs);
    }
    (p, start.elapsed().as_secs_f64() * 1000.0 / rounds as f64)
}

/// A Node as a kubelet of a busy cluster reports it: labels, annotations,
/// managedFields of three writers, five conditions, 40 images.
fn node_json() -> serde_json::Value {
    let images: Vec<_> = (0..40)
        .map(|i| {
            json!({
                "names": [format!("registry.example.com/team-{i}/service@sha256:{:064x}", i),
                          format!("registry.example.com/team-{i}/service:v1.{i}.0")],
                "sizeBytes": 123_456_789 + i,
            })
        })
        .collect();
    let conditions: Vec<_> = ["MemoryPressure", "DiskPressure", "PIDPressure", "Ready", "NetworkUnavailable"]
        .iter()
        .map(|t| json!({"type": t, "status": "False", "reason": format!("Kubelet{t}"),
            "message": "kubelet has sufficient memory available",
            "lastHeartbeatTime": "2026-01-01T06:00:00Z", "lastTransitionTime": "2025-12-01T00:00:00Z"}))
        .collect();
    let managed: Vec<_> = ["kubelet", "kube-controller-manager", "kubeadm"]
        .iter()
        .map(|m| json!({"manager": m, "operation": "Update", "apiVersion": "v1",
            "time": "2026-01-01T06:00:00Z", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:status": {"f:conditions": {"k:{\"type\":\"Ready\"}": {".": {}, "f:lastHeartbeatTime": {}, "f:message": {}}},
                          "f:images": {}, "f:nodeInfo": {"f:kubeletVersion": {}}}}}))
        .collect();
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {
            "name": "worker-00001.example.internal", "uid": "0b7c5c55-1a4e-4f6e-9d2c-3f1c2a7e9f10",
            "resourceVersion": "123456789", "creationTimestamp": "2025-12-01T00:00:00Z",
            "labels": {"kubernetes.io/hostname": "worker-00001", "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64", "node.kubernetes.io/instance-type": "m5.2xlarge",
                "topology.kubernetes.io/zone": "eu-west-1a", "topology.kubernetes.io/region": "eu-west-1"},
            "annotations": {"node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
                "kubeadm.alpha.kubernetes.io/cri-socket": "unix:///run/containerd/containerd.sock"},
            "managedFields": managed,
        },
        "spec": {"podCIDR": "10.244.1.0/24", "podCIDRs": ["10.244.1.0/24"], "providerID": "aws:///eu-west-1a/i-0123456789abcdef0"},
        "status": {
            "capacity": {"cpu": "8", "memory": "32408836Ki", "pods": "110", "ephemeral-storage": "101445540Ki"},
            "allocatable": {"cpu": "8", "memory": "32306436Ki", "pods": "110", "ephemeral-storage": "93492209510"},
            "conditions": conditions,
            "addresses": [{"type": "InternalIP", "address": "10.0.1.17"}, {"type": "Hostname", "address": "worker-00001"}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {"machineID": "ec2a", "systemUUID": "ec2a", "bootID": "b0", "kernelVersion": "6.1.0",
                "osImage": "Debian GNU/Linux 12", "containerRuntimeVersion": "containerd://1.7.0",
                "kubeletVersion": "v1.29.0", "kubeProxyVersion": "v1.29.0", "operatingSystem": "linux", "architecture": "amd64"},
            "images": images,
        },
    })
}

fn main() {
    let wanted = Wanted::of(&debugger(), true);
    let healthy = reports(|_| false);
    let mut nodes = BTreeMap::new();
    let (first, _) = timed(&wanted, &healthy, &nodes);
    println!(
        "first run on {NODES} nodes: {} node status writes (every node gets its conditions once)",
        first.conditions.len()
    );
    land(&mut nodes, &first);
    let (same, ms) = timed(&wanted, &healthy, &nodes);
    println!(
        "a run where nothing changed: {} node writes; plan {ms:.1} ms",
        same.writes()
    );
    let fifty = reports(|i| i % 100 == 7);
    let (p, ms) = timed(&wanted, &fifty, &nodes);
    println!(
        "a run where 50 nodes start failing disk: {} node status writes, {} taint writes; plan {ms:.1} ms",
        p.conditions.len(),
        p.taints.len()
    );
    land(&mut nodes, &p);
    let (again, _) = timed(&wanted, &fifty, &nodes);
    println!("the same results again: {} node writes", again.writes());
    let per_node = nodes
        .values()
        .map(|m| {
            serde_json::to_vec(&m.conditions).unwrap().len()
                + serde_json::to_vec(&m.taints).unwrap().len()
        })
        .sum::<usize>()
        / nodes.len();
    println!(
        "kept per node with marks (4 conditions, as JSON): {per_node} B; {NODES} nodes: {:.1} MB",
        (per_node * NODES) as f64 / 1e6
    );

    let raw = serde_json::to_vec(&node_json()).unwrap();
    let rounds = 2000;
    let start = Instant::now();
    let mut kept = 0;
    for _ in 0..rounds {
        let node: Node = serde_json::from_slice(&raw).unwrap();
        kept += NodeMarks::of(&node).conditions.len();
    }
    let us = start.elapsed().as_secs_f64() * 1e6 / rounds as f64;
    assert_eq!(kept, 0);
    // A kubelet that changes nothing updates its Node every 5 minutes.
    let per_s = NODES as f64 / 300.0;
    println!(
        "one Node update read and stripped: {} B, {us:.0} us; at {NODES} nodes ({per_s:.1} updates/s): {:.0} kB/s, {:.2} % of a core",
        raw.len(),
        raw.len() as f64 * per_s / 1e3,
        us * per_s / 1e4
    );
}
