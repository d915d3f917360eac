//! Results: what a Debugger's reports say per category and per node, and
//! how many nodes missed a run, for the operator's metrics. Pure
//! (docs/operator.md#results-as-metrics).
//!
//! Each node counts with its latest report, whatever run it is of: a node
//! that failed and has not reported since is still failing as far as
//! anyone knows, and it also counts as missing the run it did not report.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use combo_api::Category;

use crate::reports::aggregate::NodeReport;
#[cfg(doc)]
use crate::reports::missed;

/// One category's results over a Debugger's nodes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CategoryResults {
    /// Failed items over all nodes.
    pub failed_items: u32,
    /// Skipped items over all nodes.
    pub skipped_items: u32,
    /// The nodes with a failed item in this category, and how many.
    pub failing: BTreeMap<String, u32>,
    /// The failing nodes' first failed items by name (at most
    /// [`PROBLEMS_PER_CATEGORY`](crate::reports::aggregate::PROBLEMS_PER_CATEGORY)
    /// each, shared with their reports); those past them are counted in
    /// `failing` only.
    pub problems: BTreeMap<String, Arc<[Box<str>]>>,
}

impl CategoryResults {
    /// The failing items of `node` by name and how many more of its items
    /// fail (see [`NodeReport::problems`]).
    pub fn problems_of(&self, node: &str) -> (&[Box<str>], u32) {
        let named = self.problems.get(node).map_or(&[][..], |p| &p[..]);
        let failed = self.failing.get(node).copied().unwrap_or_default();
        (named, failed.saturating_sub(named.len() as u32))
    }
}

/// A Debugger's results, from its nodes' latest reports.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Results {
    /// The categories the Debugger runs, each present even when healthy.
    pub categories: BTreeMap<&'static str, CategoryResults>,
    /// Each reporting node's latest run (its `runAt`), oldest first.
    pub node_runs: Vec<DateTime<Utc>>,
    /// Reporting nodes whose `runAt` does not parse.
    pub undated: usize,
}

impl Results {
    /// How many nodes reported.
    pub fn nodes(&self) -> usize {
        self.node_runs.len() + self.undated
    }

    /// The newest run any node reported.
    pub fn last_run(&self) -> Option<DateTime<Utc>> {
        self.node_runs.last().copied()
    }
}

/// The results of `reports` for the `categories` a Debugger runs. Items of
/// other categories are not counted: the runner reports only these, and
/// a category name no runner writes must not grow the metrics.
pub fn of<'a>(
    reports: impl IntoIterator<Item = &'a NodeReport>,
    categories: &[Category],
) -> Results {
    let mut out = Results {
        categories: categories
            .iter()
            .map(|c| (c.as_str(), CategoryResults::default()))
            .collect(),
        node_runs: Vec::new(),
        undated: 0,
    };
    for report in reports {
        let spec = &report.spec;
        match DateTime::parse_from_rfc3339(&spec.run_at) {
            Ok(t) => out.node_runs.push(t.to_utc()),
            Err(_) => out.undated += 1,
        }
        for (cat, counts) in &report.counts {
            let Some(results) = out.categories.get_mut(cat.as_str()) else {
                continue;
            };
            results.failed_items += counts.failed;
            results.skipped_items += counts.skipped;
            if counts.failed > 0 {
                results.failing.insert(spec.node.clone(), counts.failed);
                let (named, _) = report.problems(cat);
                if !named.is_empty() {
                    results.problems.insert(spec.node.clone(), named);
                }
            }
        }
    }
    out.node_runs.sort();
    out
}

/// How many nodes missed `run`: those whose latest run is older, or has a
/// `runAt` that does not parse (the nodes [`missed::missed_by`] names).
pub fn missed(results: &Results, run: Option<DateTime<Utc>>) -> usize {
    let Some(run) = run else { return 0 };
    results.undated + results.node_runs.partition_point(|t| *t < run)
}

#[cfg(test)]
#[path = "results_tests.rs"]
mod tests;
