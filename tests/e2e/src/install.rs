//! The operator of the test cluster: installing it (from the checkout's
//! build or from the cluster's registry), its rollout, its pods, its scale.

use std::path::{Path, PathBuf};

use anyhow::Result;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use kube::Client;

use crate::{cluster_dir, kubectl_ok, real_nodes, repo_root, LOCAL_REGISTRY};

/// Namespace of the operator installed by `config/default`.
pub const OPERATOR_NAMESPACE: &str = "kube-combo-system";

/// Scales the operator's Deployment to `replicas` (`kubectl scale`).
pub fn scale_operator(replicas: u32) -> Result<()> {
    let replicas = replicas.to_string();
    kubectl_ok(&[
        "scale",
        "deployment/combo-operator",
        "-n",
        OPERATOR_NAMESPACE,
        "--replicas",
        &replicas,
    ])
    .map(drop)
}

/// Installs the operator with `kubectl apply -k config/default` (so it runs
/// with the RBAC of `config/rbac`) and waits for its Deployment; once per
/// test binary, harmless when another binary already did it.
pub fn install_operator() {
    install_operator_from(&repo_root().join("config/default"));
}

/// Installs the operator with `kubectl apply -k <kustomization>` (config/default
/// or an overlay of it) and waits for its Deployment; once per test binary,
/// whichever kustomization comes first.
pub fn install_operator_from(kustomization: &Path) {
    static DONE: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    DONE.get_or_init(|| {
        let dir = kustomization.to_str().expect("a UTF-8 path");
        kubectl_ok(&["apply", "-k", dir]).unwrap_or_else(|e| panic!("kubectl apply -k {dir}: {e}"));
        operator_rolled_out(180).expect("operator Deployment becomes available");
    });
}

/// Installs the operator as the cluster needs it: on simulated nodes the
/// checkout's build ([`install_operator`]), on real nodes the project's
/// images from the cluster's registry ([`install_from_registry`]).
pub fn install_for_cluster() {
    if real_nodes().is_empty() {
        install_operator();
    } else {
        install_from_registry();
    }
}

/// Writes an overlay of `config/default` that points the three images at
/// the cluster's registry (`images:`), as a user does for a private
/// registry, into `DIR/overlay`, and returns its directory.
pub fn registry_overlay() -> Result<PathBuf> {
    let dir = cluster_dir().canonicalize()?.join("overlay");
    std::fs::create_dir_all(&dir)?;
    // kustomize takes a base by a relative path only: up to `/`, then down.
    let up = "../".repeat(dir.components().count().saturating_sub(1));
    let base = repo_root().join("config/default");
    let base = base.strip_prefix("/").unwrap_or(&base);
    let mut text = format!("resources:\n  - {up}{}\nimages:\n", base.display());
    for image in ["operator", "runner", "pinger"] {
        text.push_str(&format!(
            "  - name: kube-combo/{image}\n    newName: {LOCAL_REGISTRY}/kube-combo/{image}\n    newTag: dev\n"
        ));
    }
    std::fs::write(dir.join("kustomization.yaml"), text)?;
    Ok(dir)
}

/// Installs the operator once per test binary from the registry overlay
/// ([`registry_overlay`]), as a user of a private registry does.
pub fn install_from_registry() {
    install_operator_from(&registry_overlay().expect("overlay written"));
}

/// Labels of the operator's pods.
pub const OPERATOR_LABELS: &str =
    "app.kubernetes.io/name=kube-combo,app.kubernetes.io/component=operator";

/// Waits at most `seconds` until the operator Deployment's rollout is
/// complete (`kubectl rollout status`).
pub fn operator_rolled_out(seconds: u32) -> Result<String> {
    kubectl_ok(&[
        "-n",
        OPERATOR_NAMESPACE,
        "rollout",
        "status",
        "deployment/combo-operator",
        &format!("--timeout={seconds}s"),
    ])
}

/// The operator's pods that are not being deleted.
pub async fn operator_pods(c: &Client) -> Result<Vec<Pod>> {
    Ok(Api::<Pod>::namespaced(c.clone(), OPERATOR_NAMESPACE)
        .list(&ListParams::default().labels(OPERATOR_LABELS))
        .await?
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect())
}
