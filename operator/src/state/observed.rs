//! What exists in the cluster for one Debugger, as the observe step reads
//! it from the caches: what every later step of its reconcile reads.

use combo_api::Pinger;
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::Pod;

use crate::core::validate::Found;
use crate::reports::store::NodeReports;
use crate::state::cache::Summary;

/// What exists in the cluster for one Debugger.
#[derive(Clone, Debug, Default)]
pub struct Observed {
    /// The Pinger it names (looked up only with enablePinger).
    pub pinger: Option<Pinger>,
    /// A DaemonSet named after it.
    pub daemonset: Option<DaemonSet>,
    /// A Pod named after it.
    pub pod: Option<Pod>,
    /// Its summary ConfigMap, reduced.
    pub summary: Option<Summary>,
    /// Its DebuggerReports, by node.
    pub reports: NodeReports,
    /// Whether its scripts ConfigMap exists (looked up only with
    /// enableConfigMap).
    pub scripts: bool,
    /// The summaries it wrote under a former name, to delete: names and
    /// UIDs.
    pub former_summaries: Vec<(String, String)>,
}

impl Observed {
    /// What validation checks the Debugger's references against.
    pub fn found(&self) -> Found<'_> {
        Found {
            pinger: self.pinger.as_ref(),
            scripts: self.scripts,
        }
    }
}
