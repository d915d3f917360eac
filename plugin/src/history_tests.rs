use super::*;
use combo_api::{DebuggerReportSpec, ItemResult, NodeSummary};

/// The `runAt` of run `i`.
fn t(i: usize) -> String {
    format!("2026-12-01T{:02}:{:02}:00Z", i / 60, i % 60)
}

/// The history a runner keeps over `runs` runs in which each item of
/// `items` has the verdict its string gives run by run (`o`, `x`, `s`,
/// `-`), every item healthy in a run past the end of its string.
fn kept(runs: usize, items: &[(&str, &str)]) -> History {
    let mut h = History::default();
    for i in 0..runs {
        let mut result = NodeSummary {
            run_at: t(i),
            ..NodeSummary::default()
        };
        for (key, verdicts) in items {
            let (cat, item) = history::split(key);
            let r = match verdicts.chars().nth(i).unwrap_or('o') {
                'x' => ItemResult::err("broken"),
                's' => ItemResult::skip("no tool"),
                '-' => continue,
                _ => ItemResult::ok(),
            };
            result
                .categories
                .entry(cat.into())
                .or_default()
                .insert(item.into(), r);
        }
        h = h.next(&result);
    }
    h
}

fn nodes(of: &[(&str, History)]) -> Nodes {
    of.iter()
        .map(|(n, h)| {
            let items = h.items.keys().cloned().collect();
            let r = Reported {
                history: h.clone(),
                items,
            };
            (n.to_string(), r)
        })
        .collect()
}

fn joined(rows: &[Vec<String>]) -> Vec<String> {
    rows.iter().map(|r| r.join(" | ")).collect()
}

#[test]
fn the_timeline_has_a_row_per_node_and_failing_item_with_its_streak_and_flips() {
    let n = nodes(&[
        (
            "node-1",
            kept(
                10,
                &[("disk/sdb1", "ooooxxxo-x"), ("net/eth0", "xxoooooooo")],
            ),
        ),
        ("node-2", kept(10, &[("disk/sdb1", "oooooooooo")])),
        ("node-3", History::default()),
        ("node-4", kept(6, &[("mem/oom", "ooxxxx")])),
    ]);
    assert_eq!(
        joined(&timeline_rows(&n)),
        [
            format!(
                "node-1 | disk/sdb1 | ooooxxxo-x | for 1 run since {} | 3",
                t(9)
            ),
            "node-1 | net/eth0 | xxoooooooo | no | 1".to_string(),
            "node-2 | (no failure in the last 10 runs) | - | - | -".to_string(),
            format!("node-3 | {NO_HISTORY} | - | - | -"),
            format!("node-4 | mem/oom | ooxxxx | for 4 runs since {} | 1", t(2)),
        ]
    );
    let out = table(&TIMELINE_HEADER, &timeline_rows(&n));
    assert!(
        out.starts_with("NODE     ITEM    "),
        "columns under the header: {out}"
    );
}

#[test]
fn a_history_that_left_items_out_counts_them_and_does_not_claim_no_failure() {
    let mut h = kept(3, &[]);
    h.omitted = 7;
    let n = nodes(&[("node-1", h)]);
    assert_eq!(
        joined(&timeline_rows(&n)),
        ["node-1 | (7 items omitted to fit) | - | - | -"]
    );
    let rows = item_rows(&n, &["disk/sdb1".to_string()]);
    assert_eq!(
        joined(&rows),
        ["node-1 | disk/sdb1 | - | (not listed: no failure, or among the 7 omitted) | "]
    );
}

#[test]
fn an_items_timeline_marks_where_its_failure_started_and_where_it_cleared() {
    let n = nodes(&[
        ("node-1", kept(6, &[("disk/sdb1", "oxxos-")])),
        ("node-2", kept(6, &[("disk/sdb1", "ooooxx")])),
        ("node-3", History::default()),
    ]);
    let rows = item_rows(&n, &["disk/sdb1".to_string()]);
    assert_eq!(
        rows.len(),
        6 + 6 + 1,
        "every run of both nodes, one row for node-3"
    );
    assert!(rows.iter().all(|r| r[1] == "disk/sdb1"));
    let marks: Vec<(&str, &str, &str)> = rows
        .iter()
        .filter(|r| !r[4].is_empty())
        .map(|r| (r[0].as_str(), r[2].as_str(), r[4].as_str()))
        .collect();
    let (t1, t3, t4) = (t(1), t(3), t(4));
    assert_eq!(
        marks,
        [
            ("node-1", t1.as_str(), "started failing"),
            ("node-1", t3.as_str(), "cleared"),
            ("node-2", t4.as_str(), "started failing"),
        ]
    );
    let verdicts: Vec<&str> = rows[..6].iter().map(|r| r[3].as_str()).collect();
    assert_eq!(
        verdicts,
        [
            "healthy",
            "failed",
            "failed",
            "healthy",
            "skipped",
            "not reported"
        ]
    );
    assert_eq!(rows[12][2], "-");
    assert_eq!(rows[12][3], NO_HISTORY);
}

