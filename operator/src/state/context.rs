//! What every reconcile shares, passed as `Arc<Context>`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use combo_api::keys::FIELD_MANAGER_OPERATOR;
use combo_api::{Debugger, DebuggerStatus};
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::Client;

use crate::core::images::Images;
use crate::metrics::registry::Metrics;
use crate::state::cache::Caches;
use crate::state::coalesce::{Coalesce, SummaryPace};
use crate::state::nodes::NodeWatch;
use crate::state::pace::Pace;

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
    /// The status last written per Debugger uid. A reconcile can run on a
    /// cached Debugger that does not show the write yet; comparing with
    /// this too keeps it from writing the same status again. Pruned to the
    /// live Debuggers past twice their number (`records::over_bound`).
    pub written: Mutex<HashMap<String, DebuggerStatus>>,
    /// Consecutive transient failures per Debugger, for backoff. Removed
    /// by a success; pruned like `written`.
    pub failures: Mutex<HashMap<ObjectRef<Debugger>, u32>>,
    /// Summary ConfigMap writes per Debugger uid: at most one per 2 s, paced
    /// by their size while reports come (docs/operator.md#summary-writes).
    pub summary_writes: SummaryPace,
    /// Status writes per Debugger uid, at most one per 2 s.
    pub status_writes: Coalesce,
    /// The newest run seen per Debugger uid: when it changes, reports of
    /// nodes that left are removed. Pruned like `written`, on its own
    /// insertions.
    pub runs_seen: Mutex<HashMap<String, String>>,
    /// Per Debugger uid: its `runAt` and since when runs of it are
    /// expected (docs/operator.md#missed-runs). Pruned like `written`, on
    /// its own insertions.
    pub run_at_since: Mutex<HashMap<String, (String, DateTime<Utc>)>>,
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
        Context {
            client,
            images,
            metrics,
            recorder,
            debuggers,
            caches,
            pace: Default::default(),
            written: Default::default(),
            failures: Default::default(),
            summary_writes: Default::default(),
            status_writes: Default::default(),
            runs_seen: Default::default(),
            run_at_since: Default::default(),
            nodes: NodeWatch::default(),
            taints_allowed: true,
        }
    }
}
