//! The Debuggers' alerts as a user with Kubernetes discovery runs them:
//! Debian's `vmagent` finds the operator's pods through
//! `kubernetes_sd_configs` (role `pod`) on the test API server, as the
//! ServiceAccount of `config/prometheus/scraper_rbac.yaml` with a token of
//! its own, scrapes them as `config/prometheus/operator_podmonitor.yaml`
//! says and writes to a single-node VictoriaMetrics, on which `vmalert`
//! evaluates the shipped rules: a node whose script fails fires
//! `ComboInspectionFailing` for that node, its recovery resolves it, and
//! deleting the Debugger removes its series
//! (docs/testing.md#kubernetes-discovery-end-to-end). With the pinger's
//! PodMonitor too, a mesh's series keep the peer's node in `node` and the
//! prober's in `prober_node`, and each query docs/pinger.md prints answers
//! for the right nodes.

#[path = "vmagent/results.rs"]
mod results;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, ensure, Context as _, Result};
use combo_api::Category;
use combo_e2e::fixtures::{documents, DebuggerBuilder, PingerBuilder};
use combo_e2e::prometheus::{with_for, Alert};
use combo_e2e::runs::{flag_scripts, run_failing_on, wait_pods};
use combo_e2e::victoria::{kubernetes_job, ApiAccess, Victoria};
use combo_e2e::{
    apply_yaml, client, kubectl, kubectl_ok, namespace, operator_pods, repo_root, wait_for,
    workload_nodes, OPERATOR_NAMESPACE,
};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
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

/// config/prometheus/scraper_rbac.yaml applied; deleted when the last
/// test holding it drops it (the tests of this file run at once, and each
/// scraper's token goes with the ServiceAccount).
struct ScraperRbac(PathBuf);

/// Tests holding a [`ScraperRbac`].
static SCRAPER_USERS: std::sync::Mutex<usize> = std::sync::Mutex::new(0);

impl ScraperRbac {
    fn apply() -> Result<Self> {
        let mut users = SCRAPER_USERS.lock().unwrap_or_else(|e| e.into_inner());
        let file = repo_root().join("config/prometheus/scraper_rbac.yaml");
        kubectl_ok(&["apply", "-f", file.to_str().context("path")?])?;
        *users += 1;
        Ok(ScraperRbac(file))
    }
}

