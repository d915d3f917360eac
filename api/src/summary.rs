//! The per-node summary (docs/runner.md, "Reports: the summary ConfigMap"):
//! the YAML value of one node's key in the summary ConfigMap, and what
//! `combo-runner --once --output yaml` prints.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One node's result of one run.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct NodeSummary {
    /// Scheduled time of the run (RFC 3339, UTC).
    pub run_at: String,
    /// When the run finished (RFC 3339, UTC).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub finished_at: String,
    /// Healthy items, when they are counted instead of listed (a shortened
    /// value in a large summary ConfigMap).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub healthy_items: Option<u32>,
    /// Failed items, when not all of them are listed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_items: Option<u32>,
    /// The DebuggerReport holding this node's whole result, when the value
    /// is shortened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<String>,
    /// category -> item -> result.
    #[serde(flatten)]
    pub categories: BTreeMap<String, BTreeMap<String, ItemResult>>,
}

/// The result of one item; healthy when `err` is absent.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct ItemResult {
    /// What failed; absent when the item is healthy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub err: Option<String>,
}

impl ItemResult {
    /// A healthy item.
    pub fn ok() -> Self {
        ItemResult { err: None }
    }

    /// A failed item.
    pub fn err(msg: impl Into<String>) -> Self {
        ItemResult {
            err: Some(msg.into()),
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

/// Longest err messages are cut to, in turn, until the summary fits.
const MESSAGE_LIMITS: [usize; 4] = [512, 160, 64, 24];

impl NodeSummary {
    /// This summary made to fit in `max` bytes of YAML.
    ///
    /// Long err messages are cut first (ending with [`CUT_MARKER`]), shorter
    /// and shorter. If that is not enough, healthy items are folded into one
    /// item `(N healthy items omitted)` per category, and as a last resort
    /// failed items beyond what fits become one item
    /// `(N failed items omitted)` that still carries an err, so a reader
    /// never mistakes a cut summary for a healthy one.
    pub fn bounded(&self, max: usize) -> NodeSummary {
        if self.to_yaml().len() <= max {
            return self.clone();
        }
        let mut s = self.clone();
        for limit in MESSAGE_LIMITS {
            s.cut_messages(limit);
            if s.to_yaml().len() <= max {
                return s;
            }
        }
        for items in s.categories.values_mut() {
            let healthy: Vec<String> = items
                .iter()
                .filter(|(_, r)| r.err.is_none())
                .map(|(k, _)| k.clone())
                .collect();
            if healthy.len() > 1 {
                for k in &healthy {
                    items.remove(k);
                }
                items.insert(
                    format!("({} healthy items omitted)", healthy.len()),
                    ItemResult::ok(),
                );
            }
        }
        if s.to_yaml().len() <= max {
            return s;
        }
        // Drop failed items from the end, one at a time, until it fits.
        let mut omitted = 0usize;
        while s.to_yaml().len() > max {
            let last = s.categories.iter().rev().find_map(|(c, items)| {
                items
                    .iter()
                    .rev()
                    .find(|(k, r)| r.err.is_some() && !k.starts_with('('))
                    .map(|(k, _)| (c.clone(), k.clone()))
            });
            let Some((cat, item)) = last else { break };
            s.categories.get_mut(&cat).map(|items| items.remove(&item));
            omitted += 1;
            let items = s.categories.entry(cat).or_default();
            items.retain(|k, _| !k.ends_with("failed items omitted)"));
            items.insert(
                format!("({omitted} failed items omitted)"),
                ItemResult::err("omitted to keep the summary under the size limit"),
            );
        }
        s
    }

    fn cut_messages(&mut self, limit: usize) {
        for items in self.categories.values_mut() {
            for r in items.values_mut() {
                if let Some(msg) = r.err.as_mut() {
                    cut(msg, limit);
                }
            }
        }
    }
}

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
mod tests {
    use super::*;

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
    fn cutting_respects_utf8_boundaries_and_never_marks_twice() {
        let mut m = "ab".to_string() + &"é".repeat(10);
        cut(&mut m, 5);
        assert_eq!(m, format!("abé{CUT_MARKER}"));
        cut(&mut m, 5);
        assert_eq!(m, format!("abé{CUT_MARKER}"));
    }
}
