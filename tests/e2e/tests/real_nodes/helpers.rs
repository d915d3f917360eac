//! What the real-node tests share: the scripts, Pinger and Debugger they
//! apply, the start of a test, and commands in a runner container.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Result;
use combo_api::Category;
use combo_e2e::fixtures::{ConfigMapBuilder, DebuggerBuilder, PingerBuilder};
use combo_e2e::{
    apply_yaml, client, install_from_registry, kubectl_ok, namespace, pods_on_every_real_node,
    real_cluster_or_skip, TestNamespace,
};
use k8s_openapi::api::core::v1::Pod;
use kube::Client;

pub const WAIT: Duration = Duration::from_secs(180);

/// ConfigMap `scripts`: one custom script that passes an item and fails
/// one saying `message` and the node's name.
pub fn scripts_configmap(message: &str) -> String {
    ConfigMapBuilder::new("scripts")
        .entry(
            "planned.sh",
            &format!(
                "#!/bin/sh\necho \"ok reached-$NODE_NAME\"\necho \"err planned {message} on $NODE_NAME\"\n"
            ),
        )
        .yaml()
}

fn debugger_yaml(name: &str, enable_sys: bool, pinger: Option<&str>) -> String {
    let d = DebuggerBuilder::new(name)
        .cpu("100m")
        .memory("128Mi")
        .enable_sys(enable_sys)
        .scripts("scripts")
        .categories(&[
            Category::Disk,
            Category::Net,
            Category::Mem,
            Category::Svc,
            Category::Custom,
        ])
        .script_timeout(30);
    match pinger {
        Some(p) => d.pinger(p),
        None => d,
    }
    .yaml()
}

fn pinger_yaml(name: &str) -> String {
    PingerBuilder::new(name)
        .rounds(1, 500, 1)
        .ping(&[])
        .peers(true)
        .gateway(false)
        .yaml()
}

/// A test under way on the real nodes.
pub struct Started {
    /// The test's namespace, deleted when dropped.
    pub ns: TestNamespace,
    pub c: Client,
    /// node -> the Debugger's Running and Ready pod there.
    pub pods: BTreeMap<String, Pod>,
}

/// On a cluster of real nodes only (`None`, saying why, on another one):
/// installs kube-combo from the local registry, then applies into a fresh
/// namespace `prefix`-… the scripts ConfigMap failing with `message`,
/// Pinger `pinger` if named, and Debugger `debugger` (`enableSys` as
/// `enable_sys`, with that Pinger), and waits for its pod on every real
/// node.
pub async fn start(
    test: &str,
    prefix: &str,
    message: &str,
    debugger: &str,
    enable_sys: bool,
    pinger: Option<&str>,
) -> Result<Option<Started>> {
    if !real_cluster_or_skip(test) {
        return Ok(None);
    }
    install_from_registry();
    let ns = namespace(prefix).await;
    let c = client().await;
    apply_yaml(&ns.name, &scripts_configmap(message))?;
    if let Some(p) = pinger {
        apply_yaml(&ns.name, &pinger_yaml(p))?;
    }
    apply_yaml(&ns.name, &debugger_yaml(debugger, enable_sys, pinger))?;
    let pods = pods_on_every_real_node(&c, WAIT, &ns.name, debugger).await?;
    Ok(Some(Started { ns, c, pods }))
}

/// `sh -c SCRIPT` in the runner container of `pod`.
pub fn in_runner(ns: &str, pod: &str, script: &str) -> Result<String> {
    kubectl_ok(&[
        "exec", "-n", ns, pod, "-c", "runner", "--", "sh", "-c", script,
    ])
}
