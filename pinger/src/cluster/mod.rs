//! In-cluster mode: follow the Pinger, the own pod's peer list (or, for
//! an unbounded `maxPeers`, the Debugger's pods) and the gateway; probe;
//! publish Events and metrics. The API server being away never stops
//! probing or the process.

// Public for the tests that build a pod's targets as the pinger does.
pub mod peers;
mod pod_watch;
mod publish;
mod table;
mod table_watch;
mod watch;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use combo_api::keys::{self, env};
use combo_api::{Pinger, PingerSpec};
use k8s_openapi::api::core::v1::Pod;
use kube::{Api, Client};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::engine::{Engine, Settings};
use crate::events::{Gate, Policy};
use crate::metrics::{self, Metrics};
use crate::probe::{dns::Dns, Probers};
use crate::round::Report;
use crate::targets::Target;
use crate::{gateway, ExitCode};
use peers::{Knobs, Known, Me, Pods};
use pod_watch::{next_row, switch_pod_watch, PodWatch};
use publish::Publisher;
use table::Include;
use watch::Update;

/// Where the pod runs, from the environment the operator sets.
struct Environment {
    namespace: String,
    debugger: Option<String>,
    /// Own pod name and addresses, from `POD_NAME`, `POD_IPS` and `POD_IP`.
    me: Me,
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
        let pod = var(env::POD_NAME).unwrap_or_else(|| {
            std::env::var("HOSTNAME").unwrap_or_else(|_| keys::BIN_PINGER.into())
        });
        Environment {
            namespace,
            me: Me::new(
                pod,
                var(env::POD_IPS).as_deref(),
                var(env::POD_IP).as_deref(),
            ),
            debugger: var(env::DEBUGGER_NAME),
        }
    }
}

/// What the pinger knows of its world.
#[derive(Default)]
struct State {
    spec: Option<PingerSpec>,
    /// The Debugger's peer pods, while the pod watch runs (docs/pinger.md,
    /// "Peer discovery").
    peers: Pods,
    /// The addresses of the own pod's peer list; None without one.
    listed: Option<Vec<IpAddr>>,
    /// The list as written, so that a list is parsed (and its bad entries
    /// logged) once, not at every change of the pod.
    listed_value: Option<String>,
    /// The node of each address of the own pod's list.
    listed_nodes: BTreeMap<IpAddr, String>,
    /// The node of each peer pod, by name, while the pod watch runs.
    peer_nodes: BTreeMap<String, String>,
}

impl State {
    /// Takes in a change of the Pinger, the own pod's peer list or the peer
    /// pods (the own UID is the publisher's, not part of this).
    fn apply(&mut self, update: Update) {
        match update {
            Update::Spec(spec) => self.spec = spec.map(|s| *s),
            Update::Listed(value) => {
                let bad = self.take_list(value);
                if !bad.is_empty() {
                    tracing::warn!(entries = ?bad, annotation = keys::ANNOTATION_PEERS, "peer list entries that are no address skipped");
                }
            }
            Update::Peers(all) => self.peers = all,
            Update::ListedNodes(value) => {
                self.listed_nodes = value
                    .as_deref()
                    .map(combo_api::peers::parse_nodes)
                    .unwrap_or_default();
            }
            Update::PeerNodes(all) => self.peer_nodes = all,
            Update::PeerNode(name, node) => {
                self.peer_nodes.insert(name, node);
            }
            Update::Peer(name, ips) if ips.is_empty() => {
                self.peers.remove(&name);
                self.peer_nodes.remove(&name);
            }
            Update::Peer(name, ips) => {
                self.peers.insert(name, ips);
            }
            Update::SelfUid(_) => {}
        }
    }

    /// Keeps the own pod's peer list `value`; returns the entries that are
    /// no address when the value is new (empty when it is the kept one).
    fn take_list(&mut self, value: Option<String>) -> Vec<String> {
        if value == self.listed_value {
            return Vec::new();
        }
        let (listed, bad) = match &value {
            Some(v) => {
                let (ips, bad) = combo_api::peers::parse(v);
                (Some(ips), bad)
            }
            None => (None, Vec::new()),
        };
        self.listed = listed;
        self.listed_value = value;
        bad
    }

    /// The node of each peer address known, from the own pod's list or
    /// the peer pods (docs/pinger.md, "Metrics").
    fn peer_nodes(&self) -> HashMap<IpAddr, Arc<String>> {
        let mut out: HashMap<IpAddr, Arc<String>> = self
            .listed_nodes
            .iter()
            .map(|(ip, node)| (*ip, Arc::new(node.clone())))
            .collect();
        for (pod, node) in &self.peer_nodes {
            let node = Arc::new(node.clone());
            for ip in self.peers.get(pod).into_iter().flatten() {
                out.entry(*ip).or_insert_with(|| node.clone());
            }
        }
        out
    }

    /// Where the peers come from, as [`peers::desired`] reads it.
    fn known(&self) -> Known<'_> {
        Known {
            listed: self.listed.as_deref(),
            pods: &self.peers,
        }
    }

    /// The spec in force: the Pinger's, or while it is unknown the defaults
    /// without peers, which set the round settings but probe nothing.
    fn spec_in_force(&self) -> PingerSpec {
        self.spec.clone().unwrap_or_else(|| PingerSpec {
            peers: false,
            ..PingerSpec::default()
        })
    }
}

