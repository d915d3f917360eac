//! Summary and status come from the same reports whatever the Debugger's
//! condition: a Debugger whose scripts ConfigMap is gone, or whose spec is
//! invalid, keeps its summary on the status's run, and a summary the
//! operator may not write says at its top that it is stale and why; a
//! shortened value's omitted row counts its failures, and the plugin's
//! `-o json` answers and exit codes hold against the API server. The
//! reports are written here, as runners would, so the runs are exactly
//! those the test means on any cluster.

use std::time::Duration;

use anyhow::{ensure, Context as _, Result};
use combo_api::report::report_name;
use combo_api::summary::{ItemResult, NodeSummary};
use combo_api::{Debugger, DebuggerReport, DebuggerReportSpec};
use combo_e2e::fixtures::DebuggerBuilder;
use combo_e2e::{apply_yaml, kubectl_combo, summaries, wait_for};
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::json;

use crate::helpers::{wait_invalid, wait_ready, WAIT};

/// The value: a script printed more err items than fit, so the
/// result lists `listed` failures and a row `(<omitted> failed items
/// omitted)` for the rest.
async fn shortened_report(
    c: &Client,
    ns: &str,
    dbg: &str,
    run_at: &str,
    listed: usize,
    omitted: u32,
) -> Result<()> {
    let mut result = NodeSummary {
        run_at: run_at.into(),
        finished_at: run_at.into(),
        ..NodeSummary::default()
    };
    let disk = result.categories.entry("disk".into()).or_default();
    for i in 0..listed {
        disk.insert(format!("bad{i:03}"), ItemResult::err("broken"));
    }
    disk.insert(
        format!("({omitted} failed items omitted)"),
        ItemResult::err(combo_api::summary::OMITTED),
    );
    let name = report_name(dbg, NODE);
    let api = Api::<DebuggerReport>::namespaced(c.clone(), ns);
    let r = DebuggerReport::new(&name, DebuggerReportSpec::of(dbg, NODE, &result));
    api.create(&PostParams::default(), &r).await?;
    Ok(())
}

const NODE: &str = "sim-report-node";

/// Writes the report of `NODE` for Debugger `dbg`'s run `run_at`, with
/// `failed` failed disk items, over the one before.
async fn report(c: &Client, ns: &str, dbg: &str, run_at: &str, failed: usize) -> Result<()> {
    let mut result = NodeSummary {
        run_at: run_at.into(),
        finished_at: run_at.into(),
        ..NodeSummary::default()
    };
    let disk = result.categories.entry("disk".into()).or_default();
    disk.insert("sda".into(), ItemResult::ok());
    for i in 0..failed {
        disk.insert(format!("bad{i}"), ItemResult::err("broken"));
    }
    let name = report_name(dbg, NODE);
    let api = Api::<DebuggerReport>::namespaced(c.clone(), ns);
    let mut r = DebuggerReport::new(&name, DebuggerReportSpec::of(dbg, NODE, &result));
    if let Some(old) = api.get_opt(&name).await? {
        r.metadata.resource_version = old.metadata.resource_version;
        api.replace(&name, &PostParams::default(), &r).await?;
    } else {
        api.create(&PostParams::default(), &r).await?;
    }
    Ok(())
}

/// Waits until the status of `dbg` has run `run_at` with `failed` failed
/// items and its summary `cm` shows the same run with as many.
async fn agree(c: &Client, ns: &str, dbg: &str, cm: &str, run_at: &str, failed: i32) -> Result<()> {
    wait_for(
        WAIT,
        &format!("{dbg}: status and summary at {run_at}, {failed} failed"),
        || async {
            let d = Api::<Debugger>::namespaced(c.clone(), ns).get(dbg).await?;
            let s = d.status.unwrap_or_default();
            let status_ok = s.last_run_at.as_deref() == Some(run_at) && s.failed_items == failed;
            let summary = summaries(c, ns, cm).await?;
            let summary_ok = summary
                .get(NODE)
                .is_some_and(|v| v.run_at == run_at && v.failed_count() as i32 == failed);
            Ok(status_ok && summary_ok)
        },
    )
    .await
}

