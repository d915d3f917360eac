//! Writing results to the cluster: this node's DebuggerReport (server-side
//! apply, field manager `combo-runner/<node>`), read back after a restart,
//! and the `InspectionFailed` Event on the runner's own pod.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use combo_api::hash::fnv1a;
use combo_api::report::{node_label_value, report_name};
use combo_api::retry::is_permanent;
use combo_api::{keys, Debugger, DebuggerReport, DebuggerReportSpec, NodeSummary, RunId};
use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use kube::api::{Patch, PatchParams};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::{Api, Client, Resource};
use tokio::sync::mpsc;

use crate::report::Sources;

/// Reason of the Event recorded after a run with failures
/// (docs/runner.md, "`InspectionFailed` Event").
pub const REASON_INSPECTION_FAILED: &str = "InspectionFailed";
/// Reason of the Event recorded when the API server refuses this node's
/// report for good (a 4xx other than 409 and 429, or a request too large).
pub const REASON_REPORT_REJECTED: &str = "ReportRejected";
/// Failed items named in the Event message.
const EVENT_ITEMS: usize = 5;
/// First and largest pause between attempts to write the report.
const BACKOFF: (Duration, Duration) = (Duration::from_millis(200), Duration::from_secs(30));
/// First and largest time an attempt to write the report may take.
///
/// An attempt that takes longer is abandoned and retried after its pause,
/// so a busy API server is not sent more work than it finishes. The limit
/// doubles with each attempt, so a slow but working API server still takes
/// the write.
const ATTEMPT_TIMEOUT: (Duration, Duration) = (Duration::from_secs(2), Duration::from_secs(60));

/// Spacing per node of the window over which the nodes of a Debugger spread
/// the write of a run's reports.
///
/// Each node writes its own object, so writes do not contend with each
/// other; the spread only keeps the API server's request rate down when
/// every node of a timestamp run finishes at the same moment: 2 ms per node
/// is 500 report writes per second at most, within what the test control
/// plane on 2 cores takes while the operator aggregates (docs/benchmarks.md).
pub const SPREAD_PER_NODE: Duration = Duration::from_millis(2);
/// The shortest spread window, for small or unknown node counts.
pub const SPREAD_MIN: Duration = Duration::from_millis(200);
/// The longest spread window: a result is never held back longer.
pub const SPREAD_MAX: Duration = Duration::from_secs(10);

/// The spread window of a Debugger with `nodes` pods (its
/// `status.desiredPods`; 0 when not known yet).
pub fn spread_window(nodes: u32) -> Duration {
    (SPREAD_PER_NODE * nodes).clamp(SPREAD_MIN, SPREAD_MAX)
}

/// This node's offset within `window` (FNV-1a of its name): stable across
/// restarts, spread evenly over a cluster's nodes.
pub fn spread_delay(node: &str, window: Duration) -> Duration {
    let ms = window.as_millis().max(1) as u64;
    Duration::from_millis(fnv1a(&[node.as_bytes()]) % ms)
}

/// `first` doubled for each attempt after the first, at most `max`.
fn doubling((first, max): (Duration, Duration), attempt: u32) -> Duration {
    combo_api::retry::doubling(first, max, attempt)
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

/// The Debugger a report belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Owner {
    /// Its name.
    pub name: String,
    /// Its uid, for the report's ownerReference (deleting the Debugger
    /// deletes its reports).
    pub uid: String,
}

impl Owner {
    /// The owner of the reports of `dbg`; `None` before the Debugger has a uid.
    pub fn of(dbg: &Debugger) -> Option<Owner> {
        Some(Owner {
            name: dbg.metadata.name.clone()?,
            uid: dbg.metadata.uid.clone()?,
        })
    }
}

/// The server-side apply body of `node`'s report: its name, labels, owner
/// and `result`, cut to fit keeping one failure of every script in
/// `sources` before a second of any (see [`DebuggerReportSpec::of_by`]).
/// With nothing else in it, the runner owns no other field.
pub fn apply_body(
    namespace: &str,
    node: &str,
    owner: &Owner,
    result: &NodeSummary,
    sources: &Sources,
) -> serde_json::Value {
    let spec = DebuggerReportSpec::of_by(&owner.name, node, result, |c, i| sources.get(c, i));
    serde_json::json!({
        "apiVersion": DebuggerReport::api_version(&()),
        "kind": DebuggerReport::kind(&()),
        "metadata": {
            "name": report_name(&owner.name, node),
            "namespace": namespace,
            "labels": {
                keys::LABEL_DEBUGGER: owner.name,
                keys::LABEL_NODE: node_label_value(node),
            },
            "ownerReferences": [{
                "apiVersion": Debugger::api_version(&()),
                "kind": Debugger::kind(&()),
                "name": owner.name,
                "uid": owner.uid,
                "controller": true,
            }],
        },
        "spec": spec,
    })
}

