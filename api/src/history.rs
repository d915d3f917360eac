//! History: a node's verdict of each item over its last runs, kept in its
//! DebuggerReport by the runner from run to run, so that it survives
//! restarts of the runner and of the operator (docs/reference.md,
//! "DebuggerReport history"). Pure.
//!
//! Only items with a failure in the window are listed: an item absent was
//! healthy, skipped or not run in every listed run. Each verdict string
//! has one character per run of `runs`, oldest first.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::summary::{ItemResult, NodeSummary};

/// Runs a history keeps.
pub const HISTORY_RUNS: usize = 20;
/// Largest size of a history's items (names, verdicts and streak starts)
/// in bytes; past it, items that do not fail now go first, then failing
/// ones from the end of the name order, counted in `omitted`.
pub const MAX_HISTORY_BYTES: usize = 6 * 1024;

/// The verdict of a healthy item.
pub const OK: char = 'o';
/// The verdict of a failed item.
pub const FAILED: char = 'x';
/// The verdict of a skipped item.
pub const SKIPPED: char = 's';
/// An item the run did not report.
pub const ABSENT: char = '-';

/// One item's verdicts.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ItemHistory {
    /// One character per run of the history's `runs`, oldest first: `o`
    /// healthy, `x` failed, `s` skipped, `-` not reported.
    pub verdicts: String,
    /// The `runAt` of the first run of the current streak of failures,
    /// while the item fails in the latest run; it may be older than the
    /// runs listed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub failing_since: String,
}

/// A node's verdicts per item over its last 20 runs.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct History {
    /// The `runAt` of each run, oldest first.
    #[serde(default)]
    pub runs: Vec<String>,
    /// `<category>/<item>` -> its verdicts, for items that failed in a
    /// listed run.
    #[serde(default)]
    pub items: BTreeMap<String, ItemHistory>,
    /// Items left out to keep the history within its bound of 6 KiB.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub omitted: u32,
}

impl History {
    /// Whether no run is listed.
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// How an item changed from the run before the latest to the latest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// It fails in the latest run and did not in the one before.
    Failed,
    /// It failed in the run before and does not in the latest.
    Recovered,
}

/// `<category>/<item>`, the key of an item in a history.
pub fn key(category: &str, item: &str) -> String {
    format!("{category}/{item}")
}

/// An item's key split into category and item.
pub fn split(key: &str) -> (&str, &str) {
    key.split_once('/').unwrap_or((key, ""))
}

fn verdict_of(r: &ItemResult) -> char {
    if r.err.is_some() {
        FAILED
    } else if r.is_skipped() {
        SKIPPED
    } else {
        OK
    }
}

/// Trailing characters of `verdicts` equal to `c`.
fn trailing(verdicts: &str, pred: impl Fn(char) -> bool) -> usize {
    verdicts.chars().rev().take_while(|c| pred(*c)).count()
}

impl History {
    /// The history after `result`, the node's latest run (its `runAt` is
    /// the run's id). A result of a run already listed replaces that
    /// run's verdicts. Stand-in items of a cut result (`(N failed items
    /// omitted)`) are not listed.
    pub fn next(&self, result: &NodeSummary) -> History {
        let mut runs = self.runs.clone();
        let mut items = self.items.clone();
        // A run listed again (a report rewritten for the same run) is
        // taken back before it is recorded anew.
        if runs.last() == Some(&result.run_at) {
            runs.pop();
            for h in items.values_mut() {
                h.verdicts.pop();
            }
        }
        runs.push(result.run_at.clone());
        let mut seen = BTreeMap::new();
        for (cat, entries) in &result.categories {
            for (item, r) in entries {
                if crate::summary::omitted_failures(item).is_some() {
                    continue;
                }
                seen.insert(key(cat, item), verdict_of(r));
            }
        }
        for (k, v) in &seen {
            if *v == FAILED && !items.contains_key(k) {
                let pad: String = std::iter::repeat_n(OK, runs.len() - 1).collect();
                items.insert(
                    k.clone(),
                    ItemHistory {
                        verdicts: pad,
                        failing_since: String::new(),
                    },
                );
            }
        }
        for (k, h) in items.iter_mut() {
            let v = seen.get(k).copied().unwrap_or(ABSENT);
            let was_failing = h.verdicts.ends_with(FAILED);
            h.verdicts.push(v);
            if v != FAILED {
                h.failing_since.clear();
            } else if !was_failing || h.failing_since.is_empty() {
                h.failing_since = result.run_at.clone();
            }
        }
        // Keep the last HISTORY_RUNS runs.
        let drop = runs.len().saturating_sub(HISTORY_RUNS);
        runs.drain(..drop);
        for h in items.values_mut() {
            let chars: Vec<char> = h.verdicts.chars().collect();
            let from = chars.len().saturating_sub(runs.len());
            h.verdicts = chars[from..].iter().collect();
        }
        items.retain(|_, h| h.verdicts.contains(FAILED));
        let mut out = History {
            runs,
            items,
            omitted: 0,
        };
        out.bound(MAX_HISTORY_BYTES);
        out
    }

