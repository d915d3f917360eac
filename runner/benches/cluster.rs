//! Runner benchmark against the test control plane (not a test: it measures
//! and prints). Needs `tests/e2e/cluster.sh up DIR` (the CRDs installed, e.g.
//! by `kubectl apply -k config/default`) and
//! `COMBO_E2E_DIR=DIR cargo bench -p combo-runner --bench cluster`.
//!
//! 1. Start delay: a runner (the in-cluster scheduler, in this process)
//!    follows a Debugger whose runAt is set a moment ahead, 100 times; the
//!    delay is when its script starts minus the scheduled time.
//! 2. Summary writes: 200 nodes applying their keys to one ConfigMap as
//!    the runners do (each after its spread offset, retrying until the write
//!    lands) and all at once with one attempt each, against the same 200
//!    writes one after another by one client. Each line also gives what the
//!    API server did: its ConfigMap writes to etcd per key (more than 1 when
//!    writes lost conflicts and were redone) and its CPU time.

#[path = "../tests/support/cluster.rs"]
mod cluster;

use std::time::{Duration, Instant};

use clap::Parser;
use combo_api::{Debugger, ItemResult, NodeSummary, RunId};
use combo_runner::cli::Args;
use combo_runner::cluster::{serve, Identity};
use combo_runner::publish::{spread_window, write, Pending, Publisher};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Patch, PatchParams, PostParams};
use kube::Api;

const RUNS: usize = 100;
const WRITERS: usize = 200;

#[tokio::main]
async fn main() {
    if std::env::var_os("COMBO_E2E_DIR").is_none() {
        eprintln!("runner benchmark skipped: set COMBO_E2E_DIR to a running control plane");
        return;
    }
    let client = cluster::admin_client().await;
    start_delay(&client).await;
    writes(&client).await;
}

async fn start_delay(client: &kube::Client) {
    let ns = cluster::Ns::new(client, "runner-bench").await;
    cluster::operator_creates_summary(client, &ns.name, "bench-summary").await;
    let dir = std::env::temp_dir().join(format!("combo-runner-bench-{}", std::process::id()));
    let marks = dir.join("marks");
    std::fs::create_dir_all(dir.join("scripts/disk")).unwrap();
    std::fs::create_dir_all(&marks).unwrap();
    let script = dir.join("scripts/disk/mark.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nd={}\ndate +%s.%N > \"$d/.$RUN_ID\" && mv \"$d/.$RUN_ID\" \"$d/$RUN_ID\"\necho 'ok mark'\n",
            marks.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();

    let dbgs: Api<Debugger> = Api::namespaced(client.clone(), &ns.name);
    let dbg: Debugger = serde_json::from_value(serde_json::json!({
        "apiVersion": "kubecombo.io/v1", "kind": "Debugger",
        "metadata": {"name": "bench", "namespace": ns.name},
        "spec": {"categories": ["disk"], "summaryConfigMap": "bench-summary"}
    }))
    .unwrap();
    dbgs.create(&PostParams::default(), &dbg)
        .await
        .expect("Debugger created (CRDs installed?)");

    let args = Args::parse_from([
        "combo-runner",
        "--scripts",
        dir.join("scripts").to_str().unwrap(),
    ]);
    let id = Identity {
        node: "bench-node".into(),
        pod: "bench-pod".into(),
        namespace: ns.name.clone(),
        debugger: "bench".into(),
    };
    let runner = tokio::spawn(serve(args, id, client.clone()));

    let mut delays = Vec::with_capacity(RUNS);
    for i in 0..RUNS {
        // A whole second at least 700 ms ahead.
        let at = RunId::at(chrono::Utc::now() + chrono::Duration::milliseconds(1700));
        dbgs.patch(
            "bench",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"runAt": at.rfc3339()}})),
        )
        .await
        .unwrap();
        let mark = marks.join(at.to_string());
        let deadline = Instant::now() + Duration::from_secs(20);
        while !mark.exists() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let Ok(text) = std::fs::read_to_string(&mark) else {
            eprintln!("run {i} ({at}) did not start within 20 s");
            continue;
        };
        let started: f64 = text.trim().parse().unwrap();
        let scheduled = at.0.timestamp() as f64;
        delays.push((started - scheduled) * 1000.0);
    }
    runner.abort();
    let _ = std::fs::remove_dir_all(&dir);
    ns.delete_and_wait().await;
    delays.sort_by(|a, b| a.total_cmp(b));
    let pct = |p: f64| delays[((delays.len() as f64 - 1.0) * p).round() as usize];
    println!(
        "start delay after the scheduled time over {} runs: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms (target p99 <= 100 ms)",
        delays.len(),
        pct(0.50),
        pct(0.99),
        delays.last().copied().unwrap_or_default()
    );
}

fn summary(node: usize) -> NodeSummary {
    let mut s = NodeSummary {
        run_at: "2026-11-22T06:00:00Z".into(),
        finished_at: "2026-11-22T06:00:01Z".into(),
        ..Default::default()
    };
    let disk = s.categories.entry("disk".into()).or_default();
    disk.insert("/".into(), ItemResult::ok());
    disk.insert(
        format!("/data{node}"),
        ItemResult::err("disk full (97% used)"),
    );
    s
}

