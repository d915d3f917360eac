//! Run-now requests of a runner in a pod (docs/runner.md, "Run now"),
//! against the stand-in API server.

use super::tests::{debugger, identity, list, patches, report_read_back, runner_args, until};
use super::*;
use crate::testdir::TestDir;
use combo_testkit::stand_in::{Answer, StandIn};
use serde_json::json;

/// A stand-in API server holding `debugger` and this node's `report`,
/// taking every report written.
pub(super) fn holding_with_report(
    debugger: serde_json::Value,
    report: serde_json::Value,
) -> (Client, StandIn) {
    StandIn::answering(move |r| {
        let uri = r.uri.as_str();
        if uri.contains("/debuggers?") && uri.contains("watch=true") {
            Answer::Never
        } else if uri.contains("/debuggers?") {
            Answer::Json(200, list(debugger.clone()))
        } else if uri.contains("/debuggerreports/") {
            Answer::Json(200, report.clone())
        } else {
            Answer::status(404, "NotFound")
        }
    })
}

/// This node's report after a run of `run_at`, with `annotations`.
fn report(run_at: &str, annotations: serde_json::Value) -> serde_json::Value {
    json!({"apiVersion": "kubecombo.io/v1", "kind": "DebuggerReport",
            "metadata": {"name": "dbg.node-1", "namespace": "ops", "annotations": annotations},
            "spec": {"debugger": "dbg", "node": "node-1", "runAt": run_at}})
}

/// A Debugger on a yearly cron with a run-now request for `asked`.
fn asking(asked: &str) -> serde_json::Value {
    let mut dbg = debugger(json!("0 0 1 1 *"));
    dbg["metadata"]["annotations"] = json!({"kubecombo.io/run-now": asked});
    dbg
}

#[tokio::test]
async fn a_run_now_request_runs_once_and_its_report_records_it_beside_the_last_scheduled_run() {
    let scripts = TestDir::new("run-now");
    scripts.script("disk/ok.sh", "exit 0");
    let asked = "2026-01-02T03:04:05Z";
    // The node ran the yearly fire and an earlier request.
    let before = report(
        "2026-01-01T00:00:00Z",
        json!({"kubecombo.io/scheduled-run": "2026-01-01T00:00:00Z",
               "kubecombo.io/run-now-done": "2025-12-31T00:00:00Z"}),
    );
    let (client, seen) = holding_with_report(asking(asked), before);
    let runner = tokio::spawn(serve(
        runner_args(&scripts),
        identity("node-1"),
        client,
        std::future::pending(),
    ));
    until("the request's run is reported", || {
        !patches(&seen).is_empty()
    })
    .await;
    // Time for a second run, if the request were taken twice.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    runner.abort();
    let written = patches(&seen);
    assert_eq!(written.len(), 1, "one run for one request");
    let body: serde_json::Value = serde_json::from_str(&written[0].body).unwrap();
    assert_eq!(body["spec"]["runAt"], asked);
    let a = &body["metadata"]["annotations"];
    assert_eq!(a["kubecombo.io/run-now-done"], asked);
    assert_eq!(
        a["kubecombo.io/scheduled-run"], "2026-01-01T00:00:00Z",
        "the last run of runAt is kept"
    );
    assert_eq!(
        body["spec"]["history"],
        json!({"runs": [asked], "items": {}}),
        "the request's run is a run of the history, its id its runAt"
    );
}

#[tokio::test]
async fn a_restarted_runner_does_not_run_a_request_its_report_records() {
    let scripts = TestDir::new("run-now-done");
    scripts.script("disk/ok.sh", "exit 0");
    let asked = "2026-01-02T03:04:05Z";
    let done = report(
        asked,
        json!({"kubecombo.io/scheduled-run": "2026-01-01T00:00:00Z",
               "kubecombo.io/run-now-done": asked}),
    );
    let (client, seen) = holding_with_report(asking(asked), done);
    let runner = tokio::spawn(serve(
        runner_args(&scripts),
        identity("node-1"),
        client,
        std::future::pending(),
    ));
    report_read_back(&seen).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    runner.abort();
    assert!(
        !seen.requests().iter().any(|r| r.method == "PATCH"),
        "the request was run before the restart: nothing runs"
    );
}

#[test]
fn an_invalid_run_now_value_asks_for_nothing_and_a_valid_one_for_its_run() {
    let dbg = |asked: &str| -> Debugger { serde_json::from_value(asking(asked)).unwrap() };
    let now = Utc::now();
    let mut said = Said::default();
    let done = History {
        completed: RunAt::parse("0 0 1 1 *")
            .unwrap()
            .latest_due(now)
            .map(RunId::at),
        ..History::default()
    };
    let bad = decision(&dbg("tomorrow"), now, &mut None, done, &mut said);
    assert!(matches!(bad, Decision::Wait(_)), "{bad:?}");
    assert_eq!(said.bad_run_now.as_deref(), Some("tomorrow"), "said once");
    let good = decision(
        &dbg("2026-01-02T03:04:05Z"),
        now,
        &mut None,
        done,
        &mut said,
    );
    assert_eq!(
        good,
        Decision::RunNow(RunId::from_rfc3339("2026-01-02T03:04:05Z").unwrap())
    );
}
