//! Helpers of the runner and report tests: scripts, Debuggers, runs.

#![allow(dead_code, reason = "each test file uses a different subset")]

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Result;
use combo_api::{Debugger, NodeSummary, RunId};
use combo_e2e::{apply_yaml, install_operator, nodes, wait_for};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{ListParams, Patch, PatchParams};
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

pub async fn set_run_at(c: &Client, ns: &str, name: &str, run_at: &str) -> Result<()> {
    let api: Api<Debugger> = Api::namespaced(c.clone(), ns);
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"spec": {"runAt": run_at}})),
    )
    .await?;
    Ok(())
}

/// node -> summary, from the summary ConfigMap.
pub async fn summaries(c: &Client, ns: &str, cm: &str) -> Result<BTreeMap<String, NodeSummary>> {
    let api: Api<ConfigMap> = Api::namespaced(c.clone(), ns);
    let Some(cm) = api.get_opt(cm).await? else {
        return Ok(BTreeMap::new());
    };
    let mut out = BTreeMap::new();
    for (node, value) in cm.data.unwrap_or_default() {
        out.insert(node, NodeSummary::from_yaml(&value)?);
    }
    Ok(out)
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

/// [`wait_run`] for at most `within`.
pub async fn wait_run_within(
    c: &Client,
    ns: &str,
    cm: &str,
    run_at: &str,
    within: Duration,
) -> Result<BTreeMap<String, NodeSummary>> {
    let want = nodes();
    wait_for(
        within,
        &format!("every node's summary for {run_at}"),
        || async {
            let s = summaries(c, ns, cm).await?;
            Ok(want
                .iter()
                .all(|n| s.get(n).is_some_and(|v| v.run_at == run_at)))
        },
    )
    .await?;
    summaries(c, ns, cm).await
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
    let n = nodes().len();
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
