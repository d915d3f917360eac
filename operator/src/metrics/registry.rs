//! Prometheus metrics of the operator, under the prefix `combo_operator`.

use std::sync::Arc;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use crate::metrics::results::ResultMetrics;
use crate::watch::health::WatchErrors;

type Labels = Vec<(String, String)>;

/// The operator's metrics and the registry that serves them.
pub struct Metrics {
    registry: Registry,
    reconciles: Counter,
    errors: Family<Labels, Counter>,
    duration: Histogram,
    writes: Family<Labels, Counter>,
    peer_lists: Counter,
    watch_errors: WatchErrors,
    results: Arc<ResultMetrics>,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let reconciles = Counter::default();
        let errors = Family::<Labels, Counter>::default();
        let duration = Histogram::new(exponential_buckets(0.001, 2.0, 15));
        let writes = Family::<Labels, Counter>::default();
        let peer_lists = Counter::default();
        let watch_errors = WatchErrors::default();
        let results = Arc::new(ResultMetrics::default());
        let sub = registry.sub_registry_with_prefix("combo_operator");
        sub.register("reconciles", "Debugger reconciles", reconciles.clone());
        sub.register(
            "reconcile_errors",
            "Failed Debugger reconciles by error kind",
            errors.clone(),
        );
        sub.register(
            "reconcile_duration_seconds",
            "Duration of one Debugger reconcile",
            duration.clone(),
        );
        sub.register(
            "api_writes",
            "Writes (apply, delete) the operator sent, by object kind",
            writes.clone(),
        );
        sub.register(
            "peer_list_writes",
            "Peer lists applied to workload pods (docs/operator.md, \"Peer lists\")",
            peer_lists.clone(),
        );
        sub.register(
            "watch_errors",
            "Errors of the operator's watches, by the kind watched (docs/operator.md, \"Metrics and health\")",
            watch_errors.clone(),
        );
        sub.register_collector(Box::new(results.clone()));
        Metrics {
            registry,
            reconciles,
            errors,
            duration,
            writes,
            peer_lists,
            watch_errors,
            results,
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
        self.errors
            .get_or_create(&vec![("kind".into(), kind.into())])
            .inc();
    }

    /// Counts one API write to an object of `kind`.
    pub fn write(&self, kind: &str) {
        self.writes
            .get_or_create(&vec![("kind".into(), kind.into())])
            .inc();
    }

    /// The counter of watch errors, for the watches' health to count in.
    pub fn watch_errors(&self) -> WatchErrors {
        self.watch_errors.clone()
    }

    /// Counts one peer list applied to a pod.
    pub fn peer_list_written(&self) {
        self.peer_lists.inc();
    }

    /// The Debuggers' results (docs/operator.md#results-as-metrics).
    pub fn results(&self) -> &ResultMetrics {
        &self.results
    }

    /// The Prometheus text exposition of every metric.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        encode(&mut out, &self.registry).expect("writing to a String cannot fail");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use combo_testkit::fixtures::debugger;

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

    #[test]
    fn every_metric_served_has_a_row_in_the_reference() {
        let m = Metrics::default();
        m.reconciled(0.01);
        m.error("apply");
        m.write("Pod");
        m.watch_errors()
            .get_or_create(&vec![("kind".into(), "Pod".into())])
            .inc();
        m.peer_list_written();
        let mut results = crate::reports::results::Results::default();
        let disk = results.categories.entry("disk").or_default();
        disk.failing.insert("node-1".into(), 1);
        results.node_runs.push(chrono::Utc::now());
        let dbg = debugger("ops", "d").build();
        let schedule = combo_api::RunAt::parse("0 * * * *").ok();
        m.results().set(&dbg, results, schedule, chrono::Utc::now());
        let text = m.encode();
        let reference = include_str!("../../../docs/reference.md");
        let mut seen = 0;
        for described in text.lines().filter_map(|l| l.strip_prefix("# TYPE ")) {
            let (name, kind) = described.split_once(' ').expect("# TYPE name kind");
            let suffix = if kind == "counter" { "_total" } else { "" };
            let row = format!("| `{name}{suffix}` |");
            assert!(
                reference.contains(&row),
                "docs/reference.md has no row {row}"
            );
            seen += 1;
        }
        assert_eq!(seen, 6 + 7, "{text}");
    }
}
