//! The pods an outage must leave as they were
//! (docs/testing.md, "Fault tests"): the operator's, the runners' and the
//! pingers', each with its UID, its containers' restart counts and its
//! processes.

use std::collections::BTreeMap;

use anyhow::{ensure, Context as _, Result};
use combo_api::keys;
use kube::{Client, ResourceExt};

use super::{live_pods, PROBING};
use crate::{pod_process, workload_nodes, OPERATOR_LABELS, OPERATOR_NAMESPACE};

/// One pod as an outage must leave it: its UID, each container's restart
/// count, and the pid of each of the project's processes it runs.
#[derive(Debug, PartialEq)]
pub struct PodState {
    uid: String,
    restarts: BTreeMap<String, i32>,
    pub pids: BTreeMap<&'static str, i32>,
}

/// pod name -> [`PodState`] of the running pods in `ns` that
/// `labels` selects; `binaries` are the project's binaries each runs (one
/// per container). Fails when fewer than `want` pods run or a process is
/// not found.
async fn pod_states(
    c: &Client,
    ns: &str,
    labels: &str,
    binaries: &[&'static str],
    want: usize,
) -> Result<BTreeMap<String, PodState>> {
    // Running, not necessarily ready: what a pod reports of its readiness
    // may lag behind the API server's return, its processes do not.
    let mut pods = live_pods(c, ns, labels).await?;
    pods.retain(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"));
    ensure!(
        pods.len() >= want,
        "{} running pods of {labels} in {ns}, expected {want}",
        pods.len()
    );
    let mut out = BTreeMap::new();
    for pod in pods {
        let name = pod.name_any();
        let restarts = pod
            .status
            .iter()
            .flat_map(|s| s.container_statuses.iter().flatten())
            .map(|cs| (cs.name.clone(), cs.restart_count))
            .collect();
        let mut pids = BTreeMap::new();
        for binary in binaries {
            let pid = pod_process(binary, &pod)
                .with_context(|| format!("the {binary} process of pod {ns}/{name}"))?;
            pids.insert(*binary, pid);
        }
        let uid = pod.metadata.uid.clone().context("pod uid")?;
        out.insert(
            name,
            PodState {
                uid,
                restarts,
                pids,
            },
        );
    }
    Ok(out)
}

/// The operator's, the runners' and the pingers' pods, in that order.
pub struct Survivors {
    pub groups: Vec<(String, BTreeMap<String, PodState>)>,
}

impl Survivors {
    pub async fn read(c: &Client, ns: &str, debugger: &str) -> Result<Self> {
        let nodes = workload_nodes().len();
        let groups = [
            (
                "the operator".to_string(),
                OPERATOR_NAMESPACE,
                OPERATOR_LABELS.to_string(),
                &[keys::BIN_OPERATOR][..],
                1,
            ),
            (
                format!("the runners of {debugger}"),
                ns,
                keys::debugger_selector(debugger),
                &[keys::BIN_RUNNER][..],
                nodes,
            ),
            (
                format!("the runners and pingers of {PROBING}"),
                ns,
                keys::debugger_selector(PROBING),
                &[keys::BIN_RUNNER, keys::BIN_PINGER][..],
                nodes,
            ),
        ];
        let mut read = Vec::new();
        for (what, ns, labels, binaries, want) in groups {
            read.push((what, pod_states(c, ns, &labels, binaries, want).await?));
        }
        Ok(Survivors { groups: read })
    }

    /// Each group's pods that changed between `self` and `after`: another
    /// pod, a container restarted, a process replaced.
    pub fn changes(&self, after: &Survivors) -> Vec<String> {
        let mut out = Vec::new();
        for ((what, before), (_, now)) in self.groups.iter().zip(&after.groups) {
            for (pod, state) in before {
                match now.get(pod) {
                    Some(s) if s == state => {}
                    other => out.push(format!("{what}: pod {pod} was {state:?}, now {other:?}")),
                }
            }
            for pod in now.keys().filter(|p| !before.contains_key(*p)) {
                out.push(format!("{what}: a new pod {pod}"));
            }
        }
        out
    }
}
