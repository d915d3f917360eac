//! What the pingers of the Debugger [`PROBING`] saw of an outage
//! (docs/testing.md, "Fault tests"): before it, every pinger probing its
//! target up and quiet about it; after it, the failed probes counted and
//! the episode recorded.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{ensure, Result};
use combo_api::keys;
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::{Client, ResourceExt};

use super::{live_pods, EVENT_GAP, METRICS_PORT, PROBING};
use crate::{events, running_and_ready, scrape, wait_for, workload_nodes};

/// The running, ready pods of the pods in `ns` that `labels` selects.
async fn ready_pods(c: &Client, ns: &str, labels: &str) -> Result<Vec<Pod>> {
    let mut pods = live_pods(c, ns, labels).await?;
    pods.retain(running_and_ready);
    Ok(pods)
}

/// The pinger's TCP probes of `target` that failed, and whether the target
/// is up, from its metrics.
fn tcp_probes(text: &str, target: SocketAddr) -> (f64, Option<f64>) {
    let value = |l: &str| l.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok());
    let series = format!(r#"kind="tcp",target="{target}""#);
    let failed = text
        .lines()
        .filter(|l| l.starts_with("combo_pinger_probes_total{") && l.contains(&series))
        .filter(|l| !l.contains(r#"result="ok""#))
        .filter_map(value)
        .sum();
    let up = text
        .lines()
        .find(|l| l.starts_with(&format!("combo_pinger_target_up{{{series}}}")))
        .and_then(value);
    (failed, up)
}

/// The Events on `pod` (of `reason`, if given) whose message names
/// `target`.
async fn events_on(
    c: &Client,
    ns: &str,
    pod: &str,
    reason: Option<&str>,
    target: SocketAddr,
) -> Result<Vec<Event>> {
    let mut fields = format!("involvedObject.name={pod}");
    if let Some(reason) = reason {
        fields.push_str(&format!(",reason={reason}"));
    }
    let target = target.to_string();
    let mut found = events(c, ns, &fields).await?;
    found.retain(|e| e.message.as_deref().unwrap_or_default().contains(&target));
    Ok(found)
}

/// UIDs of the `ProbeRecovered` Events on `pod` that name `target`.
async fn recoveries(
    c: &Client,
    ns: &str,
    pod: &str,
    target: SocketAddr,
) -> Result<BTreeSet<String>> {
    Ok(events_on(c, ns, pod, Some("ProbeRecovered"), target)
        .await?
        .into_iter()
        .filter_map(|e| e.metadata.uid)
        .collect())
}

/// What the pinger pods are before an outage: pod name -> (the pod, failed
/// probes so far, ProbeRecovered Events so far).
pub type PingerState = BTreeMap<String, (Pod, f64, BTreeSet<String>)>;

/// What tells whether a pod got an Event about `target`: each such
/// Event's UID with its counts (a repeat patches the series).
async fn target_events(
    c: &Client,
    ns: &str,
    pod: &str,
    target: SocketAddr,
) -> Result<BTreeSet<(String, Option<i32>, Option<i32>)>> {
    Ok(events_on(c, ns, pod, None, target)
        .await?
        .into_iter()
        .map(|e| {
            (
                e.metadata.uid.unwrap_or_default(),
                e.count,
                e.series.and_then(|s| s.count),
            )
        })
        .collect())
}

/// Waits until the target is up in every pinger's metrics and no pinger
/// has recorded an Event about it for [`EVENT_GAP`], and returns their
/// state. A pinger's Events about one target are at least 30 s apart
/// (docs/pinger.md, "The budget"): a recent one (the previous case's
/// recovery) would hold the outage's failure back until the outage is
/// over.
pub async fn pingers_before(c: &Client, ns: &str, target: SocketAddr) -> Result<PingerState> {
    let want = workload_nodes().len();
    let probing = keys::debugger_selector(PROBING);
    let all_up = || async {
        let pods = ready_pods(c, ns, &probing).await?;
        Ok::<_, anyhow::Error>(
            pods.len() == want
                && pods.iter().all(|p| {
                    scrape(p, METRICS_PORT).is_ok_and(|t| tcp_probes(&t, target).1 == Some(1.0))
                }),
        )
    };
    let quiet = std::time::Instant::now();
    loop {
        wait_for(
            Duration::from_secs(180),
            "every pinger probing its target up",
            &all_up,
        )
        .await?;
        let mut seen = BTreeMap::new();
        for pod in ready_pods(c, ns, &probing).await? {
            let name = pod.name_any();
            seen.insert(name.clone(), target_events(c, ns, &name, target).await?);
        }
        tokio::time::sleep(EVENT_GAP).await;
        let mut same = all_up().await?;
        for (name, before) in &seen {
            same &= target_events(c, ns, name, target).await? == *before;
        }
        if same {
            break;
        }
        ensure!(
            quiet.elapsed() < Duration::from_secs(300),
            "the pingers kept recording Events about {target} for 5 minutes before the outage"
        );
    }
    let mut state = PingerState::new();
    for pod in ready_pods(c, ns, &probing).await? {
        let name = pod.name_any();
        let failed = tcp_probes(&scrape(&pod, METRICS_PORT)?, target).0;
        let seen = recoveries(c, ns, &name, target).await?;
        state.insert(name, (pod, failed, seen));
    }
    Ok(state)
}

/// After an outage of `down` during which the target refused: every
/// pinger counted the failed probes and records the episode (a new
/// `ProbeRecovered` Event follows only a failure it reported).
pub async fn pingers_after(
    c: &Client,
    ns: &str,
    target: SocketAddr,
    down: Duration,
    before: &PingerState,
) -> Result<()> {
    for (name, (pod, failed, seen)) in before {
        // One probe a second, each refused: at least half the outage's.
        let least = failed + (down.as_secs() / 2) as f64;
        let now = tcp_probes(&scrape(pod, METRICS_PORT)?, target).0;
        ensure!(
            now >= least,
            "the pinger of {name} counted {} failed probes during the outage, expected at least {}",
            now - failed,
            least - failed
        );
        eprintln!(
            "outage: pinger of {name} counted {} failed probes of {target} in a {down:?} outage",
            now - failed
        );
        wait_for(
            Duration::from_secs(180),
            &format!("a new ProbeRecovered Event for {target} on {name}"),
            || async { Ok(!recoveries(c, ns, name, target).await?.is_subset(seen)) },
        )
        .await?;
    }
    Ok(())
}
