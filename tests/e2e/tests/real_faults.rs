//! The fault matrix on real nodes: each fault is injected into this machine or into one real
//! node's namespaces, the next inspection names it with the right item on
//! the right node, and once it is removed the next one is green again.
//! Then the node sample inspects the healthy nodes five times without an
//! `err`. Skipped, with a message, on a cluster without real nodes.
//! What each fault is and how it is made: docs/testing.md, "Fault matrix on real nodes".
//!
//! Every fault is undone by a guard when it drops, so a failing run leaves
//! no mount, interface, route, cgroup, rule, sysctl or stopped process
//! behind.

#[path = "real_faults/busy.rs"]
mod busy;
#[path = "real_faults/host.rs"]
mod host;
#[path = "real_faults/kernel.rs"]
mod kernel;
#[path = "real_faults/links.rs"]
mod links;
#[path = "real_faults/node.rs"]
mod node;
#[path = "real_faults/production.rs"]
mod production;

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Result;
use combo_api::NodeSummary;
use combo_e2e::*;
use combo_testkit::suite::Case;
use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use kube::{Api, Client};

use host::{LoopFs, OomCgroup, FAULT_MOUNT};
use links::{DefaultRoutes, Links, RouteRemoval, ServfailServer, SERVFAIL_PORT};
use node::{ConntrackFill, StoppedKubelet};

const WAIT: Duration = Duration::from_secs(240);
/// The cluster's DNS server (tests/e2e/realnodes.sh) and the first real
/// node's address, where the SERVFAIL server listens.
const CLUSTER_DNS: &str = "172.31.0.1";
const NODE_IP: &str = "172.31.0.101";
const AREA: &str = "fault matrix";

/// Kernel log lines of the shared kernel (both real nodes read it).
const KMSG_LINES: [(&str, &str, &str); 6] = [
    (
        "disk",
        "io:loop99",
        "blk_update_request: I/O error, dev loop99, sector 2048 op 0x0:(READ) flags 0x0",
    ),
    (
        "disk",
        "fs:loop99",
        "EXT4-fs error (device loop99): ext4_find_entry:1455: inode #2: comm kc-fault: reading directory lblock 0",
    ),
    (
        "svc",
        "hung-tasks",
        "INFO: task kc-fault:4242 blocked for more than 120 seconds.",
    ),
    (
        "svc",
        "soft-lockups",
        "watchdog: BUG: soft lockup - CPU#0 stuck for 23s! [kc-fault:4242]",
    ),
    (
        "svc",
        "oops",
        "Oops: 0000 [#1] SMP NOPTI (written by the kube-combo fault matrix)",
    ),
    (
        "net",
        "unregister-netdevice",
        "unregister_netdevice: waiting for kcf9 to become free. Usage count = 1",
    ),
];

/// The ConfigMap script that runs the default MTU check on the node's
/// uplink and the test's `kcm0` (veths are not physical interfaces, which
/// the check compares by default).
const MTU_WRAPPER: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: fault-scripts
data:
  mtu.sh: |
    #!/bin/sh
    NET_MTU_IFACES="eth0 kcm0" exec /scripts/net/mtu.sh
"#;

const DEBUGGER: &str = r#"apiVersion: kubecombo.io/v1
kind: Debugger
metadata:
  name: faults
spec:
  workloadType: daemonset
  cpu: 200m
  memory: 256Mi
  enableSys: true
  hostNetwork: true
  enablePinger: false
  enableConfigMap: true
  configMap: fault-scripts
  categories: [disk, net, mem, svc, custom]
  scriptTimeoutSeconds: 60
"#;

/// Waits until one Running and Ready pod of Debugger `name` is on every real node.
async fn pods_ready(c: &Client, ns: &str, name: &str) -> Result<()> {
    let api: Api<Pod> = Api::namespaced(c.clone(), ns);
    let lp = ListParams::default().labels(&format!("kubecombo.io/debugger={name}"));
    let want = real_nodes();
    wait_for(WAIT, "a Ready pod on every real node", || async {
        let pods = api.list(&lp).await?;
        Ok(want.iter().all(|n| {
            pods.items.iter().any(|p| {
                p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(n.as_str())
                    && running_and_ready(p)
            })
        }))
    })
    .await
}

/// A run now, and every node's summary of it.
async fn run(c: &Client, ns: &str, name: &str) -> Result<BTreeMap<String, NodeSummary>> {
    // runAt is to the second: two runs in one second would be one.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let run_at = combo_api::RunId::now().rfc3339();
    set_run_at(c, ns, name, &run_at).await?;
    wait_run_within(c, ns, &format!("{name}-summary"), &run_at, WAIT).await
}

