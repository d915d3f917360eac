//! The control plane going away under running Debuggers
//! (docs/testing.md, "Fault tests"): the procedure shared by the outage
//! tests of simulated nodes (`tests/outage.rs`) and of real nodes
//! (`tests/real_outage.rs`). This file holds the procedure;
//! `outage/target.rs` the TCP target, `outage/pingers.rs` what the pingers
//! saw and `outage/survivors.rs` the pods that must survive.
//!
//! [`outage`] stops one process of the control plane (`cluster.sh stop DIR
//! NAME`) with a run of a Debugger due in the middle of the outage, starts it
//! again and checks what survived: the run is in every node's summary, the
//! operator, runner and pinger pods are the same pods with the same
//! processes and no container restarted, and every pinger of the Debugger
//! [`PROBING`], whose TCP target ([`TcpTarget`]) refused connections only
//! while the control plane was away, counted the failed probes in its
//! metrics and records the episode once the API server is back.

use std::net::SocketAddr;
use std::process::Command;
use std::time::Duration;

use anyhow::{ensure, Context as _, Result};
use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use kube::{Api, Client};

use crate::fixtures::{documents, DebuggerBuilder, PingerBuilder};
use crate::{client, cluster_dir, repo_root, set_run_at, wait_for, wait_run_within};

mod pingers;
mod survivors;
mod target;

use pingers::{pingers_after, pingers_before};
use survivors::Survivors;
pub use target::TcpTarget;

/// `cluster.sh stop|start DIR NAME`: stops or starts one process of the
/// control plane (`kube-apiserver`, `etcd`, ...).
pub fn cluster(action: &str, process: &str) -> Result<()> {
    let out = Command::new(repo_root().join("tests/e2e/cluster.sh"))
        .args([action, cluster_dir().to_str().context("dir")?, process])
        .output()?;
    ensure!(
        out.status.success(),
        "cluster.sh {action} {process}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

/// An RFC 3339 time `secs` from now, in UTC.
pub fn in_seconds(secs: u64) -> Result<String> {
    let out = Command::new("date")
        .args([
            "-u",
            "-d",
            &format!("+{secs} seconds"),
            "+%Y-%m-%dT%H:%M:%SZ",
        ])
        .output()?;
    Ok(String::from_utf8(out.stdout)?.trim().to_string())
}

/// Waits until the API server answers again (a fresh client each try).
pub async fn api_back() -> Result<()> {
    wait_for(Duration::from_secs(180), "the API server back", || async {
        let c = client().await;
        Ok(Api::<Pod>::namespaced(c, "default")
            .list(&ListParams::default().limit(1))
            .await
            .is_ok())
    })
    .await
}

/// The Debugger with a pinger, and its Pinger.
pub const PROBING: &str = "probing";
/// The pinger's metrics port.
const METRICS_PORT: u16 = 9467;
/// The least time between two Events of a pinger about one target
/// (docs/pinger.md, "The budget"), with slack.
const EVENT_GAP: Duration = Duration::from_secs(35);

/// The Pinger and the DaemonSet Debugger [`PROBING`] that runs it on every
/// node, probing `target` over TCP once a second.
pub fn probing_yaml(target: SocketAddr) -> String {
    let target = target.to_string();
    documents(&[
        PingerBuilder::new(PROBING)
            .metrics_port(METRICS_PORT)
            .rounds(1, 500, 1)
            .peers(false)
            .tcp_ping(&[&target])
            .yaml(),
        DebuggerBuilder::new(PROBING).pinger(PROBING).yaml(),
    ])
}

/// The pods in `ns` that `labels` selects, except those being deleted.
async fn live_pods(c: &Client, ns: &str, labels: &str) -> Result<Vec<Pod>> {
    let lp = ListParams::default().labels(labels);
    Ok(Api::<Pod>::namespaced(c.clone(), ns)
        .list(&lp)
        .await?
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect())
}

/// Stops `process` for `down`, with a run of Debugger `debugger` due in the
/// middle of it, starts it again and checks what survived. The Debugger
/// [`PROBING`] probes `target`, which refuses while the process is away.
/// Returns what went wrong.
pub async fn outage(
    process: &str,
    down: Duration,
    ns: &str,
    debugger: &str,
    target: &mut TcpTarget,
) -> Result<()> {
    let c = client().await;
    let pingers = pingers_before(&c, ns, target.addr).await?;
    let survivors = Survivors::read(&c, ns, debugger).await?;
    let run_at = in_seconds(down.as_secs() / 2)?;
    set_run_at(&c, ns, debugger, &run_at).await?;

    cluster("stop", process)?;
    // The pingers' target fails while the control plane is away, and only
    // then: what they saw meanwhile must show afterwards.
    target.stop().await;
    tokio::time::sleep(down).await;
    target.start().await?;
    cluster("start", process)?;
    api_back().await?;

    let c = client().await;
    // The run due during the outage: every node's report, then its key. A
    // runner's attempts that failed meanwhile back off (each attempt may
    // take up to 60 s, pauses grow to 30 s), and a loaded machine's API
    // server takes a while to relist every watch after etcd is back:
    // allow 5 minutes.
    wait_run_within(
        &c,
        ns,
        &format!("{debugger}-summary"),
        &run_at,
        Duration::from_secs(300),
    )
    .await?;
    let changed = survivors.changes(&Survivors::read(&c, ns, debugger).await?);
    ensure!(
        changed.is_empty(),
        "every pod kept its UID, its containers' restart counts and its processes: {}",
        changed.join("; ")
    );
    for (what, pods) in &survivors.groups {
        let processes: usize = pods.values().map(|p| p.pids.len()).sum();
        eprintln!(
            "outage: {what}: {} pods and {processes} processes the same after {process} stopped for {down:?}",
            pods.len()
        );
    }
    pingers_after(&c, ns, target.addr, down, &pingers).await
}

/// The two cases, in turn: the API server stopped for 30 s, then etcd for
/// 20 s, each recorded in the suite report's `faults` group under its name
/// followed by `suffix`. Always starts a stopped process again: one left
/// stopped by a failed case would fail every test after.
pub async fn both_outages(
    ns: &str,
    debugger: &str,
    target: &mut TcpTarget,
    suffix: &str,
) -> Result<()> {
    let mut failures = Vec::new();
    for (process, down, case) in [
        (
            "kube-apiserver",
            Duration::from_secs(30),
            "API server stopped for 30 s",
        ),
        (
            "etcd",
            Duration::from_secs(20),
            "etcd stopped for 20 s and restarted",
        ),
    ] {
        let case = format!("{case}{suffix}");
        let result = outage(process, down, ns, debugger, target).await;
        let _ = cluster("start", process);
        let _ = target.start().await;
        crate::record("faults", &case, 1, u64::from(result.is_ok()), 0);
        if let Err(e) = result {
            failures.push(format!("{case}: {e:#}"));
        }
    }
    ensure!(failures.is_empty(), "{}", failures.join("\n"));
    Ok(())
}
