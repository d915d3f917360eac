//! The invariants of the model-based test
//! (docs/testing.md, "Model-based test"), checked against what the API
//! server and /proc show after each
//! step of a sequence.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Result;
use combo_api::{keys, Debugger, Pinger, WorkloadType};
use combo_e2e::{project_binary, running_and_ready};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::ListParams;
use kube::{Api, Client, ResourceExt};

use crate::plan::{self, Model, Workload};

/// How long the cluster may take to agree with the model after a step.
pub const BOUND: Duration = Duration::from_secs(20);

/// How long, past [`BOUND`], pods that only the garbage collector still
/// has to delete (their owner is gone: a deleted Debugger's, or a replaced
/// DaemonSet's) may stay. The controller manager's collector pauses its
/// workers while it resyncs its monitors, and its pace is not the
/// operator's; that they go at all is what the model checks.
pub const GC_BOUND: Duration = Duration::from_secs(60);

/// One invariant that did not hold: which (1, 2 or 3 of
/// docs/testing.md, "Model-based test") and what was seen.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Violation {
    pub invariant: &'static str,
    pub what: String,
}

pub const USER_DATA: &str = "1 user data untouched";
pub const READY_CLAIM: &str = "2 Ready only when true";
pub const REASON: &str = "2 expected reason";
pub const PINGER: &str = "2 Pinger reason";
pub const STATUS: &str = "2 status at the current generation";
pub const PODS_GONE: &str = "3 old pods gone";
pub const PROCESS: &str = "3 processes stopped";
/// Not an invariant: the API server refused the user's action, or the
/// operator did not come back after a restart.
pub const ACTION: &str = "0 action refused";

fn violation(invariant: &'static str, what: String) -> Violation {
    Violation { invariant, what }
}

/// The namespace as the checker sees it.
struct Snapshot {
    debuggers: BTreeMap<String, Debugger>,
    pingers: BTreeMap<String, Pinger>,
    configmaps: BTreeMap<String, ConfigMap>,
    daemonsets: BTreeMap<String, DaemonSet>,
    pods: Vec<Pod>,
    /// Runner and pinger processes of the namespace's pods: (binary, pod).
    processes: Vec<(&'static str, String)>,
}

async fn snapshot(c: &Client, ns: &str, bins: &Binaries) -> Result<Snapshot> {
    let lp = ListParams::default();
    // Processes first: a pod listed afterwards that is gone was gone
    // before its process was seen, so a leftover process is never missed.
    let processes = bins.processes(ns);
    let debuggers = Api::<Debugger>::namespaced(c.clone(), ns).list(&lp).await?;
    let pingers = Api::<Pinger>::namespaced(c.clone(), ns).list(&lp).await?;
    let configmaps = Api::<ConfigMap>::namespaced(c.clone(), ns)
        .list(&lp)
        .await?;
    let daemonsets = Api::<DaemonSet>::namespaced(c.clone(), ns)
        .list(&lp)
        .await?;
    let pods = Api::<Pod>::namespaced(c.clone(), ns).list(&lp).await?;
    Ok(Snapshot {
        debuggers: debuggers
            .items
            .into_iter()
            .map(|o| (o.name_any(), o))
            .collect(),
        pingers: pingers
            .items
            .into_iter()
            .map(|o| (o.name_any(), o))
            .collect(),
        configmaps: configmaps
            .items
            .into_iter()
            .map(|o| (o.name_any(), o))
            .collect(),
        daemonsets: daemonsets
            .items
            .into_iter()
            .map(|o| (o.name_any(), o))
            .collect(),
        pods: pods.items,
        processes,
    })
}

/// The runner's and the pinger's executables of the cluster's build.
pub struct Binaries {
    paths: Vec<(&'static str, PathBuf)>,
}

impl Binaries {
    pub fn new() -> Binaries {
        Binaries {
            paths: [keys::BIN_RUNNER, keys::BIN_PINGER]
                .into_iter()
                .map(|b| (b, project_binary(b)))
                .collect(),
        }
    }

    /// (binary, POD_NAME) of every runner and pinger process whose
    /// POD_NAMESPACE is `ns`: simulated pods run as processes of this
    /// machine (docs/testing.md, "Simulated nodes").
    fn processes(&self, ns: &str) -> Vec<(&'static str, String)> {
        let want_ns = format!("{}={ns}", keys::env::POD_NAMESPACE);
        let pod_prefix = format!("{}=", keys::env::POD_NAME);
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for pid in dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok()) {
            let Ok(exe) = std::fs::read_link(format!("/proc/{pid}/exe")) else {
                continue;
            };
            let exe = exe.to_string_lossy();
            let exe = exe.trim_end_matches(" (deleted)");
            let Some((bin, _)) = self
                .paths
                .iter()
                .find(|(_, p)| p.as_os_str() == std::ffi::OsStr::new(exe))
            else {
                continue;
            };
            let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
                continue;
            };
            let vars: Vec<String> = env
                .split(|b| *b == 0)
                .map(|v| String::from_utf8_lossy(v).into_owned())
                .collect();
            if !vars.contains(&want_ns) {
                continue;
            }
            if let Some(pod) = vars.iter().find_map(|v| v.strip_prefix(&pod_prefix)) {
                out.push((*bin, pod.to_string()));
            }
        }
        out
    }
}

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
fn violations(model: &Model, snap: &Snapshot, nodes: &[Node]) -> Vec<Violation> {
    let mut out = Vec::new();
    // 1. The user's ConfigMaps keep their data and get no owner.
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
    // 2. Each Debugger's reason is one the model expects, and Ready=True
    // only with everything in place.
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
    // 3. Pods of deleted Debuggers, and of a workload kind a Debugger
    // switched away from, are gone; no process outlives its pod.
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
    out.sort();
    out
}

/// Waits up to [`BOUND`] for every invariant to hold in `ns`; returns
/// what still did not hold at the end (empty: all held).
pub async fn converge(
    c: &Client,
    ns: &str,
    model: &Model,
    nodes: &[Node],
    bins: &Binaries,
) -> Vec<Violation> {
    let start = Instant::now();
    loop {
        let found = match snapshot(c, ns, bins).await {
            Ok(snap) => violations(model, &snap, nodes),
            Err(e) => vec![violation(STATUS, format!("reading the namespace: {e:#}"))],
        };
        let waiting_for_gc = !found.is_empty() && found.iter().all(awaits_gc);
        if found.is_empty()
            || (start.elapsed() > BOUND && !waiting_for_gc)
            || start.elapsed() > GC_BOUND
        {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(750)).await;
    }
}

#[cfg(test)]
#[path = "check_tests.rs"]
mod tests;

/// Whether `v` is a pod left for the garbage collector: its owner is gone
/// and nothing but the collector deletes it, or the collector deleted it
/// less than [`BOUND`] ago and its node has the rest of that time to
/// confirm (see [`pod_state`]).
fn awaits_gc(v: &Violation) -> bool {
    v.invariant == PODS_GONE
        && v.what.starts_with("pod ")
        && (v.what.ends_with("not deleted yet)") || v.what.ends_with(&format!("{NODES_TURN})")))
}

/// How [`pod_state`] ends for a pod deleted less than [`BOUND`] ago.
const NODES_TURN: &str = "its node's turn";

/// Where a pod that should be gone is: not yet deleted (the garbage
/// collector's turn), or deleted and waiting for its node to confirm,
/// within [`BOUND`] of the delete (`deletionTimestamp` less the grace
/// period) or past it.
fn pod_state(p: &Pod) -> String {
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