/// `ok`, `err: <message>`, `skip: <reason>` or `absent` for one item.
fn verdict(s: &NodeSummary, category: &str, item: &str) -> String {
    match s.categories.get(category).and_then(|c| c.get(item)) {
        None => "absent".into(),
        Some(r) if r.is_healthy() => "ok".into(),
        Some(r) => match (&r.err, r.skip_reason()) {
            (Some(e), _) => format!("err: {e}"),
            (None, Some(why)) => format!("skip: {why}"),
            (None, None) => "unknown".into(),
        },
    }
}

/// One row of the matrix: a fault, the item that must name it and the
/// nodes that must (the others must stay green for that item).
struct Row {
    fault: &'static str,
    category: &'static str,
    item: String,
    /// The item named on the fault run, when it differs (a kernel-log
    /// item is `io-errors` when green and `io:<device>` when red).
    red_item: Option<String>,
    on: Vec<String>,
}

impl Row {
    fn new(fault: &'static str, category: &'static str, item: &str, on: &[String]) -> Row {
        Row {
            fault,
            category,
            item: item.to_string(),
            red_item: None,
            on: on.to_vec(),
        }
    }
    fn green_item(&self) -> &str {
        &self.item
    }
    fn red_item(&self) -> &str {
        self.red_item.as_deref().unwrap_or(&self.item)
    }
}

/// The rows of the matrix: `one` is the first real node, `all` every one.
fn rows(one: &[String], all: &[String]) -> Vec<Row> {
    let mp = FAULT_MOUNT;
    let mut rows = vec![
        Row::new("filesystem full", "disk", mp, one),
        Row::new("out of inodes", "disk", &format!("inodes:{mp}"), one),
        // The super block's ro flag shows in the machine's mount table,
        // which both nodes' runners read.
        Row::new("read-only remount", "disk", &format!("ro:{mp}"), all),
        Row::new("OOM kill", "mem", "oom-kills", all),
        Row::new("link down", "net", "kcf0", one),
        Row::new("MTU differing", "custom", "mtu:kcm0", one),
        Row::new("default route removed", "net", "default-route", one),
        Row::new("conntrack at 90%", "net", "conntrack", one),
        Row::new("kubelet stopped", "svc", "kubelet-healthz", one),
    ];
    for transport in ["udp", "tcp"] {
        let item = format!("dns:{CLUSTER_DNS}/{transport}");
        rows.push(Row::new("resolver SERVFAIL", "net", &item, one));
    }
    for (category, item, _) in KMSG_LINES {
        let green = match item {
            i if i.starts_with("io:") => "io-errors",
            i if i.starts_with("fs:") => "fs-errors",
            i => i,
        };
        let mut row = Row::new("kernel log line", category, green, all);
        row.red_item = Some(item.to_string());
        rows.push(row);
    }
    rows
}

type Run = BTreeMap<String, NodeSummary>;

/// Per row and node, the verdicts of the green, fault and cleared runs:
/// how many rows were detected, how many of those cleared, and every
/// problem found.
fn judge(rows: &[Row], nodes: &[String], runs: [&Run; 3]) -> (u64, u64, Vec<String>) {
    let [green, red, cleared] = runs;
    let mut detected = 0u64;
    let mut mended = 0u64;
    let mut problems = Vec::new();
    for r in rows {
        let mut found = true;
        let mut gone = true;
        for node in nodes {
            let before = verdict(&green[node], r.category, r.green_item());
            let during_red = verdict(&red[node], r.category, r.red_item());
            let during_green = verdict(&red[node], r.category, r.green_item());
            let after = verdict(&cleared[node], r.category, r.green_item());
            let faulty = r.on.contains(node);
            println!(
                "{:<22} {:<34} {node}: before {before} | fault {} | after {after}",
                r.fault,
                r.red_item(),
                if faulty { &during_red } else { &during_green },
            );
            // A per-node item may exist on the faulty node only (its
            // interfaces): elsewhere it must not be red.
            let fine = |v: &str| v == "ok" || (!faulty && v == "absent");
            if !fine(&before) {
                found = false;
                problems.push(format!("{node} {}: not green before: {before}", r.item));
            }
            if faulty && !during_red.starts_with("err") {
                found = false;
                problems.push(format!("{node} {}: not named: {during_red}", r.red_item()));
            }
            if !faulty && !fine(&during_green) {
                found = false;
                problems.push(format!(
                    "{node} {}: red on the healthy node: {during_green}",
                    r.item
                ));
            }
            // A kernel-log fault named by device must be gone, not repeated.
            let stale = r.red_item() != r.green_item()
                && verdict(&cleared[node], r.category, r.red_item()) != "absent";
            if !fine(&after) || stale {
                gone = false;
                problems.push(format!("{node} {}: not green after: {after}", r.item));
            }
        }
        detected += u64::from(found);
        mended += u64::from(found && gone);
    }
    (detected, mended, problems)
}

