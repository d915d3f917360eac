//! The control plane going away under running Debuggers (docs/testing.md,
//! "Fault tests"): the procedure shared by the outage tests of simulated
//! nodes (`tests/outage.rs`) and of real nodes (`tests/real_outage.rs`).
//!
//! [`outage`] stops one process of the control plane (`cluster.sh stop DIR
//! NAME`) with a run of a Debugger due in the middle of the outage, starts it
//! again and checks what survived: the run is in every node's summary, the
//! operator, runner and pinger pods are the same pods with the same
//! processes and no container restarted, and every pinger of the Debugger
//! [`PROBING`], whose TCP target ([`TcpTarget`]) refused connections only
//! while the control plane was away, counted the failed probes in its
//! metrics and records the episode once the API server is back.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::process::Command;
use std::time::Duration;

use anyhow::{ensure, Context as _, Result};
use combo_api::keys;
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::api::ListParams;
use kube::{Api, Client, ResourceExt};

use crate::fixtures::{documents, DebuggerBuilder, PingerBuilder};
use crate::{
    client, cluster_dir, events, pod_process, repo_root, running_and_ready, scrape, set_run_at,
    wait_for, wait_run_within, workload_nodes, OPERATOR_LABELS, OPERATOR_NAMESPACE,
};

/// `cluster.sh stop|start DIR NAME`: stops or starts one process of the
/// control plane (`kube-apiserver`, `etcd`, ...).
pub fn cluster(action: &str, process: &str) -> Result<()> {
    let out = Command::new(repo_root().join("tests/e2e/cluster.sh"))
        .args([action, cluster_dir().to_str().context("dir")?, process])
        .output()?;
    ensure!(
        out.status.success(),
        "cluster.sh {action} {process}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

/// An RFC 3339 time `secs` from now, in UTC.
pub fn in_seconds(secs: u64) -> Result<String> {
    let out = Command::new("date")
        .args([
            "-u",
            "-d",
            &format!("+{secs} seconds"),
            "+%Y-%m-%dT%H:%M:%SZ",
        ])
        .output()?;
    Ok(String::from_utf8(out.stdout)?.trim().to_string())
}

/// Waits until the API server answers again (a fresh client each try).
pub async fn api_back() -> Result<()> {
    wait_for(Duration::from_secs(180), "the API server back", || async {
        let c = client().await;
        Ok(Api::<Pod>::namespaced(c, "default")
            .list(&ListParams::default().limit(1))
            .await
            .is_ok())
    })
    .await
}

/// The Debugger with a pinger, and its Pinger.
pub const PROBING: &str = "probing";
/// The pinger's metrics port.
const METRICS_PORT: u16 = 9467;
/// The least time between two Events of a pinger about one target
/// (docs/pinger.md, "The budget"), with slack.
const EVENT_GAP: Duration = Duration::from_secs(35);

/// A TCP port on the cluster's bridge address that accepts connections
/// until [`TcpTarget::stop`] and refuses them until [`TcpTarget::start`].
pub struct TcpTarget {
    /// Where it listens.
    pub addr: SocketAddr,
    accepting: Option<tokio::task::JoinHandle<()>>,
}

impl TcpTarget {
    /// Listens on the address the API server listens on, on a free port:
    /// every pod of a simulated or a real node reaches it
    /// (docs/testing.md, "Network plan").
    pub async fn bind() -> Result<Self> {
        let kubeconfig = std::fs::read_to_string(crate::kubeconfig())?;
        let host = kubeconfig
            .lines()
            .find_map(|l| l.trim().strip_prefix("server: https://"))
            .and_then(|s| s.rsplit_once(':'))
            .map(|(h, _)| h.to_string())
            .context("server in kubeconfig")?;
        let listener = tokio::net::TcpListener::bind((host.as_str(), 0)).await?;
        let addr = listener.local_addr()?;
        Ok(TcpTarget {
            addr,
            accepting: Some(Self::accept(listener)),
        })
    }

    fn accept(listener: tokio::net::TcpListener) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                drop(conn);
            }
        })
    }

    /// Closes the listener: connections are refused from now on.
    pub async fn stop(&mut self) {
        if let Some(task) = self.accepting.take() {
            task.abort();
            let _ = task.await;
        }
    }

    /// Listens again on the same address.
    pub async fn start(&mut self) -> Result<()> {
        if self.accepting.is_none() {
            let listener = tokio::net::TcpListener::bind(self.addr).await?;
            self.accepting = Some(Self::accept(listener));
        }
        Ok(())
    }
}

