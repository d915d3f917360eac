//! The DebuggerReports the watch has seen, indexed by Debugger, reduced to
//! what the aggregation reads (name and spec).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, OnceLock};

use combo_api::{keys, DebuggerReport};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::ResourceExt;

use crate::reports::aggregate::{NodeReport, MAX_SUMMARY_BYTES};
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
            let entry =
                NodeReport::new(r.name_any(), r.spec.clone()).with_run_now(ran.map(String::as_str));
            let nodes = map.entry(owner_of(r)).or_default();
            let entry = within_summary(nodes, &r.spec.node, entry);
            nodes.insert(r.spec.node.clone(), Arc::new(entry));
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

/// `entry`, the new report of `node`, with its value at full length only
/// while a summary of its Debugger could still hold it: the full values
/// of the failed nodes, this one's included, within the summary's size,
/// and a healthy node's within it beside every other node's. A summary
/// takes full values only when all it needs fit, so past these no summary
/// reads them, and at 5,000 busy nodes they would be most of what the
/// operator holds (docs/operator.md, "Memory").
fn within_summary(nodes: &NodeReports, node: &str, entry: NodeReport) -> NodeReport {
    let healthy = entry.spec.failed_items == 0;
    let others: usize = nodes
        .iter()
        .filter(|(n, r)| n.as_str() != node && (healthy || r.spec.failed_items > 0))
        .map(|(_, r)| r.full_len())
        .sum();
    if others + entry.full_len() > MAX_SUMMARY_BYTES {
        entry.without_full()
    } else {
        entry
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

    /// Node `node`'s report with `failed` failed items and 60 healthy
    /// ones: a value at full length of about 4 KB either way.
    fn sized(node: &str, failed: usize) -> DebuggerReport {
        let mut result = combo_api::NodeSummary {
            run_at: "t1".into(),
            ..Default::default()
        };
        let items = result.categories.entry("disk".into()).or_default();
        for i in 0..60 {
            let r = if i < failed {
                combo_api::ItemResult::err(format!("{i}: {}", "x".repeat(150)))
            } else {
                combo_api::ItemResult::ok()
            };
            items.insert(format!("item-number-{i:03}-with-a-longer-name"), r);
        }
        let spec = DebuggerReportSpec::of("a", node, &result);
        let mut r = DebuggerReport::new(&combo_api::report::report_name("a", node), spec);
        r.metadata.namespace = Some("ops".into());
        r
    }

    #[test]
    fn full_values_are_kept_only_while_a_summary_could_hold_them() {
        use crate::reports::aggregate::{summary_data, Level};
        let idx = Reports::default();
        for n in 0..400 {
            idx.observe(&watcher::Event::Apply(sized(&format!("h{n:03}"), 0)));
        }
        let kept = |idx: &Reports| {
            let all = idx.of("ops", "a");
            let full: usize = all.values().map(|r| r.full_len()).sum();
            let with = all.values().filter(|r| r.full.is_some()).count();
            (full, with, all.len())
        };
        let (full, with, all) = kept(&idx);
        assert_eq!(all, 400);
        assert!(full <= MAX_SUMMARY_BYTES, "{full} bytes kept");
        assert!(with > 100 && with < 400, "{with} of 400 keep theirs");

        // A failed node keeps its own beside the healthy ones': the level
        // that lists failed nodes whole and counts healthy ones needs it.
        for n in 0..20 {
            idx.observe(&watcher::Event::Apply(sized(&format!("f{n:02}"), 10)));
        }
        let reports = idx.of("ops", "a");
        assert!(reports
            .values()
            .filter(|r| r.spec.failed_items > 0)
            .all(|r| r.full.is_some()));
        let (data, level) = summary_data(&reports);
        assert_eq!(level, Level::HealthyCounted);
        assert!(data["f00"].contains(&"x".repeat(150)), "{}", data["f00"]);

        // Past the budget a failed node's value is its first failures,
        // naming its report, and the summary still fits.
        for n in 20..700 {
            idx.observe(&watcher::Event::Apply(sized(&format!("f{n:03}"), 10)));
        }
        let reports = idx.of("ops", "a");
        let failed_full: usize = reports
            .values()
            .filter(|r| r.spec.failed_items > 0)
            .map(|r| r.full_len())
            .sum();
        assert!(failed_full <= MAX_SUMMARY_BYTES, "{failed_full}");
        let (data, level) = summary_data(&reports);
        assert!(level > Level::HealthyCounted, "{level:?}");
        assert!(data["f699"].contains("report:"), "{}", data["f699"]);
        assert!(crate::reports::aggregate::stored_size(&data) <= MAX_SUMMARY_BYTES);
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
