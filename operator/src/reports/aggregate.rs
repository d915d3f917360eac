//! Aggregate: the summary ConfigMap's data and the status's run fields,
//! computed from a Debugger's DebuggerReports. Pure.
//!
//! The ConfigMap keeps one key per node with the value format of
//! docs/reference.md, "Summary ConfigMap", and stays under
//! [`MAX_SUMMARY_BYTES`] at any node count up to 5,000: when the full
//! values do not fit, [`summary_data`] shortens them step by step (see
//! [`Level`]), and a shortened value names the DebuggerReport that holds
//! the whole result.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use combo_api::report::ItemCounts;
use combo_api::summary::{ItemResult, NodeSummary};
use combo_api::DebuggerReportSpec;

mod category;
pub use category::{CategoryReport, Failure, PROBLEMS_PER_CATEGORY};

/// Largest size of one node's value
/// (docs/runner.md, "Reports: the summary ConfigMap").
pub use combo_api::summary::MAX_SUMMARY_BYTES as MAX_VALUE_BYTES;

/// Largest size of a summary ConfigMap as stored, metadata included.
pub const MAX_SUMMARY_BYTES: usize = 900 * 1024;
/// Stored bytes of a ConfigMap besides its data: metadata, labels, owner,
/// annotations and the fixed part of managedFields.
const FIXED_BYTES: usize = 4096;
/// Stored bytes per key besides key and value: the key again in
/// managedFields (`"f:<key>":{}`, counted with the key) and framing.
const PER_KEY_BYTES: usize = 16;
/// Failed items a node keeps listed from [`Level::FirstFailures`] on.
pub const FIRST_FAILURES: usize = 3;
/// Messages are cut to this many bytes from [`Level::FirstFailure`] on.
const SHORT_MESSAGE: usize = 64;

/// One node's report, as the operator keeps it.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeReport {
    /// The DebuggerReport's name.
    pub name: String,
    /// Its spec without its items: `categories` is empty; `full` holds
    /// them as far as a value holds them.
    pub spec: DebuggerReportSpec,
    /// The report's categories in name order, each with its first failed
    /// item (what the node conditions read), its first failing items by
    /// name (what the per-item metric shows) and its streaks from the
    /// report's history (the history itself is not kept: up to 6 KiB a
    /// node).
    categories: Box<[CategoryReport]>,
    /// The report's first [`FIRST_FAILURES`] failed items, in order: what
    /// a shortened value lists. Past these and `categories`, the items are
    /// kept only in `full`: a report lists up to 150 items of a node, and
    /// at 5,000 nodes their names and messages would be most of what the
    /// operator holds.
    first_failures: Box<[Failure]>,
    /// The node's value at full length: the result as a summary value
    /// within [`MAX_VALUE_BYTES`], naming the report when it had to be
    /// shortened, rendered once when the report arrives (every summary
    /// write reuses it). `None` once the report index let it go: only
    /// values a summary can hold are kept (see [`NodeReport::without_full`]).
    pub full: Option<String>,
    /// Failed and skipped items per category with any, counted once when
    /// the report arrives (the metrics of every reconcile reuse them).
    pub counts: Box<[(String, ItemCounts)]>,
    /// Healthy items, omitted ones counted, as
    /// [`DebuggerReportSpec::healthy_items`].
    healthy: u32,
    /// The run-now request the node ran last (its report's annotation
    /// `kubecombo.io/run-now-done`).
    run_now: Option<Box<str>>,
}

impl NodeReport {
    /// The report `name` holding `spec`. Its items are kept by name in
    /// `full` only (bounded), besides the few failed ones the shortened
    /// values and the node conditions name.
    pub fn new(name: String, mut spec: DebuggerReportSpec) -> NodeReport {
        let result = spec.summary();
        let full = full_value(&name, &result);
        let first_failures = result
            .failed()
            .take(FIRST_FAILURES)
            .map(category::failure)
            .collect();
        let counts = spec
            .category_counts()
            .into_iter()
            .filter(|(_, c)| *c != ItemCounts::default())
            .map(|(cat, c)| (cat.to_string(), c))
            .collect();
        let healthy = spec.healthy_items();
        let history = std::mem::take(&mut spec.history);
        spec.categories.clear();
        let categories = result
            .categories
            .iter()
            .map(|(cat, items)| CategoryReport::of(cat, items, &history))
            .collect();
        NodeReport {
            name,
            spec,
            categories,
            first_failures,
            full: Some(full),
            counts,
            healthy,
            run_now: None,
        }
    }

    /// Consecutive latest runs of the node with a failed item of
    /// `category`, and without one (one of the two is 0), as the report's
    /// history counts them; `None` when the report has no history.
    pub fn category_streaks(&self, category: &str) -> Option<(u32, u32)> {
        self.category(category)?.streaks
    }

    fn category(&self, name: &str) -> Option<&CategoryReport> {
        self.categories.iter().find(|c| &*c.name == name)
    }

