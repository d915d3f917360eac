//! Writing results to the cluster: this node's DebuggerReport (server-side
//! apply, field manager `combo-runner/<node>`), read back after a restart,
//! and the `InspectionFailed` Event on the runner's own pod.
//!
//! Two things the report keeps for its runner are both a kind of history:
//! what this node has run ([`History`], for the schedule, in annotations)
//! and the verdict of each item over its last runs ([`Verdicts`],
//! `spec.history`). Together they are [`Kept`].

use std::time::Duration;

use combo_api::hash::fnv1a;
/// The item verdicts of a node's last runs; [`History`] here is what the
/// node has run.
pub use combo_api::history::History as Verdicts;
use combo_api::report::{node_label_value, report_name};
use combo_api::{keys, Debugger, DebuggerReport, DebuggerReportSpec, NodeSummary, RunId};
use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use kube::api::{Patch, PatchParams};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::{Api, Client, Resource};

use crate::cluster::schedule::History;
use crate::run::report::Sources;

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

/// What this node's report keeps for its runner from run to run, read
/// back after a restart.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Kept {
    /// What this node has run, in the report's annotations (see
    /// [`history_of`]).
    pub ran: History,
    /// The verdicts of its items, the report's `spec.history`, with the
    /// run of the result they are written with already in them
    /// (docs/reference.md, "DebuggerReport history").
    pub verdicts: Verdicts,
}

impl Kept {
    /// What `report` keeps: what the node ran and its verdicts.
    pub fn of(report: DebuggerReport) -> Kept {
        Kept {
            ran: history_of(&report),
            verdicts: report.spec.history,
        }
    }
}

/// What the node ran, without verdicts: what a report that keeps no item
/// history records.
impl From<&History> for Kept {
    fn from(ran: &History) -> Kept {
        Kept {
            ran: *ran,
            verdicts: Verdicts::default(),
        }
    }
}

/// A copy, so that [`apply_body`] takes a [`Kept`] or a [`History`].
impl From<&Kept> for Kept {
    fn from(kept: &Kept) -> Kept {
        kept.clone()
    }
}

/// The server-side apply body of `node`'s report: its name, labels, owner
/// and `result`, cut to fit keeping one failure of every script in
/// `sources` before a second of any (see [`DebuggerReportSpec::of_by`]),
/// `kept.verdicts` as its `spec.history`, and in its annotations what
/// `kept.ran` says this node has run ([`keys::ANNOTATION_SCHEDULED_RUN`],
/// [`keys::ANNOTATION_RUN_NOW_DONE`]); `kept` may be a [`History`] alone,
/// for a body without verdicts. With nothing else in it, the runner owns no
/// other field.
pub fn apply_body(
    namespace: &str,
    node: &str,
    owner: &Owner,
    result: &NodeSummary,
    sources: &Sources,
    kept: impl Into<Kept>,
) -> serde_json::Value {
    let kept = kept.into();
    // Verdicts without a run are left out of the body (the spec skips an
    // empty history), so a report that never had one keeps none.
    let spec = DebuggerReportSpec::of_by(&owner.name, node, result, |c, i| sources.get(c, i))
        .with_history(kept.verdicts);
    let mut annotations = serde_json::Map::new();
    for (key, run) in [
        (keys::ANNOTATION_SCHEDULED_RUN, kept.ran.completed),
        (keys::ANNOTATION_RUN_NOW_DONE, kept.ran.run_now),
    ] {
        if let Some(run) = run {
            annotations.insert(key.into(), run.rfc3339().into());
        }
    }
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
            "annotations": annotations,
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

/// What this node has run, as its report records it: the last run of
/// `runAt` (its [`keys::ANNOTATION_SCHEDULED_RUN`], else, from a runner that
/// did not write it, the report's run) and the last run-now request
/// ([`keys::ANNOTATION_RUN_NOW_DONE`]).
pub fn history_of(report: &DebuggerReport) -> History {
    let annotation = |key: &str| {
        report
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(key))
            .and_then(|v| RunId::from_rfc3339(v))
    };
    History {
        completed: annotation(keys::ANNOTATION_SCHEDULED_RUN)
            .or_else(|| RunId::from_rfc3339(&report.spec.run_at)),
        run_now: annotation(keys::ANNOTATION_RUN_NOW_DONE),
        ran_since_start: false,
    }
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
    // Err lines a script printed past the item limit count each.
    let count = summary.failed_count().max(failed.len());
    let shown = failed.len().min(EVENT_ITEMS);
    let mut note = format!(
        "run {run}: {count} failed item(s): {}",
        failed[..shown].join("; ")
    );
    if count > shown {
        note.push_str(&format!("; and {} more", count - shown));
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
    pub(crate) node: String,
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

    /// Reads what this node's report for Debugger `debugger` keeps (see
    /// [`Kept::of`]); nothing without a report.
    pub async fn read_kept(&self, debugger: &str) -> Result<Kept, kube::Error> {
        Ok(self
            .reports()
            .get_opt(&report_name(debugger, &self.node))
            .await?
            .map(Kept::of)
            .unwrap_or_default())
    }

    /// Applies this node's report of `result`, whose failed items came
    /// from `sources`, for `owner`, recording `kept`.
    pub async fn apply(
        &self,
        owner: &Owner,
        result: &NodeSummary,
        sources: &Sources,
        kept: &Kept,
    ) -> Result<(), kube::Error> {
        let body = apply_body(&self.namespace, &self.node, owner, result, sources, kept);
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
    /// What this node has run with this result and its item verdicts
    /// after it, kept in the report for the next run and a restarted
    /// runner.
    pub history: Kept,
}

#[cfg(test)]
#[path = "publish_tests.rs"]
mod tests;
