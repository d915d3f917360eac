//! kube-combo as a user runs it: its own container images, pulled from a
//! registry by real kubelets with containerd (`cluster.sh up --nodes 0
//! --real 2`), installed with `kubectl apply -k` of an overlay of
//! `config/default`, driven through `kubectl combo`, `kubectl exec` and
//! `kubectl logs`. Skipped, with a message, on a cluster without real nodes.

#[path = "real_nodes/columns.rs"]
mod columns;
#[path = "real_nodes/helpers.rs"]
mod helpers;
#[path = "real_nodes/inspection.rs"]
mod inspection;
#[path = "real_nodes/peers.rs"]
mod peers;
#[path = "real_nodes/private_registry.rs"]
mod private_registry;
#[path = "real_nodes/privileges.rs"]
mod privileges;
#[path = "real_nodes/settings.rs"]
mod settings;
