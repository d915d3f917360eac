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
    for i in 0..300 {
        let (cat, r) = match i % 3 {
            0 => ("disk", ItemResult::err("x".repeat(40))),
            1 => ("net", ItemResult::skip("no host network")),
            _ => ("net", ItemResult::ok()),
        };
        result
            .categories
            .entry(cat.into())
            .or_default()
            .insert(format!("item-{i:03}"), r);
    }
    let spec = DebuggerReportSpec::of("d", "n", &result);
    assert!(
        spec.categories["disk"].len() < 100,
        "the report was cut: {} disk items kept",
        spec.categories["disk"].len()
    );
    let counts = spec.category_counts();
    assert_eq!(
        counts["disk"],
        ItemCounts {
            failed: 100,
            skipped: 0
        }
    );
    assert_eq!(
        counts["net"],
        ItemCounts {
            failed: 0,
            skipped: 100
        }
    );
    assert_eq!(spec.failed_items, 100);
    assert_eq!(spec.healthy_items(), 100);
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
    for i in 0..300 {
        let r = if i % 3 == 0 {
            ItemResult::err(format!("sd{i} is failing with a long explanation"))
        } else {
            ItemResult::ok()
        };
        disk.insert(format!("sd{i:03}"), r);
    }
    let spec = DebuggerReportSpec::of("node-check", "node-1", &result);
    assert_eq!(spec.failed_items, 100);
    assert_eq!(spec.skipped_items, 0);
    assert_eq!(spec.healthy_items(), 200);
    assert!(spec.summary().to_yaml().len() <= MAX_REPORT_RESULT_BYTES);
    assert!(spec.summary().failed().count() < 100, "cut to fit");
    let whole = serde_yaml::to_string(&DebuggerReport::new("node-check.node-1", spec)).unwrap();
    assert!(whole.len() < 4096, "{}", whole.len());
}

#[test]
fn a_report_counts_skips_apart_from_failures_and_health() {
    let mut result = NodeSummary {
        run_at: "2026-11-22T06:00:00Z".into(),
        ..Default::default()
    };
    let disk = result.categories.entry("disk".into()).or_default();
    for i in 0..200 {
        let r = match i % 4 {
            0 => ItemResult::err(format!("sd{i} is failing")),
            1 => ItemResult::skip("smartctl is not installed in the runner image"),
            _ => ItemResult::ok(),
        };
        disk.insert(format!("sd{i:03}"), r);
    }
    let spec = DebuggerReportSpec::of("node-check", "node-1", &result);
    assert_eq!(spec.failed_items, 50);
    assert_eq!(spec.skipped_items, 50);
    assert_eq!(spec.healthy_items(), 100, "a skip is not healthy");
    assert!(spec.summary().to_yaml().len() <= MAX_REPORT_RESULT_BYTES);
    assert!(
        spec.categories["disk"].contains_key("(50 skipped items omitted)"),
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
