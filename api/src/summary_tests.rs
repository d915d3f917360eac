use super::*;
use std::collections::BTreeSet;

#[test]
fn summary_yaml_matches_the_spec_shape() {
    let yaml = r#"
runAt: "2026-11-22T06:00:00Z"
finishedAt: "2026-11-22T06:00:07Z"
disk:
  sdb1:
    err: "disk full (97% used)"
  sdb2: {}
net:
  eth0: {}
"#;
    let s = NodeSummary::from_yaml(yaml).unwrap();
    assert_eq!(s.run_at, "2026-11-22T06:00:00Z");
    let failed: Vec<_> = s.failed().collect();
    assert_eq!(failed, vec![("disk", "sdb1", "disk full (97% used)")]);
    let back = NodeSummary::from_yaml(&s.to_yaml()).unwrap();
    assert_eq!(back, s);
    assert!(s.to_yaml().contains("sdb2: {}"));
}

fn summary_with(items: usize, msg_len: usize, failing_every: usize) -> NodeSummary {
    let mut s = NodeSummary {
        run_at: "2026-11-22T06:00:00Z".into(),
        finished_at: "2026-11-22T06:00:07Z".into(),
        ..Default::default()
    };
    let disk = s.categories.entry("disk".into()).or_default();
    for i in 0..items {
        let r = if i % failing_every == 0 {
            ItemResult::err("é".repeat(msg_len / 2))
        } else {
            ItemResult::ok()
        };
        disk.insert(format!("item-{i:04}"), r);
    }
    s
}

#[test]
fn a_small_summary_is_left_as_it_is() {
    let s = summary_with(5, 40, 2);
    assert_eq!(s.bounded(MAX_SUMMARY_BYTES), s);
}

#[test]
fn long_messages_are_cut_with_a_marker_to_fit_four_kib() {
    let s = summary_with(6, 3000, 2);
    let b = s.bounded(MAX_SUMMARY_BYTES);
    assert!(b.to_yaml().len() <= MAX_SUMMARY_BYTES);
    assert_eq!(b.categories["disk"].len(), 6, "no item is lost");
    let msg = b.categories["disk"]["item-0000"].err.as_deref().unwrap();
    assert!(msg.ends_with(CUT_MARKER));
    assert!(msg.starts_with("éé"));
    assert_eq!(b.failed().count(), 3);
}

#[test]
fn very_many_items_are_folded_but_failures_stay_visible() {
    let s = summary_with(400, 10, 2);
    let b = s.bounded(MAX_SUMMARY_BYTES);
    assert!(
        b.to_yaml().len() <= MAX_SUMMARY_BYTES,
        "{}",
        b.to_yaml().len()
    );
    assert!(b.categories["disk"].contains_key("(200 healthy items omitted)"));
    assert!(b.failed().count() > 1, "failed items are kept or counted");
    assert!(b.categories["disk"]
        .keys()
        .any(|k| k.ends_with("failed items omitted)")));
}

#[test]
fn a_lone_failure_of_another_source_outlasts_many_of_one() {
    let mut s = NodeSummary {
        run_at: "2026-11-22T06:00:00Z".into(),
        finished_at: "2026-11-22T06:00:07Z".into(),
        ..Default::default()
    };
    let net = s.categories.entry("net".into()).or_default();
    for i in 0..140 {
        net.insert(
            format!("counters:veth{i:03}"),
            ItemResult::err("rx+tx errors 1234 over 100"),
        );
    }
    s.categories
        .entry("svc".into())
        .or_default()
        .insert("systemd".into(), ItemResult::err("timeout after 60s"));
    let source = |_: &str, item: &str| item.split(':').next().unwrap_or_default().to_string();
    for b in [
        s.bounded_by(MAX_SUMMARY_BYTES, source),
        s.bounded(MAX_SUMMARY_BYTES),
    ] {
        assert!(b.to_yaml().len() <= MAX_SUMMARY_BYTES);
        assert_eq!(
            b.categories["svc"]["systemd"],
            ItemResult::err("timeout after 60s"),
            "the distinct failure is kept"
        );
        let kept = b.categories["net"]
            .keys()
            .filter(|k| k.starts_with("counters:"))
            .count();
        assert!(kept > 0, "some of the many are kept too");
        assert!(
            b.categories["net"].contains_key(&format!("({} failed items omitted)", 140 - kept)),
            "{:?}",
            b.categories["net"].keys().collect::<Vec<_>>()
        );
    }
}

