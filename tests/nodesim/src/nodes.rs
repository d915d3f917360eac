//! Node registration: what a kubelet does at start and on heartbeat.

use anyhow::Result;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::Client;
use serde_json::json;

use crate::netns::node_ip;

/// Creates `node-<index>` if missing, reports it Ready with an InternalIP and
/// allocatable resources, and removes the not-ready taint it was born with.
pub async fn register(client: &Client, index: u32) -> Result<()> {
    let api: Api<Node> = Api::all(client.clone());
    let name = format!("node-{index}");
    if api.get_opt(&name).await?.is_none() {
        let node: Node = serde_json::from_value(json!({
            "metadata": {"name": name, "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
            }},
            "spec": {"podCIDR": format!("172.30.{index}.0/24")},
        }))?;
        api.create(&PostParams::default(), &node).await?;
    }
    heartbeat(&api, &name, index).await?;
    api.patch(
        &name,
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"taints": null}})),
    )
    .await?;
    Ok(())
}

/// Reports the node Ready now.
pub async fn heartbeat(api: &Api<Node>, name: &str, index: u32) -> Result<()> {
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let resources =
        json!({"cpu": "16", "memory": "64Gi", "pods": "250", "ephemeral-storage": "100Gi"});
    let status = json!({"status": {
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
            "message": "simulated kubelet is posting ready status",
            "lastHeartbeatTime": now, "lastTransitionTime": now}],
        "addresses": [{"type": "InternalIP", "address": node_ip(index)}, {"type": "Hostname", "address": name}],
        "capacity": resources, "allocatable": resources,
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {"kubeletVersion": "v1.20.2", "kubeProxyVersion": "v1.20.2", "operatingSystem": "linux",
            "architecture": "amd64", "containerRuntimeVersion": "sim://1", "kernelVersion": "",
            "osImage": "kube-combo node simulator", "machineID": "", "systemUUID": "", "bootID": ""},
    }});
    // Strategic merge, as a kubelet does: conditions merge by type, so the
    // conditions other writers put on the node stay.
    api.patch_status(name, &PatchParams::default(), &Patch::Strategic(status))
        .await?;
    Ok(())
}