/// `kubectl combo summary ARGS`: exit code, stdout, stderr.
fn combo(args: &[&str]) -> (Option<i32>, String, String) {
    let out = kubectl_combo(args);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn a_debugger_that_is_not_ready_keeps_its_summary_on_the_status_run() -> Result<()> {
    let (ns, c) = crate::helpers::setup("truth-stale").await;
    let ns = ns.name.as_str();
    // Its scripts ConfigMap never exists: ConfigMapNotFound throughout.
    apply_yaml(ns, &DebuggerBuilder::new("lost").scripts("absent").yaml())?;
    wait_ready(&c, ns, "lost", "False", "ConfigMapNotFound").await?;
    let (t1, t2, t3) = (
        "2026-01-01T06:00:00Z",
        "2026-01-01T12:00:00Z",
        "2026-01-01T18:00:00Z",
    );
    report(&c, ns, "lost", t1, 0).await?;
    agree(&c, ns, "lost", "lost-summary", t1, 0).await?;
    // The run: one failed item on a ConfigMapNotFound Debugger.
    report(&c, ns, "lost", t2, 1).await?;
    agree(&c, ns, "lost", "lost-summary", t2, 1).await?;
    let (code, out, err) = combo(&["summary", "lost", "-n", ns]);
    ensure!(
        code == Some(0) && out.contains("bad0") && out.contains("20260101T120000Z"),
        "exit {code:?}: {out}{err}"
    );
    ensure!(
        !err.contains("STALE") && !err.contains("no failed items"),
        "{err}"
    );
    let (_, all, _) = combo(&["summary", "lost", "-n", ns, "--all"]);
    ensure!(!all.contains("20260101T060000Z"), "the run before: {all}");

    // The other way round: an invalid spec, and a run that fixed it.
    let (api, pp) = (
        Api::<Debugger>::namespaced(c.clone(), ns),
        PatchParams::default(),
    );
    api.patch(
        "lost",
        &pp,
        &Patch::Merge(json!({"spec": {"categories": []}})),
    )
    .await?;
    wait_invalid(&c, ns, "lost", &["categories is empty"]).await?;
    report(&c, ns, "lost", t3, 0).await?;
    agree(&c, ns, "lost", "lost-summary", t3, 0).await?;
    let (code, out, err) = combo(&["summary", "lost", "-n", ns]);
    ensure!(
        code == Some(0) && !out.contains("bad0") && err.contains("no failed items"),
        "exit {code:?}: {out}{err}"
    );
    ensure!(!err.contains("STALE"), "{err}");
    Ok(())
}

#[tokio::test]
async fn a_summary_the_operator_may_not_write_says_it_is_stale_and_why() -> Result<()> {
    let (ns, c) = crate::helpers::setup("truth-stale-why").await;
    let ns = ns.name.as_str();
    apply_yaml(ns, &DebuggerBuilder::new("held").scripts("absent").yaml())?;
    wait_ready(&c, ns, "held", "False", "ConfigMapNotFound").await?;
    let (t1, t2) = ("2026-02-01T06:00:00Z", "2026-02-01T12:00:00Z");
    report(&c, ns, "held", t1, 0).await?;
    agree(&c, ns, "held", "held-summary", t1, 0).await?;
    // Its scripts named like its summary: the summary would replace the
    // scripts, so the operator writes neither; the status goes on.
    let (api, pp) = (
        Api::<Debugger>::namespaced(c.clone(), ns),
        PatchParams::default(),
    );
    api.patch(
        "held",
        &pp,
        &Patch::Merge(json!({"spec": {"configMap": "held-summary"}})),
    )
    .await?;
    wait_invalid(&c, ns, "held", &["summary would replace the scripts"]).await?;
    report(&c, ns, "held", t2, 1).await?;
    wait_for(WAIT, "the status has the new run", || async {
        let s = api.get("held").await?.status.unwrap_or_default();
        Ok(s.last_run_at.as_deref() == Some(t2) && s.failed_items == 1)
    })
    .await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let summary = summaries(&c, ns, "held-summary").await?;
    ensure!(
        summary.get(NODE).is_some_and(|v| v.run_at == t1),
        "the summary was written over the scripts' name: {summary:?}"
    );
    let (code, out, err) = combo(&["summary", "held", "-n", ns, "--all"]);
    let top = err.lines().next().unwrap_or_default();
    ensure!(
        code == Some(0)
            && top.starts_with("STALE: this summary shows run 20260201T060000Z")
            && top.contains("status has run 20260201T120000Z on 1 node(s), 1 failed")
            && top.contains("InvalidSpec"),
        "exit {code:?}: {out}{err}"
    );
    Ok(())
}

#[tokio::test]
async fn the_plugins_json_answers_and_exit_codes_hold_against_the_api_server() -> Result<()> {
    let (ns, c) = crate::helpers::setup("truth-answers").await;
    let ns = ns.name.as_str();
    // A summary shortened by its report: 147 failures listed, 229 left out.
    apply_yaml(ns, &DebuggerBuilder::new("short").scripts("absent").yaml())?;
    wait_ready(&c, ns, "short", "False", "ConfigMapNotFound").await?;
    let t1 = "2026-03-01T06:00:00Z";
    shortened_report(&c, ns, "short", t1, 147, 229).await?;
    agree(&c, ns, "short", "short-summary", t1, 376).await?;
    let (code, out, err) = combo(&["summary", "short", "-n", ns, "-o", "json"]);
    ensure!(code == Some(0), "exit {code:?}: {out}{err}");
    ensure!(
        !err.contains("STALE"),
        "the omitted row counts its failures: {err}"
    );
    let doc: serde_json::Value = serde_json::from_str(&out).context("summary -o json")?;
    ensure!(
        doc["namespace"] == ns
            && doc["debugger"] == "short"
            && doc["configMap"] == "short-summary"
            && doc["stale"].is_null(),
        "{doc}"
    );
    let node = &doc["nodes"][0];
    ensure!(
        node["node"] == NODE
            && node["run"] == "20260301T060000Z"
            && node["failedItems"] == 376
            && node["items"]
                .as_array()
                .is_some_and(|i| !i.is_empty() && i.iter().all(|i| i["state"] == "failed")),
        "{node}"
    );
    let (code, out, err) = combo(&["status", "-n", ns, "-o", "json"]);
    ensure!(code == Some(0), "exit {code:?}: {out}{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).context("status -o json")?;
    let short = doc["debuggers"]
        .as_array()
        .and_then(|d| d.iter().find(|d| d["name"] == "short"))
        .context("short in status -o json")?;
    ensure!(
        short["failedItems"] == 376
            && short["completedNodes"] == 1
            && short["lastRunAt"] == t1
            && short["ready"]["reason"] == "ConfigMapNotFound",
        "{short}"
    );
    let (code, out, _) = combo(&["status", "-n", ns, "-o", "yaml"]);
    ensure!(
        code == Some(0) && out.starts_with("debuggers:\n"),
        "exit {code:?}: {out}"
    );

    // A Debugger that selects no node: run --wait answers at once, exit 5,
    // not after its 10 minutes.
    apply_yaml(
        ns,
        &DebuggerBuilder::new("nowhere")
            .selector("kubecombo.io/no-such-node", "x")
            .yaml(),
    )?;
    wait_ready(&c, ns, "nowhere", "False", "NoNodesSelected").await?;
    let started = std::time::Instant::now();
    let (code, out, err) = combo(&["run", "nowhere", "-n", ns, "--wait"]);
    ensure!(
        code == Some(5) && err.contains("selects no node"),
        "exit {code:?}: {out}{err}"
    );
    ensure!(
        started.elapsed() < Duration::from_secs(60),
        "run --wait waited {:?}",
        started.elapsed()
    );

    // A namespace that does not exist, and a flag without the one it needs.
    let (code, out, err) = combo(&["status", "-n", "kube-combo-does-not-exist"]);
    ensure!(
        code == Some(3) && err.contains("no namespace \"kube-combo-does-not-exist\""),
        "exit {code:?}: {out}{err}"
    );
    let (code, out, err) = combo(&["run", "nowhere", "-n", ns, "--timeout", "5"]);
    ensure!(
        code == Some(2) && err.contains("--wait"),
        "exit {code:?}: {out}{err}"
    );
    Ok(())
}
