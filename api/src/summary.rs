//! The per-node summary (docs/runner.md, "Reports: the summary ConfigMap"):
//! the YAML value of one node's key in the summary ConfigMap, and what
//! `combo-runner --once --output yaml` prints.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

mod bound;

/// One node's result of one run.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct NodeSummary {
    /// Scheduled time of the run (RFC 3339, UTC).
    pub run_at: String,
    /// When the node started the run (RFC 3339, UTC), present only when that
    /// is not `runAt`: a run-now request, or a pod that was not there at the
    /// scheduled time.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub started_at: String,
    /// When the run finished (RFC 3339, UTC).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub finished_at: String,
    /// The hash of the scripts the run executed; empty from a runner that
    /// does not tell (docs/runner.md, "Which scripts a run used").
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub scripts: String,
    /// Healthy items, when they are counted instead of listed (a shortened
    /// value in a large summary ConfigMap).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub healthy_items: Option<u32>,
    /// Failed items, when not all of them are listed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_items: Option<u32>,
    /// Skipped items, when not all of them are listed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped_items: Option<u32>,
    /// The DebuggerReport holding this node's whole result, when the value
    /// is shortened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<String>,
    /// category -> item -> result.
    #[serde(flatten)]
    pub categories: BTreeMap<String, BTreeMap<String, ItemResult>>,
}

/// The result of one item: failed when `err` is present, skipped when
/// `skip` is (the check could not run here), healthy when neither is.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct ItemResult {
    /// What failed; absent when the item did not fail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub err: Option<String>,
    /// Why the item was not checked (what the check needs and the pod
    /// lacks); absent when it was checked. Never healthy, never failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip: Option<String>,
}

/// How an item ended, worst last: the order in which one result of an item
/// wins over another of the same item.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    /// Checked and fine.
    Healthy,
    /// Not checked.
    Skipped,
    /// Checked and wrong.
    Failed,
}

impl ItemResult {
    /// A healthy item.
    pub fn ok() -> Self {
        ItemResult::default()
    }

    /// A failed item.
    pub fn err(msg: impl Into<String>) -> Self {
        ItemResult {
            err: Some(msg.into()),
            skip: None,
        }
    }

    /// An item that was not checked, and why.
    pub fn skip(reason: impl Into<String>) -> Self {
        ItemResult {
            err: None,
            skip: Some(reason.into()),
        }
    }

    /// Failed when it has an err, else skipped when it has a skip reason,
    /// else healthy.
    pub fn verdict(&self) -> Verdict {
        match (&self.err, &self.skip) {
            (Some(_), _) => Verdict::Failed,
            (None, Some(_)) => Verdict::Skipped,
            (None, None) => Verdict::Healthy,
        }
    }

    /// Neither failed nor skipped.
    pub fn is_healthy(&self) -> bool {
        self.verdict() == Verdict::Healthy
    }

    /// Skipped and not failed.
    pub fn is_skipped(&self) -> bool {
        self.verdict() == Verdict::Skipped
    }

    /// Why it was skipped, when it was skipped and did not fail.
    pub fn skip_reason(&self) -> Option<&str> {
        match self.err {
            Some(_) => None,
            None => self.skip.as_deref(),
        }
    }
}

impl NodeSummary {
    /// Items with an error, as (category, item, message), in order.
    pub fn failed(&self) -> impl Iterator<Item = (&str, &str, &str)> {
        self.categories.iter().flat_map(|(c, items)| {
            items
                .iter()
                .filter_map(move |(i, r)| r.err.as_deref().map(|e| (c.as_str(), i.as_str(), e)))
        })
    }

    /// Items skipped (and not failed), as (category, item, reason), in order.
    pub fn skipped(&self) -> impl Iterator<Item = (&str, &str, &str)> {
        self.categories.iter().flat_map(|(c, items)| {
            items
                .iter()
                .filter_map(move |(i, r)| r.skip_reason().map(|s| (c.as_str(), i.as_str(), s)))
        })
    }

    /// How many items failed, counting the `err` lines a script printed
    /// past the runner's limit (see [`failures_of`]); at least
    /// [`NodeSummary::failed_items`] when that is set.
    pub fn failed_count(&self) -> usize {
        let listed: usize = self
            .categories
            .values()
            .flat_map(|items| items.iter())
            .map(|(i, r)| failures_of(i, r) as usize)
            .sum();
        listed.max(self.failed_items.unwrap_or(0) as usize)
    }

