//! The DebuggerReports the watch has seen, indexed by Debugger, reduced to
//! what the aggregation reads (name and spec).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, OnceLock};

use combo_api::{keys, DebuggerReport};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::ResourceExt;

use crate::reports::aggregate::NodeReport;
use crate::watch::readiness::{Change, Index, Readiness};

/// (namespace, Debugger name).
type Owner = (String, String);
/// node -> its report.
pub type NodeReports = BTreeMap<String, Arc<NodeReport>>;

/// What follows the report watch besides the index: it sees each report
/// whole, its history too, before the index keeps what it needs.
pub type Follower = Box<dyn Fn(&watcher::Event<DebuggerReport>) + Send + Sync>;

/// Reports by Debugger, kept by the report watch. Clones share the index
/// and the follower.
#[derive(Clone, Default)]
pub struct Reports(Index<Owner, NodeReports>, Arc<OnceLock<Follower>>);

fn owner_of(r: &DebuggerReport) -> Owner {
    (r.namespace().unwrap_or_default(), r.spec.debugger.clone())
}

/// Files one report's change under its Debugger and node.
fn file(map: &mut HashMap<Owner, NodeReports>, change: Change<'_, DebuggerReport>) {
    match change {
        Change::Apply(r) => {
            let ran = r.annotations().get(keys::ANNOTATION_RUN_NOW_DONE);
            let entry = Arc::new(
                NodeReport::new(r.name_any(), r.spec.clone()).with_run_now(ran.map(String::as_str)),
            );
            map.entry(owner_of(r))
                .or_default()
                .insert(r.spec.node.clone(), entry);
        }
        Change::Delete(r) => {
            let owner = owner_of(r);
            if let Some(nodes) = map.get_mut(&owner) {
                // Only if it is still this report: names are unique.
                if nodes
                    .get(&r.spec.node)
                    .is_some_and(|e| e.name == r.name_any())
                {
                    nodes.remove(&r.spec.node);
                }
                if nodes.is_empty() {
                    map.remove(&owner);
                }
            }
        }
    }
}

impl Reports {
    /// Applies one watch event.
    pub fn observe(&self, event: &watcher::Event<DebuggerReport>) {
        if let Some(follow) = self.1.get() {
            follow(event);
        }
        self.0.observe_with(event, file);
    }

    /// Hands every later watch event to `follower` too (the first one set
    /// only): what a report says when it arrives, the Events on its Node.
    pub fn follow_with(&self, follower: Follower) {
        let _ = self.1.set(follower);
    }

    /// The reports of Debugger `name` in `ns`, by node.
    pub fn of(&self, ns: &str, name: &str) -> NodeReports {
        self.0
            .get(&(ns.to_string(), name.to_string()))
            .unwrap_or_default()
    }

    /// Forgets the reports of a Debugger (after it was deleted, or its
    /// reports were).
    pub fn forget(&self, ns: &str, name: &str, reports: &[String]) {
        self.0.update(&(ns.to_string(), name.to_string()), |nodes| {
            nodes.retain(|_, r| !reports.contains(&r.name))
        });
    }

    /// Whether the watch has listed once.
    pub fn ready(&self) -> &Readiness {
        self.0.ready()
    }
}

/// Nodes that run a pod of Debugger `debugger` in `ns` (a paged list of
/// its pods, made once per run).
pub async fn nodes_with_pods(
    client: &kube::Client,
    ns: &str,
    debugger: &str,
) -> Result<std::collections::BTreeSet<String>, kube::Error> {
    use k8s_openapi::api::core::v1::Pod;
    let api: kube::Api<Pod> = kube::Api::namespaced(client.clone(), ns);
    let mut params = kube::api::ListParams::default()
        .labels(&combo_api::keys::debugger_selector(debugger))
        .limit(500);
    let mut nodes = std::collections::BTreeSet::new();
    loop {
        let page = api.list(&params).await?;
        nodes.extend(
            page.items
                .iter()
                .filter(|p| p.metadata.deletion_timestamp.is_none())
                .filter_map(|p| p.spec.as_ref()?.node_name.clone()),
        );
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(c) => params = params.continue_token(&c),
            None => return Ok(nodes),
        }
    }
}