#[test]
fn a_streak_longer_than_the_history_says_so_and_when_it_began() {
    // 25 runs failing: the history keeps the last 20, `failingSince` the first.
    let h = kept(25, &[("disk/sdb1", &"x".repeat(25))]);
    assert_eq!(h.runs.len(), HISTORY_RUNS);
    let s = streak_at(&h, "disk/sdb1", &t(24)).unwrap();
    assert_eq!(
        s,
        Streak {
            runs: 20,
            longer: true,
            since: Some(t(0)),
        }
    );
    assert_eq!(s.runs_text(), "20+ runs");
    let n = nodes(&[("node-1", h)]);
    assert_eq!(
        timeline_rows(&n)[0][3],
        format!("for 20+ runs since {}", t(0))
    );
    let rows = item_rows(&n, &["disk/sdb1".to_string()]);
    assert_eq!(rows[0][4], format!("failing since {}", t(0)));
    assert!(rows[1..].iter().all(|r| r[4].is_empty()), "{rows:?}");
    // An earlier streak cut off by the window: its start is unknown.
    let h = kept(22, &[("disk/sdb1", "xxxxxooooooooooooooooo")]);
    let rows = item_rows(&nodes(&[("node-1", h)]), &["disk/sdb1".to_string()]);
    assert_eq!(rows[0][4], "failing since an earlier run");
    assert_eq!(rows[3][4], "cleared");
}

#[test]
fn the_streak_of_an_earlier_run_counts_up_to_that_run_only() {
    let h = kept(6, &[("disk/sdb1", "oxxxoo")]);
    let s = streak_at(&h, "disk/sdb1", &t(3)).unwrap();
    assert_eq!((s.runs, s.longer, s.since), (3, false, Some(t(1))));
    assert_eq!(streak_at(&h, "disk/sdb1", &t(5)), None, "healthy then");
    assert_eq!(streak_at(&h, "disk/sdb1", "2020-01-01T00:00:00Z"), None);
    assert_eq!(streak_at(&h, "disk/other", &t(3)), None);
    let one = streak_at(&kept(2, &[("disk/a", "ox")]), "disk/a", &t(1)).unwrap();
    assert_eq!(one.runs_text(), "1 run");
}

#[test]
fn an_item_is_named_in_full_or_by_its_name_in_any_category() {
    let known: BTreeSet<String> = ["custom/eth0", "disk/sdb1", "disk/smart/sda", "net/eth0"]
        .into_iter()
        .map(String::from)
        .collect();
    let m = |w: &str| matching_items("ops", "check", &known, w);
    assert_eq!(m("disk/sdb1").unwrap(), ["disk/sdb1"]);
    assert_eq!(m("sdb1").unwrap(), ["disk/sdb1"]);
    assert_eq!(m("eth0").unwrap(), ["custom/eth0", "net/eth0"]);
    assert_eq!(m("net/eth0").unwrap(), ["net/eth0"]);
    assert_eq!(m("smart/sda").unwrap(), ["disk/smart/sda"]);
    assert_eq!(
        m("sdc").unwrap_err().0,
        "no item \"sdc\" in the reports of Debugger ops/check (give <category>/<item> or an item's name); \
         known items: custom/eth0, disk/sdb1, disk/smart/sda, net/eth0"
    );
    let many: BTreeSet<String> = (0..12).map(|i| format!("disk/d{i:02}")).collect();
    let err = matching_items("ops", "check", &many, "x").unwrap_err().0;
    assert!(err.ends_with("disk/d09, ... (2 more)"), "{err}");
    let err = matching_items("ops", "check", &BTreeSet::new(), "x")
        .unwrap_err()
        .0;
    assert!(err.ends_with("; its reports list no item"), "{err}");
}

