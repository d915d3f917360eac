//! Node conditions and taints through the whole reconcile, in-process,
//! against a stand-in API server that keeps one Node and the Debugger as
//! an API server would (conditions merged by type, taints replaced with a
//! resourceVersion precondition, finalizers replaced): the writes a report
//! causes, none when nothing changed, and the removal when the Debugger
//! is deleted (docs/operator.md#node-conditions-taints-and-missed-runs).

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use combo_api::keys::FINALIZER_NODE_MARKS;
use combo_api::{Category, Debugger, DebuggerReport, DebuggerReportSpec, ItemResult};
use combo_operator::debugger::reconcile::reconcile;
use combo_operator::state::context::Context;
use combo_testkit::fixtures::debugger;
use combo_testkit::stand_in::{Answer, Request, StandIn};
use k8s_openapi::api::core::v1::Node;
use kube::runtime::watcher::Event;
use kube::Client;
use serde_json::{json, Value};

const TYPE: &str = "kubecombo.io/ops.d.disk";
const NODE_STATUS: &str = "PATCH /api/v1/nodes/n1/status";
const NODE_GET: &str = "GET /api/v1/nodes/n1";
const NODE_PATCH: &str = "PATCH /api/v1/nodes/n1";
const FINALIZER: &str = "PATCH /apis/kubecombo.io/v1/namespaces/ops/debuggers/d";

/// What the stand-in keeps: the Node `n1` and the Debugger's finalizers.
struct Cluster {
    node: Value,
    finalizers: Vec<String>,
    version: u64,
}

