//! Access to the test control plane (`COMBO_E2E_DIR`, made by
//! `tests/e2e/cluster.sh up DIR`) for the runner's cluster tests and
//! benchmark.

#![allow(dead_code, reason = "each test or benchmark uses a different subset")]

use std::path::PathBuf;

use combo_runner::cluster::publish::Publisher;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{DeleteParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, Config};

/// The control plane's state directory.
pub fn cluster_dir() -> PathBuf {
    PathBuf::from(
        std::env::var_os("COMBO_E2E_DIR")
            .expect("needs a control plane: tests/e2e/cluster.sh up DIR, then COMBO_E2E_DIR=DIR"),
    )
}

/// An admin client of the control plane.
pub async fn admin_client() -> Client {
    let kc = Kubeconfig::read_from(cluster_dir().join("kubeconfig")).expect("kubeconfig");
    let cfg = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .expect("kubeconfig valid");
    Client::try_from(cfg).expect("client")
}

/// The publisher of `node`'s report in `ns` a runner uses, of a pod that
/// does not exist (`none`).
pub fn publisher(client: &Client, ns: &str, node: &str) -> Publisher {
    Publisher::new(client.clone(), ns.into(), node.into(), "none".into())
}

/// A namespace for one test, deleted (in the background) when dropped.
pub struct Ns {
    /// Its name.
    pub name: String,
    client: Client,
}

impl Ns {
    /// Makes `<prefix>-<random>`.
    pub async fn new(client: &Client, prefix: &str) -> Ns {
        let name = format!(
            "{prefix}-{:x}",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
                & 0xffffff
        );
        let ns: Namespace =
            serde_json::from_value(serde_json::json!({"metadata": {"name": name}})).unwrap();
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &ns)
            .await
            .expect("namespace created");
        Ns {
            name,
            client: client.clone(),
        }
    }

    /// Deletes the namespace and waits (up to 10 minutes: the namespace
    /// controller deletes 5,000 reports at its 20 requests a second) until
    /// it is gone, so its deletion does not load the API server during what
    /// follows.
    pub async fn delete_and_wait(&self) {
        let api: Api<Namespace> = Api::all(self.client.clone());
        let _ = api.delete(&self.name, &DeleteParams::background()).await;
        for _ in 0..1200 {
            match api.get_opt(&self.name).await {
                Ok(None) => return,
                _ => tokio::time::sleep(std::time::Duration::from_millis(500)).await,
            }
        }
        panic!("namespace {} still there after 10 minutes", self.name);
    }
}

impl Drop for Ns {
    fn drop(&mut self) {
        let api: Api<Namespace> = Api::all(self.client.clone());
        let name = self.name.clone();
        if let Ok(h) = tokio::runtime::Handle::try_current() {
            h.spawn(async move {
                let _ = api.delete(&name, &DeleteParams::background()).await;
            });
        }
    }
}
