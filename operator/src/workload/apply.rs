//! Apply: server-side apply of what `render` produced, with field manager
//! `combo-operator`. An object whose spec-hash annotation already matches is
//! not written at all, so a no-op reconcile (or an operator restart) sends
//! no write.

use std::sync::Arc;

use combo_api::keys::FIELD_MANAGER_OPERATOR;
use combo_api::Debugger;
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{DeleteParams, Patch, PatchParams, Preconditions};
use kube::{Api, Client, Resource, ResourceExt};
use serde::Serialize;

use crate::core::change::Change;
use crate::core::spec_hash::spec_hash_of;
use crate::metrics::registry::Metrics;
use crate::state::cache::{slim, Caches};
use crate::state::observed::Observed;
use crate::workload::render::Workload;

/// Errors of this module.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A write was refused or failed.
    #[error("writing {kind} {name}")]
    Write {
        /// Kind written.
        kind: &'static str,
        /// Name written.
        name: String,
        /// What went wrong.
        #[source]
        source: kube::Error,
    },
    /// An object with the workload's name exists and belongs to someone else.
    #[error("{kind} {name:?} already exists and is not owned by this Debugger")]
    NotOwned {
        /// Kind found.
        kind: &'static str,
        /// Its name.
        name: String,
    },
}

/// Whether `meta` is controlled by `dbg`.
pub fn controlled_by(meta: &ObjectMeta, dbg: &Debugger) -> bool {
    let uid = dbg.meta().uid.as_deref();
    meta.owner_references
        .iter()
        .flatten()
        .any(|o| o.controller == Some(true) && Some(o.uid.as_str()) == uid)
}

/// Whether `meta` has a controller other than `dbg`.
pub fn controlled_by_other(meta: &ObjectMeta, dbg: &Debugger) -> bool {
    meta.owner_references
        .iter()
        .flatten()
        .any(|o| o.controller == Some(true))
        && !controlled_by(meta, dbg)
}

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

pub(crate) fn not_owned<K: Resource>(kind: &'static str, obj: &K) -> Error {
    Error::NotOwned {
        kind,
        name: obj.meta().name.clone().unwrap_or_default(),
    }
}

/// Server-side apply of `obj` (forced: the operator owns what it renders).
pub async fn apply<K>(
    client: &Client,
    metrics: &Metrics,
    ns: &str,
    obj: &K,
    kind: &'static str,
) -> Result<K, Error>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + k8s_openapi::Resource
        + Clone
        + Serialize
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let name = obj.meta().name.clone().unwrap_or_default();
    let mut body = serde_json::to_value(obj).expect("objects serialise");
    body["apiVersion"] = <K as k8s_openapi::Resource>::API_VERSION.into();
    body["kind"] = <K as k8s_openapi::Resource>::KIND.into();
    metrics.write(kind);
    Api::<K>::namespaced(client.clone(), ns)
        .patch(
            &name,
            &PatchParams::apply(FIELD_MANAGER_OPERATOR).force(),
            &Patch::Apply(body),
        )
        .await
        .map_err(|source| Error::Write { kind, name, source })
}

/// Server-side apply of `status` to the status subresource of `obj` (a
/// Debugger or a Pinger).
pub async fn status<K, S>(
    client: &Client,
    metrics: &Metrics,
    obj: &K,
    status: &S,
    kind: &'static str,
) -> Result<(), kube::Error>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
    S: Serialize,
{
    let api: Api<K> = Api::namespaced(client.clone(), &obj.namespace().unwrap_or_default());
    let body = serde_json::json!({
        "apiVersion": K::api_version(&()),
        "kind": K::kind(&()),
        "status": status,
    });
    metrics.write(kind);
    api.patch_status(
        &obj.name_any(),
        &PatchParams::apply(FIELD_MANAGER_OPERATOR).force(),
        &Patch::Apply(body),
    )
    .await
    .map(drop)
}

async fn delete<K>(
    client: &Client,
    metrics: &Metrics,
    ns: &str,
    obj: &K,
    kind: &'static str,
) -> Result<(), Error>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let name = obj.meta().name.clone().unwrap_or_default();
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: obj.meta().uid.clone(),
            resource_version: None,
        }),
        ..DeleteParams::background()
    };
    metrics.write(kind);
    match Api::<K>::namespaced(client.clone(), ns)
        .delete(&name, &params)
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => Ok(()),
        Err(source) => Err(Error::Write { kind, name, source }),
    }
}

#[cfg(test)]
#[path = "apply_tests.rs"]
mod tests;