impl Drop for TcpTarget {
    fn drop(&mut self) {
        if let Some(task) = self.accepting.take() {
            task.abort();
        }
    }
}

/// The Pinger and the DaemonSet Debugger [`PROBING`] that runs it on every
/// node, probing `target` over TCP once a second.
pub fn probing_yaml(target: SocketAddr) -> String {
    let target = target.to_string();
    documents(&[
        PingerBuilder::new(PROBING)
            .metrics_port(METRICS_PORT)
            .rounds(1, 500, 1)
            .peers(false)
            .tcp_ping(&[&target])
            .yaml(),
        DebuggerBuilder::new(PROBING).pinger(PROBING).yaml(),
    ])
}

/// The running, ready pods of the pods in `ns` that `labels` selects.
async fn ready_pods(c: &Client, ns: &str, labels: &str) -> Result<Vec<Pod>> {
    let lp = ListParams::default().labels(labels);
    Ok(Api::<Pod>::namespaced(c.clone(), ns)
        .list(&lp)
        .await?
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none() && running_and_ready(p))
        .collect())
}

/// The pinger's TCP probes of `target` that failed, and whether the target
/// is up, from its metrics.
fn tcp_probes(text: &str, target: SocketAddr) -> (f64, Option<f64>) {
    let value = |l: &str| l.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok());
    let series = format!(r#"kind="tcp",target="{target}""#);
    let failed = text
        .lines()
        .filter(|l| l.starts_with("combo_pinger_probes_total{") && l.contains(&series))
        .filter(|l| !l.contains(r#"result="ok""#))
        .filter_map(value)
        .sum();
    let up = text
        .lines()
        .find(|l| l.starts_with(&format!("combo_pinger_target_up{{{series}}}")))
        .and_then(value);
    (failed, up)
}

/// The Events matching `fields` whose message names `target`.
async fn events_naming(
    c: &Client,
    ns: &str,
    fields: &str,
    target: SocketAddr,
) -> Result<Vec<Event>> {
    let target = target.to_string();
    let mut found = events(c, ns, fields).await?;
    found.retain(|e| e.message.as_deref().unwrap_or_default().contains(&target));
    Ok(found)
}

/// UIDs of the `ProbeRecovered` Events on `pod` that name `target`.
async fn recoveries(
    c: &Client,
    ns: &str,
    pod: &str,
    target: SocketAddr,
) -> Result<BTreeSet<String>> {
    let fields = format!("involvedObject.name={pod},reason=ProbeRecovered");
    Ok(events_naming(c, ns, &fields, target)
        .await?
        .into_iter()
        .filter_map(|e| e.metadata.uid)
        .collect())
}

/// What the pinger pods are before an outage: pod name -> (the pod, failed
/// probes so far, ProbeRecovered Events so far).
type PingerState = BTreeMap<String, (Pod, f64, BTreeSet<String>)>;

/// What tells whether a pod got an Event about `target`: each such
/// Event's UID with its counts (a repeat patches the series).
async fn target_events(
    c: &Client,
    ns: &str,
    pod: &str,
    target: SocketAddr,
) -> Result<BTreeSet<(String, Option<i32>, Option<i32>)>> {
    let fields = format!("involvedObject.name={pod}");
    Ok(events_naming(c, ns, &fields, target)
        .await?
        .into_iter()
        .map(|e| {
            (
                e.metadata.uid.unwrap_or_default(),
                e.count,
                e.series.and_then(|s| s.count),
            )
        })
        .collect())
}

/// Waits until the target is up in every pinger's metrics and no pinger
/// has recorded an Event about it for [`EVENT_GAP`], and returns their
/// state. A pinger's Events about one target are at least 30 s apart
/// (docs/pinger.md, "The budget"): a recent one (the previous case's
/// recovery) would hold the outage's failure back until the outage is
/// over.
async fn pingers_before(c: &Client, ns: &str, target: SocketAddr) -> Result<PingerState> {
    let want = workload_nodes().len();
    let probing = keys::debugger_selector(PROBING);
    let all_up = || async {
        let pods = ready_pods(c, ns, &probing).await?;
        Ok::<_, anyhow::Error>(
            pods.len() == want
                && pods.iter().all(|p| {
                    scrape(p, METRICS_PORT).is_ok_and(|t| tcp_probes(&t, target).1 == Some(1.0))
                }),
        )
    };
    let quiet = std::time::Instant::now();
    loop {
        wait_for(
            Duration::from_secs(180),
            "every pinger probing its target up",
            &all_up,
        )
        .await?;
        let mut seen = BTreeMap::new();
        for pod in ready_pods(c, ns, &probing).await? {
            let name = pod.name_any();
            seen.insert(name.clone(), target_events(c, ns, &name, target).await?);
        }
        tokio::time::sleep(EVENT_GAP).await;
        let mut same = all_up().await?;
        for (name, before) in &seen {
            same &= target_events(c, ns, name, target).await? == *before;
        }
        if same {
            break;
        }
        ensure!(
            quiet.elapsed() < Duration::from_secs(300),
            "the pingers kept recording Events about {target} for 5 minutes before the outage"
        );
    }
    let mut state = PingerState::new();
    for pod in ready_pods(c, ns, &probing).await? {
        let name = pod.name_any();
        let failed = tcp_probes(&scrape(&pod, METRICS_PORT)?, target).0;
        let seen = recoveries(c, ns, &name, target).await?;
        state.insert(name, (pod, failed, seen));
    }
    Ok(state)
}

/// After an outage of `down` during which the target refused: every
/// pinger counted the failed probes and records the episode (a new
/// `ProbeRecovered` Event follows only a failure it reported).
async fn pingers_after(
    c: &Client,
    ns: &str,
    target: SocketAddr,
    down: Duration,
    before: &PingerState,
) -> Result<()> {
    for (name, (pod, failed, seen)) in before {
        // One probe a second, each refused: at least half the outage's.
        let least = failed + (down.as_secs() / 2) as f64;
        let now = tcp_probes(&scrape(pod, METRICS_PORT)?, target).0;
        ensure!(
            now >= least,
            "the pinger of {name} counted {} failed probes during the outage, expected at least {}",
            now - failed,
            least - failed
        );
        eprintln!(
            "outage: pinger of {name} counted {} failed probes of {target} in a {down:?} outage",
            now - failed
        );
        wait_for(
            Duration::from_secs(180),
            &format!("a new ProbeRecovered Event for {target} on {name}"),
            || async { Ok(!recoveries(c, ns, name, target).await?.is_subset(seen)) },
        )
        .await?;
    }
    Ok(())
}

/// One pod as an outage must leave it: its UID, each container's restart
/// count, and the pid of each of the project's processes it runs.
#[derive(Debug, PartialEq)]
struct PodState {
    uid: String,
    restarts: BTreeMap<String, i32>,
    pids: BTreeMap<&'static str, i32>,
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
    let pods: Vec<Pod> = Api::<Pod>::namespaced(c.clone(), ns)
        .list(&ListParams::default().labels(labels))
        .await?
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
        .collect();
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
struct Survivors {
    groups: Vec<(String, BTreeMap<String, PodState>)>,
}

impl Survivors {
    async fn read(c: &Client, ns: &str, debugger: &str) -> Result<Self> {
        let nodes = workload_nodes().len();
        Ok(Survivors {
            groups: vec![
                (
                    "the operator".to_string(),
                    pod_states(
                        c,
                        OPERATOR_NAMESPACE,
                        OPERATOR_LABELS,
                        &[keys::BIN_OPERATOR],
                        1,
                    )
                    .await?,
                ),
                (
                    format!("the runners of {debugger}"),
                    pod_states(
                        c,
                        ns,
                        &keys::debugger_selector(debugger),
                        &[keys::BIN_RUNNER],
                        nodes,
                    )
                    .await?,
                ),
                (
                    format!("the runners and pingers of {PROBING}"),
                    pod_states(
                        c,
                        ns,
                        &keys::debugger_selector(PROBING),
                        &[keys::BIN_RUNNER, keys::BIN_PINGER],
                        nodes,
                    )
                    .await?,
                ),
            ],
        })
    }

    /// Each group's pods that changed between `self` and `after`: another
    /// pod, a container restarted, a process replaced.
    fn changes(&self, after: &Survivors) -> Vec<String> {
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

/// Stops `process` for `down`, with a run of Debugger `debugger` due in the
/// middle of it, starts it again and checks what survived. The Debugger
/// [`PROBING`] probes `target`, which refuses while the process is away.
/// Returns what went wrong.
pub async fn outage(
    process: &str,
    down: Duration,
    ns: &str,
    debugger: &str,
    target: &mut TcpTarget,
) -> Result<()> {
    let c = client().await;
    let pingers = pingers_before(&c, ns, target.addr).await?;
    let survivors = Survivors::read(&c, ns, debugger).await?;
    let run_at = in_seconds(down.as_secs() / 2)?;
    set_run_at(&c, ns, debugger, &run_at).await?;

    cluster("stop", process)?;
    // The pingers' target fails while the control plane is away, and only
    // then: what they saw meanwhile must show afterwards.
    target.stop().await;
    tokio::time::sleep(down).await;
    target.start().await?;
    cluster("start", process)?;
    api_back().await?;

    let c = client().await;
    // The run due during the outage: every node's report, then its key. A
    // runner's attempts that failed meanwhile back off (each attempt may
    // take up to 60 s, pauses grow to 30 s), and a loaded machine's API
    // server takes a while to relist every watch after etcd is back:
    // allow 5 minutes.
    wait_run_within(
        &c,
        ns,
        &format!("{debugger}-summary"),
        &run_at,
        Duration::from_secs(300),
    )
    .await?;
    let changed = survivors.changes(&Survivors::read(&c, ns, debugger).await?);
    ensure!(
        changed.is_empty(),
        "every pod kept its UID, its containers' restart counts and its processes: {}",
        changed.join("; ")
    );
    for (what, pods) in &survivors.groups {
        let processes: usize = pods.values().map(|p| p.pids.len()).sum();
        eprintln!(
            "outage: {what}: {} pods and {processes} processes the same after {process} stopped for {down:?}",
            pods.len()
        );
    }
    pingers_after(&c, ns, target.addr, down, &pingers).await
}

/// The two cases, in turn: the API server stopped for 30 s, then etcd for
/// 20 s, each recorded in the suite report's `faults` group under its name
/// followed by `suffix`. Always starts a stopped process again: one left
/// stopped by a failed case would fail every test after.
pub async fn both_outages(
    ns: &str,
    debugger: &str,
    target: &mut TcpTarget,
    suffix: &str,
) -> Result<()> {
    let mut failures = Vec::new();
    for (process, down, case) in [
        (
            "kube-apiserver",
            Duration::from_secs(30),
            "API server stopped for 30 s",
        ),
        (
            "etcd",
            Duration::from_secs(20),
            "etcd stopped for 20 s and restarted",
        ),
    ] {
        let case = format!("{case}{suffix}");
        let result = outage(process, down, ns, debugger, target).await;
        let _ = cluster("start", process);
        let _ = target.start().await;
        crate::record("faults", &case, 1, u64::from(result.is_ok()), 0);
        if let Err(e) = result {
            failures.push(format!("{case}: {e:#}"));
        }
    }
    ensure!(failures.is_empty(), "{}", failures.join("\n"));
    Ok(())
}
