//! Helpers of the operator's integration tests: a context whose watches
//! have all listed (nothing yet), and the writers that fill its caches.

#![allow(dead_code, reason = "each test file uses a different subset")]

use std::sync::Arc;

use combo_api::{Debugger, DebuggerReport, Pinger};
use combo_operator::core::images::Images;
use combo_operator::metrics::registry::Metrics;
use combo_operator::state::cache::Caches;
use combo_operator::state::context::Context;
use combo_testkit::stand_in::Request;
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, ServiceAccount};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::runtime::reflector::{self, store::Writer};
use kube::runtime::watcher::Event;
use kube::Client;
use serde_json::{json, Value};

pub mod reconcile;

/// The watches' writers, to fill the caches by hand.
pub struct Watches {
    pub debuggers: Writer<Debugger>,
    pub daemonsets: Writer<DaemonSet>,
    pub pingers: Writer<Pinger>,
    pub roles: Writer<Role>,
}

impl Watches {
    /// The Debugger watch shows `dbg`, as it does for every Debugger the
    /// controller reconciles.
    pub fn show(&mut self, dbg: &Debugger) {
        self.debuggers
            .apply_watcher_event(&Event::Apply(dbg.clone()));
    }
}

/// A context on `client` whose every watch has listed (nothing), with
/// the runner and pinger images `reg/runner:1` and `reg/pinger:1`.
pub fn context(client: Client) -> (Arc<Context>, Watches) {
    let (debuggers, dw) = reflector::store::<Debugger>();
    let (daemonsets, dsw) = reflector::store::<DaemonSet>();
    let (pods, mut pw) = reflector::store::<Pod>();
    let (pingers, pgw) = reflector::store::<Pinger>();
    let (roles, mut rw) = reflector::store::<Role>();
    let caches = Caches::new(daemonsets, pods, pingers, roles);
    let listed = &caches.listed;
    for watch in [
        &listed.daemonsets,
        &listed.pods,
        &listed.pingers,
        &listed.roles,
    ] {
        watch.observe(&Event::<Pod>::InitDone);
    }
    caches.config_maps.observe(&Event::<ConfigMap>::InitDone);
    caches.reports.observe(&Event::<DebuggerReport>::InitDone);
    caches.accounts.observe(&Event::<ServiceAccount>::InitDone);
    caches.bindings.observe(&Event::<RoleBinding>::InitDone);
    pw.apply_watcher_event(&Event::InitDone);
    rw.apply_watcher_event(&Event::InitDone);
    let images = Images {
        runner: "reg/runner:1".into(),
        pinger: "reg/pinger:1".into(),
        pull_secrets: Vec::new(),
    };
    let metrics = Arc::new(Metrics::default());
    let ctx = Context::new(client, images, metrics, None, debuggers, caches);
    let watches = Watches {
        debuggers: dw,
        daemonsets: dsw,
        pingers: pgw,
        roles: rw,
    };
    (Arc::new(ctx), watches)
}

/// The default answer: an empty list for a GET, else what was sent, as
/// written.
pub fn written(r: &Request) -> (u16, Value) {
    if r.method == "GET" {
        return (
            200,
            json!({"apiVersion": "v1", "kind": "List", "metadata": {}, "items": []}),
        );
    }
    let mut obj: Value = serde_json::from_str(&r.body).unwrap_or(json!({}));
    if r.path().ends_with("/status") {
        // A status apply answers with the whole object.
        obj["metadata"]["name"] = "d".into();
        obj["metadata"]["namespace"] = "ops".into();
        obj["spec"] = json!({});
    }
    obj["metadata"]["resourceVersion"] = "1".into();
    obj["metadata"]["uid"] = "written".into();
    (200, obj)
}
