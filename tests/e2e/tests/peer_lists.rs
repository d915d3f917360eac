//! Peer lists end to end (docs/operator.md, "Peer lists"): with `maxPeers: 1`
//! on the simulated nodes, the operator applies to every pinger pod the
//! rendezvous choice among the other ready pods, each pinger probes exactly
//! its list, a replaced pod moves the lists that held it, and no pinger
//! watches the Debugger's pods while it has a list. `maxPeers: 0` (all)
//! makes each pinger watch them again.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

use anyhow::{Context as _, Result};
use combo_api::keys;
use combo_api::peers::{self, rendezvous};
use combo_e2e::fixtures::{DebuggerBuilder, PingerBuilder};
use combo_e2e::{
    apply_yaml, client, install_operator, kubectl_ok, namespace, nodes, running_and_ready, scrape,
    wait_for,
};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{DeleteParams, ListParams};
use kube::{Api, Client, ResourceExt};

const WAIT: Duration = Duration::from_secs(180);
const METRICS_PORT: u16 = 9467;

/// The rendezvous choice alone (`minProbers: 0`): what coverage adds to
/// it is the operator's unit tests' and the coverage benchmark's
/// (docs/pinger.md#coverage).
fn pinger_yaml(max_peers: u32) -> String {
    PingerBuilder::new("lists")
        .metrics(METRICS_PORT)
        .rounds(1, 500, 1)
        .peers(true)
        .max_peers(max_peers)
        .min_probers(0)
        .yaml()
}

fn debugger() -> String {
    DebuggerBuilder::new("lists-check").pinger("lists").yaml()
}

/// The Debugger's pods that are not terminating, by name.
async fn pods(client: &Client, ns: &str) -> Result<BTreeMap<String, Pod>> {
    let list = Api::<Pod>::namespaced(client.clone(), ns)
        .list(&ListParams::default().labels(&keys::debugger_selector("lists-check")))
        .await?;
    Ok(list
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .map(|p| (p.name_any(), p))
        .collect())
}

fn ip_of(pod: &Pod) -> Option<IpAddr> {
    pod.status.as_ref()?.pod_ip.as_deref()?.parse().ok()
}

/// Each pod's list as the rendezvous choice over the other ready pods
/// gives it, and as the pod carries it; equal when the operator is done.
fn lists(pods: &BTreeMap<String, Pod>, max: usize) -> (Vec<String>, Vec<String>) {
    let ready: Vec<&str> = pods
        .values()
        .filter(|p| running_and_ready(p) && ip_of(p).is_some())
        .map(|p| p.metadata.name.as_deref().unwrap_or_default())
        .collect();
    let want = pods
        .keys()
        .map(|me| {
            let ips: Vec<IpAddr> = rendezvous::choose(me, ready.iter().copied(), max)
                .into_iter()
                .filter_map(|n| ip_of(&pods[n]))
                .collect();
            format!("{me}: {}", peers::format(&ips))
        })
        .collect();
    let have = pods
        .iter()
        .map(|(me, p)| {
            let value = p.annotations().get(keys::ANNOTATION_PEERS).cloned();
            format!("{me}: {}", value.unwrap_or_else(|| "<none>".into()))
        })
        .collect();
    (want, have)
}

/// The peer addresses among `candidates` a pinger has a `target_up`
/// series for, sorted (as a parsed list is).
fn probed_peers(pod: &Pod, candidates: &[IpAddr]) -> Result<Vec<IpAddr>> {
    let text = scrape(pod, METRICS_PORT)?;
    let mut probed: Vec<IpAddr> = candidates
        .iter()
        .filter(|ip| {
            // A peer's series also carries its node: `,node="..."}`.
            text.contains(&format!(
                r#"combo_pinger_target_up{{kind="icmp",target="{ip}""#
            ))
        })
        .copied()
        .collect();
    probed.sort_unstable();
    probed.dedup();
    Ok(probed)
}

/// Watches of Pods the API server holds open now.
fn pod_watchers() -> Result<f64> {
    let text = kubectl_ok(&["get", "--raw", "/metrics"])?;
    text.lines()
        .find(|l| {
            l.starts_with(r#"apiserver_registered_watchers{group="",kind="Pod",version="v1"}"#)
        })
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
        .context("apiserver_registered_watchers of Pods")
}

/// The fewest Pod watches over 5 s: other clients' watches come and go
/// (a watch being replaced counts twice for a moment, more so after the
/// API server came back from an outage), and a baseline read at such a
/// moment would hide the pingers' own.
async fn fewest_pod_watchers() -> Result<f64> {
    let mut fewest = pod_watchers()?;
    for _ in 0..5 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        fewest = fewest.min(pod_watchers()?);
    }
    Ok(fewest)
}

