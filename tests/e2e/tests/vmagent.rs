//! The Debuggers' alerts as a user with Kubernetes discovery runs them:
//! Debian's `vmagent` finds the operator's pods through
//! `kubernetes_sd_configs` (role `pod`) on the test API server, as the
//! ServiceAccount of `config/prometheus/scraper_rbac.yaml` with a token of
//! its own, scrapes them as `config/prometheus/operator_podmonitor.yaml`
//! says and writes to a single-node VictoriaMetrics, on which `vmalert`
//! evaluates the shipped rules: a node whose script fails fires
//! `ComboInspectionFailing` for that node, its recovery resolves it, and
//! deleting the Debugger removes its series
//! (docs/testing.md#kubernetes-discovery-end-to-end).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, Result};
use combo_api::Category;
use combo_e2e::fixtures::{documents, DebuggerBuilder};
use combo_e2e::prometheus::{with_for, Alert};
use combo_e2e::runs::{flag_scripts, run_failing_on, wait_pods};
use combo_e2e::victoria::{kubernetes_job, ApiAccess, Victoria};
use combo_e2e::{
    apply_yaml, client, kubectl, kubectl_ok, namespace, operator_pods, repo_root, wait_for,
    workload_nodes, OPERATOR_NAMESPACE,
};
use kube::{Client, ResourceExt};

const NAME: &str = "vm-check";
const SCRIPTS: &str = "vm-flags";
const WAIT: Duration = Duration::from_secs(180);
const ALERT: &str = "ComboInspectionFailing";
/// The ServiceAccount of config/prometheus/scraper_rbac.yaml.
const SCRAPER: &str = "kube-combo-scraper";

/// Runs the Debugger with `flag.sh` failing on `failing` only, or on none.
async fn run(c: &Client, ns: &str, failing: Option<&str>) -> Result<()> {
    run_failing_on(c, ns, NAME, SCRIPTS, failing.as_slice()).await
}

/// config/prometheus/scraper_rbac.yaml applied; deleted when dropped.
struct ScraperRbac(PathBuf);

impl ScraperRbac {
    fn apply() -> Result<Self> {
        let file = repo_root().join("config/prometheus/scraper_rbac.yaml");
        kubectl_ok(&["apply", "-f", file.to_str().context("path")?])?;
        Ok(ScraperRbac(file))
    }
}

impl Drop for ScraperRbac {
    fn drop(&mut self) {
        if let Some(file) = self.0.to_str() {
            let _ = kubectl(&["delete", "-f", file, "--ignore-not-found", "--wait=false"]);
        }
    }
}

/// Whether the scraper's ServiceAccount may `verb` `resource` in every
/// namespace (`kubectl auth can-i`).
fn scraper_may(verb: &str, resource: &str) -> bool {
    let user = format!("system:serviceaccount:{OPERATOR_NAMESPACE}:{SCRAPER}");
    let out = kubectl(&["auth", "can-i", verb, resource, "-A", "--as", &user]);
    String::from_utf8_lossy(&out.stdout).trim() == "yes"
}

/// The nodes of `ns`'s alerts `ALERT` in `state`.
fn alerted(alerts: &[Alert], ns: &str, state: &str) -> BTreeSet<String> {
    alerts
        .iter()
        .filter(|a| a.label("alertname") == ALERT && a.label("namespace") == ns)
        .filter(|a| a.state == state)
        .map(|a| a.label("node").to_string())
        .collect()
}

/// vmagent, VictoriaMetrics and vmalert with the shipped operator
/// PodMonitor and rules (every `for:` shortened to 10 s), scraping as the
/// scraper's ServiceAccount.
async fn stack(client: &Client) -> Result<Victoria> {
    let dir = Victoria::dir()?;
    let access = ApiAccess::service_account(client, OPERATOR_NAMESPACE, SCRAPER, &dir).await?;
    let monitor =
        std::fs::read_to_string(repo_root().join("config/prometheus/operator_podmonitor.yaml"))?;
    let mut config: serde_yaml::Value = serde_yaml::from_str("global: {scrape_interval: 2s}")?;
    config["scrape_configs"] =
        serde_yaml::Value::Sequence(vec![kubernetes_job(&monitor, &access, "2s")?]);
    let shipped = std::fs::read_to_string(repo_root().join("config/prometheus/rules.yaml"))?;
    Victoria::start(dir, &config, &with_for(&shipped, "10s")?).await
}

