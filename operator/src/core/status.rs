//! Status: what `kubectl get dbg` shows, computed from the workload and the
//! DebuggerReports. Pure; the controller writes it only when it differs
//! from what the API server has.

use chrono::{DateTime, SecondsFormat, Utc};
use combo_api::{Debugger, DebuggerStatus, RunAt};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use crate::core::validate::Invalid;

/// The condition type kept on every Debugger.
pub const CONDITION_READY: &str = "Ready";
/// Reason of `Ready=True`: every desired pod is Ready.
pub const REASON_WORKLOAD_READY: &str = "WorkloadReady";
/// Reason of `Ready=False` while pods are missing or not Ready.
pub const REASON_WORKLOAD_NOT_READY: &str = "WorkloadNotReady";
/// Reason of `Ready=False` when the DaemonSet schedules no pod.
pub const REASON_NO_NODES_SELECTED: &str = "NoNodesSelected";
/// Reason of `Ready=False` while the Pinger it uses is not Ready (no
/// targets, or invalid ones): its pods run, but its pinger probes nothing
/// or less than asked.
pub const REASON_PINGER_NOT_READY: &str = "PingerNotReady";
/// Reason of `Ready=False` while the API server refuses the workload
/// (see [`Invalid::WorkloadRefused`]) or the DaemonSet's pods.
pub const REASON_WORKLOAD_REFUSED: &str = "WorkloadRefused";
/// Reason of `Ready=True` while a Ready DaemonSet replaces its pods for a
/// new template (docs/operator.md#validation-status-and-events).
pub const REASON_ROLLING_OUT: &str = "RollingOut";
/// How long a roll may keep `Ready=True` with pods not Ready: a roll that
/// has not finished by then is `WorkloadNotReady`.
pub const ROLLOUT_GRACE: chrono::Duration = chrono::Duration::seconds(120);

/// Pod counts of a workload.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PodCounts {
    /// Pods the workload should have.
    pub desired: i32,
    /// Pods that are Ready.
    pub ready: i32,
    /// The DaemonSet controller has seen the current spec and schedules no
    /// pod: the selector (or a toleration missing) leaves no node.
    pub no_node: bool,
    /// The DaemonSet replaces its pods for a new template: its controller
    /// has not seen the current spec yet, or not every pod is updated.
    pub rolling: bool,
}

/// Pod counts of a DaemonSet, from its status.
pub fn daemonset_counts(ds: &DaemonSet) -> PodCounts {
    let s = ds.status.clone().unwrap_or_default();
    let seen = match (ds.metadata.generation, s.observed_generation) {
        (Some(generation), Some(observed)) => observed >= generation,
        _ => false,
    };
    let updated = s.updated_number_scheduled.unwrap_or_default();
    PodCounts {
        desired: s.desired_number_scheduled,
        ready: s.number_ready,
        no_node: seen && s.desired_number_scheduled == 0,
        rolling: !seen || updated < s.desired_number_scheduled,
    }
}

/// Whether a pod's Ready condition is True.
pub fn pod_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Pod counts of a single Pod: it is desired; ready when its Ready
/// condition is True; no node when the scheduler found none that its
/// selector, affinity and tolerations allow.
pub fn pod_counts(pod: &Pod) -> PodCounts {
    let unplaceable = pod
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "PodScheduled"))
        .is_some_and(|c| {
            let message = c.message.as_deref().unwrap_or_default();
            c.status == "False"
                && c.reason.as_deref() == Some("Unschedulable")
                && NO_NODE_MATCHES.iter().any(|m| message.contains(m))
        });
    PodCounts {
        desired: 1,
        ready: i32::from(pod_ready(pod)),
        no_node: unplaceable,
        rolling: false,
    }
}

/// The scheduler's words for nodes a Pod's selector, affinity or
/// tolerations rule out (kube-scheduler's filter messages; a node named in
/// `matchFields` that does not exist is one the prefilter leaves out, or
/// none at all in a cluster without nodes).
const NO_NODE_MATCHES: [&str; 6] = [
    "didn't match node selector",
    "didn't match Pod's node affinity",
    "didn't tolerate",
    "filtered out by the prefilter result",
    "didn't satisfy plugin(s) [NodeAffinity]",
    "no nodes available to schedule pods",
];

