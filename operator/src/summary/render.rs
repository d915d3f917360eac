//! The summary ConfigMap as the operator writes it: one key per node, owned
//! by its Debugger, stamped with the hash of its whole data
//! (docs/operator.md, "Reports, summary and status").

use std::collections::BTreeMap;

use combo_api::{keys, Debugger};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;

use crate::core::spec_hash::stamped;

/// The summary ConfigMap with `data` (one key per node, from
/// [`crate::reports::aggregate::summary_data`]). Every write of the operator carries
/// the whole data, so its field manager owns every key and a key left out
/// is removed. The spec hash covers the data too.
pub fn summary_config_map(dbg: &Debugger, data: BTreeMap<String, String>) -> ConfigMap {
    let name = dbg.metadata.name.clone().unwrap_or_default();
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some(dbg.spec.summary_name(&name)),
            namespace: dbg.metadata.namespace.clone(),
            labels: Some(keys::workload_labels(&name)),
            owner_references: dbg.controller_owner_ref(&()).map(|o| vec![o]),
            ..ObjectMeta::default()
        },
        data: Some(data),
        ..ConfigMap::default()
    };
    stamped(cm, |c| &mut c.metadata)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::spec_hash::spec_hash_of;
    use combo_testkit::fixtures::debugger;

    #[test]
    fn summary_config_map_is_owned_and_its_hash_covers_the_data() {
        let data = |v: &str| BTreeMap::from([("node-1".to_string(), v.to_string())]);
        let cm = summary_config_map(&debugger("ops", "node-check").build(), data("runAt: a\n"));
        assert_eq!(cm.metadata.name.as_deref(), Some("node-check-summary"));
        assert_eq!(cm.data.as_ref().unwrap()["node-1"], "runAt: a\n");
        assert_eq!(
            cm.metadata.owner_references.clone().unwrap()[0].controller,
            Some(true)
        );
        let other = summary_config_map(&debugger("ops", "node-check").build(), data("runAt: b\n"));
        assert_ne!(spec_hash_of(&cm.metadata), spec_hash_of(&other.metadata));
        let named = summary_config_map(
            &debugger("ops", "node-check")
                .summary_config_map("results")
                .build(),
            BTreeMap::new(),
        );
        assert_eq!(named.metadata.name.as_deref(), Some("results"));
    }
}
