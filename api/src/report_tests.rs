use super::*;

#[test]
fn a_null_item_as_the_api_server_stores_it_reads_as_healthy() {
    let spec: DebuggerReportSpec = serde_json::from_value(serde_json::json!({
        "debugger": "d", "node": "n", "runAt": "2026-01-01T00:00:00Z",
        "categories": {"net": {"errors:eth0": null, "eth0": {"err": "down"}}},
    }))
    .unwrap();
    assert_eq!(spec.categories["net"]["errors:eth0"], ItemResult::ok());
    assert_eq!(spec.categories["net"]["eth0"], ItemResult::err("down"));
}

#[test]
fn category_counts_count_the_items_left_out_of_a_cut_report() {
    let mut result = NodeSummary {
        run_at: "2026-01-01T00:00:00Z".into(),
        ..NodeSummary::default()
    };
    for i in 0..3000 {
        let (cat, r) = match i % 3 {
            0 => ("disk", ItemResult::err("x".repeat(40))),
            1 => ("net", ItemResult::skip("no host network")),
            _ => ("net", ItemResult::ok()),
        };
        result
            .categories
            .entry(cat.into())
            .or_default()
            .insert(format!("item-{i:04}"), r);
    }
    let spec = DebuggerReportSpec::of("d", "n", &result);
    assert!(
        spec.categories["disk"].len() < 1000,
        "the report was cut: {} disk items kept",
        spec.categories["disk"].len()
    );
    let counts = spec.category_counts();
    assert_eq!(
        counts["disk"],
        ItemCounts {
            failed: 1000,
            skipped: 0
        }
    );
    assert_eq!(
        counts["net"],
        ItemCounts {
            failed: 0,
            skipped: 1000
        }
    );
    assert_eq!(spec.failed_items, 1000);
    assert_eq!(spec.healthy_items(), 1000);
}

fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= MAX_NAME
        && s.split('.').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !part.starts_with('-')
                && !part.ends_with('-')
        })
}

#[test]
fn a_report_is_named_after_its_debugger_and_node() {
    assert_eq!(report_name("node-check", "node-1"), "node-check.node-1");
    assert_eq!(
        report_name("node-check", "ip-10-0-0-1.ec2.internal"),
        "node-check.ip-10-0-0-1.ec2.internal"
    );
    assert_eq!(node_label_value("node-1"), "node-1");
}

#[test]
fn names_too_long_for_kubernetes_are_cut_and_end_with_a_hash() {
    let dbg = "d".repeat(200);
    let (a, b) = (
        format!("{}.x.y-a", "n".repeat(50)),
        format!("{}.x.y-b", "n".repeat(50)),
    );
    let (na, nb) = (report_name(&dbg, &a), report_name(&dbg, &b));
    assert_ne!(na, nb, "distinct nodes keep distinct reports");
    for n in [&na, &nb] {
        assert!(n.len() <= 253, "{}", n.len());
        assert!(is_dns_subdomain(n), "{n}");
    }
    assert_eq!(na, report_name(&dbg, &a), "stable");
    // A cut that lands on a dot drops it rather than ending a part with it.
    let dotted = format!("{}.{}", "a".repeat(241), "b".repeat(40));
    assert!(is_dns_subdomain(&report_name("d", &dotted)));
}

#[test]
fn shortened_names_end_with_the_hash_released_versions_wrote() {
    // A changed hash would rename every long report on upgrade.
    let node = format!("{}.x.y-a", "n".repeat(50));
    let name = report_name(&"d".repeat(200), &node);
    assert_eq!(
        name,
        format!("{}.{}-107ccba14f", "d".repeat(200), "n".repeat(41))
    );
    let node = format!("{}.example.internal", "worker-".repeat(10));
    assert_eq!(
        node_label_value(&node),
        format!("{}wor-0782427a46", "worker-".repeat(7))
    );
}

#[test]
fn long_node_names_give_a_hashed_label_value() {
    let node = format!("{}.example.internal", "worker-".repeat(10));
    let v = node_label_value(&node);
    assert_eq!(v.len(), 63);
    assert!(v.starts_with("worker-worker-"));
    assert_ne!(v, node_label_value(&format!("{node}x")));
}

