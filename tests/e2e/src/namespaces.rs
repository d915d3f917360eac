//! The namespace of one test, made fresh and deleted after it.

use std::process::Command;
use std::time::Duration;

use anyhow::Result;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams, PostParams};

use crate::{client, kubeconfig, wait_for};

/// A namespace made for one test; deleted when dropped (best effort, in
/// the background, so a failing test still leaves the cluster usable).
pub struct TestNamespace {
    /// The namespace's name.
    pub name: String,
}

impl Drop for TestNamespace {
    fn drop(&mut self) {
        if std::env::var_os("COMBO_E2E_KEEP").is_none() {
            let _ = Command::new("kubectl")
                .env("KUBECONFIG", kubeconfig())
                .args(["delete", "namespace", &self.name, "--wait=false"])
                .output();
        }
    }
}

/// Makes a fresh namespace `<prefix>-<random>`.
pub async fn namespace(prefix: &str) -> TestNamespace {
    let suffix = format!(
        "{:x}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
            & 0xffffff
    );
    let name = format!("{prefix}-{suffix}");
    let api: Api<Namespace> = Api::all(client().await);
    let ns: Namespace = serde_json::from_value(serde_json::json!({
        "metadata": {"name": name}
    }))
    .unwrap();
    api.create(&PostParams::default(), &ns)
        .await
        .expect("namespace created");
    TestNamespace { name }
}

/// Deletes a namespace and waits until it is gone.
pub async fn delete_namespace(name: &str) -> Result<()> {
    let api: Api<Namespace> = Api::all(client().await);
    let _ = api.delete(name, &DeleteParams::default()).await;
    wait_for(Duration::from_secs(60), "namespace deleted", || async {
        Ok(api.get_opt(name).await?.is_none())
    })
    .await
}
