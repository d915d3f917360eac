//! Benchmark of one run's results reaching the cluster at N nodes (not a
//! test: it measures and prints). Needs a control plane with the operator
//! installed (`tests/bench/reports.sh` makes a fresh one per N and runs
//! this), then
//! `COMBO_E2E_DIR=DIR COMBO_BENCH_NODES=N [COMBO_BENCH_BASELINE=1] cargo bench -p combo-runner --bench reports`.
//!
//! Per-node reports: N runner writers in this process (the runner's own
//! `spawn_writer`, one per simulated node, each with its spread offset and
//! retries) are handed their node's result at the same moment, the
//! scheduled time. Their reports belong to a Debugger whose Pod is bound
//! to the cluster's one node but names a scripts ConfigMap that does not
//! exist, so no pod runs (a Debugger that selects no node would have its
//! reports removed; the cluster is torn down after, which also removes
//! that Pod); the operator in the cluster aggregates them. Measured: seconds until `status.completedNodes = N` and
//! all N keys in the summary ConfigMap; what etcd wrote (its WAL bytes)
//! against the sum of the reports' sizes; the API server's CPU seconds; the
//! ConfigMap's size; updates of the Debugger seen by one watcher, times N
//! (each runner watches its Debugger); keys lost.
//!
//! `COMBO_BENCH_BUSY=1` hands each node the result of a busy node instead
//! (see [`busy_result`]): 150 items, 30 of them failed with kernel lines
//! of 160 bytes, every one listed in its report.
//!
//! Baseline (`COMBO_BENCH_BASELINE=1`): the same N results written as the
//! runners wrote them before the reports existed: each node server-side
//! applies its own key of one shared ConfigMap (field manager
//! `combo-runner/<node>`), after a spread offset of 100 ms per node,
//! retrying until the write lands. No operator wrote status from those
//! keys here, so its watch events are given as the estimate the old
//! design implies (one status write per key, to N watchers).

#[path = "../tests/support/cluster.rs"]
mod cluster;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use combo_api::{
    keys, Debugger, DebuggerReport, DebuggerSpec, ItemResult, NodeSummary, WorkloadType,
};
use combo_runner::cluster::publish::{
    attempt_timeout, retry_pause, spread_delay, Kept, Owner, Pending, Verdicts,
};
use combo_runner::cluster::writer::spawn_writer;
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use kube::Api;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const RUN_AT: &str = "2026-11-22T06:00:00Z";
/// The scripts ConfigMap the Debugger names and nobody makes: its pod
/// never starts, so no runner writes beside the benchmark's.
const NO_SCRIPTS: &str = "bench-no-scripts";
/// etcd's client address in the test control plane (tests/e2e/cluster.sh).
const ETCD: &str = "127.0.0.1:23790";

/// One node's result, about the size the default scripts produce on a
/// healthy node with one failed item.
fn result(node: usize) -> NodeSummary {
    let mut s = NodeSummary {
        run_at: RUN_AT.into(),
        finished_at: "2026-11-22T06:00:04Z".into(),
        ..Default::default()
    };
    let mut add = |cat: &str, item: String, r: ItemResult| {
        s.categories.entry(cat.into()).or_default().insert(item, r);
    };
    add("disk", "/".into(), ItemResult::ok());
    add(
        "disk",
        format!("/data{node}"),
        ItemResult::err("disk full (97% used)"),
    );
    add("net", "eth0".into(), ItemResult::ok());
    add("net", "default-route".into(), ItemResult::ok());
    add("mem", "available".into(), ItemResult::ok());
    add("svc", "kubelet".into(), ItemResult::ok());
    s
}

/// A busy node's result ([`combo_testkit::busy::busy_result`]).
fn busy_result(node: usize) -> NodeSummary {
    combo_testkit::busy::busy_result(node, RUN_AT, "2026-11-22T06:00:04Z")
}

