use std::sync::Arc;

use super::*;
use crate::metrics::registry::Metrics;
use crate::reports::results::CategoryResults;
use combo_api::Category;
use combo_testkit::fixtures::debugger;

fn now() -> DateTime<Utc> {
    Utc::now()
}

fn t(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().to_utc()
}

/// Results of three nodes with `failing` (node, category, items).
fn results(failing: &[(&str, &'static str, u32)]) -> Results {
    let mut r = Results {
        categories: Category::all()
            .into_iter()
            .map(|c| (c.as_str(), CategoryResults::default()))
            .collect(),
        undated: 0,
        node_runs: vec![
            t("2026-11-22T05:00:00Z"),
            t("2026-11-22T06:00:00Z"),
            t("2026-11-22T06:00:00Z"),
        ],
    };
    for (node, cat, n) in failing {
        let c = r.categories.get_mut(cat).unwrap();
        c.failed_items += n;
        c.failing.insert(node.to_string(), *n);
    }
    r
}

fn series(text: &str, name: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")))
        .map(str::to_string)
        .collect()
}

#[test]
fn a_failing_node_has_a_series_until_it_recovers() {
    let m = Metrics::default();
    let d = debugger("ops", "node-check").build();
    m.results()
        .set(&d, results(&[("node-2", "disk", 2)]), None, now());
    let text = m.encode();
    assert_eq!(
        series(&text, "combo_operator_node_failed_items"),
        [
            r#"combo_operator_node_failed_items{namespace="ops",debugger="node-check",category="disk",node="node-2"} 2"#
        ]
    );
    assert!(
        text.contains(r#"combo_operator_debugger_failing_nodes{namespace="ops",debugger="node-check",category="disk"} 1"#),
        "{text}"
    );
    assert!(text.contains(
        r#"combo_operator_debugger_failed_items{namespace="ops",debugger="node-check",category="disk"} 2"#
    ));
    assert!(text.contains(
        r#"combo_operator_debugger_failing_nodes{namespace="ops",debugger="node-check",category="net"} 0"#
    ));
    assert!(
        text.contains(r#"combo_operator_debugger_nodes{namespace="ops",debugger="node-check"} 3"#)
    );
    let last = t("2026-11-22T06:00:00Z").timestamp();
    assert!(text.contains(&format!(
        r#"combo_operator_debugger_last_run_timestamp_seconds{{namespace="ops",debugger="node-check"}} {last}"#
    )));
    // No schedule: nothing can be missed, and no series claims otherwise.
    assert!(series(&text, "combo_operator_debugger_missed_nodes").is_empty());

    m.results().set(&d, results(&[]), None, now());
    let text = m.encode();
    assert!(
        series(&text, "combo_operator_node_failed_items").is_empty(),
        "{text}"
    );
    assert!(text.contains(
        r#"combo_operator_debugger_failing_nodes{namespace="ops",debugger="node-check",category="disk"} 0"#
    ));
}

/// The metrics of `m` as a scrape at `now` writes them.
fn scraped_at(m: &Arc<ResultMetrics>, now: &str) -> String {
    #[derive(Debug)]
    struct At(Arc<ResultMetrics>, DateTime<Utc>);
    impl Collector for At {
        fn encode(&self, mut encoder: DescriptorEncoder) -> std::fmt::Result {
            self.0.encode_at(&mut encoder, self.1)
        }
    }
    let mut registry = prometheus_client::registry::Registry::default();
    registry.register_collector(Box::new(At(m.clone(), t(now))));
    let mut out = String::new();
    prometheus_client::encoding::text::encode(&mut out, &registry).unwrap();
    out
}

#[test]
fn nodes_that_missed_the_due_run_are_counted_at_scrape_time() {
    let m = Arc::new(ResultMetrics::default());
    let hourly = RunAt::parse("0 * * * *").unwrap();
    m.set(
        &debugger("ops", "a").build(),
        results(&[]),
        Some(hourly),
        t("2026-11-22T04:00:00Z"),
    );
    let missed = |now: &str| series(&scraped_at(&m, now), "debugger_missed_nodes");
    let line = |n: u32| format!(r#"debugger_missed_nodes{{namespace="ops",debugger="a"}} {n}"#);
    // Three nodes, one still at 05:00: the 06:00 run counts once its
    // grace (5 x 60 s + 30 s with the default script timeout) has passed.
    assert_eq!(missed("2026-11-22T06:05:00Z"), [line(0)]);
    assert_eq!(missed("2026-11-22T06:06:00Z"), [line(1)]);
    // Nobody ran at 07:00: every node missed it (a Debugger stopped).
    assert_eq!(missed("2026-11-22T07:06:00Z"), [line(3)]);
}

#[test]
fn a_deleted_debugger_loses_every_series_and_a_relist_drops_those_gone() {
    let m = Metrics::default();
    let (a, b) = (debugger("ops", "a").build(), debugger("ops", "b").build());
    m.results()
        .set(&a, results(&[("node-1", "mem", 1)]), None, now());
    m.results()
        .set(&b, results(&[("node-1", "net", 1)]), None, now());
    m.results().observe(&watcher::Event::Delete(a.clone()));
    let text = m.encode();
    assert!(!text.contains(r#"debugger="a""#), "{text}");
    assert!(text.contains(r#"debugger="b""#));
    // The watch re-lists and b is no longer there (deleted while it was
    // down): b goes too; a Debugger listed keeps its series.
    m.results().set(&a, results(&[]), None, now());
    m.results().observe(&watcher::Event::Init);
    m.results().observe(&watcher::Event::InitApply(a.clone()));
    m.results().observe(&watcher::Event::InitDone);
    assert_eq!(m.results().len(), 1);
    let text = m.encode();
    assert!(text.contains(r#"debugger="a""#));
    assert!(!text.contains(r#"debugger="b""#), "{text}");
    m.results().forget(&a);
    assert!(m.results().is_empty());
    m.results().set(&b, results(&[]), None, now());
    m.results().clear();
    assert!(!m.encode().contains("combo_operator_debugger_"));
}

/// The results of one node, `node-1`, failing `failing` disk items
/// (`sd00`, ...), among 3 healthy ones.
fn failing_disks(failing: usize) -> Results {
    let mut result = combo_api::NodeSummary {
        run_at: "2026-11-22T06:00:00Z".into(),
        ..Default::default()
    };
    let disk = result.categories.entry("disk".into()).or_default();
    for i in 0..failing {
        disk.insert(format!("sd{i:02}"), combo_api::ItemResult::err("i/o error"));
    }
    for i in 0..3 {
        disk.insert(format!("ok{i}"), combo_api::ItemResult::ok());
    }
    let spec = combo_api::DebuggerReportSpec::of("node-check", "node-1", &result);
    let report = crate::reports::aggregate::NodeReport::new("node-check.node-1".into(), spec);
    crate::reports::results::of([&report], &Category::all())
}

#[test]
fn a_node_has_a_series_per_failing_item_up_to_five_and_one_for_the_rest() {
    let m = Metrics::default();
    let d = debugger("ops", "node-check").build();
    m.results().set(&d, failing_disks(12), None, now());
    let problems = series(&m.encode(), "combo_operator_node_problem");
    let labels = |item: &str| {
        format!(
            r#"combo_operator_node_problem{{namespace="ops",debugger="node-check",node="node-1",category="disk",item="{item}"}}"#
        )
    };
    let mut want: Vec<String> = (0..5)
        .map(|i| format!("{} 1", labels(&format!("sd{i:02}"))))
        .collect();
    want.push(format!("{} 7", labels("(other)")));
    assert_eq!(problems, want, "5 named, the other 7 in one");

    m.results().set(&d, failing_disks(2), None, now());
    let problems = series(&m.encode(), "combo_operator_node_problem");
    assert_eq!(
        problems,
        [
            format!("{} 1", labels("sd00")),
            format!("{} 1", labels("sd01"))
        ],
        "no (other) when all are named, no series of a healthy item"
    );

    m.results().set(&d, failing_disks(0), None, now());
    assert!(
        series(&m.encode(), "combo_operator_node_problem").is_empty(),
        "the series go when the items heal"
    );
}

#[test]
fn transitions_are_counted_per_category_and_go_with_the_debugger() {
    let m = Metrics::default();
    let d = debugger("ops", "node-check").build();
    m.results()
        .turned_failing("ops", "node-check", Category::Disk, 2);
    assert!(
        series(&m.encode(), "combo_operator_node_problem_transitions_total").is_empty(),
        "exported once the Debugger is reconciled"
    );
    m.results().set(&d, failing_disks(2), None, now());
    m.results()
        .turned_failing("ops", "node-check", Category::Disk, 1);
    let counted = series(&m.encode(), "combo_operator_node_problem_transitions_total");
    assert_eq!(
        counted.len(),
        5,
        "one per category the Debugger runs: {counted:?}"
    );
    assert!(counted.contains(
        &r#"combo_operator_node_problem_transitions_total{namespace="ops",debugger="node-check",category="disk"} 3"#.to_string()
    ));
    assert!(counted.contains(
        &r#"combo_operator_node_problem_transitions_total{namespace="ops",debugger="node-check",category="net"} 0"#.to_string()
    ));
    m.results().observe(&watcher::Event::Delete(d.clone()));
    m.results().set(&d, failing_disks(0), None, now());
    let counted = series(&m.encode(), "combo_operator_node_problem_transitions_total");
    assert!(counted.iter().all(|l| l.ends_with(" 0")), "{counted:?}");
}