#[tokio::test(flavor = "multi_thread")]
async fn each_fault_is_named_on_its_node_and_cleared_by_the_next_run() -> Result<()> {
    if !real_cluster_or_skip("each_fault_is_named_on_its_node_and_cleared_by_the_next_run") {
        return Ok(());
    }
    install_from_registry();
    let nodes = real_nodes();
    let spaces: Vec<String> = nodes.iter().map(|n| real_node_netns(n)).collect();
    let netns = spaces[0].clone();

    let links = Links::make(&netns)?;
    let _servfail = ServfailServer::start(&netns, NODE_IP)?;
    // Dropped last: the removed route is put back before these go.
    let _default_routes = DefaultRoutes::ensure(&spaces)?;

    let ns = namespace("real-faults").await;
    let c = client().await;
    apply_yaml(&ns.name, MTU_WRAPPER)?;
    apply_yaml(&ns.name, DEBUGGER)?;
    pods_ready(&c, &ns.name, "faults").await?;
    // Mounted after the runners started, as a data disk attached late is:
    // their /host follows the node's mounts.
    let disk = LoopFs::make()?;

    let rows = rows(&nodes[..1], &nodes);
    let case_detected = Case::new(AREA, "detected", rows.len() as u64);
    let case_cleared = Case::new(AREA, "cleared", rows.len() as u64);

    // A first run records the baselines (counters, kernel log position).
    run(&c, &ns.name, "faults").await?;
    let green = run(&c, &ns.name, "faults").await?;

    disk.fill()?;
    links.break_them()?;
    let dns_rule = NftTable::load(
        &netns,
        "kc_fault_dns",
        &format!(
            "chain out {{ type nat hook output priority -100; \
             ip daddr {CLUSTER_DNS} udp dport 53 dnat ip to {NODE_IP}:{SERVFAIL_PORT}; \
             ip daddr {CLUSTER_DNS} tcp dport 53 dnat ip to {NODE_IP}:{SERVFAIL_PORT}; }}"
        ),
    )?;
    let oom = OomCgroup::kill_one()?;
    for (_, _, line) in KMSG_LINES {
        std::fs::write("/dev/kmsg", format!("<3>{line}\n"))?;
    }
    let mut route = RouteRemoval::remove(&netns)?;
    let conntrack = ConntrackFill::to_90_percent(&netns, &spaces[1..])?;
    let kubelet = StoppedKubelet::stop(1, &netns)?;
    let red = run(&c, &ns.name, "faults").await?;

    disk.empty()?;
    links.mend()?;
    drop(dns_rule);
    drop(oom);
    route.restore()?;
    drop(conntrack);
    kubelet.resume()?;
    let cleared = run(&c, &ns.name, "faults").await?;

    let (detected, mended, problems) = judge(&rows, &nodes, [&green, &red, &cleared]);
    case_detected.done(detected, 0);
    case_cleared.done(mended, 0);
    println!(
        "fault matrix: detected {detected} of {n}, cleared {mended} of {n}",
        n = rows.len()
    );
    assert!(problems.is_empty(), "fault matrix: {problems:#?}");
    drop(ns);
    Ok(())
}

const HEALTHY_RUNS: u64 = 5;

#[tokio::test(flavor = "multi_thread")]
async fn the_node_sample_finds_no_err_on_healthy_real_nodes_in_five_runs() -> Result<()> {
    if !real_cluster_or_skip("the_node_sample_finds_no_err_on_healthy_real_nodes_in_five_runs") {
        return Ok(());
    }
    install_from_registry();
    // The sample has hostNetwork: its default-route item is the node's.
    let spaces: Vec<String> = real_nodes().iter().map(|n| real_node_netns(n)).collect();
    let _default_routes = DefaultRoutes::ensure(&spaces)?;
    let ns = namespace("real-healthy").await;
    let c = client().await;
    let samples = repo_root().join("config/samples");
    let sample = samples.join("debugger_daemonset_mesh.yaml");
    apply_yaml(&ns.name, &std::fs::read_to_string(sample)?)?;
    let name = "node-check";
    pods_ready(&c, &ns.name, name).await?;
    let case = Case::new(AREA, "healthy runs", HEALTHY_RUNS);
    let mut red_runs = 0u64;
    let mut reds = Vec::new();
    for k in 1..=HEALTHY_RUNS {
        let summary = run(&c, &ns.name, name).await?;
        let mut red = false;
        for (node, s) in &summary {
            for (cat, item, msg) in s.failed() {
                red = true;
                reds.push(format!("run {k} {node} {cat}/{item}: {msg}"));
            }
        }
        red_runs += u64::from(red);
    }
    case.done(HEALTHY_RUNS - red_runs, 0);
    println!("red on healthy nodes {red_runs} in {HEALTHY_RUNS} runs");
    assert!(reds.is_empty(), "err items on healthy nodes: {reds:#?}");
    Ok(())
}
