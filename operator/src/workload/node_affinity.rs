//! The node a `pod` Debugger names (`spec.nodeName`), as node affinity:
//! a required `matchFields` term on `metadata.name`, as the DaemonSet
//! controller pins its pods, so that the scheduler places the pod and a
//! node that does not exist leaves it unscheduled and deletable at any
//! time, not bound to a name no kubelet answers for (docs/operator.md,
//! "What a Debugger becomes"). Pure.

use k8s_openapi::api::core::v1::{
    Affinity, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm,
};

/// The field of a Node its name is matched on.
pub const NODE_NAME_FIELD: &str = "metadata.name";

/// `affinity` (the spec's) with its pod kept to node `node` when that is
/// not empty: the name is required in every required node selector term
/// (terms are alternatives, so each has to hold it), or in a term of its
/// own when there is none. Everything else of `affinity` is kept.
pub fn pinned(affinity: Option<Affinity>, node: &str) -> Option<Affinity> {
    if node.is_empty() {
        return affinity;
    }
    let requirement = NodeSelectorRequirement {
        key: NODE_NAME_FIELD.into(),
        operator: "In".into(),
        values: Some(vec![node.to_string()]),
    };
    let mut affinity = affinity.unwrap_or_default();
    let node_affinity = affinity
        .node_affinity
        .get_or_insert_with(NodeAffinity::default);
    let required = node_affinity
        .required_during_scheduling_ignored_during_execution
        .get_or_insert_with(NodeSelector::default);
    if required.node_selector_terms.is_empty() {
        required
            .node_selector_terms
            .push(NodeSelectorTerm::default());
    }
    for term in &mut required.node_selector_terms {
        term.match_fields
            .get_or_insert_with(Vec::new)
            .push(requirement.clone());
    }
    Some(affinity)
}
