//! `kubectl combo mesh` telling a node from a target and a path
//! (docs/pinger.md#node-target-or-path) on the real nodes: a closed TCP
//! port every pinger probes is one target fault; then the first node's pod
//! loses all its traffic and that node is one node-side fault, with the
//! `net` items of its latest report beside it.
//!
//! How the node is made to drop its traffic: in the node's own network
//! namespace, the forward chain of an nftables table drops everything from
//! and to the Debugger's pod there (its pinger and runner share the pod's
//! addresses), but the API server's connections from the host to the
//! pinger's metrics port: its pod proxy still reads that pinger, so the
//! node shows as a prober losing every target, besides being lost by its
//! peers. A pod cut off from the API server too cannot be read at all; the
//! node is then judged from its peers' side only
//! (docs/pinger.md#node-target-or-path says so). Only the pod of this
//! test's Debugger is cut, so the other test of this binary, running at the
//! same time, is not touched. The table is a guard: dropped, on success,
//! error or panic, it is deleted, and the test checks that it is gone.
//!
//! With two real nodes a node-side fault rests on the prober side: each
//! node has one peer, and one failing pair is a path, so it is the listed
//! targets (ICMP to the host, TCP to the registry and to the closed port)
//! that make 4 of 4 of the node's pairs fail. Its one peer losing it is 1
//! of 1, under the minimum of 2; that path is grouped under the node all
//! the same. While the node is down the closed port rests on the one
//! healthy prober left and is a path fault; with 3 real nodes or more it
//! stays a target fault, and the test expects that then.

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::time::Duration;

use anyhow::{ensure, Context as _, Result};
use combo_api::report::report_name;
use combo_api::{keys, Category, DebuggerReport};
use combo_e2e::fixtures::{DebuggerBuilder, PingerBuilder};
use combo_e2e::runs::now_rfc3339;
use combo_e2e::{
    apply_yaml, client, install_from_registry, namespace, pods_on_every_real_node,
    real_cluster_or_skip, real_node_netns, real_nodes, set_run_at, wait_for, NftTable,
};
use combo_testkit::netplan::{HOST_IP, REGISTRY};
use kube::api::ListParams;
use kube::{Api, Client};
use serde_json::Value;

use super::{mesh, WAIT};

/// A port on the host bridge nothing listens on (checked first).
const CLOSED_PORT: u16 = 1;
/// The nftables table that cuts the node's pod off.
const CUT_TABLE: &str = "kc_mesh_node";

/// `kubectl combo mesh ARGS -o json`, parsed.
fn mesh_json(args: &[&str]) -> Result<Value> {
    let out = mesh(&[args, &["-o", "json"]].concat())?;
    serde_json::from_str(&out).with_context(|| format!("not a JSON view:\n{out}"))
}

/// The faults of a view as `(fault, at)`.
fn faults(view: &Value) -> Vec<(String, String)> {
    view["faults"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| {
            let word = f["fault"].as_str().unwrap_or_default();
            (
                word.to_string(),
                f["at"].as_str().unwrap_or_default().into(),
            )
        })
        .collect()
}

/// Whether table `inet NAME` is in network namespace `netns`.
fn has_table(netns: &str, name: &str) -> Result<bool> {
    let out = Command::new("ip")
        .args(["netns", "exec", netns, "nft", "list", "tables"])
        .output()?;
    ensure!(out.status.success(), "nft list tables in {netns}");
    let tables = String::from_utf8_lossy(&out.stdout);
    Ok(tables
        .lines()
        .any(|l| l.trim() == format!("table inet {name}")))
}

