//! The reconcile pipeline of one Debugger, in-process, against a stand-in
//! API server that records every request: for each case the requests the
//! operator makes, in order, and nothing else. The caches are filled by
//! hand, as the watches would fill them.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use combo_api::{keys, Debugger, DebuggerReport, DebuggerReportSpec, WorkloadType};
use combo_operator::debugger::error::Error;
use combo_operator::debugger::reconcile::reconcile;
use combo_operator::state::context::Context;
use combo_testkit::fixtures::{debugger, pinger};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Pod, ServiceAccount};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::runtime::watcher::Event;
use serde_json::json;
use support::context;
use support::reconcile::{no_script, requests, stand_in, Script, Seen};

/// The body of the last request to `request`.
fn last_body(seen: &Seen, request: &str) -> String {
    seen.last_body(request).unwrap_or_default()
}

/// Reconciles `dbg` as the controller would (again after each requeue),
/// until it has made no request for 2.5 s (longer than the 2 s status
/// coalescing); returns the requests made and the last result.
async fn settle(
    ctx: &Arc<Context>,
    seen: &Seen,
    dbg: &Debugger,
) -> (Vec<String>, Result<(), String>) {
    let start = seen.count();
    let mut quiet_since = std::time::Instant::now();
    let mut last = Ok(());
    let mut count = start;
    let mut rounds = 0;
    while quiet_since.elapsed() < Duration::from_millis(2500) {
        rounds += 1;
        assert!(rounds < 60, "never settles: {:?}", &requests(seen, start));
        last = reconcile(Arc::new(dbg.clone()), ctx.clone())
            .await
            .map(drop)
            .map_err(|e: Error| e.to_string());
        let now = seen.count();
        if now != count {
            count = now;
            quiet_since = std::time::Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    (requests(seen, start), last)
}

const SA: &str = "PATCH /api/v1/namespaces/ops/serviceaccounts/kube-combo-workload.d";
const ROLE: &str =
    "PATCH /apis/rbac.authorization.k8s.io/v1/namespaces/ops/roles/kube-combo-workload.d";
const BINDING: &str =
    "PATCH /apis/rbac.authorization.k8s.io/v1/namespaces/ops/rolebindings/kube-combo-workload.d";
const DAEMONSET: &str = "PATCH /apis/apps/v1/namespaces/ops/daemonsets/d";
const EVENT: &str = "POST /apis/events.k8s.io/v1/namespaces/ops/events";
const STATUS: &str = "PATCH /apis/kubecombo.io/v1/namespaces/ops/debuggers/d/status";
const SUMMARY: &str = "PATCH /api/v1/namespaces/ops/configmaps/d-summary";
/// A summary no ConfigMap holds yet is created, never applied, so that a
/// ConfigMap of that name the cache has not shown yet is not taken.
const NEW_SUMMARY: &str = "POST /api/v1/namespaces/ops/configmaps";

#[tokio::test]
async fn a_new_debugger_gets_its_rbac_then_its_workload_then_event_status_and_summary() {
    let (client, seen) = stand_in(no_script());
    let (ctx, mut watches) = context(client);
    let dbg = debugger("ops", "d").build();
    watches.show(&dbg);
    let (requests, result) = settle(&ctx, &seen, &dbg).await;
    assert_eq!(result, Ok(()));
    assert_eq!(
        requests,
        [SA, ROLE, BINDING, DAEMONSET, EVENT, STATUS, NEW_SUMMARY]
    );
    // Nothing changed: a reconcile writes nothing more.
    let (again, _) = settle(&ctx, &seen, &dbg).await;
    assert_eq!(again, Vec::<String>::new());
}

#[tokio::test]
async fn an_invalid_spec_writes_its_status_and_event_and_no_workload() {
    let (client, seen) = stand_in(no_script());
    let (ctx, mut watches) = context(client);
    let invalid = debugger("ops", "d")
        .workload_type(WorkloadType::Daemonset)
        .node_name("node-1")
        .build();
    watches.show(&invalid);
    let (requests, result) = settle(&ctx, &seen, &invalid).await;
    assert!(result.unwrap_err().contains("invalid spec"));
    assert_eq!(requests, [EVENT, STATUS]);
}

#[tokio::test]
async fn a_missing_pinger_is_reported_and_its_arrival_brings_the_workload() {
    let (client, seen) = stand_in(no_script());
    let (ctx, mut watches) = context(client);
    let with_pinger = debugger("ops", "d").pinger("p").build();
    watches.show(&with_pinger);
    let (requests, result) = settle(&ctx, &seen, &with_pinger).await;
    assert!(result.unwrap_err().contains("not found"));
    // Its summary too: status and summary agree whatever the condition.
    assert_eq!(requests, [EVENT, STATUS, NEW_SUMMARY]);

    let pinger = pinger("ops", "p").build();
    watches.pingers.apply_watcher_event(&Event::Apply(pinger));
    let (requests, result) = settle(&ctx, &seen, &with_pinger).await;
    assert_eq!(result, Ok(()));
    // The summary made while the Pinger was missing stays as it is.
    assert_eq!(requests, [SA, ROLE, BINDING, DAEMONSET, EVENT, STATUS]);
}

#[tokio::test]
async fn a_refused_workload_is_reported_and_retried() {
    let refusal: Script = Arc::new(|method, path| {
        (method == "PATCH" && path.ends_with("/daemonsets/d")).then(|| {
            (
                422,
                json!({"apiVersion": "v1", "kind": "Status", "status": "Failure",
                    "message": "DaemonSet.apps \"d\" is invalid: privileged disallowed",
                    "reason": "Invalid", "code": 422}),
            )
        })
    });
    let (client, seen) = stand_in(refusal);
    let (ctx, mut watches) = context(client);
    let dbg = debugger("ops", "d").build();
    watches.show(&dbg);
    let first = reconcile(Arc::new(dbg.clone()), ctx.clone()).await;
    assert!(first.is_err());
    // The refusal is reported: an Event and the status, once, and the
    // summary made; the retry (the controller's backoff) writes the
    // workload again and nothing else.
    assert_eq!(
        requests(&seen, 0),
        [SA, ROLE, BINDING, DAEMONSET, EVENT, STATUS, NEW_SUMMARY]
    );
    assert!(last_body(&seen, STATUS).contains("WorkloadRefused"));
    let second = reconcile(Arc::new(dbg), ctx.clone()).await;
    assert!(second.is_err());
    assert_eq!(requests(&seen, 7), [DAEMONSET]);
}

#[tokio::test]
async fn a_report_arriving_rewrites_the_summary_and_status_only() {
    let (client, seen) = stand_in(no_script());
    let (ctx, mut watches) = context(client);
    let dbg = debugger("ops", "d").build();
    watches.show(&dbg);
    assert_eq!(settle(&ctx, &seen, &dbg).await.1, Ok(()));

    let mut report = DebuggerReport::new(
        "d.node-1",
        DebuggerReportSpec {
            debugger: "d".into(),
            node: "node-1".into(),
            run_at: "2026-11-24T06:00:00Z".into(),
            finished_at: "2026-11-24T06:00:02Z".into(),
            ..Default::default()
        },
    );
    report.metadata.namespace = Some("ops".into());
    report.metadata.labels = Some(
        [
            ("kubecombo.io/debugger".to_string(), "d".to_string()),
            ("kubecombo.io/node".to_string(), "node-1".to_string()),
        ]
        .into(),
    );
    ctx.caches.reports.observe(&Event::Apply(report));
    let (requests, result) = settle(&ctx, &seen, &dbg).await;
    assert_eq!(result, Ok(()));
    assert_eq!(requests, [STATUS, SUMMARY]);
}

#[tokio::test]
async fn a_deleted_workload_is_written_again() {
    let (client, seen) = stand_in(no_script());
    let (ctx, mut watches) = context(client);
    let dbg = debugger("ops", "d").build();
    watches.show(&dbg);
    assert_eq!(settle(&ctx, &seen, &dbg).await.1, Ok(()));
    // The watch shows the DaemonSet as written, then deleted.
    let written: DaemonSet = {
        let mut ds = DaemonSet::default();
        ds.metadata.name = Some("d".into());
        ds.metadata.namespace = Some("ops".into());
        ds
    };
    watches
        .daemonsets
        .apply_watcher_event(&Event::Apply(written.clone()));
    watches
        .daemonsets
        .apply_watcher_event(&Event::Delete(written.clone()));
    ctx.caches
        .recent_daemonsets
        .observe(&Event::Delete(written));
    let (requests, result) = settle(&ctx, &seen, &dbg).await;
    assert_eq!(result, Ok(()));
    // The Event repeats the first one's reason: the recorder counts it in
    // that Event's series.
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert_eq!(requests[0], DAEMONSET);
    assert!(
        requests[1].starts_with("PATCH /apis/events.k8s.io/v1/namespaces/ops/events/d."),
        "{requests:?}"
    );
    assert!(
        last_body(&seen, &requests[1]).contains("\"count\":2"),
        "{}",
        last_body(&seen, &requests[1])
    );
}

#[tokio::test]
async fn a_service_account_or_role_binding_deleted_by_hand_is_written_again() {
    // The API server gives the ServiceAccount the UID of its current
    // incarnation: a new one after it was deleted.
    let incarnation = Arc::new(Mutex::new("sa-1"));
    let uid = incarnation.clone();
    let (client, seen) = stand_in(Arc::new(move |method, path| {
        (method == "PATCH" && path.contains("/serviceaccounts/")).then(|| {
            let metadata = json!({"name": "kube-combo-workload.d", "namespace": "ops",
                "resourceVersion": "1", "uid": *uid.lock().unwrap()});
            (
                200,
                json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata}),
            )
        })
    }));
    let (ctx, mut watches) = context(client);
    let dbg = debugger("ops", "d").build();
    watches.show(&dbg);
    assert_eq!(settle(&ctx, &seen, &dbg).await.1, Ok(()));
    let pod_annotation = || {
        let ds: DaemonSet = serde_json::from_str(&last_body(&seen, DAEMONSET)).unwrap();
        ds.spec
            .unwrap()
            .template
            .metadata
            .unwrap()
            .annotations
            .unwrap()[keys::ANNOTATION_ACCOUNT_UID]
            .clone()
    };
    assert_eq!(pod_annotation(), "sa-1");

    // The RoleBinding deleted: the set is written again, the same account
    // with it, and the pods stay.
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "kube-combo-workload.d", "namespace": "ops"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "x"}
    }))
    .unwrap();
    ctx.caches.bindings.observe(&Event::Delete(binding));
    let (requests, result) = settle(&ctx, &seen, &dbg).await;
    assert_eq!(result, Ok(()));
    assert_eq!(requests, [SA, ROLE, BINDING]);

    // The ServiceAccount deleted: written again, a new account, so the pods
    // (which hold the old account's token) are rolled to the new one.
    let account: ServiceAccount = serde_json::from_value(json!({
        "metadata": {"name": "kube-combo-workload.d", "namespace": "ops", "uid": "sa-1"}
    }))
    .unwrap();
    *incarnation.lock().unwrap() = "sa-2";
    ctx.caches.accounts.observe(&Event::Delete(account));
    let (requests, result) = settle(&ctx, &seen, &dbg).await;
    assert_eq!(result, Ok(()));
    assert_eq!(requests, [SA, ROLE, BINDING, DAEMONSET, EVENT]);
    assert_eq!(pod_annotation(), "sa-2");
    // In place again: nothing more.
    let (again, _) = settle(&ctx, &seen, &dbg).await;
    assert_eq!(again, Vec::<String>::new());
}