    /// The first [`PROBLEMS_PER_CATEGORY`] failing items of `category` by
    /// name, and how many more of its items fail (those the report left
    /// out counted): what `combo_operator_node_problem` shows.
    pub fn problems(&self, category: &str) -> (Arc<[Box<str>]>, u32) {
        let failing = self
            .category(category)
            .map_or_else(|| Arc::from([]), |c| c.failing.clone());
        let more = self
            .failed_in(category)
            .saturating_sub(failing.len() as u32);
        (failing, more)
    }

    /// The report, recording that its node ran the run-now request
    /// `run_now` last.
    pub fn with_run_now(mut self, run_now: Option<&str>) -> NodeReport {
        self.run_now = run_now.map(Into::into);
        self
    }

    /// The run-now request the node ran last, as the annotation wrote it.
    pub fn run_now(&self) -> Option<&str> {
        self.run_now.as_deref()
    }

    /// The node's value at full length ([`NodeReport::full`]) parsed,
    /// while it is kept.
    pub fn summary(&self) -> Option<NodeSummary> {
        let full = self.full.as_deref()?;
        Some(NodeSummary::from_yaml(full).expect("full is a rendered summary value"))
    }

    /// Bytes of the value at full length while it is kept, else 0.
    pub fn full_len(&self) -> usize {
        self.full.as_ref().map_or(0, String::len)
    }

    /// The report without its value at full length: no summary can hold it
    /// beside the other nodes' (docs/operator.md, "Memory"). Its summary
    /// value is then its first failures until its next report.
    pub fn without_full(mut self) -> NodeReport {
        self.full = None;
        self
    }

    /// The spec with the items of its full-length value put back, for
    /// tests that derive one report from another.
    #[cfg(test)]
    pub fn kept_spec(&self) -> DebuggerReportSpec {
        DebuggerReportSpec {
            categories: self.summary().expect("kept").categories,
            ..self.spec.clone()
        }
    }

    /// The first failed item of `category` (a named one before a
    /// `(N failed items omitted)`), `Some(None)` when none of its items
    /// failed, `None` when the report has no such category.
    pub fn first_failure(&self, category: &str) -> Option<Option<&Failure>> {
        self.category(category).map(|c| c.first.as_ref())
    }

    /// The report's first [`FIRST_FAILURES`] failed items, in order.
    pub fn first_failures(&self) -> &[Failure] {
        &self.first_failures
    }

    /// Failed items of `category`, those left out of the report counted.
    pub fn failed_in(&self, category: &str) -> u32 {
        self.counts
            .iter()
            .find(|(cat, _)| cat == category)
            .map_or(0, |(_, c)| c.failed)
    }

    /// Items of the result that are healthy, neither failed nor skipped
    /// (omitted ones counted).
    pub fn healthy_items(&self) -> u32 {
        self.healthy
    }

    fn healthy(&self) -> bool {
        self.spec.failed_items == 0
    }

    pub fn run_at(&self) -> Option<DateTime<Utc>> {
        Some(
            DateTime::parse_from_rfc3339(&self.spec.run_at)
                .ok()?
                .to_utc(),
        )
    }

    /// When the run ended; its scheduled time if that is unknown.
    pub fn finished_at(&self) -> Option<DateTime<Utc>> {
        DateTime::parse_from_rfc3339(&self.spec.finished_at)
            .ok()
            .map(|t| t.to_utc())
            .or_else(|| self.run_at())
    }
}

/// How far the values of a summary were shortened, in the order applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Every node's whole result.
    Full,
    /// Healthy nodes: `runAt`, `finishedAt` and `healthyItems` only.
    HealthyCounted,
    /// Failed nodes also list only their first [`FIRST_FAILURES`] failed
    /// items, with `failedItems`, `healthyItems` and `report`.
    FirstFailures,
    /// Failed nodes list only their first failed item, its message cut.
    FirstFailure,
    /// Every node: `runAt` and its counts.
    Counts,
    /// Even counts do not fit (only with node names far longer than usual):
    /// keys are left out, healthy nodes first; the count is returned.
    KeysOmitted(usize),
}

/// `result` as the value of report `name`'s node: whole when it fits in
/// [`MAX_VALUE_BYTES`], else bounded and folded
/// (docs/runner.md, "Reports: the summary ConfigMap"), with `report`
/// naming the report that lists every item.
fn full_value(name: &str, result: &NodeSummary) -> String {
    let mut full = result.to_yaml();
    if full.len() > MAX_VALUE_BYTES {
        let named = NodeSummary {
            report: Some(name.to_string()),
            ..NodeSummary::default()
        };
        // The room the `report` line takes, besides `runAt: ''`.
        let line = named.to_yaml().len() - NodeSummary::default().to_yaml().len();
        let mut bounded = result.bounded(MAX_VALUE_BYTES.saturating_sub(line));
        bounded.report = named.report;
        full = bounded.to_yaml();
    }
    full.shrink_to_fit();
    full
}

/// Stored size of `data` as a ConfigMap (an estimate that errs high).
pub fn stored_size(data: &BTreeMap<String, String>) -> usize {
    FIXED_BYTES
        + data
            .iter()
            .map(|(k, v)| 2 * k.len() + v.len() + PER_KEY_BYTES)
            .sum::<usize>()
}

