use super::*;
use crate::testdir::TestDir;
use clap::Parser;
use combo_testkit::stand_in::{Answer, Request, StandIn};
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub(super) fn debugger(run_at: serde_json::Value) -> serde_json::Value {
    json!({"apiVersion": "kubecombo.io/v1", "kind": "Debugger",
            "metadata": {"name": "dbg", "namespace": "ops", "uid": "uid-1", "resourceVersion": "2"},
            "spec": {"runAt": run_at, "categories": ["disk"]}})
}

pub(super) fn list(item: serde_json::Value) -> serde_json::Value {
    json!({"apiVersion": "kubecombo.io/v1", "kind": "DebuggerList",
            "metadata": {"resourceVersion": "2"}, "items": [item]})
}

/// A status code and a body; `None` never answers.
type Reply = Option<(u16, Vec<u8>)>;

/// Answers one kind of request from a list, in order, the last one
/// from then on.
#[derive(Clone)]
struct Script(Arc<AtomicUsize>, Arc<Vec<Reply>>);

impl Script {
    fn new(answers: Vec<Reply>) -> Script {
        Script(Default::default(), Arc::new(answers))
    }

    fn next(&self) -> Answer {
        let i = self.0.fetch_add(1, Ordering::SeqCst).min(self.1.len() - 1);
        match self.1[i].clone() {
            Some((code, bytes)) => Answer::Raw(code, bytes),
            None => Answer::Never,
        }
    }
}

fn bytes(v: serde_json::Value) -> Vec<u8> {
    serde_json::to_vec(&v).unwrap()
}

/// A stand-in API server whose Debugger and report of this node are
/// malformed before they are good; the Debugger's good `runAt` is `run_at`.
fn malformed_then_good(run_at: &'static str) -> (Client, StandIn) {
    let not_found = json!({"apiVersion": "v1", "kind": "Status", "status": "Failure",
            "reason": "NotFound", "code": 404, "message": "not found"});
    // The Debugger: first a list whose item has fields of the wrong
    // type, then one whose runAt is not a schedule; its watch sends a
    // wrongly typed object and a line that is not JSON before a good
    // Debugger.
    let lists = Script::new(vec![
        Some((200, bytes(list(debugger(json!(5)))))),
        Some((200, bytes(list(debugger(json!("every tuesday")))))),
    ]);
    let watch_lines = [
        json!({"type": "MODIFIED", "object": {"apiVersion": "kubecombo.io/v1",
                "kind": "Debugger", "metadata": {"name": "dbg"}, "spec": {"categories": "disk"}}})
        .to_string(),
        "}{ not json".to_string(),
        json!({"type": "MODIFIED", "object": debugger(json!(run_at))}).to_string(),
    ]
    .join("\n")
        + "\n";
    let watches = Script::new(vec![Some((200, watch_lines.into_bytes())), None]);
    // This node's report: first not JSON, then a runAt that is no time.
    let reads = Script::new(vec![
        Some((200, b"\x00\xff garbage".to_vec())),
        Some((200, bytes(report(json!("yesterday"))))),
        Some((404, bytes(not_found.clone()))),
    ]);
    StandIn::answering(move |r| {
        let (method, uri) = (r.method.as_str(), r.uri.as_str());
        if uri.contains("/debuggers?") && uri.contains("watch=true") {
            watches.next()
        } else if uri.contains("/debuggers?") {
            lists.next()
        } else if uri.contains("/debuggerreports/") && method == "GET" {
            reads.next()
        } else if uri.contains("/debuggerreports/") {
            Answer::Json(200, report(json!(run_at)))
        } else {
            Answer::Json(404, not_found.clone())
        }
    })
}

/// This node's (node-1's) report of a run of `run_at`.
fn report(run_at: serde_json::Value) -> serde_json::Value {
    json!({"apiVersion": "kubecombo.io/v1", "kind": "DebuggerReport",
            "metadata": {"name": "dbg.node-1", "namespace": "ops"},
            "spec": {"debugger": "dbg", "node": "node-1", "runAt": run_at}})
}

