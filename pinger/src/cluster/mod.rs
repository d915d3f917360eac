//! In-cluster mode: follow the Pinger, the own pod's peer list (or, for
//! an unbounded `maxPeers`, the Debugger's pods) and the gateway; probe;
//! publish Events and metrics. The API server being away never stops
//! probing or the process.

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
use peers::{Knobs, Known, Me};
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
    /// The Debugger's peer pods, while the pod watch runs (docs/pinger.md,
    /// "Peer discovery").
    peers: BTreeMap<String, IpAddr>,
    /// The addresses of the own pod's peer list; None without one.
    listed: Option<Vec<IpAddr>>,
    /// The list as written, so that a list is parsed (and its bad entries
    /// logged) once, not at every change of the pod.
    listed_value: Option<String>,
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
            Update::Peer(name, Some(ip)) => {
                self.peers.insert(name, ip);
            }
            Update::Peer(name, None) => {
                self.peers.remove(&name);
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

/// The table watch of the Debugger's pods, while the spec in force needs it
/// (docs/pinger.md, "Peer discovery"). Its updates have their own channel,
/// so that stopping it drops those not yet taken in with it.
struct PodWatch {
    task: JoinHandle<()>,
    rows: mpsc::Receiver<Update>,
}

impl PodWatch {
    fn start(client: &Client, namespace: &str, debugger: &str) -> PodWatch {
        let (tx, rows) = mpsc::channel(256);
        let task = tokio::spawn(table_watch::peers(
            client.clone(),
            namespace.to_string(),
            keys::debugger_selector(debugger),
            tx,
        ));
        PodWatch { task, rows }
    }
}

impl Drop for PodWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The next update of the pod watch; never while there is none.
async fn next_row(watch: &mut Option<PodWatch>) -> Update {
    if let Some(w) = watch {
        if let Some(update) = w.rows.recv().await {
            return update;
        }
    }
    std::future::pending().await
}

/// Whether the pinger follows its Debugger's pods itself: with peers on
/// and a `maxPeers` the operator writes no lists for. Pure.
fn follows_pods(spec: &PingerSpec, debugger: bool) -> bool {
    debugger && spec.peers && !combo_api::peers::listed(spec.peers, spec.max_peers)
}

/// Starts the pod watch when the spec in force needs it and it does not
/// run, with `start(debugger)`; stops it, and forgets its peers, when it
/// runs and is not needed.
fn switch_pod_watch(
    watch: &mut Option<PodWatch>,
    state: &mut State,
    debugger: Option<&str>,
    start: impl FnOnce(&str) -> PodWatch,
) {
    let needed = follows_pods(&state.spec_in_force(), debugger.is_some());
    match (debugger, watch.is_some(), needed) {
        (Some(debugger), false, true) => {
            tracing::info!(%debugger, "following the Debugger's pods for peers");
            *watch = Some(start(debugger));
        }
        (_, true, false) => {
            tracing::info!("no longer following the Debugger's pods");
            *watch = None;
            state.peers.clear();
        }
        _ => {}
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
    tokio::spawn(watch::own_pod(
        Api::<kube::core::PartialObjectMeta<Pod>>::namespaced(client.clone(), &envr.namespace),
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
        publisher: Publisher::new(client.clone(), &envr.namespace, &envr.pod),
        icmp,
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
            PodWatch::start(&client, &envr.namespace, d)
        });
        let spec = probing.follow(&state, &me, &pinger);
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
        let (client, _) = combo_testkit::stand_in::StandIn::scripted(Vec::new());
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

    /// Follows a peer set of 127.0.0.2 and 127.0.0.3, then the change
    /// `leave` that takes 127.0.0.3 away, and checks the scrapes before and
    /// after.
    async fn a_peer_leaves(spec: PingerSpec, known: Vec<Update>, leave: Update) {
        let me = Me {
            pod: "me".into(),
            ip: Some(IpAddr::from([127, 0, 0, 1])),
        };
        let mut probing = probing(&me);
        let mut state = State::default();
        state.apply(Update::Spec(Some(Box::new(spec))));
        for update in known {
            state.apply(update);
        }
        probing.follow(&state, &me, "p");
        let probed = [2, 3].map(|i| Target::icmp(Host::Ip(IpAddr::from([127, 0, 0, i]))));
        let chosen = peers::desired(&state.spec_in_force(), state.known(), &me, &[]).targets;
        assert_eq!(
            chosen,
            BTreeSet::from(probed.clone()),
            "the own address is no peer"
        );
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

        state.apply(leave);
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

    /// Rounds an hour apart: the test is over before any probe is due.
    fn hourly(max_peers: u32) -> PingerSpec {
        PingerSpec {
            peers: true,
            gateway: false,
            max_peers,
            interval_seconds: 3600,
            ..PingerSpec::default()
        }
    }

    #[tokio::test]
    async fn a_peer_that_leaves_takes_all_its_metric_series_with_it() {
        // Listed: the operator writes the list without it.
        a_peer_leaves(
            hourly(20),
            vec![Update::Listed(Some("127.0.0.3,127.0.0.1,127.0.0.2".into()))],
            Update::Listed(Some("127.0.0.2".into())),
        )
        .await;
        // All peers: the pod watch reports its pod gone.
        a_peer_leaves(
            hourly(0),
            vec![Update::Peers(BTreeMap::from([
                ("a".to_string(), IpAddr::from([127, 0, 0, 2])),
                ("b".to_string(), IpAddr::from([127, 0, 0, 3])),
                ("me".to_string(), IpAddr::from([127, 0, 0, 1])),
            ]))],
            Update::Peer("b".into(), None),
        )
        .await;
    }

    #[test]
    fn a_peer_list_is_parsed_once_per_value_and_its_bad_entries_named() {
        let mut state = State::default();
        assert!(state.take_list(None).is_empty());
        assert_eq!(state.listed, None);
        let value = "10.0.0.2,peer-3,10.0.0.1".to_string();
        assert_eq!(state.take_list(Some(value.clone())), ["peer-3"]);
        let want: Vec<IpAddr> = vec![[10, 0, 0, 1].into(), [10, 0, 0, 2].into()];
        assert_eq!(state.listed.as_deref(), Some(&want[..]));
        // The same value again (another change of the pod): not named again.
        assert!(state.take_list(Some(value.clone())).is_empty());
        assert_eq!(state.listed.as_deref(), Some(&want[..]));
        // An empty list is a list: no peers, not "no list".
        assert!(state.take_list(Some(String::new())).is_empty());
        assert_eq!(state.listed.as_deref(), Some(&[][..]));
        assert_eq!(state.take_list(Some(value)), ["peer-3"]);
        state.apply(Update::Listed(None));
        assert_eq!(state.listed, None);
    }

    #[test]
    fn the_pods_are_followed_only_for_all_peers_or_more_than_a_list_holds() {
        let spec = |peers, max_peers| PingerSpec {
            peers,
            max_peers,
            ..PingerSpec::default()
        };
        let max = combo_api::peers::LIST_MAX;
        assert!(follows_pods(&spec(true, 0), true));
        assert!(follows_pods(&spec(true, max + 1), true));
        assert!(!follows_pods(&spec(true, 1), true));
        assert!(!follows_pods(&spec(true, 20), true));
        assert!(!follows_pods(&spec(true, max), true));
        assert!(!follows_pods(&spec(false, 0), true));
        assert!(!follows_pods(&spec(true, 0), false));
        // While the Pinger is unknown: no peers, nothing to follow.
        assert!(!follows_pods(&State::default().spec_in_force(), true));
    }

    #[tokio::test]
    async fn the_pod_watch_starts_and_stops_with_the_spec_and_takes_its_peers_along() {
        let mut state = State::default();
        let mut watch: Option<PodWatch> = None;
        let mut started = Vec::new();
        let mut switch = |state: &mut State, watch: &mut Option<PodWatch>, debugger| {
            switch_pod_watch(watch, state, debugger, |d| {
                started.push(d.to_string());
                let (_, rows) = mpsc::channel(1);
                PodWatch {
                    task: tokio::spawn(std::future::pending()),
                    rows,
                }
            });
        };
        let set = |state: &mut State, max_peers| {
            state.apply(Update::Spec(Some(Box::new(PingerSpec {
                max_peers,
                ..PingerSpec::default()
            }))));
        };
        switch(&mut state, &mut watch, Some("d"));
        assert!(watch.is_none(), "started before the Pinger is known");
        set(&mut state, 20);
        switch(&mut state, &mut watch, Some("d"));
        assert!(watch.is_none(), "started for a listed maxPeers");

        set(&mut state, 0);
        switch(&mut state, &mut watch, Some("d"));
        let task = watch
            .as_ref()
            .expect("started for maxPeers 0")
            .task
            .abort_handle();
        state.apply(Update::Peer("a".into(), Some([10, 0, 0, 1].into())));
        // A change that still needs it keeps the same task.
        set(&mut state, combo_api::peers::LIST_MAX + 1);
        switch(&mut state, &mut watch, Some("d"));
        assert_eq!(watch.as_ref().map(|w| w.task.id()), Some(task.id()));

        set(&mut state, 20);
        switch(&mut state, &mut watch, Some("d"));
        assert!(watch.is_none());
        assert!(
            state.peers.is_empty(),
            "the pods' peers outlived their watch"
        );
        tokio::task::yield_now().await;
        assert!(task.is_finished(), "the stopped watch still runs");

        set(&mut state, 0);
        switch(&mut state, &mut watch, None);
        assert!(watch.is_none(), "started without a Debugger");
        assert_eq!(started, ["d"]);
    }

    #[test]
    fn a_pods_phase_seed_stays_the_value_released_versions_computed() {
        // The seed places every target's rounds; a changed one moves them all.
        assert_eq!(seed("node-check-00000"), 0xb7e3_2d33_477c_7b1d);
        assert_eq!(seed(""), 0xcbf2_9ce4_8422_2325);
    }
}
