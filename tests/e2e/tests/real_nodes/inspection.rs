//! An inspection as a user reads it on real nodes: `kubectl combo run`,
//! `summary` and `errlog`, `kubectl logs`; script and Pinger edits reach
//! the running pods without replacing or restarting anything.

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use combo_api::NodeSummary;
use combo_e2e::{
    apply_yaml, kubectl_combo, kubectl_ok, pod_log, real_nodes, wait_for, wait_run_within,
};
use k8s_openapi::api::core::v1::Pod;
use kube::{Api, Client, ResourceExt};

use crate::helpers::{in_runner, scripts_configmap, start, Started, WAIT};

/// `kubectl combo run` of Debugger `check`, then every real node's summary
/// of the run it asked for (its run-now annotation).
async fn combo_run(c: &Client, ns: &str) -> Result<BTreeMap<String, NodeSummary>> {
    let out = kubectl_combo(&["run", "check", "-n", ns]);
    if !out.status.success() {
        bail!(
            "kubectl combo run: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let run_at = kubectl_ok(&[
        "get",
        "dbg",
        "check",
        "-n",
        ns,
        "-o",
        "jsonpath={.metadata.annotations.kubecombo\\.io/run-now}",
    ])?;
    // The cluster has real nodes only: they are the nodes the Debugger covers.
    wait_run_within(c, ns, "check-summary", &run_at, WAIT).await
}

fn restart_counts(pod: &Pod) -> Vec<i32> {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .map(|cs| cs.iter().map(|c| c.restart_count).collect())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_inspection_on_real_nodes_is_read_with_kubectl_combo_exec_and_logs() -> Result<()> {
    let test = "an_inspection_on_real_nodes_is_read_with_kubectl_combo_exec_and_logs";
    let Some(Started { ns, c, pods }) =
        start(test, "real-run", "first", "check", false, Some("mesh")).await?
    else {
        return Ok(());
    };
    let summary = combo_run(&c, &ns.name).await?;
    for (node, s) in &summary {
        let failed: Vec<_> = s.failed().collect();
        assert!(
            failed
                .iter()
                .any(|(cat, _, msg)| *cat == "custom" && msg.contains(&format!("first on {node}"))),
            "{node}: the ConfigMap script's planned failure is in the summary: {failed:?}"
        );
    }
    let table = kubectl_combo(&["summary", "check", "-n", &ns.name]);
    let table = String::from_utf8_lossy(&table.stdout);
    for node in real_nodes() {
        assert!(
            table.contains(&format!("first on {node}")),
            "summary table names {node}: {table}"
        );
    }
    errlog_and_logs_are_read(&ns.name, &pods)?;
    a_script_edit_reaches_the_next_run(&c, &ns.name, &pods).await?;
    a_pinger_change_reaches_the_pingers(&ns.name, &pods).await?;

    let api: Api<Pod> = Api::namespaced(c.clone(), &ns.name);
    for (node, pod) in pods {
        let now = api.get(&pod.name_any()).await?;
        assert_eq!(
            now.metadata.uid, pod.metadata.uid,
            "{node}: the pod was not replaced by the script edit, the run requests or the Pinger"
        );
        assert!(
            restart_counts(&now).iter().all(|r| *r == 0),
            "{node}: no container restarted ({:?})",
            restart_counts(&now)
        );
    }
    Ok(())
}

/// The errlog of the first real node, read by the plugin through the
/// kubelet's exec, and both containers' logs, through the kubelet.
fn errlog_and_logs_are_read(ns: &str, pods: &BTreeMap<String, Pod>) -> Result<()> {
    let node = real_nodes()[0].clone();
    let out = kubectl_combo(&[
        "errlog",
        "check",
        "-n",
        ns,
        "--node",
        &node,
        "--category",
        "custom",
    ]);
    assert!(
        out.status.success(),
        "kubectl combo errlog: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let errlog = String::from_utf8_lossy(&out.stdout);
    assert!(
        errlog.contains(&format!("first on {node}")),
        "errlog of {node}: {errlog}"
    );
    let pod = pods[&node].name_any();
    for container in ["runner", "pinger"] {
        let logs = kubectl_ok(&["logs", "-n", ns, &pod, "-c", container])?;
        assert!(
            !logs.trim().is_empty(),
            "kubectl logs -c {container} prints the container's output"
        );
    }
    Ok(())
}

/// A script edit reaches the running pods through the kubelet's volume
/// update; the next run uses it.
async fn a_script_edit_reaches_the_next_run(
    c: &Client,
    ns: &str,
    pods: &BTreeMap<String, Pod>,
) -> Result<()> {
    apply_yaml(ns, &scripts_configmap("second"))?;
    let want = "planned second on";
    // Every node's kubelet refreshes its own volumes, each on its own
    // schedule: wait for all of them before the run.
    wait_for(
        WAIT,
        "the edited script in every runner's /scripts/custom",
        || async {
            for p in pods.values() {
                let script = in_runner(ns, &p.name_any(), "cat /scripts/custom/planned.sh")?;
                if !script.contains(want) {
                    return Ok(false);
                }
            }
            Ok(true)
        },
    )
    .await?;
    let summary = combo_run(c, ns).await?;
    for (node, s) in &summary {
        assert!(
            s.failed()
                .any(|(_, _, msg)| msg.contains(&format!("second on {node}"))),
            "{node}: the next run used the edited script"
        );
    }
    Ok(())
}

/// A change of Pinger `mesh` reaches the running pingers live.
async fn a_pinger_change_reaches_the_pingers(ns: &str, pods: &BTreeMap<String, Pod>) -> Result<()> {
    let changes = |pod: &str| {
        pod_log(ns, pod, "pinger")
            .matches("settings changed")
            .count()
    };
    let before: BTreeMap<String, usize> = pods
        .values()
        .map(|p| (p.name_any(), changes(&p.name_any())))
        .collect();
    kubectl_ok(&[
        "patch",
        "pinger",
        "mesh",
        "-n",
        ns,
        "--type=merge",
        "-p",
        r#"{"spec":{"intervalSeconds":2,"timeoutMs":700}}"#,
    ])?;
    wait_for(WAIT, "every pinger applying the changed Pinger", || async {
        Ok(before.iter().all(|(pod, n)| changes(pod) > *n))
    })
    .await
}
