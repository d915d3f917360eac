//! Prometheus metrics (docs/reference.md, "Metrics") and the `/metrics` endpoint.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use combo_api::hash::FnvBuild;
use combo_api::http;
use combo_api::pinger::Host;
use prometheus_client::encoding::{text, EncodeLabel, EncodeLabelSet, LabelSetEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::{Registry, Unit};
use tokio::net::TcpListener;

use crate::recent::{Window, Windows};
use crate::round::Report;
use crate::targets::Target;

/// Labels of `combo_pinger_probes_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct ProbeLabels {
    kind: &'static str,
    target: Arc<String>,
    /// The peer's node; empty for other targets, which have no `node`
    /// label.
    node: Arc<String>,
    result: &'static str,
}

/// Labels of the per-target metrics.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct TargetLabels {
    kind: &'static str,
    target: Arc<String>,
    node: Arc<String>,
}

/// `kind`, `target`, and `node` when it is not empty.
fn encode_target(
    kind: &str,
    target: &str,
    node: &str,
    encoder: &mut LabelSetEncoder,
) -> Result<(), std::fmt::Error> {
    ("kind", kind).encode(encoder.encode_label())?;
    ("target", target).encode(encoder.encode_label())?;
    if !node.is_empty() {
        ("node", node).encode(encoder.encode_label())?;
    }
    Ok(())
}

impl EncodeLabelSet for TargetLabels {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> Result<(), std::fmt::Error> {
        encode_target(self.kind, &self.target, &self.node, encoder)
    }
}

impl EncodeLabelSet for ProbeLabels {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> Result<(), std::fmt::Error> {
        encode_target(self.kind, &self.target, &self.node, encoder)?;
        ("result", self.result).encode(encoder.encode_label())
    }
}

/// A target's kind and label, the key of its series.
type TargetKey = (&'static str, Arc<String>);

type RttFamily = Family<TargetLabels, Histogram, fn() -> Histogram>;

fn rtt_histogram() -> Histogram {
    // 50 µs .. ~3.3 s.
    Histogram::new(exponential_buckets(0.000_05, 2.0, 17))
}

/// The pinger's metrics, on a registry prefixed `combo_pinger`.
pub struct Metrics {
    registry: Registry,
    probes: Family<ProbeLabels, Counter>,
    rtt: RttFamily,
    up: Family<TargetLabels, Gauge>,
    /// The `node` label each target's series were made under, for
    /// [`Metrics::forget`]; written when a target's series are made or
    /// move, not per round.
    nodes: Mutex<HashMap<TargetKey, Arc<String>, FnvBuild>>,
    /// The node of each peer address, for the `node` label.
    peer_nodes: Mutex<HashMap<IpAddr, Arc<String>>>,
    /// Bumped with every [`Metrics::set_peer_nodes`], so a round looks its
    /// node up only after a change.
    peer_nodes_version: AtomicU64,
    /// The empty `node` of the other targets, shared.
    no_node: Arc<String>,
    /// Loss and RTT of the last minutes, for `kubectl combo mesh`.
    recent: Mutex<Windows>,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let probes = Family::<ProbeLabels, Counter>::default();
        let rtt = RttFamily::new_with_constructor(rtt_histogram);
        let up = Family::<TargetLabels, Gauge>::default();
        let sub = registry.sub_registry_with_prefix("combo_pinger");
        sub.register("probes", "Probes sent, by result", probes.clone());
        sub.register_with_unit(
            "rtt",
            "Round-trip time of answered probes",
            Unit::Seconds,
            rtt.clone(),
        );
        sub.register(
            "target_up",
            "1 when the target's last round passed",
            up.clone(),
        );
        Metrics {
            registry,
            probes,
            rtt,
            up,
            recent: Mutex::default(),
            nodes: Mutex::default(),
            peer_nodes: Mutex::default(),
            peer_nodes_version: AtomicU64::new(0),
            no_node: Arc::default(),
        }
    }
}

