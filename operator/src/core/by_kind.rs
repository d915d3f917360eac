//! A counter with one series per object or error kind, label `kind`: the
//! operator's reconcile errors, API writes and watch errors
//! (docs/reference.md, "Metrics").

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

/// The label set of one series: `kind`.
type Labels = Vec<(String, String)>;

/// Counts by kind. Clones share the counts.
#[derive(Clone, Debug, Default)]
pub struct ByKind(Family<Labels, Counter>);

impl ByKind {
    /// Counts one of `kind`.
    pub fn inc(&self, kind: &str) {
        self.0.get_or_create(&labels(kind)).inc();
    }

    /// How many of `kind` were counted; reading adds no series.
    pub fn get(&self, kind: &str) -> u64 {
        self.0.get(&labels(kind)).map_or(0, |c| c.get())
    }

    /// The family to register; it shares the counts.
    pub fn family(&self) -> Family<Labels, Counter> {
        self.0.clone()
    }
}

/// The labels of the series of `kind`.
fn labels(kind: &str) -> Labels {
    vec![("kind".into(), kind.into())]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_counts_apart_clones_share_the_counts_and_reading_adds_no_series() {
        let counts = ByKind::default();
        let shared = counts.clone();
        counts.inc("Pod");
        shared.inc("Pod");
        counts.inc("Role");
        assert_eq!((counts.get("Pod"), counts.get("Role")), (2, 1));
        assert_eq!(shared.get("DaemonSet"), 0);
        assert!(counts.family().get(&labels("DaemonSet")).is_none());
    }
}
