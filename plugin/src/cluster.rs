//! What the subcommands read from the API server in common: the client of
//! the kubeconfig and context asked for, a Debugger and its pods, whether
//! a namespace exists, and an API error told as one line.

use std::path::PathBuf;

use anyhow::{Context as _, Result};
use combo_api::{keys, Debugger};
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::ListParams;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, Config};

use crate::errors::NotFound;

/// Which cluster, as kubectl's `--kubeconfig` and `--context` name it:
/// kubectl does not pass its own flags to a plugin, so the plugin takes
/// them too, and hands them on to the `kubectl exec` it runs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Target {
    /// The kubeconfig file; `None`: `$KUBECONFIG`, else `~/.kube/config`,
    /// else the pod's service account.
    pub kubeconfig: Option<PathBuf>,
    /// The context; `None`: the kubeconfig's current context.
    pub context: Option<String>,
}

impl Target {
    /// The client of this kubeconfig and context.
    pub async fn client(&self) -> Result<Client> {
        let config = if self.kubeconfig.is_none() && self.context.is_none() {
            Config::infer().await.context("no usable kubeconfig")?
        } else {
            let file = match &self.kubeconfig {
                Some(path) => Kubeconfig::read_from(path)
                    .with_context(|| format!("no usable kubeconfig {}", path.display()))?,
                None => Kubeconfig::read().context("no usable kubeconfig")?,
            };
            let options = KubeConfigOptions {
                context: self.context.clone(),
                ..KubeConfigOptions::default()
            };
            Config::from_custom_kubeconfig(file, &options)
                .await
                .context("no usable kubeconfig")?
        };
        Client::try_from(config).context("no usable kubeconfig")
    }

    /// kubectl's flags that name this cluster, for a `kubectl` it runs.
    pub fn kubectl_flags(&self) -> Vec<String> {
        let mut flags = Vec::new();
        if let Some(path) = &self.kubeconfig {
            flags.push(format!("--kubeconfig={}", path.display()));
        }
        if let Some(context) = &self.context {
            flags.push(format!("--context={context}"));
        }
        flags
    }
}

/// Whether namespace `ns` is known not to exist: `false` when it exists
/// or when it cannot be told (no right to read namespaces).
pub async fn namespace_missing(client: &Client, ns: &str) -> bool {
    matches!(
        Api::<Namespace>::all(client.clone()).get_opt(ns).await,
        Ok(None)
    )
}

/// [`NotFound`] of Debugger `ns/name`: no such namespace, when it is
/// known not to exist, else no such Debugger in it.
pub async fn debugger_not_found(client: &Client, ns: &str, name: &str) -> anyhow::Error {
    if namespace_missing(client, ns).await {
        NotFound::namespace(ns).into()
    } else {
        NotFound::debugger(ns, name).into()
    }
}

/// An API error as one line: the server's message, not its whole Status.
pub fn api_error(e: kube::Error, what: &str) -> anyhow::Error {
    match e {
        kube::Error::Api(status) => anyhow::anyhow!("{what}: {}", status.message),
        other => anyhow::Error::new(other).context(what.to_string()),
    }
}

/// Debugger `ns/name`; [`NotFound`] when there is none.
pub async fn debugger(client: Client, ns: &str, name: &str) -> Result<Debugger> {
    let found = Api::<Debugger>::namespaced(client.clone(), ns)
        .get_opt(name)
        .await
        .map_err(|e| api_error(e, &format!("reading Debugger {ns}/{name}")))?;
    match found {
        Some(d) => Ok(d),
        None => Err(debugger_not_found(&client, ns, name).await),
    }
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
