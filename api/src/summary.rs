//! The per-node summary (SPEC §4): the YAML value of one node's key in the
//! summary ConfigMap, and what `combo-runner --once --output yaml` prints.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One node's result of one run.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct NodeSummary {
    /// Scheduled time of the run (RFC 3339, UTC).
    pub run_at: String,
    /// When the run finished (RFC 3339, UTC).
    #[serde(default)]
    pub finished_at: String,
    /// category -> item -> result.
    #[serde(flatten)]
    pub categories: BTreeMap<String, BTreeMap<String, ItemResult>>,
}

/// The result of one item; healthy when `err` is absent.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct ItemResult {
    /// What failed.
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
}
