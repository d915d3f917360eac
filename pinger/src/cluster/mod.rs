//! In-cluster mode: follow the Pinger, its Debugger's peer pods and the
//! gateway; probe; publish Events and metrics. The API server being away
//! never stops probing or the process.

mod peers;
mod publish;
mod table;
mod table_watch;
mod watch;

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use combo_api::keys::{self, env};
use combo_api::pinger::Host;
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

impl State {
    /// Takes in a change of the Pinger or of the peer pods (the own UID is
    /// the publisher's, not part of this).
    fn apply(&mut self, update: Update) {
        match update {
            Update::Spec(spec) => self.spec = spec.map(|s| *s),
            Update::Peers(all) => self.peers = all,
            Update::Peer(name, Some(ip)) => {
                self.peers.insert(name, ip);
            }
            Update::Peer(name, None) => {
                self.peers.remove(&name);
            }
            Update::SelfUid(_) => {}
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
    icmp: Arc<Icmp>,
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
        let set = peers::desired(&spec, &state.peers, me, &gateways);
        if set.invalid != self.last_invalid {
            for bad in &set.invalid {
                tracing::warn!(pinger = %pinger, error = %bad, "target skipped");
            }
            self.last_invalid = set.invalid.clone();
        }
        let new_knobs = Knobs::from(&spec);
        if new_knobs != self.knobs {
            tracing::info!(?new_knobs, "settings changed");
            self.engine.set_settings(settings(&new_knobs, &self.icmp));
            self.knobs = new_knobs;
        }
        let targets = if state.spec.is_some() {
            set.targets
        } else {
            Default::default()
        };
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
        self.icmp
            .retain(|ip| targets.iter().any(|t| t.host == Host::Ip(*ip)));
    }

    /// Records a round and publishes the Event the gate lets through.
    fn on_report(&mut self, report: &Report) {
        self.metrics.record(report);
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
    let knobs = Knobs::from(&PingerSpec::default());
    let (report_tx, mut reports) = mpsc::unbounded_channel();
    let mut probing = Probing {
        engine: Engine::new(settings(&knobs, &icmp), report_tx, seed(&envr.pod), None),
        knobs,
        metrics: Arc::new(Metrics::default()),
        gate: Gate::new(Policy::default()),
        publisher: Publisher::new(client, &envr.namespace, &envr.pod),
        icmp,
        last_invalid: Vec::new(),
    };
    let mut server: Option<(u16, JoinHandle<()>)> = None;
    let mut state = State::default();
    let stop = crate::shutdown_signal();
    tokio::pin!(stop);

    loop {
        tokio::select! {
            Some(update) = updates.recv() => {
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
                let spec = probing.follow(&state, &me, &pinger);
                // No endpoint until the Pinger is known: its port is not yet.
                let serving = state.spec.as_ref().map_or(PingerSpec { enable_metrics: false, ..spec }, |s| s.clone());
                server = reconcile_server(server, &serving, &probing.metrics).await;
            }
            Some(report) = reports.recv() => probing.on_report(&report),
            () = &mut stop => {
                tracing::info!("stopping");
                return ExitCode::Passed;
            }
        }
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
    use crate::metrics::tests::scrape;
    use crate::round::{evaluate, Outcome};

    /// Probing as `run` builds it, with Events sent to a stand-in API
    /// server that never answers.
    fn probing(me: &Me) -> Probing {
        let (client, _) = combo_api::stand_in::StandIn::scripted(Vec::new());
        let icmp = Arc::new(Icmp::default());
        let knobs = Knobs::from(&PingerSpec::default());
        let (report_tx, _) = mpsc::unbounded_channel();
        Probing {
            engine: Engine::new(settings(&knobs, &icmp), report_tx, seed(&me.pod), None),
            knobs,
            metrics: Arc::new(Metrics::default()),
            gate: Gate::new(Policy::default()),
            publisher: Publisher::new(client, "ops", &me.pod),
            icmp,
            last_invalid: Vec::new(),
        }
    }

    /// A round of `target`: one reply, or none.
    fn round(target: &Target, passed: bool) -> Report {
        let outcomes = if passed {
            vec![Outcome::Ok(Duration::from_millis(1))]
        } else {
            vec![Outcome::Timeout]
        };
        let limits = Knobs::from(&PingerSpec::default()).limits;
        Report {
            target: target.clone(),
            label: Arc::new(target.label()),
            round: 1,
            started: std::time::SystemTime::UNIX_EPOCH,
            stats: evaluate(&outcomes, limits),
            outcomes,
            limits,
        }
    }

    #[tokio::test]
    async fn a_peer_that_leaves_takes_all_its_metric_series_with_it() {
        let me = Me {
            pod: "me".into(),
            ip: Some(IpAddr::from([127, 0, 0, 1])),
        };
        let mut probing = probing(&me);
        let mut state = State::default();
        // Rounds an hour apart: the test is over before any probe is due.
        state.apply(Update::Spec(Some(Box::new(PingerSpec {
            peers: true,
            gateway: false,
            interval_seconds: 3600,
            ..PingerSpec::default()
        }))));
        let (stays, leaves) = (IpAddr::from([127, 0, 0, 2]), IpAddr::from([127, 0, 0, 3]));
        state.apply(Update::Peers(BTreeMap::from([
            ("a".to_string(), stays),
            ("b".to_string(), leaves),
            ("me".to_string(), IpAddr::from([127, 0, 0, 1])),
        ])));
        probing.follow(&state, &me, "p");
        let probed = [stays, leaves].map(|ip| Target::icmp(Host::Ip(ip)));
        for t in &probed {
            probing.on_report(&round(t, true));
            probing.on_report(&round(t, false));
        }
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        let server = metrics::serve(addr, probing.metrics.clone()).await.unwrap();
        let before = scrape(addr).await;
        assert!(before.contains(r#"target="127.0.0.3""#), "{before}");

        state.apply(Update::Peer("b".into(), None));
        probing.follow(&state, &me, "p");
        let after = scrape(addr).await;
        server.abort();
        assert!(!after.contains("127.0.0.3"), "{after}");
        assert_eq!(
            after.matches(r#"target="127.0.0.2""#).count(),
            before.matches(r#"target="127.0.0.2""#).count(),
            "the peer that stays keeps its series: {after}"
        );
    }

    #[test]
    fn a_pods_phase_seed_stays_the_value_released_versions_computed() {
        // The seed places every target's rounds; a changed one moves them all.
        assert_eq!(seed("node-check-00000"), 0xb7e3_2d33_477c_7b1d);
        assert_eq!(seed(""), 0xcbf2_9ce4_8422_2325);
    }
}