const POD: &str = "PATCH /api/v1/namespaces/ops/pods/d";

#[tokio::test]
async fn a_new_pod_debugger_gets_its_rbac_then_its_pod_then_event_status_and_summary() {
    let (client, seen) = stand_in(no_script());
    let (ctx, mut watches) = context(client);
    let dbg = debugger("ops", "d")
        .workload_type(WorkloadType::Pod)
        .node_name("node-1")
        .build();
    watches.show(&dbg);
    let (requests, result) = settle(&ctx, &seen, &dbg).await;
    assert_eq!(result, Ok(()));
    assert_eq!(
        requests,
        [SA, ROLE, BINDING, POD, EVENT, STATUS, NEW_SUMMARY]
    );
    let pod: Pod = serde_json::from_str(&last_body(&seen, POD)).unwrap();
    let spec = pod.spec.unwrap();
    assert_eq!(spec.node_name, None, "the scheduler places it");
    assert!(
        serde_json::to_string(&spec.affinity).unwrap().contains(
            r#"{"matchFields":[{"key":"metadata.name","operator":"In","values":["node-1"]}]}"#
        ),
        "{:?}",
        spec.affinity
    );
    assert_eq!(spec.restart_policy.as_deref(), Some("Never"));
    assert!(last_body(&seen, EVENT).contains("WorkloadCreated"));
    let (again, _) = settle(&ctx, &seen, &dbg).await;
    assert_eq!(again, Vec::<String>::new());
}

