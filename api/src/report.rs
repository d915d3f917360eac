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
use crate::summary::{ItemResult, NodeSummary};

/// One node's result of the latest run of a Debugger.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "kubecombo.io",
    version = "v1",
    kind = "DebuggerReport",
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
    /// When the node finished the run (RFC 3339, UTC).
    #[serde(default)]
    pub finished_at: String,
    /// Items with an error in the run, counting those left out of
    /// `categories` to keep the report small.
    #[serde(default)]
    pub failed_items: u32,
    /// Items the run skipped (their check could not run on this node),
    /// counting those left out of `categories` to keep the report small.
    #[serde(default)]
    pub skipped_items: u32,
    /// Category -> item -> result; an item with `err` failed, one with
    /// `skip` was skipped, any other is healthy. Long messages end with
    /// ` [cut]`; items left out are counted in items named
    /// `(N healthy items omitted)`, `(N skipped items omitted)` or
    /// `(N failed items omitted)`. A null item is healthy.
    #[serde(default, deserialize_with = "null_items_are_healthy")]
    #[schemars(schema_with = "nullable_items")]
    pub categories: BTreeMap<String, BTreeMap<String, ItemResult>>,
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
/// counts), so that the whole object, metadata included, stays under 4 KiB.
pub const MAX_REPORT_RESULT_BYTES: usize = 3072;

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
    /// every failed and skipped item of the full result.
    pub fn of(debugger: &str, node: &str, result: &NodeSummary) -> DebuggerReportSpec {
        Self::of_by(debugger, node, result, |_, _| ())
    }

    /// [`DebuggerReportSpec::of`], cut with [`NodeSummary::bounded_by`]:
    /// failed items are kept round-robin over their category and
    /// `source(category, item)`.
    pub fn of_by<K: Ord>(
        debugger: &str,
        node: &str,
        result: &NodeSummary,
        source: impl Fn(&str, &str) -> K,
    ) -> DebuggerReportSpec {
        let bounded = result.bounded_by(MAX_REPORT_RESULT_BYTES, source);
        DebuggerReportSpec {
            debugger: debugger.to_string(),
            node: node.to_string(),
            run_at: bounded.run_at,
            finished_at: bounded.finished_at,
            failed_items: result.failed().count() as u32,
            skipped_items: result.skipped().count() as u32,
            categories: bounded.categories,
        }
    }

    /// The result as a summary value, in the summary ConfigMap's format.
    pub fn summary(&self) -> NodeSummary {
        NodeSummary {
            run_at: self.run_at.clone(),
            finished_at: self.finished_at.clone(),
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
                        counts.failed += omitted_count(name, "failed").unwrap_or(1);
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
mod tests {
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
}
