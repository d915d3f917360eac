//! What a Debugger owns: deleted with it, written again when deleted alone.

use anyhow::Result;
use combo_e2e::fixtures::DebuggerBuilder;
use combo_e2e::{apply_yaml, kubectl_ok, wait_for};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::ConfigMap;

use crate::helpers::{get, setup, wait_present, WAIT};

#[tokio::test]
async fn deleting_the_debugger_removes_its_workload_and_summary() -> Result<()> {
    let (ns, c) = setup("op-del").await;
    let gone = DebuggerBuilder::new("gone").summary("gone-results");
    apply_yaml(&ns.name, &gone.yaml())?;
    let both = ("gone", "gone-results");
    wait_present(&c, &ns.name, both, (true, true), "workload and summary").await?;
    kubectl_ok(&["delete", "dbg", "gone", "-n", &ns.name])?;
    let collected = "garbage collection of DaemonSet and ConfigMap";
    wait_present(&c, &ns.name, both, (false, false), collected).await
}

#[tokio::test]
async fn a_workload_and_summary_deleted_by_hand_come_back() -> Result<()> {
    let (ns, c) = setup("op-back").await;
    apply_yaml(&ns.name, &DebuggerBuilder::new("back").cpu("100m").yaml())?;
    let uid = |m: Option<DaemonSet>| m.and_then(|d| d.metadata.uid);
    let both = ("back", "back-summary");
    wait_present(&c, &ns.name, both, (true, true), "workload and summary").await?;
    let first = uid(get::<DaemonSet>(&c, &ns.name, "back").await?);
    // At once, while the operator's record of its own write is fresh.
    kubectl_ok(&["delete", "ds/back", "cm/back-summary", "-n", &ns.name])?;
    wait_for(WAIT, "a new DaemonSet and ConfigMap", || async {
        let now = uid(get::<DaemonSet>(&c, &ns.name, "back").await?);
        Ok(now.is_some()
            && now != first
            && get::<ConfigMap>(&c, &ns.name, "back-summary")
                .await?
                .is_some())
    })
    .await
}
