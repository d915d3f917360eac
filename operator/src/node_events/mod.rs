//! Events on the Node: an item of a node that starts failing, fails again
//! or recovers becomes a core/v1 Event on that Node, where `kubectl
//! describe node` shows it beside the kubelet's
//! (docs/operator.md, "Events on the Node").
//!
//! When a report arrives, [`seen`] tells a new run from one seen before (a
//! re-list) and [`decide`] which Events the run makes (both pure); they
//! wait in the [`queue`], one entry per Event, for the one task of
//! [`write`](mod@write) to send them within its token bucket. The task runs with the
//! controller, so only the leader writes.

pub mod decide;
pub mod queue;
pub mod seen;
pub mod write;

use std::sync::{Arc, Mutex};

use combo_api::DebuggerReport;
use kube::runtime::watcher;
use kube::ResourceExt;

use crate::metrics::registry::Metrics;
use crate::reports::store::Reports;
use queue::Outbox;
use seen::{Seen, Sight};

/// Writes per second the writer sends at most, past its burst.
pub const WRITES_PER_SECOND: u32 = 10;
/// Writes the writer may send at once after a quiet while. 50 at once and
/// 10 a second after puts a new failure of one item on 5,000 nodes on
/// every Node in 8.5 minutes, and costs the API server less than the
/// kubelets' own Events (50 a second each by default).
pub const BURST: u32 = 50;
/// Events the queue holds unsent; past it the oldest go, counted in
/// `combo_operator_node_events_dropped_total`. 5,000 is one Event for each
/// of 5,000 nodes and about 8 minutes of writes at the rate bound (a
/// longer queue only writes Events later than anyone reads them); an
/// entry takes at most 1.4 KB (a message of 1 KiB), so the queue at most
/// 7 MB, about 4 MB with kernel lines of 160 bytes.
pub const MAX_QUEUED: usize = 5_000;
/// The namespace of the Events: the Node has none, and the kubelet and
/// the node-problem-detector put theirs in `default`.
pub const NAMESPACE: &str = "default";
/// The component that reports them (`source.component`).
pub const COMPONENT: &str = "kube-combo-operator";

/// Follows the reports `reports` is given and returns the writer of their
/// Events through `client`, to be driven for as long as the controller
/// runs.
pub fn start(
    client: kube::Client,
    reports: &Reports,
    metrics: Arc<Metrics>,
) -> impl std::future::Future<Output = ()> {
    let outbox = Outbox::default();
    let follower = NodeEvents::new(outbox.clone(), metrics.clone());
    reports.follow_with(Box::new(move |e| follower.observe(e)));
    write::run(client, outbox, metrics)
}

/// What follows the reports as they arrive and queues their Events.
pub struct NodeEvents {
    seen: Mutex<Seen>,
    outbox: Outbox,
    metrics: Arc<Metrics>,
}

impl NodeEvents {
    /// Follows reports into `outbox`, counting transitions and dropped
    /// Events in `metrics`.
    pub fn new(outbox: Outbox, metrics: Arc<Metrics>) -> Self {
        NodeEvents {
            seen: Mutex::default(),
            outbox,
            metrics,
        }
    }

    /// Takes one event of the report watch: a report's new run counts the
    /// items that turned failing and queues its Events.
    pub fn observe(&self, event: &watcher::Event<DebuggerReport>) {
        let seen = self.seen.lock().expect("seen lock").observe(event);
        let Some((report, sight)) = seen else { return };
        if sight == Sight::SameRun {
            return;
        }
        let ns = report.namespace().unwrap_or_default();
        let spec = &report.spec;
        for (category, n) in decide::turned_failing(spec) {
            (self.metrics.results()).turned_failing(&ns, &spec.debugger, category, n);
        }
        let events = decide::decide(&ns, spec, sight);
        let dropped = self.outbox.push_all(events);
        if dropped > 0 {
            self.metrics.node_events_dropped(dropped as u64);
        }
    }

    /// How many reports it keeps the run of.
    pub fn len(&self) -> usize {
        self.seen.lock().expect("seen lock").len()
    }

    /// Whether it keeps none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
