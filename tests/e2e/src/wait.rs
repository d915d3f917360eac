//! Waiting for the cluster to reach a state: a condition polled until a
//! deadline, Ready pods on every node, every node's summary of a run.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};
use combo_api::{keys, NodeSummary};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use kube::Client;

use crate::{real_nodes, summaries, workload_nodes};

/// Polls `check` every 250 ms until it returns true or `timeout` passes.
pub async fn wait_for<F, Fut>(timeout: Duration, what: &str, mut check: F) -> Result<()>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<bool>>,
{
    let start = Instant::now();
    let mut last_err = None;
    loop {
        match check().await {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(e) => last_err = Some(e),
        }
        if start.elapsed() > timeout {
            let tail = last_err
                .map(|e| format!(" (last error: {e:#})"))
                .unwrap_or_default();
            bail!("timed out after {timeout:?} waiting for {what}{tail}");
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Whether `pod` is Running with condition Ready=True.
pub fn running_and_ready(pod: &Pod) -> bool {
    pod.status.as_ref().is_some_and(|s| {
        s.phase.as_deref() == Some("Running")
            && s.conditions
                .iter()
                .flatten()
                .any(|c| c.type_ == "Ready" && c.status == "True")
    })
}

/// node -> pod of Debugger `name`, once one Running and Ready pod runs on
/// every real node (within `timeout`).
pub async fn pods_on_every_real_node(
    c: &Client,
    timeout: Duration,
    ns: &str,
    name: &str,
) -> Result<BTreeMap<String, Pod>> {
    let api: Api<Pod> = Api::namespaced(c.clone(), ns);
    let lp = ListParams::default().labels(&keys::debugger_selector(name));
    let want = real_nodes();
    wait_for(timeout, "a Ready pod on every real node", || async {
        let pods = api.list(&lp).await?;
        Ok(want.iter().all(|n| {
            pods.items.iter().any(|p| {
                p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(n.as_str())
                    && running_and_ready(p)
            })
        }))
    })
    .await?;
    let mut out = BTreeMap::new();
    for p in api.list(&lp).await?.items {
        if running_and_ready(&p) {
            let node = p.spec.as_ref().and_then(|s| s.node_name.clone());
            out.insert(node.context("scheduled pod")?, p);
        }
    }
    Ok(out)
}

/// Waits at most `within` until the key of every node a Debugger covers
/// ([`workload_nodes`]) in summary ConfigMap `cm` records `run_at`.
pub async fn wait_run_within(
    c: &Client,
    ns: &str,
    cm: &str,
    run_at: &str,
    within: Duration,
) -> Result<BTreeMap<String, NodeSummary>> {
    let want = workload_nodes();
    wait_for(
        within,
        &format!("every node's summary for {run_at}"),
        || async {
            let s = summaries(c, ns, cm).await?;
            Ok(want
                .iter()
                .all(|n| s.get(n).is_some_and(|v| v.run_at == run_at)))
        },
    )
    .await?;
    summaries(c, ns, cm).await
}
