//! Pod discovery for a Prometheus built without Kubernetes service discovery
//! (Debian's `prometheus`): the targets that discovery makes of pods with
//! role `pod`, labelled as it labels them (`__meta_kubernetes_*`), written
//! to a file that the scrape job reads with `file_sd_configs`. The pods are
//! listed from the API server every 2 seconds, so pods that come and go
//! reach Prometheus as they would through a watch.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, Result};
use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use kube::{Api, Client, ResourceExt};
use serde_json::{json, Map, Value};

use crate::prometheus::label_name;

/// The `file_sd_configs` groups of `pods`: like Kubernetes discovery, one
/// target per container port (`<pod IP>:<port>`), or one per container
/// without ports (the pod IP alone); pods without an IP give none.
pub fn pod_targets(pods: &[Pod]) -> Value {
    let mut groups = Vec::new();
    for pod in pods {
        let Some(ip) = pod.status.as_ref().and_then(|s| s.pod_ip.clone()) else {
            continue;
        };
        let pod_labels = pod_labels(pod, &ip);
        let Some(spec) = &pod.spec else { continue };
        let containers = spec
            .init_containers
            .iter()
            .flatten()
            .map(|c| (c, true))
            .chain(spec.containers.iter().map(|c| (c, false)));
        for (container, init) in containers {
            let mut labels = pod_labels.clone();
            labels.insert(meta("pod_container_name"), json!(container.name));
            labels.insert(
                meta("pod_container_image"),
                json!(container.image.clone().unwrap_or_default()),
            );
            labels.insert(meta("pod_container_init"), json!(init.to_string()));
            let ports = container.ports.iter().flatten().collect::<Vec<_>>();
            if ports.is_empty() {
                groups.push(json!({"targets": [ip], "labels": labels}));
            }
            for port in ports {
                let mut labels = labels.clone();
                labels.insert(
                    meta("pod_container_port_name"),
                    json!(port.name.clone().unwrap_or_default()),
                );
                labels.insert(
                    meta("pod_container_port_number"),
                    json!(port.container_port.to_string()),
                );
                labels.insert(
                    meta("pod_container_port_protocol"),
                    json!(port.protocol.clone().unwrap_or_else(|| "TCP".into())),
                );
                let address = if ip.contains(':') {
                    format!("[{ip}]:{}", port.container_port)
                } else {
                    format!("{ip}:{}", port.container_port)
                };
                groups.push(json!({"targets": [address], "labels": labels}));
            }
        }
    }
    Value::Array(groups)
}

fn meta(name: &str) -> String {
    format!("__meta_kubernetes_{name}")
}

/// The labels every target of a pod carries.
fn pod_labels(pod: &Pod, ip: &str) -> Map<String, Value> {
    let mut labels = Map::new();
    let status = pod.status.clone().unwrap_or_default();
    let ready = status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "Ready")
        .map_or("unknown".to_string(), |c| c.status.to_lowercase());
    for (name, value) in [
        ("namespace", pod.namespace().unwrap_or_default()),
        ("pod_name", pod.name_any()),
        ("pod_ip", ip.to_string()),
        ("pod_ready", ready),
        ("pod_phase", status.phase.unwrap_or_default()),
        (
            "pod_node_name",
            pod.spec
                .as_ref()
                .and_then(|s| s.node_name.clone())
                .unwrap_or_default(),
        ),
        ("pod_host_ip", status.host_ip.unwrap_or_default()),
        ("pod_uid", pod.uid().unwrap_or_default()),
    ] {
        labels.insert(meta(name), json!(value));
    }
    if let Some(owner) = pod
        .owner_references()
        .iter()
        .find(|o| o.controller == Some(true))
    {
        labels.insert(meta("pod_controller_kind"), json!(owner.kind));
        labels.insert(meta("pod_controller_name"), json!(owner.name));
    }
    for (kind, map) in [("label", pod.labels()), ("annotation", pod.annotations())] {
        for (key, value) in map {
            let key = label_name(key);
            labels.insert(meta(&format!("pod_{kind}_{key}")), json!(value));
            labels.insert(meta(&format!("pod_{kind}present_{key}")), json!("true"));
        }
    }
    labels
}

/// Keeps `file` listing the targets of the pods of `namespace`; dropping
/// it stops and removes the file.
pub struct PodDiscovery {
    task: tokio::task::JoinHandle<()>,
    file: PathBuf,
}

