use std::collections::BTreeSet;

use super::*;
use crate::core::status::RunSummary;
use crate::reports::runs::{departed, run_summary, script_sets};
use combo_api::report::report_name;
use combo_api::summary::FIRST_MESSAGE_LIMIT;

const RUN: &str = "2026-11-22T06:00:00Z";

/// A report of `node` for run `run_at` with `ok` healthy and `failed`
/// failed items, messages of `msg_len` bytes.
fn report(node: &str, run_at: &str, ok: usize, failed: usize, msg_len: usize) -> Arc<NodeReport> {
    let mut result = NodeSummary {
        run_at: run_at.into(),
        finished_at: "2026-11-22T06:00:07Z".into(),
        ..Default::default()
    };
    for i in 0..ok {
        let cat = ["disk", "net", "mem", "svc"][i % 4];
        result
            .categories
            .entry(cat.into())
            .or_default()
            .insert(format!("item{i}"), ItemResult::ok());
    }
    for i in 0..failed {
        result
            .categories
            .entry("disk".into())
            .or_default()
            .insert(format!("bad{i}"), ItemResult::err("x".repeat(msg_len)));
    }
    Arc::new(NodeReport::new(
        report_name("node-check", node),
        DebuggerReportSpec::of("node-check", node, &result),
    ))
}

/// `n` nodes named like cloud nodes (about 40 characters), every
/// `fail_every`th with `failed` failures.
fn cluster(n: usize, fail_every: usize, failed: usize) -> BTreeMap<String, Arc<NodeReport>> {
    (0..n)
        .map(|i| {
            let node = format!(
                "ip-10-{}-{}-{}.eu-west-1.compute.internal",
                i / 65536,
                (i / 256) % 256,
                i % 256
            );
            let f = if fail_every > 0 && i % fail_every == 0 {
                failed
            } else {
                0
            };
            let r = report(&node, RUN, 12, f, 120);
            (node, r)
        })
        .collect()
}

#[test]
fn a_small_cluster_gets_every_nodes_whole_result() {
    let reports = cluster(3, 2, 2);
    let (data, level) = summary_data(&reports);
    assert_eq!(level, Level::Full);
    assert_eq!(data.len(), 3);
    for (node, value) in &data {
        let v = NodeSummary::from_yaml(value).unwrap();
        let failed = reports[node].spec.failed_items as usize;
        let names: Vec<&String> = v.categories.values().flat_map(|i| i.keys()).collect();
        assert_eq!(names.len(), 12 + failed, "every item by name: {names:?}");
        assert!(v.categories["disk"].contains_key("item0"), "{value}");
        assert!(!value.contains("omitted"), "{value}");
        assert_eq!(v.healthy_items, None);
        assert!(!value.contains("healthyItems"), "{value}");
        assert_eq!(v.run_at, reports[node].spec.run_at);
    }
}

#[test]
fn a_kept_report_counts_its_healthy_items_and_keeps_its_first_failures() {
    let r = report("n1", RUN, 12, 2, 10);
    assert_eq!(r.healthy_items(), 12);
    assert_eq!(r.spec.failed_items, 2);
    assert!(r.spec.categories.is_empty(), "the items are in full");
    let firsts: Vec<&str> = r.first_failures().iter().map(|f| &*f.item).collect();
    assert_eq!(firsts, ["bad0", "bad1"]);
    assert_eq!(
        r.first_failure("disk").unwrap().unwrap().item.as_ref(),
        "bad0"
    );
    assert_eq!(
        r.first_failure("net"),
        Some(None),
        "a category without failures"
    );
    assert_eq!(r.first_failure("gpu"), None, "not in the report");
    assert_eq!(r.failed_in("disk"), 2);
    let full = NodeSummary::from_yaml(r.full.as_deref().unwrap()).unwrap();
    assert_eq!(full.categories.len(), 4, "every category stays");
    assert!(
        full.categories["mem"].contains_key("item2"),
        "full keeps the names"
    );
}

