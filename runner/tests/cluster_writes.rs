//! Many runners writing their DebuggerReports at once through the writer a
//! runner uses (spread offset, retries with backoff), against the test
//! control plane. Run with `COMBO_E2E_DIR=DIR cargo test -p combo-runner
//! --test cluster_writes -- --ignored` after `tests/e2e/cluster.sh up DIR`.

#[path = "support/cluster.rs"]
mod cluster;

use std::time::Duration;

use combo_api::report::report_name;
use combo_api::{Debugger, DebuggerReport, DebuggerSpec, ItemResult, NodeSummary};
use combo_runner::cluster::publish::{Owner, Pending};
use combo_runner::cluster::writer::spawn_writer;
use combo_runner::run::report::Sources;
use kube::api::{ListParams, PostParams};
use kube::Api;

const WRITERS: usize = 200;

fn summary(node: usize, run_at: &str) -> NodeSummary {
    let mut s = NodeSummary {
        run_at: run_at.into(),
        finished_at: run_at.into(),
        ..Default::default()
    };
    s.categories.entry("disk".into()).or_default().insert(
        format!("item-of-{node}"),
        ItemResult::err(format!("node {node}")),
    );
    s
}

/// A Debugger without a workload (its scripts ConfigMap does not exist:
/// ConfigMapNotFound), so no pod runs and the operator keeps its reports
/// (it deletes those of a Debugger that selects no node): the reports need
/// a live owner, or the garbage collector removes them. Its owner
/// reference.
async fn debugger_without_workload(client: &kube::Client, ns: &str) -> Owner {
    let mut dbg = Debugger::new(
        "many",
        DebuggerSpec {
            enable_config_map: true,
            config_map: "absent-scripts".into(),
            ..DebuggerSpec::default()
        },
    );
    dbg.metadata.namespace = Some(ns.to_string());
    let dbg = Api::<Debugger>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &dbg)
        .await
        .expect("Debugger created");
    Owner::of(&dbg).expect("a created Debugger has a uid")
}

/// The report of `node-<i>`: written by its runner only, owned by `owner`,
/// of the run `run_at`, with its one failed item.
fn check_report(reports: &[DebuggerReport], i: usize, owner: &Owner, run_at: &str) {
    let name = report_name("many", &format!("node-{i}"));
    let r = reports
        .iter()
        .find(|r| r.metadata.name.as_deref() == Some(name.as_str()))
        .unwrap_or_else(|| panic!("{name} missing"));
    assert_eq!(r.spec.run_at, run_at, "node-{i}");
    assert_eq!(r.spec.failed_items, 1);
    assert_eq!(
        r.spec.summary().failed().next().unwrap().2,
        format!("node {i}")
    );
    let managers: Vec<String> = r
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter_map(|m| m.manager.clone())
        .collect();
    assert_eq!(
        managers,
        [format!("combo-runner/node-{i}")],
        "one writer per report"
    );
    let owners = r.metadata.owner_references.clone().unwrap_or_default();
    assert_eq!(owners.len(), 1);
    assert_eq!(owners[0].uid, owner.uid);
}

#[tokio::test]
#[ignore = "needs a control plane: COMBO_E2E_DIR"]
async fn two_hundred_runners_apply_their_reports_at_once_and_nothing_is_lost() {
    let client = cluster::admin_client().await;
    let ns = cluster::Ns::new(&client, "runner-writers").await;
    let owner = debugger_without_workload(&client, &ns.name).await;

    // Each runner hands its result to the background writer it runs in a
    // pod, all at the same moment, as at the end of a timestamp run.
    let started = std::time::Instant::now();
    let writers: Vec<_> = (0..WRITERS)
        .map(|i| {
            let tx = spawn_writer(cluster::publisher(&client, &ns.name, &format!("node-{i}")));
            tx.send(Pending {
                owner: owner.clone(),
                summary: summary(i, "2026-11-22T06:00:00Z"),
                sources: Sources::default(),
                nodes: WRITERS as u32,
                history: Default::default(),
            })
            .expect("writer runs");
            tx
        })
        .collect();
    let api = Api::<DebuggerReport>::namespaced(client.clone(), &ns.name);
    let mut reports = Vec::new();
    while reports.len() < WRITERS {
        assert!(
            started.elapsed() < Duration::from_secs(180),
            "{} of {WRITERS} reports after 180 s",
            reports.len()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
        reports = api.list(&ListParams::default()).await.unwrap().items;
    }
    eprintln!("{WRITERS} reports written in {:.1?}", started.elapsed());
    drop(writers);

    // A node writing again changes its own report only.
    cluster::publisher(&client, &ns.name, "node-0")
        .apply(
            &owner,
            &summary(0, "2026-11-22T07:00:00Z"),
            &Sources::default(),
            &Default::default(),
        )
        .await
        .unwrap();
    let reports = api.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(reports.len(), WRITERS, "one report per node");
    for i in 0..WRITERS {
        let want = if i == 0 {
            "2026-11-22T07:00:00Z"
        } else {
            "2026-11-22T06:00:00Z"
        };
        check_report(&reports, i, &owner, want);
    }
    ns.delete_and_wait().await;
}
