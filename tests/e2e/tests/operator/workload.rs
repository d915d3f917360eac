//! The workload a Debugger becomes, and how spec changes reach it.

use std::time::Duration;

use anyhow::{Context as _, Result};
use combo_api::{Category, WorkloadType};
use combo_e2e::fixtures::{DebuggerBuilder, PingerBuilder};
use combo_e2e::{apply_yaml, kubectl_ok, nodes, wait_for};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, ServiceAccount};
use kube::ResourceExt;

use crate::helpers::{
    apply_file, eventually, eventually_within, get, limit, request, setup, template_of,
    wait_all_pods_ready, wait_condition, wait_event, wait_exists, wait_status, WAIT,
};

#[tokio::test]
async fn sample_debugger_becomes_a_daemonset_whose_pods_get_ready() -> Result<()> {
    let (ns, c) = setup("op-ds").await;
    apply_file(&ns.name, "config/samples/debugger_daemonset_mesh.yaml")?;
    let ds: DaemonSet = eventually(&c, &ns.name, "node-check").await?;
    let owner = &ds.owner_references()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.controller),
        ("Debugger", Some(true))
    );
    let pod = template_of(&ds);
    let names: Vec<&str> = pod.containers.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["runner", "pinger"]);
    assert_eq!(
        pod.service_account_name.as_deref(),
        Some("kube-combo-workload.node-check")
    );
    let labels = ds
        .spec
        .clone()
        .unwrap()
        .template
        .metadata
        .unwrap()
        .labels
        .unwrap();
    assert_eq!(labels["kubecombo.io/debugger"], "node-check");
    assert_eq!(labels["app.kubernetes.io/instance"], "node-check");

    // The summary ConfigMap exists from the start: the operator writes it
    // once its workload writes pause (`pace`), at most 10 s after the
    // workload, before any runner has a result.
    let summary: ConfigMap =
        eventually_within(&c, &ns.name, "node-check-summary", Duration::from_secs(20)).await?;
    assert_eq!(summary.owner_references()[0].name, "node-check");
    let sa: Option<ServiceAccount> = get(&c, &ns.name, "kube-combo-workload.node-check").await?;
    assert!(
        sa.is_some(),
        "workload ServiceAccount created in the Debugger's namespace"
    );

    let want =
        wait_all_pods_ready(&c, &ns.name, "node-check", "readyPods == number of nodes").await?;
    wait_condition(&c, &ns.name, "node-check", "True", "WorkloadReady").await?;
    wait_event(&c, &ns.name, "node-check", "Normal", "WorkloadCreated").await?;
    let table = kubectl_ok(&["get", "dbg", "-n", &ns.name])?;
    assert!(
        table.contains("TYPE")
            && table.contains("REASON")
            && table.contains("WorkloadReady")
            && table.contains(&format!("{want}/{want}")),
        "{table}"
    );
    Ok(())
}

#[tokio::test]
async fn pod_debugger_runs_one_pod_on_the_named_node() -> Result<()> {
    let (ns, c) = setup("op-pod").await;
    let node = nodes().last().cloned().unwrap();
    let one = DebuggerBuilder::new("one")
        .workload(WorkloadType::Pod)
        .node_name(&node)
        .categories(&[Category::Mem]);
    apply_yaml(&ns.name, &one.yaml())?;
    eventually::<Pod>(&c, &ns.name, "one").await?;
    // The scheduler binds it, through the node affinity on the node's
    // name (docs/operator.md, "What a Debugger becomes").
    wait_for(WAIT, "pod one scheduled", || async {
        let pod = get::<Pod>(&c, &ns.name, "one").await?;
        Ok(pod.and_then(|p| p.spec?.node_name).is_some())
    })
    .await?;
    let pod: Pod = eventually(&c, &ns.name, "one").await?;
    let spec = pod.spec.unwrap();
    assert_eq!(spec.node_name.as_deref(), Some(node.as_str()));
    let affinity = serde_json::to_string(&spec.affinity).unwrap();
    assert!(
        affinity.contains(&format!(
            r#"{{"key":"metadata.name","operator":"In","values":["{node}"]}}"#
        )),
        "{affinity}"
    );
    assert_eq!(spec.restart_policy.as_deref(), Some("Never"));
    assert_eq!(spec.containers.len(), 1);
    Ok(())
}

#[tokio::test]
async fn spec_changes_reach_the_workload_but_pinger_target_edits_do_not() -> Result<()> {
    let (ns, c) = setup("op-upd").await;
    let mesh = || PingerBuilder::new("mesh");
    let d = || DebuggerBuilder::new("d").pinger("mesh");
    apply_yaml(&ns.name, &mesh().ping(&["127.0.0.1"]).yaml())?;
    apply_yaml(&ns.name, &d().yaml())?;
    wait_exists::<DaemonSet>(&c, &ns.name, "d", "DaemonSet d").await?;

    apply_yaml(&ns.name, &d().memory("96Mi").subnet("blue").yaml())?;
    wait_for(WAIT, "memory and subnet reach the template", || async {
        let ds: DaemonSet = get(&c, &ns.name, "d").await?.context("ds")?;
        let tpl = ds.spec.clone().unwrap().template;
        let mem = request(&template_of(&ds), "memory");
        let subnet = tpl
            .metadata
            .and_then(|m| m.annotations)
            .unwrap_or_default()
            .get("ovn.kubernetes.io/logical_switch")
            .cloned();
        Ok(mem == "96Mi" && subnet.as_deref() == Some("blue"))
    })
    .await?;
    wait_event(&c, &ns.name, "d", "Normal", "WorkloadUpdated").await?;
    let settled: DaemonSet = get(&c, &ns.name, "d").await?.unwrap();

    apply_yaml(&ns.name, &mesh().ping(&["127.0.0.2"]).interval(9).yaml())?;
    let hourly = d().memory("96Mi").subnet("blue").run_at("@hourly");
    apply_yaml(&ns.name, &hourly.yaml())?;
    wait_status(&c, &ns.name, "d", "runAt change reconciled", |s| {
        s.next_run_at.is_some()
    })
    .await?;
    let after: DaemonSet = get(&c, &ns.name, "d").await?.unwrap();
    assert_eq!(
        after.metadata.generation, settled.metadata.generation,
        "Pinger targets and runAt leave the template alone"
    );

    let image = "ghcr.io/kube-combo/combo-pinger:v0.1.1";
    apply_yaml(&ns.name, &mesh().image(image).ping(&["127.0.0.2"]).yaml())?;
    wait_for(WAIT, "pinger image reaches the template", || async {
        let ds: DaemonSet = get(&c, &ns.name, "d").await?.context("ds")?;
        Ok(template_of(&ds).containers[1].image.as_deref() == Some(image))
    })
    .await
}

#[tokio::test]
async fn a_pod_whose_spec_changes_is_replaced() -> Result<()> {
    let (ns, c) = setup("op-repl").await;
    let p = || DebuggerBuilder::new("p").workload(WorkloadType::Pod);
    apply_yaml(&ns.name, &p().cpu("100m").yaml())?;
    let first = eventually::<Pod>(&c, &ns.name, "p").await?.metadata.uid;
    apply_yaml(&ns.name, &p().cpu("150m").yaml())?;
    wait_for(WAIT, "a new Pod p with the new cpu", || async {
        let Some(p) = get::<Pod>(&c, &ns.name, "p").await? else {
            return Ok(false);
        };
        let cpu = limit(&p.spec.clone().unwrap(), "cpu");
        Ok(p.metadata.uid != first && cpu == "150m")
    })
    .await
}