/// The message of `NoNodesSelected`: what the workload waits for, naming
/// the node a `pod` Debugger asks for
/// (docs/operator.md, "What a Debugger becomes").
fn no_node_message(dbg: &Debugger) -> String {
    let node = &dbg.spec.node_name;
    if dbg.spec.workload_type == combo_api::WorkloadType::Pod && !node.is_empty() {
        format!(
            "no node named {node:?} (nodeName) that the selector, tolerations and affinity allow: the pod waits, unscheduled, for one to join; nothing runs"
        )
    } else {
        "the selector, tolerations and affinity match no node: nothing runs".to_string()
    }
}

/// Run fields taken from the DebuggerReports (see `reports::runs::run_summary`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunSummary {
    /// Newest `runAt` over all nodes.
    pub last_run_at: Option<String>,
    /// Nodes whose report carries that `runAt`.
    pub completed_nodes: i32,
    /// Failed items over those nodes.
    pub failed_items: i32,
    /// Skipped items over those nodes.
    pub skipped_items: i32,
    /// The script sets those nodes ran, the set of most nodes first, at
    /// most [`combo_api::debugger::MAX_SCRIPT_SETS`].
    pub script_sets: Vec<combo_api::ScriptSet>,
}

/// The status `dbg` should have. `invalid` is the validation outcome;
/// `counts` is `None` when no workload exists; `run_at` is its parsed
/// `runAt`, `None` when it does not parse.
pub fn compute(
    dbg: &Debugger,
    invalid: Option<&Invalid>,
    counts: Option<PodCounts>,
    runs: &RunSummary,
    run_at: Option<&RunAt>,
    now: DateTime<Utc>,
    pinger: Option<&str>,
) -> DebuggerStatus {
    let counts = counts.unwrap_or_default();
    let previous = dbg.status.as_ref().map(|s| s.conditions.as_slice());
    let rolling = rolling(previous.unwrap_or_default(), counts.rolling, now);
    let (status, reason, message) = match invalid {
        Some(i) => ("False", i.reason(), i.to_string()),
        None if counts.no_node => ("False", REASON_NO_NODES_SELECTED, no_node_message(dbg)),
        None if pinger.is_some() => (
            "False",
            REASON_PINGER_NOT_READY,
            pinger.unwrap_or_default().to_string(),
        ),
        None if counts.desired > 0 && counts.ready == counts.desired => (
            "True",
            REASON_WORKLOAD_READY,
            format!("{}/{} pods ready", counts.ready, counts.desired),
        ),
        None if rolling => (
            "True",
            REASON_ROLLING_OUT,
            format!(
                "rolling out a new pod template: {}/{} pods ready",
                counts.ready, counts.desired
            ),
        ),
        None => (
            "False",
            REASON_WORKLOAD_NOT_READY,
            format!("{}/{} pods ready", counts.ready, counts.desired),
        ),
    };
    let generation = dbg.metadata.generation.unwrap_or_default();
    let ready = ready_condition(previous, status, reason, message, generation, now);
    DebuggerStatus {
        observed_generation: generation,
        conditions: vec![ready],
        desired_pods: counts.desired,
        ready_pods: counts.ready,
        ready: format!("{}/{}", counts.ready, counts.desired),
        last_run_at: runs.last_run_at.clone(),
        next_run_at: run_at.and_then(|r| r.next_after(now)).map(rfc3339),
        completed_nodes: runs.completed_nodes,
        failed_items: runs.failed_items,
        skipped_items: runs.skipped_items,
        script_sets: runs.script_sets.clone(),
    }
}

/// Whether a roll keeps `Ready=True`: it starts when a Ready Debugger's
/// DaemonSet gets a new template (`started`), and lasts until every new
/// pod is Ready (the caller's earlier arm), at most [`ROLLOUT_GRACE`]. Pure.
fn rolling(previous: &[Condition], started: bool, now: DateTime<Utc>) -> bool {
    ready_of(previous).is_some_and(|c| {
        c.status == "True"
            && ((c.reason == REASON_WORKLOAD_READY && started)
                || (c.reason == REASON_ROLLING_OUT && now < rollout_deadline(c)))
    })
}

/// When a roll that began at `ready`'s transition stops counting as Ready.
fn rollout_deadline(ready: &Condition) -> DateTime<Utc> {
    let since = ready.last_transition_time.0.as_second();
    DateTime::from_timestamp(since, 0).unwrap_or_default() + ROLLOUT_GRACE
}

