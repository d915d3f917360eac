//! A `pod` Debugger naming a node no node has: its pod waits unscheduled,
//! the condition names the node, and the namespace deletes without force
//! (docs/operator.md, "What a Debugger becomes").

use anyhow::{ensure, Context as _, Result};
use combo_api::{Category, WorkloadType};
use combo_e2e::fixtures::DebuggerBuilder;
use combo_e2e::{apply_yaml, delete_namespace};
use k8s_openapi::api::core::v1::Pod;
use kube::Api;

use crate::helpers::{setup, wait_ready};

#[tokio::test]
async fn a_pod_debugger_on_a_node_no_node_has_waits_unscheduled_and_its_namespace_deletes_without_force(
) -> Result<()> {
    let (test_ns, c) = setup("truth-node-name").await;
    let ns = test_ns.name.as_str();
    apply_yaml(
        ns,
        &DebuggerBuilder::new("lost")
            .workload(WorkloadType::Pod)
            .node_name("no-such-node")
            .categories(&[Category::Mem])
            .yaml(),
    )?;
    let message = wait_ready(&c, ns, "lost", "False", "NoNodesSelected").await?;
    ensure!(
        message.contains("\"no-such-node\"") && message.contains("waits, unscheduled"),
        "the condition does not name the node: {message}"
    );
    let pod = Api::<Pod>::namespaced(c.clone(), ns)
        .get("lost")
        .await
        .context("the Debugger's pod")?;
    let spec = pod.spec.unwrap_or_default();
    ensure!(
        spec.node_name.is_none(),
        "the pod is bound to {:?}",
        spec.node_name
    );
    let phase = pod.status.and_then(|s| s.phase).unwrap_or_default();
    ensure!(phase == "Pending", "the pod is {phase}");
    // No kubelet has to confirm the pod's end: the namespace goes, and
    // its Debugger and pod with it, without --force.
    delete_namespace(ns).await?;
    Ok(())
}
