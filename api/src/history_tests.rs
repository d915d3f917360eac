use super::*;
use crate::summary::{ItemResult, NodeSummary};

fn run(at: &str, items: &[(&str, &str, Option<&str>)]) -> NodeSummary {
    let mut s = NodeSummary {
        run_at: at.to_string(),
        ..NodeSummary::default()
    };
    for (cat, item, err) in items {
        let r = match err {
            Some(e) => ItemResult::err(*e),
            None => ItemResult::ok(),
        };
        s.categories
            .entry(cat.to_string())
            .or_default()
            .insert(item.to_string(), r);
    }
    s
}

fn t(i: usize) -> String {
    format!("2026-12-02T{:02}:{:02}:00Z", i / 60, i % 60)
}

#[test]
fn lists_only_items_that_failed_and_aligns_their_verdicts() {
    let mut h = History::default();
    h = h.next(&run(&t(0), &[("disk", "a", None), ("disk", "b", None)]));
    assert!(h.items.is_empty());
    assert_eq!(h.runs, vec![t(0)]);
    h = h.next(&run(
        &t(1),
        &[("disk", "a", Some("full")), ("disk", "b", None)],
    ));
    h = h.next(&run(
        &t(2),
        &[("disk", "a", Some("full")), ("disk", "b", None)],
    ));
    assert_eq!(h.verdicts("disk/a"), "oxx");
    assert_eq!(h.verdicts("disk/b"), "ooo");
    assert_eq!(h.items["disk/a"].failing_since, t(1));
    assert_eq!(h.failing_runs("disk/a"), 2);
    assert_eq!(h.changes(), vec![]);
    h = h.next(&run(&t(3), &[("disk", "b", None)]));
    assert_eq!(h.verdicts("disk/a"), "oxx-");
    assert_eq!(h.items["disk/a"].failing_since, "");
    assert_eq!(h.changes(), vec![("disk/a", Change::Recovered)]);
    assert_eq!(h.flips("disk/a"), 2);
}

#[test]
fn keeps_twenty_runs_and_forgets_an_item_whose_failures_left_the_window() {
    let mut h = History::default();
    h = h.next(&run(&t(0), &[("mem", "oom", Some("killed"))]));
    assert_eq!(h.changes(), vec![("mem/oom", Change::Failed)]);
    for i in 1..HISTORY_RUNS {
        h = h.next(&run(&t(i), &[("mem", "oom", None)]));
    }
    assert_eq!(h.runs.len(), HISTORY_RUNS);
    assert_eq!(h.verdicts("mem/oom").len(), HISTORY_RUNS);
    assert!(h.items.contains_key("mem/oom"));
    h = h.next(&run(&t(HISTORY_RUNS), &[("mem", "oom", None)]));
    assert_eq!(h.runs.len(), HISTORY_RUNS);
    assert_eq!(h.runs[0], t(1));
    assert!(!h.items.contains_key("mem/oom"));
}

#[test]
fn the_streak_start_survives_the_window() {
    let mut h = History::default();
    for i in 0..HISTORY_RUNS + 5 {
        h = h.next(&run(&t(i), &[("net", "dns", Some("timeout"))]));
    }
    assert_eq!(h.failing_runs("net/dns"), HISTORY_RUNS);
    assert_eq!(h.items["net/dns"].failing_since, t(0));
}

#[test]
fn the_same_run_again_replaces_its_verdicts() {
    let mut h = History::default();
    h = h.next(&run(&t(0), &[("svc", "kubelet", None)]));
    h = h.next(&run(&t(1), &[("svc", "kubelet", Some("down"))]));
    h = h.next(&run(&t(1), &[("svc", "kubelet", None)]));
    assert_eq!(h.runs, vec![t(0), t(1)]);
    assert!(h.items.is_empty(), "{h:?}");
}

#[test]
fn category_streaks_count_runs_with_any_failed_item() {
    let mut h = History::default();
    h = h.next(&run(&t(0), &[("disk", "a", Some("x"))]));
    h = h.next(&run(&t(1), &[("disk", "b", Some("y"))]));
    h = h.next(&run(&t(2), &[("disk", "a", Some("x"))]));
    assert_eq!(h.category_streaks("disk"), (3, 0));
    assert_eq!(h.category_streaks("net"), (0, 3));
    h = h.next(&run(&t(3), &[]));
    assert_eq!(h.category_streaks("disk"), (0, 1));
}

#[test]
fn stand_ins_are_not_items_and_a_big_history_is_bounded() {
    let mut h = History::default();
    let names: Vec<String> = (0..400)
        .map(|i| format!("item-with-a-long-name-{i:03}"))
        .collect();
    let mut items: Vec<(&str, &str, Option<&str>)> = names
        .iter()
        .map(|n| ("disk", n.as_str(), Some("e")))
        .collect();
    items.push(("disk", "(7 failed items omitted)", Some("e")));
    h = h.next(&run(&t(0), &items));
    assert!(h.size() <= MAX_HISTORY_BYTES);
    assert!(!h.items.keys().any(|k| k.contains("omitted")));
    assert_eq!(h.items.len() + h.omitted as usize, 400);
    // The first names are kept, the last left out.
    assert!(h.items.contains_key("disk/item-with-a-long-name-000"));
    assert!(!h.items.contains_key("disk/item-with-a-long-name-399"));
}

#[test]
fn bounding_drops_recovered_items_before_failing_ones() {
    let mut h = History::default();
    let names: Vec<String> = (0..200)
        .map(|i| format!("an-item-name-of-some-length-{i:03}"))
        .collect();
    let all: Vec<(&str, &str, Option<&str>)> = names
        .iter()
        .map(|n| ("net", n.as_str(), Some("e")))
        .collect();
    h = h.next(&run(&t(0), &all));
    let failing: Vec<(&str, &str, Option<&str>)> = vec![("net", names[199].as_str(), Some("e"))];
    h = h.next(&run(&t(1), &failing));
    assert!(h.items.contains_key(&format!("net/{}", names[199])));
    assert!(h.size() <= MAX_HISTORY_BYTES);
}

#[test]
fn yaml_round_trip() {
    let h = History::default().next(&run(&t(0), &[("disk", "a", Some("x"))]));
    let y = serde_yaml::to_string(&h).unwrap();
    let back: History = serde_yaml::from_str(&y).unwrap();
    assert_eq!(back, h);
    assert_eq!(split("disk/smart/sda"), ("disk", "smart/sda"));
}
