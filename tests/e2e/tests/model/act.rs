//! The model-based test's actions carried out against the API server
//! (docs/testing.md, "Model-based test"): the user's creates, edits and
//! deletes, and the operator's restart with the waits around it.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use anyhow::Result;
use combo_api::{Debugger, Pinger};
use combo_e2e::{
    operator_pid, operator_pods, operator_rolled_out, running_and_ready, wait_for, OPERATOR_LABELS,
    OPERATOR_NAMESPACE,
};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use crate::plan::{self, Action};

/// A kubecombo.io object of `kind` named `name` with `spec`.
fn object<K: DeserializeOwned>(kind: &str, name: &str, spec: Value) -> Result<K> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "kubecombo.io/v1", "kind": kind,
        "metadata": {"name": name},
        "spec": spec,
    }))?)
}

/// A merge patch that sets `spec`.
fn spec_patch(spec: Value) -> Patch<Value> {
    Patch::Merge(json!({ "spec": spec }))
}

/// Carries out one action in namespace `ns`.
pub async fn act(c: &Client, ns: &str, action: &Action) -> Result<()> {
    let cms = Api::<ConfigMap>::namespaced(c.clone(), ns);
    let pingers = Api::<Pinger>::namespaced(c.clone(), ns);
    let debuggers = Api::<Debugger>::namespaced(c.clone(), ns);
    let pp = PostParams::default();
    let patch = PatchParams::default();
    let delete = DeleteParams::default();
    match action {
        Action::CreateConfigMap { name, data } => {
            let cm: ConfigMap =
                serde_json::from_value(json!({"metadata": {"name": name}, "data": data}))?;
            cms.create(&pp, &cm).await?;
        }
        Action::EditConfigMap { name, data } => {
            // Replaces the data whole, keys and all.
            let mut cm = cms.get(name).await?;
            cm.data = Some(data.clone());
            cms.replace(name, &pp, &cm).await?;
        }
        Action::DeleteConfigMap { name } => {
            cms.delete(name, &delete).await?;
        }
        Action::CreatePinger { name, bad_dns } => {
            let spec = plan::pinger_json(bad_dns.as_deref());
            let p: Pinger = object("Pinger", name, spec)?;
            pingers.create(&pp, &p).await?;
        }
        Action::EditPinger { name, bad_dns } => {
            let spec = plan::pinger_json(bad_dns.as_deref());
            pingers.patch(name, &patch, &spec_patch(spec)).await?;
        }
        Action::DeletePinger { name } => {
            pingers.delete(name, &delete).await?;
        }
        Action::CreateDebugger { name, spec } => {
            let d: Debugger = object("Debugger", name, spec.json())?;
            debuggers.create(&pp, &d).await?;
        }
        Action::EditDebugger { name, change } => {
            debuggers
                .patch(name, &patch, &spec_patch(change.patch()))
                .await?;
        }
        Action::DeleteDebugger { name } => {
            debuggers.delete(name, &delete).await?;
        }
        Action::CreateSharingDebuggers {
            first,
            second,
            spec,
        } => {
            // Back to back, as one apply of both makes them.
            let a: Debugger = object("Debugger", first, spec.json())?;
            let b: Debugger = object("Debugger", second, spec.json())?;
            let (ra, rb) = tokio::join!(debuggers.create(&pp, &a), debuggers.create(&pp, &b));
            ra?;
            rb?;
        }
        Action::DeleteScriptsOf { name, .. } => {
            cms.delete(name, &delete).await?;
        }
        Action::RestartOperator => restart_operator(c).await?,
    }
    Ok(())
}

/// The operator's pods, those being deleted too.
async fn every_operator_pod(c: &Client) -> Result<Vec<Pod>> {
    Ok(Api::<Pod>::namespaced(c.clone(), OPERATOR_NAMESPACE)
        .list(&ListParams::default().labels(OPERATOR_LABELS))
        .await?
        .items)
}

/// Whether the operator's Lease is held by a pod `holder` accepts; true
/// when there is no Lease (the operator runs without --leader-elect).
async fn lease_held(c: &Client, holder: impl Fn(&str) -> bool) -> Result<bool> {
    let leases = Api::<Lease>::namespaced(c.clone(), OPERATOR_NAMESPACE);
    Ok(match leases.get_opt("kube-combo-operator").await? {
        Some(l) => l
            .spec
            .and_then(|s| s.holder_identity)
            .is_some_and(|h| holder(&h)),
        None => true,
    })
}

/// Waits until one operator pod runs, Ready, none is being deleted, and
/// it holds the Lease: a test before this one (leader.rs) runs two
/// replicas and scales back, and a standby takes the Lease only once the
/// removed leader's has expired; until then nothing is reconciled and
/// every step's bound would be spent waiting.
pub async fn operator_settled(c: &Client) -> Result<()> {
    wait_for(
        Duration::from_secs(120),
        "one operator pod, Ready, holding the Lease",
        || async {
            let all = every_operator_pod(c).await?;
            let [only] = all.as_slice() else {
                return Ok(false);
            };
            let settled = only.metadata.deletion_timestamp.is_none() && running_and_ready(only);
            Ok(settled && lease_held(c, |h| h == only.name_any()).await?)
        },
    )
    .await
}

/// Deletes the operator's pods and waits until the Deployment's new pod
/// is Ready, the Deployment available and the new pod holds the Lease of
/// `--leader-elect` (docs/operator.md, "Leader election").
async fn restart_operator(c: &Client) -> Result<()> {
    let start = Instant::now();
    let pods = Api::<Pod>::namespaced(c.clone(), OPERATOR_NAMESPACE);
    let pid = operator_pid();
    let old: BTreeSet<String> = operator_pods(c)
        .await?
        .iter()
        .map(|p| p.name_any())
        .collect();
    for name in &old {
        pods.delete(name, &DeleteParams::default()).await?;
    }
    let fresh = || async {
        let all = every_operator_pod(c).await?;
        let gone = all.iter().all(|p| !old.contains(&p.name_any()));
        let ready: Vec<String> = all
            .iter()
            .filter(|p| running_and_ready(p) && !old.contains(&p.name_any()))
            .map(|p| p.name_any())
            .collect();
        Ok::<_, anyhow::Error>((gone, ready))
    };
    wait_for(
        Duration::from_secs(120),
        "a new operator pod Ready and the old one gone",
        || async {
            let (gone, ready) = fresh().await?;
            // Its process is a new one too.
            Ok(gone && !ready.is_empty() && operator_pid().is_some_and(|p| Some(p) != pid))
        },
    )
    .await?;
    operator_rolled_out(120)?;
    wait_for(
        Duration::from_secs(60),
        "the new operator pod holding the Lease",
        || async {
            let (_, ready) = fresh().await?;
            lease_held(c, |h| ready.iter().any(|r| r == h)).await
        },
    )
    .await?;
    eprintln!(
        "model: operator restarted (old pod(s) {old:?}) in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    Ok(())
}
