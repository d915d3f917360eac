//! The rules of the model-based test's checker
//! (docs/testing.md, "Model-based test"): what does not hold in one
//! snapshot of a namespace, given the model of what the user has made.
//! Pure.

use std::collections::{BTreeMap, BTreeSet};

use combo_api::{keys, Debugger, WorkloadType};
use combo_e2e::running_and_ready;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, OwnerReference};
use kube::ResourceExt;

use super::{
    violation, Snapshot, Violation, BOUND, PINGER, PODS_GONE, PROCESS, READY_CLAIM, REASON, STATUS,
    SUMMARY_AGREES, SUMMARY_OWNER, USER_DATA,
};
use crate::plan::{self, Model, Workload};

fn ready_condition(conditions: &[Condition]) -> Option<&Condition> {
    conditions.iter().find(|c| c.type_ == "Ready")
}

fn terminating(p: &Pod) -> bool {
    p.metadata.deletion_timestamp.is_some()
}

fn debugger_of(p: &Pod) -> Option<&str> {
    p.labels().get(keys::LABEL_DEBUGGER).map(String::as_str)
}

fn owner_kind(p: &Pod) -> Option<&str> {
    p.owner_references()
        .iter()
        .find(|o| o.controller == Some(true))
        .map(|o| o.kind.as_str())
}

fn matches(selector: &BTreeMap<String, String>, node: &Node) -> bool {
    selector
        .iter()
        .all(|(k, v)| node.labels().get(k) == Some(v))
}

/// What makes a `Ready=True` of Debugger `d` false, from the cluster:
/// its workload, its pods, its scripts ConfigMap, its Pinger, its nodes,
/// its name and its summary ConfigMap (`user` holds the user's ConfigMaps).
fn false_ready(
    d: &Debugger,
    snap: &Snapshot,
    user: &BTreeSet<String>,
    nodes: &[Node],
) -> Vec<String> {
    let name = d.name_any();
    let spec = &d.spec;
    let mut wrong = Vec::new();
    if name.len() > plan::MAX_NAME {
        wrong.push(format!("its name has {} characters", name.len()));
    }
    let workload = match spec.workload_type {
        WorkloadType::Daemonset => snap.daemonsets.contains_key(&name),
        WorkloadType::Pod => snap
            .pods
            .iter()
            .any(|p| p.name_any() == name && owner_kind(p) == Some("Debugger")),
    };
    if !workload {
        wrong.push(format!("its {:?} does not exist", spec.workload_type));
    }
    let pods: Vec<&Pod> = snap
        .pods
        .iter()
        .filter(|p| debugger_of(p) == Some(name.as_str()) && !terminating(p))
        .collect();
    // A roll replaces pods: while it lasts (bounded by the operator) they
    // may be missing or not Ready.
    let rolling = d
        .status
        .as_ref()
        .and_then(|s| ready_condition(&s.conditions))
        .is_some_and(|c| c.reason == plan::ROLLING_OUT);
    if pods.is_empty() && !rolling {
        wrong.push("it has no pod".into());
    }
    let unready: Vec<String> = pods
        .iter()
        .filter(|p| !running_and_ready(p))
        .map(|p| p.name_any())
        .collect();
    if !unready.is_empty() && !rolling {
        wrong.push(format!("pods not Ready: {unready:?}"));
    }
    if spec.enable_config_map && !snap.configmaps.contains_key(&spec.config_map) {
        wrong.push(format!(
            "its scripts ConfigMap {:?} does not exist",
            spec.config_map
        ));
    }
    if spec.categories.is_empty() {
        wrong.push("its categories are empty".into());
    }
    let summary = spec.summary_name(&name);
    if user.contains(&summary) {
        wrong.push(format!("its summary {summary:?} is the user's ConfigMap"));
    }
    if spec.enable_config_map && summary == spec.config_map {
        wrong.push(format!("its summary {summary:?} is its scripts ConfigMap"));
    }
    if spec.enable_pinger && !snap.pingers.contains_key(&spec.pinger) {
        wrong.push(format!("its Pinger {:?} does not exist", spec.pinger));
    }
    if !nodes.iter().any(|n| matches(&spec.selector, n)) {
        wrong.push(format!("its selector {:?} matches no node", spec.selector));
    }
    wrong
}

/// Every invariant that does not hold now.
pub fn violations(model: &Model, snap: &Snapshot, nodes: &[Node]) -> Vec<Violation> {
    let mut out = Vec::new();
    user_data(model, snap, &mut out);
    debugger_status(model, snap, nodes, &mut out);
    pinger_status(model, snap, &mut out);
    summaries(snap, &mut out);
    old_pods(model, snap, &mut out);
    processes(snap, &mut out);
    out.sort();
    out
}