/// The summary ConfigMap's data for `reports` (node -> report), within
/// [`MAX_SUMMARY_BYTES`], and how far it had to be shortened.
pub fn summary_data(
    reports: &BTreeMap<String, Arc<NodeReport>>,
) -> (BTreeMap<String, String>, Level) {
    summary_data_within(reports, MAX_SUMMARY_BYTES)
}

/// [`summary_data`] with a limit of `max` bytes.
pub fn summary_data_within(
    reports: &BTreeMap<String, Arc<NodeReport>>,
    max: usize,
) -> (BTreeMap<String, String>, Level) {
    let levels = [
        Level::Full,
        Level::HealthyCounted,
        Level::FirstFailures,
        Level::FirstFailure,
        Level::Counts,
    ];
    // One node's value at a level: the rendered full value where it
    // stands as it is (a level that needs one the index let go is not
    // taken: `size_at` has no size for it).
    fn full(r: &NodeReport, level: Level) -> Option<Option<&str>> {
        let stands =
            matches!(level, Level::Full) || matches!(level, Level::HealthyCounted) && !r.healthy();
        stands.then_some(r.full.as_deref())
    }
    let at = |r: &NodeReport, level: Level| -> String {
        match full(r, level) {
            Some(kept) => kept.unwrap_or_default().to_string(),
            None => value(r, level).to_yaml(),
        }
    };
    // Each level is measured one value at a time and built only when it
    // fits: at 5,000 nodes a level's values are megabytes, and building
    // each in turn held them all at once.
    let size_at = |level: Level| -> Option<usize> {
        let values = reports.iter().map(|(node, r)| {
            let len = match full(r, level) {
                Some(kept) => kept?.len(),
                None => at(r, level).len(),
            };
            Some(2 * node.len() + len + PER_KEY_BYTES)
        });
        Some(FIXED_BYTES + values.sum::<Option<usize>>()?)
    };
    let build = |level: Level| -> BTreeMap<String, String> {
        reports
            .iter()
            .map(|(node, r)| (node.clone(), at(r, level)))
            .collect()
    };
    for level in levels {
        if size_at(level).is_some_and(|size| size <= max) {
            return (build(level), level);
        }
    }
    let mut data = build(Level::Counts);
    // Healthy nodes' keys go first, then failed ones, from the end.
    let mut order: Vec<&String> = reports.keys().collect();
    order.sort_by_key(|n| (!reports[*n].healthy(), std::cmp::Reverse(*n)));
    let mut size = stored_size(&data);
    let mut omitted = 0;
    for node in order {
        if size <= max {
            break;
        }
        let v = data.remove(node).unwrap_or_default();
        size -= 2 * node.len() + v.len() + PER_KEY_BYTES;
        omitted += 1;
    }
    (data, Level::KeysOmitted(omitted))
}

/// The value of one node's key at `level`.
fn value(r: &NodeReport, level: Level) -> NodeSummary {
    let spec = &r.spec;
    let counted = |keep: usize, cut: Option<usize>| {
        let mut v = NodeSummary {
            run_at: spec.run_at.clone(),
            started_at: spec.started_at.clone(),
            finished_at: spec.finished_at.clone(),
            scripts: spec.scripts.clone(),
            healthy_items: Some(r.healthy_items()),
            failed_items: (spec.failed_items > 0).then_some(spec.failed_items),
            skipped_items: (spec.skipped_items > 0).then_some(spec.skipped_items),
            report: (spec.failed_items as usize > keep).then(|| r.name.clone()),
            ..NodeSummary::default()
        };
        for f in r.first_failures.iter().take(keep) {
            let mut msg = f.message.to_string();
            if let Some(limit) = cut {
                combo_api::summary::cut(&mut msg, limit);
            }
            v.categories
                .entry(f.category.to_string())
                .or_default()
                .insert(f.item.to_string(), ItemResult::err(msg));
        }
        v
    };
    match level {
        Level::Full => r.summary().unwrap_or_else(|| counted(FIRST_FAILURES, None)),
        Level::HealthyCounted | Level::FirstFailures | Level::FirstFailure if r.healthy() => {
            counted(0, None)
        }
        Level::HealthyCounted => r.summary().unwrap_or_else(|| counted(FIRST_FAILURES, None)),
        Level::FirstFailures => counted(FIRST_FAILURES, None),
        Level::FirstFailure => counted(1, Some(SHORT_MESSAGE)),
        Level::Counts | Level::KeysOmitted(_) => NodeSummary {
            run_at: spec.run_at.clone(),
            scripts: spec.scripts.clone(),
            healthy_items: Some(r.healthy_items()),
            failed_items: (spec.failed_items > 0).then_some(spec.failed_items),
            skipped_items: (spec.skipped_items > 0).then_some(spec.skipped_items),
            ..NodeSummary::default()
        },
    }
}

#[cfg(test)]
#[path = "aggregate_tests.rs"]
mod tests;
