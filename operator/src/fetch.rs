//! Fetch: everything a Debugger's reconcile reads, from the caches the
//! watches keep (see [`crate::cache`]); no request to the API server.

use combo_api::{Debugger, Pinger};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;

use crate::cache::{lookup, Caches, Summary};
use crate::reports::NodeReports;
use crate::validate::Found;

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

/// Reads the objects of `dbg` once every cache has listed.
pub async fn observe(caches: &Caches, dbg: &Debugger) -> Observed {
    caches.wait_until_ready().await;
    let ns = dbg.namespace().unwrap_or_default();
    let name = dbg.name_any();
    let summary_name = dbg.spec.summary_name(&name);
    let wants_pinger = dbg.spec.enable_pinger && !dbg.spec.pinger.is_empty();
    let daemonset =
        caches
            .recent_daemonsets
            .merge(&ns, &name, lookup(&caches.daemonsets, &ns, &name), |d| {
                &d.metadata
            });
    let pod = caches
        .recent_pods
        .merge(&ns, &name, lookup(&caches.pods, &ns, &name), |p| {
            &p.metadata
        });
    let summary = caches.recent_summaries.merge(
        &ns,
        &summary_name,
        caches.config_maps.get(&ns, &summary_name),
        |s| &s.metadata,
    );
    Observed {
        pinger: wants_pinger
            .then(|| lookup(&caches.pingers, &ns, &dbg.spec.pinger))
            .flatten()
            .map(|p| p.as_ref().clone()),
        daemonset: daemonset.map(|d| d.as_ref().clone()),
        pod: pod.map(|p| p.as_ref().clone()),
        summary,
        reports: caches.reports.of(&ns, &name),
        scripts: dbg.spec.enable_config_map
            && caches.config_maps.get(&ns, &dbg.spec.config_map).is_some(),
        former_summaries: dbg
            .metadata
            .uid
            .as_deref()
            .map(|uid| {
                let controlled = caches.config_maps.controlled_by(&ns, uid);
                crate::summary_plan::former_summaries(dbg, &controlled)
            })
            .unwrap_or_default(),
    }
}
