//! The `DebuggerReport` custom resource: one node's result of its latest
//! run, written only by that node's runner (docs/reference.md, "DebuggerReport").
//!
//! The operator reads the reports of a Debugger and is the only writer of
//! its summary ConfigMap and status, so no object is written by more than
//! one runner and a run on N nodes costs N small writes of N objects.

use std::collections::BTreeMap;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::hash::fnv1a_hex;
use crate::history::History;
use crate::summary::{ItemResult, NodeSummary};

/// One node's result of the latest run of a Debugger.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "kubecombo.io",
    version = "v1",
    kind = "DebuggerReport",
    doc = "A DebuggerReport is one node's result of the latest run of a Debugger, written by the runner on that node; the operator folds them into the Debugger's summary.",
    namespaced,
    shortname = "dbgr",
    printcolumn = r#"{"name":"NODE","type":"string","jsonPath":".spec.node"}"#,
    printcolumn = r#"{"name":"RUN","type":"string","jsonPath":".spec.runAt"}"#,
    printcolumn = r#"{"name":"FAILED","type":"integer","jsonPath":".spec.failedItems"}"#,
    printcolumn = r#"{"name":"SKIPPED","type":"integer","jsonPath":".spec.skippedItems"}"#,
    printcolumn = r#"{"name":"FINISHED","type":"string","jsonPath":".spec.finishedAt"}"#,
    printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct DebuggerReportSpec {
    /// The Debugger this report belongs to.
    pub debugger: String,
    /// The node whose result this is.
    pub node: String,
    /// Scheduled time of the run (RFC 3339, UTC).
    pub run_at: String,
    /// When the node started the run (RFC 3339, UTC), present only when that
    /// is not `runAt`: a run-now request, or a pod that was not there at the
    /// scheduled time.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub started_at: String,
    /// When the node finished the run (RFC 3339, UTC).
    #[serde(default)]
    pub finished_at: String,
    /// A hash (12 hex digits) of the scripts the run executed: nodes with
    /// the same value ran the same scripts. Absent from a runner that does
    /// not tell.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub scripts: String,
    /// Items with an error in the run, counting those left out of
    /// `categories` to keep the report small.
    #[serde(default)]
    pub failed_items: u32,
    /// Items the run skipped (their check could not run on this node),
    /// counting those left out of `categories` to keep the report small.
    #[serde(default)]
    pub skipped_items: u32,
    /// Category -> item -> result; an item with `err` failed, one with
    /// `skip` was skipped, any other (or null) is healthy. Long messages
    /// end with ` [cut]`; items left out are counted in `(N ... omitted)`.
    #[serde(default, deserialize_with = "null_items_are_healthy")]
    #[schemars(schema_with = "nullable_items")]
    pub categories: BTreeMap<String, BTreeMap<String, ItemResult>>,
    /// The node's verdict of each item over its last 20 runs, for items
    /// that failed in one of them
    /// (docs/reference.md, "DebuggerReport history").
    /// Absent from a runner that does not keep one.
    #[serde(default, skip_serializing_if = "History::is_empty")]
    pub history: History,
}

type Items = BTreeMap<String, BTreeMap<String, ItemResult>>;

/// The API server stores a healthy item as null when a server-side apply
/// takes the last field out of it (an item skipped in one run, `{}` in the
/// next): the schema accepts that null and reading takes it as healthy
/// (docs/testing.md, "Fault matrix on real nodes").
fn null_items_are_healthy<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Items, D::Error> {
    let raw = BTreeMap::<String, BTreeMap<String, Option<ItemResult>>>::deserialize(d)?;
    Ok(raw
        .into_iter()
        .map(|(cat, items)| {
            let items = items
                .into_iter()
                .map(|(item, r)| (item, r.unwrap_or_default()))
                .collect();
            (cat, items)
        })
        .collect())
}

/// The schema of `categories`, its items nullable (see [`null_items_are_healthy`]).
fn nullable_items(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let mut item = generator.subschema_for::<ItemResult>();
    item.insert("nullable".into(), true.into());
    schemars::json_schema!({
        "type": "object",
        "additionalProperties": {"type": "object", "additionalProperties": item},
    })
}

/// Largest size of a report's YAML result (its categories, run times and
/// counts): 16 KiB. A node with 150 items (names of 48 bytes) and 30
/// failures with messages of 160 bytes takes 13,424 bytes, so every item
/// of such a node is listed with room to spare; its object, managedFields
/// included, is about 22 KB without a history, and the history (6 KiB of
/// items, about 12 KB as JSON) keeps every report under 64 KiB, far under
/// etcd's 1.5 MiB (docs/runner.md, "Reports: the summary ConfigMap").
pub const MAX_REPORT_RESULT_BYTES: usize = 16 * 1024;

/// The shortest a report cuts err messages to before it folds any item:
/// 160 bytes keep the start of a kernel line and the device it names
/// (docs/runner.md, "Reports: the summary ConfigMap").
pub const MIN_REPORT_MESSAGE: usize = 160;

/// Longest object name Kubernetes takes (a DNS subdomain).
pub(crate) const MAX_NAME: usize = 253;
/// Longest label value.
const MAX_LABEL_VALUE: usize = 63;
/// Hex digits of the hash that ends a shortened name or label value.
const HASH_DIGITS: usize = 10;

