//! What a node's report keeps of each of its categories: the first failed
//! item (what the node conditions read), the names of the first failing
//! items (what the per-item metric shows) and, from the report's history,
//! the category's streaks. Pure.

use std::collections::BTreeMap;
use std::sync::Arc;

use combo_api::history::History;
use combo_api::summary::{omitted_failures, ItemResult, FIRST_MESSAGE_LIMIT};

/// Failing items of a category a node's report keeps by name, the first
/// in name order: each is one series of `combo_operator_node_problem`,
/// and the rest are counted in one more
/// (docs/operator.md, "Results as metrics"). With 5, a node whose whole
/// category fails (every disk of a host, every unit) has 6 series in it,
/// and a Debugger on 5,000 nodes failing in every category at most
/// 150,000; a node's first few names are what a page of an alert shows.
pub const PROBLEMS_PER_CATEGORY: usize = 5;

/// A failed item as the operator keeps it, its message cut to
/// [`FIRST_MESSAGE_LIMIT`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// Its category.
    pub category: Box<str>,
    /// Its name.
    pub item: Box<str>,
    /// Its err message.
    pub message: Box<str>,
}

/// What a node's report keeps of one category.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CategoryReport {
    /// The category's name.
    pub name: Box<str>,
    /// Its first failed item (a named one before a `(N failed items
    /// omitted)`), if any.
    pub first: Option<Failure>,
    /// Its first [`PROBLEMS_PER_CATEGORY`] failed items by name, in name
    /// order; a `(N failed items omitted)` is never one of them (its
    /// items are counted with the rest). Shared with the results of every
    /// reconcile, which do not copy the names.
    pub failing: Arc<[Box<str>]>,
    /// Consecutive latest runs with a failed item of the category and
    /// without one, from the report's history; `None` without a history.
    pub streaks: Option<(u32, u32)>,
}

impl CategoryReport {
    /// Category `name` of a report, holding `items`; `history` is the
    /// report's (empty when it has none).
    pub fn of(name: &str, items: &BTreeMap<String, ItemResult>, history: &History) -> Self {
        let failed = items
            .iter()
            .filter_map(|(i, r)| Some((name, i.as_str(), r.err.as_deref()?)));
        let first = failed
            .clone()
            .find(|(_, i, _)| !is_stand_in(i))
            .or_else(|| failed.clone().next());
        let failing = failed
            .filter(|(_, i, _)| omitted_failures(i).is_none())
            .take(PROBLEMS_PER_CATEGORY)
            .map(|(_, i, _)| i.into())
            .collect();
        let streaks = (!history.is_empty()).then(|| {
            let (fail, ok) = history.category_streaks(name);
            (fail as u32, ok as u32)
        });
        CategoryReport {
            name: name.into(),
            first: first.map(failure),
            failing,
            streaks,
        }
    }
}

/// A failed item (category, item, message) as the operator keeps it.
pub fn failure((category, item, message): (&str, &str, &str)) -> Failure {
    let mut message = message.to_string();
    combo_api::summary::cut(&mut message, FIRST_MESSAGE_LIMIT);
    Failure {
        category: category.into(),
        item: item.into(),
        message: message.into(),
    }
}

/// Whether `item` is the `(N failed items omitted)` of a cut report.
fn is_stand_in(item: &str) -> bool {
    item.starts_with('(') && item.ends_with(" failed items omitted)")
}
