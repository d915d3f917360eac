//! What the subcommands read from the API server in common: a Debugger and
//! its pods, and an API error told as one line.

use anyhow::Result;
use combo_api::{keys, Debugger};
use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use kube::{Api, Client};

use crate::errors::NotFound;

/// An API error as one line: the server's message, not its whole Status.
pub fn api_error(e: kube::Error, what: &str) -> anyhow::Error {
    match e {
        kube::Error::Api(status) => anyhow::anyhow!("{what}: {}", status.message),
        other => anyhow::Error::new(other).context(what.to_string()),
    }
}

/// Debugger `ns/name`; [`NotFound`] when there is none.
pub async fn debugger(client: Client, ns: &str, name: &str) -> Result<Debugger> {
    Api::<Debugger>::namespaced(client, ns)
        .get_opt(name)
        .await
        .map_err(|e| api_error(e, &format!("reading Debugger {ns}/{name}")))?
        .ok_or_else(|| NotFound::debugger(ns, name).into())
}

/// The pods of Debugger `ns/name` that are not being deleted.
pub async fn debugger_pods(client: &Client, ns: &str, name: &str) -> Result<Vec<Pod>> {
    let pods = Api::<Pod>::namespaced(client.clone(), ns)
        .list(&ListParams::default().labels(&keys::debugger_selector(name)))
        .await
        .map_err(|e| api_error(e, &format!("listing the pods of Debugger {ns}/{name}")))?;
    Ok(pods
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect())
}
