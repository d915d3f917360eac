use super::*;
use combo_api::{DebuggerReportSpec, ItemResult, NodeSummary};

fn t(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().to_utc()
}

/// A report of `node` for run `run_at` with the given items, each
/// `(category, item, result)`.
fn report(node: &str, run_at: &str, items: &[(&str, &str, ItemResult)]) -> NodeReport {
    let mut result = NodeSummary {
        run_at: run_at.into(),
        ..NodeSummary::default()
    };
    for (cat, item, r) in items {
        result
            .categories
            .entry(cat.to_string())
            .or_default()
            .insert(item.to_string(), r.clone());
    }
    NodeReport::new(
        format!("dbg.{node}"),
        DebuggerReportSpec::of("dbg", node, &result),
    )
}

const RUN: &str = "2026-11-22T06:00:00Z";

#[test]
fn failing_nodes_and_items_are_counted_per_category() {
    let reports = [
        report(
            "node-1",
            RUN,
            &[
                ("disk", "sda", ItemResult::err("full")),
                ("disk", "sdb", ItemResult::err("full")),
                ("net", "eth0", ItemResult::ok()),
                ("svc", "kubelet", ItemResult::skip("no host pid")),
            ],
        ),
        report(
            "node-2",
            RUN,
            &[
                ("disk", "sda", ItemResult::ok()),
                ("net", "eth0", ItemResult::err("down")),
            ],
        ),
        report("node-3", RUN, &[("disk", "sda", ItemResult::ok())]),
    ];
    let r = of(&reports, &Category::all());
    assert_eq!(
        r.categories.keys().copied().collect::<Vec<_>>(),
        ["custom", "disk", "mem", "net", "svc"],
        "every category run is present, healthy ones too"
    );
    let disk = &r.categories["disk"];
    assert_eq!(disk.failed_items, 2);
    assert_eq!(
        disk.failing,
        BTreeMap::from([("node-1".to_string(), 2)]),
        "only the failing node is listed"
    );
    let net = &r.categories["net"];
    assert_eq!((net.failed_items, net.failing.len()), (1, 1));
    assert!(net.failing.contains_key("node-2"));
    assert_eq!(r.categories["svc"].skipped_items, 1);
    assert_eq!(r.categories["mem"], CategoryResults::default());
    assert_eq!(r.last_run(), Some(t(RUN)));
    assert_eq!(r.node_runs.len(), 3);
}

#[test]
fn a_node_that_recovers_leaves_the_failing_list() {
    let failing = [report(
        "node-1",
        RUN,
        &[("mem", "oom", ItemResult::err("killed"))],
    )];
    assert_eq!(
        of(&failing, &Category::all()).categories["mem"]
            .failing
            .len(),
        1
    );
    let later = "2026-11-22T07:00:00Z";
    let healthy = [report("node-1", later, &[("mem", "oom", ItemResult::ok())])];
    let r = of(&healthy, &Category::all());
    assert!(r.categories["mem"].failing.is_empty());
    assert_eq!(r.categories["mem"].failed_items, 0);
    assert_eq!(r.last_run(), Some(t(later)));
}

#[test]
fn a_failing_node_names_its_first_items_and_counts_the_rest() {
    let mut items: Vec<(&str, String, ItemResult)> = (0..12)
        .map(|i| ("disk", format!("sd{i:02}"), ItemResult::err("i/o error")))
        .collect();
    items.push(("disk", "sr0".into(), ItemResult::ok()));
    items.push(("net", "eth0".into(), ItemResult::err("down")));
    let items: Vec<(&str, &str, ItemResult)> = items
        .iter()
        .map(|(c, i, r)| (*c, i.as_str(), r.clone()))
        .collect();
    let reports = [
        report("node-1", RUN, &items),
        report("node-2", RUN, &[("disk", "sda", ItemResult::ok())]),
    ];
    let r = of(&reports, &Category::all());
    let disk = &r.categories["disk"];
    let (named, more) = disk.problems_of("node-1");
    assert_eq!(named.len(), 5);
    assert_eq!((&*named[0], &*named[4]), ("sd00", "sd04"));
    assert_eq!(more, 7);
    assert_eq!(disk.problems_of("node-2"), (&[][..], 0), "healthy");
    let (net, none) = r.categories["net"].problems_of("node-1");
    assert_eq!((net.len(), none), (1, 0));
    assert!(!disk.problems.contains_key("node-2"));
}

#[test]
fn categories_the_debugger_does_not_run_make_no_series() {
    let reports = [report(
        "node-1",
        RUN,
        &[
            ("disk", "sda", ItemResult::err("full")),
            ("made-up", "x", ItemResult::err("y")),
        ],
    )];
    let r = of(&reports, &[Category::Disk]);
    assert_eq!(r.categories.keys().copied().collect::<Vec<_>>(), ["disk"]);
    assert_eq!(r.categories["disk"].failed_items, 1);
}

#[test]
fn the_missed_count_is_that_of_the_nodes_missed_by_names() {
    let reports: crate::reports::store::NodeReports = [
        report("node-1", "2026-11-22T05:00:00Z", &[]),
        report("node-2", RUN, &[]),
        report("node-3", "2026-11-22T07:00:00Z", &[]),
        report("node-4", "not a time", &[]),
    ]
    .into_iter()
    .map(|r| (r.spec.node.clone(), std::sync::Arc::new(r)))
    .collect();
    let r = of(reports.values().map(|r| r.as_ref()), &Category::all());
    assert_eq!(r.nodes(), 4);
    assert_eq!(r.last_run(), Some(t("2026-11-22T07:00:00Z")));
    for run in [
        "2026-11-22T04:00:00Z",
        "2026-11-22T05:00:00Z",
        RUN,
        "2026-11-22T06:30:00Z",
        "2026-11-22T08:00:00Z",
    ] {
        let named = crate::reports::missed::missed_by(&reports, t(run));
        assert_eq!(
            missed(&r, Some(t(run))),
            named.len(),
            "run {run}: {named:?}"
        );
    }
    assert_eq!(missed(&r, Some(t(RUN))), 2, "node-1 and the undated node-4");
    assert_eq!(missed(&r, None), 0, "no run is due");
}
