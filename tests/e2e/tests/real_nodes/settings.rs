//! A Debugger's `checkSettings` on real nodes: a threshold reaches the
//! scripts of every node, and a name the checks do not read is refused.

use anyhow::Result;
use combo_api::{Category, Debugger};
use combo_e2e::fixtures::DebuggerBuilder;
use combo_e2e::runs::now_rfc3339;
use combo_e2e::{
    apply_yaml, client, install_from_registry, namespace, pods_on_every_real_node,
    real_cluster_or_skip, wait_run_within,
};
use kube::Api;

use crate::helpers::WAIT;

/// The `Ready` condition of Debugger `name`: status, reason and message.
async fn ready(dbgs: &Api<Debugger>, name: &str) -> Result<Option<(String, String, String)>> {
    let d = dbgs.get(name).await?;
    Ok(d.status.and_then(|s| {
        s.conditions
            .into_iter()
            .find(|c| c.type_ == "Ready")
            .map(|c| (c.status, c.reason, c.message))
    }))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_disk_threshold_below_the_nodes_usage_turns_its_disk_red_and_an_unknown_setting_is_refused(
) -> Result<()> {
    let test = "a_disk_threshold_below_the_nodes_usage_turns_its_disk_red_and_an_unknown_setting_is_refused";
    if !real_cluster_or_skip(test) {
        return Ok(());
    }
    install_from_registry();
    let ns = namespace("real-set").await;
    let c = client().await;
    let dbgs: Api<Debugger> = Api::namespaced(c.clone(), &ns.name);

    // A name no check reads (a typo of DISK_USAGE_MAX_PERCENT) is refused
    // at apply, as an unknown field of the CRD's checkSettings.
    let typo = DebuggerBuilder::new("typo")
        .categories(&[Category::Disk])
        .check_setting("DISK_USAGE_MAX", "50");
    let refused = apply_yaml(&ns.name, &typo.yaml())
        .expect_err("an unknown setting was applied")
        .to_string();
    assert!(
        refused.contains("unknown field") && refused.contains("DISK_USAGE_MAX"),
        "{refused}"
    );

    // Any filesystem in use is above 0%: with that threshold every node's
    // mounts are red, with the message of the disk check.
    let run_at = now_rfc3339();
    let full = DebuggerBuilder::new("full")
        .enable_sys(true)
        .categories(&[Category::Disk])
        .script_timeout(30)
        .check_setting("DISK_USAGE_MAX_PERCENT", "0")
        .run_at(&run_at);
    apply_yaml(&ns.name, &full.yaml())?;
    pods_on_every_real_node(&c, WAIT, &ns.name, "full").await?;
    let summary = wait_run_within(&c, &ns.name, "full-summary", &run_at, WAIT).await?;
    for (node, s) in &summary {
        let red: Vec<_> = s
            .failed()
            .filter(|(cat, item, msg)| {
                *cat == "disk" && item.starts_with('/') && msg.contains("limit 0%")
            })
            .collect();
        assert!(
            !red.is_empty(),
            "{node}: a mount's usage is over DISK_USAGE_MAX_PERCENT 0: {:?}",
            s.failed().collect::<Vec<_>>()
        );
    }
    let (status, reason, _) = ready(&dbgs, "full").await?.unwrap_or_default();
    assert!(
        !(status == "False" && reason == "InvalidSpec"),
        "a valid setting is not refused"
    );
    Ok(())
}