#[test]
fn failures_go_round_robin_over_their_sources() {
    let mut s = NodeSummary {
        run_at: "2026-11-22T06:00:00Z".into(),
        ..Default::default()
    };
    let disk = s.categories.entry("disk".into()).or_default();
    for i in 0..100 {
        disk.insert(format!("a-{i:03}"), ItemResult::err("x".repeat(20)));
    }
    for i in 0..3 {
        disk.insert(format!("b-{i}"), ItemResult::err("y".repeat(20)));
    }
    let b = s.bounded_by(1000, |_, item: &str| item.as_bytes()[0]);
    let kept_b = b.categories["disk"]
        .keys()
        .filter(|k| k.starts_with("b-"))
        .count();
    let kept_a = b.categories["disk"]
        .keys()
        .filter(|k| k.starts_with("a-"))
        .count();
    assert_eq!(kept_b, 3, "the small source is kept whole");
    assert!(kept_a >= 3, "{kept_a}");
    assert!(
        b.categories["disk"].contains_key("a-000"),
        "each source keeps its first"
    );
}

#[test]
fn a_skipped_item_is_neither_healthy_nor_failed_and_old_values_parse_unchanged() {
    let yaml = r#"
runAt: "2026-11-22T06:00:00Z"
disk:
  sda: {}
  smart/sdb:
    skip: "smartctl not installed"
  sdc:
    err: "disk full"
"#;
    let s = NodeSummary::from_yaml(yaml).unwrap();
    let disk = &s.categories["disk"];
    assert!(disk["sda"].is_healthy());
    assert_eq!(
        disk["smart/sdb"],
        ItemResult::skip("smartctl not installed")
    );
    assert!(disk["smart/sdb"].is_skipped() && !disk["smart/sdb"].is_healthy());
    assert_eq!(
        s.skipped().collect::<Vec<_>>(),
        vec![("disk", "smart/sdb", "smartctl not installed")]
    );
    assert_eq!(s.failed().count(), 1, "a skip is not a failure");
    assert!(s
        .to_yaml()
        .contains("smart/sdb:\n    skip: smartctl not installed\n"));
    assert!(s.to_yaml().contains("sda: {}"), "no skip key when absent");
    let json = serde_json::to_value(&disk["smart/sdb"]).unwrap();
    assert_eq!(json, serde_json::json!({"skip": "smartctl not installed"}));
    let old: ItemResult = serde_json::from_str(r#"{"err": "x"}"#).unwrap();
    assert_eq!(old, ItemResult::err("x"));
    assert_eq!(
        NodeSummary::from_yaml("runAt: x\n").unwrap().skipped_items,
        None
    );
}

#[test]
fn an_item_with_both_err_and_skip_counts_as_failed() {
    let r = ItemResult {
        err: Some("broken".into()),
        skip: Some("no tool".into()),
    };
    assert_eq!(r.verdict(), Verdict::Failed);
    assert_eq!(r.skip_reason(), None);
    assert!(Verdict::Failed > Verdict::Skipped && Verdict::Skipped > Verdict::Healthy);
}

/// 100 healthy, 100 skipped and 10 failed items in `disk`.
fn mixed() -> NodeSummary {
    let mut s = NodeSummary {
        run_at: "2026-11-22T06:00:00Z".into(),
        ..Default::default()
    };
    let disk = s.categories.entry("disk".into()).or_default();
    for i in 0..100 {
        disk.insert(format!("ok-{i:03}"), ItemResult::ok());
        disk.insert(format!("skip-{i:03}"), ItemResult::skip("no host access"));
    }
    for i in 0..10 {
        disk.insert(format!("fail-{i}"), ItemResult::err("broken"));
    }
    s
}

#[test]
fn healthy_items_are_folded_before_skipped_ones_and_failures_stay() {
    let s = mixed();
    let healthy_folded = s.bounded(4500);
    let disk = &healthy_folded.categories["disk"];
    assert!(disk.contains_key("(100 healthy items omitted)"));
    assert_eq!(
        healthy_folded.skipped().count(),
        100,
        "skips stay while folding healthy items is enough"
    );
    assert_eq!(healthy_folded.failed().count(), 10);

    let both_folded = s.bounded(700);
    assert!(both_folded.to_yaml().len() <= 700);
    let disk = &both_folded.categories["disk"];
    assert_eq!(
        disk["(100 skipped items omitted)"],
        ItemResult::skip(OMITTED),
        "folded skips stay skipped"
    );
    assert_eq!(both_folded.failed().count(), 10, "every failure is kept");
}

#[test]
fn failures_are_the_last_to_go() {
    let b = mixed().bounded(300);
    assert!(b.to_yaml().len() <= 300, "{}", b.to_yaml());
    let disk = &b.categories["disk"];
    assert!(disk.contains_key("(100 healthy items omitted)"));
    assert!(disk.contains_key("(100 skipped items omitted)"));
    assert!(disk.keys().any(|k| k.ends_with("failed items omitted)")));
    assert!(disk.contains_key("fail-0"), "the first failure is kept");
}

#[test]
fn long_skip_reasons_are_cut_like_err_messages() {
    let mut s = summary_with(4, 10, 2);
    s.categories
        .get_mut("disk")
        .unwrap()
        .insert("skip-long".into(), ItemResult::skip("r".repeat(9000)));
    let b = s.bounded(MAX_SUMMARY_BYTES);
    let reason = b.categories["disk"]["skip-long"].skip.as_deref().unwrap();
    assert!(reason.ends_with(CUT_MARKER), "{reason}");
}

#[test]
fn cutting_respects_utf8_boundaries_and_never_marks_twice() {
    let mut m = "ab".to_string() + &"é".repeat(10);
    cut(&mut m, 5);
    assert_eq!(m, format!("abé{CUT_MARKER}"));
    cut(&mut m, 5);
    assert_eq!(m, format!("abé{CUT_MARKER}"));
}

/// `healthy` healthy items and `failed` failed ones of `msg_len`-byte
/// messages in `disk`, like a node where one script reported very many
/// healthy items and a few others failed.
fn many_healthy_and_some_failed(healthy: usize, failed: usize, msg_len: usize) -> NodeSummary {
    let mut s = NodeSummary {
        run_at: "2026-11-22T06:00:00Z".into(),
        finished_at: "2026-11-22T06:00:07Z".into(),
        ..Default::default()
    };
    let disk = s.categories.entry("disk".into()).or_default();
    for i in 0..healthy {
        disk.insert(format!("big/line-{i:05}"), ItemResult::ok());
    }
    for i in 0..failed {
        disk.insert(format!("fail-{i}"), ItemResult::err("m".repeat(msg_len)));
    }
    s
}

#[test]
fn healthy_items_are_folded_before_messages_are_cut_below_512_bytes() {
    let s = many_healthy_and_some_failed(1001, 7, 150);
    let b = s.bounded(3072);
    assert!(b.to_yaml().len() <= 3072, "{}", b.to_yaml().len());
    let disk = &b.categories["disk"];
    assert!(
        disk.contains_key("(1001 healthy items omitted)"),
        "{disk:?}"
    );
    for i in 0..7 {
        assert_eq!(
            disk[&format!("fail-{i}")].err.as_deref(),
            Some("m".repeat(150).as_str()),
            "the room the healthy items left holds the whole message"
        );
    }
}

#[test]
fn messages_over_512_bytes_are_cut_before_healthy_items_are_folded() {
    let mut s = many_healthy_and_some_failed(5, 1, 10);
    s.categories
        .get_mut("disk")
        .unwrap()
        .insert("long".into(), ItemResult::err("x".repeat(10_000)));
    let b = s.bounded(3072);
    let disk = &b.categories["disk"];
    assert_eq!(disk.len(), 7, "every healthy item is still named: {disk:?}");
    assert_eq!(
        disk["long"].err.as_deref(),
        Some(format!("{}{CUT_MARKER}", "x".repeat(FIRST_MESSAGE_LIMIT)).as_str())
    );
}

#[test]
fn skip_reasons_are_cut_before_healthy_items_are_folded() {
    // 40 healthy items, one failure and 12 skips with 200-byte reasons:
    // over 3072 bytes whole, under it with the reasons at 64 bytes.
    let mut s = many_healthy_and_some_failed(40, 1, 300);
    let svc = s.categories.entry("svc".into()).or_default();
    for i in 0..12 {
        svc.insert(format!("skipped-{i}"), ItemResult::skip("s".repeat(200)));
    }
    assert!(s.to_yaml().len() > 3072);
    let b = s.bounded(3072);
    assert!(b.to_yaml().len() <= 3072, "{}", b.to_yaml().len());
    assert_eq!(b.categories["disk"].len(), 41, "every healthy item named");
    assert_eq!(
        b.categories["disk"]["fail-0"].err.as_deref(),
        Some("m".repeat(300).as_str()),
        "the err message is not cut for skip reasons"
    );
    for (_, item, why) in b.skipped() {
        let body = why.strip_suffix(CUT_MARKER).expect("cut");
        assert!(
            (SKIP_REASON_LIMIT..200).contains(&body.len()),
            "{item}: {why}"
        );
    }
}

#[test]
fn skip_reasons_get_their_room_back_once_healthy_items_are_folded() {
    let mut s = many_healthy_and_some_failed(1000, 1, 100);
    let reason = "r".repeat(100);
    s.categories
        .get_mut("disk")
        .unwrap()
        .insert("big/output".into(), ItemResult::skip(reason.clone()));
    let b = s.bounded(3072);
    let disk = &b.categories["disk"];
    assert!(
        disk.contains_key("(1000 healthy items omitted)"),
        "{disk:?}"
    );
    assert_eq!(disk["big/output"].skip_reason(), Some(reason.as_str()));
    assert_eq!(
        disk["fail-0"].err.as_deref(),
        Some("m".repeat(100).as_str())
    );
}

#[test]
fn messages_are_cut_to_the_longest_length_that_fits() {
    let b = many_healthy_and_some_failed(500, 20, 400).bounded(3072);
    let yaml = b.to_yaml().len();
    assert!(yaml <= 3072, "{yaml}");
    assert!(b.categories["disk"].contains_key("(500 healthy items omitted)"));
    let lengths: BTreeSet<usize> = b
        .failed()
        .map(|(_, _, msg)| msg.strip_suffix(CUT_MARKER).expect("cut").len())
        .collect();
    assert_eq!(lengths.len(), 1, "one length for all: {lengths:?}");
    let len = *lengths.first().unwrap();
    assert!(len > 64 && len < 160, "{len}");
    // One byte more for each of the 20 messages would not fit.
    assert!(yaml + 20 > 3072, "{yaml} bytes with messages of {len}");
}

#[test]
fn a_message_is_never_cut_below_the_shortest_limit() {
    let b = many_healthy_and_some_failed(0, 300, 100).bounded(3072);
    assert!(b.to_yaml().len() <= 3072);
    assert_eq!(SHORTEST_MESSAGE, 24);
    for (_, item, msg) in b.failed() {
        let body = msg.strip_suffix(CUT_MARKER).unwrap_or(msg);
        if !item.ends_with("failed items omitted)") {
            assert_eq!(body.len(), SHORTEST_MESSAGE, "{item}: {msg}");
        }
    }
    assert!(b.categories["disk"]
        .keys()
        .any(|k| k.ends_with("failed items omitted)")));
}

#[test]
fn the_output_item_of_lines_past_the_limit_stands_for_their_err_lines() {
    let msg = untaken_message(19_000, 3, 2, 1000);
    assert_eq!(
        msg,
        "19000 err, 3 skip and 2 ok lines past the limit of 1000 item lines were not taken"
    );
    assert_eq!(
        failures_of("big/output", &ItemResult::err(msg.clone())),
        19_000
    );
    let mut short = msg.clone();
    cut(&mut short, SHORTEST_MESSAGE);
    assert_eq!(
        failures_of("big/output", &ItemResult::err(short)),
        19_000,
        "the count survives the shortest cut"
    );
    assert_eq!(failures_of("big/other", &ItemResult::err(msg.clone())), 1);
    assert_eq!(
        failures_of(
            "big/output",
            &ItemResult::err("output not in the script format: 2 lines")
        ),
        1
    );
    assert_eq!(failures_of("big/output", &ItemResult::skip(msg.clone())), 0);
    assert_eq!(failures_of("sda", &ItemResult::ok()), 0);

    let mut s = many_healthy_and_some_failed(3, 2, 10);
    s.categories
        .get_mut("disk")
        .unwrap()
        .insert("big/output".into(), ItemResult::err(msg));
    assert_eq!(s.failed().count(), 3);
    assert_eq!(s.failed_count(), 19_002);
}

#[test]
fn an_omitted_row_counts_the_failures_it_stands_for() {
    assert_eq!(omitted_failures("(229 failed items omitted)"), Some(229));
    for other in [
        "(229 healthy items omitted)",
        "(x failed items omitted)",
        "sda",
        "(229 failed items omitted) ",
    ] {
        assert_eq!(omitted_failures(other), None, "{other}");
    }
    assert_eq!(
        failures_of("(229 failed items omitted)", &ItemResult::err(OMITTED)),
        229
    );
    // The issue's value: 147 failures listed and 229 left out count 376,
    // not 148.
    let mut s = many_healthy_and_some_failed(0, 147, 10);
    s.categories.get_mut("disk").unwrap().insert(
        "(229 failed items omitted)".into(),
        ItemResult::err(OMITTED),
    );
    assert_eq!(s.failed_count(), 376);
    // A value bounded to fit counts as many failures as the whole.
    let whole = many_healthy_and_some_failed(50, 300, 40);
    let bounded = whole.bounded(4000);
    assert!(bounded.failed().count() < 300, "some were left out");
    assert_eq!(bounded.failed_count(), whole.failed_count());
}

/// A value of one category holding `n` failed items `fail-<i>` and the
/// items given.
fn failing(n: usize, more: &[(&str, ItemResult)]) -> NodeSummary {
    let mut s = NodeSummary {
        run_at: "2026-11-22T06:00:00Z".into(),
        ..NodeSummary::default()
    };
    let items = s.categories.entry("custom".into()).or_default();
    for i in 0..n {
        items.insert(
            format!("fail-{i:04}"),
            ItemResult::err(format!("failure number {i} of a long list")),
        );
    }
    for (item, r) in more {
        items.insert((*item).into(), r.clone());
    }
    s
}

#[test]
fn bounding_again_adds_the_dropped_failures_to_the_omitted_row_already_there() {
    let once = failing(400, &[]).bounded(8000);
    assert_eq!(once.failed_count(), 400);
    assert!(once.categories["custom"]
        .keys()
        .any(|k| omitted_failures(k).is_some()));
    let twice = once.bounded(2000);
    assert!(twice.to_yaml().len() <= 2000);
    assert_eq!(
        twice.failed_count(),
        400,
        "{:?}",
        twice.categories["custom"].keys().collect::<Vec<_>>()
    );
}

#[test]
fn a_scripts_output_item_for_one_untaken_err_line_outlasts_the_listed_failures() {
    let late = ItemResult::err(untaken_message(1, 0, 18999, 1000));
    let s = failing(300, &[("late/output", late)]).bounded(3000);
    assert!(s.to_yaml().len() <= 3000);
    assert!(
        s.categories["custom"].contains_key("late/output"),
        "{:?}",
        s.categories["custom"].keys().collect::<Vec<_>>()
    );
    assert_eq!(s.failed_count(), 301);
}
