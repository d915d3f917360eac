//! What every reconcile shares, passed as `Arc<Context>`.

use std::sync::Arc;

use combo_api::keys::FIELD_MANAGER_OPERATOR;
use combo_api::Debugger;
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::reflector::Store;
use kube::Client;

use crate::core::images::Images;
use crate::metrics::registry::Metrics;
use crate::state::cache::Caches;
use crate::state::coalesce::{Coalesce, SummaryPace};
use crate::state::nodes::NodeWatch;
use crate::state::pace::Pace;
use crate::state::records::Records;

/// Shared state of the controller. Every field that outlives a reconcile
/// has a bound; docs/operator.md, "State kept between reconciles", lists
/// them, and docs/contributing.md, "Bounded state and its tests", the
/// tests of their eviction.
pub struct Context {
    /// API client (the operator's ServiceAccount in a cluster).
    pub client: Client,
    /// Default images, and the Secrets to pull them with, from the command line.
    pub images: Images,
    /// Prometheus metrics of the operator.
    pub metrics: Arc<Metrics>,
    /// Publishes Events on Debuggers.
    pub recorder: Recorder,
    /// Every Debugger the controller sees: Pinger changes map through it.
    pub debuggers: Store<Debugger>,
    /// What reconciles read: the owned objects and Pingers the watches see.
    pub caches: Caches,
    /// Holds statuses and Events back while workloads are being written.
    pub pace: Pace,
    /// What is kept per Debugger between its reconciles: the status last
    /// written, the newest run seen, since when runs are expected, the
    /// consecutive failures; one record per Debugger, pruned to the live
    /// ones past twice their number (`records::over_bound`).
    pub records: Records,
    /// Summary ConfigMap writes per Debugger uid: at most one per 2 s, paced
    /// by their size while reports come (docs/operator.md#summary-writes).
    pub summary_writes: SummaryPace,
    /// Status writes per Debugger uid, at most one per 2 s.
    pub status_writes: Coalesce,
    /// The nodes' conditions and taints of `kubecombo.io/`, from a Node
    /// watch that starts with the first Debugger asking for them.
    pub nodes: NodeWatch,
    /// Whether the operator may taint nodes (false with `--no-taints`).
    pub taints_allowed: bool,
}

impl Context {
    /// A context around the given handles, with no state kept yet. Events
    /// are recorded by `combo-operator` (`instance`: this replica).
    pub fn new(
        client: Client,
        images: Images,
        metrics: Arc<Metrics>,
        instance: Option<String>,
        debuggers: Store<Debugger>,
        caches: Caches,
    ) -> Self {
        let recorder = Recorder::new(
            client.clone(),
            Reporter {
                controller: FIELD_MANAGER_OPERATOR.into(),
                instance,
            },
        );
        let records = Records::new(debuggers.clone());
        Context {
            client,
            images,
            metrics,
            recorder,
            debuggers,
            caches,
            pace: Default::default(),
            records,
            summary_writes: Default::default(),
            status_writes: Default::default(),
            nodes: NodeWatch::default(),
            taints_allowed: true,
        }
    }
}
