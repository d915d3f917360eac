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

/// Reason of the Event recorded after a run with failures (docs/runner.md, "`InspectionFailed` Event").
pub const REASON_INSPECTION_FAILED: &str = "InspectionFailed";
/// Failed items named in the Event message.
const EVENT_ITEMS: usize = 5;
/// First and largest pause between attempts to write the summary.
const BACKOFF: (Duration, Duration) = (Duration::from_millis(200), Duration::from_secs(30));
/// First and largest time an attempt to write the summary may take.
///
/// An attempt that takes longer is abandoned (the API server stops redoing
/// it when the connection closes) and retried after its pause, so a burst
/// of writes that the spread did not prevent thins out instead of piling up
/// in the API server. The limit doubles with each attempt, so a slow but
/// working API server still takes the write.
const ATTEMPT_TIMEOUT: (Duration, Duration) = (Duration::from_secs(2), Duration::from_secs(60));

/// Spacing per node of the window over which the nodes of a Debugger spread
/// the first write of a run's summary.
///
/// Every node of a timestamp run finishes at about the same moment, and all
/// write one object. The API server serialises writes to one object by
/// retrying the losers of each conflict without limit, and a write costs
/// more the more node keys (field managers) the object has: under 10 ms
/// with none, 20 to 30 ms with 200 on the test control plane. Once a few
/// writes overlap, every commit makes the others redo their apply, and a
/// burst stalls for tens of seconds. Each node therefore waits a fixed
/// offset within a window of this much per node before writing. Measured
/// with 200 nodes on the test control plane (etcd writes per key count the
/// redone applies; 1.0 is none): 100 ms per node (20 s) took 19.9 to 21.5 s
/// at 1.1 to 1.8 in 5 of 5 runs. 50 ms (10 s) ran clean (1.2 to 1.4) in 5
/// runs while 200 writes in a row took 2.4 to 3.2 s, and queued up in all
/// 7 runs while they took 3.8 s or more (11 to 25 s, 2.0 to 7.4). 25 ms
/// (5 s) collapsed in 3 of 4 runs (23 to 34 s, 12.6 to 14.9).
pub const SPREAD_PER_NODE: Duration = Duration::from_millis(100);
/// The shortest spread window, for small or unknown node counts.
pub const SPREAD_MIN: Duration = Duration::from_secs(1);

/// The spread window of a Debugger with `nodes` pods (its
/// `status.desiredPods`; 0 when not known yet).
pub fn spread_window(nodes: u32) -> Duration {
    (SPREAD_PER_NODE * nodes).max(SPREAD_MIN)
}

/// FNV-1a of `parts` joined by 0 bytes.
fn fnv1a(parts: &[&[u8]]) -> u64 {
    let step = |h: u64, b: u8| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    parts
        .iter()
        .enumerate()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, (i, part)| {
            let h = if i > 0 { step(h, 0) } else { h };
            part.iter().fold(h, |h, b| step(h, *b))
        })
}

/// This node's offset within `window` (FNV-1a of its name): stable across
/// restarts, spread evenly over a cluster's nodes.
pub fn spread_delay(node: &str, window: Duration) -> Duration {
    let ms = window.as_millis().max(1) as u64;
    Duration::from_millis(fnv1a(&[node.as_bytes()]) % ms)
}

/// `first` doubled for each attempt after the first, at most `max`.
fn doubling((first, max): (Duration, Duration), attempt: u32) -> Duration {
    first
        .saturating_mul(1 << attempt.clamp(1, 16).saturating_sub(1))
        .min(max)
}

/// How long attempt `attempt` (from 1) to write a summary may take.
pub fn attempt_timeout(attempt: u32) -> Duration {
    doubling(ATTEMPT_TIMEOUT, attempt)
}