/// One target's metric handles and `/recent` window, kept by the engine in
/// the target's slot: a round is recorded with no lookup of the target in
/// a map (docs/benchmarks.md, "Where the pinger's CPU goes").
pub struct Series {
    kind: &'static str,
    label: Arc<String>,
    /// The `node` label its series carry, as of `peer_nodes_version`.
    node: Arc<String>,
    version: u64,
    /// `probes_total` by result, in [`RESULTS`] order; made on first use.
    probes: [Option<Counter>; 4],
    rtt: Option<Histogram>,
    up: Option<Gauge>,
    /// Made with the first round, as a target shows in `/recent` only
    /// once it was probed.
    window: Option<Arc<Mutex<Window>>>,
}

/// The `result` label values, in [`Outcome::index`](crate::round::Outcome::index) order.
const RESULTS: [&str; 4] = ["ok", "timeout", "refused", "error"];

impl Metrics {
    /// Sets the node of each peer address: the `node` label of the series
    /// of the peers probed from now on (docs/pinger.md, "Metrics").
    pub fn set_peer_nodes(&self, nodes: HashMap<IpAddr, Arc<String>>) {
        *self.peer_nodes.lock().unwrap_or_else(|p| p.into_inner()) = nodes;
        self.peer_nodes_version.fetch_add(1, Ordering::Relaxed);
    }

    /// The `node` label of `target`: its peer's node, else empty.
    fn node_of(&self, target: &Target) -> Arc<String> {
        let Host::Ip(ip) = &target.host else {
            return self.no_node.clone();
        };
        self.peer_nodes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(ip)
            .cloned()
            .unwrap_or_else(|| self.no_node.clone())
    }

    /// The handles of `target` (whose label is `label`); its series are
    /// made as its rounds need them.
    pub fn series(&self, target: &Target, label: Arc<String>) -> Series {
        let version = self.peer_nodes_version.load(Ordering::Relaxed);
        let node = self.node_of(target);
        let kind = target.kind.as_str();
        self.nodes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert((kind, label.clone()), node.clone());
        Series {
            kind,
            label,
            node,
            version,
            probes: Default::default(),
            rtt: None,
            up: None,
            window: None,
        }
    }

    /// Counts a finished round of the target of `series`.
    pub fn record(&self, series: &mut Series, report: &Report) {
        let version = self.peer_nodes_version.load(Ordering::Relaxed);
        if version != series.version {
            self.follow_node(series, &report.target, version);
        }
        let (kind, label, node) = (series.kind, &series.label, &series.node);
        let labels = || TargetLabels {
            kind,
            target: label.clone(),
            node: node.clone(),
        };
        for o in &report.outcomes {
            let i = o.index();
            series.probes[i]
                .get_or_insert_with(|| {
                    self.probes.get_or_create_owned(&ProbeLabels {
                        kind,
                        target: label.clone(),
                        node: node.clone(),
                        result: RESULTS[i],
                    })
                })
                .inc();
            if let Some(rtt) = o.rtt() {
                series
                    .rtt
                    .get_or_insert_with(|| self.rtt.get_or_create_owned(&labels()))
                    .observe(rtt.as_secs_f64());
            }
        }
        series
            .up
            .get_or_insert_with(|| self.up.get_or_create_owned(&labels()))
            .set(i64::from(report.stats.passed));
        series
            .window
            .get_or_insert_with(|| {
                self.recent
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .window(kind, label)
            })
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .record(report);
    }

    /// After the peers' nodes changed: when the target's address is
    /// another node's peer now, its series start again under that node.
    fn follow_node(&self, series: &mut Series, target: &Target, version: u64) {
        series.version = version;
        let node = self.node_of(target);
        if node == series.node {
            return;
        }
        self.remove_series(series.kind, &series.label, &series.node);
        self.nodes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert((series.kind, series.label.clone()), node.clone());
        series.node = node;
        series.probes = Default::default();
        series.rtt = None;
        series.up = None;
    }

