//! Fetch: everything a Debugger's reconcile reads, from the caches the
//! watches keep (see [`crate::state::cache`]); no request to the API server.

use combo_api::Debugger;
use kube::ResourceExt;

use crate::state::cache::{lookup, Caches};
use crate::state::observed::Observed;

/// Reads the objects of `dbg` once every cache has listed.
pub async fn observe(caches: &Caches, dbg: &Debugger) -> Observed {
    caches.wait_until_ready().await;
    let ns = dbg.namespace().unwrap_or_default();
    let name = dbg.name_any();
    let summary_name = dbg.spec.summary_name(&name);
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
        pinger: dbg
            .spec
            .followed_pinger()
            .and_then(|pinger| lookup(&caches.pingers, &ns, pinger))
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
                crate::summary::plan::former_summaries(dbg, &controlled)
            })
            .unwrap_or_default(),
    }
}