/// Waits until vmagent scrapes every operator pod, which only Kubernetes
/// discovery can have told it of (its pod name and namespace are labels
/// the API server gave).
async fn wait_discovered(client: &Client, vm: &Victoria) -> Result<()> {
    let operators: BTreeSet<String> = operator_pods(client)
        .await?
        .iter()
        .map(|p| p.name_any())
        .collect();
    let up = format!(
        r#"up{{job="kube-combo-operator",namespace="{OPERATOR_NAMESPACE}",container="operator"}} == 1"#
    );
    wait_for(
        WAIT,
        "vmagent scraping the operator pods it discovered",
        || async { Ok(vm.label_values(&up, "pod")? == operators) },
    )
    .await
    .with_context(|| format!("vmagent's targets: {}", vm.targets().unwrap_or_default()))
}

/// The alert fires for the failing node only and reaches the notifier;
/// recovery resolves it.
async fn fires_and_resolves(client: &Client, vm: &Victoria, ns: &str, failing: &str) -> Result<()> {
    run(client, ns, Some(failing)).await?;
    // The Debugger's own namespace, not the operator pod's (honor_labels).
    let failing_nodes = format!(
        r#"combo_operator_debugger_failing_nodes{{namespace="{ns}",debugger="{NAME}",category="custom"}}"#
    );
    wait_for(WAIT, "one failing node in VictoriaMetrics", || async {
        Ok(vm.scalar(&failing_nodes)? == Some(1.0))
    })
    .await?;
    wait_for(
        WAIT,
        &format!("{ALERT} firing for {failing} only"),
        || async {
            let alerts = vm.alerts()?;
            Ok(
                alerted(&alerts, ns, "firing") == BTreeSet::from([failing.to_string()])
                    && alerted(&alerts, ns, "pending").is_empty(),
            )
        },
    )
    .await?;
    let sent = vm.notified();
    assert!(
        sent.iter().any(|a| a["labels"]["alertname"] == ALERT
            && a["labels"]["namespace"] == ns
            && a["labels"]["node"] == failing
            && a["labels"]["category"] == "custom"),
        "vmalert notified {sent:?}"
    );

    run(client, ns, None).await?;
    wait_for(WAIT, &format!("{ALERT} resolved"), || async {
        let alerts = vm.alerts()?;
        Ok(alerted(&alerts, ns, "firing").is_empty()
            && alerted(&alerts, ns, "pending").is_empty()
            && vm.scalar(&failing_nodes)? == Some(0.0))
    })
    .await?;
    let node_series = format!(r#"count(combo_operator_node_failed_items{{namespace="{ns}"}})"#);
    assert_eq!(vm.scalar(&node_series)?, None, "no failing node left");
    Ok(())
}

#[tokio::test]
async fn vmagent_finds_the_operator_by_kubernetes_discovery_and_vmalert_fires_and_resolves_a_failing_node(
) -> Result<()> {
    // This machine reaches the pods of simulated and real nodes alike
    // (tests/e2e/cluster.sh routes their subnets).
    combo_e2e::install_for_cluster();
    let nodes = workload_nodes();
    assert!(nodes.len() >= 2, "the test needs two nodes: {nodes:?}");
    let ns = namespace("vmagent").await;
    let client = client().await;
    let _rbac = ScraperRbac::apply()?;
    // Its rights are the documented ones, and no more.
    wait_for(WAIT, "the scraper's binding in effect", || async {
        Ok(scraper_may("list", "pods") && scraper_may("watch", "endpoints"))
    })
    .await?;
    assert!(!scraper_may("get", "secrets") && !scraper_may("create", "pods"));
    let vm = stack(&client).await?;
    wait_discovered(&client, &vm).await?;

    // A Debugger whose script fails on one node, then on none.
    apply_yaml(
        &ns.name,
        &documents(&[
            flag_scripts(SCRIPTS, &[]),
            DebuggerBuilder::new(NAME)
                .scripts(SCRIPTS)
                .categories(&[Category::Custom])
                .script_timeout(5)
                .yaml(),
        ]),
    )?;
    wait_pods(&client, &ns.name, NAME).await?;
    fires_and_resolves(&client, &vm, &ns.name, &nodes[0]).await?;

    // Deleting the Debugger removes its series.
    kubectl_ok(&["delete", "debugger", NAME, "-n", &ns.name])?;
    let any = format!(
        r#"count({{__name__=~"combo_operator_(debugger|node)_.*",namespace="{}"}})"#,
        ns.name
    );
    wait_for(WAIT, "the Debugger's series gone", || async {
        Ok(vm.scalar(&any)?.is_none())
    })
    .await?;
    Ok(())
}
