//! Watches of the Pinger and of the pinger's own pod. They retry with backoff
//! for as long as the process runs: an unreachable API server is logged, never
//! fatal.

use std::net::IpAddr;

use combo_api::keys;
use combo_api::{Pinger, PingerSpec};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::core::PartialObjectMeta;
use kube::runtime::watcher::{self, watcher, Event};
use kube::runtime::WatchStreamExt;
use kube::{Api, ResourceExt};
use tokio::sync::mpsc;

use super::peers::Pods;

/// A change seen by a watch.
#[derive(Debug)]
pub enum Update {
    /// The Pinger's spec (None: the Pinger is gone).
    Spec(Option<Box<PingerSpec>>),
    /// The complete peer set after a (re)list.
    Peers(Pods),
    /// One pod changed: its peer addresses, none when it is no peer now.
    Peer(String, Vec<IpAddr>),
    /// The pinger's own pod UID, for Event references.
    SelfUid(String),
    /// The peer list the operator wrote on the own pod (annotation
    /// [`keys::ANNOTATION_PEERS`]) as it reads, or None without one.
    Listed(Option<String>),
    /// The nodes of that list's addresses (annotation
    /// [`keys::ANNOTATION_PEER_NODES`]), or None without one.
    ListedNodes(Option<String>),
    /// The node of each peer pod after a (re)list, by pod name.
    PeerNodes(std::collections::BTreeMap<String, String>),
    /// One pod's node, with its [`Update::Peer`].
    PeerNode(String, String),
}

/// Follows one Pinger by name.
pub async fn pinger(api: Api<Pinger>, name: String, tx: mpsc::Sender<Update>) {
    let cfg = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let mut stream = watcher(api, cfg).default_backoff().boxed();
    let mut seen = false;
    while let Some(event) = stream.next().await {
        let update = match event {
            Ok(Event::Init) => {
                seen = false;
                continue;
            }
            Ok(Event::Apply(p)) | Ok(Event::InitApply(p)) => {
                seen = true;
                Update::Spec(Some(Box::new(p.spec)))
            }
            Ok(Event::InitDone) if !seen => Update::Spec(None),
            Ok(Event::InitDone) => continue,
            Ok(Event::Delete(_)) => Update::Spec(None),
            Err(e) => {
                tracing::warn!(error = %e, pinger = %name, "watching the Pinger failed; retrying");
                continue;
            }
        };
        if tx.send(update).await.is_err() {
            return;
        }
    }
}

