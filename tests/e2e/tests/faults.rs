//! Faults the operator survives (docs/testing.md, "Fault tests"). They
//! disturb the one operator every test of the cluster shares: cargo runs
//! test binaries one after another, so only this binary's tests see it,
//! and each waits until all is converged again before it ends.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context as _, Result};
use combo_api::{keys, Debugger};
use combo_e2e::fixtures::{ConfigMapBuilder, DebuggerBuilder};
use combo_e2e::runs;
use combo_e2e::{
    client, install_operator, namespace, operator_pid, project_process, record, restarts, wait_for,
    OPERATOR_LABELS, OPERATOR_NAMESPACE,
};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{ConfigMap, Event};
use kube::api::ListParams;
use kube::{Api, Client, ResourceExt};

const WAIT: Duration = Duration::from_secs(180);
const DEBUGGERS: usize = 100;

fn debuggers_yaml(n: usize) -> String {
    (0..n)
        .map(|i| {
            let d = DebuggerBuilder::new(&format!("d{i:03}"))
                .selector("kubecombo.io/fault-test", "none")
                .yaml();
            format!("---\n{d}")
        })
        .collect()
}

/// What is wrong with the namespace's Debuggers, their DaemonSets, summary
/// ConfigMaps and statuses; empty once all is right.
async fn problems(c: &Client, ns: &str) -> Result<Vec<String>> {
    let debuggers = Api::<Debugger>::namespaced(c.clone(), ns)
        .list(&ListParams::default())
        .await?;
    let uids: BTreeMap<String, String> = debuggers
        .items
        .iter()
        .map(|d| (d.name_any(), d.uid().unwrap_or_default()))
        .collect();
    let owner = |o: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
        o.owner_references
            .iter()
            .flatten()
            .filter(|r| r.controller == Some(true))
            .map(|r| (r.name.clone(), r.uid.clone()))
            .collect::<Vec<_>>()
    };
    let mut wrong = Vec::new();
    let sets = Api::<DaemonSet>::namespaced(c.clone(), ns)
        .list(&ListParams::default())
        .await?;
    if sets.items.len() != uids.len() {
        wrong.push(format!(
            "{} DaemonSets for {} Debuggers",
            sets.items.len(),
            uids.len()
        ));
    }
    for ds in &sets.items {
        let name = ds.name_any();
        if owner(&ds.metadata) != [(name.clone(), uids.get(&name).cloned().unwrap_or_default())] {
            wrong.push(format!(
                "DaemonSet {name} orphaned or owned by another: {:?}",
                owner(&ds.metadata)
            ));
        }
    }
    let maps = Api::<ConfigMap>::namespaced(c.clone(), ns)
        .list(&ListParams::default())
        .await?;
    for (name, uid) in &uids {
        let summary = format!("{name}-summary");
        match maps.items.iter().find(|m| m.name_any() == summary) {
            None => wrong.push(format!("{summary} missing")),
            Some(m) if owner(&m.metadata) != [(name.clone(), uid.clone())] => {
                wrong.push(format!("{summary} owned by {:?}", owner(&m.metadata)))
            }
            Some(_) => {}
        }
    }
    for d in &debuggers.items {
        let ready = d.status.as_ref().and_then(|s| {
            (Some(s.observed_generation) == d.metadata.generation)
                .then(|| s.conditions.iter().find(|c| c.type_ == "Ready"))
                .flatten()
                .map(|c| (c.reason.clone(), c.message.clone()))
        });
        // Their selector matches no node
        // (docs/operator.md, "Validation, status and Events").
        let no_node = "the selector, tolerations and affinity match no node: nothing runs";
        if ready != Some(("NoNodesSelected".into(), no_node.into())) {
            wrong.push(format!("{}: status {ready:?}", d.name_any()));
        }
    }
    Ok(wrong)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_operator_killed_while_reconciling_100_debuggers_converges_after_its_restart(
) -> Result<()> {
    install_operator();
    let ns = namespace("fault-kill").await;
    let c = client().await;
    // A test before this one may have restarted it.
    wait_for(WAIT, "the operator process", || async {
        Ok(operator_pid().is_some())
    })
    .await?;
    let restarted = restarts(&c, OPERATOR_NAMESPACE, OPERATOR_LABELS).await?;
    let before = operator_pid().context("the operator process")?;

    let file = std::env::temp_dir().join(format!("{}-debuggers.yaml", ns.name));
    std::fs::write(&file, debuggers_yaml(DEBUGGERS))?;
    // Applied in the background; the operator is killed as soon as its
    // first DaemonSet appears, while it is still creating the others.
    let mut apply = std::process::Command::new("kubectl")
        .args([
            "apply",
            "-n",
            &ns.name,
            "-f",
            file.to_str().context("path")?,
        ])
        .env("KUBECONFIG", combo_e2e::kubeconfig())
        .stdout(std::process::Stdio::null())
        .spawn()?;
    let sets = Api::<DaemonSet>::namespaced(c.clone(), &ns.name);
    let deadline = std::time::Instant::now() + WAIT;
    let written = loop {
        let n = sets.list(&ListParams::default()).await?.items.len();
        if n > 0 {
            break n;
        }
        anyhow::ensure!(
            std::time::Instant::now() < deadline,
            "no DaemonSet appeared"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &before.to_string()])
        .status()?;
    anyhow::ensure!(killed.success(), "kill -KILL {before}");
    anyhow::ensure!(apply.wait()?.success(), "kubectl apply of the Debuggers");
    let _ = std::fs::remove_file(&file);

    let result = async {
        wait_for(WAIT, "the operator restarted", || async {
            Ok(
                restarts(&c, OPERATOR_NAMESPACE, OPERATOR_LABELS).await? > restarted
                    && operator_pid().is_some_and(|p| p != before),
            )
        })
        .await?;
        let converged = wait_for(
            WAIT,
            "every Debugger's workload, summary and status",
            || async { Ok(problems(&c, &ns.name).await?.is_empty()) },
        )
        .await;
        if let Err(e) = converged {
            let left = problems(&c, &ns.name).await?;
            return Err(e.context(format!("still wrong: {left:?}")));
        }
        // No workload was created twice: at most one WorkloadCreated each.
        let events = Api::<Event>::namespaced(c.clone(), &ns.name)
            .list(&ListParams::default())
            .await?;
        let mut created: BTreeMap<String, usize> = BTreeMap::new();
        for e in events.items {
            if e.reason.as_deref() == Some("WorkloadCreated") {
                *created
                    .entry(e.involved_object.name.unwrap_or_default())
                    .or_default() += 1;
            }
        }
        let twice: Vec<_> = created.iter().filter(|(_, n)| **n > 1).collect();
        assert!(twice.is_empty(), "created twice: {twice:?}");
        anyhow::Ok(())
    }
    .await;
    let lost = match &result {
        Ok(()) => 0,
        Err(_) => problems(&c, &ns.name).await.map_or(DEBUGGERS, |p| p.len()) as u64,
    };
    record(
        "faults",
        &format!("operator SIGKILLed while reconciling {DEBUGGERS} Debuggers ({written} DaemonSets written)"),
        1,
        u64::from(result.is_ok()),
        lost,
    );
    result
}

