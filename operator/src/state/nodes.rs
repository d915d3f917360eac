//! The nodes' marks as the operator knows them: a watch of Nodes, started
//! by the first reconcile that needs it, that keeps per node only the
//! conditions and taints whose names start with `kubecombo.io/` (nothing
//! for a node without any), and the operator's own node writes until the
//! watch shows them (docs/operator.md#what-the-nodes-cost).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Node;
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, Client, ResourceExt};
use tokio::sync::watch;

use crate::core::node_marks::{NodeMarks, Wanted};
use crate::state::own_writes::RECENT_TTL;
use crate::watch::health::Watches;
use crate::watch::readiness::{Change, Index};

/// What the node watch keeps. Clones share it.
#[derive(Clone)]
pub struct NodeWatch {
    index: Index<String, NodeMarks>,
    demanded: watch::Sender<bool>,
    written: Arc<Mutex<HashMap<String, (NodeMarks, Instant)>>>,
}

impl Default for NodeWatch {
    fn default() -> Self {
        NodeWatch {
            index: Index::default(),
            demanded: watch::Sender::new(false),
            written: Default::default(),
        }
    }
}

impl NodeWatch {
    /// Starts the watch (once) and waits until it has listed.
    pub async fn ready(&self) {
        self.demanded
            .send_if_modified(|d| !std::mem::replace(d, true));
        self.index.ready().wait().await;
    }

    /// Whether a reconcile asked for the watch.
    pub fn demanded(&self) -> bool {
        *self.demanded.borrow()
    }

    /// Applies one watch event: a node with marks is kept as its marks, one
    /// without is dropped.
    pub fn observe(&self, event: &watcher::Event<Node>) {
        self.index.observe_with(event, |map, change| match change {
            Change::Apply(node) => {
                let marks = NodeMarks::of(node);
                if marks.is_empty() {
                    map.remove(&node.name_any());
                } else {
                    map.insert(node.name_any(), marks);
                }
            }
            Change::Delete(node) => {
                map.remove(&node.name_any());
            }
        });
    }

    /// Records `marks` as what `node` carries after the operator's write,
    /// and forgets records older than [`RECENT_TTL`].
    pub fn wrote(&self, node: &str, marks: NodeMarks) {
        self.wrote_at(node, marks, Instant::now());
    }

    fn wrote_at(&self, node: &str, marks: NodeMarks, now: Instant) {
        let mut w = self.written.lock().expect("node writes lock");
        w.retain(|_, (_, at)| now.saturating_duration_since(*at) < RECENT_TTL);
        w.insert(node.to_string(), (marks, now));
    }

    /// What `node` carries: the operator's own write while the watch does
    /// not show it yet (at most [`RECENT_TTL`]), else what the watch shows.
    pub fn marks(&self, node: &str) -> NodeMarks {
        self.marks_at(node, Instant::now())
    }

    fn marks_at(&self, node: &str, now: Instant) -> NodeMarks {
        let watched = self.index.get(node).unwrap_or_default();
        let w = self.written.lock().expect("node writes lock");
        match w.get(node) {
            Some((marks, at)) if fresh(*at, now) && *marks != watched => marks.clone(),
            _ => watched,
        }
    }

    /// Every node that carries a mark of `wanted`'s Debugger, with its marks.
    pub fn owned_by(&self, wanted: &Wanted) -> BTreeMap<String, NodeMarks> {
        let now = Instant::now();
        let mut names = self.index.filter_map(|n, _| Some(n.clone()));
        names.extend(
            self.written
                .lock()
                .expect("node writes lock")
                .keys()
                .cloned(),
        );
        names
            .into_iter()
            .map(|n| {
                let m = self.marks_at(&n, now);
                (n, m)
            })
            .filter(|(_, m)| wanted.owns(m))
            .collect()
    }

    /// Nodes kept (those with marks).
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// Whether no node is kept.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }
}

fn fresh(at: Instant, now: Instant) -> bool {
    now.saturating_duration_since(at) < RECENT_TTL
}