/// Counters of the control plane at one moment.
#[derive(Clone, Copy)]
struct Counters {
    /// Bytes etcd wrote to its write-ahead log.
    etcd_wal_bytes: f64,
    /// The API server's CPU time in seconds.
    apiserver_cpu: f64,
}

fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
}

/// etcd's `/metrics` (plain HTTP on loopback).
async fn etcd_metrics() -> String {
    let mut s = tokio::net::TcpStream::connect(ETCD)
        .await
        .expect("etcd reachable");
    s.write_all(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        .await
        .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.expect("etcd /metrics");
    out
}

async fn counters(client: &kube::Client) -> Counters {
    let req = http::Request::get("/metrics").body(Vec::new()).unwrap();
    let api = client.request_text(req).await.expect("API server /metrics");
    let etcd = etcd_metrics().await;
    Counters {
        etcd_wal_bytes: metric(&etcd, "etcd_disk_wal_write_bytes_total")
            .expect("etcd_disk_wal_write_bytes_total in etcd's /metrics"),
        apiserver_cpu: metric(&api, "process_cpu_seconds_total").expect("API server CPU"),
    }
}

/// Counts updates of one Debugger from the moment `counting` is set.
fn count_updates(api: Api<Debugger>, name: &str, counting: Arc<AtomicBool>) -> Arc<AtomicUsize> {
    let seen = Arc::new(AtomicUsize::new(0));
    let n = seen.clone();
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    tokio::spawn(async move {
        let mut events = watcher(api, config).boxed();
        while let Some(e) = events.next().await {
            if let Ok(watcher::Event::Apply(_)) = e {
                if counting.load(Ordering::SeqCst) {
                    n.fetch_add(1, Ordering::SeqCst);
                }
            }
        }
    });
    seen
}

/// When the `n`-th distinct DebuggerReport of `api` was seen by a watch,
/// once it has been (the moment the last report of the run landed).
fn last_report_seen(api: Api<DebuggerReport>, n: usize) -> Arc<std::sync::Mutex<Option<Instant>>> {
    let at = Arc::new(std::sync::Mutex::new(None));
    let out = at.clone();
    tokio::spawn(async move {
        let mut seen = std::collections::HashSet::new();
        let mut events = watcher(api, watcher::Config::default()).boxed();
        while let Some(e) = events.next().await {
            if let Ok(watcher::Event::Apply(r) | watcher::Event::InitApply(r)) = e {
                if r.spec.run_at == RUN_AT {
                    seen.insert(r.metadata.name.unwrap_or_default());
                    if seen.len() >= n {
                        *at.lock().unwrap() = Some(Instant::now());
                        return;
                    }
                }
            }
        }
    });
    out
}

/// What one way of writing the N results cost.
struct Figures {
    seconds: Option<f64>,
    etcd_bytes: f64,
    apiserver_cpu: f64,
    cm_bytes: usize,
    keys: usize,
}

impl Figures {
    /// The cost between two readings of the counters, with the summary
    /// ConfigMap `cm` as the run left it.
    fn between(seconds: Option<f64>, before: Counters, after: Counters, cm: &ConfigMap) -> Self {
        let (keys, cm_bytes) = cm_size(cm);
        Figures {
            seconds,
            etcd_bytes: after.etcd_wal_bytes - before.etcd_wal_bytes,
            apiserver_cpu: after.apiserver_cpu - before.apiserver_cpu,
            cm_bytes,
            keys,
        }
    }

    fn line(&self, n: usize, what: &str, data_bytes: usize, watch: &str, target: &str) -> String {
        let time = match self.seconds {
            Some(s) => format!("{s:.1} s{target}"),
            None => "not complete within the time limit".into(),
        };
        format!(
            "{what}, N={n}: {time}; etcd wrote {:.1} MB for {:.1} kB of results ({:.1}x, target <= 5x for reports); API server CPU {:.1} s; ConfigMap {:.1} kB; watch events to runners {watch}; lost keys {}",
            self.etcd_bytes / 1e6,
            data_bytes as f64 / 1e3,
            self.etcd_bytes / data_bytes as f64,
            self.apiserver_cpu,
            self.cm_bytes as f64 / 1e3,
            n - self.keys.min(n),
        )
    }
}

fn cm_size(cm: &ConfigMap) -> (usize, usize) {
    let keys = cm.data.as_ref().map_or(0, |d| d.len());
    (keys, serde_json::to_vec(cm).unwrap().len())
}

fn json_len<T: serde::Serialize>(v: &T) -> usize {
    serde_json::to_vec(v).unwrap().len()
}

/// The Debugger the reports belong to, named `bench`, once the operator's
/// first writes (workload, empty summary, status) are done: they are not
/// part of the run. Its owner reference and its summary ConfigMap's name.
async fn settled_debugger(
    dbgs: &Api<Debugger>,
    cms: &Api<ConfigMap>,
    node: &str,
) -> (Owner, String) {
    let mut dbg = Debugger::new(
        "bench",
        DebuggerSpec {
            workload_type: WorkloadType::Pod,
            node_name: node.into(),
            enable_config_map: true,
            config_map: NO_SCRIPTS.into(),
            ..DebuggerSpec::default()
        },
    );
    dbg.metadata.namespace = dbgs.namespace().map(str::to_string);
    let dbg = dbgs
        .create(&PostParams::default(), &dbg)
        .await
        .expect("Debugger created (operator installed?)");
    let owner = Owner::of(&dbg).expect("a created Debugger has a uid");
    let cm_name = dbg.spec.summary_name("bench");
    while cms.get_opt(&cm_name).await.unwrap().is_none() {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(Duration::from_secs(5)).await;
    (owner, cm_name)
}

/// Seconds from `t0` until the Debugger `bench` counts `n` completed nodes
/// and its summary ConfigMap `n` keys; `None` if not within `limit`.
async fn seconds_to_complete(
    dbgs: &Api<Debugger>,
    cms: &Api<ConfigMap>,
    cm_name: &str,
    n: usize,
    t0: Instant,
    limit: Duration,
) -> Option<f64> {
    while t0.elapsed() < limit {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let d = dbgs.get("bench").await.unwrap();
        if d.status.as_ref().map_or(0, |s| s.completed_nodes) as usize != n {
            continue;
        }
        if cm_size(&cms.get(cm_name).await.unwrap()).0 == n {
            return Some(t0.elapsed().as_secs_f64());
        }
    }
    None
}

/// The operator's peak RSS (`VmHWM`) in KiB, read from the `/proc` of the
/// process `COMBO_BENCH_OPERATOR_PID` names (tests/bench/reports.sh finds
/// it), if it is set and running.
fn operator_peak_rss() -> Option<u64> {
    let pid = std::env::var("COMBO_BENCH_OPERATOR_PID").ok()?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches(" kB")
        .parse()
        .ok()
}

/// The N results as per-node DebuggerReports, written by the runner's
/// writer; with a non-zero `arrival`, the results are handed to the
/// writers one after another over that time (reports arriving over
/// `arrival` plus the writers' spread) instead of all at once.
async fn reports(
    client: &kube::Client,
    n: usize,
    limit: Duration,
    arrival: Duration,
    result: fn(usize) -> NodeSummary,
) {
    let ns = cluster::Ns::new(client, "reports-bench").await;
    let dbgs: Api<Debugger> = Api::namespaced(client.clone(), &ns.name);
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns.name);
    let node = Api::<k8s_openapi::api::core::v1::Node>::all(client.clone())
        .list(&ListParams::default())
        .await
        .expect("list nodes")
        .items
        .into_iter()
        .find_map(|n| n.metadata.name)
        .expect("the cluster has a node");
    let (owner, cm_name) = settled_debugger(&dbgs, &cms, &node).await;

    let counting = Arc::new(AtomicBool::new(false));
    let updates = count_updates(dbgs.clone(), "bench", counting.clone());
    let last_report = last_report_seen(Api::namespaced(client.clone(), &ns.name), n);
    let writers: Vec<_> = (0..n)
        .map(|i| spawn_writer(cluster::publisher(client, &ns.name, &format!("node-{i}"))))
        .collect();
    tokio::time::sleep(Duration::from_secs(2)).await;

    let before = counters(client).await;
    counting.store(true, Ordering::SeqCst);
    let t0 = Instant::now();
    let hand_over = {
        let owner = owner.clone();
        async move {
            for (i, tx) in writers.iter().enumerate() {
                if !arrival.is_zero() {
                    tokio::time::sleep_until((t0 + arrival.mul_f64(i as f64 / n as f64)).into())
                        .await;
                }
                let summary = result(i);
                // The node's first run with a history: each failed item
                // turns failing, as on a fault that reaches every node.
                let history = Kept {
                    ran: Default::default(),
                    verdicts: Verdicts::default().next(&summary),
                };
                tx.send(Pending {
                    owner: owner.clone(),
                    summary,
                    sources: Default::default(),
                    nodes: n as u32,
                    history,
                })
                .expect("writer runs");
            }
            writers
        }
    };
    let (seconds, writers) = tokio::join!(
        seconds_to_complete(&dbgs, &cms, &cm_name, n, t0, limit),
        hand_over
    );
    let after_last = seconds
        .zip(*last_report.lock().unwrap())
        .map(|(s, last)| s - last.saturating_duration_since(t0).as_secs_f64());
    // Writes the operator still owes (its 2 s coalescing window) belong
    // to the run.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after = counters(client).await;
    counting.store(false, Ordering::SeqCst);
    drop(writers);

    let cm = cms.get(&cm_name).await.unwrap();
    let list = Api::<DebuggerReport>::namespaced(client.clone(), &ns.name)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items;
    let report_bytes: usize = list.iter().map(json_len).sum();
    let figures = Figures::between(seconds, before, after, &cm);
    let u = updates.load(Ordering::SeqCst);
    // The time targets are for reports arriving at once; spread over
    // `arrival`, the line above has the target that applies.
    let target = match n {
        _ if !arrival.is_zero() => " (reports spread over the arrival time)",
        1000 => " (target <= 10 s)",
        5000 => " (target <= 30 s)",
        _ => "",
    };
    let arrived = last_report
        .lock()
        .unwrap()
        .map(|l| l.saturating_duration_since(t0).as_secs_f64());
    println!(
        "per-node reports, N={n}, arriving over {:.0} s: summary and status complete {} after the last report landed (target <= 2 s); etcd {:.1}x the reports' bytes (target <= 3x); operator peak RSS {} (target < 50 MiB)",
        arrived.unwrap_or_default(),
        after_last.map_or("never".to_string(), |s| format!("{s:.1} s")),
        figures.etcd_bytes / report_bytes.max(1) as f64,
        operator_peak_rss().map_or("not read".to_string(), |kib| format!("{:.1} MiB", kib as f64 / 1024.0)),
    );
    println!(
        "{}; {} reports of {:.0} B each on average",
        figures.line(
            n,
            "per-node reports",
            report_bytes,
            &format!("{} ({u} Debugger updates x {n})", u * n),
            target
        ),
        list.len(),
        report_bytes as f64 / list.len().max(1) as f64,
    );
    results_where_operators_act(client).await;
    ns.delete_and_wait().await;
}

/// The old runner's write of its key: spread over 100 ms per node (at
/// least 1 s), then applied until it lands with the same attempt limits
/// and pauses the runner uses for its report.
async fn old_write(cms: Api<ConfigMap>, name: String, node: String, value: String, n: usize) {
    let window = (Duration::from_millis(100) * n as u32).max(Duration::from_secs(1));
    tokio::time::sleep(spread_delay(&node, window)).await;
    let body = serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name},
        "data": {node.as_str(): value},
    });
    let pp = PatchParams::apply(&keys::field_manager_runner(&node)).force();
    let mut attempt = 0;
    loop {
        attempt += 1;
        let limit = attempt_timeout(attempt);
        match tokio::time::timeout(limit, cms.patch(&name, &pp, &Patch::Apply(&body))).await {
            Ok(Ok(_)) => return,
            Ok(Err(e)) => tracing::debug!(%node, error = %e, "old write failed"),
            Err(_) => tracing::debug!(%node, "old write timed out"),
        }
        tokio::time::sleep(retry_pause(&node, RUN_AT, attempt)).await;
    }
}

