//! Where the test cluster is and what it is made of: the repository and
//! the cluster's state directory, its kubeconfig and a client, its
//! simulated and real nodes and their network namespaces.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use combo_testkit::netplan;
use k8s_openapi::api::core::v1::Pod;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

/// Root of the repository.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repository root exists")
}

/// State directory of the running control plane (`COMBO_E2E_DIR`).
pub fn cluster_dir() -> PathBuf {
    let dir = std::env::var_os("COMBO_E2E_DIR").expect(
        "end-to-end tests need a control plane: run `tests/e2e/cluster.sh up DIR` and set COMBO_E2E_DIR=DIR (tests/run-all.sh does both)",
    );
    PathBuf::from(dir)
}

/// Path of one of the project's binaries, from the build the cluster's
/// pods run (`DIR/bin-dir`, written by `cluster.sh up`).
pub fn project_binary(name: &str) -> PathBuf {
    let record = cluster_dir().join("bin-dir");
    let dir = std::fs::read_to_string(&record).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (start the cluster with tests/e2e/cluster.sh up)",
            record.display()
        )
    });
    PathBuf::from(dir.trim_end()).join(name)
}

/// Path of the admin kubeconfig. Refuses when the cluster's bridge is gone:
/// without it the API server address is not on this machine, and requests to
/// it would leave the machine by the default route.
pub fn kubeconfig() -> PathBuf {
    assert!(
        Path::new("/sys/class/net").join(netplan::BRIDGE).exists(),
        "the test cluster's network (bridge {}) is not up: run tests/e2e/cluster.sh up",
        netplan::BRIDGE
    );
    cluster_dir().join("kubeconfig")
}

/// An admin client for the test cluster. Make one per test: a client belongs
/// to the tokio runtime it was made in.
pub async fn client() -> Client {
    let kc = Kubeconfig::read_from(kubeconfig()).expect("kubeconfig readable");
    let cfg = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .expect("kubeconfig valid");
    Client::try_from(cfg).expect("client")
}

/// Names of the simulated nodes, `node-1` .. `node-N`.
pub fn nodes() -> Vec<String> {
    let n: usize = std::fs::read_to_string(cluster_dir().join("nodes"))
        .context("cluster nodes file")
        .and_then(|s| Ok(s.trim().parse()?))
        .expect("cluster.sh writes DIR/nodes");
    (1..=n).map(|i| format!("node-{i}")).collect()
}

/// The network namespace of a simulated node (`ip netns exec <it> ...`); a
/// rule put there applies to all traffic of the node's pods.
pub fn node_netns(node: &str) -> String {
    netplan::node_netns(node)
}

/// The network namespace of a pod, by its UID.
pub fn pod_netns(pod_uid: &str) -> String {
    netplan::pod_netns(pod_uid)
}

/// Names of the real nodes (kubelet and containerd), `real-1` .. `real-N`
/// (`cluster.sh up --real N`); empty when the cluster has none.
pub fn real_nodes() -> Vec<String> {
    let n: usize = std::fs::read_to_string(cluster_dir().join("real-nodes"))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0);
    (1..=n).map(|i| format!("real-{i}")).collect()
}

/// The network namespace of a real node; rules put there apply to the
/// node's pods (their CNI bridge is inside it).
pub fn real_node_netns(node: &str) -> String {
    netplan::node_netns(node)
}

/// Whether the cluster is made of real nodes only, as the real-node tests
/// need (every pod of the samples lands on a real node). Prints why not.
pub fn real_cluster_or_skip(test: &str) -> bool {
    let real = real_nodes().len();
    let simulated = nodes().len();
    if real == 0 || simulated > 0 {
        eprintln!(
            "skipping {test}: it needs a cluster of real nodes only \
             (tests/e2e/cluster.sh up DIR --nodes 0 --real 2); this one has {simulated} simulated and {real} real nodes"
        );
        return false;
    }
    true
}

/// The nodes a DaemonSet Debugger of the tests covers: the simulated ones,
/// or the real ones on a cluster of real nodes only (real nodes carry a
/// taint when simulated ones are there too; docs/testing.md, "Real nodes").
pub fn workload_nodes() -> Vec<String> {
    let simulated = nodes();
    if simulated.is_empty() {
        real_nodes()
    } else {
        simulated
    }
}

/// The real node a pod is scheduled on, if it is one.
pub(crate) fn pod_real_node(pod: &Pod) -> Option<&str> {
    let node = pod.spec.as_ref()?.node_name.as_deref()?;
    real_nodes().iter().any(|n| n == node).then_some(node)
}

/// The registry the real nodes pull kube-combo's images from
/// (`cluster.sh up --real N` pushes them there).
pub const LOCAL_REGISTRY: &str = netplan::REGISTRY;
