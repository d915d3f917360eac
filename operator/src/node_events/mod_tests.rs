use super::*;
use combo_api::history::History;
use combo_api::{DebuggerReportSpec, ItemResult, NodeSummary};
use combo_testkit::fixtures::debugger;

fn t(i: usize) -> String {
    format!("2026-12-02T06:{i:02}:00Z")
}

/// The report of `node` for run `i`, after the runs of `history`, failing
/// the disk items `failing`.
fn report(history: &mut History, node: &str, i: usize, failing: &[&str]) -> DebuggerReport {
    let mut result = NodeSummary {
        run_at: t(i),
        ..NodeSummary::default()
    };
    let items = result.categories.entry("disk".into()).or_default();
    items.insert("/".into(), ItemResult::ok());
    for item in failing {
        items.insert(item.to_string(), ItemResult::err("full"));
    }
    *history = history.next(&result);
    let spec = DebuggerReportSpec::of("node-check", node, &result).with_history(history.clone());
    let mut r = DebuggerReport::new(&combo_api::report::report_name("node-check", node), spec);
    r.metadata.namespace = Some("ops".into());
    r
}

/// The transitions of ops/node-check's disk items, as exported.
fn transitions(metrics: &Metrics) -> String {
    let text = metrics.encode();
    text.lines()
        .find(|l| {
            l.starts_with("combo_operator_node_problem_transitions_total{") && l.contains("disk")
        })
        .unwrap_or_default()
        .to_string()
}

fn follower() -> (NodeEvents, Outbox, Arc<Metrics>) {
    let metrics = Arc::new(Metrics::default());
    // The exported counts are those of a Debugger the operator reconciled.
    let dbg = debugger("ops", "node-check").build();
    let results = crate::reports::results::of(
        std::iter::empty::<&crate::reports::aggregate::NodeReport>(),
        &[combo_api::Category::Disk],
    );
    metrics
        .results()
        .set(&dbg, results, None, chrono::Utc::now());
    let outbox = Outbox::default();
    (
        NodeEvents::new(outbox.clone(), metrics.clone()),
        outbox,
        metrics,
    )
}

#[test]
fn items_that_turned_failing_are_counted_once_per_run_and_a_relist_counts_nothing() {
    let (follow, outbox, metrics) = follower();
    let mut h = History::default();
    let r0 = report(&mut h, "node-1", 0, &[]);
    let r1 = report(&mut h, "node-1", 1, &["/var", "/data"]);
    follow.observe(&watcher::Event::Apply(r0));
    follow.observe(&watcher::Event::Apply(r1.clone()));
    let counted = r#"combo_operator_node_problem_transitions_total{namespace="ops",debugger="node-check",category="disk"} 2"#;
    assert_eq!(transitions(&metrics), counted);
    assert_eq!(outbox.len(), 2, "two Events to create");
    // The watch re-lists: the same run again.
    follow.observe(&watcher::Event::Init);
    follow.observe(&watcher::Event::InitApply(r1.clone()));
    follow.observe(&watcher::Event::InitDone);
    follow.observe(&watcher::Event::Apply(r1));
    assert_eq!(transitions(&metrics), counted, "not counted again");
    assert_eq!(outbox.len(), 2, "nothing more queued");
    // The next run: one more turned failing, one fails again.
    let r2 = report(&mut h, "node-1", 2, &["/var", "/data", "/tmp"]);
    follow.observe(&watcher::Event::Apply(r2));
    assert!(
        transitions(&metrics).ends_with(" 3"),
        "{}",
        transitions(&metrics)
    );
    assert_eq!(outbox.len(), 3, "the waiting two replaced, one more");
    assert_eq!(metrics.node_events_dropped_count(), 0);
}

#[test]
fn a_report_without_history_counts_nothing_and_queues_nothing() {
    let (follow, outbox, metrics) = follower();
    let mut h = History::default();
    let mut r = report(&mut h, "node-1", 0, &["/var"]);
    r.spec.history = History::default();
    follow.observe(&watcher::Event::Apply(r));
    assert!(
        transitions(&metrics).ends_with(" 0"),
        "{}",
        transitions(&metrics)
    );
    assert!(outbox.is_empty());
}

#[test]
fn a_restart_sees_each_report_anew_and_deleted_or_unlisted_reports_are_forgotten() {
    let (follow, _, _) = follower();
    let (mut h1, mut h2) = (History::default(), History::default());
    let a = report(&mut h1, "node-1", 0, &["/var"]);
    let b = report(&mut h2, "node-2", 0, &[]);
    follow.observe(&watcher::Event::Apply(a.clone()));
    follow.observe(&watcher::Event::Apply(b.clone()));
    assert_eq!(follow.len(), 2);
    follow.observe(&watcher::Event::Delete(b));
    assert_eq!(follow.len(), 1);
    follow.observe(&watcher::Event::Init);
    follow.observe(&watcher::Event::InitDone);
    assert!(follow.is_empty(), "gone while the watch was down");

    // Another process (a restart, a new leader) decides the latest run's
    // changes again: the same Event names, created or patched.
    let (first, queued, metrics) = follower();
    first.observe(&watcher::Event::InitApply(a.clone()));
    let (second, queued_again, _) = follower();
    second.observe(&watcher::Event::InitApply(a));
    assert_eq!(
        queued.pop().map(|e| e.name),
        queued_again.pop().map(|e| e.name)
    );
    assert!(transitions(&metrics).ends_with(" 1"));
}