#[tokio::test]
async fn a_deleted_debugger_gets_no_request_while_its_objects_are_collected() {
    let (client, seen) = stand_in(no_script());
    let (ctx, mut watches) = context(client);
    let dbg = debugger("ops", "d").build();
    watches.show(&dbg);
    assert_eq!(settle(&ctx, &seen, &dbg).await.1, Ok(()));

    // Deleted (in the foreground): the watch shows it with a deletion
    // timestamp while the garbage collector removes what it owns.
    let mut deleting = dbg.clone();
    deleting.metadata.deletion_timestamp = Some(
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now()),
    );
    deleting.metadata.generation = Some(2);
    watches.show(&deleting);
    let meta = |name: &str| json!({"metadata": {"name": name, "namespace": "ops"}});
    let ds: DaemonSet = serde_json::from_value(meta("d")).unwrap();
    watches
        .daemonsets
        .apply_watcher_event(&Event::Apply(ds.clone()));
    watches
        .daemonsets
        .apply_watcher_event(&Event::Delete(ds.clone()));
    ctx.caches.recent_daemonsets.observe(&Event::Delete(ds));
    let role: Role = serde_json::from_value(meta("kube-combo-workload.d")).unwrap();
    watches
        .roles
        .apply_watcher_event(&Event::Delete(role.clone()));
    ctx.caches.recent_roles.observe(&Event::Delete(role));
    let account: ServiceAccount = serde_json::from_value(meta("kube-combo-workload.d")).unwrap();
    ctx.caches.accounts.observe(&Event::Delete(account));
    let mut binding = meta("kube-combo-workload.d");
    binding["roleRef"] =
        json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "x"});
    let binding: RoleBinding = serde_json::from_value(binding).unwrap();
    ctx.caches.bindings.observe(&Event::Delete(binding));

    // Each deletion triggers a reconcile: none writes anything back, not
    // even a status or an Event; owner references take care of the rest.
    let (requests, result) = settle(&ctx, &seen, &deleting).await;
    assert_eq!(result, Ok(()));
    assert_eq!(requests, Vec::<String>::new());
    // The same reconcile without the deletion timestamp writes them all
    // again: the silence above is the deletion's.
    let (requests, result) = settle(&ctx, &seen, &dbg).await;
    assert_eq!(result, Ok(()));
    assert_eq!(requests[..4], [SA, ROLE, BINDING, DAEMONSET]);
}

