//! Who a runner in a pod is: its node, pod, namespace and Debugger, from
//! the environment the operator gives its pod (the downward API).

use combo_api::keys;

/// Why in-cluster mode cannot start.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A required environment variable is missing.
    #[error("environment variable {0} is not set (it comes from the pod's downward API)")]
    Env(&'static str),
    /// No Kubernetes client could be built.
    #[error("no Kubernetes client")]
    Client(#[source] kube::Error),
}

/// Who this runner is, from the pod's environment.
#[derive(Clone, Debug)]
pub struct Identity {
    /// The node (NODE_NAME): this runner's key in the summary.
    pub node: String,
    /// The runner's pod (POD_NAME), where Events go.
    pub pod: String,
    /// Namespace of the pod and the Debugger (POD_NAMESPACE).
    pub namespace: String,
    /// The Debugger followed (DEBUGGER_NAME).
    pub debugger: String,
}

impl Identity {
    /// Read from the pod's environment; a variable missing or empty is an error.
    pub fn from_env() -> Result<Identity, Error> {
        let var = |k: &'static str| {
            std::env::var(k)
                .ok()
                .filter(|v| !v.is_empty())
                .ok_or(Error::Env(k))
        };
        Ok(Identity {
            node: var(keys::env::NODE_NAME)?,
            pod: var(keys::env::POD_NAME)?,
            namespace: var(keys::env::POD_NAMESPACE)?,
            debugger: var(keys::env::DEBUGGER_NAME)?,
        })
    }
}
