//! Writing results to the cluster: this node's key of the summary ConfigMap
//! (server-side apply, field manager `combo-runner/<node>`), read back after
//! a restart, and the `InspectionFailed` Event on the runner's own pod.

use std::time::Duration;

use combo_api::{keys, NodeSummary, RunId};
use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference, Pod};
use kube::api::{Patch, PatchParams};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::{Api, Client};
use tokio::sync::mpsc;

/// Reason of the Event recorded after a run with failures (SPEC §4).
pub const REASON_INSPECTION_FAILED: &str = "InspectionFailed";
/// Failed items named in the Event message.
const EVENT_ITEMS: usize = 5;
/// First and largest pause between attempts to write the summary.
const BACKOFF: (Duration, Duration) = (Duration::from_millis(200), Duration::from_secs(30));

/// Spacing per node of the window over which the nodes of a Debugger spread
/// the first write of a run's summary.
///
/// Every node of a timestamp run finishes at about the same moment, and all
/// write one object. The API server serialises writes to one object by
/// retrying the losers of each conflict without limit, and a write costs
/// more the more node keys (field managers) the object has: about 18 ms
/// with 200 on the test control plane. So simultaneous writes do quadratic
/// work and can stall for tens of seconds. Each node waits a fixed offset
/// within a window of this much per node before writing; 200 nodes then
/// write within about 5 s (measured: 5.1 to 5.5 s, against 10 to 30 s with
/// a fixed 2 s window and 28 s all at once).
pub const SPREAD_PER_NODE: Duration = Duration::from_millis(25);
/// The shortest spread window, for small or unknown node counts.
pub const SPREAD_MIN: Duration = Duration::from_secs(1);

/// The spread window of a Debugger with `nodes` pods (its
/// `status.desiredPods`; 0 when not known yet).
pub fn spread_window(nodes: u32) -> Duration {
    (SPREAD_PER_NODE * nodes).max(SPREAD_MIN)
}

/// This node's offset within `window` (FNV-1a of its name): stable across
/// restarts, spread evenly over a cluster's nodes.
pub fn spread_delay(node: &str, window: Duration) -> Duration {
    let hash = node.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    let ms = window.as_millis().max(1) as u64;
    Duration::from_millis(hash % ms)
}

/// The server-side apply body that sets only `data.<node>` of ConfigMap
/// `name`: with nothing else in it, the runner owns no other field.
pub fn apply_body(name: &str, namespace: &str, node: &str, value: &str) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": {node: value},
    })
}

/// The run this node last completed, as its key of the summary records it.
pub fn completed_run(cm: &ConfigMap, node: &str) -> Option<RunId> {
    let value = cm.data.as_ref()?.get(node)?;
    let summary = NodeSummary::from_yaml(value).ok()?;
    let t = chrono::DateTime::parse_from_rfc3339(&summary.run_at).ok()?;
    Some(RunId::at(t.to_utc()))
}

/// The Event message: how many items failed and the first few of them.
pub fn event_note(summary: &NodeSummary) -> Option<String> {
    let failed: Vec<String> = summary
        .failed()
        .map(|(c, i, e)| format!("{c}/{i}: {e}"))
        .collect();
    if failed.is_empty() {
        return None;
    }
    let run = summary.run_at.as_str();
    let mut note = format!(
        "run {run}: {} failed item(s): {}",
        failed.len(),
        failed[..failed.len().min(EVENT_ITEMS)].join("; ")
    );
    if failed.len() > EVENT_ITEMS {
        note.push_str(&format!("; and {} more", failed.len() - EVENT_ITEMS));
    }
    // The Events API takes at most 1 kB.
    if note.len() > 1000 {
        let mut end = 996;
        while !note.is_char_boundary(end) {
            end -= 1;
        }
        note.truncate(end);
        note.push_str(" ...");
    }
    Some(note)
}

/// Talks to the API server for one node.
#[derive(Clone)]
pub struct Publisher {
    client: Client,
    namespace: String,
    node: String,
    pod: String,
}

impl Publisher {
    /// A publisher for `node`, whose runner pod is `pod` in `namespace`.
    pub fn new(client: Client, namespace: String, node: String, pod: String) -> Self {
        Publisher {
            client,
            namespace,
            node,
            pod,
        }
    }

    fn configmaps(&self) -> Api<ConfigMap> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    /// Reads the run this node last completed from ConfigMap `name`.
    pub async fn read_completed(&self, name: &str) -> Result<Option<RunId>, kube::Error> {
        Ok(self
            .configmaps()
            .get_opt(name)
            .await?
            .and_then(|cm| completed_run(&cm, &self.node)))
    }

    /// Applies this node's key of ConfigMap `name`.
    pub async fn apply(&self, name: &str, summary: &NodeSummary) -> Result<(), kube::Error> {
        let body = apply_body(name, &self.namespace, &self.node, &summary.to_yaml());
        let pp = PatchParams::apply(&keys::field_manager_runner(&self.node)).force();
        self.configmaps()
            .patch(name, &pp, &Patch::Apply(&body))
            .await
            .map(|_| ())
    }