    /// Removes every series of a target no longer probed (spec edit, peer
    /// gone or no longer chosen): its probe counters, RTT histogram and
    /// gauge, and its `/recent` window. Otherwise series would pile up with
    /// every pod that ever was a peer; a target that comes back starts its
    /// counters from zero, which `rate()` reads as a counter reset.
    pub fn forget(&self, target: &Target) {
        let label = Arc::new(target.label());
        let kind = target.kind.as_str();
        let node = self
            .nodes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&(kind, label.clone()))
            .unwrap_or_default();
        self.recent
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .forget(kind, &label);
        self.remove_series(kind, &label, &node);
    }

    /// Removes the series and window of the target of `series`, under the
    /// node they were made with: what [`Metrics::forget`] does, for the
    /// engine, which holds the handles.
    pub fn forget_series(&self, series: &Series) {
        self.nodes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&(series.kind, series.label.clone()));
        self.recent
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .forget(series.kind, &series.label);
        self.remove_series(series.kind, &series.label, &series.node);
    }

    /// Removes the series of one target under one `node` label.
    fn remove_series(&self, kind: &'static str, label: &Arc<String>, node: &Arc<String>) {
        for result in RESULTS {
            self.probes.remove(&ProbeLabels {
                kind,
                target: label.clone(),
                node: node.clone(),
                result,
            });
        }
        let labels = TargetLabels {
            kind,
            target: label.clone(),
            node: node.clone(),
        };
        self.rtt.remove(&labels);
        self.up.remove(&labels);
    }

    /// The last minutes of every target at `now`, as JSON.
    pub fn recent(&self, now: std::time::SystemTime) -> String {
        let summary = self
            .recent
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .summary(now);
        serde_json::to_string(&summary).expect("a summary always serializes")
    }

    /// The exposition text.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        text::encode(&mut out, &self.registry).expect("writing to a String cannot fail");
        out
    }

    /// The exposition, gzipped as it is written.
    pub fn encode_gzip(&self) -> Vec<u8> {
        let mut out = combo_api::gzip::GzipText::with_capacity(0);
        text::encode(&mut out, &self.registry).expect("compressing into memory cannot fail");
        out.finish()
    }
}