/// Drops every packet the node's namespace forwards from or to `ips`,
/// but for the API server's connections to the pinger's metrics port
/// `port` (the pod proxy `kubectl combo mesh` reads the pinger through).
fn cut_pod(netns: &str, ips: &[String], port: u16) -> Result<NftTable> {
    // A table a killed run left would drop an address reused since.
    let _ = Command::new("ip")
        .args([
            "netns", "exec", netns, "nft", "delete", "table", "inet", CUT_TABLE,
        ])
        .output();
    let rules: String = ips
        .iter()
        .map(|ip| {
            let family = if ip.contains(':') { "ip6" } else { "ip" };
            // The host's address is IPv4: a v6 address has no exception.
            let proxy = if family == "ip" {
                format!(
                    "ip saddr {HOST_IP} ip daddr {ip} tcp dport {port} accept; \
                     ip saddr {ip} ip daddr {HOST_IP} tcp sport {port} accept; "
                )
            } else {
                String::new()
            };
            format!("{proxy}{family} saddr {ip} drop; {family} daddr {ip} drop; ")
        })
        .collect();
    NftTable::load(
        netns,
        CUT_TABLE,
        &format!("chain forward {{ type filter hook forward priority 0; {rules}}}"),
    )
}

/// The failed `net` items of each node's report of Debugger `name` for
/// `run_at`, once every node has one.
async fn net_reports(
    c: &Client,
    ns: &str,
    name: &str,
    run_at: &str,
) -> Result<BTreeMap<String, Vec<(String, String)>>> {
    let api: Api<DebuggerReport> = Api::namespaced(c.clone(), ns);
    let lp = ListParams::default().labels(&keys::debugger_selector(name));
    let nodes = real_nodes();
    wait_for(
        WAIT,
        &format!("every node's report of {run_at}"),
        || async {
            let reports = api.list(&lp).await?.items;
            Ok(nodes.iter().all(|n| {
                reports
                    .iter()
                    .any(|r| &r.spec.node == n && r.spec.run_at == run_at)
            }))
        },
    )
    .await?;
    let mut out = BTreeMap::new();
    for r in api.list(&lp).await?.items {
        let failed = r
            .spec
            .categories
            .get(Category::Net.as_str())
            .into_iter()
            .flatten()
            .filter_map(|(item, v)| Some((item.clone(), v.err.clone()?)))
            .collect();
        out.insert(r.spec.node, failed);
    }
    Ok(out)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_node_dropping_all_its_traffic_is_one_node_side_fault_and_a_closed_port_a_target_fault(
) -> Result<()> {
    let test =
        "a_node_dropping_all_its_traffic_is_one_node_side_fault_and_a_closed_port_a_target_fault";
    if !real_cluster_or_skip(test) {
        return Ok(());
    }
    let closed = format!("{HOST_IP}:{CLOSED_PORT}");
    let addr: SocketAddr = closed.parse()?;
    ensure!(
        TcpStream::connect_timeout(&addr, Duration::from_secs(2)).is_err(),
        "something listens on {closed}: pick another CLOSED_PORT"
    );
    install_from_registry();
    let ns = namespace("real-mesh-faults").await;
    let c = client().await;
    let pinger = PingerBuilder::new("faults")
        .rounds(1, 500, 1)
        .ping(&[HOST_IP])
        .tcp_ping(&[REGISTRY, &closed])
        .peers(true)
        .gateway(false);
    apply_yaml(&ns.name, &pinger.yaml())?;
    let dbg = DebuggerBuilder::new("faults")
        .cpu("100m")
        .memory("128Mi")
        .categories(&[Category::Net])
        .pinger("faults");
    apply_yaml(&ns.name, &dbg.yaml())?;
    let pods = pods_on_every_real_node(&c, WAIT, &ns.name, "faults").await?;
    let nodes = real_nodes();
    ensure!(nodes.len() >= 2, "a mesh needs two real nodes: {nodes:?}");
    let (down, up) = (nodes[0].as_str(), nodes[1].as_str());
    let args = ["faults", "-n", ns.name.as_str()];

    // A run, so that the node at fault has a report to show.
    let run_at = now_rfc3339();
    set_run_at(&c, &ns.name, "faults", &run_at).await?;
    let nets = net_reports(&c, &ns.name, "faults", &run_at).await?;

    // Every pinger loses the closed port, and only it: one target fault,
    // lost by all of them.
    let everyone = nodes.len() as u64;
    wait_for(WAIT, "the closed port as the one fault", || async {
        let view = mesh_json(&args)?;
        ensure!(
            faults(&view) == [("target".to_string(), closed.clone())],
            "not yet: {:?}",
            faults(&view)
        );
        let share = &view["faults"][0]["asTarget"];
        ensure!(
            share["failing"] == everyone && share["probed"] == everyone,
            "{share}"
        );
        Ok(true)
    })
    .await?;
    let text = mesh(&args)?;
    let line = format!("target fault at {closed} (tcp): {everyone} of {everyone} probers fail\n");
    ensure!(text.starts_with(&line), "{line} first in:\n{text}");

    let netns = real_node_netns(down);
    let ips: Vec<String> = pods[down]
        .status
        .as_ref()
        .and_then(|s| s.pod_ips.clone())
        .context("the pod's addresses")?
        .into_iter()
        .map(|i| i.ip)
        .collect();
    let cut = cut_pod(&netns, &ips, pinger.build().spec.metrics_port)?;
    // Its pairs: the peers, the host, the registry, the closed port.
    let pairs = everyone + 2;
    wait_for(WAIT, &format!("{down} as one node-side fault"), || async {
        let view = mesh_json(&args)?;
        let found = faults(&view);
        let mut want = vec![("node-side".to_string(), down.to_string())];
        if nodes.len() == 2 {
            want.push(("path".into(), format!("{up} -> {closed}")));
        } else {
            want.push(("target".into(), closed.clone()));
        }
        ensure!(found == want, "not yet: {found:?}");
        let node = &view["faults"][0];
        ensure!(
            node["asProber"]["failing"] == pairs && node["asProber"]["probed"] == pairs,
            "{}",
            node["asProber"]
        );
        // Every failing path of the node's is under it: its own and its
        // peers' of it.
        let paths = node["paths"].as_array().context("paths")?;
        ensure!(
            paths.len() as u64 == pairs + everyone - 1
                && paths
                    .iter()
                    .all(|p| p["prober"] == down || p["target"] == down),
            "{paths:?}"
        );
        let net = &node["net"];
        let failed: Vec<(String, String)> = net["failed"]
            .as_array()
            .context("net items")?
            .iter()
            .map(|i| {
                (
                    i["item"].as_str().unwrap_or_default().into(),
                    i["err"].as_str().unwrap_or_default().into(),
                )
            })
            .collect();
        ensure!(
            net["report"] == report_name("faults", down).as_str()
                && net["found"] == true
                && net["runAt"] == run_at.as_str()
                && failed == nets[down],
            "the net items of {down}'s report of {run_at} ({:?}), not: {net}",
            nets[down]
        );
        Ok(true)
    })
    .await?;
    let text = mesh(&args)?;
    ensure!(
        text.starts_with(&format!("node-side fault at {down}: "))
            && text.matches(&format!("fault at {down}")).count() == 1
            && !text.contains(&format!("path fault: {down} ->"))
            && text.contains("\n  net"),
        "{down} named once, with its net items:\n{text}"
    );
    println!("mesh faults: {down} cut off:\n{text}");

    // Lifted, the node is no fault any more and no rule is left.
    drop(cut);
    ensure!(
        !has_table(&netns, CUT_TABLE)?,
        "table {CUT_TABLE} left in {netns}"
    );
    wait_for(WAIT, "the closed port as the one fault again", || async {
        let found = faults(&mesh_json(&args)?);
        ensure!(
            found == [("target".to_string(), closed.clone())],
            "not yet: {found:?}"
        );
        Ok(true)
    })
    .await?;
    Ok(())
}
