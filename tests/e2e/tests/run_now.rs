//! `kubectl combo run` on simulated or real nodes (docs/runner.md, "Run now"):
//! one run on every node besides a cron's, in the reports, the summary and
//! the status; `spec.runAt` unchanged; the next cron fire still runs; no
//! pod restarted; a replaced runner pod does not run the request again; a
//! request already on a new Debugger stays each node's newest result.

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
use kube::api::DeleteParams;
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
