//! Specs the operator refuses: each is reported (a `Ready=False` condition
//! and a Warning Event) and leaves the workload as it was until fixed.

use anyhow::{Context as _, Result};
use combo_api::{Debugger, Pinger};
use combo_e2e::fixtures::{DebuggerBuilder, PingerBuilder};
use combo_e2e::{apply_yaml, events, wait_for};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::ConfigMap;

use crate::helpers::{
    eventually, get, limit, pinger_ready, setup, template_of, wait_condition, wait_event,
    wait_exists, wait_present, wait_ready_reason, wait_status, WAIT,
};

#[tokio::test]
async fn missing_pinger_reports_pinger_not_found_and_recovers_when_it_appears() -> Result<()> {
    let (ns, c) = setup("op-inv").await;
    apply_yaml(&ns.name, &DebuggerBuilder::new("d").pinger("later").yaml())?;
    wait_condition(&c, &ns.name, "d", "False", "PingerNotFound").await?;
    wait_event(&c, &ns.name, "d", "Warning", "PingerNotFound").await?;
    assert!(get::<DaemonSet>(&c, &ns.name, "d").await?.is_none());

    let later = PingerBuilder::new("later").ping(&["127.0.0.1"]);
    apply_yaml(&ns.name, &later.yaml())?;
    let appears = "DaemonSet after the Pinger appears";
    wait_exists::<DaemonSet>(&c, &ns.name, "d", appears).await?;
    wait_ready_reason(
        &c,
        &ns.name,
        "d",
        "Ready no longer PingerNotFound",
        |_, r| r != "PingerNotFound",
    )
    .await
}

#[tokio::test]
async fn a_pinger_target_the_schema_lets_through_is_reported_as_invalid_spec() -> Result<()> {
    let (ns, c) = setup("op-pgr").await;
    let mesh = PingerBuilder::new("mesh")
        .ping(&["10.0.0.300", "127.0.0.1"])
        .tcp_ping(&["127.0.0.1:80"]);
    apply_yaml(&ns.name, &mesh.yaml())?;
    wait_for(WAIT, "Pinger mesh Ready=False InvalidSpec", || async {
        let p: Option<Pinger> = get(&c, &ns.name, "mesh").await?;
        Ok(p.and_then(|p| pinger_ready(&p)).is_some_and(|(s, r, m)| {
            s == "False" && r == "InvalidSpec" && m.contains("10.0.0.300")
        }))
    })
    .await?;
    wait_for(WAIT, "Warning InvalidSpec on Pinger mesh", || async {
        let fields = "involvedObject.name=mesh,involvedObject.kind=Pinger,reason=InvalidSpec";
        let list = events(&c, &ns.name, fields).await?;
        Ok(list.iter().any(|e| e.type_.as_deref() == Some("Warning")))
    })
    .await?;

    let fixed = PingerBuilder::new("mesh").ping(&["10.0.0.30", "127.0.0.1"]);
    apply_yaml(&ns.name, &fixed.yaml())?;
    wait_for(WAIT, "Pinger mesh Ready=True after the fix", || async {
        let p: Option<Pinger> = get(&c, &ns.name, "mesh").await?;
        Ok(p.is_some_and(|p| {
            pinger_ready(&p).is_some_and(|(s, r, _)| s == "True" && r == "TargetsValid")
                && p.status.as_ref().map(|s| s.observed_generation) == p.metadata.generation
        }))
    })
    .await
}

#[tokio::test]
async fn invalid_spec_keeps_the_workload_untouched_until_fixed() -> Result<()> {
    let (ns, c) = setup("op-fix").await;
    let d = || DebuggerBuilder::new("d");
    apply_yaml(&ns.name, &d().cpu("100m").yaml())?;
    wait_exists::<DaemonSet>(&c, &ns.name, "d", "DaemonSet d").await?;
    let before: DaemonSet = get(&c, &ns.name, "d").await?.unwrap();

    apply_yaml(&ns.name, &d().cpu("200m").node_name("node-1").yaml())?;
    wait_condition(&c, &ns.name, "d", "False", "InvalidSpec").await?;
    wait_event(&c, &ns.name, "d", "Warning", "InvalidSpec").await?;
    let during: DaemonSet = get(&c, &ns.name, "d").await?.unwrap();
    assert_eq!(
        during.metadata.generation, before.metadata.generation,
        "workload untouched"
    );

    apply_yaml(&ns.name, &d().cpu("200m").run_at("61 * * * *").yaml())?;
    wait_status(&c, &ns.name, "d", "bad cron reported", |s| {
        s.conditions.iter().any(|c| c.message.contains("runAt"))
    })
    .await?;

    apply_yaml(&ns.name, &d().cpu("200m").yaml())?;
    wait_for(WAIT, "fixed spec reaches the DaemonSet", || async {
        let ds: DaemonSet = get(&c, &ns.name, "d").await?.context("ds")?;
        Ok(limit(&template_of(&ds), "cpu") == "200m")
    })
    .await
}

#[tokio::test]
async fn a_summary_name_taken_by_another_debugger_is_an_invalid_spec() -> Result<()> {
    let (ns, c) = setup("op-taken").await;
    // The first Debugger makes it. (One made by hand is never adopted:
    // tests/e2e/tests/truth.rs.)
    apply_yaml(
        &ns.name,
        &DebuggerBuilder::new("first").summary("shared").yaml(),
    )?;
    let first: Debugger = eventually(&c, &ns.name, "first").await?;
    let controller_of = |cm: Option<ConfigMap>| {
        cm.and_then(|cm| cm.metadata.owner_references)
            .into_iter()
            .flatten()
            .find(|o| o.controller == Some(true))
            .map(|o| o.uid)
    };
    wait_for(WAIT, "shared made by first", || async {
        Ok(controller_of(get(&c, &ns.name, "shared").await?) == first.metadata.uid)
    })
    .await?;

    apply_yaml(
        &ns.name,
        &DebuggerBuilder::new("second").summary("shared").yaml(),
    )?;
    wait_condition(&c, &ns.name, "second", "False", "InvalidSpec").await?;
    let second: Debugger = get(&c, &ns.name, "second").await?.context("second")?;
    let message = second
        .status
        .iter()
        .flat_map(|s| &s.conditions)
        .map(|c| c.message.clone())
        .collect::<String>();
    assert!(
        message.contains("ConfigMap \"shared\" already exists and is not owned"),
        "{message}"
    );
    assert!(
        get::<DaemonSet>(&c, &ns.name, "second").await?.is_none(),
        "no workload for a Debugger whose summary is taken"
    );
    assert_eq!(
        controller_of(get(&c, &ns.name, "shared").await?),
        first.metadata.uid,
        "the ConfigMap stays with its owner"
    );

    apply_yaml(
        &ns.name,
        &DebuggerBuilder::new("second").summary("own").yaml(),
    )?;
    let fixed = "fixed: second's workload and summary";
    wait_present(&c, &ns.name, ("second", "own"), (true, true), fixed).await
}
