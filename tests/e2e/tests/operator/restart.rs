//! An operator restart: the new operator reconciles, and writes nothing for
//! a Debugger that has not changed.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{bail, Context as _, Result};
use combo_api::Debugger;
use combo_e2e::fixtures::DebuggerBuilder;
use combo_e2e::{apply_yaml, kubectl_ok, wait_for};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::rbac::v1::Role;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Client;

use crate::helpers::{
    get, running_operator_pods, setup, wait_all_pods_ready, wait_exists, OPERATOR_NS, WAIT,
};

/// resourceVersions of everything the operator writes for Debugger `name`.
async fn versions(c: &Client, ns: &str, name: &str) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    let rv = |kind: &str, m: &ObjectMeta| {
        (
            kind.to_string(),
            m.resource_version.clone().unwrap_or_default(),
        )
    };
    let d: Debugger = get(c, ns, name).await?.context("debugger")?;
    out.extend([rv("Debugger", &d.metadata)]);
    let ds: DaemonSet = get(c, ns, name).await?.context("ds")?;
    out.extend([rv("DaemonSet", &ds.metadata)]);
    let cm: ConfigMap = get(c, ns, &format!("{name}-summary"))
        .await?
        .context("cm")?;
    out.extend([rv("ConfigMap", &cm.metadata)]);
    let role: Role = get(c, ns, &format!("kube-combo-workload.{name}"))
        .await?
        .context("role")?;
    out.extend([rv("Role", &role.metadata)]);
    Ok(out)
}

fn operator_pod() -> Result<String> {
    let out = running_operator_pods("{.items[*].metadata.name}")?;
    match out.split_whitespace().collect::<Vec<_>>()[..] {
        [one] => Ok(one.to_string()),
        _ => bail!("expected one running operator pod, got {out:?}"),
    }
}

#[tokio::test]
async fn an_operator_restart_changes_no_object() -> Result<()> {
    let (ns, c) = setup("op-rst").await;
    apply_yaml(&ns.name, &DebuggerBuilder::new("steady").cpu("100m").yaml())?;
    wait_all_pods_ready(&c, &ns.name, "steady", "steady is ready").await?;
    // Let the last status write land before taking the snapshot.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let before = versions(&c, &ns.name, "steady").await?;

    let old = operator_pod()?;
    kubectl_ok(&["delete", "pod", "-n", OPERATOR_NS, &old, "--wait=true"])?;
    wait_for(WAIT, "a new operator pod runs", || async {
        Ok(operator_pod().is_ok_and(|p| p != old))
    })
    .await?;
    // Prove the new operator is reconciling: a new Debugger gets its workload.
    apply_yaml(&ns.name, &DebuggerBuilder::new("probe").cpu("100m").yaml())?;
    let reconciles = "the new operator reconciles";
    wait_exists::<DaemonSet>(&c, &ns.name, "probe", reconciles).await?;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let after = versions(&c, &ns.name, "steady").await?;
    assert_eq!(
        before, after,
        "a restart writes nothing for an unchanged Debugger"
    );
    Ok(())
}