/// Counters of the API server, read from its `/metrics`.
struct ServerCounters {
    /// Writes of ConfigMaps it sent to etcd: every attempt, also those that
    /// lost a conflict and were redone.
    etcd_writes: f64,
    /// Its CPU time in seconds.
    cpu: f64,
}

async fn server_counters(client: &kube::Client) -> ServerCounters {
    let req = http::Request::get("/metrics").body(Vec::new()).unwrap();
    let text = client.request_text(req).await.expect("API server /metrics");
    let value = |name: &str| -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {name} in the API server's /metrics"))
    };
    ServerCounters {
        etcd_writes: value(
            r#"etcd_request_duration_seconds_count{operation="update",type="*core.ConfigMap"}"#,
        ),
        cpu: value("process_cpu_seconds_total"),
    }
}

/// One way of writing the 200 keys, measured.
struct Phase {
    wall: Duration,
    etcd_writes: f64,
    cpu: f64,
    lost: usize,
}

impl Phase {
    async fn measure<F: std::future::Future<Output = ()>>(
        client: &kube::Client,
        api: &Api<ConfigMap>,
        cm: &str,
        writes: F,
    ) -> Phase {
        let before = server_counters(client).await;
        let t = Instant::now();
        writes.await;
        let wall = t.elapsed();
        let after = server_counters(client).await;
        let keys = api
            .get(cm)
            .await
            .unwrap()
            .data
            .map(|d| d.len())
            .unwrap_or(0);
        Phase {
            wall,
            etcd_writes: after.etcd_writes - before.etcd_writes,
            cpu: after.cpu - before.cpu,
            lost: WRITERS - keys,
        }
    }

    /// What the API server did, and what was lost.
    fn work(&self) -> String {
        format!(
            "{:.1} etcd writes per key, API server CPU {:.1} s; lost {}",
            self.etcd_writes / WRITERS as f64,
            self.cpu,
            self.lost
        )
    }

    fn describe(&self, sequential: &Phase) -> String {
        format!(
            "{:.0} ms, speedup {:.2}x over sequential; {}",
            self.wall.as_secs_f64() * 1000.0,
            sequential.wall.as_secs_f64() / self.wall.as_secs_f64(),
            self.work()
        )
    }
}

async fn writes(client: &kube::Client) {
    let ns = cluster::Ns::new(client, "runner-bench-writes").await;
    for cm in ["concurrent", "spread", "sequential"] {
        cluster::operator_creates_summary(client, &ns.name, cm).await;
    }
    let publishers: Vec<Publisher> = (0..WRITERS)
        .map(|i| {
            Publisher::new(
                client.clone(),
                ns.name.clone(),
                format!("node-{i}"),
                "none".into(),
            )
        })
        .collect();
    let summaries: Vec<NodeSummary> = (0..WRITERS).map(summary).collect();
    // Every runner has a connection to the API server long before it writes
    // (it watches its Debugger): open them first, so connection setup is not
    // what is measured.
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), &ns.name);
    futures::future::join_all((0..WRITERS).map(|_| api.get("concurrent"))).await;

    let sequential = Phase::measure(client, &api, "sequential", async {
        for (p, s) in publishers.iter().zip(&summaries) {
            p.apply("sequential", s).await.expect("sequential write");
        }
    })
    .await;

    // As 200 runners write at the end of one run: each after its spread
    // offset, retrying until its write lands.
    let mut attempts = 0;
    let spread = Phase::measure(client, &api, "spread", async {
        let pending = summaries.iter().map(|s| Pending {
            configmap: "spread".into(),
            summary: s.clone(),
            nodes: WRITERS as u32,
        });
        attempts = futures::future::join_all(
            publishers
                .iter()
                .zip(pending)
                .map(|(p, pending)| write(p, pending, || None)),
        )
        .await
        .iter()
        .sum::<u32>();
    })
    .await;

    // All at once, one attempt each: what the API server does with a burst.
    let mut errors = 0;
    let concurrent = Phase::measure(client, &api, "concurrent", async {
        let results = futures::future::join_all(
            publishers
                .iter()
                .zip(&summaries)
                .map(|(p, s)| p.apply("concurrent", s)),
        )
        .await;
        errors = results.iter().filter(|r| r.is_err()).count();
    })
    .await;

    println!(
        "{WRITERS} node writes to one ConfigMap, one after another by one client: {:.0} ms; {}",
        sequential.wall.as_secs_f64() * 1000.0,
        sequential.work(),
    );
    println!(
        "{WRITERS} node writes as the runners write (spread over {:?}, retried until they land): {}; {attempts} attempts (target >= 1.0x, 0 lost)",
        spread_window(WRITERS as u32),
        spread.describe(&sequential),
    );
    println!(
        "{WRITERS} node writes all at once, one attempt each: {}; {errors} errors",
        concurrent.describe(&sequential),
    );
    ns.delete_and_wait().await;
}