/// Pid of the runner process of the pod in `ns` on `node`.
fn runner_pid(ns: &str, node: &str) -> Option<i32> {
    project_process(
        keys::BIN_RUNNER,
        &[
            &format!("{}={ns}", keys::env::POD_NAMESPACE),
            &format!("{}={node}", keys::env::NODE_NAME),
        ],
    )
}

fn slow_scripts() -> String {
    ConfigMapBuilder::new("slow-scripts")
        .entry(
            "disk.slow.sh",
            "#!/bin/sh\nsleep 6\necho \"err slow-$RUN_ID done on $NODE_NAME\"\n",
        )
        .yaml()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_runner_killed_in_the_middle_of_a_run_leaves_its_previous_report_whole() -> Result<()> {
    install_operator();
    let ns = namespace("fault-runner").await;
    let c = client().await;
    combo_e2e::apply_yaml(&ns.name, &slow_scripts())?;
    combo_e2e::apply_yaml(
        &ns.name,
        &runs::scripts_debugger("slow", "slow-scripts", "").yaml(),
    )?;
    runs::wait_pods(&c, &ns.name, "slow").await?;
    let node = combo_e2e::nodes()[0].clone();
    let reports = Api::<combo_api::DebuggerReport>::namespaced(c.clone(), &ns.name);
    let name = combo_api::report::report_name("slow", &node);

    let first = runs::now_rfc3339();
    combo_e2e::set_run_at(&c, &ns.name, "slow", &first).await?;
    runs::wait_run(&c, &ns.name, "slow-summary", &first).await?;
    let before = reports.get(&name).await?.spec;

    let result = async {
        // The next run: killed while its script sleeps.
        let second = runs::now_rfc3339();
        combo_e2e::set_run_at(&c, &ns.name, "slow", &second).await?;
        tokio::time::sleep(Duration::from_secs(2)).await;
        let pid = runner_pid(&ns.name, &node).context("the runner's process")?;
        let killed = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status()?;
        anyhow::ensure!(killed.success(), "kill -KILL {pid}");
        // Until the restarted runner finishes the run, the report is the
        // previous one, whole; then the new one, whole.
        let deadline = std::time::Instant::now() + WAIT;
        loop {
            let now = reports.get(&name).await?.spec;
            if now.run_at == second {
                anyhow::ensure!(
                    !now.finished_at.is_empty()
                        && now.failed_items >= 1
                        && now.categories["disk"].values().any(|r| r
                            .err
                            .as_deref()
                            .is_some_and(|e| e.contains(&format!("done on {node}")))),
                    "the new report is whole: {now:?}"
                );
                break;
            }
            anyhow::ensure!(
                now == before,
                "until then the previous report, unchanged: {now:?}"
            );
            anyhow::ensure!(
                std::time::Instant::now() < deadline,
                "the run after the restart"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        // The run after that works as usual.
        let third = runs::now_rfc3339();
        combo_e2e::set_run_at(&c, &ns.name, "slow", &third).await?;
        runs::wait_run(&c, &ns.name, "slow-summary", &third).await?;
        anyhow::Ok(())
    }
    .await;
    record(
        "faults",
        "a runner SIGKILLed in the middle of a run",
        1,
        u64::from(result.is_ok()),
        0,
    );
    result
}
