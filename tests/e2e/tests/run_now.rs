//! `kubectl combo run` on simulated or real nodes (docs/runner.md, "Run now"):
//! one run on every node besides a cron's, in the reports, the summary and
//! the status; `spec.runAt` unchanged; the next cron fire still runs; no
//! pod restarted; a replaced runner pod does not run the request again; a
//! request already on a new Debugger stays each node's newest result; a
//! request made while no node is selected is dropped, said in condition
//! `RunNow`, and not run when the nodes come back (docs/operator.md,
//! "Run-now requests").

use std::time::Duration;

use anyhow::{ensure, Context as _, Result};
use combo_api::report::report_name;
use combo_api::{keys, Debugger, DebuggerReport, RunId};
use combo_e2e::runs::*;
use combo_e2e::{
    apply_yaml, client, install_for_cluster, kubectl_combo, namespace, pod_log, summaries,
    wait_for, workload_nodes,
};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::{Api, ResourceExt};

/// Every minute: the next fire is never more than 60 s away.
const CRON: &str = "* * * * *";
/// A cron fire after the request lands on every node within this time
/// (at most 60 s to the fire, then a run of the test's two scripts).
const FIRE_WAIT: Duration = Duration::from_secs(150);

/// The second of the minute it is now.
fn second_of_minute() -> i64 {
    RunId::now().0.timestamp().rem_euclid(60)
}

