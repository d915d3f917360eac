//! Status: what `kubectl get dbg` shows, computed from the workload and the
//! DebuggerReports. Pure; the controller writes it only when it differs
//! from what the API server has.

use chrono::{DateTime, SecondsFormat, Utc};
use combo_api::{Debugger, DebuggerStatus, RunAt};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use crate::validate::Invalid;

/// The condition type kept on every Debugger.
pub const CONDITION_READY: &str = "Ready";
/// Reason of `Ready=True`: every desired pod is Ready.
pub const REASON_WORKLOAD_READY: &str = "WorkloadReady";
/// Reason of `Ready=False` while pods are missing or not Ready.
pub const REASON_WORKLOAD_NOT_READY: &str = "WorkloadNotReady";
/// Reason of `Ready=False` when the DaemonSet schedules no pod.
pub const REASON_NO_NODES_SELECTED: &str = "NoNodesSelected";

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
}

/// Pod counts of a DaemonSet, from its status.
pub fn daemonset_counts(ds: &DaemonSet) -> PodCounts {
    let s = ds.status.clone().unwrap_or_default();
    let seen = match (ds.metadata.generation, s.observed_generation) {
        (Some(generation), Some(observed)) => observed >= generation,
        _ => false,
    };
    PodCounts {
        desired: s.desired_number_scheduled,
        ready: s.number_ready,
        no_node: seen && s.desired_number_scheduled == 0,
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
    }
}

/// The scheduler's words for nodes a Pod's selector, affinity or
/// tolerations rule out (kube-scheduler's filter messages).
const NO_NODE_MATCHES: [&str; 3] = [
    "didn't match node selector",
    "didn't match Pod's node affinity",
    "didn't tolerate",
];

/// Run fields taken from the DebuggerReports (see `aggregate::run_summary`).
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
) -> DebuggerStatus {
    let counts = counts.unwrap_or_default();
    let (status, reason, message) = match invalid {
        Some(i) => ("False", i.reason(), i.to_string()),
        None if counts.no_node => (
            "False",
            REASON_NO_NODES_SELECTED,
            "the selector, tolerations and affinity match no node: nothing runs".to_string(),
        ),
        None if counts.desired > 0 && counts.ready == counts.desired => (
            "True",
            REASON_WORKLOAD_READY,
            format!("{}/{} pods ready", counts.ready, counts.desired),
        ),
        None => (
            "False",
            REASON_WORKLOAD_NOT_READY,
            format!("{}/{} pods ready", counts.ready, counts.desired),
        ),
    };
    let generation = dbg.metadata.generation.unwrap_or_default();
    let previous = dbg.status.as_ref().map(|s| s.conditions.as_slice());
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
    }
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