#[test]
fn a_report_counts_every_failure_even_those_cut_to_fit() {
    let mut result = NodeSummary {
        run_at: "2026-11-22T06:00:00Z".into(),
        finished_at: "2026-11-22T06:00:07Z".into(),
        ..Default::default()
    };
    let disk = result.categories.entry("disk".into()).or_default();
    for i in 0..3000 {
        let r = if i % 3 == 0 {
            ItemResult::err(format!("sd{i} is failing with a long explanation"))
        } else {
            ItemResult::ok()
        };
        disk.insert(format!("sd{i:04}"), r);
    }
    let spec = DebuggerReportSpec::of("node-check", "node-1", &result);
    assert_eq!(spec.failed_items, 1000);
    assert_eq!(spec.skipped_items, 0);
    assert_eq!(spec.healthy_items(), 2000);
    assert!(spec.summary().to_yaml().len() <= MAX_REPORT_RESULT_BYTES);
    assert!(spec.summary().failed().count() < 1000, "cut to fit");
    let stored = stored_bytes(&spec);
    assert!(stored < 32 * 1024, "{stored}");
}

#[test]
fn a_report_counts_skips_apart_from_failures_and_health() {
    let mut result = NodeSummary {
        run_at: "2026-11-22T06:00:00Z".into(),
        ..Default::default()
    };
    let disk = result.categories.entry("disk".into()).or_default();
    for i in 0..2000 {
        let r = match i % 4 {
            0 => ItemResult::err(format!("sd{i} is failing")),
            1 => ItemResult::skip("smartctl is not installed in the runner image"),
            _ => ItemResult::ok(),
        };
        disk.insert(format!("sd{i:04}"), r);
    }
    let spec = DebuggerReportSpec::of("node-check", "node-1", &result);
    assert_eq!(spec.failed_items, 500);
    assert_eq!(spec.skipped_items, 500);
    assert_eq!(spec.healthy_items(), 1000, "a skip is not healthy");
    assert!(spec.summary().to_yaml().len() <= MAX_REPORT_RESULT_BYTES);
    assert!(
        spec.categories["disk"].contains_key("(500 skipped items omitted)"),
        "{:?}",
        spec.categories["disk"].keys().collect::<Vec<_>>()
    );
}

#[test]
fn a_report_written_before_skips_existed_parses_with_none() {
    let old: DebuggerReportSpec = serde_yaml::from_str(
        "debugger: d\nnode: n\nrunAt: x\nfailedItems: 2\ncategories: {disk: {a: {err: b}}}\n",
    )
    .unwrap();
    assert_eq!(old.skipped_items, 0);
    assert_eq!(old.failed_items, 2);
}

#[test]
fn a_report_counts_the_err_lines_a_script_printed_past_the_limit() {
    let mut result = NodeSummary {
        run_at: "2026-11-22T06:00:00Z".into(),
        ..Default::default()
    };
    let disk = result.categories.entry("disk".into()).or_default();
    for i in 0..1000 {
        disk.insert(format!("flood/line-{i:05}"), ItemResult::err("broken"));
    }
    disk.insert(
        "flood/output".into(),
        ItemResult::err(crate::summary::untaken_message(19_000, 0, 0, 1000)),
    );
    let spec = DebuggerReportSpec::of("node-check", "node-1", &result);
    assert_eq!(spec.failed_items, 20_000);
    assert!(
        spec.categories["disk"].contains_key("flood/output"),
        "the stand-in is kept: {:?}",
        spec.categories["disk"].keys().collect::<Vec<_>>()
    );
    assert_eq!(
        spec.category_counts()["disk"].failed,
        20_000,
        "the metrics count them too"
    );
}