/// A report as a busy node writes it: 150 items with names of 48 bytes,
/// 30 failed with messages of `msg_len` bytes.
fn busy(node: &str, msg_len: usize) -> NodeReport {
    let mut result = NodeSummary {
        run_at: RUN.into(),
        finished_at: "2026-11-22T06:00:07Z".into(),
        ..Default::default()
    };
    for i in 0..150 {
        let cat = ["disk", "net", "mem", "svc"][i % 4];
        let item = format!("{:-<48}", format!("script-{}/item-{i:03}", i % 10));
        let r = if i % 5 == 0 {
            ItemResult::err(format!("{i:03} {}", "k".repeat(msg_len - 4)))
        } else {
            ItemResult::ok()
        };
        result
            .categories
            .entry(cat.into())
            .or_default()
            .insert(item, r);
    }
    let spec = DebuggerReportSpec::of("node-check", node, &result);
    let names = |c: &BTreeMap<String, BTreeMap<String, ItemResult>>| {
        c.values()
            .flat_map(|i| i.keys().cloned())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        names(&spec.categories),
        names(&result.categories),
        "the report lists them all"
    );
    NodeReport::new(report_name("node-check", node), spec)
}

/// The bytes of item names and messages `r` holds outside `full`.
fn held_outside_full(r: &NodeReport) -> usize {
    let failures = r.first_failures().iter().chain(
        ["disk", "net", "mem", "svc"]
            .into_iter()
            .filter_map(|c| r.first_failure(c).flatten()),
    );
    failures
        .map(|f| f.category.len() + f.item.len() + f.message.len())
        .sum()
}

#[test]
fn a_busy_nodes_report_is_kept_as_a_bounded_value_and_a_few_failures() {
    for msg_len in [160, 400, 2000] {
        let r = busy("n1", msg_len);
        assert!(r.full_len() <= MAX_VALUE_BYTES, "{}", r.full_len());
        let v = NodeSummary::from_yaml(r.full.as_deref().unwrap()).unwrap();
        assert_eq!(
            v.report.as_deref(),
            Some(r.name.as_str()),
            "names the whole"
        );
        assert_eq!(v.failed_count(), 30, "counts every failure");
        assert_eq!(r.healthy_items(), 120);
        let failed: u32 = ["disk", "net", "mem", "svc"]
            .into_iter()
            .map(|c| r.failed_in(c))
            .sum();
        assert_eq!(failed, 30);
        // The first three failures and the first of each category with any.
        assert_eq!(r.first_failures().len(), FIRST_FAILURES);
        let most = 5 * (2 * 48 + FIRST_MESSAGE_LIMIT + " [cut]".len());
        assert!(held_outside_full(&r) <= most, "{}", held_outside_full(&r));
    }
}

#[test]
fn a_kept_report_holds_no_healthy_item_name_beyond_its_value() {
    let r = busy("n1", 160);
    let healthy: Vec<String> = (0..150)
        .filter(|i| i % 5 != 0)
        .map(|i| format!("{:-<48}", format!("script-{}/item-{i:03}", i % 10)))
        .collect();
    let v = NodeSummary::from_yaml(r.full.as_deref().unwrap()).unwrap();
    let listed = v.categories.values().flat_map(|items| items.keys());
    assert!(
        listed.clone().all(|k| !healthy.contains(k)),
        "the bounded value folds them: {:?}",
        listed.collect::<Vec<_>>()
    );
    let debug = format!(
        "{:?}",
        NodeReport {
            full: Some(String::new()),
            ..r
        }
    );
    for name in &healthy {
        assert!(!debug.contains(name.as_str()), "{name} is kept");
    }
}

/// [`cluster`], each report with a scripts hash, as runners write them.
fn cluster_with_scripts(
    n: usize,
    fail_every: usize,
    failed: usize,
) -> BTreeMap<String, Arc<NodeReport>> {
    cluster(n, fail_every, failed)
        .into_iter()
        .map(|(node, r)| {
            let mut spec = r.spec.clone();
            // The whole result, healthy items by name, as the report holds it.
            spec.categories = NodeSummary::from_yaml(r.full.as_deref().unwrap())
                .unwrap()
                .categories;
            spec.scripts = "0a1b2c3d4e5f".into();
            (node, Arc::new(NodeReport::new(r.name.clone(), spec)))
        })
        .collect()
}

#[test]
fn five_thousand_nodes_fit_under_900_kib_with_every_key() {
    for (fail_every, failed) in [(10, 3), (1, 40)] {
        let reports = cluster_with_scripts(5000, fail_every, failed);
        let (data, level) = summary_data(&reports);
        assert!(
            stored_size(&data) <= MAX_SUMMARY_BYTES,
            "{fail_every}/{failed}: {} bytes at {level:?}",
            stored_size(&data)
        );
        assert_eq!(
            data.len(),
            5000,
            "{fail_every}/{failed}: no key lost at {level:?}"
        );
        let failures: u32 = data
            .values()
            .map(|v| {
                let v = NodeSummary::from_yaml(v).unwrap();
                v.failed_items.unwrap_or(v.failed().count() as u32)
            })
            .sum();
        let expected = 5000_usize.checked_div(fail_every).unwrap_or(0) * failed;
        let expected = expected as u32;
        assert_eq!(
            failures, expected,
            "every failure still counted at {level:?}"
        );
    }
}

