use combo_testkit::stand_in::{Answer, StandIn};
use serde_json::{json, Value};

use super::*;

fn report(node: &str, categories: Value) -> Value {
    json!({
        "apiVersion": "kubecombo.io/v1",
        "kind": "DebuggerReport",
        "metadata": {"name": report_name("mesh", node), "namespace": "ops"},
        "spec": {"debugger": "mesh", "node": node, "runAt": "2026-05-01T10:00:00Z",
                 "categories": categories},
    })
}

fn page(items: Vec<Value>, next: &str) -> Answer {
    Answer::Json(
        200,
        json!({"apiVersion": "kubecombo.io/v1", "kind": "DebuggerReportList",
               "metadata": {"resourceVersion": "7", "continue": next}, "items": items}),
    )
}

#[tokio::test]
async fn the_reports_are_one_paged_list_by_the_debuggers_label_not_a_get_per_node() {
    let (client, stand_in) = StandIn::scripted(vec![
        page(
            vec![report(
                "node-1",
                json!({"net": {"dns:10.96.0.10/udp": {"err": "timed out"}, "eth0": {}}}),
            )],
            "after-node-1",
        ),
        page(
            vec![report("node-2", json!({"mem": {"available": {}}}))],
            "",
        ),
    ]);
    let reports = reports(&client, "ops", "mesh").await;
    let uris = stand_in.uris();
    assert_eq!(uris.len(), 2, "{uris:?}");
    for uri in &uris {
        assert!(
            uri.starts_with("/apis/kubecombo.io/v1/namespaces/ops/debuggerreports?"),
            "{uri}"
        );
        assert!(
            uri.contains("labelSelector=kubecombo.io%2Fdebugger%3Dmesh"),
            "{uri}"
        );
        assert!(uri.contains("limit=500"), "{uri}");
    }
    assert!(uris[1].contains("continue=after-node-1"), "{}", uris[1]);
    let reports = reports.expect("listed");
    assert_eq!(
        reports.keys().collect::<Vec<_>>(),
        ["mesh.node-1", "mesh.node-2"]
    );

    let net = net_of(&Ok(reports.clone()), "mesh", "node-1");
    assert_eq!(net.report, "mesh.node-1");
    assert!(net.found && net.checked);
    assert_eq!(
        net.failed,
        [NetItem {
            item: "dns:10.96.0.10/udp".into(),
            err: "timed out".into()
        }]
    );
    assert_eq!(
        net.lines(),
        ["net (run 2026-05-01T10:00:00Z): dns:10.96.0.10/udp: timed out"]
    );
    assert_eq!(
        net_of(&Ok(reports.clone()), "mesh", "node-2").lines(),
        ["net (run 2026-05-01T10:00:00Z): not checked"]
    );
    let missing = net_of(&Ok(reports), "mesh", "node-3");
    assert!(!missing.found);
    assert_eq!(missing.lines(), ["net: no report"]);
}

#[tokio::test]
async fn reports_that_cannot_be_read_are_said_so_beside_the_node() {
    let (client, _stand_in) = StandIn::scripted(vec![Answer::status(
        403,
        "debuggerreports.kubecombo.io is forbidden",
    )]);
    let reports = reports(&client, "ops", "mesh").await;
    let why = reports.as_ref().expect_err("refused");
    assert!(
        why.contains("listing the DebuggerReports of Debugger ops/mesh")
            && why.contains("forbidden"),
        "{why}"
    );
    let net = net_of(&reports, "mesh", "node-1");
    assert_eq!(net.lines().len(), 1);
    assert!(net.lines()[0].starts_with("net: reports not read: "));
}

#[test]
fn a_net_category_without_a_failure_says_so() {
    let spec: DebuggerReportSpec = serde_json::from_value(json!({
        "debugger": "mesh", "node": "node-1", "runAt": "2026-05-01T10:00:00Z",
        "categories": {"net": {"eth0": {}, "default-route": null}}
    }))
    .expect("a report");
    let reports = Ok(BTreeMap::from([("mesh.node-1".to_string(), spec)]));
    assert_eq!(
        net_of(&reports, "mesh", "node-1").lines(),
        ["net (run 2026-05-01T10:00:00Z): no failed item"]
    );
}
