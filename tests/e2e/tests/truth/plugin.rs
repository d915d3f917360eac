//! The plugin never reads "no result" as "no failure", and the errlogs,
//! the summary and the plugin agree on which run is the newest.

use std::time::Duration;

use anyhow::{ensure, Context as _, Result};
use combo_api::{keys, Category, Debugger};
use combo_e2e::fixtures::DebuggerBuilder;
use combo_e2e::{apply_yaml, kubectl_combo, wait_for};
use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use kube::{Api, Client, ResourceExt};

use crate::helpers::{config_map, mem_debugger, ready, setup, setup_on_real_nodes, WAIT};

/// The timestamp in the past of the last run of the errlog test.
const PAST: &str = "2025-06-01T00:00:00Z";

/// `kubectl combo ARGS`: its exit code and stderr.
fn combo_exit(args: &[&str]) -> (Option<i32>, String) {
    let out = kubectl_combo(args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code(), stderr)
}

#[tokio::test]
async fn kubectl_combo_summary_of_a_debugger_without_a_result_fails() -> Result<()> {
    let (ns, c) = setup("truth-plugin").await;
    let ns = ns.name.as_str();
    apply_yaml(ns, &mem_debugger("idle"))?;
    wait_for(WAIT, "idle has a status", || async {
        Ok(ready(&c, ns, "idle").await?.is_some())
    })
    .await?;
    let (code, stderr) = combo_exit(&["summary", "idle", "-n", ns]);
    ensure!(code == Some(1), "exit {code:?}: {stderr}");
    ensure!(stderr.contains("has no result yet"), "{stderr}");
    let (code, stderr) = combo_exit(&["summary", "nosuch", "-n", ns]);
    ensure!(
        code == Some(3) && stderr.contains("no Debugger \"nosuch\""),
        "exit {code:?}: {stderr}"
    );
    Ok(())
}

/// `sh -c SCRIPT` in the runner container of `pod`.
fn in_runner(ns: &str, pod: &str, script: &str) -> Result<String> {
    combo_e2e::kubectl_ok(&[
        "exec", "-n", ns, pod, "-c", "runner", "--", "sh", "-c", script,
    ])
}

/// Debugger `order`, whose script fails naming its run, keeping two
/// errlogs: two runs now, then a timestamp in the past, so the last one
/// ran last. Their `runAt`s, in the order they ran.
async fn three_runs(c: &Client, ns: &str) -> Result<Vec<String>> {
    apply_yaml(
        ns,
        &config_map(
            "fail",
            &[(
                "disk.fail.sh",
                "#!/bin/sh\necho \"err broken in run $RUN_ID\"",
            )],
        ),
    )?;
    let mut runs = Vec::new();
    for run_at in [None, None, Some(PAST)] {
        let run_at = match run_at {
            Some(t) => t.to_string(),
            None => {
                tokio::time::sleep(Duration::from_millis(1100)).await;
                combo_api::RunId::now().rfc3339()
            }
        };
        if runs.is_empty() {
            apply_yaml(
                ns,
                &DebuggerBuilder::new("order")
                    .scripts("fail")
                    .categories(&[Category::Disk])
                    .errlog_retention(2)
                    .run_at(&run_at)
                    .tolerate_all()
                    .yaml(),
            )?;
        } else {
            combo_e2e::set_run_at(c, ns, "order", &run_at).await?;
        }
        combo_e2e::wait_run_within(c, ns, "order-summary", &run_at, WAIT).await?;
        runs.push(run_at);
    }
    Ok(runs)
}

/// On `pod`'s node the errlogs kept are those of the last two runs of
/// `ids`, and `kubectl combo errlog` shows the last one.
fn check_errlogs(ns: &str, pod: &Pod, ids: &[String]) -> Result<()> {
    let node = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .context("node")?;
    let listing = in_runner(ns, &pod.name_any(), "ls /scripts/disk/errlog")?;
    let mut kept: Vec<&str> = listing.split_whitespace().collect();
    kept.sort();
    let mut want = vec![format!("{}.log", ids[1]), format!("{}.log", ids[2])];
    want.sort();
    ensure!(kept == want, "{node}: errlogs kept {kept:?}, want {want:?}");
    let out = kubectl_combo(&[
        "errlog",
        "order",
        "-n",
        ns,
        "--node",
        &node,
        "--category",
        "disk",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    ensure!(
        out.status.success() && text.contains(&format!("broken in run {}", ids[2])),
        "{node}: kubectl combo errlog shows another run than the summary: {text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

#[tokio::test]
async fn errlogs_summary_and_plugin_agree_on_the_newest_run_whatever_its_id() -> Result<()> {
    let test = "errlogs_summary_and_plugin_agree_on_the_newest_run_whatever_its_id";
    let Some((ns, c)) = setup_on_real_nodes(test, "truth-order").await else {
        return Ok(());
    };
    let ns = ns.name.as_str();
    let runs = three_runs(&c, ns).await?;
    // Run ids: the RFC 3339 times in basic format.
    let ids: Vec<String> = runs.iter().map(|r| r.replace(['-', ':'], "")).collect();
    let dbgs = Api::<Debugger>::namespaced(c.clone(), ns);
    wait_for(WAIT, "lastRunAt is the past timestamp", || async {
        Ok(dbgs
            .get("order")
            .await?
            .status
            .and_then(|s| s.last_run_at)
            .as_deref()
            == Some(PAST))
    })
    .await?;
    let pods = Api::<Pod>::namespaced(c.clone(), ns)
        .list(&ListParams::default().labels(&keys::debugger_selector("order")))
        .await?
        .items;
    for pod in pods {
        check_errlogs(ns, &pod, &ids)?;
    }
    let table = kubectl_combo(&["summary", "order", "-n", ns]);
    let table = String::from_utf8_lossy(&table.stdout);
    ensure!(table.contains(&ids[2]), "{table}");
    Ok(())
}
