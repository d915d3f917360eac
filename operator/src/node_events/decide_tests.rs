use super::*;
use combo_api::history::History;
use combo_api::{ItemResult, NodeSummary};

fn t(i: usize) -> String {
    format!("2026-12-02T06:{i:02}:00Z")
}

/// A node's runner: each run's report carries the history so far.
struct Node {
    history: History,
}

impl Node {
    fn new() -> Self {
        Node {
            history: History::default(),
        }
    }

    /// The report of run `i` with the items `(category, item, err)`.
    fn run(&mut self, i: usize, items: &[(&str, &str, Option<&str>)]) -> DebuggerReportSpec {
        let mut result = NodeSummary {
            run_at: t(i),
            ..NodeSummary::default()
        };
        for (cat, item, err) in items {
            let r = err.map_or_else(ItemResult::ok, ItemResult::err);
            result
                .categories
                .entry(cat.to_string())
                .or_default()
                .insert(item.to_string(), r);
        }
        self.history = self.history.next(&result);
        DebuggerReportSpec::of("node-check", "node-1", &result).with_history(self.history.clone())
    }
}

const FULL: (&str, &str, Option<&str>) = ("disk", "/var", Some("97% used (above 90%)"));
const HEALTHY: (&str, &str, Option<&str>) = ("disk", "/var", None);

#[test]
fn a_new_failure_is_one_warning_event_to_create_on_the_node() {
    let mut node = Node::new();
    node.run(0, &[HEALTHY]);
    let spec = node.run(1, &[FULL]);
    let events = decide("ops", &spec, Sight::NextRun);
    assert_eq!(events.len(), 1, "{events:?}");
    let e = &events[0];
    assert_eq!(
        (e.reason, e.warning, e.new, e.count),
        ("DiskProblem", true, true, 1)
    );
    assert_eq!(e.message, "ops/node-check: disk//var: 97% used (above 90%)");
    assert_eq!(e.node, "node-1");
    assert!(e.name.starts_with("node-1.") && e.name.len() == "node-1.".len() + 16);
    assert_eq!(
        (e.first, e.last),
        (parse(&t(1)).unwrap(), parse(&t(1)).unwrap())
    );
    let object = e.object();
    let on = &object.involved_object;
    assert_eq!(
        (
            on.kind.as_deref(),
            on.api_version.as_deref(),
            on.name.as_deref()
        ),
        (Some("Node"), Some("v1"), Some("node-1"))
    );
    assert_eq!(on.namespace, None, "a Node has no namespace");
    assert_eq!(object.metadata.namespace.as_deref(), Some("default"));
    assert_eq!(object.type_.as_deref(), Some("Warning"));
    assert_eq!(
        object.source.and_then(|s| s.component).as_deref(),
        Some("kube-combo-operator")
    );
}

#[test]
fn a_repeated_failure_patches_the_same_event_with_the_streaks_count() {
    let mut node = Node::new();
    let first = decide("ops", &node.run(0, &[FULL]), Sight::NextRun);
    let second = decide("ops", &node.run(1, &[FULL]), Sight::NextRun);
    let third = decide("ops", &node.run(2, &[FULL]), Sight::NextRun);
    assert_eq!(first[0].count, 1);
    assert!(first[0].new);
    for (e, count) in [(&second[0], 2), (&third[0], 3)] {
        assert_eq!(e.name, first[0].name, "one Event for the streak");
        assert_eq!((e.new, e.count), (false, count));
        assert_eq!(e.first, parse(&t(0)).unwrap(), "since the streak started");
    }
    assert_eq!(third[0].last, parse(&t(2)).unwrap());
    let patch = third[0].patch();
    assert_eq!(patch["count"], 3);
    assert_eq!(patch["lastTimestamp"], t(2));
}

#[test]
fn a_recovery_is_a_normal_event_naming_the_failed_runs_and_a_new_streak_a_new_event() {
    let mut node = Node::new();
    let failed = decide("ops", &node.run(0, &[FULL]), Sight::NextRun);
    node.run(1, &[FULL]);
    node.run(2, &[FULL]);
    let recovered = decide("ops", &node.run(3, &[HEALTHY]), Sight::NextRun);
    assert_eq!(recovered.len(), 1, "{recovered:?}");
    let e = &recovered[0];
    assert_eq!(
        (e.reason, e.warning, e.new, e.count),
        ("DiskRecovered", false, true, 1)
    );
    assert_eq!(
        e.message,
        "ops/node-check: disk//var recovered after 3 failed runs"
    );
    assert_ne!(e.name, failed[0].name);
    assert_eq!(e.object().type_.as_deref(), Some("Normal"));
    assert!(decide("ops", &node.run(4, &[HEALTHY]), Sight::NextRun).is_empty());
    let again = decide("ops", &node.run(5, &[FULL]), Sight::NextRun);
    assert!(again[0].new);
    assert_ne!(
        again[0].name, failed[0].name,
        "another streak, another Event"
    );
}