/// Deletes report `name` in `ns`; one already gone is fine.
pub async fn delete(client: &kube::Client, ns: &str, name: &str) -> Result<(), kube::Error> {
    let api: kube::Api<DebuggerReport> = kube::Api::namespaced(client.clone(), ns);
    match api.delete(name, &Default::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

/// The Debugger a report belongs to: a report event requeues it.
pub fn debugger_of(r: &DebuggerReport) -> Option<ObjectRef<combo_api::Debugger>> {
    Some(ObjectRef::new(&r.spec.debugger).within(&r.namespace()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use combo_api::DebuggerReportSpec;

    fn report(dbg: &str, node: &str, run_at: &str) -> DebuggerReport {
        let mut r = DebuggerReport::new(
            &combo_api::report::report_name(dbg, node),
            DebuggerReportSpec {
                debugger: dbg.into(),
                node: node.into(),
                run_at: run_at.into(),
                ..Default::default()
            },
        );
        r.metadata.namespace = Some("ops".into());
        r
    }

    #[test]
    fn reports_are_indexed_by_debugger_and_a_relist_drops_what_is_gone() {
        let idx = Reports::default();
        idx.observe(&watcher::Event::Init);
        idx.observe(&watcher::Event::InitApply(report("a", "n1", "t1")));
        idx.observe(&watcher::Event::InitApply(report("a", "n2", "t1")));
        idx.observe(&watcher::Event::InitApply(report("b", "n1", "t1")));
        assert!(
            idx.of("ops", "a").is_empty(),
            "not visible before the list ends"
        );
        idx.observe(&watcher::Event::InitDone);
        assert_eq!(idx.of("ops", "a").len(), 2);
        idx.observe(&watcher::Event::Apply(report("a", "n1", "t2")));
        assert_eq!(idx.of("ops", "a")["n1"].spec.run_at, "t2");
        idx.observe(&watcher::Event::Delete(report("a", "n2", "t1")));
        assert_eq!(idx.of("ops", "a").keys().collect::<Vec<_>>(), ["n1"]);
        idx.observe(&watcher::Event::Init);
        idx.observe(&watcher::Event::InitApply(report("b", "n1", "t3")));
        idx.observe(&watcher::Event::InitDone);
        assert!(
            idx.of("ops", "a").is_empty(),
            "gone while the watch was down"
        );
        assert_eq!(idx.of("ops", "b")["n1"].spec.run_at, "t3");
        assert!(idx.of("dev", "b").is_empty());
        idx.forget("ops", "b", &[combo_api::report::report_name("b", "n1")]);
        assert!(idx.of("ops", "b").is_empty());
    }

    #[test]
    fn the_follower_sees_each_event_whole_and_clones_share_it() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let idx = Reports::default();
        let watched = idx.clone();
        let seen = Arc::new(AtomicUsize::new(0));
        let count = seen.clone();
        idx.follow_with(Box::new(move |e| {
            if let watcher::Event::Apply(r) = e {
                assert_eq!(r.spec.run_at, "t1", "before the index keeps it");
                count.fetch_add(1, Ordering::SeqCst);
            }
        }));
        idx.follow_with(Box::new(|_| panic!("only the first follower is kept")));
        watched.observe(&watcher::Event::Apply(report("a", "n1", "t1")));
        assert_eq!(seen.load(Ordering::SeqCst), 1);
        assert_eq!(idx.of("ops", "a")["n1"].spec.run_at, "t1");
    }

    #[test]
    fn a_report_requeues_the_debugger_it_names() {
        let r = debugger_of(&report("node-check", "n1", "t")).unwrap();
        assert_eq!(
            (r.name.as_str(), r.namespace.as_deref()),
            ("node-check", Some("ops"))
        );
    }
}