/// Follows the pinger's own pod: its UID (Events refer to it) and the peer
/// list the operator writes on it (docs/pinger.md, "Peer discovery"), each
/// sent when it changes, the list's first reading included. Both are
/// metadata, so the watch asks for metadata only: a list change costs the
/// pod's metadata, not its spec and status as well.
pub async fn own_pod(api: Api<PartialObjectMeta<Pod>>, me: String, tx: mpsc::Sender<Update>) {
    let cfg = watcher::Config::default().fields(&format!("metadata.name={me}"));
    let mut stream = watcher(api, cfg).default_backoff().boxed();
    let mut sent_uid: Option<String> = None;
    let mut sent_list: Option<Option<String>> = None;
    let mut sent_nodes: Option<Option<String>> = None;
    while let Some(event) = stream.next().await {
        let pod = match event {
            Ok(Event::Apply(pod)) | Ok(Event::InitApply(pod)) => pod,
            Ok(_) => continue,
            Err(e) => {
                tracing::warn!(error = %e, pod = %me, "watching the own pod failed; retrying");
                continue;
            }
        };
        if pod.name_any() != me {
            continue;
        }
        let mut updates = Vec::new();
        if let Some(uid) = pod.uid().filter(|u| sent_uid.as_ref() != Some(u)) {
            sent_uid = Some(uid.clone());
            updates.push(Update::SelfUid(uid));
        }
        let list = pod.annotations().get(keys::ANNOTATION_PEERS).cloned();
        if sent_list.as_ref() != Some(&list) {
            sent_list = Some(list.clone());
            updates.push(Update::Listed(list));
        }
        let nodes = pod.annotations().get(keys::ANNOTATION_PEER_NODES).cloned();
        if sent_nodes.as_ref() != Some(&nodes) {
            sent_nodes = Some(nodes.clone());
            updates.push(Update::ListedNodes(nodes));
        }
        for update in updates {
            if tx.send(update).await.is_err() {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use combo_testkit::stand_in::{Answer, StandIn};
    use serde_json::json;
    use std::time::Duration;

    fn list(items: serde_json::Value) -> Answer {
        Answer::ok(
            json!({"apiVersion": "kubecombo.io/v1", "kind": "PingerList",
                "metadata": {"resourceVersion": "3"}, "items": items})
            .to_string(),
        )
    }

    #[tokio::test(start_paused = true)]
    async fn a_malformed_pinger_is_an_error_retried_and_the_good_one_follows() {
        let pinger = |spec: serde_json::Value| {
            json!({"apiVersion": "kubecombo.io/v1", "kind": "Pinger",
                "metadata": {"name": "p", "namespace": "ops", "resourceVersion": "3"},
                "spec": spec})
        };
        let (client, seen) = StandIn::scripted(vec![
            list(json!([pinger(json!({"count": "many"}))])),
            Answer::ok("not json"),
            list(json!([{"kind": "Pinger"}])),
            list(json!([pinger(json!({"ping": ["127.0.0.1"], "count": 2}))])),
        ]);
        let (tx, mut rx) = mpsc::channel(4);
        let task = tokio::spawn(pinger_watch(client, tx));
        let update = tokio::time::timeout(Duration::from_secs(600), rx.recv())
            .await
            .expect("an update within 10 minutes");
        match update {
            Some(Update::Spec(Some(spec))) => assert_eq!(spec.count, 2),
            other => panic!("expected the good spec, got {other:?}"),
        }
        assert!(seen.count() >= 4);
        assert!(!task.is_finished());
        task.abort();
    }

    fn pod(annotation: Option<&str>, version: u32) -> serde_json::Value {
        let mut pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "me", "namespace": "ops", "uid": "u1",
                "resourceVersion": version.to_string(), "annotations": {"other": "x"}}});
        if let Some(value) = annotation {
            pod["metadata"]["annotations"][keys::ANNOTATION_PEERS] = value.into();
            // The operator writes the nodes beside the addresses.
            let nodes: Vec<String> = value.split(',').map(|ip| format!("{ip}=n-{ip}")).collect();
            pod["metadata"]["annotations"][keys::ANNOTATION_PEER_NODES] = nodes.join(",").into();
        }
        pod
    }

    #[tokio::test(start_paused = true)]
    async fn the_own_pods_peer_list_is_sent_when_it_changes_and_none_without_one() {
        let list = json!({"apiVersion": "v1", "kind": "PodList",
            "metadata": {"resourceVersion": "3"}, "items": [pod(None, 3)]});
        let events = [
            (Some("10.0.0.2,10.0.0.3"), 4),
            // Another change of the pod: the list is the same, nothing sent.
            (Some("10.0.0.2,10.0.0.3"), 5),
            (Some("10.0.0.4"), 6),
            (None, 7),
        ]
        .iter()
        .map(|(a, v)| json!({"type": "MODIFIED", "object": pod(*a, *v)}).to_string())
        .collect::<Vec<_>>()
        .join("\n");
        let (client, seen) = StandIn::scripted(vec![
            Answer::ok(list.to_string()),
            Answer::ok(events + "\n"),
        ]);
        let (tx, mut rx) = mpsc::channel(16);
        let task = tokio::spawn(own_pod(Api::namespaced(client, "ops"), "me".into(), tx));
        let mut got = Vec::new();
        while let Ok(Some(update)) = tokio::time::timeout(Duration::from_secs(60), rx.recv()).await
        {
            got.push(format!("{update:?}"));
        }
        assert_eq!(
            got,
            [
                r#"SelfUid("u1")"#,
                "Listed(None)",
                "ListedNodes(None)",
                r#"Listed(Some("10.0.0.2,10.0.0.3"))"#,
                r#"ListedNodes(Some("10.0.0.2=n-10.0.0.2,10.0.0.3=n-10.0.0.3"))"#,
                r#"Listed(Some("10.0.0.4"))"#,
                r#"ListedNodes(Some("10.0.0.4=n-10.0.0.4"))"#,
                "Listed(None)",
                "ListedNodes(None)",
            ]
        );
        // Only the own pod is asked for, never the Debugger's pods.
        let uris = seen.uris();
        assert!(uris.len() >= 2, "{uris:?}");
        assert!(
            uris.iter()
                .all(|u| u.contains("fieldSelector=metadata.name%3Dme")),
            "{uris:?}"
        );
        task.abort();
    }

    async fn pinger_watch(client: kube::Client, tx: mpsc::Sender<Update>) {
        pinger(Api::namespaced(client, "ops"), "p".into(), tx).await
    }
}
