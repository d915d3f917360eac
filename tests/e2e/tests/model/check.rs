//! The invariants of the model-based test
//! (docs/testing.md, "Model-based test"), checked against what the API
//! server and /proc show after each step of a sequence. This file reads
//! the namespace and waits for them to hold; `check_rules.rs` holds the
//! rules, `check_procs.rs` finds the processes in /proc.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::Result;
use combo_api::{Debugger, Pinger};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use k8s_openapi::NamespaceResourceScope;
use kube::api::ListParams;
use kube::{Api, Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;

use crate::plan::Model;

#[path = "check_procs.rs"]
mod procs;
#[path = "check_rules.rs"]
mod rules;

pub use procs::Binaries;
use rules::{awaits_gc, violations};

/// How long the cluster may take to agree with the model after a step.
pub const BOUND: Duration = Duration::from_secs(20);

/// How long, past [`BOUND`], pods that only the garbage collector still
/// has to delete (their owner is gone: a deleted Debugger's, or a replaced
/// DaemonSet's) may stay. The controller manager's collector pauses its
/// workers while it resyncs its monitors, works through what a namespace
/// of a thousand objects left it one item at a time, and its pace is not
/// the operator's; that they go at all is what the model checks.
pub const GC_BOUND: Duration = Duration::from_secs(120);

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
pub const SUMMARY_OWNER: &str = "2 no workload without its own summary";
pub const SUMMARY_AGREES: &str = "2 summary agrees with status";
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

/// The objects of kind `K` in `ns`, by name.
async fn by_name<K>(c: &Client, ns: &str, lp: &ListParams) -> Result<BTreeMap<String, K>>
where
    K: Resource<Scope = NamespaceResourceScope> + Clone + DeserializeOwned + std::fmt::Debug,
    K::DynamicType: Default,
{
    let list = Api::<K>::namespaced(c.clone(), ns).list(lp).await?;
    Ok(list.items.into_iter().map(|o| (o.name_any(), o)).collect())
}

async fn snapshot(c: &Client, ns: &str, bins: &Binaries) -> Result<Snapshot> {
    let lp = ListParams::default();
    // Processes first: a pod listed afterwards that is gone was gone
    // before its process was seen, so a leftover process is never missed.
    let processes = bins.processes(ns);
    let debuggers = by_name(c, ns, &lp).await?;
    let pingers = by_name(c, ns, &lp).await?;
    let configmaps = by_name(c, ns, &lp).await?;
    let daemonsets = by_name(c, ns, &lp).await?;
    let pods = Api::<Pod>::namespaced(c.clone(), ns).list(&lp).await?;
    Ok(Snapshot {
        debuggers,
        pingers,
        configmaps,
        daemonsets,
        pods: pods.items,
        processes,
    })
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
