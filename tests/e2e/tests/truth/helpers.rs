//! What the truth tests share: the start of a test, the objects they make,
//! and reading and waiting for a Debugger's Ready condition.

use std::time::Duration;

use anyhow::{Context as _, Result};
use combo_api::{Category, Debugger};
use combo_e2e::fixtures::{ConfigMapBuilder, DebuggerBuilder};
use combo_e2e::{
    apply_yaml, client, install_for_cluster, namespace, real_cluster_or_skip, wait_for,
    TestNamespace,
};
use kube::{Api, Client};

pub const WAIT: Duration = Duration::from_secs(120);

/// Installs the operator (from the local registry's images on real nodes,
/// as the simulated nodes' build otherwise), then makes a client and the
/// test's namespace.
pub async fn setup(prefix: &str) -> (TestNamespace, Client) {
    install_for_cluster();
    let c = client().await;
    let ns = namespace(prefix).await;
    (ns, c)
}

/// [`setup`] on a cluster of real nodes only; `None`, saying why, on
/// another cluster.
pub async fn setup_on_real_nodes(test: &str, prefix: &str) -> Option<(TestNamespace, Client)> {
    if !real_cluster_or_skip(test) {
        return None;
    }
    Some(setup(prefix).await)
}

/// ConfigMap `name` of `data`, each value ending in a newline.
pub fn config_map(name: &str, data: &[(&str, &str)]) -> String {
    data.iter()
        .fold(ConfigMapBuilder::new(name), |cm, (k, v)| {
            cm.entry(k, &format!("{v}\n"))
        })
        .yaml()
}

/// An idle Debugger of the mem category.
pub fn mem_debugger(name: &str) -> String {
    DebuggerBuilder::new(name)
        .categories(&[Category::Mem])
        .yaml()
}

/// Applies ConfigMap `scripts` of `entries`, then Debugger `debugger`
/// running its scripts with a run due now; that run's `runAt`.
pub fn run_scripts_now(
    ns: &str,
    scripts: &str,
    entries: &[(&str, &str)],
    debugger: DebuggerBuilder,
) -> Result<String> {
    apply_yaml(ns, &config_map(scripts, entries))?;
    let now = combo_api::RunId::now().rfc3339();
    apply_yaml(ns, &debugger.scripts(scripts).run_at(&now).yaml())?;
    Ok(now)
}

/// The Ready condition of Debugger `name`: (status, reason, message).
pub async fn ready(c: &Client, ns: &str, name: &str) -> Result<Option<(String, String, String)>> {
    let d = Api::<Debugger>::namespaced(c.clone(), ns)
        .get_opt(name)
        .await?;
    Ok(d.and_then(|d| d.status).and_then(|s| {
        s.conditions
            .into_iter()
            .find(|c| c.type_ == "Ready")
            .map(|c| (c.status, c.reason, c.message))
    }))
}

/// Waits until Debugger `name` is Ready=`status` with `reason`; its message.
pub async fn wait_ready(
    c: &Client,
    ns: &str,
    name: &str,
    status: &str,
    reason: &str,
) -> Result<String> {
    wait_for(WAIT, &format!("{name} Ready={status} {reason}"), || async {
        Ok(ready(c, ns, name)
            .await?
            .is_some_and(|(s, r, _)| s == status && r == reason))
    })
    .await
    .with_context(|| format!("Debugger {ns}/{name}"))?;
    Ok(ready(c, ns, name)
        .await?
        .map(|(_, _, m)| m)
        .unwrap_or_default())
}

/// Waits until Debugger `name` is Ready=False `InvalidSpec` with a
/// message that holds every one of `words`.
pub async fn wait_invalid(c: &Client, ns: &str, name: &str, words: &[&str]) -> Result<()> {
    let message = wait_ready(c, ns, name, "False", "InvalidSpec").await?;
    anyhow::ensure!(words.iter().all(|w| message.contains(w)), "{message}");
    Ok(())
}
