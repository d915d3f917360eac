//! The operator takes no ConfigMap it did not make: a user's ConfigMap
//! named as a Debugger's summary keeps its data and gets no owner, also
//! after a run was due and after the Debugger is deleted.

use std::time::Duration;

use anyhow::{ensure, Context as _, Result};
use combo_api::Debugger;
use combo_e2e::fixtures::DebuggerBuilder;
use combo_e2e::{apply_yaml, wait_for};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{DeleteParams, ListParams};
use kube::{Api, Client, ResourceExt};

use crate::helpers::{config_map, setup, wait_invalid, WAIT};

/// A ConfigMap of the user's with one entry.
struct UserData {
    name: &'static str,
    key: &'static str,
    value: &'static str,
}

impl UserData {
    fn yaml(&self) -> String {
        config_map(self.name, &[(self.key, self.value)])
    }
}

const PRECIOUS: UserData = UserData {
    name: "precious",
    key: "important",
    value: "do-not-lose",
};

/// Named like the Debugger's own scripts ConfigMap.
const SCRIPTS: UserData = UserData {
    name: "scripts",
    key: "disk.one.sh",
    value: "#!/bin/sh\necho ok one",
};

/// Fails unless the user's ConfigMap `data` is there with only its entry
/// and no owner.
async fn assert_untouched(c: &Client, ns: &str, data: &UserData) -> Result<()> {
    let cm = Api::<ConfigMap>::namespaced(c.clone(), ns)
        .get(data.name)
        .await
        .with_context(|| format!("the user's ConfigMap {} is gone", data.name))?;
    let entries = cm.data.clone().unwrap_or_default();
    ensure!(
        entries.len() == 1 && entries.get(data.key).map(|v| v.trim_end()) == Some(data.value),
        "ConfigMap {} was changed: {entries:?}",
        cm.name_any()
    );
    ensure!(
        cm.metadata
            .owner_references
            .as_ref()
            .is_none_or(|o| o.is_empty()),
        "ConfigMap {} was given owners: {:?}",
        cm.name_any(),
        cm.metadata.owner_references
    );
    Ok(())
}

#[tokio::test]
async fn a_users_config_map_named_as_the_summary_is_refused_and_left_untouched() -> Result<()> {
    let (ns, c) = setup("truth-own").await;
    let ns = ns.name.as_str();
    apply_yaml(ns, &PRECIOUS.yaml())?;
    let now = combo_api::RunId::now().rfc3339();
    apply_yaml(
        ns,
        &DebuggerBuilder::new("taker")
            .summary(PRECIOUS.name)
            .run_at(&now)
            .yaml(),
    )?;
    wait_invalid(
        &c,
        ns,
        "taker",
        &["\"precious\"", "not owned by this Debugger"],
    )
    .await?;
    // A run would have been due at once: nothing may have been written since.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_untouched(&c, ns, &PRECIOUS).await?;

    // The summary named like the Debugger's own scripts ConfigMap.
    apply_yaml(ns, &SCRIPTS.yaml())?;
    apply_yaml(
        ns,
        &DebuggerBuilder::new("same")
            .scripts(SCRIPTS.name)
            .summary(SCRIPTS.name)
            .run_at(&now)
            .yaml(),
    )?;
    wait_invalid(&c, ns, "same", &["summary would replace the scripts"]).await?;
    assert_untouched(&c, ns, &SCRIPTS).await?;

    // Deleting the Debuggers deletes nothing of the user's.
    let dbgs = Api::<Debugger>::namespaced(c.clone(), ns);
    for name in ["taker", "same"] {
        dbgs.delete(name, &DeleteParams::foreground()).await?;
    }
    wait_for(WAIT, "both Debuggers gone", || async {
        Ok(dbgs.list(&ListParams::default()).await?.items.is_empty())
    })
    .await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    for data in [&PRECIOUS, &SCRIPTS] {
        assert_untouched(&c, ns, data).await?;
    }
    Ok(())
}

/// The controller of ConfigMap `name`: the owning Debugger's name.
async fn summary_owner(c: &Client, ns: &str, name: &str) -> Result<Option<String>> {
    let cm = Api::<ConfigMap>::namespaced(c.clone(), ns)
        .get_opt(name)
        .await?;
    Ok(cm.and_then(|cm| {
        cm.metadata
            .owner_references
            .unwrap_or_default()
            .into_iter()
            .find(|o| o.controller == Some(true) && o.kind == "Debugger")
            .map(|o| o.name)
    }))
}

/// Whether Debugger `name` has a DaemonSet that is not being deleted.
async fn has_workload(c: &Client, ns: &str, name: &str) -> Result<bool> {
    let ds = Api::<k8s_openapi::api::apps::v1::DaemonSet>::namespaced(c.clone(), ns)
        .get_opt(name)
        .await?;
    Ok(ds.is_some_and(|d| d.metadata.deletion_timestamp.is_none()))
}

#[tokio::test]
async fn two_debuggers_naming_one_summary_one_runs_and_the_other_takes_it_once_free() -> Result<()>
{
    let (ns, c) = setup("truth-shared").await;
    let ns = ns.name.as_str();
    // Both in one apply: neither sees the other's ConfigMap before it
    // writes its workload.
    let both = combo_e2e::fixtures::documents(&[
        DebuggerBuilder::new("alpha").summary("shared").yaml(),
        DebuggerBuilder::new("beta").summary("shared").yaml(),
    ]);
    apply_yaml(ns, &both)?;
    wait_for(WAIT, "one of them controls ConfigMap shared", || async {
        Ok(summary_owner(&c, ns, "shared").await?.is_some())
    })
    .await?;
    let owner = summary_owner(&c, ns, "shared").await?.unwrap_or_default();
    let other = if owner == "alpha" { "beta" } else { "alpha" };
    wait_invalid(&c, ns, other, &["\"shared\"", "not owned by this Debugger"]).await?;
    wait_for(WAIT, &format!("{other} has no workload"), || async {
        Ok(!has_workload(&c, ns, other).await?)
    })
    .await?;
    ensure!(
        has_workload(&c, ns, &owner).await?,
        "{owner} lost its workload"
    );
    // The plugin does not show the owner's summary as the other's.
    let out = combo_e2e::kubectl_combo(&["summary", other, "-n", ns]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    ensure!(
        out.status.code() == Some(1)
            && stderr.contains(&format!("is the summary of Debugger \"{owner}\"")),
        "exit {:?}: {stderr}",
        out.status.code()
    );
    ensure!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    tokio::time::sleep(Duration::from_secs(5)).await;
    ensure!(
        !has_workload(&c, ns, other).await?,
        "{other} got a workload back while the name is taken"
    );

    // The owner goes, its summary with it: the other takes the name by
    // itself, woken by the ConfigMap's deletion (nothing else changes).
    Api::<Debugger>::namespaced(c.clone(), ns)
        .delete(&owner, &DeleteParams::background())
        .await?;
    wait_for(
        Duration::from_secs(60),
        &format!("{other} controls ConfigMap shared"),
        || async { Ok(summary_owner(&c, ns, "shared").await?.as_deref() == Some(other)) },
    )
    .await?;
    wait_for(
        Duration::from_secs(30),
        &format!("{other} is no longer InvalidSpec"),
        || async {
            Ok(crate::helpers::ready(&c, ns, other)
                .await?
                .is_some_and(|(_, reason, _)| reason != "InvalidSpec"))
        },
    )
    .await?;
    wait_for(
        Duration::from_secs(30),
        &format!("{other} has a workload"),
        || async { has_workload(&c, ns, other).await },
    )
    .await?;
    Ok(())
}