/// The N results as keys of one ConfigMap, written by N field managers.
async fn shared_configmap(client: &kube::Client, n: usize, limit: Duration) {
    let ns = cluster::Ns::new(client, "reports-bench-old").await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns.name);
    let name = "old-summary".to_string();
    // The old operator made the summary ConfigMap empty before the runs.
    let cm: ConfigMap = serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "namespace": ns.name}
    }))
    .unwrap();
    cms.create(&PostParams::default(), &cm).await.unwrap();
    let values: Vec<String> = (0..n).map(|i| result(i).to_yaml()).collect();
    let data_bytes: usize = values
        .iter()
        .enumerate()
        .map(|(i, v)| v.len() + format!("node-{i}").len())
        .sum();
    tokio::time::sleep(Duration::from_secs(2)).await;

    let before = counters(client).await;
    let t0 = Instant::now();
    let tasks: Vec<_> = values
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            tokio::spawn(old_write(
                cms.clone(),
                name.clone(),
                format!("node-{i}"),
                v,
                n,
            ))
        })
        .collect();
    let mut seconds = None;
    while t0.elapsed() < limit {
        tokio::time::sleep(Duration::from_millis(500)).await;
        if tasks.iter().all(|t| t.is_finished()) {
            seconds = Some(t0.elapsed().as_secs_f64());
            break;
        }
    }
    for t in &tasks {
        t.abort();
    }
    let after = counters(client).await;
    let figures = Figures::between(seconds, before, after, &cms.get(&name).await.unwrap());
    println!(
        "{}",
        figures.line(
            n,
            "baseline, one shared ConfigMap",
            data_bytes,
            &format!(
                "~{} (estimate: one status write per key, to {n} runners)",
                figures.keys * n
            ),
            ""
        )
    );
    ns.delete_and_wait().await;
}