#[test]
fn the_scripts_hash_goes_from_result_to_report_to_summary_and_back() {
    let result = NodeSummary {
        run_at: "2026-01-01T00:00:00Z".into(),
        scripts: "0a1b2c3d4e5f".into(),
        ..NodeSummary::default()
    };
    let spec = DebuggerReportSpec::of("d", "n", &result);
    assert_eq!(spec.scripts, "0a1b2c3d4e5f");
    let json = serde_json::to_value(&spec).unwrap();
    assert_eq!(json["scripts"], "0a1b2c3d4e5f");
    let back: DebuggerReportSpec = serde_json::from_value(json).unwrap();
    assert_eq!(back, spec);
    let value = spec.summary().to_yaml();
    assert!(value.contains("scripts: 0a1b2c3d4e5f\n"), "{value}");
    assert_eq!(
        NodeSummary::from_yaml(&value).unwrap().scripts,
        "0a1b2c3d4e5f"
    );
}

#[test]
fn a_report_without_a_scripts_hash_parses_and_writes_none() {
    let spec: DebuggerReportSpec = serde_json::from_value(serde_json::json!({
        "debugger": "d", "node": "n", "runAt": "2026-01-01T00:00:00Z",
    }))
    .unwrap();
    assert_eq!(spec.scripts, "");
    let json = serde_json::to_value(&spec).unwrap();
    assert!(json.get("scripts").is_none(), "{json}");
    assert!(!spec.summary().to_yaml().contains("scripts"));
}

/// A kernel line of `len` bytes naming its device near its start.
fn kernel_line(i: usize, len: usize) -> String {
    let mut line = format!(
        "[18320{i:02}.551203] blk_update_request: I/O error, dev nvme{i}n1, sector 1953525168 op 0x0:(READ) flags 0x80700 phys_seg 1 prio class 0"
    );
    while line.len() < len {
        line.push_str(" more context");
    }
    line.truncate(len);
    line
}

/// A busy node: 150 items with names of 48 bytes over four categories,
/// 30 of them failed with kernel lines of `msg_len` bytes.
fn busy_node(msg_len: usize) -> NodeSummary {
    let mut result = NodeSummary {
        run_at: "2026-11-22T06:00:00Z".into(),
        finished_at: "2026-11-22T06:00:07Z".into(),
        scripts: "0a1b2c3d4e5f".into(),
        ..NodeSummary::default()
    };
    for i in 0..150 {
        let cat = ["disk", "net", "mem", "svc"][i % 4];
        let item = format!("{:-<48}", format!("script-{}/item-{i:03}", i % 10));
        let r = if i % 5 == 0 {
            ItemResult::err(kernel_line(i / 5, msg_len))
        } else {
            ItemResult::ok()
        };
        result
            .categories
            .entry(cat.into())
            .or_default()
            .insert(item, r);
    }
    result
}

/// The stored object as JSON, with the field set server-side apply
/// records for it (`f:<item>: {f:err: {}}` per item) as its managedFields.
fn stored_bytes(spec: &DebuggerReportSpec) -> usize {
    let fields: serde_json::Map<String, serde_json::Value> = spec
        .categories
        .iter()
        .map(|(cat, items)| {
            let items: serde_json::Map<_, _> = items
                .iter()
                .map(|(i, r)| {
                    let f = match (&r.err, &r.skip) {
                        (Some(_), _) => serde_json::json!({"f:err": {}}),
                        (None, Some(_)) => serde_json::json!({"f:skip": {}}),
                        _ => serde_json::json!({}),
                    };
                    (format!("f:{i}"), f)
                })
                .collect();
            (format!("f:{cat}"), items.into())
        })
        .collect();
    let report = DebuggerReport::new("node-check.node-1", spec.clone());
    serde_json::to_string(&report).unwrap().len() + serde_json::to_string(&fields).unwrap().len()
}

#[test]
fn a_node_with_150_items_and_30_failures_keeps_every_item_and_message_in_its_report() {
    let result = busy_node(MIN_REPORT_MESSAGE);
    let spec = DebuggerReportSpec::of("node-check", "node-1", &result);
    assert_eq!(
        spec.categories, result.categories,
        "nothing cut, nothing folded"
    );
    assert_eq!(spec.failed_items, 30);
    assert_eq!(spec.healthy_items(), 120);
    let yaml = spec.summary().to_yaml().len();
    assert!(yaml <= MAX_REPORT_RESULT_BYTES, "{yaml}");
    // The bound's headroom over such a node, as docs/runner.md gives it.
    assert!((13_000..13_700).contains(&yaml), "{yaml}");
    let stored = stored_bytes(&spec);
    assert!(stored < 32 * 1024, "{stored}");
}

