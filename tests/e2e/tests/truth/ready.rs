//! Ready is claimed only for what can work: each spec that cannot work is
//! named in the condition, and what follows a change of spec goes with it.

use anyhow::{ensure, Result};
use combo_api::{Category, Debugger, DebuggerReport, Pinger};
use combo_e2e::fixtures::{DebuggerBuilder, PingerBuilder};
use combo_e2e::{apply_yaml, debugger_events, wait_for};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use kube::{Api, Client};

use crate::helpers::{config_map, setup, wait_invalid, wait_ready, WAIT};

#[tokio::test]
async fn ready_is_claimed_only_for_what_can_work() -> Result<()> {
    let (ns, c) = setup("truth-ready").await;
    let ns = ns.name.as_str();
    a_dns_address_is_invalid(&c, ns).await?;

    // No category; a name labels cannot hold.
    apply_yaml(ns, &DebuggerBuilder::new("none").categories(&[]).yaml())?;
    wait_invalid(&c, ns, "none", &["categories is empty"]).await?;
    let long = "l".repeat(70);
    apply_yaml(ns, &DebuggerBuilder::new(&long).run_at("").yaml())?;
    wait_invalid(&c, ns, &long, &["70 characters"]).await?;

    scripts_come_and_go(&c, ns).await?;
    no_node_selected_takes_the_runs_away(&c, ns).await?;

    // DaemonSet to Pod: the Event names the Pod.
    patch_sel(
        &c,
        ns,
        serde_json::json!({"spec": {"workloadType": "pod", "selector": null}}),
    )
    .await?;
    wait_for(WAIT, "an Event 'created Pod sel'", || async {
        Ok(debugger_events(&c, ns, "sel")
            .await?
            .iter()
            .any(|e| e.message.as_deref() == Some("created Pod sel")))
    })
    .await?;
    Ok(())
}

/// A dns entry that is an address: the pinger has nothing to look up.
async fn a_dns_address_is_invalid(c: &Client, ns: &str) -> Result<()> {
    apply_yaml(
        ns,
        &PingerBuilder::new("mesh")
            .dns(&["172.31.0.101", "kubernetes.default"])
            .yaml(),
    )?;
    let pingers = Api::<Pinger>::namespaced(c.clone(), ns);
    wait_for(WAIT, "Pinger mesh InvalidSpec", || async {
        let p = pingers.get("mesh").await?;
        Ok(p.status.is_some_and(|s| {
            s.conditions.iter().any(|c| {
                c.type_ == "Ready"
                    && c.status == "False"
                    && c.reason == "InvalidSpec"
                    && c.message.contains("\"172.31.0.101\" is an address")
            })
        }))
    })
    .await
}

/// Scripts that do not exist, then do, then are deleted.
async fn scripts_come_and_go(c: &Client, ns: &str) -> Result<()> {
    apply_yaml(
        ns,
        &DebuggerBuilder::new("custom")
            .scripts("later")
            .categories(&[Category::Custom])
            .yaml(),
    )?;
    let m = wait_ready(c, ns, "custom", "False", "ConfigMapNotFound").await?;
    ensure!(m.contains("\"later\""), "{m}");
    apply_yaml(
        ns,
        &config_map("later", &[("hello.sh", "#!/bin/sh\necho ok hello")]),
    )?;
    wait_ready(c, ns, "custom", "True", "WorkloadReady").await?;
    Api::<ConfigMap>::namespaced(c.clone(), ns)
        .delete("later", &DeleteParams::default())
        .await?;
    wait_ready(c, ns, "custom", "False", "ConfigMapNotFound").await?;
    Ok(())
}

/// Merge-patches Debugger `sel` with `patch`.
async fn patch_sel(c: &Client, ns: &str, patch: serde_json::Value) -> Result<()> {
    Api::<Debugger>::namespaced(c.clone(), ns)
        .patch("sel", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

/// A run on every node, then a selector that matches none: the reports,
/// the summary's keys and the run fields go with the nodes.
async fn no_node_selected_takes_the_runs_away(c: &Client, ns: &str) -> Result<()> {
    let now = combo_api::RunId::now().rfc3339();
    apply_yaml(
        ns,
        &DebuggerBuilder::new("sel")
            .categories(&[Category::Mem])
            .run_at(&now)
            .yaml(),
    )?;
    let reports = Api::<DebuggerReport>::namespaced(c.clone(), ns);
    wait_for(WAIT, "reports of sel", || async {
        Ok(!reports.list(&ListParams::default()).await?.items.is_empty())
    })
    .await?;
    patch_sel(
        c,
        ns,
        serde_json::json!({"spec": {"selector": {"kubecombo.io/no-such-node": "x"}}}),
    )
    .await?;
    wait_ready(c, ns, "sel", "False", "NoNodesSelected").await?;
    wait_for(
        WAIT,
        "sel's reports, summary keys and run fields gone",
        || async {
            let left = reports.list(&ListParams::default()).await?.items.len();
            let summary = Api::<ConfigMap>::namespaced(c.clone(), ns)
                .get_opt("sel-summary")
                .await?
                .and_then(|cm| cm.data)
                .unwrap_or_default();
            let status = Api::<Debugger>::namespaced(c.clone(), ns)
                .get("sel")
                .await?
                .status
                .unwrap_or_default();
            Ok(left == 0
                && summary.is_empty()
                && status.last_run_at.is_none()
                && status.completed_nodes == 0)
        },
    )
    .await
}
