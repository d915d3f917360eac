//! The finalizer `kubecombo.io/node-marks`, on a Debugger whose conditions
//! or taints may be on nodes: turning them off, or deleting the Debugger,
//! takes them off the nodes before it goes, also when no operator ran at
//! the time of the deletion (docs/operator.md#removal-and-the-finalizer).
//!
//! Finalizers are one list without merge keys, so each change patches the
//! whole list with the resourceVersion it was read at; on a conflict the
//! Debugger is read again and the change tried once more.

use combo_api::keys::FINALIZER_NODE_MARKS;
use combo_api::Debugger;
use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::json;

use crate::state::context::Context;

/// Whether `dbg` carries the finalizer.
pub fn holds(dbg: &Debugger) -> bool {
    dbg.finalizers().iter().any(|f| f == FINALIZER_NODE_MARKS)
}

/// Adds the finalizer to `dbg`.
pub async fn add(ctx: &Context, dbg: &Debugger) -> Result<(), kube::Error> {
    edit(ctx, dbg, |list| {
        let missing = !list.iter().any(|f| f == FINALIZER_NODE_MARKS);
        if missing {
            list.push(FINALIZER_NODE_MARKS.to_string());
        }
        missing
    })
    .await
}

/// Removes the finalizer from `dbg`; a Debugger being deleted then goes.
pub async fn remove(ctx: &Context, dbg: &Debugger) -> Result<(), kube::Error> {
    edit(ctx, dbg, |list| {
        let before = list.len();
        list.retain(|f| f != FINALIZER_NODE_MARKS);
        list.len() != before
    })
    .await
}

/// Applies `change` (which tells whether it changed anything) to the
/// finalizers of `dbg`: first as the cache shows it, after a conflict as
/// the API server does.
async fn edit(
    ctx: &Context,
    dbg: &Debugger,
    change: impl Fn(&mut Vec<String>) -> bool,
) -> Result<(), kube::Error> {
    let api: Api<Debugger> =
        Api::namespaced(ctx.client.clone(), &dbg.namespace().unwrap_or_default());
    let mut current = dbg.clone();
    for attempt in 0..2 {
        let mut list = current.finalizers().to_vec();
        if !change(&mut list) {
            return Ok(());
        }
        // The resourceVersion and uid read guard the write; a null in a
        // merge patch would remove a field instead, so absent ones stay out.
        let mut metadata = json!({"finalizers": list});
        for (field, value) in [
            ("resourceVersion", current.resource_version()),
            ("uid", current.uid()),
        ] {
            if let Some(v) = value {
                metadata[field] = v.into();
            }
        }
        let patch = Patch::Merge(json!({ "metadata": metadata }));
        ctx.metrics.write("Debugger");
        match api
            .patch(&dbg.name_any(), &PatchParams::default(), &patch)
            .await
        {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => return Ok(()),
            Err(kube::Error::Api(s)) if s.code == 409 && attempt == 0 => {
                match api.get_opt(&dbg.name_any()).await? {
                    Some(fresh) if fresh.uid() == dbg.uid() => current = fresh,
                    _ => return Ok(()),
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
