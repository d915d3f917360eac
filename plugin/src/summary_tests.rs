use super::*;

fn data() -> BTreeMap<String, String> {
    [
        (
            "node-1".to_string(),
            "runAt: \"2026-11-22T06:00:00Z\"\ndisk:\n  sdb1: {err: \"disk full\"}\n  sdb2: {}\n"
                .to_string(),
        ),
        (
            "node-2".to_string(),
            "runAt: \"2026-11-22T06:00:00Z\"\nnet:\n  eth0: {}\n".to_string(),
        ),
    ]
    .into()
}

#[test]
fn summary_shows_failed_items_only_unless_all() {
    let failed = summary_rows(&data(), false, &Nodes::new());
    assert_eq!(
        failed,
        vec![vec![
            "node-1".to_string(),
            "20261122T060000Z".into(),
            "disk".into(),
            "sdb1".into(),
            "disk full".into()
        ]]
    );
    let all = summary_rows(&data(), true, &Nodes::new());
    assert_eq!(all.len(), 3);
    assert!(all.iter().any(|r| r[0] == "node-2" && r[5] == "-"));
}

#[test]
fn all_shows_each_nodes_scripts_hash_even_without_items() {
    let data = BTreeMap::from([
        (
            "node-1".to_string(),
            "runAt: \"2026-11-22T06:00:00Z\"\nscripts: 0a1b2c3d4e5f\ndisk:\n  sdb1: {err: full}\n  sdb2: {}\n".to_string(),
        ),
        (
            "node-2".to_string(),
            "runAt: \"2026-11-22T06:00:00Z\"\nscripts: 5f4e3d2c1b0a\n".to_string(),
        ),
        (
            "node-3".to_string(),
            "runAt: \"2026-11-22T06:00:00Z\"\nnet:\n  eth0: {}\n".to_string(),
        ),
    ]);
    let all = summary_rows(&data, true, &Nodes::new());
    let shown: Vec<String> = all.iter().map(|r| r[..4].join(" ")).collect();
    assert_eq!(
        shown,
        [
            "node-1 20261122T060000Z 0a1b2c3d4e5f disk",
            "node-1 20261122T060000Z 0a1b2c3d4e5f disk",
            "node-2 20261122T060000Z 5f4e3d2c1b0a -",
            "node-3 20261122T060000Z - net",
        ]
    );
    assert_eq!(all[2][4], "(no items)");
    let out = table(&SUMMARY_ALL_HEADER, &all);
    assert!(
        out.starts_with("NODE     RUN                SCRIPTS        CATEGORY"),
        "{out}"
    );
    let failed = summary_rows(&data, false, &Nodes::new());
    assert_eq!(failed.len(), 1);
    assert_eq!(
        failed[0].len(),
        SUMMARY_HEADER.len(),
        "no SCRIPTS without --all"
    );
}

#[test]
fn a_shortened_value_counts_what_it_leaves_out_and_names_the_report() {
    let data = BTreeMap::from([
        (
            "node-1".to_string(),
            "runAt: \"2026-11-22T06:00:00Z\"\nhealthyItems: 9\nfailedItems: 5\nreport: dbg.node-1\ndisk:\n  sdb1: {err: full}\n".to_string(),
        ),
        (
            "node-2".to_string(),
            "runAt: \"2026-11-22T06:00:00Z\"\nhealthyItems: 12\n".to_string(),
        ),
    ]);
    let failed = summary_rows(&data, false, &Nodes::new());
    assert_eq!(failed.len(), 2, "{failed:?}");
    assert_eq!(failed[0][3], "sdb1");
    assert_eq!(failed[1][3], "(4 more failed)");
    assert_eq!(failed[1][4], "kubectl get dbgr dbg.node-1 -o yaml");
    let all = summary_rows(&data, true, &Nodes::new());
    assert!(all
        .iter()
        .any(|r| r[0] == "node-2" && r[4] == "(12 healthy)"));
}

#[test]
fn skipped_items_are_listed_with_all_and_counted_apart() {
    let data = BTreeMap::from([(
        "node-1".to_string(),
        "runAt: \"2026-11-22T06:00:00Z\"\ndisk:\n  smart: {skip: \"no smartctl in the image\"}\n  sda: {}\n"
            .to_string(),
    )]);
    assert!(
        summary_rows(&data, false, &Nodes::new()).is_empty(),
        "a skip is no failure"
    );
    let all = summary_rows(&data, true, &Nodes::new());
    assert!(
        all.iter()
            .any(|r| r[4] == "smart" && r[5] == "(skipped: no smartctl in the image)"),
        "{all:?}"
    );
    assert_eq!(skipped_count(&data), 1);
    assert_eq!(skipped_count(&self::tests::data()), 0);
}

