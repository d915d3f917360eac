//! Observability as users run it: a real Prometheus scrapes the pinger pods
//! selected as the shipped PodMonitor selects them, loads the shipped alert
//! rules, and fires the target and peer alerts while a peer is cut off, then
//! resolves them once it is back (docs/testing.md, "Prometheus end to end").

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use anyhow::{Context as _, Result};
use combo_api::{keys, WorkloadType};
use combo_e2e::fixtures::{documents, DebuggerBuilder, PingerBuilder};
use combo_e2e::pod_sd::PodDiscovery;
use combo_e2e::prometheus::{scrape_job, with_for, Alert, Prometheus};
use combo_e2e::{
    apply_yaml, client, install_operator, namespace, nodes, pod_netns, repo_root,
    running_and_ready, wait_for, NftTable,
};
use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use kube::{Api, Client, ResourceExt};

const WAIT: Duration = Duration::from_secs(180);
const TARGET_ALERT: &str = "ComboPingerTargetFailing";
const PEER_ALERT: &str = "ComboPingerPeerUnreachable";
/// The Pinger's default `maxPeers` (docs/reference.md).
const MAX_PEERS: usize = 20;

/// The Pinger of the mesh, as shipped: the defaults (interval 5 s, three
/// probes, metrics on port 8080, which the PodMonitor scrapes), peers on.
const MESH: &str = include_str!("../../../config/samples/pinger_peers.yaml");

/// One more prober of `ip`: a Debugger of one pod on `node` whose Pinger
/// lists the address. The peer alert needs at least 3 failing probers, and on
/// a 3-node cluster a pod has only 2 peers.
fn watcher(ip: &str, node: &str) -> String {
    documents(&[
        PingerBuilder::new("watch").peers(false).ping(&[ip]).yaml(),
        DebuggerBuilder::new("watch")
            .workload(WorkloadType::Pod)
            .node_name(node)
            .pinger("watch")
            .yaml(),
    ])
}

async fn ready_pods(client: &Client, ns: &str, debugger: &str) -> Result<Vec<Pod>> {
    let pods = Api::<Pod>::namespaced(client.clone(), ns)
        .list(&ListParams::default().labels(&keys::debugger_selector(debugger)))
        .await?;
    Ok(pods.into_iter().filter(running_and_ready).collect())
}

fn pod_ip(pod: &Pod) -> Result<String> {
    pod.status
        .as_ref()
        .and_then(|s| s.pod_ip.clone())
        .context("pod IP")
}

/// The Prometheus configuration: short intervals, and the one scrape job
/// derived from config/prometheus/podmonitor.yaml, its pods from `sd_file`.
fn config(sd_file: &std::path::Path) -> Result<serde_yaml::Value> {
    let monitor = std::fs::read_to_string(repo_root().join("config/prometheus/podmonitor.yaml"))?;
    let job = scrape_job(&monitor, sd_file, "2s")?;
    let mut config: serde_yaml::Value =
        serde_yaml::from_str("global: {scrape_interval: 2s, evaluation_interval: 1s}")?;
    config["scrape_configs"] = serde_yaml::Value::Sequence(vec![job]);
    Ok(config)
}

/// Alerts of the namespace named `name` about `target`, by state, as the
/// set of probing pods (`pod` label; empty for the peer alert).
fn alerts_of(
    alerts: &[Alert],
    ns: &str,
    name: &str,
    target: &str,
) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for a in alerts.iter().filter(|a| {
        a.label("alertname") == name && a.label("namespace") == ns && a.label("target") == target
    }) {
        out.entry(a.state.clone())
            .or_default()
            .insert(a.label("pod").to_string());
    }
    out
}