#[tokio::test]
async fn malformed_debuggers_and_reports_are_errors_and_the_next_good_one_runs() {
    let scripts = TestDir::new("malformed");
    scripts.script("disk/ok.sh", "exit 0");
    let run_at = "2026-11-24T06:00:00Z";
    let (client, seen) = malformed_then_good(run_at);
    let runner = tokio::spawn(serve(
        runner_args(&scripts),
        identity("node-1"),
        client,
        std::future::pending(),
    ));
    let written = async {
        loop {
            let patch = seen
                .requests()
                .into_iter()
                .find(|r| r.method == "PATCH" && r.uri.contains("/debuggerreports/dbg.node-1?"));
            if let Some(p) = patch {
                return p;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    let patch = tokio::time::timeout(Duration::from_secs(30), written)
        .await
        .expect("the good Debugger's run is reported");
    assert!(!runner.is_finished(), "the runner keeps running");
    runner.abort();
    let body = patch.body;
    assert!(body.contains(run_at), "{body}");
    assert!(body.contains("\"uid\":\"uid-1\""), "{body}");
    let seen = seen.requests();
    let count = |f: &dyn Fn(&str, &str) -> bool| {
        seen.iter()
            .filter(|r| f(r.method.as_str(), r.uri.as_str()))
            .count()
    };
    assert_eq!(
        count(&|_, u| u.contains("/debuggers?") && !u.contains("watch=true")),
        2,
        "the list with a malformed item is retried once"
    );
    assert_eq!(
        count(&|m, u| m == "GET" && u.contains("/debuggerreports/")),
        2,
        "the unreadable report is read again; a runAt that is no time means no run completed"
    );
    // No run for the invalid runAt or the malformed objects: one report.
    assert_eq!(count(&|m, _| m == "PATCH"), 1);
}

/// A stand-in API server holding `debugger`, whose watch stays quiet,
/// with no report of this node yet, taking every report written.
pub(super) fn holding(debugger: serde_json::Value) -> (Client, StandIn) {
    StandIn::answering(move |r| {
        let (method, uri) = (r.method.as_str(), r.uri.as_str());
        if uri.contains("/debuggers?") && uri.contains("watch=true") {
            Answer::Never
        } else if uri.contains("/debuggers?") {
            Answer::Json(200, list(debugger.clone()))
        } else if uri.contains("/debuggerreports/") && method == "PATCH" {
            Answer::Json(
                200,
                json!({"apiVersion": "kubecombo.io/v1", "kind": "DebuggerReport",
                        "metadata": {"name": "dbg.node", "namespace": "ops"},
                        "spec": {"debugger": "dbg", "node": "node", "runAt": "x"}}),
            )
        } else {
            Answer::status(404, "NotFound")
        }
    })
}

pub(super) fn identity(node: &str) -> Identity {
    Identity {
        node: node.into(),
        pod: "runner-x".into(),
        namespace: "ops".into(),
        debugger: "dbg".into(),
    }
}

pub(super) async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let wait = async {
        while !done() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(30), wait)
        .await
        .unwrap_or_else(|_| panic!("{what}"));
}

/// The arguments of a runner on `scripts`, keeping its state beside them.
pub(super) fn runner_args(scripts: &TestDir) -> Args {
    Args::parse_from([
        "combo-runner",
        "--scripts",
        scripts.path().to_str().unwrap(),
        "--state-dir",
        scripts.path().join(".state").to_str().unwrap(),
    ])
}

/// Waits until the runner has read its report back from `seen`.
pub(super) async fn report_read_back(seen: &StandIn) {
    until("the runner reads its report back", || {
        seen.requests()
            .iter()
            .any(|r| r.method == "GET" && r.uri.contains("/debuggerreports/"))
    })
    .await;
}

/// The reports the runner wrote to `seen`.
pub(super) fn patches(seen: &StandIn) -> Vec<Request> {
    seen.requests()
        .into_iter()
        .filter(|r| r.method == "PATCH" && r.uri.contains("/debuggerreports/"))
        .collect()
}

/// A runner of `node` on `scripts` that stops when told by the sender.
fn stoppable(
    scripts: &TestDir,
    node: &str,
    client: Client,
) -> (oneshot::Sender<Stop>, JoinHandle<Stop>) {
    let (tx, rx) = oneshot::channel::<Stop>();
    let runner = tokio::spawn(serve(
        runner_args(scripts),
        identity(node),
        client,
        async move { rx.await.unwrap() },
    ));
    (tx, runner)
}

/// Tells the runner to stop, as SIGTERM does; what it returned, within 10 s.
async fn stop(tx: oneshot::Sender<Stop>, runner: JoinHandle<Stop>, what: &str) -> Stop {
    tx.send(Stop::Term).unwrap();
    tokio::time::timeout(Duration::from_secs(10), runner)
        .await
        .expect(what)
        .unwrap()
}

#[tokio::test]
async fn an_idle_runner_stops_as_soon_as_it_is_told() {
    let scripts = TestDir::new("stop-idle");
    scripts.script("disk/ok.sh", "exit 0");
    // An empty runAt in a DaemonSet: nothing to run, ever.
    let (client, seen) = holding(debugger(json!("")));
    let (tx, runner) = stoppable(&scripts, "node-1", client);
    report_read_back(&seen).await;
    let stopped = stop(tx, runner, "the idle runner stopped").await;
    assert_eq!(stopped, Stop::Term);
    assert!(
        !seen.requests().iter().any(|r| r.method == "PATCH"),
        "nothing ran, nothing is written"
    );
}

#[tokio::test]
async fn a_result_waiting_for_its_spread_offset_is_written_when_the_runner_stops() {
    let scripts = TestDir::new("stop-flush");
    scripts.script("disk/bad.sh", "echo 'err sda broken'");
    let mut dbg = debugger(json!("2020-01-01T00:00:00Z"));
    // 5,000 pods: a 10 s spread window, and a node whose offset in it
    // is more than 6 s.
    dbg["status"] = json!({"desiredPods": 5000});
    let window = publish::spread_window(5000);
    let node = (0..)
        .map(|i| format!("node-{i}"))
        .find(|n| publish::spread_delay(n, window) > Duration::from_secs(6))
        .unwrap();
    let (client, seen) = holding(dbg);
    let (tx, runner) = stoppable(&scripts, &node, client);
    let errlog = scripts.path().join("disk/errlog/20200101T000000Z.log");
    until("the run ends", || errlog.exists()).await;
    // The result goes to the writer right after its errlog.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        !seen.requests().iter().any(|r| r.method == "PATCH"),
        "the writer waits for the node's offset"
    );
    let asked = std::time::Instant::now();
    let stopped = stop(tx, runner, "the runner stopped").await;
    assert_eq!(stopped, Stop::Term);
    let patches = patches(&seen);
    assert_eq!(patches.len(), 1, "the pending result is written once");
    assert!(
        asked.elapsed() < Duration::from_secs(6),
        "written before its offset came: {:?}",
        asked.elapsed()
    );
    assert!(patches[0].body.contains("broken"), "{}", patches[0].body);
}

#[test]
fn earlier_uids_on_the_node_go_only_once_the_debugger_shows_this_runners_uid() {
    let d = TestDir::new("cluster-tidy");
    d.file("node/uid-0/state/last-run-id", "20261122T060000Z", 0o644);
    d.file("node/uid-1/state/last-run-id", "20261122T060000Z", 0o644);
    let dir = d.path().join("node");
    let args = |uid: &str| {
        Args::parse_from([
            "combo-runner",
            "--node-data",
            dir.to_str().unwrap(),
            "--debugger-uid",
            uid,
        ])
    };
    let seen: Debugger = serde_json::from_value(debugger(json!(""))).unwrap();
    assert_eq!(seen.metadata.uid.as_deref(), Some("uid-1"));
    // A runner of an earlier Debugger of this name sees the new one's uid:
    // not settled, nothing removed.
    assert!(!tidy_node_data(&args("uid-0"), &seen));
    assert!(dir.join("uid-1").is_dir() && dir.join("uid-0").is_dir());
    // This Debugger's runner removes the earlier one's directory only.
    assert!(tidy_node_data(&args("uid-1"), &seen));
    assert!(dir.join("uid-1/state/last-run-id").is_file());
    assert!(!dir.join("uid-0").exists());
    // Without a node directory (no enableSys) there is nothing to do.
    assert!(tidy_node_data(&Args::parse_from(["combo-runner"]), &seen));
}