#[tokio::test]
async fn the_operator_lists_each_pods_peers_and_the_pingers_probe_exactly_them() -> Result<()> {
    install_operator();
    let ns = namespace("lists").await;
    let client = client().await;
    let node_count = nodes().len();
    apply_yaml(&ns.name, &pinger_yaml(1))?;
    apply_yaml(&ns.name, &debugger())?;

    let settled = |what: &'static str| {
        let (client, ns) = (client.clone(), ns.name.clone());
        async move {
            wait_for(WAIT, what, || async {
                let pods = pods(&client, &ns).await?;
                let ready = pods.values().filter(|p| running_and_ready(p)).count();
                let (want, have) = lists(&pods, 1);
                Ok(ready == node_count && want == have)
            })
            .await?;
            pods(&client, &ns).await
        }
    };
    let before = settled("every pod ready with the rendezvous choice as its list").await?;
    let (_, have) = lists(&before, 1);
    eprintln!("lists: {have:?}");
    let all_ips: Vec<IpAddr> = before.values().filter_map(ip_of).collect();

    // Each pinger probes exactly the one address of its list.
    for pod in before.values() {
        let listed = peers::parse(&pod.annotations()[keys::ANNOTATION_PEERS]).0;
        assert_eq!(listed.len(), 1, "{}: {listed:?}", pod.name_any());
        assert_ne!(Some(listed[0]), ip_of(pod), "a pod never lists itself");
        wait_for(WAIT, "the pinger probing exactly its list", || async {
            Ok(probed_peers(pod, &all_ips)? == listed)
        })
        .await?;
    }

    // A pod that is chosen by someone is replaced: the lists that held it
    // move to a ready pod, and its probers stop probing its old address.
    let (victim, prober) = before
        .values()
        .find_map(|p| {
            let listed = peers::parse(&p.annotations()[keys::ANNOTATION_PEERS]).0;
            let chosen = before
                .values()
                .find(|q| ip_of(q) == listed.first().copied())?;
            Some((chosen.clone(), p.clone()))
        })
        .context("a pod chosen by another")?;
    let old_ip = ip_of(&victim).context("victim IP")?;
    Api::<Pod>::namespaced(client.clone(), &ns.name)
        .delete(&victim.name_any(), &DeleteParams::default())
        .await?;
    let after = settled("the lists chosen again after a pod was replaced").await?;
    assert!(
        !after.contains_key(&victim.name_any()),
        "the old pod is gone"
    );
    let now_ips: Vec<IpAddr> = after.values().filter_map(ip_of).collect();
    let probers_now = &after[&prober.name_any()];
    let listed = peers::parse(&probers_now.annotations()[keys::ANNOTATION_PEERS]).0;
    // The new pod may get the old one's address back on its node:
    // probed_peers drops the repeat.
    let mut candidates = now_ips.clone();
    candidates.push(old_ip);
    wait_for(WAIT, "the prober following its new list", || async {
        Ok(probed_peers(probers_now, &candidates)? == listed)
    })
    .await?;

    // With a list, no pinger watches the Debugger's pods; with maxPeers 0
    // each one does, and stops again when lists come back.
    let with_lists = fewest_pod_watchers().await?;
    apply_yaml(&ns.name, &pinger_yaml(0))?;
    wait_for(
        WAIT,
        "a pod watch more per pinger with maxPeers 0",
        || async { Ok(pod_watchers()? >= with_lists + node_count as f64) },
    )
    .await?;
    let cleared = pods(&client, &ns.name).await?;
    wait_for(WAIT, "the lists cleared with maxPeers 0", || async {
        Ok(pods(&client, &ns.name).await?.values().all(|p| {
            p.annotations()
                .get(keys::ANNOTATION_PEERS)
                .is_none_or(String::is_empty)
        }))
    })
    .await?;
    for pod in cleared.values() {
        let mut others: Vec<IpAddr> = now_ips
            .iter()
            .copied()
            .filter(|ip| Some(*ip) != ip_of(pod))
            .collect();
        others.sort_unstable();
        wait_for(WAIT, "every other pod probed with maxPeers 0", || async {
            Ok(probed_peers(pod, &now_ips)? == others)
        })
        .await?;
    }
    apply_yaml(&ns.name, &pinger_yaml(1))?;
    wait_for(WAIT, "the pod watches gone again with lists", || async {
        Ok(pod_watchers()? <= with_lists)
    })
    .await?;
    settled("the lists back").await?;
    Ok(())
}