#[test]
fn long_messages_of_a_busy_node_are_cut_to_160_bytes_or_more_before_any_item_folds() {
    let result = busy_node(crate::summary::FIRST_MESSAGE_LIMIT);
    let spec = DebuggerReportSpec::of("node-check", "node-1", &result);
    assert!(spec.summary().to_yaml().len() <= MAX_REPORT_RESULT_BYTES);
    for (cat, items) in &result.categories {
        let kept = &spec.categories[cat];
        assert_eq!(
            kept.keys().collect::<Vec<_>>(),
            items.keys().collect::<Vec<_>>(),
            "every item of {cat} by name"
        );
        for (item, r) in items {
            let Some(whole) = &r.err else {
                assert_eq!(kept[item], ItemResult::ok());
                continue;
            };
            let msg = kept[item].err.as_deref().unwrap();
            let body = msg.strip_suffix(crate::summary::CUT_MARKER).unwrap();
            assert!(body.len() >= MIN_REPORT_MESSAGE, "{msg}");
            assert!(whole.starts_with(body), "{msg}");
            assert!(
                msg.contains("I/O error, dev nvme"),
                "the device stays: {msg}"
            );
        }
    }
}

#[test]
fn the_summary_value_of_a_busy_node_is_still_bounded_and_folds() {
    let spec = DebuggerReportSpec::of("node-check", "node-1", &busy_node(MIN_REPORT_MESSAGE));
    let value = spec.summary().bounded(crate::summary::MAX_SUMMARY_BYTES);
    assert!(value.to_yaml().len() <= crate::summary::MAX_SUMMARY_BYTES);
    let names: Vec<&String> = value.categories.values().flat_map(|i| i.keys()).collect();
    assert!(
        names.iter().any(|n| n.ends_with("healthy items omitted)")),
        "{names:?}"
    );
    assert_eq!(value.failed_count(), 30, "every failure counted");
}

#[test]
fn a_report_beyond_the_bound_still_folds_and_counts_every_item() {
    let mut result = busy_node(MIN_REPORT_MESSAGE);
    let disk = result.categories.get_mut("disk").unwrap();
    for i in 0..400 {
        disk.insert(
            format!("{:-<48}", format!("extra/item-{i:03}")),
            ItemResult::ok(),
        );
    }
    let spec = DebuggerReportSpec::of("node-check", "node-1", &result);
    assert!(spec.summary().to_yaml().len() <= MAX_REPORT_RESULT_BYTES);
    assert!(spec.categories["disk"]
        .keys()
        .any(|k| k.ends_with("healthy items omitted)")));
    assert_eq!(spec.failed_items, 30);
    assert_eq!(spec.summary().failed().count(), 30, "failures stay listed");
    assert_eq!(spec.healthy_items(), 520);
}

#[test]
fn a_busy_report_with_a_full_history_stays_under_64_kib_stored() {
    // Every run fails a different third of 150 items: the history lists
    // as many items as its bound holds, each with 20 verdicts.
    let mut history = crate::history::History::default();
    for run in 0..20 {
        let mut result = busy_node(MIN_REPORT_MESSAGE);
        result.run_at = format!("2026-11-22T{run:02}:00:00Z");
        for (n, r) in result
            .categories
            .values_mut()
            .flat_map(|items| items.values_mut())
            .enumerate()
        {
            if (n + run) % 3 == 0 {
                *r = ItemResult::err("failed");
            }
        }
        history = history.next(&result);
    }
    assert!(history.omitted > 0, "the bound was reached");
    let spec = DebuggerReportSpec::of("node-check", "node-1", &busy_node(MIN_REPORT_MESSAGE))
        .with_history(history.clone());
    // Server-side apply records each history item's fields too.
    let history_fields = history.items.keys().map(|k| k.len() + 40).sum::<usize>();
    let stored = stored_bytes(&spec) + history_fields;
    assert!(stored < 64 * 1024, "{stored}");
    println!("busy report with a full history: {stored} bytes stored");
}
