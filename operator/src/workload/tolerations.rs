//! The tolerations of a Debugger's pods, and the effect of the taints the
//! operator sets: a tainted node keeps its runner, so it can recover.

use combo_api::keys::node_mark_name;
use combo_api::Debugger;
use k8s_openapi::api::core::v1::Toleration;
use kube::ResourceExt;

/// Effect of every taint of a Debugger.
pub const EFFECT: &str = "NoSchedule";

/// The tolerations of `dbg`'s pods: its own, and one for each taint it
/// may set, so that a tainted node keeps its runner and can recover. None
/// when there are none. Pure.
pub fn tolerations(dbg: &Debugger) -> Option<Vec<Toleration>> {
    let spec = &dbg.spec;
    let ns = dbg.namespace().unwrap_or_default();
    let mut all = spec.tolerations.clone();
    all.extend(spec.taints.iter().map(|c| Toleration {
        key: Some(node_mark_name(&ns, &dbg.name_any(), *c)),
        operator: Some("Exists".into()),
        effect: Some(EFFECT.into()),
        ..Toleration::default()
    }));
    (!all.is_empty()).then_some(all)
}
