//! The two tables of `kubectl combo history`, pure: a row per node and
//! item over its last runs ([`timeline_rows`]), and one item's verdicts
//! run by run ([`item_rows`]), with the words they print for a verdict,
//! a change and a node without a history.

use combo_api::history::{History, ABSENT, FAILED, HISTORY_RUNS, OK, SKIPPED};

use super::{streak_at, Nodes};

/// A verdict of the history in words.
pub fn verdict_words(c: char) -> &'static str {
    match c {
        OK => "healthy",
        FAILED => "failed",
        SKIPPED => "skipped",
        ABSENT => "not reported",
        _ => "unknown",
    }
}

/// The row's text of a report without a history.
pub const NO_HISTORY: &str = "(no history: runner too old)";

/// The row's text of a node whose history lists no item, over `runs` runs.
pub fn no_failure(runs: usize) -> String {
    let s = if runs == 1 { "" } else { "s" };
    format!("(no failure in the last {runs} run{s})")
}

/// Header of [`timeline_rows`].
pub const TIMELINE_HEADER: [&str; 5] = ["NODE", "ITEM", "LAST-RUNS", "FAILING", "FLIPS"];

/// One row per node and item its history lists: the verdicts, oldest
/// first, whether it fails now and since when, and how often it flipped
/// between failing and not. A node without a history, or whose history
/// lists no item, has one row saying so; one whose history left items out
/// to fit, a row counting them.
pub fn timeline_rows(nodes: &Nodes) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for (node, r) in nodes {
        let h = &r.history;
        let row = |item: String, runs: String, failing: String, flips: String| {
            vec![node.clone(), item, runs, failing, flips]
        };
        let dash = || "-".to_string();
        if h.is_empty() {
            rows.push(row(NO_HISTORY.into(), dash(), dash(), dash()));
            continue;
        }
        if h.items.is_empty() && h.omitted == 0 {
            rows.push(row(no_failure(h.runs.len()), dash(), dash(), dash()));
        }
        let latest = h.runs.last().map(String::as_str).unwrap_or_default();
        for (key, item) in &h.items {
            let failing = match streak_at(h, key, latest) {
                Some(s) => match &s.since {
                    Some(since) => format!("for {} since {since}", s.runs_text()),
                    None => format!("for {}", s.runs_text()),
                },
                None => "no".into(),
            };
            let flips = h.flips(key).to_string();
            rows.push(row(key.clone(), item.verdicts.clone(), failing, flips));
        }
        if h.omitted > 0 {
            let omitted = format!("({} items omitted to fit)", h.omitted);
            rows.push(row(omitted, dash(), dash(), dash()));
        }
    }
    rows
}

/// Header of [`item_rows`].
pub const ITEM_HEADER: [&str; 5] = ["NODE", "ITEM", "RUN-AT", "VERDICT", "CHANGE"];

/// Run by run, oldest first, item `key`'s verdict on each node, marking
/// the runs where a streak of failures started and where it cleared. A
/// node whose history does not list the item has one row saying why.
pub fn item_rows(nodes: &Nodes, keys: &[String]) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for (node, r) in nodes {
        let h = &r.history;
        for key in keys {
            let row = |run: &str, verdict: &str, change: String| {
                vec![
                    node.clone(),
                    key.clone(),
                    run.into(),
                    verdict.into(),
                    change,
                ]
            };
            let Some(item) = h.items.get(key) else {
                let why = if h.is_empty() {
                    NO_HISTORY.to_string()
                } else if h.omitted > 0 {
                    format!(
                        "(not listed: no failure, or among the {} omitted)",
                        h.omitted
                    )
                } else {
                    no_failure(h.runs.len())
                };
                rows.push(row("-", &why, String::new()));
                continue;
            };
            let verdicts: Vec<char> = item.verdicts.chars().collect();
            for (i, run) in h.runs.iter().enumerate() {
                let v = verdicts.get(i).copied().unwrap_or(ABSENT);
                let before = i.checked_sub(1).and_then(|b| verdicts.get(b).copied());
                rows.push(row(run, verdict_words(v), change(h, key, v, before)));
            }
        }
    }
    rows
}

/// What changed in a run of item `key`: verdict `v` after `before`, the
/// verdict of the run before if one is listed.
fn change(h: &History, key: &str, v: char, before: Option<char>) -> String {
    match (before, v) {
        (Some(FAILED), FAILED) => String::new(),
        (Some(FAILED), _) => "cleared".into(),
        (Some(_), FAILED) => "started failing".into(),
        (None, FAILED) => first_failed(h, key),
        _ => String::new(),
    }
}

/// The change at the first run listed, which item `key` failed: where its
/// streak started, as far as the history tells.
fn first_failed(h: &History, key: &str) -> String {
    let Some(item) = h.items.get(key) else {
        return String::new();
    };
    let current = item.verdicts.chars().all(|c| c == FAILED);
    if current && !item.failing_since.is_empty() {
        if Some(&item.failing_since) == h.runs.first() {
            return "started failing".into();
        }
        return format!("failing since {}", item.failing_since);
    }
    if h.runs.len() >= HISTORY_RUNS {
        // The runs before it were dropped from a full history.
        "failing since an earlier run".into()
    } else {
        // The history starts with this run: it records the item as
        // failing from there, as `failingSince` would.
        "started failing".into()
    }
}