/// `status` with `waiting` (what the pods wait on) added to the message
/// of a `Ready` condition that counts pods not Ready (`WorkloadNotReady`,
/// `RollingOut`): `<ready>/<desired> pods ready; pods waiting: ...`. Pure.
pub fn with_waiting(status: &mut DebuggerStatus, waiting: Option<&str>) {
    let Some(waiting) = waiting else { return };
    let counted = [
        REASON_WORKLOAD_NOT_READY,
        REASON_ROLLING_OUT,
        REASON_WORKLOAD_REFUSED,
    ];
    if let Some(ready) = counting_ready(status, &counted) {
        ready.message = format!("{}; {waiting}", ready.message);
    }
}

/// The `Ready` condition of `status` when its reason is one of `reasons`,
/// those that count pods not Ready.
fn counting_ready<'a>(
    status: &'a mut DebuggerStatus,
    reasons: &[&str],
) -> Option<&'a mut Condition> {
    status
        .conditions
        .iter_mut()
        .find(|c| c.type_ == CONDITION_READY && reasons.contains(&c.reason.as_str()))
}

/// `status` with `refused` (why the DaemonSet controller's pod creations
/// are refused, [`crate::watch::refusals`]) turning a `Ready` condition that
/// counts pods not Ready (`WorkloadNotReady`, `RollingOut`: a roll whose
/// pods are refused does not finish) into `Ready=False WorkloadRefused`,
/// its transition time kept from `previous` as [`condition`] does. Pure.
pub fn with_refused(
    status: &mut DebuggerStatus,
    previous: &[Condition],
    refused: Option<&str>,
    now: DateTime<Utc>,
) {
    let Some(refused) = refused else { return };
    let generation = status.observed_generation;
    let message = format!(
        "{}/{} pods ready; the API server refuses the DaemonSet's pods: {refused}{}",
        status.ready_pods,
        status.desired_pods,
        crate::core::validate::fix_for(refused)
    );
    let counted = [REASON_WORKLOAD_NOT_READY, REASON_ROLLING_OUT];
    if let Some(ready) = counting_ready(status, &counted) {
        *ready = condition(
            previous,
            CONDITION_READY,
            ("False", REASON_WORKLOAD_REFUSED, message),
            generation,
            now,
        );
    }
}

/// The time to look at a Debugger again if its status says it is rolling
/// out: once the roll's grace ends. Pure.
pub fn rollout_recheck(status: &DebuggerStatus) -> Option<DateTime<Utc>> {
    ready_of(&status.conditions)
        .filter(|c| c.status == "True" && c.reason == REASON_ROLLING_OUT)
        .map(|c| rollout_deadline(c) + chrono::Duration::seconds(1))
}

/// The `Ready` condition among `conditions`. Pure.
pub fn ready_of(conditions: &[Condition]) -> Option<&Condition> {
    conditions.iter().find(|c| c.type_ == CONDITION_READY)
}

/// The `Ready` condition with `status`, `reason` and `message` for
/// `generation`. Its transition time is kept from the `Ready` condition in
/// `previous` while status and reason stay the same, else it is `now`. Pure.
pub fn ready_condition(
    previous: Option<&[Condition]>,
    status: &str,
    reason: &str,
    message: String,
    generation: i64,
    now: DateTime<Utc>,
) -> Condition {
    condition(
        previous.unwrap_or_default(),
        CONDITION_READY,
        (status, reason, message),
        generation,
        now,
    )
}

/// The condition `type_` with (status, reason, message) for `generation`.
/// Its transition time is kept from the condition of that type in
/// `previous` while status and reason stay the same, else it is `now`. Pure.
pub fn condition(
    previous: &[Condition],
    type_: &str,
    (status, reason, message): (&str, &str, String),
    generation: i64,
    now: DateTime<Utc>,
) -> Condition {
    let unchanged = previous
        .iter()
        .find(|c| c.type_ == type_)
        .filter(|c| c.status == status && c.reason == reason);
    Condition {
        type_: type_.into(),
        status: status.into(),
        reason: reason.into(),
        message,
        observed_generation: Some(generation),
        last_transition_time: unchanged
            .map(|c| c.last_transition_time.clone())
            .unwrap_or_else(|| Time(to_timestamp(now))),
    }
}

/// Whether `new` differs from what `dbg` carries (so a write is needed).
pub fn changed(dbg: &Debugger, new: &DebuggerStatus) -> bool {
    dbg.status.as_ref() != Some(new)
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// `t` as the time type of Kubernetes objects.
pub fn to_timestamp(t: DateTime<Utc>) -> k8s_openapi::jiff::Timestamp {
    k8s_openapi::jiff::Timestamp::from_second(t.timestamp())
        .expect("a chrono time is always within jiff's range")
}

#[cfg(test)]
#[path = "status_tests.rs"]
mod tests;
