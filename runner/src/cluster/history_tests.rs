//! The item verdicts a runner in a pod keeps in its report
//! (docs/reference.md, "DebuggerReport history"), against the stand-in
//! API server.

use super::run_now_tests::holding_with_report;
use super::tests::{debugger, holding, identity, patches, runner_args, until};
use super::*;
use crate::testdir::TestDir;
use serde_json::json;

/// The body of the first report `seen` took, once the runner wrote it.
async fn first_report(seen: &combo_testkit::stand_in::StandIn) -> serde_json::Value {
    until("the run is reported", || !patches(seen).is_empty()).await;
    serde_json::from_str(&patches(seen)[0].body).unwrap()
}

#[tokio::test]
async fn a_restarted_runner_continues_the_history_its_report_keeps() {
    let scripts = TestDir::new("history-restart");
    scripts.script("disk/bad.sh", "echo 'err sda broken'");
    // Before the restart the node ran two runs, sda failing in both.
    let before = json!({"apiVersion": "kubecombo.io/v1", "kind": "DebuggerReport",
        "metadata": {"name": "dbg.node-1", "namespace": "ops",
            "annotations": {"kubecombo.io/scheduled-run": "2026-11-23T06:00:00Z"}},
        "spec": {"debugger": "dbg", "node": "node-1", "runAt": "2026-11-23T06:00:00Z",
            "history": {
                "runs": ["2026-11-22T06:00:00Z", "2026-11-23T06:00:00Z"],
                "items": {"disk/sda": {"verdicts": "xx", "failingSince": "2026-11-22T06:00:00Z"}}}}});
    let (client, seen) = holding_with_report(debugger(json!("2026-11-24T06:00:00Z")), before);
    let runner = tokio::spawn(serve(
        runner_args(&scripts),
        identity("node-1"),
        client,
        std::future::pending(),
    ));
    let body = first_report(&seen).await;
    runner.abort();
    assert_eq!(
        body["spec"]["history"],
        json!({
            "runs": ["2026-11-22T06:00:00Z", "2026-11-23T06:00:00Z", "2026-11-24T06:00:00Z"],
            "items": {"disk/sda": {"verdicts": "xxx", "failingSince": "2026-11-22T06:00:00Z"}},
        }),
        "one run longer, the streak's start kept"
    );
}

#[tokio::test]
async fn an_item_the_report_folds_away_keeps_its_verdict_in_the_history() {
    let scripts = TestDir::new("history-folded");
    // 200 failures in each of three scripts: past the report's bound. The
    // report keeps failures round-robin over the scripts, the history
    // (bounded apart) from the start of the name order, so failures of
    // disk's script that the report folds are still in the history.
    for cat in ["disk", "mem", "net"] {
        scripts.script(
            &format!("{cat}/many.sh"),
            "i=0; while [ $i -lt 200 ]; do \
             printf 'err i-%03d the device did not answer its last three probes\\n' $i; \
             i=$((i+1)); done",
        );
    }
    let mut dbg = debugger(json!("2020-01-01T00:00:00Z"));
    dbg["spec"]["categories"] = json!(["disk", "mem", "net"]);
    let (client, seen) = holding(dbg);
    let runner = tokio::spawn(serve(
        runner_args(&scripts),
        identity("node-1"),
        client,
        std::future::pending(),
    ));
    let body = first_report(&seen).await;
    runner.abort();
    let spec = &body["spec"];
    assert_eq!(spec["failedItems"], 600);
    let listed = spec["categories"]["disk"].as_object().unwrap();
    let history = &spec["history"];
    let folded_but_kept: Vec<String> = (0..200)
        .map(|i| format!("i-{i:03}"))
        .filter(|item| !listed.contains_key(item))
        .filter(|item| history["items"].get(format!("disk/{item}")).is_some())
        .collect();
    assert!(
        !folded_but_kept.is_empty(),
        "disk keeps {} items, the history {:?}",
        listed.len(),
        history["items"].as_object().map(|i| i.len())
    );
    for item in &folded_but_kept {
        assert_eq!(history["items"][format!("disk/{item}")]["verdicts"], "x");
    }
    let in_history = history["items"].as_object().unwrap().len() as u64;
    assert_eq!(
        in_history + history["omitted"].as_u64().unwrap_or(0),
        600,
        "every failure is in the history or counted as left out"
    );
}