#[test]
fn the_json_view_has_the_documented_fields_and_counts_omitted_failures() {
    let mut d = data();
    d.insert(
        "node-3".into(),
        "runAt: \"2026-11-22T06:00:00Z\"\nfinishedAt: \"2026-11-22T06:00:07Z\"\nscripts: 0a1b\ndisk:\n  sda: {err: full}\n  (229 failed items omitted): {err: omitted}\n  smart: {skip: no smartctl}\n".into(),
    );
    d.insert("node-4".into(), "- not a summary".into());
    let v = view(
        "ops",
        "check",
        "check-summary",
        &d,
        None,
        false,
        &Nodes::new(),
    );
    let json = serde_json::to_value(&v).unwrap();
    let keys = |o: &serde_json::Value| {
        let mut k: Vec<String> = o.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(
        keys(&json),
        ["configMap", "debugger", "namespace", "nodes", "stale"]
    );
    let node3 = &json["nodes"][2];
    assert_eq!(
        keys(node3),
        [
            "failedItems",
            "finishedAt",
            "items",
            "node",
            "report",
            "run",
            "runAt",
            "scripts",
            "skippedItems",
            "startedAt",
            "unreadable"
        ]
    );
    assert_eq!(node3["failedItems"], 230);
    assert_eq!(node3["skippedItems"], 1);
    assert_eq!(node3["run"], "20261122T060000Z");
    assert_eq!(node3["items"].as_array().unwrap().len(), 2, "failed only");
    assert_eq!(
        keys(&node3["items"][0]),
        ["category", "failingRuns", "item", "message", "state"]
    );
    assert_eq!(node3["items"][1]["item"], "sda");
    assert_eq!(node3["items"][1]["state"], "failed");
    assert_eq!(node3["items"][1]["message"], "full");
    assert!(json["nodes"][3]["unreadable"].is_string());
    assert!(json["stale"].is_null());
    let all = view(
        "ops",
        "check",
        "check-summary",
        &d,
        Some("STALE: x".into()),
        true,
        &Nodes::new(),
    );
    let states: Vec<&str> = all.nodes[2].items.iter().map(|i| i.state).collect();
    assert_eq!(states, ["failed", "failed", "skipped"]);
    assert_eq!(all.stale.as_deref(), Some("STALE: x"));
}

#[test]
fn a_failed_item_failing_for_runs_says_so_after_its_error_and_in_json() {
    // node-1's disk/sdb1 failed in its last 3 runs (the summary's is
    // the last); node-2 has no history.
    let mut h = combo_api::history::History::default();
    for (at, failed) in [("03", false), ("04", true), ("05", true), ("06", true)] {
        let mut run = NodeSummary {
            run_at: format!("2026-11-22T{at}:00:00Z"),
            ..NodeSummary::default()
        };
        let r = if failed {
            combo_api::ItemResult::err("disk full")
        } else {
            combo_api::ItemResult::ok()
        };
        run.categories
            .entry("disk".into())
            .or_default()
            .insert("sdb1".into(), r);
        h = h.next(&run);
    }
    let reports = Nodes::from([(
        "node-1".to_string(),
        history::Reported {
            history: h,
            ..Default::default()
        },
    )]);
    let rows = summary_rows(&data(), false, &reports);
    assert_eq!(rows[0][4], "disk full   failing for 3 runs");
    let all = summary_rows(&data(), true, &reports);
    let healthy: Vec<&Vec<String>> = all.iter().filter(|r| r[4] == "sdb2").collect();
    assert_eq!(healthy[0][5], "-", "only a failed item's line grows");
    let v = view(
        "ops",
        "check",
        "check-summary",
        &data(),
        None,
        true,
        &reports,
    );
    let json = serde_json::to_value(&v).unwrap();
    assert_eq!(json["nodes"][0]["items"][0]["failingRuns"], 3);
    assert!(json["nodes"][0]["items"][1]["failingRuns"].is_null());
    // A summary of a run the history does not list says nothing.
    let mut stale = data();
    stale.insert(
        "node-1".into(),
        "runAt: \"2026-11-22T07:00:00Z\"\ndisk:\n  sdb1: {err: \"disk full\"}\n".into(),
    );
    assert_eq!(summary_rows(&stale, false, &reports)[0][4], "disk full");
}

#[test]
fn table_aligns_columns_under_the_header() {
    let out = table(
        &SUMMARY_HEADER,
        &summary_rows(&data(), false, &Nodes::new()),
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2);
    assert!(lines[0].starts_with("NODE     RUN"), "{out}");
    assert_eq!(lines[0].find("CATEGORY"), lines[1].find("disk"));
}