    /// Parses a ConfigMap value.
    pub fn from_yaml(s: &str) -> Result<NodeSummary, serde_yaml::Error> {
        serde_yaml::from_str(s)
    }

    /// Renders the ConfigMap value.
    pub fn to_yaml(&self) -> String {
        serde_yaml::to_string(self).expect("a summary is always representable as YAML")
    }
}

/// Largest size of one node's summary value in bytes (under 4 KiB: docs/runner.md, "Reports: the summary ConfigMap").
pub const MAX_SUMMARY_BYTES: usize = 4000;

/// Appended to an err message that was shortened to fit the size limit.
pub const CUT_MARKER: &str = " [cut]";

/// Longest err messages and skip reasons are cut to first, before anything
/// else gives way: 512 bytes say what broke, and the names of healthy items
/// are worth more than a message's bytes beyond them.
pub const FIRST_MESSAGE_LIMIT: usize = 512;

/// Shortest skip reasons are cut to before healthy items are folded: the
/// first 64 bytes say why an item could not be checked (the runner's log
/// has the whole reason), and the names of healthy items say what was.
pub const SKIP_REASON_LIMIT: usize = 64;

/// The shortest an err message or skip reason is cut to (plus
/// [`CUT_MARKER`]); below it failed items are left out instead.
pub const SHORTEST_MESSAGE: usize = 24;

/// Name (after `<script>/`) of the item that tells what of a script's
/// stdout the runner did not take as items (docs/runner.md, "Scripts").
pub const OUTPUT_ITEM: &str = "output";

/// The message of a script's `<script>/output` item when some of its item
/// lines were past the runner's `limit` of item lines: how many of each
/// kind were not taken. The err count comes first, so that a message cut
/// to [`SHORTEST_MESSAGE`] still says it (see [`failures_of`]).
pub fn untaken_message(err: u64, skip: u64, ok: u64, limit: usize) -> String {
    format!(
        "{err} err, {skip} skip and {ok} ok lines past the limit of {limit} item lines were not taken"
    )
}

/// How many failed items the item `item` with result `r` stands for: a
/// script's `<script>/output` item whose lines were past the limit (see
/// [`untaken_message`]) stands for the `err` lines among them, and an
/// item `(N failed items omitted)` of a shortened value for its N (see
/// [`omitted_failures`]), so failures that were not listed are never
/// counted as fewer; any other failed item for one, and an item that did
/// not fail for none.
pub fn failures_of(item: &str, r: &ItemResult) -> u32 {
    let Some(msg) = r.err.as_deref() else {
        return 0;
    };
    if let Some(n) = omitted_failures(item) {
        return n.max(1);
    }
    untaken_failures(item, msg).map_or(1, |n| n.max(1))
}

/// The `err` lines past the runner's limit that the item `item` with err
/// message `msg` stands for, when it is a script's `<script>/output` item
/// saying so (see [`untaken_message`]); `None` for any other item.
pub fn untaken_failures(item: &str, msg: &str) -> Option<u32> {
    item.rsplit_once('/')
        .filter(|(_, name)| *name == OUTPUT_ITEM)
        .and_then(|_| msg.split_once(" err, "))
        .and_then(|(n, _)| n.parse::<u32>().ok())
}

/// `N` of the item `(N failed items omitted)` that a shortened value
/// holds instead of the failed items it left out (see
/// [`NodeSummary::bounded`]); `None` for any other item name.
pub fn omitted_failures(item: &str) -> Option<u32> {
    item.strip_prefix('(')?
        .strip_suffix(" failed items omitted)")?
        .parse()
        .ok()
}

/// Err message or skip reason of the item that stands for failed or
/// skipped items left out to fit.
pub const OMITTED: &str = "omitted to keep the summary under the size limit";

/// Shortens `msg` to at most `limit` bytes plus [`CUT_MARKER`], on a char
/// boundary; a message already cut is not marked twice.
pub fn cut(msg: &mut String, limit: usize) {
    let body = msg.strip_suffix(CUT_MARKER).unwrap_or(msg).len();
    if body <= limit {
        return;
    }
    let mut end = limit;
    while !msg.is_char_boundary(end) {
        end -= 1;
    }
    msg.truncate(end);
    msg.push_str(CUT_MARKER);
}

#[cfg(test)]
#[path = "summary_tests.rs"]
mod tests;
