//! A container's environment as the kubelet would give it.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Pod};

/// What the node knows about a pod besides its spec.
#[derive(Debug, Clone)]
pub struct PodFacts {
    /// The pod's IP.
    pub pod_ip: String,
    /// The node's IP.
    pub host_ip: String,
    /// `host:port` of the API server as pods reach it.
    pub api_host: String,
    /// Port of the API server.
    pub api_port: String,
}

/// Why an env entry could not be resolved.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum EnvError {
    /// A `fieldRef` path the simulator does not provide.
    #[error("env {name}: fieldRef {path} is not supported")]
    UnsupportedField {
        /// Variable name.
        name: String,
        /// The field path.
        path: String,
    },
    /// A `valueFrom` source other than fieldRef.
    #[error("env {name}: only value and fieldRef are supported")]
    UnsupportedSource {
        /// Variable name.
        name: String,
    },
}

/// The environment of `container` in `pod`: the in-cluster variables, then the
/// container's own `env` in order with `fieldRef`s resolved. `$(VAR)`
/// references to earlier variables are expanded as the kubelet does.
pub fn container_env(
    pod: &Pod,
    container: &Container,
    facts: &PodFacts,
) -> Result<BTreeMap<String, String>, EnvError> {
    let meta = &pod.metadata;
    let spec = pod.spec.as_ref();
    let mut env = BTreeMap::new();
    env.insert(
        "PATH".to_string(),
        "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".to_string(),
    );
    env.insert(
        "HOSTNAME".to_string(),
        meta.name.clone().unwrap_or_default(),
    );
    env.insert(
        "KUBERNETES_SERVICE_HOST".to_string(),
        facts.api_host.clone(),
    );
    env.insert(
        "KUBERNETES_SERVICE_PORT".to_string(),
        facts.api_port.clone(),
    );
    env.insert("HOME".to_string(), "/root".to_string());
    for var in container.env.iter().flatten() {
        let value = match (&var.value, &var.value_from) {
            (_, Some(from)) => {
                let Some(field) = &from.field_ref else {
                    return Err(EnvError::UnsupportedSource {
                        name: var.name.clone(),
                    });
                };
                let v = match field.field_path.as_str() {
                    "metadata.name" => meta.name.clone(),
                    "metadata.namespace" => meta.namespace.clone(),
                    "metadata.uid" => meta.uid.clone(),
                    "spec.nodeName" => spec.and_then(|s| s.node_name.clone()),
                    "spec.serviceAccountName" => spec.and_then(|s| s.service_account_name.clone()),
                    // A simulated pod has one address: the kubelet joins
                    // all of them with commas.
                    "status.podIP" | "status.podIPs" => Some(facts.pod_ip.clone()),
                    "status.hostIP" => Some(facts.host_ip.clone()),
                    path => {
                        return Err(EnvError::UnsupportedField {
                            name: var.name.clone(),
                            path: path.to_string(),
                        })
                    }
                };
                v.unwrap_or_default()
            }
            (Some(v), None) => expand(v, &env),
            (None, None) => String::new(),
        };
        env.insert(var.name.clone(), value);
    }
    Ok(env)
}

/// Expands `$(NAME)` from `env`; `$$` escapes a dollar; unknown names stay.
fn expand(value: &str, env: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = value;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(a) = after.strip_prefix('$') {
            out.push('$');
            rest = a;
        } else if let Some(inner) = after.strip_prefix('(') {
            match inner.find(')') {
                Some(end) if env.contains_key(&inner[..end]) => {
                    out.push_str(&env[&inner[..end]]);
                    rest = &inner[end + 1..];
                }
                _ => {
                    out.push('$');
                    rest = after;
                }
            }
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod() -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "dbg-x1", "namespace": "ops", "uid": "u-1"},
            "spec": {"nodeName": "node-2", "serviceAccountName": "sa", "containers": [{
                "name": "runner", "image": "combo-runner",
                "env": [
                    {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                    {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                    {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                    {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                    {"name": "POD_IPS", "valueFrom": {"fieldRef": {"fieldPath": "status.podIPs"}}},
                    {"name": "HOST_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}},
                    {"name": "DEBUGGER_NAME", "value": "dbg"},
                    {"name": "GREETING", "value": "$(DEBUGGER_NAME) on $(NODE_NAME) costs $$5 $(NOPE)"}
                ]
            }]}
        }))
        .unwrap()
    }

    fn facts() -> PodFacts {
        PodFacts {
            pod_ip: "172.30.2.5".into(),
            host_ip: "172.31.0.12".into(),
            api_host: "172.31.0.1".into(),
            api_port: "6443".into(),
        }
    }

    #[test]
    fn downward_api_fields_resolve_from_the_pod_and_the_node() {
        let p = pod();
        let env = container_env(&p, &p.spec.as_ref().unwrap().containers[0], &facts()).unwrap();
        assert_eq!(env["POD_NAME"], "dbg-x1");
        assert_eq!(env["POD_NAMESPACE"], "ops");
        assert_eq!(env["NODE_NAME"], "node-2");
        assert_eq!(env["POD_IP"], "172.30.2.5");
        assert_eq!(env["POD_IPS"], "172.30.2.5");
        assert_eq!(env["HOST_IP"], "172.31.0.12");
        assert_eq!(env["KUBERNETES_SERVICE_HOST"], "172.31.0.1");
        assert_eq!(env["KUBERNETES_SERVICE_PORT"], "6443");
        assert_eq!(env["GREETING"], "dbg on node-2 costs $5 $(NOPE)");
    }

    #[test]
    fn unsupported_sources_are_named_in_the_error() {
        let mut p = pod();
        let c = &mut p.spec.as_mut().unwrap().containers[0];
        c.env = Some(vec![serde_json::from_value(serde_json::json!(
            {"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['a']"}}}
        ))
        .unwrap()]);
        let c = c.clone();
        let err = container_env(&p, &c, &facts()).unwrap_err();
        assert!(err.to_string().contains("metadata.labels['a']"), "{err}");
    }
}
