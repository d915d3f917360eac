//! Reaching a pod of the test cluster from this machine: its metrics, what
//! it printed, its files in the simulator, its process.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context as _, Result};
use combo_api::keys;
use k8s_openapi::api::core::v1::Pod;

use crate::cluster::pod_real_node;
use crate::{cluster_dir, kubectl_ok, pod_netns, project_binary, real_node_netns, real_nodes};

/// `/metrics` of a pod served on `port`. A pod of a simulated node is
/// asked from inside its network namespace, on 127.0.0.1; a pod of a real
/// node from inside the node's network namespace, on the pod's IP (its CNI
/// bridge is there).
pub fn scrape(pod: &Pod, port: u16) -> Result<String> {
    let (netns, host) = match pod_real_node(pod) {
        Some(node) => {
            let ip = pod.status.as_ref().and_then(|s| s.pod_ip.clone());
            (real_node_netns(node), ip.context("pod IP")?)
        }
        None => {
            let uid = pod.metadata.uid.as_deref().context("pod uid")?;
            (pod_netns(uid), "127.0.0.1".to_string())
        }
    };
    let out = Command::new("ip")
        .args(["netns", "exec", &netns, "curl", "-sf", "--max-time", "5"])
        .arg(format!("http://{host}:{port}/metrics"))
        .output()?;
    if !out.status.success() {
        bail!("scrape failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// What a container of a pod printed (stdout and stderr): on real nodes
/// `kubectl logs`, else as the node simulator keeps it:
/// `DIR/pods/<ns>/<pod>/<container>.log`. Empty when it cannot be read yet.
pub fn pod_log(namespace: &str, pod: &str, container: &str) -> String {
    if !real_nodes().is_empty() {
        return kubectl_ok(&["logs", "-n", namespace, pod, "-c", container]).unwrap_or_default();
    }
    std::fs::read_to_string(
        cluster_dir()
            .join("pods")
            .join(namespace)
            .join(pod)
            .join(format!("{container}.log")),
    )
    .unwrap_or_default()
}

/// Root of a container's private files in the simulator: the copy of the
/// image's `/scripts` lives at `<it>/scripts`.
pub fn container_root(namespace: &str, pod: &str, container: &str) -> PathBuf {
    cluster_dir()
        .join("pods")
        .join(namespace)
        .join(pod)
        .join(container)
}

/// Pid of the operator process of a cluster of simulated nodes (its pod
/// runs `combo-operator` from the project's build as a host process).
pub fn operator_pid() -> Option<i32> {
    project_process(keys::BIN_OPERATOR, &[])
}

/// Pid of a process of a cluster of simulated nodes that runs the project's
/// binary `binary` and whose environment holds every `NAME=value` entry of
/// `env` (a pod's `POD_NAME`, say), from /proc; a binary rebuilt since the
/// process started still counts.
pub fn project_process(binary: &str, env: &[&str]) -> Option<i32> {
    let exe = project_binary(binary);
    find_process(|path| path == exe, env)
}

/// Pid of the process of pod `pod` that runs the project's binary `binary`,
/// wherever the pod runs: a simulated node runs the cluster's build as a
/// host process ([`project_process`]), a real node runs the image's binary
/// in a container, which is a process of this machine too. Either way the
/// environment names the pod (`POD_NAME`, `POD_NAMESPACE`).
pub fn pod_process(binary: &str, pod: &Pod) -> Option<i32> {
    let name = pod.metadata.name.as_deref()?;
    let namespace = pod.metadata.namespace.as_deref()?;
    let env = [
        format!("{}={name}", keys::env::POD_NAME),
        format!("{}={namespace}", keys::env::POD_NAMESPACE),
    ];
    let env: Vec<&str> = env.iter().map(String::as_str).collect();
    if pod_real_node(pod).is_some() {
        // The container's root is not this machine's: its exe is known by
        // the file's name only.
        find_process(|path| path.file_name() == Some(binary.as_ref()), &env)
    } else {
        project_process(binary, &env)
    }
}

/// The first process in /proc whose executable `exe` accepts and whose
/// environment holds every entry of `env`.
fn find_process(exe: impl Fn(&Path) -> bool, env: &[&str]) -> Option<i32> {
    std::fs::read_dir("/proc")
        .ok()?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .find(|pid| {
            std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|p| {
                let p = p.to_string_lossy();
                exe(Path::new(p.trim_end_matches(" (deleted)")))
            }) && (env.is_empty()
                || std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|vars| {
                    let vars: Vec<&[u8]> = vars.split(|b| *b == 0).collect();
                    env.iter().all(|want| vars.contains(&want.as_bytes()))
                }))
        })
}