/// The operator's `/metrics`, from its pod's address (the machine routes
/// the simulated nodes' pod subnets), asked for gzipped as Prometheus and
/// vmagent ask: its text and the bytes sent, or why not.
async fn operator_metrics(client: &kube::Client) -> Result<(String, usize), String> {
    use k8s_openapi::api::core::v1::Pod;
    use std::io::Read as _;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "kube-combo-system");
    let lp = ListParams::default().labels("app.kubernetes.io/name=kube-combo");
    let list = pods.list(&lp).await.map_err(|e| e.to_string())?;
    let ip = list
        .items
        .iter()
        .find_map(|p| p.status.as_ref()?.pod_ip.clone())
        .ok_or("no operator pod with an address")?;
    let mut s = tokio::net::TcpStream::connect((ip.as_str(), 8080))
        .await
        .map_err(|e| format!("{ip}:8080: {e}"))?;
    s.write_all(b"GET /metrics HTTP/1.0\r\nHost: operator\r\nAccept-Encoding: gzip\r\n\r\n")
        .await
        .map_err(|e| e.to_string())?;
    let mut reply = Vec::new();
    s.read_to_end(&mut reply).await.map_err(|e| e.to_string())?;
    let at = reply
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("no end of the answer's head")?;
    let head = String::from_utf8_lossy(&reply[..at]).to_ascii_lowercase();
    let body = &reply[at + 4..];
    let mut text = String::new();
    if head.contains("content-encoding: gzip") {
        flate2::read::GzDecoder::new(body)
            .read_to_string(&mut text)
            .map_err(|e| format!("the gzip body: {e}"))?;
    } else {
        text = String::from_utf8_lossy(body).into_owned();
    }
    Ok((text, body.len()))
}