/// Invariant 1: the user's ConfigMaps keep their data and get no owner.
fn user_data(model: &Model, snap: &Snapshot, out: &mut Vec<Violation>) {
    for (name, want) in &model.configmaps {
        match snap.configmaps.get(name) {
            None => out.push(violation(
                USER_DATA,
                format!("the user's ConfigMap {name} was deleted"),
            )),
            Some(cm) => {
                let data = cm.data.clone().unwrap_or_default();
                if data != want.data || cm.binary_data.as_ref().is_some_and(|b| !b.is_empty()) {
                    out.push(violation(
                        USER_DATA,
                        format!(
                            "the user's ConfigMap {name} holds {data:?}, not {:?}",
                            want.data
                        ),
                    ));
                }
                if !cm.owner_references().is_empty() {
                    let owners: Vec<String> = cm
                        .owner_references()
                        .iter()
                        .map(|o| format!("{} {}", o.kind, o.name))
                        .collect();
                    out.push(violation(
                        USER_DATA,
                        format!("the user's ConfigMap {name} got owners {owners:?}"),
                    ));
                }
            }
        }
    }
}

/// Invariant 2: each Debugger's reason is one the model expects, and
/// Ready=True only with everything in place.
fn debugger_status(model: &Model, snap: &Snapshot, nodes: &[Node], out: &mut Vec<Violation>) {
    let user: BTreeSet<String> = model.configmaps.keys().cloned().collect();
    for name in model.debuggers.keys() {
        let Some(d) = snap.debuggers.get(name) else {
            out.push(violation(STATUS, format!("Debugger {name} does not exist")));
            continue;
        };
        let generation = d.metadata.generation.unwrap_or_default();
        let status = d.status.clone().unwrap_or_default();
        let cond = ready_condition(&status.conditions);
        if status.observed_generation != generation || cond.is_none() {
            out.push(violation(
                STATUS,
                format!(
                    "Debugger {name}: status of generation {} (condition {:?}), spec at {generation}",
                    status.observed_generation,
                    cond.map(|c| &c.reason)
                ),
            ));
            continue;
        }
        let cond = cond.expect("checked above");
        let expected = model.expected(name);
        if !expected.contains(cond.reason.as_str()) {
            out.push(violation(
                REASON,
                format!(
                    "Debugger {name}: Ready={} {} ({:?}), expected one of {expected:?}",
                    cond.status, cond.reason, cond.message
                ),
            ));
        }
        if cond.status == "True" {
            let wrong = false_ready(d, snap, &user, nodes);
            if !wrong.is_empty() {
                out.push(violation(
                    READY_CLAIM,
                    format!(
                        "Debugger {name} claims Ready ({}) but {}",
                        cond.reason,
                        wrong.join("; ")
                    ),
                ));
            }
        }
    }
}

/// Invariant 2: a Debugger whose summary ConfigMap another controls (or
/// none) has no workload; one that controls its summary shows in it the
/// run of its status (`lastRunAt`, `completedNodes`, `failedItems`),
/// whatever its condition.
fn summaries(snap: &Snapshot, out: &mut Vec<Violation>) {
    for (name, d) in &snap.debuggers {
        let Some(cm) = snap.configmaps.get(&d.spec.summary_name(name)) else {
            continue;
        };
        let ours = |refs: &[OwnerReference]| {
            refs.iter().any(|o| {
                o.controller == Some(true)
                    && o.kind == "Debugger"
                    && Some(&o.uid) == d.metadata.uid.as_ref()
            })
        };
        if !ours(cm.owner_references()) {
            let ds = snap
                .daemonsets
                .get(name)
                .filter(|x| ours(x.owner_references()) && x.metadata.deletion_timestamp.is_none());
            let pod = snap
                .pods
                .iter()
                .find(|p| p.name_any() == *name && ours(p.owner_references()) && !terminating(p));
            if ds.is_some() || pod.is_some() {
                out.push(violation(
                    SUMMARY_OWNER,
                    format!(
                        "Debugger {name} runs a workload though its summary ConfigMap {} is not its own",
                        cm.name_any()
                    ),
                ));
            }
            continue;
        }
        let status = d.status.clone().unwrap_or_default();
        let Some(last) = status.last_run_at.as_deref() else {
            continue;
        };
        let time = |s: &str| s.parse::<k8s_openapi::jiff::Timestamp>().ok();
        let values: Vec<combo_api::NodeSummary> = cm
            .data
            .iter()
            .flatten()
            .filter_map(|(_, v)| combo_api::NodeSummary::from_yaml(v).ok())
            .collect();
        let newest = values
            .iter()
            .filter(|v| time(&v.run_at) == time(last))
            .fold((0, 0), |(n, f), v| (n + 1, f + v.failed_count() as i32));
        if newest != (status.completed_nodes, status.failed_items) {
            out.push(violation(
                SUMMARY_AGREES,
                format!(
                    "Debugger {name}: status run {last} on {} node(s), {} failed; its summary has {} node(s), {} failed of that run",
                    status.completed_nodes, status.failed_items, newest.0, newest.1
                ),
            ));
        }
    }
}

