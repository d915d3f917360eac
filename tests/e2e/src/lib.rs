//! Shared harness of the end-to-end tests.
//!
//! One control plane serves the whole test run: `tests/run-all.sh` starts it
//! with `tests/e2e/cluster.sh up DIR` and exports `COMBO_E2E_DIR=DIR`. Every
//! test makes a namespace of its own with [`namespace`], so tests can run in
//! parallel without seeing each other's objects.

mod cli;
mod cluster;
mod install;
mod namespaces;
mod objects;
mod pods;
mod wait;

pub mod fixtures;
pub mod nft;
pub mod outage;
pub mod pod_sd;
pub mod prometheus;
pub mod runs;
pub mod victoria;

/// The suite report's recorder (docs/testing.md, "Suite report"), shared
/// with the runner's and the pinger's integration tests.
pub use combo_testkit::suite::{record, suite_report_path};

pub use nft::NftTable;

pub use cli::{apply_yaml, kubectl, kubectl_combo, kubectl_ok};
pub use cluster::{
    client, cluster_dir, kubeconfig, node_netns, nodes, pod_netns, project_binary,
    real_cluster_or_skip, real_node_netns, real_nodes, repo_root, workload_nodes, LOCAL_REGISTRY,
};
pub use install::{
    install_for_cluster, install_from_registry, install_operator, install_operator_from,
    operator_pods, operator_rolled_out, registry_overlay, scale_operator, OPERATOR_LABELS,
    OPERATOR_NAMESPACE,
};
pub use namespaces::{delete_namespace, namespace, TestNamespace};
pub use objects::{debugger_events, events, restarts, set_run_at, summaries};
pub use pods::{container_root, operator_pid, pod_log, pod_process, project_process, scrape};
pub use wait::{pods_on_every_real_node, running_and_ready, wait_for, wait_run_within};