#[test]
fn healthy_nodes_shrink_first_and_failed_nodes_keep_their_first_items_then_name_the_report() {
    let mut reports = cluster(40, 4, 6);
    let one_full = summary_data(&reports)
        .0
        .values()
        .map(|v| v.len())
        .max()
        .unwrap();
    // Room for the failed nodes' whole results only.
    let failed_room: usize = reports
        .iter()
        .filter(|(_, r)| r.spec.failed_items > 0)
        .map(|(n, r)| 2 * n.len() + r.full_len() + 16)
        .sum();
    let healthy_short = 30 * (2 * 45 + 120 + 16);
    let (data, level) = summary_data_within(&reports, FIXED_BYTES + failed_room + healthy_short);
    assert_eq!(level, Level::HealthyCounted, "largest value was {one_full}");
    let healthy = NodeSummary::from_yaml(&data[reports.keys().nth(1).unwrap()]).unwrap();
    assert_eq!(healthy.healthy_items, Some(12));
    assert!(healthy.categories.is_empty() && healthy.report.is_none());
    assert_eq!(healthy.finished_at, "2026-11-22T06:00:07Z");

    let (data, level) =
        summary_data_within(&reports, FIXED_BYTES + failed_room / 2 + healthy_short);
    assert_eq!(level, Level::FirstFailures);
    let first = reports.keys().next().unwrap().clone();
    let failed = NodeSummary::from_yaml(&data[&first]).unwrap();
    assert_eq!(failed.failed().count(), FIRST_FAILURES);
    assert_eq!(failed.failed_items, Some(6));
    assert_eq!(
        failed.report.as_deref(),
        Some(reports[&first].name.as_str())
    );

    // The same input always gives the same data.
    reports.insert("z".into(), report("z", RUN, 1, 0, 0));
    assert_eq!(summary_data(&reports), summary_data(&reports));
}

#[test]
fn keys_are_left_out_only_when_even_counts_do_not_fit_and_healthy_ones_go_first() {
    let reports = cluster(100, 2, 1);
    let (data, level) = summary_data_within(&reports, FIXED_BYTES + 60 * 140);
    let Level::KeysOmitted(n) = level else {
        panic!("{level:?}")
    };
    assert_eq!(data.len(), 100 - n);
    assert!(stored_size(&data) <= FIXED_BYTES + 60 * 140);
    let failed_kept = data
        .keys()
        .filter(|k| reports[*k].spec.failed_items > 0)
        .count();
    assert_eq!(
        failed_kept, 50,
        "failed nodes stay while healthy ones can go"
    );
}

#[test]
fn the_status_counts_the_nodes_of_the_newest_run_and_their_failures() {
    let later = "2026-11-22T07:00:00Z";
    let reports = [
        report("a", RUN, 3, 1, 10),
        report("b", later, 3, 2, 10),
        report("c", later, 3, 0, 10),
        report("d", "not a time", 3, 5, 10),
    ];
    let runs = run_summary(reports.iter().map(|r| r.as_ref()));
    assert_eq!(runs.last_run_at.as_deref(), Some(later));
    assert_eq!(runs.completed_nodes, 2);
    assert_eq!(runs.failed_items, 2);
    assert_eq!(run_summary([]), RunSummary::default());
}

#[test]
fn the_newest_run_is_the_one_that_finished_last_not_the_latest_scheduled() {
    let ran = |node: &str, run_at: &str, finished_at: &str| {
        let mut r = report(node, run_at, 1, 1, 10).as_ref().clone();
        r.spec.finished_at = finished_at.into();
        r
    };
    // Two ad-hoc runs, then a timestamp in the past: the past one ran last.
    let reports = [
        ran("a", "2026-11-25T18:00:00Z", "2026-11-25T18:00:05Z"),
        ran("b", "2025-06-01T00:00:00Z", "2026-11-25T18:10:05Z"),
        ran("c", "2025-06-01T00:00:00Z", "2026-11-25T18:10:06Z"),
    ];
    let runs = run_summary(reports.iter());
    assert_eq!(runs.last_run_at.as_deref(), Some("2025-06-01T00:00:00Z"));
    assert_eq!(runs.completed_nodes, 2);
    let gone = departed(reports.iter(), "2025-06-01T00:00:00Z", &BTreeSet::new());
    assert_eq!(
        gone,
        [report_name("node-check", "a")],
        "an earlier run, scheduled later"
    );
}