/// Invariant 2: each Pinger's Ready condition is the one its spec calls for.
fn pinger_status(model: &Model, snap: &Snapshot, out: &mut Vec<Violation>) {
    for (name, bad) in &model.pingers {
        let Some(p) = snap.pingers.get(name) else {
            out.push(violation(PINGER, format!("Pinger {name} does not exist")));
            continue;
        };
        let status = p.status.clone().unwrap_or_default();
        let cond = ready_condition(&status.conditions);
        let ok = Some(status.observed_generation) == p.metadata.generation
            && cond.is_some_and(|c| match bad {
                Some(entry) => {
                    c.status == "False" && c.reason == "InvalidSpec" && c.message.contains(entry)
                }
                None => c.status == "True" && c.reason == "TargetsValid",
            });
        if !ok {
            let want = match bad {
                Some(entry) => format!("Ready=False InvalidSpec naming {entry}"),
                None => "Ready=True TargetsValid".to_string(),
            };
            out.push(violation(
                PINGER,
                format!(
                    "Pinger {name}: {:?} at generation {} of {:?}, expected {want}",
                    cond.map(|c| (&c.status, &c.reason, &c.message)),
                    status.observed_generation,
                    p.metadata.generation
                ),
            ));
        }
    }
}

/// Invariant 3: pods of deleted Debuggers, and of a workload kind a
/// Debugger switched away from, are gone.
fn old_pods(model: &Model, snap: &Snapshot, out: &mut Vec<Violation>) {
    for p in &snap.pods {
        let Some(d) = debugger_of(p) else { continue };
        if model.deleted.contains(d) {
            out.push(violation(
                PODS_GONE,
                format!(
                    "pod {} of deleted Debugger {d} still exists ({})",
                    p.name_any(),
                    pod_state(p)
                ),
            ));
            continue;
        }
        let Some(m) = model.debuggers.get(d) else {
            continue;
        };
        if !model.runs(d) {
            // An invalid Debugger keeps its workload (docs/operator.md).
            continue;
        }
        let stale = match m.spec.workload {
            Workload::DaemonSet => owner_kind(p) == Some("Debugger"),
            Workload::Pod => owner_kind(p) == Some("DaemonSet"),
        };
        if stale {
            out.push(violation(
                PODS_GONE,
                format!(
                    "pod {} of Debugger {d} is of the old workload kind ({:?} now; {})",
                    p.name_any(),
                    m.spec.workload,
                    pod_state(p)
                ),
            ));
        }
    }
    for (name, m) in &model.debuggers {
        if m.spec.workload == Workload::Pod
            && model.runs(name)
            && snap.daemonsets.contains_key(name)
        {
            out.push(violation(
                PODS_GONE,
                format!("DaemonSet {name} remains after the switch to a Pod"),
            ));
        }
    }
}

/// Invariant 3: no process outlives its pod, and a pod runs each binary once.
fn processes(snap: &Snapshot, out: &mut Vec<Violation>) {
    let live: BTreeSet<&str> = snap
        .pods
        .iter()
        .map(|p| p.metadata.name.as_deref().unwrap_or(""))
        .collect();
    let mut seen: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for (bin, pod) in &snap.processes {
        *seen.entry((bin, pod.as_str())).or_default() += 1;
    }
    for ((bin, pod), n) in seen {
        if !live.contains(pod) {
            out.push(violation(
                PROCESS,
                format!("{n} {bin} process(es) of pod {pod}, which no longer exists"),
            ));
        } else if n > 1 {
            out.push(violation(
                PROCESS,
                format!("{n} {bin} processes of pod {pod}"),
            ));
        }
    }
}

/// Whether `v` is a pod left for the garbage collector: its owner is gone
/// and nothing but the collector deletes it, or the collector deleted it
/// less than [`BOUND`] ago and its node has the rest of that time to
/// confirm (see [`pod_state`]).
pub fn awaits_gc(v: &Violation) -> bool {
    v.invariant == PODS_GONE
        && v.what.starts_with("pod ")
        && (v.what.ends_with("not deleted yet)") || v.what.ends_with(&format!("{NODES_TURN})")))
}

/// How [`pod_state`] ends for a pod deleted less than [`BOUND`] ago.
pub const NODES_TURN: &str = "its node's turn";

/// Where a pod that should be gone is: not yet deleted (the garbage
/// collector's turn), or deleted and waiting for its node to confirm,
/// within [`BOUND`] of the delete (`deletionTimestamp` less the grace
/// period) or past it.
pub fn pod_state(p: &Pod) -> String {
    let phase = p
        .status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("no phase");
    let Some(t) = &p.metadata.deletion_timestamp else {
        return format!("{phase}, not deleted yet");
    };
    let grace = p.metadata.deletion_grace_period_seconds.unwrap_or(0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let ago = now - (t.0.as_second() - grace);
    if ago < BOUND.as_secs() as i64 {
        return format!("{phase}, deleted {ago} s ago, {NODES_TURN}");
    }
    format!(
        "{phase}, deleted at {} ({ago} s ago), node {:?}",
        t.0,
        p.spec.as_ref().and_then(|s| s.node_name.as_deref())
    )
}