/// The run this node last completed, as its report records it.
pub fn completed_run(report: &DebuggerReport) -> Option<RunId> {
    let t = chrono::DateTime::parse_from_rfc3339(&report.spec.run_at).ok()?;
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
    cut_note(&mut note);
    Some(note)
}

/// Cuts an Event message to the 1 kB the Events API takes.
fn cut_note(note: &mut String) {
    if note.len() > 1000 {
        let mut end = 996;
        while !note.is_char_boundary(end) {
            end -= 1;
        }
        note.truncate(end);
        note.push_str(" ...");
    }
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

    fn reports(&self) -> Api<DebuggerReport> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    /// Reads the run this node last completed for Debugger `debugger`
    /// from its report.
    pub async fn read_completed(&self, debugger: &str) -> Result<Option<RunId>, kube::Error> {
        Ok(self
            .reports()
            .get_opt(&report_name(debugger, &self.node))
            .await?
            .and_then(|r| completed_run(&r)))
    }

    /// Applies this node's report of `result`, whose failed items came
    /// from `sources`, for `owner`.
    pub async fn apply(
        &self,
        owner: &Owner,
        result: &NodeSummary,
        sources: &Sources,
    ) -> Result<(), kube::Error> {
        let body = apply_body(&self.namespace, &self.node, owner, result, sources);
        let pp = PatchParams::apply(&keys::field_manager_runner(&self.node)).force();
        self.reports()
            .patch(
                &report_name(&owner.name, &self.node),
                &pp,
                &Patch::Apply(&body),
            )
            .await
            .map(|_| ())
    }

    /// Records `InspectionFailed` on the runner's pod when `summary` has failures.
    pub async fn record_failures(&self, summary: &NodeSummary) {
        if let Some(note) = event_note(summary) {
            self.record(REASON_INSPECTION_FAILED, "Inspect", note).await;
        }
    }

    /// Records `ReportRejected` on the runner's pod.
    pub async fn record_rejected(&self, run_at: &str, error: &kube::Error) {
        let mut note = format!("the report of run {run_at} was refused: {error}");
        cut_note(&mut note);
        self.record(REASON_REPORT_REJECTED, "Report", note).await;
    }

    async fn record(&self, reason: &str, action: &str, note: String) {
        let recorder = Recorder::new(
            self.client.clone(),
            Reporter {
                controller: format!("{}/{}", keys::GROUP, keys::BIN_RUNNER),
                instance: Some(self.pod.clone()),
            },
        );
        let ev = Event {
            type_: EventType::Warning,
            reason: reason.to_string(),
            note: Some(note),
            action: action.to_string(),
            secondary: None,
        };
        let reference = self.pod_reference().await;
        if let Err(e) = recorder.publish(&ev, &reference).await {
            tracing::warn!(error = %e, pod = %self.pod, reason, "cannot record event");
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

/// A result to write as this node's report.
#[derive(Clone, Debug)]
pub struct Pending {
    /// The Debugger it belongs to.
    pub owner: Owner,
    /// This node's result (cut to fit when written).
    pub summary: NodeSummary,
    /// The scripts its failed items came from (what the cut keeps distinct).
    pub sources: Sources,
    /// How many pods the Debugger has (sizes the write spread).
    pub nodes: u32,
}

/// How a write ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Written {
    /// The report landed after this many attempts.
    Landed(u32),
    /// The API server refused it for good (see [`is_permanent`]) at this
    /// attempt: logged and recorded as a `ReportRejected` Event, not retried.
    Rejected(u32),
}

/// Writes `pending` as a runner does: waits this node's spread offset, then
/// applies until the write lands, giving each attempt [`attempt_timeout`]
/// and pausing [`retry_pause`] after each failure. Before each attempt
/// `newer` may hand over a newer result, which replaces the one being
/// written. A refusal that retrying cannot fix ends the write.
pub async fn write(
    publisher: &Publisher,
    mut pending: Pending,
    mut newer: impl FnMut() -> Option<Pending>,
) -> Written {
    let window = spread_window(pending.nodes);
    tokio::time::sleep(spread_delay(&publisher.node, window)).await;
    let mut attempt = 0;
    loop {
        attempt += 1;
        while let Some(n) = newer() {
            pending = n;
        }
        let limit = attempt_timeout(attempt);
        let run_at = pending.summary.run_at.clone();
        let error = match tokio::time::timeout(
            limit,
            publisher.apply(&pending.owner, &pending.summary, &pending.sources),
        )
        .await
        {
            Ok(Ok(())) => {
                tracing::info!(debugger = %pending.owner.name, %run_at, attempt, "report written");
                return Written::Landed(attempt);
            }
            Ok(Err(e)) if is_permanent(&e) => {
                tracing::error!(debugger = %pending.owner.name, %run_at, error = %e, attempt,
                    "report refused; not retried");
                publisher.record_rejected(&run_at, &e).await;
                return Written::Rejected(attempt);
            }
            Ok(Err(e)) => e.to_string(),
            Err(_) => format!("no answer within {limit:?}: the API server is busy"),
        };
        let pause = retry_pause(&publisher.node, &run_at, attempt);
        tracing::warn!(debugger = %pending.owner.name, %error, attempt,
            retry_in_ms = pause.as_millis() as u64, "report write failed");
        tokio::time::sleep(pause).await;
    }
}

/// How long a stopping runner tries to write a result still pending: one
/// attempt, without the spread offset, so the runner still exits within
/// 2 s of SIGTERM (docs/runner.md, "Stopping").
pub const FLUSH_LIMIT: Duration = Duration::from_secs(1);

/// The background writer has ended (its runtime is shutting down).
#[derive(Debug, thiserror::Error)]
#[error("the report writer has ended")]
pub struct WriterGone;

/// The background writer of this node's reports (see [`spawn_writer`]).
#[derive(Clone)]
pub struct Writer {
    publisher: Publisher,
    tx: mpsc::UnboundedSender<(u64, Pending)>,
    /// The newest result handed over and not yet landed or refused, with
    /// its sequence number.
    unlanded: Arc<Mutex<Option<(u64, Pending)>>>,
    sent: Arc<AtomicU64>,
}

impl Writer {
    /// Hands `pending` to the writer.
    pub fn send(&self, pending: Pending) -> Result<(), WriterGone> {
        let seq = self.sent.fetch_add(1, Ordering::SeqCst) + 1;
        *self.unlanded.lock().expect("unlanded lock") = Some((seq, pending.clone()));
        self.tx.send((seq, pending)).map_err(|_| WriterGone)
    }

    /// For a runner that stops: makes one attempt, of at most `limit`, to
    /// write the newest result that has not landed yet, at once. Returns
    /// whether one was pending and landed.
    pub async fn flush(&self, limit: Duration) -> bool {
        let Some((_, pending)) = self.unlanded.lock().expect("unlanded lock").take() else {
            return false;
        };
        let run_at = pending.summary.run_at.clone();
        match tokio::time::timeout(
            limit,
            self.publisher
                .apply(&pending.owner, &pending.summary, &pending.sources),
        )
        .await
        {
            Ok(Ok(())) => {
                tracing::info!(%run_at, "report written before stopping");
                true
            }
            Ok(Err(e)) => {
                tracing::warn!(%run_at, error = %e, "report not written before stopping");
                false
            }
            Err(_) => {
                tracing::warn!(%run_at, "report not written before stopping: no answer within {limit:?}");
                false
            }
        }
    }
}

/// Writes reports in the background with [`write()`], so each lands in the
/// end; a newer result replaces one still waiting, so a slow API server
/// delays a result but never loses the latest one.
pub fn spawn_writer(publisher: Publisher) -> Writer {
    let (tx, mut rx) = mpsc::unbounded_channel::<(u64, Pending)>();
    let writer = Writer {
        publisher: publisher.clone(),
        tx,
        unlanded: Arc::default(),
        sent: Arc::default(),
    };
    let unlanded = writer.unlanded.clone();
    tokio::spawn(async move {
        while let Some((mut seq, pending)) = rx.recv().await {
            write(&publisher, pending, || {
                let (s, newer) = rx.try_recv().ok()?;
                seq = s;
                Some(newer)
            })
            .await;
            let mut slot = unlanded.lock().expect("unlanded lock");
            if slot.as_ref().is_some_and(|(s, _)| *s <= seq) {
                *slot = None;
            }
        }
    });
    writer
}

#[cfg(test)]
mod tests {
    use super::*;
    use combo_api::ItemResult;
    use combo_api::{DebuggerReport, DebuggerReportSpec};
    use combo_testkit::stand_in::{Answer, Request, StandIn};

    fn owner() -> Owner {
        Owner {
            name: "dbg".into(),
            uid: "uid-1".into(),
        }
    }

    #[test]
    fn the_apply_body_is_this_nodes_report_owned_by_its_debugger() {
        let mut result = NodeSummary {
            run_at: "2026-11-22T06:00:00Z".into(),
            finished_at: "2026-11-22T06:00:01Z".into(),
            ..Default::default()
        };
        result
            .categories
            .entry("disk".into())
            .or_default()
            .insert("sda".into(), ItemResult::err("full"));
        let b = apply_body("ops", "node-1", &owner(), &result, &Sources::default());
        assert_eq!(b["apiVersion"], "kubecombo.io/v1");
        assert_eq!(b["kind"], "DebuggerReport");
        assert_eq!(b["metadata"]["name"], "dbg.node-1");
        assert_eq!(b["metadata"]["namespace"], "ops");
        assert_eq!(b["metadata"]["labels"]["kubecombo.io/debugger"], "dbg");
        assert_eq!(b["metadata"]["labels"]["kubecombo.io/node"], "node-1");
        let o = &b["metadata"]["ownerReferences"][0];
        assert_eq!(
            (o["kind"].as_str(), o["uid"].as_str()),
            (Some("Debugger"), Some("uid-1"))
        );
        assert_eq!(o["controller"], true);
        assert_eq!(b["spec"]["node"], "node-1");
        assert_eq!(b["spec"]["failedItems"], 1);
        assert_eq!(b["spec"]["categories"]["disk"]["sda"]["err"], "full");
        assert_eq!(b.as_object().unwrap().len(), 4, "nothing else: {b}");
    }

    /// A run of `script` in `category` with these failed items.
    fn failing(
        category: combo_api::Category,
        script: &str,
        items: Vec<(String, &str)>,
    ) -> crate::run::ScriptRun {
        use crate::exec::{Capture, Exit, Outcome};
        crate::run::ScriptRun {
            script: crate::discover::Script {
                category,
                path: format!("/scripts/{category}/{script}.sh").into(),
                name: script.into(),
                item_prefix: String::new(),
            },
            outcome: Outcome {
                exit: Exit::Timeout(60),
                duration: Duration::from_secs(60),
                lines: vec![],
                stdout: Capture::default(),
                stderr: Capture::default(),
                last_stderr_line: String::new(),
            },
            items: items
                .into_iter()
                .map(|(i, e)| (i, ItemResult::err(e)))
                .collect(),
        }
    }

    #[test]
    fn a_cut_report_keeps_a_lone_failure_of_one_script_beside_many_of_another() {
        use combo_api::Category;
        let t = chrono::DateTime::parse_from_rfc3339("2026-11-22T06:00:00Z")
            .unwrap()
            .to_utc();
        let many = |category, script: &str| {
            failing(
                category,
                script,
                (0..140)
                    .map(|i| (format!("counters:veth{i:03}"), "rx+tx errors 1234 over 100"))
                    .collect(),
            )
        };
        let lone = |category, item: &str| {
            failing(
                category,
                item,
                vec![(item.to_string(), "timeout after 60s")],
            )
        };
        // The lone failure in another category, and in the same category
        // under a name that sorts after the many.
        for (category, lone_item) in [(Category::Svc, "systemd"), (Category::Net, "zz-route")] {
            let report = crate::run::Report {
                run_id: RunId::at(t),
                finished_at: t,
                scripts: vec![many(Category::Net, "counters"), lone(category, lone_item)],
            };
            let summary = crate::report::summary(&report);
            let b = apply_body("ops", "node-1", &owner(), &summary, &Sources::of(&report));
            let cat = category.as_str();
            assert_eq!(
                b["spec"]["categories"][cat][lone_item]["err"], "timeout after 60s",
                "{b}"
            );
            assert_eq!(b["spec"]["failedItems"], 141);
            let net = b["spec"]["categories"]["net"].as_object().unwrap();
            let kept = net.keys().filter(|k| k.starts_with("counters:")).count();
            assert!(kept > 0);
            assert!(
                net.contains_key(&format!("({} failed items omitted)", 140 - kept)),
                "{:?}",
                net.keys().collect::<Vec<_>>()
            );
        }
    }

    #[test]
    fn the_completed_run_is_read_from_the_nodes_report() {
        let mut r = DebuggerReport::new(
            "dbg.node-1",
            DebuggerReportSpec {
                run_at: "2026-11-22T06:00:00Z".into(),
                ..Default::default()
            },
        );
        assert_eq!(
            completed_run(&r).map(|r| r.to_string()),
            Some("20261122T060000Z".to_string())
        );
        r.spec.run_at = "not a time".into();
        assert_eq!(completed_run(&r), None);
    }

    #[test]
    fn the_spread_window_grows_with_the_node_count_between_a_floor_and_a_ceiling() {
        assert_eq!(spread_window(0), SPREAD_MIN);
        assert_eq!(spread_window(3), SPREAD_MIN);
        assert_eq!(spread_window(1000), Duration::from_secs(2));
        assert_eq!(spread_window(5000), SPREAD_MAX);
        assert_eq!(spread_window(u32::MAX), SPREAD_MAX);
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

    fn report_json() -> serde_json::Value {
        serde_json::json!({"apiVersion": "kubecombo.io/v1", "kind": "DebuggerReport",
            "metadata": {"name": "dbg.node-1", "namespace": "ops"},
            "spec": {"debugger": "dbg", "node": "node-1", "runAt": "x"}})
    }

    fn pending(at: &str) -> Pending {
        Pending {
            owner: owner(),
            summary: NodeSummary {
                run_at: at.into(),
                ..Default::default()
            },
            sources: Sources::default(),
            nodes: 3,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn an_attempt_without_answer_is_abandoned_and_the_newest_result_written() {
        let (client, stand_in) = StandIn::answering(|r| match r.n {
            0 => Answer::Never,
            _ => Answer::Json(200, report_json()),
        });
        let publisher = Publisher::new(client, "ops".into(), "node-1".into(), "runner-x".into());
        let mut asked = 0;
        let start = tokio::time::Instant::now();
        let written = write(&publisher, pending("2026-11-22T06:00:00Z"), || {
            asked += 1;
            // A newer result arrives while the first attempt hangs.
            (asked == 2).then(|| pending("2026-11-22T07:00:00Z"))
        })
        .await;

        assert_eq!(written, Written::Landed(2));
        assert!(stand_in.abandoned() > 0, "the hung attempt was dropped");
        let waited = spread_delay("node-1", SPREAD_MIN)
            + attempt_timeout(1)
            + retry_pause("node-1", "2026-11-22T06:00:00Z", 1);
        assert_eq!(start.elapsed().as_millis(), waited.as_millis());
        let requests = stand_in.requests();
        assert_eq!(requests.len(), 2);
        for Request { method, uri, .. } in requests.iter() {
            assert_eq!(method, "PATCH");
            assert!(
                uri.starts_with("/apis/kubecombo.io/v1/namespaces/ops/debuggerreports/dbg.node-1?")
                    && uri.contains("fieldManager=combo-runner%2Fnode-1")
                    && uri.contains("force=true"),
                "{uri}"
            );
        }
        assert!(
            requests[0].body.contains("06:00:00Z"),
            "{}",
            requests[0].body
        );
        assert!(
            requests[1].body.contains("07:00:00Z"),
            "{}",
            requests[1].body
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_refused_report_is_reported_once_and_not_retried_while_throttling_is() {
        let refusal = |code: u16, message: &str| {
            serde_json::json!({"apiVersion": "v1", "kind": "Status", "status": "Failure",
                "message": message, "reason": "", "code": code})
        };
        let (client, stand_in) = StandIn::answering(move |r| {
            if r.uri.contains("/events") {
                Answer::Json(
                    201,
                    serde_json::json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
                    "metadata": {"name": "e", "namespace": "ops"}, "eventTime": null}),
                )
            } else if r.uri.contains("/pods/") {
                Answer::Json(404, refusal(404, "pods \"runner-x\" not found"))
            } else if r.n == 0 {
                Answer::Json(429, refusal(429, "too many requests"))
            } else {
                Answer::Json(
                    422,
                    refusal(422, "DebuggerReport is invalid: spec.node: Invalid value"),
                )
            }
        });
        let publisher = Publisher::new(client, "ops".into(), "node-1".into(), "runner-x".into());
        let written = write(&publisher, pending("2026-11-22T06:00:00Z"), || None).await;
        assert_eq!(written, Written::Rejected(2), "429 retried, 422 not");
        let requests = stand_in.requests();
        let kinds: Vec<(&str, bool)> = requests
            .iter()
            .map(|r| (r.method.as_str(), r.uri.contains("debuggerreports")))
            .collect();
        assert_eq!(
            kinds,
            [
                ("PATCH", true),
                ("PATCH", true),
                ("GET", false),
                ("POST", false)
            ],
            "two attempts, then the pod is looked up and one Event recorded"
        );
        let event = &requests[3].body;
        assert!(event.contains(REASON_REPORT_REJECTED), "{event}");
        assert!(event.contains("spec.node: Invalid value"), "{event}");
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
