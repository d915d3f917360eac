//! What is told to stop stops: an operator whose watch fails says so,
//! recovers by itself and exits at once on SIGTERM; a runner pod deleted in
//! the middle of a script goes within seconds.

use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context as _, Result};
use combo_api::{keys, Category};
use combo_e2e::fixtures::{DebuggerBuilder, PingerBuilder};
use combo_e2e::{apply_yaml, install_for_cluster, namespace, running_and_ready, wait_for};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{DeleteParams, ListParams};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, ResourceExt};

use crate::helpers::{mem_debugger, run_scripts_now, setup_on_real_nodes, WAIT};
use crate::local_operator::{operator_role, LocalOperator};

#[tokio::test]
async fn an_operator_that_cannot_watch_says_so_recovers_by_itself_and_stops_when_asked(
) -> Result<()> {
    if !combo_e2e::real_nodes().is_empty() {
        // The second operator runs from the host's build, which the
        // cluster of simulated nodes has; real nodes add nothing to it.
        println!("skipped on real nodes: it runs on the cluster of simulated nodes");
        return Ok(());
    }
    install_for_cluster();
    let ns = namespace("truth-watch").await;
    let ns = ns.name.as_str();
    apply_yaml(
        ns,
        "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: narrow\n",
    )?;
    apply_yaml(ns, &operator_role("narrow", false))?;
    apply_yaml(
        ns,
        &format!("apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: narrow\nroleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: narrow}}\nsubjects: [{{kind: ServiceAccount, name: narrow, namespace: {ns}}}]\n"),
    )?;
    // A Debugger to reconcile: its reconcile waits for the reports' watch.
    apply_yaml(ns, &mem_debugger("waiting"))?;

    for (round, port) in [(0, 18481u16), (1, 18482)] {
        let mut op = LocalOperator::start(ns, port)?;
        wait_for(
            Duration::from_secs(30),
            "/readyz 503 naming DebuggerReport",
            || {
                let (code, body) = op.get("/readyz");
                async move { Ok(code == 503 && body.contains("DebuggerReport")) }
            },
        )
        .await?;
        let (_, metrics) = op.get("/metrics");
        ensure!(
            metrics.contains("combo_operator_watch_errors_total{kind=\"DebuggerReport\"}"),
            "{metrics}"
        );
        ensure!(
            op.log_has("watch failing") && op.log_has("DebuggerReport") && op.log_has("403"),
            "no error line naming the kind and the answer: {:#?}",
            op.seen
        );
        if round == 1 {
            // The right comes: the watch lists and the operator is ready.
            apply_yaml(ns, &operator_role("narrow", true))?;
            wait_for(
                Duration::from_secs(90),
                "/readyz 200 after the watch recovered",
                || {
                    let (code, _) = op.get("/readyz");
                    async move { Ok(code == 200) }
                },
            )
            .await?;
            ensure!(op.log_has("watch recovered"), "{:#?}", op.seen);
        }
        let took = op.stop()?;
        ensure!(
            took < Duration::from_secs(2),
            "round {round}: the operator took {took:?} to exit after SIGTERM"
        );
    }
    Ok(())
}

/// The exit codes of `pod`'s terminated containers, by name.
fn terminated(pod: &Pod) -> Vec<(String, i32)> {
    pod.status
        .iter()
        .flat_map(|s| s.container_statuses.iter().flatten())
        .filter_map(|c| {
            let t = c.state.as_ref()?.terminated.as_ref()?;
            Some((c.name.clone(), t.exit_code))
        })
        .collect()
}

/// Debugger `stop` in the middle of a script when its pod is deleted
/// (its run due now, its script sleeping 300 s), with a pinger probing.
fn slow_run(ns: &str) -> Result<()> {
    apply_yaml(
        ns,
        &PingerBuilder::new("probe")
            .ping(&["127.0.0.1"])
            .tcp_ping(&["127.0.0.1:1"])
            .interval(1)
            .yaml(),
    )?;
    run_scripts_now(
        ns,
        "slow",
        &[("disk.slow.sh", "#!/bin/sh\nexec sleep 300")],
        DebuggerBuilder::new("stop")
            .categories(&[Category::Disk])
            .script_timeout(600)
            .pinger("probe")
            .tolerate_all(),
    )?;
    Ok(())
}

