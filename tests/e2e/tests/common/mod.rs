//! Helpers of the runner and report tests: scripts, Debuggers, runs.

#![allow(dead_code, reason = "each test file uses a different subset")]

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Result;
use combo_api::{NodeSummary, RunId};
use combo_e2e::{apply_yaml, install_operator, wait_for, workload_nodes};
#[allow(unused_imports, reason = "each test file uses a different subset")]
pub use combo_e2e::{set_run_at, summaries, wait_run_within};
use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use kube::{Api, Client, ResourceExt};

pub const WAIT: Duration = Duration::from_secs(120);

/// The scripts ConfigMap: `disk.planned.sh` fails one disk item on every
/// node, `hello.sh` runs in `custom`.
pub fn scripts_configmap(name: &str, planned_message: &str) -> String {
    format!(
        r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: {name}
data:
  disk.planned.sh: |
    #!/bin/sh
    echo "err broken {planned_message} on $NODE_NAME"
  hello.sh: |
    #!/bin/sh
    echo "ok hello-$CATEGORY"
"#
    )
}

pub fn debugger_yaml(name: &str, scripts: &str, run_at: &str) -> String {
    format!(
        r#"apiVersion: kubecombo.io/v1
kind: Debugger
metadata:
  name: {name}
spec:
  workloadType: daemonset
  enableConfigMap: true
  configMap: {scripts}
  categories: [disk, custom]
  scriptTimeoutSeconds: 20
  errlogRetention: 3
  runAt: "{run_at}"
"#
    )
}

pub fn now_rfc3339() -> String {
    RunId::now().rfc3339()
}

/// Waits until every node's key records `run_at`.
pub async fn wait_run(
    c: &Client,
    ns: &str,
    cm: &str,
    run_at: &str,
) -> Result<BTreeMap<String, NodeSummary>> {
    wait_run_within(c, ns, cm, run_at, WAIT).await
}

/// node -> pod name of the Debugger's Running pods.
pub async fn pods_by_node(c: &Client, ns: &str, name: &str) -> Result<BTreeMap<String, String>> {
    let api: Api<Pod> = Api::namespaced(c.clone(), ns);
    let lp = ListParams::default().labels(&combo_api::keys::debugger_selector(name));
    Ok(api
        .list(&lp)
        .await?
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
        .filter_map(|p| Some((p.spec.as_ref()?.node_name.clone()?, p.name_any())))
        .collect())
}

pub async fn wait_pods(c: &Client, ns: &str, name: &str) -> Result<BTreeMap<String, String>> {
    let n = workload_nodes().len();
    wait_for(WAIT, "a Running pod per node", || async {
        Ok(pods_by_node(c, ns, name).await?.len() == n)
    })
    .await?;
    pods_by_node(c, ns, name).await
}

/// Makes the scripts ConfigMap and an idle DaemonSet Debugger; returns its pods.
pub async fn setup(c: &Client, ns: &str, name: &str) -> Result<BTreeMap<String, String>> {
    install_operator();
    apply_yaml(ns, &scripts_configmap(&format!("{name}-scripts"), "v1"))?;
    apply_yaml(ns, &debugger_yaml(name, &format!("{name}-scripts"), ""))?;
    wait_pods(c, ns, name).await
}