/// The sum of every series of `name` in an exposition.
fn sum_of(text: &str, name: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")) || l.starts_with(&format!("{name} ")))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Events on Nodes the operator wrote (in `default`).
async fn node_events(client: &kube::Client) -> usize {
    use k8s_openapi::api::core::v1::Event;
    let api: Api<Event> = Api::namespaced(client.clone(), "default");
    let mut lp = ListParams::default().limit(500);
    let mut count = 0;
    loop {
        let page = api.list(&lp).await.expect("list Events");
        count += page
            .items
            .iter()
            .filter(|e| e.involved_object.kind.as_deref() == Some("Node"))
            .filter(|e| {
                e.source.as_ref().and_then(|s| s.component.as_deref())
                    == Some("kube-combo-operator")
            })
            .count();
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(c) => lp = lp.continue_token(&c),
            None => return count,
        }
    }
}

/// The per-item series and the Node Events of the run just made: series
/// count of `combo_operator_node_problem`, and Event writes per second
/// over a window of [`EVENT_WINDOW`]: a fault on every node makes a
/// bounded rate (docs/operator.md, "Events on the Node").
async fn results_where_operators_act(client: &kube::Client) {
    let (metrics, sent) = match operator_metrics(client).await {
        Ok(m) => m,
        Err(e) => {
            println!("results where operators act: the operator's metrics not read: {e}");
            return;
        }
    };
    let series = metrics
        .lines()
        .filter(|l| l.starts_with("combo_operator_node_problem{"))
        .count();
    let events_before = node_events(client).await;
    let writes_before = sum_of(&metrics, "combo_operator_node_event_writes_total");
    tokio::time::sleep(EVENT_WINDOW).await;
    let events_after = node_events(client).await;
    let later = operator_metrics(client).await.unwrap_or_default().0;
    let writes_after = sum_of(&later, "combo_operator_node_event_writes_total");
    let window = EVENT_WINDOW.as_secs_f64();
    println!(
        "results where operators act: {series} combo_operator_node_problem series ({:.1} MiB of text, {:.1} MiB sent gzipped); Node Event writes {:.1}/s over {window:.0} s ({} Events then {}; the operator counted {:.0} writes), {:.0} Events dropped past the queue",
        metrics.len() as f64 / 1048576.0,
        sent as f64 / 1048576.0,
        (writes_after - writes_before) / window,
        events_before,
        events_after,
        writes_after,
        sum_of(&later, "combo_operator_node_events_dropped_total"),
    );
}

/// How long the Node Events' write rate is watched.
const EVENT_WINDOW: Duration = Duration::from_secs(30);

#[tokio::main]
async fn main() {
    if std::env::var_os("COMBO_E2E_DIR").is_none() {
        eprintln!("reports benchmark skipped: set COMBO_E2E_DIR to a running control plane");
        return;
    }
    let env = |k: &str, d: u64| -> u64 {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let n = env("COMBO_BENCH_NODES", 200) as usize;
    let limit = Duration::from_secs(env("COMBO_BENCH_LIMIT", 600));
    let client = cluster::admin_client().await;
    let arrival = Duration::from_secs(env("COMBO_BENCH_ARRIVAL", 0));
    let result = if env("COMBO_BENCH_BUSY", 0) == 1 {
        busy_result
    } else {
        result
    };
    reports(&client, n, limit, arrival, result).await;
    if env("COMBO_BENCH_BASELINE", 0) == 1 {
        shared_configmap(&client, n, limit).await;
    }
}