impl PodDiscovery {
    /// Writes the file once, then again every 2 seconds in the background.
    pub async fn start(client: Client, namespace: &str, file: PathBuf) -> Result<Self> {
        let api: Api<Pod> = Api::namespaced(client, namespace);
        write_targets(&api, &file).await?;
        let written = file.clone();
        let task = tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(2)).await;
                if let Err(e) = write_targets(&api, &written).await {
                    eprintln!("pod discovery: {e:#}");
                }
            }
        });
        Ok(PodDiscovery { task, file })
    }
}

impl Drop for PodDiscovery {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.file);
    }
}

/// Replaces `file` whole (a rename), so Prometheus never reads half of it.
async fn write_targets(api: &Api<Pod>, file: &Path) -> Result<()> {
    let pods = api.list(&ListParams::default()).await?.items;
    let partial = file.with_extension("partial");
    std::fs::write(&partial, serde_json::to_vec(&pod_targets(&pods))?)?;
    std::fs::rename(&partial, file).with_context(|| file.display().to_string())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(ports: &str) -> Pod {
        serde_json::from_value(json!({
            "metadata": {
                "name": "p", "namespace": "ns", "uid": "u-1",
                "labels": {"app.kubernetes.io/name": "kube-combo"},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "d", "uid": "u-2", "controller": true}]
            },
            "spec": {
                "nodeName": "node-1",
                "containers": [
                    {"name": "runner", "image": "r"},
                    {"name": "pinger", "image": "p", "ports": serde_json::from_str::<Value>(ports).unwrap()}
                ]
            },
            "status": {
                "phase": "Running", "podIP": "10.0.0.5", "hostIP": "172.31.0.11",
                "conditions": [{"type": "Ready", "status": "True"}]
            }
        }))
        .unwrap()
    }

    #[test]
    fn a_container_without_ports_is_one_target_at_the_pod_ip_with_the_pod_role_labels() {
        let groups = pod_targets(&[pod("[]")]);
        assert_eq!(groups.as_array().unwrap().len(), 2);
        let pinger = &groups[1];
        assert_eq!(pinger["targets"], json!(["10.0.0.5"]));
        let labels = &pinger["labels"];
        assert_eq!(labels["__meta_kubernetes_namespace"], "ns");
        assert_eq!(labels["__meta_kubernetes_pod_name"], "p");
        assert_eq!(labels["__meta_kubernetes_pod_container_name"], "pinger");
        assert_eq!(labels["__meta_kubernetes_pod_container_init"], "false");
        assert_eq!(labels["__meta_kubernetes_pod_ready"], "true");
        assert_eq!(labels["__meta_kubernetes_pod_phase"], "Running");
        assert_eq!(labels["__meta_kubernetes_pod_node_name"], "node-1");
        assert_eq!(labels["__meta_kubernetes_pod_controller_kind"], "DaemonSet");
        assert_eq!(
            labels["__meta_kubernetes_pod_label_app_kubernetes_io_name"],
            "kube-combo"
        );
        assert_eq!(
            labels["__meta_kubernetes_pod_labelpresent_app_kubernetes_io_name"],
            "true"
        );
    }

    #[test]
    fn each_container_port_is_a_target_of_its_own() {
        let groups = pod_targets(&[pod(
            r#"[{"name": "metrics", "containerPort": 8080}, {"containerPort": 53, "protocol": "UDP"}]"#,
        )]);
        let pinger: Vec<&Value> = groups
            .as_array()
            .unwrap()
            .iter()
            .filter(|g| g["labels"]["__meta_kubernetes_pod_container_name"] == "pinger")
            .collect();
        assert_eq!(pinger.len(), 2);
        assert_eq!(pinger[0]["targets"], json!(["10.0.0.5:8080"]));
        assert_eq!(
            pinger[0]["labels"]["__meta_kubernetes_pod_container_port_name"],
            "metrics"
        );
        assert_eq!(
            pinger[1]["labels"]["__meta_kubernetes_pod_container_port_protocol"],
            "UDP"
        );
    }

    #[test]
    fn a_pod_without_an_ip_is_not_a_target() {
        let mut p = pod("[]");
        p.status.as_mut().unwrap().pod_ip = None;
        assert_eq!(pod_targets(&[p]), json!([]));
    }
}