#[tokio::test]
async fn kubectl_combo_run_runs_once_everywhere_and_the_cron_schedule_goes_on() -> Result<()> {
    install_for_cluster();
    let test_ns = namespace("run-now").await;
    let ns = test_ns.name.as_str();
    let c = client().await;
    apply_yaml(ns, &scripts_configmap("now-scripts", "v1").yaml())?;
    apply_yaml(ns, &scripts_debugger("now", "now-scripts", CRON).yaml())?;
    let pods = wait_pods(&c, ns, "now").await?;
    // The request's time is its run id: keep it off the minute, where a
    // cron fire has the same id, and far enough from the next one that the
    // status shows the request before the fire replaces it.
    wait_for(
        Duration::from_secs(70),
        "a second from :05 to :30",
        || async { Ok((5..30).contains(&second_of_minute())) },
    )
    .await?;
    let out = kubectl_combo(&["run", "now", "-n", ns]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    ensure!(out.status.success(), "kubectl combo run: {stderr}");
    let dbgs: Api<Debugger> = Api::namespaced(c.clone(), ns);
    let dbg = dbgs.get("now").await?;
    let asked = dbg
        .annotations()
        .get(keys::ANNOTATION_RUN_NOW)
        .cloned()
        .context("kubectl combo run set no run-now annotation")?;
    let run = RunId::from_rfc3339(&asked).context("the request is an RFC 3339 time")?;
    ensure!(stdout.contains(&run.to_string()), "{stdout}");
    ensure!(
        dbg.spec.run_at == CRON,
        "runAt changed: {}",
        dbg.spec.run_at
    );

    // The request's run lands on every node: summary, status, reports.
    wait_run(&c, ns, "now-summary", &asked).await?;
    let nodes = workload_nodes();
    wait_for(WAIT, "the status to show the request's run", || async {
        let s = dbgs.get("now").await?.status.unwrap_or_default();
        Ok(s.last_run_at.as_deref() == Some(asked.as_str())
            && s.completed_nodes as usize == nodes.len())
    })
    .await?;
    let reports: Api<DebuggerReport> = Api::namespaced(c.clone(), ns);
    for node in &nodes {
        let r = reports.get(&report_name("now", node)).await?;
        ensure!(
            r.annotations().get(keys::ANNOTATION_RUN_NOW_DONE) == Some(&asked),
            "{node}: the report does not record the request: {:?}",
            r.annotations()
        );
        // The run records when it really started: not before the request's
        // time, not after it finished (absent: in the request's second).
        let at = |s: &str| RunId::from_rfc3339(s).map(|id| id.0);
        let started = if r.spec.started_at.is_empty() {
            at(&r.spec.run_at)
        } else {
            at(&r.spec.started_at)
        };
        let (started, run_at, finished) = (
            started.context("startedAt")?,
            at(&r.spec.run_at).context("runAt")?,
            at(&r.spec.finished_at).context("finishedAt")?,
        );
        ensure!(
            run_at <= started && started <= finished,
            "{node}: started {started}, outside {run_at}..{finished}"
        );
    }

    // The next cron fire still runs on every node, within a minute of the
    // request, and runAt is what it was.
    let fire = std::cell::RefCell::new(None::<RunId>);
    wait_for(
        FIRE_WAIT,
        "a cron fire after the request on every node",
        || async {
            let s = summaries(&c, ns, "now-summary").await?;
            let fires: Vec<RunId> = nodes
                .iter()
                .filter_map(|n| s.get(n))
                .filter(|v| v.run_at.ends_with(":00Z"))
                .filter_map(|v| RunId::from_rfc3339(&v.run_at))
                .filter(|id| *id > run)
                .collect();
            *fire.borrow_mut() = fires.iter().min().copied();
            Ok(fires.len() == nodes.len())
        },
    )
    .await?;
    let fire = fire.into_inner().context("a fire")?;
    let after = fire.0.signed_duration_since(run.0).num_seconds();
    ensure!(
        (1..=60).contains(&after),
        "the first fire after the request ran {after} s after it"
    );
    ensure!(dbgs.get("now").await?.spec.run_at == CRON, "runAt changed");
    ensure!(
        pods_by_node(&c, ns, "now").await? == pods,
        "the request replaced a pod"
    );

    // A replaced runner pod reads what its node ran from its report: its
    // first run is a cron fire, never the request again.
    let node = nodes[0].clone();
    let old = pods[&node].clone();
    Api::<Pod>::namespaced(c.clone(), ns)
        .delete(&old, &DeleteParams::default())
        .await?;
    let new = std::cell::RefCell::new(String::new());
    wait_for(WAIT, "a new runner pod on the node", || async {
        let found = pods_by_node(&c, ns, "now")
            .await?
            .get(&node)
            .cloned()
            .unwrap_or_default();
        let fresh = !found.is_empty() && found != old;
        *new.borrow_mut() = found;
        Ok(fresh)
    })
    .await?;
    let new = new.into_inner();
    wait_for(FIRE_WAIT, "the new runner's first run", || async {
        Ok(pod_log(ns, &new, "runner").contains("run due"))
    })
    .await?;
    let log = pod_log(ns, &new, "runner");
    ensure!(
        !log.contains(&run.to_string()) && !log.contains("run-now request"),
        "the replaced runner ran the request again:\n{log}"
    );
    Ok(())
}

/// Whether every node's summary holds `run_at` or a later run.
fn none_older(
    s: &std::collections::BTreeMap<String, combo_api::NodeSummary>,
    run_at: &str,
) -> bool {
    workload_nodes()
        .iter()
        .all(|n| s.get(n).is_some_and(|v| v.run_at.as_str() >= run_at))
}

#[tokio::test]
async fn a_request_already_on_a_new_debugger_stays_each_nodes_newest_result() -> Result<()> {
    install_for_cluster();
    let test_ns = namespace("run-early").await;
    let ns = test_ns.name.as_str();
    let c = client().await;
    apply_yaml(ns, &scripts_configmap("early-scripts", "v1").yaml())?;
    // The runners start after the request, with a cron fire of the same
    // minute still within their catch-up: the request runs, and that
    // older fire not after it.
    wait_for(
        Duration::from_secs(70),
        "a second from :05 to :35",
        || async { Ok((5..35).contains(&second_of_minute())) },
    )
    .await?;
    let asked = RunId::now().rfc3339();
    let mut dbg = scripts_debugger("early", "early-scripts", CRON).build();
    dbg.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(keys::ANNOTATION_RUN_NOW.to_string(), asked.clone());
    apply_yaml(ns, &combo_e2e::fixtures::to_yaml(&dbg))?;
    let landed = wait_run(&c, ns, "early-summary", &asked).await?;
    ensure!(none_older(&landed, &asked), "{landed:?}");
    // A fire caught up after the request would land within a second.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let s = summaries(&c, ns, "early-summary").await?;
    ensure!(
        none_older(&s, &asked),
        "a node's newest result is older than the request of {asked}: {s:?}"
    );
    Ok(())
}

/// The `RunNow` condition of Debugger `name`: (status, reason, message).
async fn run_now_condition(
    dbgs: &Api<Debugger>,
    name: &str,
) -> Result<Option<(String, String, String)>> {
    let status = dbgs.get(name).await?.status.unwrap_or_default();
    Ok(status
        .conditions
        .into_iter()
        .find(|c| c.type_ == "RunNow")
        .map(|c| (c.status, c.reason, c.message)))
}

/// Merge-patches Debugger `name` with `patch`.
async fn patch(dbgs: &Api<Debugger>, name: &str, patch: serde_json::Value) -> Result<()> {
    dbgs.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

/// Debugger `name` asked for a run at `run` (docs/runner.md, "Run now").
async fn ask(dbgs: &Api<Debugger>, name: &str, run: &str) -> Result<()> {
    let annotations = serde_json::json!({ keys::ANNOTATION_RUN_NOW: run });
    patch(
        dbgs,
        name,
        serde_json::json!({"metadata": {"annotations": annotations}}),
    )
    .await
}

#[tokio::test]
async fn a_request_while_no_node_is_selected_is_dropped_and_never_runs_when_the_nodes_come_back(
) -> Result<()> {
    install_for_cluster();
    let test_ns = namespace("run-drop").await;
    let ns = test_ns.name.as_str();
    let c = client().await;
    let dbgs: Api<Debugger> = Api::namespaced(c.clone(), ns);
    // An empty runAt: a DaemonSet runs nothing on its own, so every
    // report is a request's.
    apply_yaml(ns, &scripts_configmap("drop-scripts", "v1").yaml())?;
    apply_yaml(ns, &scripts_debugger("drop", "drop-scripts", "").yaml())?;
    wait_pods(&c, ns, "drop").await?;
    patch(
        &dbgs,
        "drop",
        serde_json::json!({"spec": {"selector": {"kubecombo.io/no-such-node": "x"}}}),
    )
    .await?;
    wait_for(WAIT, "drop Ready=False NoNodesSelected", || async {
        let s = dbgs.get("drop").await?.status.unwrap_or_default();
        Ok(s.conditions
            .iter()
            .any(|c| c.type_ == "Ready" && c.reason == "NoNodesSelected"))
    })
    .await?;

    let asked = RunId::now().rfc3339();
    ask(&dbgs, "drop", &asked).await?;
    let dropped = format!("run-now request of {asked} dropped: NoNodesSelected");
    wait_for(WAIT, &format!("RunNow: {dropped}"), || async {
        Ok(run_now_condition(&dbgs, "drop")
            .await?
            .is_some_and(|(s, r, m)| s == "False" && r == "Dropped" && m.starts_with(&dropped)))
    })
    .await?;
    wait_for(
        WAIT,
        "the dropped request taken off the Debugger",
        || async {
            Ok(!dbgs
                .get("drop")
                .await?
                .annotations()
                .contains_key(keys::ANNOTATION_RUN_NOW))
        },
    )
    .await?;

    // The nodes come back: their runners start and run nothing.
    patch(
        &dbgs,
        "drop",
        serde_json::json!({"spec": {"selector": null}}),
    )
    .await?;
    wait_pods(&c, ns, "drop").await?;
    wait_for(WAIT, "drop Ready=True", || async {
        let s = dbgs.get("drop").await?.status.unwrap_or_default();
        Ok(s.conditions
            .iter()
            .any(|c| c.type_ == "Ready" && c.status == "True"))
    })
    .await?;
    // A runner runs a request it sees within a second of starting.
    tokio::time::sleep(Duration::from_secs(15)).await;
    let reports: Api<DebuggerReport> = Api::namespaced(c.clone(), ns);
    let ran: Vec<String> = reports
        .list(&Default::default())
        .await?
        .items
        .iter()
        .map(|r| format!("{} ran {}", r.spec.node, r.spec.run_at))
        .collect();
    ensure!(
        ran.is_empty(),
        "the dropped request of {asked} ran: {ran:?}"
    );
    let status = dbgs.get("drop").await?.status.unwrap_or_default();
    ensure!(
        status.last_run_at.is_none(),
        "LAST-RUN shows {:?}, when nothing ran",
        status.last_run_at
    );
    let (_, reason, message) = run_now_condition(&dbgs, "drop")
        .await?
        .context("the RunNow condition stays")?;
    ensure!(
        reason == "Dropped" && message.starts_with(&dropped),
        "{message}"
    );

    // The runners work: a request now runs on every node and says so.
    let next = now_after(&asked).await;
    ask(&dbgs, "drop", &next).await?;
    wait_run(&c, ns, "drop-summary", &next).await?;
    let ran = format!("run-now request of {next} ran on");
    wait_for(WAIT, &format!("RunNow: {ran}"), || async {
        Ok(run_now_condition(&dbgs, "drop")
            .await?
            .is_some_and(|(s, r, m)| s == "True" && r == "Ran" && m.starts_with(&ran)))
    })
    .await
}
