//! Helpers of the runner and report tests: their scripts, an idle
//! Debugger running them, its pods, its runs.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{bail, Result};
use combo_api::{Category, NodeSummary, RunId};
use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use kube::{Api, Client, ResourceExt};

use crate::fixtures::{ConfigMapBuilder, DebuggerBuilder};
use crate::{apply_yaml, install_operator, set_run_at, wait_for, wait_run_within, workload_nodes};

/// How long these helpers wait.
pub const WAIT: Duration = Duration::from_secs(120);

/// The scripts ConfigMap: `disk.planned.sh` fails one disk item on every
/// node, `hello.sh` runs in `custom`.
pub fn scripts_configmap(name: &str, planned_message: &str) -> ConfigMapBuilder {
    ConfigMapBuilder::new(name)
        .entry(
            "disk.planned.sh",
            &format!("#!/bin/sh\necho \"err broken {planned_message} on $NODE_NAME\"\n"),
        )
        .entry("hello.sh", "#!/bin/sh\necho \"ok hello-$CATEGORY\"\n")
}

/// A DaemonSet Debugger running the disk and custom scripts of ConfigMap
/// `scripts` at `run_at`.
pub fn scripts_debugger(name: &str, scripts: &str, run_at: &str) -> DebuggerBuilder {
    DebuggerBuilder::new(name)
        .scripts(scripts)
        .categories(&[Category::Disk, Category::Custom])
        .script_timeout(20)
        .errlog_retention(3)
        .run_at(run_at)
}

/// Now, as a `runAt`.
pub fn now_rfc3339() -> String {
    RunId::now().rfc3339()
}

/// Now, as a `runAt` later than `previous`: a `runAt` has whole seconds,
/// and a run asked for in the same second as the one before is that run
/// again, already reported (the patch changes nothing).
pub async fn now_after(previous: &str) -> String {
    loop {
        let now = now_rfc3339();
        if now.as_str() > previous {
            return now;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
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

/// Waits for a Running pod of the Debugger on every node; node -> pod.
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
    let scripts = format!("{name}-scripts");
    apply_yaml(ns, &scripts_configmap(&scripts, "v1").yaml())?;
    apply_yaml(ns, &scripts_debugger(name, &scripts, "").yaml())?;
    wait_pods(c, ns, name).await
}

/// ConfigMap `name` holding `flag.sh` (category `custom`): `err flag` on
/// the nodes `failing`, `ok flag` on the others.
pub fn flag_scripts(name: &str, failing: &[&str]) -> String {
    let cases = if failing.is_empty() {
        "__none__".to_string()
    } else {
        failing.join("|")
    };
    let script = format!(
        "#!/bin/sh\ncase \"$NODE_NAME\" in\n  {cases}) echo \"err flag injected on $NODE_NAME\" ;;\n  *) echo \"ok flag\" ;;\nesac\n"
    );
    ConfigMapBuilder::new(name).entry("flag.sh", &script).yaml()
}

/// Writes [`flag_scripts`] `scripts` failing on `failing` and runs Debugger
/// `name` until every node's result shows that script (for at most 2
/// minutes): an edit reaches the pods in seconds on a simulated node, and
/// within the kubelet's sync period on a real one.
pub async fn run_failing_on(
    c: &Client,
    ns: &str,
    name: &str,
    scripts: &str,
    failing: &[&str],
) -> Result<()> {
    apply_yaml(ns, &flag_scripts(scripts, failing))?;
    let until = std::time::Instant::now() + Duration::from_secs(120);
    while std::time::Instant::now() < until {
        tokio::time::sleep(Duration::from_secs(3)).await;
        let run_at = now_rfc3339();
        set_run_at(c, ns, name, &run_at).await?;
        let results = wait_run_within(c, ns, &format!("{name}-summary"), &run_at, WAIT).await?;
        let as_asked = results.iter().all(|(node, s)| {
            let failed = s.failed().any(|(_, item, _)| item == "flag");
            failed == failing.contains(&node.as_str())
        });
        if as_asked {
            return Ok(());
        }
    }
    bail!("flag.sh never failed on exactly {failing:?}")
}