/// The pause after failed attempt `attempt` (from 1) to write `node`'s
/// summary of run `run_at`. The backoff doubles from `BACKOFF.0` up to
/// `BACKOFF.1`, and each node waits its own share, between half and all of
/// it: nodes whose writes failed together (the API server away, the
/// ConfigMap not made yet) do not all come back at the same moment.
pub fn retry_pause(node: &str, run_at: &str, attempt: u32) -> Duration {
    let full = doubling(BACKOFF, attempt);
    let half_ms = (full.as_millis() / 2).max(1) as u64;
    let jitter = fnv1a(&[node.as_bytes(), run_at.as_bytes(), &attempt.to_le_bytes()]) % half_ms;
    full - Duration::from_millis(jitter)
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

/// Writes `pending` as a runner does: waits this node's spread offset, then
/// applies until the write lands, giving each attempt [`attempt_timeout`]
/// and pausing [`retry_pause`] after each failure. Before each attempt
/// `newer` may hand over a newer result, which replaces the one being
/// written. Returns the number of attempts.
pub async fn write(
    publisher: &Publisher,
    mut pending: Pending,
    mut newer: impl FnMut() -> Option<Pending>,
) -> u32 {
    let window = spread_window(pending.nodes);
    tokio::time::sleep(spread_delay(&publisher.node, window)).await;
    let mut attempt = 0;
    loop {
        attempt += 1;
        while let Some(n) = newer() {
            pending = n;
        }
        let limit = attempt_timeout(attempt);
        let error = match tokio::time::timeout(
            limit,
            publisher.apply(&pending.configmap, &pending.summary),
        )
        .await
        {
            Ok(Ok(())) => {
                tracing::info!(configmap = %pending.configmap, run_at = %pending.summary.run_at,
                    attempt, "summary written");
                return attempt;
            }
            Ok(Err(e)) => e.to_string(),
            Err(_) => format!("no answer within {limit:?}: the API server is busy"),
        };
        let pause = retry_pause(&publisher.node, &pending.summary.run_at, attempt);
        tracing::warn!(configmap = %pending.configmap, %error, attempt,
            retry_in_ms = pause.as_millis() as u64, "summary write failed");
        tokio::time::sleep(pause).await;
    }
}

/// Writes summaries in the background with [`write`], so each lands in the
/// end; a newer summary replaces one still waiting, so a slow API server
/// delays a result but never loses the latest one.
pub fn spawn_writer(publisher: Publisher) -> mpsc::UnboundedSender<Pending> {
    let (tx, mut rx) = mpsc::unbounded_channel::<Pending>();
    tokio::spawn(async move {
        while let Some(pending) = rx.recv().await {
            write(&publisher, pending, || rx.try_recv().ok()).await;
        }
    });
    tx
}

#[cfg(test)]
mod tests {
    use super::*;
    use combo_api::ItemResult;
    use http_body_util::BodyExt;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};

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
        assert_eq!(spread_window(10), SPREAD_MIN);
        assert_eq!(spread_window(200), Duration::from_secs(20));
        assert_eq!(spread_window(1000), Duration::from_secs(100));
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
    fn the_spread_offset_is_the_fnv1a_hash_of_the_node_name() {
        // FNV-1a 64 of "node-1" and "kc-node-0", modulo 5000.
        let w = Duration::from_secs(5);
        assert_eq!(spread_delay("node-1", w), Duration::from_millis(643));
        assert_eq!(spread_delay("kc-node-0", w), Duration::from_millis(2667));
    }

    #[test]
    fn retry_pauses_double_to_the_cap_and_differ_between_nodes() {
        let run = "2026-11-22T06:00:00Z";
        for node in ["node-1", "node-2", "a-much-longer-node-name.example"] {
            for attempt in 1..=40 {
                let full = (BACKOFF.0 * 2u32.pow(attempt.min(16) - 1)).min(BACKOFF.1);
                let p = retry_pause(node, run, attempt);
                assert!(
                    p > full / 2 && p <= full,
                    "{node} attempt {attempt}: {p:?} not in ({:?}, {full:?}]",
                    full / 2
                );
            }
        }
        assert_eq!(retry_pause("node-1", run, 3), retry_pause("node-1", run, 3));
        // 200 nodes failing together come back at many different moments.
        for attempt in [1, 4, 12] {
            let pauses: std::collections::BTreeSet<Duration> = (0..200)
                .map(|i| retry_pause(&format!("node-{i}"), run, attempt))
                .collect();
            assert!(
                pauses.len() > 40,
                "attempt {attempt}: {} distinct",
                pauses.len()
            );
        }
        // And not in the same order at the next run.
        let order = |run: &str| {
            let mut v: Vec<usize> = (0..50).collect();
            v.sort_by_key(|i| retry_pause(&format!("node-{i}"), run, 5));
            v
        };
        assert_ne!(order(run), order("2026-11-22T07:00:00Z"));
    }

    /// Sets its flag when dropped.
    struct DropFlag(Arc<AtomicBool>);
    impl Drop for DropFlag {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn an_attempt_without_answer_is_abandoned_and_the_newest_result_written() {
        let requests = Arc::new(Mutex::new(Vec::<(String, String)>::new()));
        let abandoned = Arc::new(AtomicBool::new(false));
        let (seen, flag) = (requests.clone(), abandoned.clone());
        let api_server = tower::service_fn(move |req: http::Request<kube::client::Body>| {
            let (seen, flag) = (seen.clone(), flag.clone());
            async move {
                let uri = req.uri().to_string();
                let body = req.into_body().collect().await.unwrap().to_bytes();
                let first = {
                    let mut seen = seen.lock().unwrap();
                    seen.push((uri, String::from_utf8_lossy(&body).into_owned()));
                    seen.len() == 1
                };
                if first {
                    // Never answers; the writer must give up on it.
                    let _dropped = DropFlag(flag);
                    tokio::time::sleep(Duration::from_secs(24 * 3600)).await;
                }
                let cm = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "dbg-summary", "namespace": "ops"}});
                let body = kube::client::Body::from(serde_json::to_vec(&cm).unwrap());
                Ok::<_, std::convert::Infallible>(http::Response::new(body))
            }
        });
        let publisher = Publisher::new(
            Client::new(api_server, "ops"),
            "ops".into(),
            "node-1".into(),
            "runner-x".into(),
        );
        let run = |at: &str| Pending {
            configmap: "dbg-summary".into(),
            summary: NodeSummary {
                run_at: at.into(),
                ..Default::default()
            },
            nodes: 3,
        };
        let mut asked = 0;
        let start = tokio::time::Instant::now();
        let attempts = write(&publisher, run("2026-11-22T06:00:00Z"), || {
            asked += 1;
            // A newer result arrives while the first attempt hangs.
            (asked == 2).then(|| run("2026-11-22T07:00:00Z"))
        })
        .await;

        assert_eq!(attempts, 2);
        assert!(
            abandoned.load(Ordering::SeqCst),
            "the hung attempt was dropped"
        );
        let waited = spread_delay("node-1", SPREAD_MIN)
            + attempt_timeout(1)
            + retry_pause("node-1", "2026-11-22T06:00:00Z", 1);
        assert_eq!(start.elapsed().as_millis(), waited.as_millis());
        let requests = requests.lock().unwrap();
        assert_eq!(requests.len(), 2);
        for (uri, _) in requests.iter() {
            assert!(
                uri.starts_with("/api/v1/namespaces/ops/configmaps/dbg-summary?")
                    && uri.contains("fieldManager=combo-runner%2Fnode-1")
                    && uri.contains("force=true"),
                "{uri}"
            );
        }
        assert!(requests[0].1.contains("06:00:00Z"), "{}", requests[0].1);
        assert!(requests[1].1.contains("07:00:00Z"), "{}", requests[1].1);
    }

    #[test]
    fn attempts_get_more_time_each_up_to_a_minute() {
        let limits: Vec<u64> = (1..=8).map(|a| attempt_timeout(a).as_secs()).collect();
        assert_eq!(limits, [2, 4, 8, 16, 32, 60, 60, 60]);
        assert_eq!(attempt_timeout(u32::MAX), Duration::from_secs(60));
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