fn answer(cluster: &Mutex<Cluster>, r: &Request) -> Answer {
    let mut c = cluster.lock().unwrap();
    let body: Value = serde_json::from_str(&r.body).unwrap_or(json!({}));
    match r.line().as_str() {
        NODE_GET => Answer::Json(200, c.node.clone()),
        NODE_STATUS => {
            let mut conditions = c.node["status"]["conditions"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            for change in body["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
            {
                conditions.retain(|k| k["type"] != change["type"]);
                if change["$patch"] != "delete" {
                    conditions.push(change.clone());
                }
            }
            c.version += 1;
            c.node["status"]["conditions"] = conditions.into();
            c.node["metadata"]["resourceVersion"] = c.version.to_string().into();
            Answer::Json(200, c.node.clone())
        }
        NODE_PATCH => {
            if body["metadata"]["resourceVersion"] != c.node["metadata"]["resourceVersion"] {
                return Answer::status(409, "Conflict");
            }
            c.version += 1;
            c.node["spec"]["taints"] = body["spec"]["taints"].clone();
            c.node["metadata"]["resourceVersion"] = c.version.to_string().into();
            Answer::Json(200, c.node.clone())
        }
        FINALIZER => {
            c.finalizers = serde_json::from_value(body["metadata"]["finalizers"].clone()).unwrap();
            Answer::Json(
                200,
                json!({"apiVersion": "kubecombo.io/v1", "kind": "Debugger",
                "metadata": {"name": "d", "namespace": "ops", "uid": "uid-d",
                    "finalizers": c.finalizers}, "spec": {}}),
            )
        }
        // A GET lists nothing; everything else answers with what was
        // sent, as written.
        _ => {
            let (code, obj) = support::written(r);
            Answer::Json(code, obj)
        }
    }
}

fn context(client: Client) -> Arc<Context> {
    let (ctx, _) = support::context(client);
    // The Node watch has listed: no node carries a mark yet.
    ctx.nodes.observe(&Event::<Node>::InitDone);
    ctx
}

fn report(failing: bool) -> DebuggerReport {
    let mut spec = DebuggerReportSpec {
        debugger: "d".into(),
        node: "n1".into(),
        run_at: "2026-01-01T06:00:00Z".into(),
        ..DebuggerReportSpec::default()
    };
    let item = if failing {
        ItemResult::err("97% used")
    } else {
        ItemResult::ok()
    };
    spec.categories
        .insert("disk".into(), [("/var".into(), item)].into());
    let mut r = DebuggerReport::new("d.n1", spec);
    r.metadata.namespace = Some("ops".into());
    r
}

/// Reconciles `dbg` until it makes no request for 2.5 s; the requests.
async fn settle(ctx: &Arc<Context>, seen: &StandIn, dbg: &Debugger) -> Vec<String> {
    let start = seen.count();
    let mut quiet = std::time::Instant::now();
    let mut count = start;
    for _ in 0..60 {
        if quiet.elapsed() >= Duration::from_millis(2500) {
            return seen.lines(start);
        }
        let _ = reconcile(Arc::new(dbg.clone()), ctx.clone()).await;
        if seen.count() != count {
            count = seen.count();
            quiet = std::time::Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("never settles: {:?}", seen.lines(start));
}

fn only(requests: &[String], line: &str) -> usize {
    requests.iter().filter(|r| *r == line).count()
}

/// One Node `n1` with the kubelet's `Ready` and another's taint.
fn one_node() -> Arc<Mutex<Cluster>> {
    Arc::new(Mutex::new(Cluster {
        node: json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "n1", "resourceVersion": "1"},
            "spec": {"taints": [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
        finalizers: Vec::new(),
        version: 1,
    }))
}

/// A Debugger with conditions and `disk` taints, on every node.
fn marking() -> Debugger {
    debugger("ops", "d")
        .node_conditions(true)
        .taints(&[Category::Disk])
        .max_tainted_percent(100)
        .build()
}

/// The node's condition of the Debugger, and its taint count.
fn ours(cluster: &Mutex<Cluster>) -> (Option<Value>, usize) {
    let c = cluster.lock().unwrap();
    let conditions = c.node["status"]["conditions"].as_array().unwrap();
    assert!(
        conditions.iter().any(|k| k["type"] == "Ready"),
        "the kubelet's condition stays: {conditions:?}"
    );
    let ours = conditions.iter().find(|k| k["type"] == TYPE).cloned();
    (
        ours,
        c.node["spec"]["taints"].as_array().map_or(0, Vec::len),
    )
}

#[tokio::test]
async fn a_failing_report_marks_its_node_once_and_a_deletion_takes_the_marks_off() {
    let cluster = one_node();
    let kept = cluster.clone();
    let (client, seen) = StandIn::answering(move |r| answer(&kept, r));
    let ctx = context(client);
    let mut dbg = marking();
    ctx.caches.reports.observe(&Event::Apply(report(true)));

    // The first reconcile adds the finalizer and marks the node; the
    // Debugger the next ones read carries the finalizer, as the watch
    // shows it.
    let start = seen.count();
    let _ = reconcile(Arc::new(dbg.clone()), ctx.clone()).await;
    dbg.metadata.finalizers = Some(vec![FINALIZER_NODE_MARKS.into()]);
    settle(&ctx, &seen, &dbg).await;
    let first = seen.lines(start);
    assert_eq!(only(&first, FINALIZER), 1, "{first:?}");
    assert_eq!(only(&first, NODE_STATUS), 1, "{first:?}");
    assert_eq!(only(&first, NODE_PATCH), 1, "{first:?}");
    let finalized_at = first.iter().position(|r| r == FINALIZER).unwrap();
    let marked_at = first.iter().position(|r| r == NODE_STATUS).unwrap();
    assert!(
        finalized_at < marked_at,
        "the finalizer before the first mark"
    );
    assert_eq!(cluster.lock().unwrap().finalizers, [FINALIZER_NODE_MARKS]);
    let (condition, taints) = ours(&cluster);
    let condition = condition.expect("the condition is set");
    assert_eq!(condition["status"], "True");
    assert_eq!(condition["reason"], "Var");
    assert_eq!(condition["message"], "/var: 97% used");
    assert_eq!(taints, 2, "ours and the other");

    // Nothing changed: no request at all.
    assert_eq!(settle(&ctx, &seen, &dbg).await, Vec::<String>::new());

    // Recovery: one condition write, the taint goes.
    ctx.caches.reports.observe(&Event::Apply(report(false)));
    let recovered = settle(&ctx, &seen, &dbg).await;
    assert_eq!(only(&recovered, NODE_STATUS), 1, "{recovered:?}");
    assert_eq!(only(&recovered, NODE_PATCH), 1, "{recovered:?}");
    let (condition, taints) = ours(&cluster);
    let condition = condition.unwrap();
    assert_eq!(
        (&condition["status"], &condition["reason"]),
        (&json!("False"), &json!("NoFailures"))
    );
    assert_eq!(taints, 1);

    // Deleted: the marks go, then the finalizer.
    let mut deleting = dbg.clone();
    deleting.metadata.deletion_timestamp = Some(
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now()),
    );
    let start = seen.count();
    reconcile(Arc::new(deleting), ctx.clone()).await.unwrap();
    let gone = seen.lines(start);
    assert_eq!(only(&gone, NODE_STATUS), 1, "{gone:?}");
    assert_eq!(gone.last().map(String::as_str), Some(FINALIZER), "{gone:?}");
    assert!(cluster.lock().unwrap().finalizers.is_empty());
    assert_eq!(
        ours(&cluster),
        (None, 1),
        "only the kubelet's and the other's left"
    );
}