#[tokio::test]
async fn prometheus_fires_the_shipped_alerts_while_a_peer_is_cut_off_and_resolves_them_after(
) -> Result<()> {
    install_operator();
    let ns = namespace("prometheus").await;
    let client = client().await;
    let node_names = nodes();
    // The peer alert wants three probers failing: two peers and the watcher.
    assert!(
        node_names.len() >= 3,
        "the test needs three simulated nodes"
    );
    apply_yaml(&ns.name, MESH)?;
    wait_for(WAIT, "a ready pinger pod on every node", || async {
        Ok(ready_pods(&client, &ns.name, "peers").await?.len() == node_names.len())
    })
    .await?;
    let mesh = ready_pods(&client, &ns.name, "peers").await?;
    let on_node = |node: &str| {
        mesh.iter()
            .find(|p| p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(node))
            .context("a mesh pod on the node")
    };
    let cut = on_node(&node_names[0])?;
    let cut_ip = pod_ip(cut)?;
    apply_yaml(&ns.name, &watcher(&cut_ip, &node_names[1]))?;
    wait_for(WAIT, "the watching pod ready", || async {
        Ok(ready_pods(&client, &ns.name, "watch").await?.len() == 1)
    })
    .await?;
    let watch_pod = ready_pods(&client, &ns.name, "watch").await?.remove(0);

    // The shipped rules with every `for:` shortened to 10 s (they say 1 to 15
    // minutes), so that the test takes about a minute: the expressions,
    // labels and annotations are the shipped ones.
    let shipped = std::fs::read_to_string(repo_root().join("config/prometheus/rules.yaml"))?;
    let sd_file = std::env::temp_dir().join(format!("{}-pods.json", ns.name));
    let _discovery = PodDiscovery::start(client.clone(), &ns.name, sd_file.clone()).await?;
    let prometheus = Prometheus::start(config(&sd_file)?, &with_for(&shipped, "10s")?).await?;

    // The selection finds exactly the pinger containers (not the runners),
    // and every prober's every target is up.
    let n = node_names.len();
    let scraped = n + 1;
    let targets = n * (n - 1).min(MAX_PEERS) + 1;
    let q = |expr: &str| expr.replace("NS", &ns.name);
    let seen = std::sync::Mutex::new(String::new());
    wait_for(
        WAIT,
        &format!(
            "Prometheus scraping {scraped} pingers with {targets} targets up and no alert firing"
        ),
        || async {
            let up =
                prometheus.scalar(&q(r#"count(up{namespace="NS",container="pinger"} == 1)"#))?;
            let all = prometheus.scalar(&q(r#"count(up{namespace="NS"})"#))?;
            let ok =
                prometheus.scalar(&q(r#"count(combo_pinger_target_up{namespace="NS"} == 1)"#))?;
            // A round that failed while the pods were starting (or the
            // machine was busy) may leave a pending alert; none may fire.
            let alerts: Vec<(String, String, String)> = prometheus
                .alerts()?
                .iter()
                .filter(|a| a.label("namespace") == ns.name)
                .map(|a| {
                    (
                        a.label("alertname").to_string(),
                        a.label("target").to_string(),
                        a.state.clone(),
                    )
                })
                .collect();
            let quiet = alerts.iter().all(|(_, _, state)| state != "firing");
            *seen.lock().unwrap() =
                format!("pingers up {up:?} of {all:?}, targets up {ok:?}, alerts {alerts:?}");
            Ok(up == Some(scraped as f64)
                && all == Some(scraped as f64)
                && ok == Some(targets as f64)
                && quiet)
        },
    )
    .await
    .with_context(|| format!("last seen: {}", seen.lock().unwrap()))?;

    // Its probers, as Prometheus labels them: the watcher and the peers that
    // chose it (all of them up to maxPeers + 1 nodes).
    let probers = prometheus.label_values(
        &q(&format!(
            r#"combo_pinger_target_up{{namespace="NS",target="{cut_ip}"}}"#
        )),
        "pod",
    )?;
    assert!(
        probers.len() >= 3 && probers.contains(&watch_pod.name_any()),
        "probers of {cut_ip}: {probers:?}"
    );

    // The peer is cut off inside its own network namespace.
    let uid = cut.uid().context("pod uid")?;
    let cut_rule = NftTable::cut_off(&pod_netns(&uid), "kc_prometheus_cut")?;
    let firing = std::sync::Mutex::new(Vec::new());
    wait_for(
        WAIT,
        &format!("{TARGET_ALERT} from {probers:?} and {PEER_ALERT} firing for {cut_ip}"),
        || async {
            let alerts = prometheus.alerts()?;
            let target = alerts_of(&alerts, &ns.name, TARGET_ALERT, &cut_ip);
            let peer = alerts_of(&alerts, &ns.name, PEER_ALERT, &cut_ip);
            let done = target.get("firing") == Some(&probers) && peer.contains_key("firing");
            *firing.lock().unwrap() = alerts;
            Ok(done)
        },
    )
    .await?;
    // Only the cut peer is reported unreachable: the others lost one prober
    // (the cut pod, which Prometheus no longer reaches either) at most.
    let others: Vec<Alert> = firing
        .into_inner()
        .unwrap()
        .into_iter()
        .filter(|a| {
            a.label("alertname") == PEER_ALERT
                && a.label("namespace") == ns.name
                && a.label("target") != cut_ip
        })
        .collect();
    assert!(others.is_empty(), "peer alerts for others: {others:?}");

    drop(cut_rule);
    wait_for(
        WAIT,
        &format!("{TARGET_ALERT} and {PEER_ALERT} for {cut_ip} resolved"),
        || async {
            let alerts = prometheus.alerts()?;
            Ok(
                alerts_of(&alerts, &ns.name, TARGET_ALERT, &cut_ip).is_empty()
                    && alerts_of(&alerts, &ns.name, PEER_ALERT, &cut_ip).is_empty(),
            )
        },
    )
    .await?;
    Ok(())
}
