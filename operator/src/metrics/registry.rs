//! Prometheus metrics of the operator, under the prefix `combo_operator`.

use std::sync::Arc;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use crate::core::by_kind::ByKind;
use crate::metrics::results::ResultMetrics;
use crate::watch::health::WatchErrors;

/// How a write of an Event on a Node ended, the `result` of
/// `combo_operator_node_event_writes_total`
/// (docs/operator.md, "Events on the Node").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventWrite {
    /// The Event was created.
    Created,
    /// The Event was there and was patched.
    Patched,
    /// The API server refused the write or did not answer.
    Failed,
}

impl EventWrite {
    /// Every result, each with a series from the start.
    pub const ALL: [EventWrite; 3] = [EventWrite::Created, EventWrite::Patched, EventWrite::Failed];

    /// The label value.
    pub fn label(self) -> &'static str {
        match self {
            EventWrite::Created => "created",
            EventWrite::Patched => "patched",
            EventWrite::Failed => "failed",
        }
    }
}

/// The operator's metrics and the registry that serves them.
pub struct Metrics {
    registry: Registry,
    /// Bytes of the last exposition: the next is written into room for
    /// about as much, not grown by doubling (at 5,000 busy nodes it is
    /// megabytes, and each doubling holds the old text beside the new).
    last_len: std::sync::atomic::AtomicUsize,
    /// The same, of the last compressed scrape.
    last_gzip_len: std::sync::atomic::AtomicUsize,
    reconciles: Counter,
    errors: ByKind,
    duration: Histogram,
    writes: ByKind,
    peer_lists: Counter,
    watch_errors: WatchErrors,
    results: Arc<ResultMetrics>,
    node_event_writes: Family<Vec<(&'static str, &'static str)>, Counter>,
    node_events_dropped: Counter,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let reconciles = Counter::default();
        let errors = ByKind::default();
        let duration = Histogram::new(exponential_buckets(0.001, 2.0, 15));
        let writes = ByKind::default();
        let peer_lists = Counter::default();
        let watch_errors = WatchErrors::default();
        let results = Arc::new(ResultMetrics::default());
        let sub = registry.sub_registry_with_prefix("combo_operator");
        sub.register("reconciles", "Debugger reconciles", reconciles.clone());
        sub.register(
            "reconcile_errors",
            "Failed Debugger reconciles by error kind",
            errors.family(),
        );
        sub.register(
            "reconcile_duration_seconds",
            "Duration of one Debugger reconcile",
            duration.clone(),
        );
        sub.register(
            "api_writes",
            "Writes (apply, delete) the operator sent, by object kind",
            writes.family(),
        );
        sub.register(
            "peer_list_writes",
            "Peer lists applied to workload pods (docs/operator.md, \"Peer lists\")",
            peer_lists.clone(),
        );
        sub.register(
            "watch_errors",
            "Errors of the operator's watches, by the kind watched (docs/operator.md, \"Metrics and health\")",
            watch_errors.family(),
        );
        sub.register_collector(Box::new(results.clone()));
        let node_event_writes = Family::default();
        // Every result has a series from the start, for rate() to see its
        // first count.
        for w in EventWrite::ALL {
            let _ = node_event_writes.get_or_create(&vec![("result", w.label())]);
        }
        let node_events_dropped = Counter::default();
        sub.register(
            "node_event_writes",
            "Writes of Events on Nodes, by result (docs/operator.md, \"Events on the Node\")",
            node_event_writes.clone(),
        );
        sub.register(
            "node_events_dropped",
            "Events on Nodes dropped unsent because the queue was full",
            node_events_dropped.clone(),
        );
        Metrics {
            registry,
            last_len: Default::default(),
            last_gzip_len: Default::default(),
            reconciles,
            errors,
            duration,
            writes,
            peer_lists,
            watch_errors,
            results,
            node_event_writes,
            node_events_dropped,
        }
    }
}

impl Metrics {
    /// Counts one reconcile and its duration.
    pub fn reconciled(&self, seconds: f64) {
        self.reconciles.inc();
        self.duration.observe(seconds);
    }

    /// Counts one failed reconcile of `kind` (e.g. `invalid_spec`, `kube`).
    pub fn error(&self, kind: &str) {
        self.errors.inc(kind);
    }

    /// Counts one API write to an object of `kind`.
    pub fn write(&self, kind: &str) {
        self.writes.inc(kind);
    }

    /// The counter of watch errors, for the watches' health to count in.
    pub fn watch_errors(&self) -> WatchErrors {
        self.watch_errors.clone()
    }

    /// Counts one peer list applied to a pod.
    pub fn peer_list_written(&self) {
        self.peer_lists.inc();
    }

    /// Counts one write of an Event on a Node.
    pub fn node_event_written(&self, result: EventWrite) {
        self.node_event_writes
            .get_or_create(&vec![("result", result.label())])
            .inc();
    }

    /// How many writes of Events on Nodes ended with `result`.
    pub fn node_event_writes(&self, result: EventWrite) -> u64 {
        let labels = vec![("result", result.label())];
        self.node_event_writes.get(&labels).map_or(0, |c| c.get())
    }

    /// Counts `n` Events on Nodes dropped unsent.
    pub fn node_events_dropped(&self, n: u64) {
        self.node_events_dropped.inc_by(n);
    }

    /// How many Events on Nodes were dropped unsent.
    pub fn node_events_dropped_count(&self) -> u64 {
        self.node_events_dropped.get()
    }

    /// The Debuggers' results (docs/operator.md#results-as-metrics).
    pub fn results(&self) -> &ResultMetrics {
        &self.results
    }

    /// The Prometheus text exposition of every metric.
    pub fn encode(&self) -> String {
        use std::sync::atomic::Ordering;
        let last = self.last_len.load(Ordering::Relaxed);
        let mut out = String::with_capacity(last + last / 16);
        encode(&mut out, &self.registry).expect("writing to a String cannot fail");
        self.last_len.store(out.len(), Ordering::Relaxed);
        out
    }

    /// The same exposition, gzipped as it is written: the text itself is
    /// never held whole (docs/operator.md, "Memory").
    pub fn encode_gzip(&self) -> Vec<u8> {
        use std::sync::atomic::Ordering;
        let last = self.last_gzip_len.load(Ordering::Relaxed);
        let mut out = combo_api::gzip::GzipText::with_capacity(last + last / 16);
        encode(&mut out, &self.registry).expect("compressing into memory cannot fail");
        let out = out.finish();
        self.last_gzip_len.store(out.len(), Ordering::Relaxed);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_appear_with_their_prefix_and_labels() {
        let m = Metrics::default();
        m.reconciled(0.01);
        m.error("invalid_spec");
        m.write("DaemonSet");
        m.peer_list_written();
        let text = m.encode();
        assert!(text.contains("combo_operator_reconciles_total 1"), "{text}");
        assert!(
            text.contains(r#"combo_operator_reconcile_errors_total{kind="invalid_spec"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(r#"combo_operator_api_writes_total{kind="DaemonSet"} 1"#),
            "{text}"
        );
        assert!(
            text.contains("combo_operator_peer_list_writes_total 1"),
            "{text}"
        );
        assert!(text.contains("combo_operator_reconcile_duration_seconds_count 1"));
    }
}