#[test]
fn a_run_seen_again_makes_no_event() {
    let mut node = Node::new();
    node.run(0, &[HEALTHY]);
    let spec = node.run(1, &[FULL]);
    assert_eq!(decide("ops", &spec, Sight::NextRun).len(), 1);
    assert!(decide("ops", &spec, Sight::SameRun).is_empty());
}

#[test]
fn after_a_restart_only_the_runs_changes_are_written_again_under_the_same_names() {
    let mut node = Node::new();
    let started = decide(
        "ops",
        &node.run(0, &[FULL, ("net", "eth0", None)]),
        Sight::NextRun,
    );
    node.run(1, &[FULL, ("net", "eth0", None)]);
    let spec = node.run(2, &[FULL, ("net", "eth0", Some("link down"))]);
    let events = decide("ops", &spec, Sight::First);
    assert_eq!(events.len(), 1, "the going streak waits for its next run");
    assert_eq!(events[0].reason, "NetProblem");
    assert!(events[0].new, "created, or patched when it is there");
    let next = decide(
        "ops",
        &node.run(3, &[FULL, ("net", "eth0", None)]),
        Sight::NextRun,
    );
    let disk = next.iter().find(|e| e.reason == "DiskProblem").unwrap();
    assert_eq!(
        (disk.name.as_str(), disk.count),
        (started[0].name.as_str(), 4)
    );
    assert!(next.iter().any(|e| e.reason == "NetRecovered"));
}

#[test]
fn a_report_without_a_history_of_its_run_makes_nothing() {
    let mut node = Node::new();
    let mut spec = node.run(0, &[FULL]);
    spec.history = History::default();
    assert!(decide("ops", &spec, Sight::NextRun).is_empty());
    assert!(turned_failing(&spec).is_empty());
    let mut spec = node.run(1, &[FULL]);
    spec.run_at = t(9);
    assert!(
        decide("ops", &spec, Sight::NextRun).is_empty(),
        "not this run's"
    );
}

#[test]
fn items_that_turned_failing_are_counted_per_category_of_the_known_ones() {
    let mut node = Node::new();
    node.run(0, &[FULL, ("mem", "oom", None)]);
    let spec = node.run(
        1,
        &[
            ("disk", "/var", None),
            ("disk", "/", Some("full")),
            ("disk", "/data", Some("full")),
            ("mem", "oom", Some("killed")),
            ("gpu", "ecc", Some("errors")),
        ],
    );
    let counted = turned_failing(&spec);
    assert_eq!(
        counted.into_iter().collect::<Vec<_>>(),
        [(Category::Disk, 2), (Category::Mem, 1)]
    );
    let events = decide("ops", &spec, Sight::NextRun);
    let reasons: Vec<&str> = events.iter().map(|e| e.reason).collect();
    assert_eq!(
        reasons,
        ["DiskProblem", "DiskProblem", "DiskRecovered", "MemProblem"],
        "no Event of a category no runner writes"
    );
}

#[test]
fn a_long_message_is_cut_to_one_kib_and_a_long_node_name_to_a_valid_event_name() {
    let mut node = Node::new();
    let long = "e".repeat(3000);
    let mut spec = node.run(0, &[("custom", "x", Some(&long))]);
    let events = decide("ops", &spec, Sight::NextRun);
    assert!(events[0].message.len() <= MAX_MESSAGE);
    assert!(events[0].message.ends_with(" [cut]"));
    spec.node = format!("{}.example", "n".repeat(250));
    let e = &decide("ops", &spec, Sight::NextRun)[0];
    assert!(e.name.len() <= 253, "{}", e.name.len());
    assert_eq!(e.node, spec.node, "the Node keeps its name");
}

#[test]
fn events_of_two_debuggers_or_namespaces_on_one_node_have_distinct_names() {
    let mut node = Node::new();
    let spec = node.run(0, &[FULL]);
    let mut other = spec.clone();
    other.debugger = "other".into();
    let names = [
        decide("ops", &spec, Sight::NextRun)[0].name.clone(),
        decide("dev", &spec, Sight::NextRun)[0].name.clone(),
        decide("ops", &other, Sight::NextRun)[0].name.clone(),
    ];
    assert_ne!(names[0], names[1]);
    assert_ne!(names[0], names[2]);
    assert_eq!(decide("ops", &spec, Sight::NextRun)[0].name, names[0]);
}
