//! Fetch: everything a Debugger's reconcile reads from the API server.

use combo_api::{Debugger, Pinger};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::GetParams;
use kube::{Api, Client, ResourceExt};

/// Errors of this module.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API server did not answer a read.
    #[error("reading {kind} {name}")]
    Read {
        /// Kind read.
        kind: &'static str,
        /// Name read.
        name: String,
        /// What went wrong.
        #[source]
        source: kube::Error,
    },
}

/// What exists in the cluster for one Debugger.
#[derive(Clone, Debug, Default)]
pub struct Observed {
    /// The Pinger it names (looked up only with enablePinger).
    pub pinger: Option<Pinger>,
    /// A DaemonSet named after it.
    pub daemonset: Option<DaemonSet>,
    /// A Pod named after it.
    pub pod: Option<Pod>,
    /// Its summary ConfigMap.
    pub summary: Option<ConfigMap>,
}

/// Reads the objects of `dbg`, concurrently.
pub async fn observe(client: &Client, dbg: &Debugger) -> Result<Observed, Error> {
    let ns = dbg.namespace().unwrap_or_default();
    let name = dbg.name_any();
    let summary_name = dbg.spec.summary_name(&name);
    let wants_pinger = dbg.spec.enable_pinger && !dbg.spec.pinger.is_empty();
    let (pinger, daemonset, pod, summary) = futures::try_join!(
        async {
            if wants_pinger {
                get::<Pinger>(client, &ns, &dbg.spec.pinger, "Pinger").await
            } else {
                Ok(None)
            }
        },
        get::<DaemonSet>(client, &ns, &name, "DaemonSet"),
        get::<Pod>(client, &ns, &name, "Pod"),
        get::<ConfigMap>(client, &ns, &summary_name, "ConfigMap"),
    )?;
    Ok(Observed {
        pinger,
        daemonset,
        pod,
        summary,
    })
}

async fn get<K>(
    client: &Client,
    ns: &str,
    name: &str,
    kind: &'static str,
) -> Result<Option<K>, Error>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    // Any resourceVersion: the API server answers from its watch cache
    // instead of a quorum read of etcd. A reconcile follows a watch event,
    // so the cache has what triggered it; an answer a moment old costs at
    // most one idempotent apply.
    match Api::<K>::namespaced(client.clone(), ns)
        .get_with(name, &GetParams::any())
        .await
    {
        Ok(obj) => Ok(Some(obj)),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(None),
        Err(source) => Err(Error::Read {
            kind,
            name: name.to_string(),
            source,
        }),
    }
}
