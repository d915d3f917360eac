//! The workload's writes: what `render` produced, applied through
//! [`crate::edge::apply`] with field manager
//! `combo-operator`. An object whose spec-hash annotation already matches is
//! not written at all, so a no-op reconcile (or an operator restart) sends
//! no write.

use std::sync::Arc;

use combo_api::Debugger;
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::{Client, ResourceExt};

use crate::core::change::Change;
use crate::core::spec_hash::spec_hash_of;
use crate::edge::apply::{apply, controlled_by, delete, not_owned, Error};
use crate::metrics::registry::Metrics;
use crate::state::cache::{slim, Caches};
use crate::state::observed::Observed;
use crate::workload::render::Workload;

/// The writes that bring the workload to `desired`. Pure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Delete our Pod (workloadType changed, or its spec changed).
    pub delete_pod: bool,
    /// Delete our DaemonSet (workloadType changed).
    pub delete_daemonset: bool,
    /// Apply the rendered workload.
    pub apply: bool,
    /// What the plan amounts to.
    pub change: Change,
}

/// Decides the writes for `desired` given what exists. An object with the
/// workload's name that `dbg` does not control is never touched.
pub fn decide(dbg: &Debugger, desired: &Workload, observed: &Observed) -> Result<Plan, Error> {
    let ours = |m: &ObjectMeta| controlled_by(m, dbg);
    let mut p = Plan {
        delete_pod: false,
        delete_daemonset: false,
        apply: false,
        change: Change::Unchanged,
    };
    match desired {
        Workload::DaemonSet(_) => {
            p.delete_pod = observed.pod.as_ref().is_some_and(|x| ours(&x.metadata));
            match &observed.daemonset {
                Some(old) if !ours(&old.metadata) => return Err(not_owned("DaemonSet", old)),
                Some(old) if spec_hash_of(&old.metadata) == desired.hash() => {}
                old => {
                    p.apply = true;
                    p.change = if old.is_some() {
                        Change::Updated
                    } else {
                        Change::Created
                    };
                }
            }
        }
        Workload::Pod(_) => {
            p.delete_daemonset = observed
                .daemonset
                .as_ref()
                .is_some_and(|x| ours(&x.metadata));
            match &observed.pod {
                Some(old) if !ours(&old.metadata) => return Err(not_owned("Pod", old)),
                Some(old) if old.metadata.deletion_timestamp.is_some() => {
                    p.change = Change::Waiting
                }
                Some(old) if spec_hash_of(&old.metadata) == desired.hash() => {}
                Some(_) => {
                    // A Pod's spec is immutable: replace it.
                    p.delete_pod = true;
                    p.change = Change::Replacing;
                }
                None => {
                    p.apply = true;
                    p.change = Change::Created;
                }
            }
        }
    }
    Ok(p)
}

/// Brings the workload to `desired` following [`decide`], recording what it
/// writes in `caches` until the watches show it.
pub async fn workload(
    client: &Client,
    metrics: &Metrics,
    caches: &Caches,
    dbg: &Debugger,
    desired: &Workload,
    observed: &Observed,
) -> Result<Change, Error> {
    let ns = dbg.namespace().unwrap_or_default();
    let name = dbg.name_any();
    let p = decide(dbg, desired, observed)?;
    if let (true, Some(pod)) = (p.delete_pod, &observed.pod) {
        delete::<Pod>(client, metrics, &ns, pod, "Pod").await?;
        caches.recent_pods.forget(&ns, &name);
    }
    if let (true, Some(ds)) = (p.delete_daemonset, &observed.daemonset) {
        delete::<DaemonSet>(client, metrics, &ns, ds, "DaemonSet").await?;
        caches.recent_daemonsets.forget(&ns, &name);
    }
    if p.apply {
        match desired {
            Workload::DaemonSet(ds) => {
                let mut written =
                    apply::<DaemonSet>(client, metrics, &ns, ds.as_ref(), "DaemonSet").await?;
                slim(&mut written);
                caches
                    .recent_daemonsets
                    .record(&written.metadata.clone(), Arc::new(written));
            }
            Workload::Pod(pod) => {
                let mut written = apply::<Pod>(client, metrics, &ns, pod.as_ref(), "Pod").await?;
                slim(&mut written);
                caches
                    .recent_pods
                    .record(&written.metadata.clone(), Arc::new(written));
            }
        }
    }
    Ok(p.change)
}

/// Deletes the workload `dbg` controls, DaemonSet and Pod alike (its
/// summary name is another's, so it may run nothing); whether there was
/// one.
pub async fn remove_workload(
    client: &Client,
    metrics: &Metrics,
    caches: &Caches,
    dbg: &Debugger,
    observed: &Observed,
) -> Result<bool, Error> {
    let ns = dbg.namespace().unwrap_or_default();
    let name = dbg.name_any();
    let mut removed = false;
    if let Some(pod) = observed
        .pod
        .as_ref()
        .filter(|p| controlled_by(&p.metadata, dbg) && p.metadata.deletion_timestamp.is_none())
    {
        delete::<Pod>(client, metrics, &ns, pod, "Pod").await?;
        caches.recent_pods.forget(&ns, &name);
        removed = true;
    }
    if let Some(ds) = observed
        .daemonset
        .as_ref()
        .filter(|d| controlled_by(&d.metadata, dbg) && d.metadata.deletion_timestamp.is_none())
    {
        delete::<DaemonSet>(client, metrics, &ns, ds, "DaemonSet").await?;
        caches.recent_daemonsets.forget(&ns, &name);
        removed = true;
    }
    if removed {
        tracing::info!("workload deleted: the summary ConfigMap's name is taken");
    }
    Ok(removed)
}

#[cfg(test)]
#[path = "apply_tests.rs"]
mod tests;