/// Name of the report of `debugger` on `node`: `<debugger>.<node>`.
///
/// Both parts are DNS subdomains, so the join is one too unless it is
/// longer than 253 characters; then it is cut to 242 characters (dots and
/// dashes at the cut removed) and ends with `-` and 10 hex digits of the
/// FNV-1a hash of the full name, so distinct long names stay distinct.
pub fn report_name(debugger: &str, node: &str) -> String {
    shortened(&format!("{debugger}.{node}"), MAX_NAME)
}

/// Value of label `kubecombo.io/node` for `node`: the name itself when it
/// fits a label value (63 characters), else shortened as [`report_name`].
pub fn node_label_value(node: &str) -> String {
    shortened(node, MAX_LABEL_VALUE)
}

/// `full` when it is at most `max` bytes long, else cut and ended with `-`
/// and 10 hex digits of its FNV-1a hash, as [`report_name`] describes.
pub(crate) fn shortened(full: &str, max: usize) -> String {
    if full.len() <= max {
        return full.to_string();
    }
    let hash = fnv1a_hex(full.as_bytes());
    let mut end = max - HASH_DIGITS - 1;
    while !full.is_char_boundary(end) {
        end -= 1;
    }
    let head = full[..end].trim_end_matches(['.', '-']);
    format!("{head}-{}", &hash[..HASH_DIGITS])
}

impl DebuggerReportSpec {
    /// The report of `node` for `debugger` holding `result`, cut to
    /// [`MAX_REPORT_RESULT_BYTES`]; `failedItems` and `skippedItems` count
    /// every failed and skipped item of the full result, `failedItems` with
    /// [`NodeSummary::failed_count`].
    pub fn of(debugger: &str, node: &str, result: &NodeSummary) -> DebuggerReportSpec {
        Self::of_by(debugger, node, result, |_, _| ())
    }

    /// [`DebuggerReportSpec::of`], cut with
    /// [`NodeSummary::bounded_keeping_items_by`]: messages are cut down to
    /// [`MIN_REPORT_MESSAGE`] before items are folded, and failed items are
    /// kept round-robin over their category and `source(category, item)`.
    pub fn of_by<K: Ord>(
        debugger: &str,
        node: &str,
        result: &NodeSummary,
        source: impl Fn(&str, &str) -> K,
    ) -> DebuggerReportSpec {
        let bounded =
            result.bounded_keeping_items_by(MAX_REPORT_RESULT_BYTES, MIN_REPORT_MESSAGE, source);
        DebuggerReportSpec {
            debugger: debugger.to_string(),
            node: node.to_string(),
            run_at: bounded.run_at,
            started_at: bounded.started_at,
            finished_at: bounded.finished_at,
            scripts: bounded.scripts,
            failed_items: result.failed_count() as u32,
            skipped_items: result.skipped().count() as u32,
            categories: bounded.categories,
            history: History::default(),
        }
    }

    /// The spec with `history` as its history.
    pub fn with_history(mut self, history: History) -> DebuggerReportSpec {
        self.history = history;
        self
    }

    /// The result as a summary value, in the summary ConfigMap's format.
    pub fn summary(&self) -> NodeSummary {
        NodeSummary {
            run_at: self.run_at.clone(),
            started_at: self.started_at.clone(),
            finished_at: self.finished_at.clone(),
            scripts: self.scripts.clone(),
            categories: self.categories.clone(),
            ..NodeSummary::default()
        }
    }

    /// Items of the result that are healthy, neither failed nor skipped
    /// (omitted ones counted).
    pub fn healthy_items(&self) -> u32 {
        self.categories
            .values()
            .flat_map(|items| items.iter())
            .filter(|(_, r)| r.is_healthy())
            .map(|(name, _)| omitted_count(name, "healthy").unwrap_or(1))
            .sum()
    }

    /// Failed and skipped items of each category of the result, those left
    /// out to keep the report small counted (`(N failed items omitted)`,
    /// `(N skipped items omitted)`).
    pub fn category_counts(&self) -> BTreeMap<&str, ItemCounts> {
        self.categories
            .iter()
            .map(|(cat, items)| {
                let mut counts = ItemCounts::default();
                for (name, r) in items {
                    if r.err.is_some() {
                        counts.failed += omitted_count(name, "failed")
                            .unwrap_or_else(|| crate::summary::failures_of(name, r));
                    } else if r.is_skipped() {
                        counts.skipped += omitted_count(name, "skipped").unwrap_or(1);
                    }
                }
                (cat.as_str(), counts)
            })
            .collect()
    }
}

/// Failed and skipped items of one category of a result.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ItemCounts {
    /// Items with an error.
    pub failed: u32,
    /// Items skipped (and not failed).
    pub skipped: u32,
}

/// `N` of an item named `(N <verdict> items omitted)`.
fn omitted_count(item: &str, verdict: &str) -> Option<u32> {
    item.strip_prefix('(')?
        .strip_suffix(" items omitted)")?
        .strip_suffix(verdict)?
        .strip_suffix(' ')?
        .parse()
        .ok()
}

#[cfg(test)]
#[path = "report_tests.rs"]
mod tests;