/// Once a reconcile asks for it, watches every Node into `nodes` until
/// dropped (with the controller), its health kept in `watches` as `Node`.
pub async fn run(client: Client, nodes: NodeWatch, watches: Watches) {
    let mut demanded = nodes.demanded.subscribe();
    if demanded.wait_for(|d| *d).await.is_err() {
        return;
    }
    tracing::info!("watching Nodes: a Debugger asks for node conditions or taints");
    let health = watches.clone();
    let keep = nodes.clone();
    // From the API server's watch cache: 5,000 Nodes are not read from etcd.
    let config = watcher::Config::default().any_semantic();
    watcher(Api::<Node>::all(client), config)
        .default_backoff()
        .inspect(move |e| health.observe("Node", e))
        .inspect_ok(move |e| keep.observe(e))
        .for_each(|_| std::future::ready(()))
        .await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{NodeCondition, NodeSpec, NodeStatus, Taint};

    fn node(name: &str, conditions: &[&str], taints: &[&str]) -> Node {
        let mut n = Node::default();
        n.metadata.name = Some(name.into());
        n.status = Some(NodeStatus {
            conditions: Some(
                conditions
                    .iter()
                    .map(|t| NodeCondition {
                        type_: t.to_string(),
                        status: "True".into(),
                        ..NodeCondition::default()
                    })
                    .collect(),
            ),
            ..NodeStatus::default()
        });
        n.spec = Some(NodeSpec {
            taints: Some(
                taints
                    .iter()
                    .map(|k| Taint {
                        key: k.to_string(),
                        effect: "NoSchedule".into(),
                        ..Taint::default()
                    })
                    .collect(),
            ),
            ..NodeSpec::default()
        });
        n
    }

    #[test]
    fn only_nodes_with_marks_are_kept_and_only_the_marks() {
        let w = NodeWatch::default();
        w.observe(&watcher::Event::Init);
        w.observe(&watcher::Event::InitApply(node(
            "plain",
            &["Ready"],
            &["x"],
        )));
        w.observe(&watcher::Event::InitApply(node(
            "marked",
            &["Ready", "kubecombo.io/ops.d.disk"],
            &["kubecombo.io/ops.d.disk", "dedicated"],
        )));
        w.observe(&watcher::Event::InitDone);
        assert_eq!(w.len(), 1);
        let m = w.marks("marked");
        assert_eq!(m.conditions.len(), 1);
        assert_eq!(m.taints.len(), 1);
        assert!(w.marks("plain").is_empty());
        // The marks go: the node is dropped.
        w.observe(&watcher::Event::Apply(node("marked", &["Ready"], &[])));
        assert!(w.is_empty());
        w.observe(&watcher::Event::Apply(node(
            "n",
            &["kubecombo.io/a.b.net"],
            &[],
        )));
        w.observe(&watcher::Event::Delete(node("n", &[], &[])));
        assert!(w.is_empty(), "a deleted node goes");
    }

    #[test]
    fn an_own_write_stands_in_until_the_watch_shows_it_or_for_at_most_the_ttl() {
        let w = NodeWatch::default();
        w.observe(&watcher::Event::Init);
        w.observe(&watcher::Event::InitDone);
        let t0 = Instant::now();
        let written = NodeMarks::of(&node("n", &["kubecombo.io/ops.d.disk"], &[]));
        w.wrote_at("n", written.clone(), t0);
        assert_eq!(w.marks_at("n", t0), written, "the watch lags");
        assert!(
            w.marks_at("n", t0 + RECENT_TTL).is_empty(),
            "the watch wins after the TTL"
        );
        w.observe(&watcher::Event::Apply(node(
            "n",
            &["kubecombo.io/ops.d.disk"],
            &[],
        )));
        assert_eq!(w.marks_at("n", t0), written);
        // Records older than the TTL go at the next write.
        w.wrote_at("m", NodeMarks::default(), t0 + RECENT_TTL);
        assert_eq!(w.written.lock().unwrap().len(), 1);
    }
}