impl Drop for ScraperRbac {
    fn drop(&mut self) {
        let mut users = SCRAPER_USERS.lock().unwrap_or_else(|e| e.into_inner());
        *users -= 1;
        if *users > 0 {
            return;
        }
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
    stack_of(client, &["config/prometheus/operator_podmonitor.yaml"]).await
}

/// The stack of [`stack`] with a job per PodMonitor of `monitors`.
async fn stack_of(client: &Client, monitors: &[&str]) -> Result<Victoria> {
    let dir = Victoria::dir()?;
    let access = ApiAccess::service_account(client, OPERATOR_NAMESPACE, SCRAPER, &dir).await?;
    let mut jobs = Vec::new();
    for m in monitors {
        let monitor = std::fs::read_to_string(repo_root().join(m))?;
        jobs.push(kubernetes_job(&monitor, &access, "2s")?);
    }
    let mut config: serde_yaml::Value = serde_yaml::from_str("global: {scrape_interval: 2s}")?;
    config["scrape_configs"] = serde_yaml::Value::Sequence(jobs);
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
    // vmalert lists an alert as firing before its notifier has sent it.
    let reached = |sent: &[serde_json::Value]| {
        sent.iter().any(|a| {
            a["labels"]["alertname"] == ALERT
                && a["labels"]["namespace"] == ns
                && a["labels"]["node"] == failing
                && a["labels"]["category"] == "custom"
        })
    };
    wait_for(
        WAIT,
        &format!("{ALERT} for {failing} at the notifier"),
        || async { Ok(reached(&vm.notified())) },
    )
    .await
    .with_context(|| format!("vmalert notified {:?}", vm.notified()))?;

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

/// The PromQL queries docs/pinger.md prints in code spans: those of a
/// pinger metric grouped `by (...)`.
fn documented_queries() -> Result<Vec<String>> {
    let page = std::fs::read_to_string(repo_root().join("docs/pinger.md"))?;
    let mut fenced = false;
    let prose: Vec<&str> = page
        .lines()
        .filter(|l| {
            if l.trim_start().starts_with("```") {
                fenced = !fenced;
                return false;
            }
            !fenced
        })
        .collect();
    let text = prose.join(" ");
    let queries: Vec<String> = text
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|span| span.contains("combo_pinger_") && span.contains(" by ("))
        .map(|span| span.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    ensure!(
        !queries.is_empty(),
        "docs/pinger.md prints no query by node"
    );
    Ok(queries)
}

/// A documented query of the shape `sum by (L, ...) (METRIC{SELECTOR})`,
/// optionally `== 0` inside, read as its parts.
struct SumBy {
    by: Vec<String>,
    metric: String,
    selector: Vec<(String, String)>,
    zero: bool,
}

fn read_query(q: &str) -> Result<SumBy> {
    let rest = q
        .strip_prefix("sum by (")
        .with_context(|| format!("the test reads `sum by (...) (...)` only, not {q}"))?;
    let (by, rest) = rest.split_once(')').context("by (...)")?;
    let inner = rest
        .trim()
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .with_context(|| format!("the test cannot read {q}"))?
        .trim();
    let (inner, zero) = match inner.strip_suffix("== 0") {
        Some(i) => (i.trim(), true),
        None => (inner, false),
    };
    let (metric, selector) = match inner.split_once('{') {
        Some((m, sel)) => (m, sel.strip_suffix('}').context("a selector's }")?),
        None => (inner, ""),
    };
    let selector = selector
        .split(',')
        .filter(|m| !m.trim().is_empty())
        .map(|m| {
            let (k, v) = m.split_once('=').context("label=\"value\"")?;
            ensure!(
                !k.ends_with('!') && !v.starts_with('~'),
                "the test reads = matchers only: {q}"
            );
            Ok((k.trim().to_string(), v.trim().trim_matches('"').to_string()))
        })
        .collect::<Result<_>>()?;
    Ok(SumBy {
        by: by.split(',').map(|l| l.trim().to_string()).collect(),
        metric: metric.trim().to_string(),
        selector,
        zero,
    })
}

/// `q` limited to namespace `ns` (other tests' pingers may be scraped too).
fn in_namespace(q: &SumBy, ns: &str) -> String {
    let mut sel: Vec<String> = q
        .selector
        .iter()
        .map(|(k, v)| format!("{k}=\"{v}\""))
        .collect();
    sel.push(format!("namespace=\"{ns}\""));
    format!(
        "sum by ({}) ({}{{{}}}{})",
        q.by.join(", "),
        q.metric,
        sel.join(","),
        if q.zero { " == 0" } else { "" }
    )
}

#[tokio::test]
async fn vmagent_scrapes_the_pingers_with_the_peers_node_and_the_probers_and_the_documented_queries_answer_for_them(
) -> Result<()> {
    const MESH: &str = "vm-mesh";
    combo_e2e::install_for_cluster();
    let nodes = workload_nodes();
    assert!(nodes.len() >= 2, "the test needs two nodes: {nodes:?}");
    let ns = namespace("vmagent-mesh").await;
    let client = client().await;
    let _rbac = ScraperRbac::apply()?;
    wait_for(WAIT, "the scraper's binding in effect", || async {
        Ok(scraper_may("list", "pods"))
    })
    .await?;
    let vm = stack_of(
        &client,
        &[
            "config/prometheus/operator_podmonitor.yaml",
            "config/prometheus/podmonitor.yaml",
        ],
    )
    .await?;
    // One peer each (maxPeers 1): a node has as many probers as chose it,
    // not one per prober, so the peer's node and the prober's differ in the answers.
    apply_yaml(
        &ns.name,
        &documents(&[
            PingerBuilder::new(MESH)
                .rounds(2, 500, 2)
                .peers(true)
                .max_peers(1)
                .min_probers(1)
                .gateway(false)
                .metrics(8080)
                .yaml(),
            DebuggerBuilder::new(NAME).pinger(MESH).yaml(),
        ]),
    )?;
    wait_pods(&client, &ns.name, NAME).await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns.name);
    let lp = ListParams::default().labels(&combo_api::keys::debugger_selector(NAME));
    // pod -> node and pod IP -> node, from the API server.
    let (mut node_of_pod, mut node_of_ip) = (BTreeMap::new(), BTreeMap::new());
    for p in pods.list(&lp).await? {
        let node = p
            .spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .unwrap_or_default();
        for ip in p
            .status
            .as_ref()
            .and_then(|s| s.pod_ips.clone())
            .unwrap_or_default()
        {
            node_of_ip.insert(ip.ip.clone(), node.clone());
        }
        node_of_pod.insert(p.name_any(), node);
    }
    let raw = format!(
        r#"combo_pinger_target_up{{namespace="{}",kind="icmp"}}"#,
        ns.name
    );
    wait_for(WAIT, "a peer series from every pinger", || async {
        let series = vm.vector(&raw)?;
        let probers: BTreeSet<&str> = series
            .iter()
            .filter(|(l, _)| l.contains_key("node"))
            .filter_map(|(l, _)| l.get("pod").map(String::as_str))
            .collect();
        Ok(probers.len() == node_of_pod.len())
    })
    .await
    .with_context(|| format!("vmagent's targets: {}", vm.targets().unwrap_or_default()))?;

    // Each series: `node` is the peer's node, `prober_node` the prober's.
    let series: Vec<_> = vm
        .vector(&raw)?
        .into_iter()
        .filter(|(l, _)| l.contains_key("node"))
        .collect();
    for (labels, _) in &series {
        let (target, pod) = (&labels["target"], &labels["pod"]);
        assert_eq!(
            labels.get("node"),
            node_of_ip.get(target),
            "series of {pod} to {target}: node is not the peer's node ({labels:?})"
        );
        assert_eq!(
            labels.get("prober_node"),
            node_of_pod.get(pod),
            "series of {pod} to {target}: prober_node is not the prober's node ({labels:?})"
        );
        assert!(!labels.contains_key("exported_node"), "{labels:?}");
    }

    // Each documented query answers what its series say (read at one
    // instant each: a round between the two reads may change a value, so a
    // few tries).
    for q in documented_queries()? {
        let parsed = read_query(&q)?;
        ensure!(parsed.by.iter().any(|l| l == "node"), "{q} is not by node");
        let mut tries = 0;
        loop {
            tries += 1;
            match query_answers_its_series(&vm, &q, &parsed, &ns.name, &nodes) {
                Ok(n) => {
                    println!("{q}: {n} series, each for a peer's node");
                    break;
                }
                Err(e) if tries < 5 => {
                    println!("{q}: {e:#}; again");
                    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
                }
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}

/// The answer of the documented query `q` in `ns` is its series summed as
/// it says, and each `node` it names is a workload node; the number of
/// series it answers.
fn query_answers_its_series(
    vm: &Victoria,
    q: &str,
    parsed: &SumBy,
    ns: &str,
    nodes: &[String],
) -> Result<usize> {
    let mut want: BTreeMap<Vec<String>, f64> = BTreeMap::new();
    for (labels, value) in vm.vector(&format!(r#"{}{{namespace="{ns}"}}"#, parsed.metric))? {
        if !parsed
            .selector
            .iter()
            .all(|(k, v)| labels.get(k) == Some(v))
            || (parsed.zero && value != 0.0)
            || !labels.contains_key("node")
        {
            continue;
        }
        let key = parsed
            .by
            .iter()
            .map(|l| labels.get(l).cloned().unwrap_or_default())
            .collect();
        *want.entry(key).or_default() += value;
    }
    let got: BTreeMap<Vec<String>, f64> = vm
        .vector(&in_namespace(parsed, ns))?
        .into_iter()
        .filter(|(l, _)| l.contains_key("node"))
        .map(|(l, v)| {
            (
                parsed
                    .by
                    .iter()
                    .map(|b| l.get(b).cloned().unwrap_or_default())
                    .collect(),
                v,
            )
        })
        .collect();
    if got != want {
        bail!("{q}: answers {got:?}, its series say {want:?}");
    }
    for key in got.keys() {
        let node = &key[parsed.by.iter().position(|l| l == "node").unwrap_or(0)];
        ensure!(nodes.contains(node), "{q}: node {node} is no workload node");
    }
    Ok(got.len())
}