/// Everything the pinger keeps per target: its task, its metric series,
/// its Event gate state and its Event recorder. All of it goes when the
/// target does (a peer leaving, a list edited), so none of it grows with
/// the peers that ever existed.
struct Probing {
    engine: Engine,
    knobs: Knobs,
    metrics: Arc<Metrics>,
    gate: Gate<Target>,
    publisher: Publisher,
    last_invalid: Vec<String>,
}

impl Probing {
    /// Brings settings and targets in line with `state`; returns the spec
    /// in force, for the metrics endpoint.
    fn follow(&mut self, state: &State, me: &Me, pinger: &str) -> PingerSpec {
        let spec = state.spec_in_force();
        let gateways = if spec.gateway {
            gateway::default_gateways()
        } else {
            Vec::new()
        };
        let set = peers::desired(&spec, state.known(), me, &gateways);
        if set.invalid != self.last_invalid {
            for bad in &set.invalid {
                tracing::warn!(pinger = %pinger, error = %bad, "target skipped");
            }
            self.last_invalid = set.invalid.clone();
        }
        let new_knobs = Knobs::from(&spec);
        if new_knobs != self.knobs {
            tracing::info!(?new_knobs, "settings changed");
            self.engine.set_settings(settings(&new_knobs));
            self.knobs = new_knobs;
        }
        let targets = if state.spec.is_some() {
            set.targets
        } else {
            Default::default()
        };
        self.metrics.set_peer_nodes(state.peer_nodes());
        self.set_targets(&targets);
        spec
    }

    /// Probes exactly `targets`; drops what was kept for the others.
    fn set_targets(&mut self, targets: &BTreeSet<Target>) {
        for gone in self.engine.set_targets(targets) {
            self.metrics.forget(&gone);
            self.gate.forget(&gone);
            self.publisher.forget(&gone);
        }
    }

    /// Logs a round (the engine recorded it in the metrics) and publishes
    /// the Event the gate lets through.
    fn on_report(&mut self, report: &Report) {
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
        if let Some(decision) =
            self.gate
                .observe(&report.target, report.stats.passed, Instant::now())
        {
            self.publisher.publish(decision, report);
        }
    }
}

/// Runs until SIGINT/SIGTERM.
pub async fn run(pinger: String) -> ExitCode {
    let envr = Environment::read();
    tracing::info!(pinger = %pinger, namespace = %envr.namespace, pod = %envr.me.pod, addresses = ?envr.me.ips, debugger = ?envr.debugger, "following the Pinger");
    let client = connect().await;
    let (tx, mut updates) = mpsc::channel(256);
    tokio::spawn(watch::pinger(
        Api::<Pinger>::namespaced(client.clone(), &envr.namespace),
        pinger.clone(),
        tx.clone(),
    ));
    tokio::spawn(watch::own_pod(
        Api::<kube::core::PartialObjectMeta<Pod>>::namespaced(client.clone(), &envr.namespace),
        envr.me.pod.clone(),
        tx.clone(),
    ));
    drop(tx);

    let include = Include::for_pod(&envr.me);
    let knobs = Knobs::from(&PingerSpec::default());
    let (report_tx, mut reports) = mpsc::unbounded_channel();
    let metrics = Arc::new(Metrics::default());
    let mut probing = Probing {
        engine: Engine::new(settings(&knobs), report_tx, seed(&envr.me.pod), None)
            .with_metrics(metrics.clone()),
        knobs,
        metrics,
        gate: Gate::new(Policy::default()),
        publisher: Publisher::new(client.clone(), &envr.namespace, &envr.me.pod),
        last_invalid: Vec::new(),
    };
    let mut server: Option<(u16, JoinHandle<()>)> = None;
    let mut state = State::default();
    let mut pod_watch: Option<PodWatch> = None;
    let stop = combo_api::signal::shutdown();
    tokio::pin!(stop);

    loop {
        let update = tokio::select! {
            Some(update) = updates.recv() => update,
            update = next_row(&mut pod_watch) => update,
            Some(report) = reports.recv() => {
                probing.on_report(&report);
                continue;
            }
            _ = &mut stop => {
                tracing::info!("stopping");
                return ExitCode::Passed;
            }
        };
        match update {
            Update::SelfUid(uid) => {
                probing.publisher.set_uid(uid);
                continue;
            }
            Update::Spec(None) => {
                tracing::warn!(pinger = %pinger, "the Pinger is gone; probing stops until it is back");
            }
            _ => {}
        }
        state.apply(update);
        switch_pod_watch(&mut pod_watch, &mut state, envr.debugger.as_deref(), |d| {
            PodWatch::start(&client, &envr.namespace, d, include)
        });
        let spec = probing.follow(&state, &envr.me, &pinger);
        // No endpoint until the Pinger is known: its port is not yet.
        let serving = state.spec.as_ref().map_or(
            PingerSpec {
                enable_metrics: false,
                ..spec
            },
            |s| s.clone(),
        );
        server = reconcile_server(server, &serving, &probing.metrics).await;
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

fn settings(k: &Knobs) -> Settings {
    Settings {
        interval: k.interval,
        timeout: k.timeout,
        count: k.count,
        limits: k.limits,
        probers: Probers {
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
#[path = "mod_tests.rs"]
mod tests;