/// A Running and Ready runner pod of Debugger `stop`, once its run has
/// started its 300 s script.
async fn runner_in_its_script(pods: &Api<Pod>) -> Result<Pod> {
    let lp = ListParams::default().labels(&keys::debugger_selector("stop"));
    wait_for(WAIT, "a Ready runner pod", || async {
        Ok(pods.list(&lp).await?.items.iter().any(running_and_ready))
    })
    .await?;
    // The run has started its 300 s script.
    tokio::time::sleep(Duration::from_secs(3)).await;
    pods.list(&lp)
        .await?
        .items
        .into_iter()
        .find(running_and_ready)
        .context("a pod")
}

/// Watches deleted `pod` until it is gone: when all its containers were
/// seen exited (their exit codes, and how long after `t0`), if its status
/// showed that before it went.
async fn until_gone(
    pods: &Api<Pod>,
    pod: &Pod,
    t0: Instant,
) -> Result<Option<(Vec<(String, i32)>, Duration)>> {
    // What the containers did is in the pod's status while it terminates;
    // when the pod object itself goes is the kubelet's affair (it deletes
    // it at a status sync after the pod's resources are reclaimed, up to
    // 10 s later, and may do so right after the status that shows the
    // exits, too soon for a poll), so the bound is on the containers'
    // exits, and a watch sees every status the pod had.
    let config = watcher::Config::default().fields(&format!("metadata.name={}", pod.name_any()));
    let mut events = watcher(pods.clone(), config).default_backoff().boxed();
    let mut stopped: Option<(Vec<(String, i32)>, Duration)> = None;
    let mut listed = false;
    let ours = |p: &Pod| p.uid() == pod.uid();
    let deadline = tokio::time::sleep(Duration::from_secs(120));
    tokio::pin!(deadline);
    loop {
        let event = tokio::select! {
            e = events.next() => match e.context("the pod watch ended")? {
                Ok(e) => e,
                // The watcher backs off and lists again.
                Err(_) => continue,
            },
            () = &mut deadline => bail!("pod {} still there 120 s after its deletion", pod.name_any()),
        };
        let current = match event {
            watcher::Event::Init => {
                listed = false;
                continue;
            }
            watcher::Event::InitApply(p) if ours(&p) => {
                listed = true;
                p
            }
            watcher::Event::Apply(p) if ours(&p) => p,
            watcher::Event::InitDone if !listed => break,
            watcher::Event::Delete(p) if ours(&p) => break,
            _ => continue,
        };
        if stopped.is_none() {
            let exits = terminated(&current);
            if !exits.is_empty()
                && exits.len() == current.spec.as_ref().map_or(0, |s| s.containers.len())
            {
                stopped = Some((exits, t0.elapsed()));
            }
        }
    }
    Ok(stopped)
}

#[tokio::test]
async fn a_runner_pod_goes_within_seconds_of_its_deletion() -> Result<()> {
    let test = "a_runner_pod_goes_within_seconds_of_its_deletion";
    let Some((ns, c)) = setup_on_real_nodes(test, "truth-stop").await else {
        return Ok(());
    };
    slow_run(&ns.name)?;
    let pods = Api::<Pod>::namespaced(c.clone(), &ns.name);
    let pod = runner_in_its_script(&pods).await?;
    let t0 = Instant::now();
    pods.delete(&pod.name_any(), &DeleteParams::default())
        .await?;
    let stopped = until_gone(&pods, &pod, t0).await?;
    let took = t0.elapsed();
    match stopped {
        Some((exits, at)) => {
            // Killed at the end of the grace period is 137, and 30 s.
            ensure!(
                at < Duration::from_secs(10) && exits.iter().all(|(_, code)| *code != 137),
                "the runner pod's containers stopped after {at:?} with {exits:?} (grace period 30 s)"
            );
            println!("runner pod's containers stopped {at:?} after its deletion with {exits:?}; pod gone after {took:?}");
        }
        // The pod went before its status showed its containers' exits.
        None => ensure!(
            took < Duration::from_secs(15),
            "the runner pod took {took:?} to go (grace period 30 s)"
        ),
    }
    Ok(())
}
