//! In-cluster mode: follow the Pinger, its Debugger's peer pods and the
//! gateway; probe; publish Events and metrics. The API server being away
//! never stops probing or the process.

mod peers;
mod publish;
#[cfg(test)]
mod stand_in;
mod table;
mod table_watch;
mod watch;

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use combo_api::keys::{self, env};
use combo_api::{Pinger, PingerSpec};
use k8s_openapi::api::core::v1::Pod;
use kube::{Api, Client};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::engine::{Engine, Report, Settings};
use crate::events::{Gate, Policy};
use crate::metrics::{self, Metrics};
use crate::probe::{dns::Dns, icmp::Icmp, Probers};
use crate::targets::Target;
use crate::{gateway, ExitCode};
use peers::{Knobs, Me};
use publish::Publisher;
use watch::Update;

/// Where the pod runs, from the environment the operator sets.
struct Environment {
    namespace: String,
    pod: String,
    debugger: Option<String>,
    ip: Option<IpAddr>,
}

impl Environment {
    fn read() -> Self {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let namespace = var(env::POD_NAMESPACE)
            .or_else(|| {
                std::fs::read_to_string("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
                    .ok()
                    .map(|s| s.trim().to_string())
            })
            .unwrap_or_else(|| "default".into());
        Environment {
            namespace,
            pod: var(env::POD_NAME).unwrap_or_else(|| {
                std::env::var("HOSTNAME").unwrap_or_else(|_| keys::BIN_PINGER.into())
            }),
            debugger: var(env::DEBUGGER_NAME),
            ip: var(env::POD_IP).and_then(|s| s.parse().ok()),
        }
    }
}

/// What the pinger knows of its world.
#[derive(Default)]
struct State {
    spec: Option<PingerSpec>,
    peers: BTreeMap<String, IpAddr>,
}

/// Runs until SIGINT/SIGTERM.
pub async fn run(pinger: String) -> ExitCode {
    let envr = Environment::read();
    tracing::info!(pinger = %pinger, namespace = %envr.namespace, pod = %envr.pod, debugger = ?envr.debugger, "following the Pinger");
    let client = connect().await;
    let (tx, mut updates) = mpsc::channel(256);
    tokio::spawn(watch::pinger(
        Api::<Pinger>::namespaced(client.clone(), &envr.namespace),
        pinger.clone(),
        tx.clone(),
    ));
    if let Some(debugger) = &envr.debugger {
        tokio::spawn(table_watch::peers(
            client.clone(),
            envr.namespace.clone(),
            keys::debugger_selector(debugger),
            tx.clone(),
        ));
    }
    tokio::spawn(watch::own_pod(
        Api::<Pod>::namespaced(client.clone(), &envr.namespace),
        envr.pod.clone(),
        tx.clone(),
    ));
    drop(tx);

    let me = Me {
        pod: envr.pod.clone(),
        ip: envr.ip,
    };
    let icmp = Arc::new(Icmp::default());
    let default_spec = PingerSpec::default();
    let mut knobs = Knobs::from(&default_spec);
    let (report_tx, mut reports) = mpsc::unbounded_channel();
    let mut engine = Engine::new(settings(&knobs, &icmp), report_tx, seed(&envr.pod), None);
    let metrics = Arc::new(Metrics::default());
    let mut server: Option<(u16, JoinHandle<()>)> = None;
    let mut gate: Gate<Target> = Gate::new(Policy::default());
    let mut publisher = Publisher::new(client, &envr.namespace, &envr.pod);
    let mut state = State::default();
    let mut last_invalid: Vec<String> = Vec::new();
    let stop = crate::shutdown_signal();
    tokio::pin!(stop);

    loop {
        tokio::select! {
            Some(update) = updates.recv() => {
                match update {
                    Update::Spec(spec) => {
                        if spec.is_none() {
                            tracing::warn!(pinger = %pinger, "the Pinger is gone; probing stops until it is back");
                        }
                        state.spec = spec.map(|s| *s);
                    }
                    Update::Peers(all) => state.peers = all,
                    Update::Peer(name, Some(ip)) => { state.peers.insert(name, ip); }
                    Update::Peer(name, None) => { state.peers.remove(&name); }
                    Update::SelfUid(uid) => { publisher.set_uid(uid); continue; }
                }
                let spec = state.spec.clone().unwrap_or_else(|| PingerSpec { peers: false, ..PingerSpec::default() });
                let gateways = if spec.gateway { gateway::default_gateways() } else { Vec::new() };
                let set = peers::desired(&spec, &state.peers, &me, &gateways);
                if set.invalid != last_invalid {
                    for bad in &set.invalid {
                        tracing::warn!(pinger = %pinger, error = %bad, "target skipped");
                    }
                    last_invalid = set.invalid.clone();
                }
                let new_knobs = Knobs::from(&spec);
                if new_knobs != knobs {
                    tracing::info!(?new_knobs, "settings changed");
                    engine.set_settings(settings(&new_knobs, &icmp));
                    knobs = new_knobs;
                }
                let targets = if state.spec.is_some() { set.targets } else { Default::default() };
                for gone in engine.set_targets(&targets) {
                    metrics.forget(&gone);
                    gate.forget(&gone);
                    publisher.forget(&gone);
                }
                icmp.retain(|ip| targets.iter().any(|t| t.host == combo_api::pinger::Host::Ip(*ip)));
                // No endpoint until the Pinger is known: its port is not yet.
                let serving = state.spec.as_ref().map_or(PingerSpec { enable_metrics: false, ..spec }, |s| s.clone());
                server = reconcile_server(server, &serving, &metrics).await;
            }
            Some(report) = reports.recv() => {
                on_report(&report, &metrics, &mut gate, &mut publisher);
            }
            () = &mut stop => {
                tracing::info!("stopping");
                return ExitCode::Passed;
            }
        }
    }
}

fn on_report(
    report: &Report,
    metrics: &Metrics,
    gate: &mut Gate<Target>,
    publisher: &mut Publisher,
) {
    metrics.record(report);
    if report.stats.passed {
        tracing::debug!(target = %report.target, round = report.round, stats = %report.stats, "round passed");
    } else {
        tracing::warn!(
            target = %report.target,
            round = report.round,
            loss_percent = report.stats.loss_percent,
            stats = %report.stats,
            why = report.stats.failure(report.limits).unwrap_or_default(),
            "round failed"
        );
    }
    if let Some(decision) = gate.observe(&report.target, report.stats.passed, Instant::now()) {
        publisher.publish(decision, report);
    }
}

/// A client, retried until the configuration is there; never gives up.
async fn connect() -> Client {
    loop {
        match Client::try_default().await {
            Ok(c) => return c,
            Err(e) => {
                tracing::error!(error = %e, "no Kubernetes client configuration; retrying in 10s");
                tokio::time::sleep(Duration::from_secs(10)).await;
            }
        }
    }
}

fn settings(k: &Knobs, icmp: &Arc<Icmp>) -> Settings {
    Settings {
        interval: k.interval,
        timeout: k.timeout,
        count: k.count,
        limits: k.limits,
        probers: Probers {
            icmp: icmp.clone(),
            dns: Arc::new(Dns::new(&k.dns_servers, k.timeout)),
        },
    }
}

/// Starts, moves or stops the metrics endpoint to match the spec.
async fn reconcile_server(
    current: Option<(u16, JoinHandle<()>)>,
    spec: &PingerSpec,
    metrics: &Arc<Metrics>,
) -> Option<(u16, JoinHandle<()>)> {
    let want = spec.enable_metrics.then_some(spec.metrics_port);
    match current {
        Some((port, h)) if Some(port) == want => Some((port, h)),
        other => {
            if let Some((_, h)) = other {
                h.abort();
            }
            let port = want?;
            let addr = SocketAddr::from(([0, 0, 0, 0], port));
            match metrics::serve(addr, metrics.clone()).await {
                Ok(h) => Some((port, h)),
                Err(e) => {
                    tracing::error!(error = %e, source = ?std::error::Error::source(&e), "metrics endpoint not started");
                    None
                }
            }
        }
    }
}

/// A per-pod seed for the target phases, so pods of one Debugger differ.
fn seed(pod: &str) -> u64 {
    combo_api::hash::fnv1a(&[pod.as_bytes()])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pods_phase_seed_stays_the_value_released_versions_computed() {
        // The seed places every target's rounds; a changed one moves them all.
        assert_eq!(seed("node-check-00000"), 0xb7e3_2d33_477c_7b1d);
        assert_eq!(seed(""), 0xcbf2_9ce4_8422_2325);
    }
}