/// The report of `node` whose latest run lists `items`, with history `h`.
fn report(node: &str, run_at: &str, items: &[(&str, ItemResult)], h: History) -> DebuggerReport {
    let mut result = NodeSummary {
        run_at: run_at.into(),
        ..NodeSummary::default()
    };
    for (key, r) in items {
        let (cat, item) = history::split(key);
        result
            .categories
            .entry(cat.into())
            .or_default()
            .insert(item.into(), r.clone());
    }
    let spec = DebuggerReportSpec::of("check", node, &result).with_history(h);
    DebuggerReport::new(&combo_api::report::report_name("check", node), spec)
}

#[test]
fn known_items_are_those_of_the_histories_and_of_the_latest_runs() {
    let reports = [
        report(
            "node-1",
            &t(1),
            &[
                ("disk/sda", ItemResult::ok()),
                ("disk/(3 failed items omitted)", ItemResult::err("omitted")),
            ],
            kept(2, &[("net/eth0", "xo")]),
        ),
        report(
            "node-2",
            &t(0),
            &[("mem/oom", ItemResult::ok())],
            History::default(),
        ),
        // An older report of node-2 under another name loses to the newer.
        report("node-2", "2025-01-01T00:00:00Z", &[], History::default()),
    ];
    let n = nodes_of(&reports);
    assert_eq!(n.keys().collect::<Vec<_>>(), ["node-1", "node-2"]);
    assert_eq!(n["node-2"].items, BTreeSet::from(["mem/oom".to_string()]));
    let known: Vec<String> = known_items(&n).into_iter().collect();
    assert_eq!(known, ["disk/sda", "mem/oom", "net/eth0"], "no stand-in");
    // An item healthy throughout is known, and said to have no failure.
    let rows = item_rows(&n, &["disk/sda".to_string()]);
    assert_eq!(rows[0][3], "(no failure in the last 2 runs)");
    assert_eq!(rows[1][3], NO_HISTORY);
}

#[test]
fn a_node_without_a_report_is_not_found_and_names_the_nodes_that_reported() {
    let n = nodes(&[("node-1", kept(1, &[])), ("node-2", kept(1, &[]))]);
    let one = only_node("ops", "check", n.clone(), "node-2").unwrap();
    assert_eq!(one.keys().collect::<Vec<_>>(), ["node-2"]);
    let err = only_node("ops", "check", n, "node-9").unwrap_err();
    assert_eq!(
        err.0,
        "Debugger ops/check has no report of node \"node-9\"; its reports are of node-1, node-2"
    );
    let exit = crate::errors::exit_status(&anyhow::Error::new(err));
    assert_eq!(exit, crate::errors::EXIT_NOT_FOUND);
}

#[test]
fn the_json_view_is_each_nodes_history_and_null_without_one() {
    let n = nodes(&[
        (
            "node-1",
            kept(3, &[("disk/sdb1", "oxx"), ("net/eth0", "xoo")]),
        ),
        ("node-2", History::default()),
    ]);
    let json = serde_json::to_value(view("ops", "check", &n, None)).unwrap();
    assert_eq!(json["namespace"], "ops");
    assert_eq!(json["debugger"], "check");
    assert!(json["nodes"]["node-2"].is_null());
    let node1 = &json["nodes"]["node-1"];
    assert_eq!(node1["runs"], serde_json::json!([t(0), t(1), t(2)]));
    assert_eq!(node1["items"]["disk/sdb1"]["verdicts"], "oxx");
    assert_eq!(node1["items"]["disk/sdb1"]["failingSince"], t(1));
    assert!(node1["items"]["net/eth0"]["failingSince"].is_null());
    // The same field names as the report's spec.history.
    let back: History = serde_json::from_value(node1.clone()).unwrap();
    assert_eq!(back, n["node-1"].history);
    let only = view("ops", "check", &n, Some(&["net/eth0".to_string()]));
    let items = &only.nodes["node-1"].as_ref().unwrap().items;
    assert_eq!(items.keys().collect::<Vec<_>>(), ["net/eth0"]);
    let yaml = crate::output::document(Output::Yaml, &only);
    assert!(
        yaml.starts_with("namespace: ops\ndebugger: check\nnodes:\n"),
        "{yaml}"
    );
}

#[test]
fn verdicts_read_as_words() {
    let words: Vec<&str> = "oxs-?".chars().map(verdict_words).collect();
    assert_eq!(
        words,
        ["healthy", "failed", "skipped", "not reported", "unknown"]
    );
}
