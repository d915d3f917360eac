//! The summary ConfigMap's write: whether it is due (create, apply or take
//! over, decided purely) and the write itself, through [`crate::edge::apply`]'s
//! server-side apply and errors.

use combo_api::keys::FIELD_MANAGER_OPERATOR;
use combo_api::Debugger;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, Client, ResourceExt};

use crate::core::spec_hash::spec_hash_of;
use crate::edge::apply::{apply, controlled_by, not_owned, Error};
use crate::metrics::registry::Metrics;
use crate::state::cache::{Caches, Summary};

/// How the summary ConfigMap has to be written, if at all: created when
/// missing; applied when not as rendered; taken over when other field
/// managers own part of it. A ConfigMap of that name without this
/// Debugger's controller reference (the user's own, or another
/// Debugger's) is never written: an error. Pure.
pub fn summary_due(
    dbg: &Debugger,
    desired: &ConfigMap,
    existing: Option<&Summary>,
) -> Result<Option<SummaryWrite>, Error> {
    let Some(old) = existing else {
        return Ok(Some(SummaryWrite::Create));
    };
    if !controlled_by(&old.metadata, dbg) {
        return Err(Error::NotOwned {
            kind: "ConfigMap",
            name: old.metadata.name.clone().unwrap_or_default(),
        });
    }
    Ok(if old.foreign_managers {
        Some(SummaryWrite::TakeOver)
    } else if spec_hash_of(&old.metadata) != spec_hash_of(&desired.metadata) {
        Some(SummaryWrite::Apply)
    } else {
        None
    })
}

/// `current` (the summary ConfigMap just applied) taken over: only the
/// operator's apply keeps ownership (managedFields set to its own entries)
/// and only the keys of `desired` stay. Replaced with this, no runner of an
/// earlier version, nor anyone who edited it by hand, keeps owning a key
/// the operator's applies leave out, so those keys go when their node
/// goes. Pure.
pub fn takeover(current: &ConfigMap, desired: &ConfigMap) -> ConfigMap {
    let mut cm = current.clone();
    cm.metadata.managed_fields = Some(
        current
            .metadata
            .managed_fields
            .iter()
            .flatten()
            .filter(|m| {
                m.manager.as_deref() == Some(FIELD_MANAGER_OPERATOR)
                    && m.operation.as_deref() == Some("Apply")
            })
            .cloned()
            .collect(),
    );
    let keep = desired.data.clone().unwrap_or_default();
    if let Some(data) = cm.data.as_mut() {
        data.retain(|k, _| keep.contains_key(k));
    }
    cm
}

/// How the summary ConfigMap is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SummaryWrite {
    /// No ConfigMap of that name is known: created, never applied, so that
    /// one the cache has not shown yet is not taken from its owner.
    Create,
    /// Applied over the Debugger's own ConfigMap.
    Apply,
    /// Applied, then replaced by [`takeover`] of it (guarded by its
    /// resourceVersion): other field managers own part of it.
    TakeOver,
}

/// Writes the summary ConfigMap as `how` says.
pub async fn summary(
    client: &Client,
    metrics: &Metrics,
    caches: &Caches,
    dbg: &Debugger,
    desired: &ConfigMap,
    how: SummaryWrite,
) -> Result<(), Error> {
    let ns = dbg.namespace().unwrap_or_default();
    let name = desired.metadata.name.clone().unwrap_or_default();
    let api = Api::<ConfigMap>::namespaced(client.clone(), &ns);
    let write_error = |source| Error::Write {
        kind: "ConfigMap",
        name: name.clone(),
        source,
    };
    let mut written = None;
    if how == SummaryWrite::Create {
        metrics.write("ConfigMap");
        let params = kube::api::PostParams {
            field_manager: Some(FIELD_MANAGER_OPERATOR.into()),
            ..Default::default()
        };
        match api.create(&params, desired).await {
            Ok(cm) => written = Some(cm),
            Err(kube::Error::Api(e)) if e.code == 409 => {
                // Made by someone in the meantime: the Debugger's own only
                // if it carries its ownerReference.
                let existing = api.get(&name).await.map_err(write_error)?;
                if !controlled_by(&existing.metadata, dbg) {
                    return Err(not_owned("ConfigMap", &existing));
                }
            }
            Err(e) => return Err(write_error(e)),
        }
    }
    let mut written = match written {
        Some(cm) => cm,
        None => apply::<ConfigMap>(client, metrics, &ns, desired, "ConfigMap").await?,
    };
    if how == SummaryWrite::TakeOver {
        metrics.write("ConfigMap");
        written = api
            .replace(&name, &Default::default(), &takeover(&written, desired))
            .await
            .map_err(write_error)?;
    }
    caches
        .recent_summaries
        .record(&written.metadata, Summary::of(&written));
    Ok(())
}

#[cfg(test)]
#[path = "write_tests.rs"]
mod tests;
