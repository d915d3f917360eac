//! The control plane going away under running Debuggers, as listed in
//! docs/testing.md, "Fault tests": the API server stopped for 30 s, then
//! etcd stopped and started again. The operator and the pods keep running, and a run
//! scheduled while the API was gone is in the summary afterwards. These
//! stop the cluster for every test: cargo runs this binary on its own, and
//! its one test does both cases in turn.

mod common;

use std::process::Command;
use std::time::Duration;

use anyhow::{ensure, Context as _, Result};
use combo_e2e::{
    client, cluster_dir, namespace, operator_pid, record, repo_root, restarts, wait_for,
    OPERATOR_LABELS, OPERATOR_NAMESPACE,
};
use common::{set_run_at, setup, wait_run_within};
use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use kube::Api;

/// `cluster.sh stop|start DIR NAME`.
fn cluster(action: &str, process: &str) -> Result<()> {
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
fn in_seconds(secs: u64) -> Result<String> {
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
async fn api_back() -> Result<()> {
    wait_for(Duration::from_secs(180), "the API server back", || async {
        let c = client().await;
        Ok(Api::<Pod>::namespaced(c, "default")
            .list(&ListParams::default().limit(1))
            .await
            .is_ok())
    })
    .await
}

/// Stops `process` for `down`, with a run due in the middle of it, starts
/// it again and checks what survived. Returns what went wrong.
async fn outage(process: &str, down: Duration, ns: &str, debugger: &str) -> Result<()> {
    let c = client().await;
    let selector = combo_api::keys::debugger_selector(debugger);
    let (pods_before, op_before) = (
        restarts(&c, ns, &selector).await?,
        restarts(&c, OPERATOR_NAMESPACE, OPERATOR_LABELS).await?,
    );
    let pid = operator_pid().context("the operator process")?;
    let run_at = in_seconds(down.as_secs() / 2)?;
    set_run_at(&c, ns, debugger, &run_at).await?;

    cluster("stop", process)?;
    tokio::time::sleep(down).await;
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
    ensure!(
        operator_pid() == Some(pid),
        "the operator process kept running (pid {pid}, now {:?})",
        operator_pid()
    );
    ensure!(
        restarts(&c, OPERATOR_NAMESPACE, OPERATOR_LABELS).await? == op_before,
        "the operator container was not restarted"
    );
    ensure!(
        restarts(&c, ns, &selector).await? == pods_before,
        "no runner or pinger container was restarted"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn the_api_server_and_etcd_going_away_lose_no_run_and_restart_nothing() -> Result<()> {
    let ns = namespace("outage").await;
    let c = client().await;
    setup(&c, &ns.name, "steady").await?;
    wait_for(Duration::from_secs(120), "the operator process", || async {
        Ok(operator_pid().is_some())
    })
    .await?;

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
        let result = outage(process, down, &ns.name, "steady").await;
        // A process left stopped by a failed case would fail every test after.
        let _ = cluster("start", process);
        record("faults", case, 1, u64::from(result.is_ok()), 0);
        if let Err(e) = result {
            failures.push(format!("{case}: {e:#}"));
        }
    }
    ensure!(failures.is_empty(), "{}", failures.join("\n"));
    Ok(())
}
