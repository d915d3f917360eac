//! Node writes: what a marks plan says, on the nodes, at most
//! [`CONCURRENT`] at once. A condition write is one strategic-merge patch
//! of `nodes/<node>/status`: conditions merge by type, and `$patch:
//! delete` removes one, so the kubelet's and other writers' conditions
//! stay. A taint write reads the node and patches its whole taint list
//! (one list that merges nothing) with the resourceVersion read, once more
//! on a conflict (docs/operator.md#taints-and-their-limit).

use futures::{stream, StreamExt};
use k8s_openapi::api::core::v1::{Node, Taint};
use kube::api::{Patch, PatchParams};
use kube::Api;
use serde_json::{json, Value};
use tracing::info;

use crate::core::node_marks::NodeMarks;
use crate::marks::plan::{ConditionWrite, MarksPlan};
use crate::marks::taints::TaintWrite;
use crate::state::context::Context;
use crate::workload::tolerations::EFFECT;

/// Node writes one reconcile sends at once.
pub const CONCURRENT: usize = 8;

/// Errors of a node write.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The conditions of a node could not be written.
    #[error("writing the conditions of node {node}")]
    Conditions {
        /// The node.
        node: String,
        /// What the API server said.
        #[source]
        source: kube::Error,
    },
    /// The taints of a node could not be written.
    #[error("writing the taints of node {node}")]
    Taints {
        /// The node.
        node: String,
        /// What the API server said.
        #[source]
        source: kube::Error,
    },
}

/// Sends every write of `plan`; the first error, once all were tried.
/// Taints go after conditions, so that a node written for both answers
/// last with both, which is what the node watch then keeps until it shows
/// them.
pub async fn apply(ctx: &Context, plan: &MarksPlan) -> Result<(), Error> {
    // Owned writes: a stream over borrowed ones makes the reconcile's
    // future fail the controller's `Send` bound (a higher-ranked lifetime).
    let conditions: Vec<Result<(), Error>> = stream::iter(plan.conditions.clone())
        .map(|w| async move { write_conditions(ctx, &w).await })
        .buffer_unordered(CONCURRENT)
        .collect()
        .await;
    let taints: Vec<Result<(), Error>> = stream::iter(plan.taints.clone())
        .map(|w| async move { write_taints(ctx, &w).await })
        .buffer_unordered(CONCURRENT)
        .collect()
        .await;
    conditions.into_iter().chain(taints).collect()
}

/// The strategic-merge patch of `nodes/<node>/status` that `w` is. Pure.
pub fn conditions_patch(w: &ConditionWrite) -> Value {
    let mut list: Vec<Value> = w
        .set
        .iter()
        .map(|c| serde_json::to_value(c).expect("a condition serialises"))
        .collect();
    list.extend(
        w.remove
            .iter()
            .map(|t| json!({"type": t, "$patch": "delete"})),
    );
    json!({"status": {"conditions": list}})
}

/// `current` with `w`'s keys removed and added (effect [`EFFECT`]); every
/// other taint as it is. Pure.
pub fn retainted(current: &[Taint], w: &TaintWrite) -> Vec<Taint> {
    let mut taints: Vec<Taint> = current
        .iter()
        .filter(|t| !w.remove.contains(&t.key) && !w.add.contains(&t.key))
        .cloned()
        .collect();
    taints.extend(w.add.iter().map(|k| Taint {
        key: k.clone(),
        effect: EFFECT.into(),
        ..Taint::default()
    }));
    taints
}

/// Whether the API server answered 404: the object is gone.
pub fn not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404)
}

async fn write_conditions(ctx: &Context, w: &ConditionWrite) -> Result<(), Error> {
    let api: Api<Node> = Api::all(ctx.client.clone());
    ctx.metrics.write("NodeStatus");
    let patch = Patch::Strategic(conditions_patch(w));
    match api
        .patch_status(&w.node, &PatchParams::default(), &patch)
        .await
    {
        Ok(node) => {
            ctx.nodes.wrote(&w.node, NodeMarks::of(&node));
            Ok(())
        }
        // The node is gone; its report goes at the next run.
        Err(e) if not_found(&e) => Ok(()),
        Err(source) => Err(Error::Conditions {
            node: w.node.clone(),
            source,
        }),
    }
}

async fn write_taints(ctx: &Context, w: &TaintWrite) -> Result<(), Error> {
    let api: Api<Node> = Api::all(ctx.client.clone());
    let failed = |source| Error::Taints {
        node: w.node.clone(),
        source,
    };
    for attempt in 0..2 {
        let node = match api.get_opt(&w.node).await.map_err(failed)? {
            Some(n) => n,
            None => return Ok(()),
        };
        let current = node.spec.as_ref().and_then(|s| s.taints.clone());
        let taints = retainted(current.as_deref().unwrap_or_default(), w);
        let patch = Patch::Merge(json!({
            "metadata": {"resourceVersion": node.metadata.resource_version},
            "spec": {"taints": taints},
        }));
        ctx.metrics.write("Node");
        match api.patch(&w.node, &PatchParams::default(), &patch).await {
            Ok(node) => {
                info!(node = %w.node, added = ?w.add, removed = ?w.remove, "node taints written");
                ctx.nodes.wrote(&w.node, NodeMarks::of(&node));
                return Ok(());
            }
            Err(e) if not_found(&e) => return Ok(()),
            Err(kube::Error::Api(s)) if s.code == 409 && attempt == 0 => continue,
            Err(e) => return Err(failed(e)),
        }
    }
    unreachable!("the second attempt returns")
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::NodeCondition;

    #[test]
    fn a_condition_write_sets_by_type_and_deletes_with_a_directive() {
        let w = ConditionWrite {
            node: "n".into(),
            set: vec![NodeCondition {
                type_: "kubecombo.io/ops.d.disk".into(),
                status: "True".into(),
                reason: Some("Var".into()),
                ..NodeCondition::default()
            }],
            remove: vec!["kubecombo.io/ops.d.net".into()],
        };
        assert_eq!(
            conditions_patch(&w),
            json!({"status": {"conditions": [
                {"type": "kubecombo.io/ops.d.disk", "status": "True", "reason": "Var"},
                {"type": "kubecombo.io/ops.d.net", "$patch": "delete"},
            ]}})
        );
    }

    #[test]
    fn a_taint_write_changes_only_its_keys() {
        let other = Taint {
            key: "dedicated".into(),
            value: Some("db".into()),
            effect: "NoSchedule".into(),
            ..Taint::default()
        };
        let ours = |k: &str| Taint {
            key: k.into(),
            effect: "NoSchedule".into(),
            ..Taint::default()
        };
        let current = [other.clone(), ours("kubecombo.io/a.d.net")];
        let w = TaintWrite {
            node: "n".into(),
            add: vec!["kubecombo.io/a.d.disk".into()],
            remove: vec!["kubecombo.io/a.d.net".into()],
        };
        assert_eq!(
            retainted(&current, &w),
            [other, ours("kubecombo.io/a.d.disk")]
        );
    }
}