/// Why the endpoint could not start.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The address is taken or not ours.
    #[error("cannot listen on {addr}")]
    Bind {
        /// The listen address.
        addr: SocketAddr,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

/// What the pinger's endpoint answers: `/metrics`, and `/healthz` and
/// `/readyz` (always ok while the process runs).
struct Endpoint(Arc<Metrics>);

impl http::Routes for Endpoint {
    fn route(&self, ask: &http::Ask<'_>) -> http::Response {
        match (ask.method, ask.path) {
            ("GET", "/metrics") if ask.gzip => http::Response {
                body: http::Body::Gzip(self.0.encode_gzip()),
                ..http::Response::ok(http::OPENMETRICS, String::new())
            },
            ("GET", "/metrics") => http::Response::ok(http::OPENMETRICS, self.0.encode()),
            ("GET", combo_api::recent::PATH) => http::Response::ok(
                "application/json",
                self.0.recent(std::time::SystemTime::now()),
            ),
            ("GET", "/healthz" | "/readyz") => http::Response::text(200, "ok\n"),
            ("GET", _) => http::Response::text(404, "not found\n"),
            _ => http::Response::text(405, "method not allowed\n"),
        }
    }
}

/// Binds `addr` and serves `/metrics` (and `/healthz`, `/readyz`) until the
/// task is aborted (the server and its limits: [`combo_api::http`]).
pub async fn serve(
    addr: SocketAddr,
    metrics: Arc<Metrics>,
) -> Result<tokio::task::JoinHandle<()>, Error> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| Error::Bind { addr, source })?;
    tracing::info!(%addr, "serving metrics");
    Ok(tokio::spawn(http::serve(
        listener,
        Arc::new(Endpoint(metrics)),
    )))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::round::{evaluate, Outcome, Thresholds};
    use crate::targets::Kind;
    use combo_api::pinger::Host;
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    /// A round of ICMP target `ip` started at `started`.
    pub(crate) fn report_at(
        ip: &str,
        started: std::time::SystemTime,
        outcomes: Vec<Outcome>,
    ) -> Report {
        let target = Target {
            kind: Kind::Icmp,
            host: Host::Ip(ip.parse().unwrap()),
            port: None,
        };
        Report {
            started,
            target: target.clone(),
            label: std::sync::Arc::new(target.label()),
            ..report(outcomes)
        }
    }

    fn report(outcomes: Vec<Outcome>) -> Report {
        let limits = Thresholds::default();
        let target = Target {
            kind: Kind::Tcp,
            host: Host::Ip("::1".parse().unwrap()),
            port: Some(22),
        };
        Report {
            label: std::sync::Arc::new(target.label()),
            target,
            round: 1,
            started: std::time::SystemTime::UNIX_EPOCH,
            stats: evaluate(&outcomes, limits),
            outcomes,
            limits,
        }
    }

    /// Records rounds as the engine does, with one [`Series`] per target.
    #[derive(Default)]
    pub(crate) struct Recorder(HashMap<Target, Series>);

    impl Recorder {
        pub(crate) fn record(&mut self, m: &Metrics, r: &Report) {
            let s = self
                .0
                .entry(r.target.clone())
                .or_insert_with(|| m.series(&r.target, r.label.clone()));
            m.record(s, r);
        }
    }

    #[test]
    fn a_round_shows_up_as_probe_counts_rtt_and_target_up() {
        let m = Metrics::default();
        let mut rec = Recorder::default();
        rec.record(
            &m,
            &report(vec![
                Outcome::Ok(Duration::from_millis(2)),
                Outcome::Refused,
            ]),
        );
        let text = m.encode();
        assert!(
            text.contains(
                r#"combo_pinger_probes_total{kind="tcp",target="[::1]:22",result="ok"} 1"#
            ),
            "{text}"
        );
        assert!(text.contains(
            r#"combo_pinger_probes_total{kind="tcp",target="[::1]:22",result="refused"} 1"#
        ));
        assert!(text.contains(r#"combo_pinger_rtt_seconds_count{kind="tcp",target="[::1]:22"} 1"#));
        assert!(text.contains(r#"combo_pinger_target_up{kind="tcp",target="[::1]:22"} 0"#));
        rec.record(&m, &report(vec![Outcome::Ok(Duration::from_millis(2))]));
        assert!(m
            .encode()
            .contains(r#"combo_pinger_target_up{kind="tcp",target="[::1]:22"} 1"#));
        m.forget(&report(vec![]).target);
        assert!(!m.encode().contains("combo_pinger_target_up{"));
    }

    /// `/metrics` of the server at `addr`, as a scraper reads it.
    pub(crate) async fn scrape(addr: SocketAddr) -> String {
        get(addr, "/metrics").await
    }

    async fn get(addr: SocketAddr, path: &str) -> String {
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(format!("GET {path} HTTP/1.1\r\nhost: x\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        out
    }

    #[test]
    fn a_peers_series_carry_its_node_and_follow_its_address_to_another_node() {
        let m = Metrics::default();
        let ok = || vec![Outcome::Ok(Duration::from_millis(1))];
        let peer = report_at("10.0.0.7", std::time::SystemTime::UNIX_EPOCH, ok());
        let other = report_at("10.0.0.8", std::time::SystemTime::UNIX_EPOCH, ok());
        let node = |n: &str| Arc::new(n.to_string());
        m.set_peer_nodes(HashMap::from([(
            "10.0.0.7".parse().unwrap(),
            node("node-7"),
        )]));
        let mut rec = Recorder::default();
        rec.record(&m, &peer);
        rec.record(&m, &other);
        let text = m.encode();
        assert!(
            text.contains(
                r#"combo_pinger_target_up{kind="icmp",target="10.0.0.7",node="node-7"} 1"#
            ),
            "{text}"
        );
        assert!(text.contains(
            r#"combo_pinger_probes_total{kind="icmp",target="10.0.0.7",node="node-7",result="ok"} 1"#
        ));
        assert!(
            text.contains(r#"combo_pinger_target_up{kind="icmp",target="10.0.0.8"} 1"#),
            "a target that is no known peer has no node label: {text}"
        );
        // The address now belongs to a pod on node-9: its series move.
        m.set_peer_nodes(HashMap::from([(
            "10.0.0.7".parse().unwrap(),
            node("node-9"),
        )]));
        rec.record(&m, &peer);
        let text = m.encode();
        assert!(!text.contains("node-7"), "{text}");
        assert!(
            text.contains(r#"target="10.0.0.7",node="node-9"} 1"#),
            "{text}"
        );
        m.forget(&peer.target);
        assert!(!m.encode().contains("10.0.0.7"));
    }

    #[tokio::test]
    async fn the_scrape_after_a_peer_leaves_has_no_series_of_it_but_keeps_the_others() {
        let m = Arc::new(Metrics::default());
        let mut gone = report(vec![
            Outcome::Ok(Duration::from_millis(2)),
            Outcome::Timeout,
            Outcome::Refused,
            Outcome::Error("x".into()),
        ]);
        gone.started = std::time::SystemTime::now();
        let mut stays = gone.clone();
        stays.target.port = Some(23);
        stays.label = Arc::new(stays.target.label());
        let mut rec = Recorder::default();
        rec.record(&m, &gone);
        rec.record(&m, &stays);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        let server = serve(addr, m.clone()).await.unwrap();
        let before = scrape(addr).await;
        let recent = get(addr, combo_api::recent::PATH).await;
        assert!(
            recent.contains(r#""target":"[::1]:22","sent":4,"lost":3,"rttAvgMs":2.0"#),
            "{recent}"
        );
        assert_eq!(
            before.matches(r#"target="[::1]:22""#).count(),
            4 + 20 + 1,
            "{before}"
        );
        m.forget(&gone.target);
        let after = scrape(addr).await;
        let recent = get(addr, combo_api::recent::PATH).await;
        server.abort();
        assert!(!recent.contains(r#""target":"[::1]:22""#), "{recent}");
        assert!(recent.contains(r#""target":"[::1]:23""#), "{recent}");
        assert!(!after.contains(r#"target="[::1]:22""#), "{after}");
        assert_eq!(
            after.matches(r#"target="[::1]:23""#).count(),
            4 + 20 + 1,
            "{after}"
        );
        // Families stay declared even with no series.
        assert!(after.contains("# TYPE combo_pinger_rtt_seconds histogram"));
    }

    #[test]
    fn a_scraper_that_takes_gzip_gets_the_same_exposition_compressed() {
        use std::io::Read as _;
        let m = Arc::new(Metrics::default());
        Recorder::default().record(&m, &report(vec![Outcome::Timeout]));
        let endpoint = Endpoint(m.clone());
        let ask = http::Ask {
            gzip: true,
            ..http::Ask::get("/metrics")
        };
        let http::Body::Gzip(bytes) = http::Routes::route(&endpoint, &ask).body else {
            panic!("not compressed")
        };
        let mut text = String::new();
        flate2::read::GzDecoder::new(&bytes[..])
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, m.encode());
        assert!(text.contains(r#"combo_pinger_target_up{kind="tcp",target="[::1]:22"} 0"#));
        let plain = http::Routes::route(&endpoint, &http::Ask::get("/metrics"));
        assert_eq!(plain.plain(), text);
    }
}
