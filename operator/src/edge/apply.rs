//! The writes every writer of the operator shares: server-side apply of an
//! object and of a status subresource with field manager `combo-operator`,
//! deletion by uid, and whether an object is the Debugger's
//! (docs/operator.md, "What the operator writes").

use combo_api::keys::FIELD_MANAGER_OPERATOR;
use combo_api::Debugger;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{DeleteParams, Patch, PatchParams, Preconditions};
use kube::{Api, Client, Resource, ResourceExt};
use serde::Serialize;

use crate::metrics::registry::Metrics;

/// Why a write did not happen.
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

/// The error of an object named as ours that another controls.
pub fn not_owned<K: Resource>(kind: &'static str, obj: &K) -> Error {
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

/// Deletes `obj` if it is still the object of that uid; gone already or
/// replaced (404, 409) is done.
pub async fn delete<K>(
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
