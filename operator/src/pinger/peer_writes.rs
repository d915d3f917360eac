//! The peer lists' writer: follows the Debuggers' pods, keeps their
//! [`Groups`] and applies each changed list to its pod, at most
//! [`WRITES_PER_TICK`] per [`TICK`] (docs/operator.md, "Peer lists").

use std::sync::Arc;
use std::time::Duration;

use combo_api::{keys, Debugger, Pinger};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Patch, PatchParams};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher::{self, watcher};
use kube::runtime::WatchStreamExt;
use kube::{Api, Client};
use serde_json::json;

use crate::metrics::registry::Metrics;
use crate::pinger::peer_lists::{bound, Groups, Write};
use crate::watch::waiting::Waits;

/// Follows the Debuggers' pods through `api` (the operator's namespace or
/// all) and keeps their lists written, until dropped (the controller stops
/// with leadership). The same events keep `waits`, why the pods wait.
pub async fn run(
    client: Client,
    api: Api<Pod>,
    debuggers: Store<Debugger>,
    pingers: Store<Pinger>,
    waits: Waits,
    metrics: Arc<Metrics>,
) {
    let config = watcher::Config::default().labels(keys::LABEL_DEBUGGER);
    let mut events = watcher(api, config).default_backoff().boxed();
    let mut groups = Groups::default();
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            event = events.next() => match event {
                Some(Ok(e)) => {
                    waits.observe(&e);
                    groups.observe(e);
                }
                Some(Err(e)) => tracing::warn!(error = %e, "watching the Debuggers' pods failed; retrying"),
                None => return,
            },
            _ = tick.tick() => {
                // Choosing every list of a big Debugger again (a restart, a
                // maxPeers edit) costs n² hashes, 25 million at 5,000 pods: off the
                // threads that serve the other tasks.
                tokio::task::block_in_place(|| {
                    groups.bound_all(|(ns, name)| {
                        let d = debuggers.get(&ObjectRef::new(name).within(ns));
                        bound(d.as_deref(), |p| pingers.get(&ObjectRef::new(p).within(ns)))
                    })
                });
                let batch = groups.due(WRITES_PER_TICK);
                let results: Vec<(Write, Outcome)> = futures::stream::iter(batch)
                    .map(|w| {
                        let client = client.clone();
                        async move {
                            let outcome = write(client, &w).await;
                            (w, outcome)
                        }
                    })
                    .buffer_unordered(IN_FLIGHT)
                    .collect()
                    .await;
                for (w, outcome) in &results {
                    if *outcome == Outcome::Written {
                        metrics.peer_list_written();
                    }
                    groups.written(w, *outcome != Outcome::Failed);
                }
            }
        }
    }
}

/// What became of one list write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    /// The pod carries the list.
    Written,
    /// The pod is gone or was replaced (404, a UID precondition failing):
    /// not retried, the watch removes or renews it.
    Gone,
    /// Anything else: tried again next round.
    Failed,
}

/// Applies one list.
async fn write(client: Client, w: &Write) -> Outcome {
    let api: Api<Pod> = Api::namespaced(client, &w.key.0);
    let patch = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": w.pod,
            "namespace": w.key.0,
            "uid": w.uid,
            "annotations": {
                keys::ANNOTATION_PEERS: w.value,
                keys::ANNOTATION_PEER_NODES: w.nodes,
            },
        },
    });
    let params = PatchParams::apply(keys::FIELD_MANAGER_PEERS).force();
    match api.patch(&w.pod, &params, &Patch::Apply(&patch)).await {
        Ok(_) => Outcome::Written,
        Err(kube::Error::Api(s)) if matches!(s.code, 404 | 409 | 422) => {
            tracing::debug!(pod = %w.pod, code = s.code, "peer list not written: the pod is gone or replaced");
            Outcome::Gone
        }
        Err(e) => {
            tracing::warn!(error = %e, pod = %w.pod, namespace = %w.key.0, "writing a peer list failed; retrying");
            Outcome::Failed
        }
    }
}

/// How often waiting lists are written and Pinger changes picked up.
pub const TICK: Duration = Duration::from_millis(500);

/// Lists written per [`TICK`] at most: 200 a second.
pub const WRITES_PER_TICK: usize = 100;

/// Lists written at once.
const IN_FLIGHT: usize = 16;

#[cfg(test)]
#[path = "peer_writes_tests.rs"]
mod tests;
