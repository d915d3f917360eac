//! Runner benchmark against the test control plane (not a test: it measures
//! and prints). Needs `tests/e2e/cluster.sh up DIR` (the CRDs installed, e.g.
//! by `kubectl apply -k config/default`) and
//! `COMBO_E2E_DIR=DIR cargo bench -p combo-runner --bench cluster`.
//!
//! 1. Start delay: a runner (the in-cluster scheduler, in this process)
//!    follows a Debugger whose runAt is set a moment ahead, 100 times; the
//!    delay is when its script starts minus the scheduled time.

#[path = "../tests/support/cluster.rs"]
mod cluster;

use std::time::{Duration, Instant};

use clap::Parser;
use combo_api::{Debugger, RunId};
use combo_runner::cli::Args;
use combo_runner::cluster::identity::Identity;
use combo_runner::cluster::serve;
use kube::api::{Patch, PatchParams, PostParams};
use kube::Api;

const RUNS: usize = 100;

#[tokio::main]
async fn main() {
    if std::env::var_os("COMBO_E2E_DIR").is_none() {
        eprintln!("runner benchmark skipped: set COMBO_E2E_DIR to a running control plane");
        return;
    }
    let client = cluster::admin_client().await;
    start_delay(&client).await;
}

async fn start_delay(client: &kube::Client) {
    let ns = cluster::Ns::new(client, "runner-bench").await;
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
    let runner = tokio::spawn(serve(args, id, client.clone(), std::future::pending()));

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