    /// Records `InspectionFailed` on the runner's pod when `summary` has failures.
    pub async fn record_failures(&self, summary: &NodeSummary) {
        let Some(note) = event_note(summary) else {
            return;
        };
        let recorder = Recorder::new(
            self.client.clone(),
            Reporter {
                controller: format!("{}/{}", keys::GROUP, keys::BIN_RUNNER),
                instance: Some(self.pod.clone()),
            },
        );
        let ev = Event {
            type_: EventType::Warning,
            reason: REASON_INSPECTION_FAILED.to_string(),
            note: Some(note),
            action: "Inspect".to_string(),
            secondary: None,
        };
        let reference = self.pod_reference().await;
        if let Err(e) = recorder.publish(&ev, &reference).await {
            tracing::warn!(error = %e, pod = %self.pod, "cannot record InspectionFailed event");
        }
    }

    /// A reference to the runner's pod, with its uid when the pod is readable.
    async fn pod_reference(&self) -> ObjectReference {
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &self.namespace);
        let uid = match pods.get_opt(&self.pod).await {
            Ok(p) => p.and_then(|p| p.metadata.uid),
            Err(_) => None,
        };
        ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Pod".into()),
            name: Some(self.pod.clone()),
            namespace: Some(self.namespace.clone()),
            uid,
            ..Default::default()
        }
    }
}

/// A summary to write to a ConfigMap.
#[derive(Clone, Debug)]
pub struct Pending {
    /// The ConfigMap.
    pub configmap: String,
    /// This node's value.
    pub summary: NodeSummary,
    /// How many pods the Debugger has (sizes the write spread).
    pub nodes: u32,
}

/// Writes summaries in the background, retrying with backoff until each
/// lands; a newer summary replaces one still waiting, so a slow API server
/// delays a result but never loses the latest one.
pub fn spawn_writer(publisher: Publisher) -> mpsc::UnboundedSender<Pending> {
    let (tx, mut rx) = mpsc::unbounded_channel::<Pending>();
    tokio::spawn(async move {
        while let Some(mut pending) = rx.recv().await {
            let window = spread_window(pending.nodes);
            tokio::time::sleep(spread_delay(&publisher.node, window)).await;
            let mut pause = BACKOFF.0;
            loop {
                while let Ok(newer) = rx.try_recv() {
                    pending = newer;
                }
                match publisher.apply(&pending.configmap, &pending.summary).await {
                    Ok(()) => {
                        tracing::info!(configmap = %pending.configmap, run_at = %pending.summary.run_at,
                            "summary written");
                        break;
                    }
                    Err(e) => {
                        tracing::warn!(configmap = %pending.configmap, error = %e,
                            retry_in_ms = pause.as_millis() as u64, "summary write failed");
                        tokio::time::sleep(pause).await;
                        pause = (pause * 2).min(BACKOFF.1);
                    }
                }
            }
        }
    });
    tx
}

#[cfg(test)]
mod tests {
    use super::*;
    use combo_api::ItemResult;

    #[test]
    fn the_apply_body_sets_only_this_nodes_key() {
        let b = apply_body("dbg-summary", "ops", "node-1", "runAt: x\n");
        assert_eq!(
            b,
            serde_json::json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "dbg-summary", "namespace": "ops"},
                "data": {"node-1": "runAt: x\n"}
            })
        );
    }

    #[test]
    fn the_completed_run_is_read_from_the_nodes_own_key() {
        let cm = ConfigMap {
            data: Some(
                [
                    (
                        "node-1".to_string(),
                        "runAt: \"2026-11-22T06:00:00Z\"\nfinishedAt: \"2026-11-22T06:00:01Z\"\n"
                            .to_string(),
                    ),
                    ("node-2".to_string(), "not: [yaml".to_string()),
                ]
                .into(),
            ),
            ..Default::default()
        };
        assert_eq!(
            completed_run(&cm, "node-1").map(|r| r.to_string()),
            Some("20261122T060000Z".to_string())
        );
        assert_eq!(completed_run(&cm, "node-2"), None);
        assert_eq!(completed_run(&cm, "node-3"), None);
    }

    #[test]
    fn the_spread_window_grows_with_the_node_count_from_a_floor() {
        assert_eq!(spread_window(0), SPREAD_MIN);
        assert_eq!(spread_window(3), SPREAD_MIN);
        assert_eq!(spread_window(200), Duration::from_secs(5));
        assert_eq!(spread_window(1000), Duration::from_secs(25));
    }

    #[test]
    fn spread_delays_are_stable_within_the_window_and_differ_between_nodes() {
        let w = Duration::from_secs(2);
        assert_eq!(spread_delay("node-1", w), spread_delay("node-1", w));
        let delays: std::collections::BTreeSet<Duration> = (0..200)
            .map(|i| spread_delay(&format!("node-{i}"), w))
            .collect();
        assert!(delays.iter().all(|d| *d < w));
        assert!(delays.len() > 150, "only {} distinct offsets", delays.len());
        let early = delays.iter().filter(|d| **d < w / 2).count();
        assert!(
            (60..=140).contains(&early),
            "{early} of 200 in the first half"
        );
    }

    #[test]
    fn the_event_names_the_count_and_the_first_failed_items() {
        let mut s = NodeSummary {
            run_at: "2026-11-22T06:00:00Z".into(),
            ..Default::default()
        };
        assert_eq!(event_note(&s), None);
        let disk = s.categories.entry("disk".into()).or_default();
        for i in 0..7 {
            disk.insert(format!("sd{i}"), ItemResult::err("full"));
        }
        disk.insert("ok1".into(), ItemResult::ok());
        let note = event_note(&s).unwrap();
        assert!(note.starts_with("run 2026-11-22T06:00:00Z: 7 failed item(s): disk/sd0: full; "));
        assert!(note.ends_with("disk/sd4: full; and 2 more"), "{note}");
    }
}