#[test]
fn reports_of_nodes_without_a_pod_go_at_the_next_run_only() {
    let later = "2026-11-22T07:00:00Z";
    let reports = [
        report("stays", RUN, 1, 0, 0),
        report("gone", RUN, 1, 0, 0),
        report("gone-but-reported", later, 1, 0, 0),
    ];
    let pods: BTreeSet<String> = ["stays".to_string()].into();
    let gone = departed(reports.iter().map(|r| r.as_ref()), later, &pods);
    assert_eq!(gone, [report_name("node-check", "gone")]);
    assert!(departed(reports.iter().map(|r| r.as_ref()), "garbage", &pods).is_empty());
}

#[test]
fn every_level_keeps_each_nodes_scripts_hash() {
    let reports = cluster_with_scripts(40, 4, 6);
    for max in [usize::MAX, 20_000, 12_000, 9_000, 7_000] {
        let (data, level) = summary_data_within(&reports, max);
        for (node, value) in &data {
            let v = NodeSummary::from_yaml(value).unwrap();
            assert_eq!(v.scripts, "0a1b2c3d4e5f", "{node} at {level:?}: {value}");
        }
    }
}

#[test]
fn script_sets_count_the_nodes_of_each_hash_most_first_at_most_five() {
    let sets = script_sets(["bbb", "aaa", "bbb", "", "ccc", "aaa", "bbb"]);
    let shown: Vec<(&str, i32)> = sets.iter().map(|s| (s.scripts.as_str(), s.nodes)).collect();
    assert_eq!(
        shown,
        [("bbb", 3), ("aaa", 2), ("ccc", 1)],
        "no hash is no set"
    );
    let many: Vec<String> = (0..9).map(|i| format!("h{i}")).collect();
    let sets = script_sets(many.iter().map(String::as_str));
    assert_eq!(sets.len(), combo_api::debugger::MAX_SCRIPT_SETS);
    assert!(script_sets([]).is_empty());
}

#[test]
fn the_run_summary_lists_the_script_sets_of_the_newest_run_only() {
    let with = |node: &str, run: &str, scripts: &str| {
        let mut r = (*report(node, run, 2, 0, 0)).clone();
        r.spec.scripts = scripts.into();
        r
    };
    let reports = [
        with("n1", RUN, "aaa"),
        with("n2", RUN, "aaa"),
        with("n3", RUN, "bbb"),
        with("n4", "2026-11-22T05:00:00Z", "ccc"),
    ];
    let runs = run_summary(reports.iter());
    let shown: Vec<(&str, i32)> = runs
        .script_sets
        .iter()
        .map(|s| (s.scripts.as_str(), s.nodes))
        .collect();
    assert_eq!(shown, [("aaa", 2), ("bbb", 1)]);
    assert_eq!(runs.completed_nodes, 3);
}

#[test]
fn a_category_keeps_its_first_failing_items_by_name_and_counts_the_rest() {
    let mut disk = BTreeMap::new();
    for i in 0..12 {
        disk.insert(format!("sd{i:02}"), ItemResult::err("i/o error"));
    }
    // A cut report's stand-in sorts first and is counted, never named.
    disk.insert(
        "(4 failed items omitted)".into(),
        ItemResult::err(combo_api::summary::OMITTED),
    );
    disk.insert("sr0".into(), ItemResult::ok());
    let net = BTreeMap::from([("eth0".to_string(), ItemResult::ok())]);
    let spec = DebuggerReportSpec {
        debugger: "node-check".into(),
        node: "n1".into(),
        run_at: RUN.into(),
        failed_items: 16,
        categories: BTreeMap::from([("disk".into(), disk), ("net".into(), net)]),
        ..DebuggerReportSpec::default()
    };
    let r = NodeReport::new(report_name("node-check", "n1"), spec);
    let (named, more) = r.problems("disk");
    let named: Vec<&str> = named.iter().map(|n| &**n).collect();
    assert_eq!(named, ["sd00", "sd01", "sd02", "sd03", "sd04"]);
    assert_eq!(named.len(), PROBLEMS_PER_CATEGORY);
    assert_eq!(more, 16 - 5, "the other 7 and the 4 left out");
    assert_eq!(
        r.first_failure("disk").flatten().unwrap().item.as_ref(),
        "sd00"
    );
    let (none, zero) = r.problems("net");
    assert!(none.is_empty());
    assert_eq!(zero, 0);
    assert_eq!(r.problems("mem").1, 0, "a category the report lacks");
}
