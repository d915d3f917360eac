//! The control plane going away under running Debuggers, as listed in
//! docs/testing.md, "Fault tests": the API server stopped for 30 s, then
//! etcd stopped and started again. The operator and the pods keep running, and a run
//! scheduled while the API was gone is in the summary afterwards. A second
//! Debugger runs a pinger whose TCP target fails only while the control
//! plane is away: the pinger process keeps running, its metrics count the
//! failed probes, and its Events record the episode once the API server is
//! back. These stop the cluster for every test: cargo runs this binary on
//! its own, and its one test does both cases in turn.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::process::Command;
use std::time::Duration;

use anyhow::{ensure, Context as _, Result};
use combo_api::keys;
use combo_e2e::{
    apply_yaml, client, cluster_dir, events, namespace, nodes, operator_pid, project_process,
    record, repo_root, restarts, running_and_ready, scrape, wait_for, OPERATOR_LABELS,
    OPERATOR_NAMESPACE,
};
use common::{set_run_at, setup, wait_run_within};
use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use kube::{Api, Client, ResourceExt};

/// `cluster.sh stop|start DIR NAME`.
fn cluster(action: &str, process: &str) -> Result<()> {
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
fn in_seconds(secs: u64) -> Result<String> {
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
async fn api_back() -> Result<()> {
    wait_for(Duration::from_secs(180), "the API server back", || async {
        let c = client().await;
        Ok(Api::<Pod>::namespaced(c, "default")
            .list(&ListParams::default().limit(1))
            .await
            .is_ok())
    })
    .await
}

/// The Debugger with a pinger, its Pinger, and the pinger's metrics port.
const PROBING: &str = "probing";
const METRICS_PORT: u16 = 9467;
/// The least time between two Events of a pinger about one target
/// (docs/pinger.md, "The budget"), with slack.
const EVENT_GAP: Duration = Duration::from_secs(35);

/// A TCP port on the cluster's bridge address that accepts connections
/// until [`TcpTarget::stop`] and refuses them until [`TcpTarget::start`].
struct TcpTarget {
    addr: SocketAddr,
    accepting: Option<tokio::task::JoinHandle<()>>,
}

impl TcpTarget {
    /// Listens on the address the API server listens on (every pod reaches
    /// it), on a free port.
    async fn bind() -> Result<Self> {
        let kubeconfig = std::fs::read_to_string(combo_e2e::kubeconfig())?;
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
    async fn stop(&mut self) {
        if let Some(task) = self.accepting.take() {
            task.abort();
            let _ = task.await;
        }
    }

    async fn start(&mut self) -> Result<()> {
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

/// The Pinger and the DaemonSet Debugger that runs it on every node.
fn probing_yaml(target: SocketAddr) -> String {
    format!(
        "apiVersion: kubecombo.io/v1
kind: Pinger
metadata:
  name: {PROBING}
spec:
  metricsPort: {METRICS_PORT}
  intervalSeconds: 1
  timeoutMs: 500
  count: 1
  peers: false
  tcpPing: [\"{target}\"]
---
apiVersion: kubecombo.io/v1
kind: Debugger
metadata:
  name: {PROBING}
spec:
  workloadType: daemonset
  enablePinger: true
  pinger: {PROBING}
"
    )
}

/// The Debugger's running, ready pods.
async fn probing_pods(c: &Client, ns: &str) -> Result<Vec<Pod>> {
    let lp = ListParams::default().labels(&keys::debugger_selector(PROBING));
    Ok(Api::<Pod>::namespaced(c.clone(), ns)
        .list(&lp)
        .await?
        .into_iter()
        .filter(running_and_ready)
        .collect())
}

/// Pid of the pinger process of pod `pod` (its environment names the pod).
fn pinger_pid(pod: &str) -> Option<i32> {
    project_process(
        keys::BIN_PINGER,
        &[&format!("{}={pod}", keys::env::POD_NAME)],
    )
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

/// UIDs of the `ProbeRecovered` Events on `pod` that name `target`.
async fn recoveries(
    c: &Client,
    ns: &str,
    pod: &str,
    target: SocketAddr,
) -> Result<BTreeSet<String>> {
    let fields = format!("involvedObject.name={pod},reason=ProbeRecovered");
    Ok(events(c, ns, &fields)
        .await?
        .into_iter()
        .filter(|e| {
            e.message
                .as_deref()
                .unwrap_or_default()
                .contains(&target.to_string())
        })
        .filter_map(|e| e.metadata.uid)
        .collect())
}

/// What the pinger pods are before an outage: pod name -> (the pod, its
/// pinger's pid, failed probes so far, ProbeRecovered Events so far).
type PingerState = BTreeMap<String, (Pod, i32, f64, BTreeSet<String>)>;

/// What tells whether a pod got an Event about `target`: each such
/// Event's UID with its counts (a repeat patches the series).
async fn target_events(
    c: &Client,
    ns: &str,
    pod: &str,
    target: SocketAddr,
) -> Result<BTreeSet<(String, Option<i32>, Option<i32>)>> {
    let fields = format!("involvedObject.name={pod}");
    Ok(events(c, ns, &fields)
        .await?
        .into_iter()
        .filter(|e| {
            e.message
                .as_deref()
                .unwrap_or_default()
                .contains(&target.to_string())
        })
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
/// recovery, or a pod of another test leaving the node, which changes
/// the node bridge's address and cuts the pods' path for a while) would
/// hold the outage's failure back until the outage is over.
async fn pingers_before(c: &Client, ns: &str, target: SocketAddr) -> Result<PingerState> {
    let want = nodes().len();
    let all_up = || async {
        let pods = probing_pods(c, ns).await?;
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
        for pod in probing_pods(c, ns).await? {
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
    for pod in probing_pods(c, ns).await? {
        let name = pod.name_any();
        let pid = pinger_pid(&name).with_context(|| format!("the pinger process of {name}"))?;
        let failed = tcp_probes(&scrape(&pod, METRICS_PORT)?, target).0;
        let seen = recoveries(c, ns, &name, target).await?;
        state.insert(name, (pod, pid, failed, seen));
    }
    Ok(state)
}

/// After an outage of `down` during which the target refused: every
/// pinger is the same process, counted the failed probes, and records the
/// episode (a new `ProbeRecovered` Event follows only a failure it
/// reported).
async fn pingers_after(
    c: &Client,
    ns: &str,
    target: SocketAddr,
    down: Duration,
    before: &PingerState,
) -> Result<()> {
    for (name, (pod, pid, failed, seen)) in before {
        ensure!(
            pinger_pid(name) == Some(*pid),
            "the pinger of {name} kept running (pid {pid}, now {:?})",
            pinger_pid(name)
        );
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
            "outage: pinger of {name} (pid {pid}) counted {} failed probes of {target} in a {down:?} outage",
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

/// Stops `process` for `down`, with a run due in the middle of it, starts
/// it again and checks what survived. Returns what went wrong.
async fn outage(
    process: &str,
    down: Duration,
    ns: &str,
    debugger: &str,
    target: &mut TcpTarget,
) -> Result<()> {
    let c = client().await;
    let selector = keys::debugger_selector(debugger);
    let probing = keys::debugger_selector(PROBING);
    let (pods_before, probing_before, op_before) = (
        restarts(&c, ns, &selector).await?,
        restarts(&c, ns, &probing).await?,
        restarts(&c, OPERATOR_NAMESPACE, OPERATOR_LABELS).await?,
    );
    let pingers = pingers_before(&c, ns, target.addr).await?;
    let pid = operator_pid().context("the operator process")?;
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
    ensure!(
        operator_pid() == Some(pid),
        "the operator process kept running (pid {pid}, now {:?})",
        operator_pid()
    );
    ensure!(
        restarts(&c, OPERATOR_NAMESPACE, OPERATOR_LABELS).await? == op_before,
        "the operator container was not restarted"
    );
    ensure!(
        restarts(&c, ns, &selector).await? == pods_before,
        "no runner or pinger container was restarted"
    );
    pingers_after(&c, ns, target.addr, down, &pingers).await?;
    ensure!(
        restarts(&c, ns, &probing).await? == probing_before,
        "no container of the pinger's Debugger was restarted"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn the_api_server_and_etcd_going_away_lose_no_run_and_restart_nothing() -> Result<()> {
    let ns = namespace("outage").await;
    let c = client().await;
    setup(&c, &ns.name, "steady").await?;
    let mut target = TcpTarget::bind().await?;
    apply_yaml(&ns.name, &probing_yaml(target.addr))?;
    wait_for(Duration::from_secs(120), "the operator process", || async {
        Ok(operator_pid().is_some())
    })
    .await?;

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
        let result = outage(process, down, &ns.name, "steady", &mut target).await;
        // A process left stopped by a failed case would fail every test after.
        let _ = cluster("start", process);
        let _ = target.start().await;
        record("faults", case, 1, u64::from(result.is_ok()), 0);
        if let Err(e) = result {
            failures.push(format!("{case}: {e:#}"));
        }
    }
    ensure!(failures.is_empty(), "{}", failures.join("\n"));
    Ok(())
}