const DEBUGGER: &str = "PATCH /apis/kubecombo.io/v1/namespaces/ops/debuggers/d";
const READ_DEBUGGER: &str = "GET /apis/kubecombo.io/v1/namespaces/ops/debuggers/d";

#[tokio::test]
async fn a_run_now_request_while_no_node_is_selected_is_dropped_in_the_status_and_taken_off() {
    let asked = "2026-11-22T05:30:00Z";
    let annotated = json!({"apiVersion": "kubecombo.io/v1", "kind": "Debugger", "metadata": {
        "name": "d", "namespace": "ops", "resourceVersion": "7",
        "annotations": {keys::ANNOTATION_RUN_NOW: asked}}});
    // The API server holds the request until the operator takes it off.
    let held = Arc::new(Mutex::new(true));
    let holds = held.clone();
    let (client, seen) = stand_in(Arc::new(move |method, path| {
        let debugger = path == "/apis/kubecombo.io/v1/namespaces/ops/debuggers/d";
        let mut held = holds.lock().unwrap();
        match method {
            "GET" if debugger && *held => Some((200, annotated.clone())),
            "GET" if debugger => Some((
                200,
                json!({"metadata": {"name": "d", "resourceVersion": "8"}}),
            )),
            "PATCH" if debugger => {
                *held = false;
                None
            }
            _ => None,
        }
    }));
    let (ctx, mut watches) = context(client);
    let dbg = debugger("ops", "d").build();
    watches.show(&dbg);
    assert_eq!(settle(&ctx, &seen, &dbg).await.1, Ok(()));
    // The DaemonSet controller has seen it and schedules no pod.
    let mut ds: DaemonSet = serde_json::from_str(&last_body(&seen, DAEMONSET)).unwrap();
    ds.metadata.generation = Some(1);
    ds.status = serde_json::from_value(json!({
        "observedGeneration": 1, "desiredNumberScheduled": 0, "currentNumberScheduled": 0,
        "numberMisscheduled": 0, "numberReady": 0}))
    .unwrap();
    watches.daemonsets.apply_watcher_event(&Event::Apply(ds));
    let mut asking = dbg.clone();
    asking
        .metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(keys::ANNOTATION_RUN_NOW.into(), asked.into());
    watches.show(&asking);

    // Reconciled as the watch shows it, until the request is taken off.
    let start = seen.count();
    for _ in 0..40 {
        if !*held.lock().unwrap() {
            break;
        }
        let result = reconcile(Arc::new(asking.clone()), ctx.clone()).await;
        assert!(result.is_ok(), "{:?}", result.err());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(!*held.lock().unwrap(), "the request is taken off");
    // The answer first, then the request read afresh and removed under
    // that read's resourceVersion.
    let requests = requests(&seen, start);
    assert_eq!(
        requests[requests.len() - 3..],
        [STATUS, READ_DEBUGGER, DEBUGGER],
        "{requests:?}"
    );
    // The watch shows it gone: the answer stays, and nothing is taken off.
    let mut answered = dbg.clone();
    answered.status = serde_json::from_str::<serde_json::Value>(&last_body(&seen, STATUS))
        .ok()
        .and_then(|v| serde_json::from_value(v["status"].clone()).ok());
    watches.show(&answered);
    let (after, result) = settle(&ctx, &seen, &answered).await;
    assert_eq!((after, result), (Vec::<String>::new(), Ok(())));
    let removal: serde_json::Value = serde_json::from_str(&last_body(&seen, DEBUGGER)).unwrap();
    assert_eq!(
        removal,
        json!({"metadata": {"resourceVersion": "7", "annotations": {keys::ANNOTATION_RUN_NOW: null}}})
    );
    let status: serde_json::Value = serde_json::from_str(&last_body(&seen, STATUS)).unwrap();
    let conditions = status["status"]["conditions"].as_array().unwrap().clone();
    let run_now = conditions
        .iter()
        .find(|c| c["type"] == "RunNow")
        .expect("a RunNow condition");
    assert_eq!(
        (&run_now["status"], &run_now["reason"]),
        (&json!("False"), &json!("Dropped"))
    );
    assert!(
        run_now["message"]
            .as_str()
            .unwrap()
            .starts_with("run-now request of 2026-11-22T05:30:00Z dropped: NoNodesSelected"),
        "{run_now}"
    );
}