    /// Bytes the items take, as [`MAX_HISTORY_BYTES`] counts them.
    pub fn size(&self) -> usize {
        self.items
            .iter()
            .map(|(k, h)| k.len() + h.verdicts.len() + h.failing_since.len() + 8)
            .sum()
    }

    /// Leaves items out until the rest take at most `max` bytes: those
    /// not failing now first, the longest ago failed first, then failing
    /// ones from the end of the name order.
    fn bound(&mut self, max: usize) {
        let mut size = self.size();
        if size <= max {
            return;
        }
        let mut order: Vec<(bool, usize, String)> = self
            .items
            .iter()
            .map(|(k, h)| {
                let failing = h.verdicts.ends_with(FAILED);
                // Runs since its last failure: more goes first.
                let since = trailing(&h.verdicts, |c| c != FAILED);
                (failing, usize::MAX - since, k.clone())
            })
            .collect();
        order.sort_by(|a, b| {
            (a.0, a.1)
                .cmp(&(b.0, b.1))
                .then_with(|| if a.0 { b.2.cmp(&a.2) } else { a.2.cmp(&b.2) })
        });
        for (_, _, k) in order {
            if size <= max {
                break;
            }
            if let Some(h) = self.items.remove(&k) {
                size -= k.len() + h.verdicts.len() + h.failing_since.len() + 8;
                self.omitted += 1;
            }
        }
    }

    /// The verdicts of item `key`: all healthy (or absent) when it is not
    /// listed.
    pub fn verdicts(&self, key: &str) -> String {
        match self.items.get(key) {
            Some(h) => h.verdicts.clone(),
            None => std::iter::repeat_n(OK, self.runs.len()).collect(),
        }
    }

    /// Consecutive latest runs in which item `key` failed.
    pub fn failing_runs(&self, key: &str) -> usize {
        self.items
            .get(key)
            .map_or(0, |h| trailing(&h.verdicts, |c| c == FAILED))
    }

    /// Changes between verdicts of an item, failing to not or back, over
    /// the runs listed.
    pub fn flips(&self, key: &str) -> usize {
        let Some(h) = self.items.get(key) else {
            return 0;
        };
        let failed: Vec<bool> = h.verdicts.chars().map(|c| c == FAILED).collect();
        failed.windows(2).filter(|w| w[0] != w[1]).count()
    }

    /// Consecutive latest runs with a failed item of `category`, and
    /// consecutive latest runs without one (one of the two is 0; both
    /// when no run is listed).
    pub fn category_streaks(&self, category: &str) -> (usize, usize) {
        let prefix = format!("{category}/");
        let mut failed = vec![false; self.runs.len()];
        for (k, h) in &self.items {
            if !k.starts_with(&prefix) {
                continue;
            }
            for (i, c) in h.verdicts.chars().enumerate() {
                if c == FAILED && i < failed.len() {
                    failed[i] = true;
                }
            }
        }
        let fail = failed.iter().rev().take_while(|f| **f).count();
        let ok = failed.iter().rev().take_while(|f| !**f).count();
        (fail, ok)
    }

    /// The items whose verdict changed between the run before the latest
    /// and the latest, in key order. An item first seen failing in the
    /// only run listed is [`Change::Failed`].
    pub fn changes(&self) -> Vec<(&str, Change)> {
        self.items
            .iter()
            .filter_map(|(k, h)| {
                let mut rev = h.verdicts.chars().rev();
                let last = rev.next()? == FAILED;
                let before = rev.next().is_some_and(|c| c == FAILED);
                match (before, last) {
                    (false, true) => Some((k.as_str(), Change::Failed)),
                    (true, false) => Some((k.as_str(), Change::Recovered)),
                    _ => None,
                }
            })
            .collect()
    }
}

#[cfg(test)]
#[path = "history_tests.rs"]
mod tests;
