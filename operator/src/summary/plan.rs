//! Whether, and how, a Debugger's summary ConfigMap is written whatever its
//! condition: the summary and the status's run fields come from the same
//! reports, so a Debugger that is not Ready keeps its summary up to date
//! over the ConfigMap it controls
//! (docs/operator.md, "Reports, summary and status"). Pure but for the rendering of the summary's data.

use combo_api::keys;
use combo_api::Debugger;
use k8s_openapi::api::core::v1::ConfigMap;

use crate::core::validate::{Invalid, Rejected};
use crate::edge::apply::controlled_by;
use crate::reports::aggregate;
use crate::state::cache::Summary;
use crate::state::observed::Observed;
use crate::summary::render;
use crate::summary::write::{summary_due, SummaryWrite};

/// The summary ConfigMap `dbg` should hold, from the reports `observed`.
pub fn desired(dbg: &Debugger, observed: &Observed) -> ConfigMap {
    let (data, level) = aggregate::summary_data(&observed.reports);
    if level != aggregate::Level::Full {
        tracing::debug!(
            ?level,
            nodes = observed.reports.len(),
            "summary values shortened to fit"
        );
    }
    render::summary_config_map(dbg, data)
}

/// Whether a ConfigMap `dbg` does not control holds its summary's name
/// (the user's, another Debugger's, or its own scripts ConfigMap). Pure.
pub fn taken(dbg: &Debugger, observed: &Observed) -> bool {
    observed
        .summary
        .as_ref()
        .is_some_and(|s| !controlled_by(&s.metadata, dbg))
}

/// The summaries `dbg` wrote under a former `summaryConfigMap`, among the
/// ConfigMaps it controls (`controlled`, as the ConfigMap watch shows
/// them): labelled as its workload, named neither as its summary nor as
/// its scripts ConfigMap. Nothing updates them any more, and another
/// Debugger may be waiting for the name, so they are deleted
/// (docs/operator.md, "What the operator writes"). Their names and UIDs.
/// Pure.
pub fn former_summaries(dbg: &Debugger, controlled: &[Summary]) -> Vec<(String, String)> {
    let name = dbg.metadata.name.clone().unwrap_or_default();
    let current = dbg.spec.summary_name(&name);
    let labels = keys::workload_labels(&name);
    controlled
        .iter()
        .filter(|s| controlled_by(&s.metadata, dbg))
        .filter(|s| {
            let have = s.metadata.labels.as_ref();
            labels
                .iter()
                .all(|(k, v)| have.and_then(|l| l.get(k)) == Some(v))
        })
        .filter_map(|s| Some((s.metadata.name.clone()?, s.metadata.uid.clone()?)))
        .filter(|(n, _)| *n != current && *n != dbg.spec.config_map)
        .collect()
}

/// How the summary of a Debugger that is not valid (`rejected`) is
/// written, if at all. Never over a ConfigMap it does not control. A
/// ConfigMap that does not exist is created unless the spec itself is
/// invalid (its summary name may then be no name, or its scripts
/// ConfigMap's); over its own ConfigMap as a valid Debugger's would be,
/// unless that name is also its scripts ConfigMap. Pure.
pub fn due_when_rejected(
    dbg: &Debugger,
    rejected: &Rejected,
    desired: &ConfigMap,
    existing: Option<&Summary>,
) -> Option<SummaryWrite> {
    let spec_invalid = matches!(rejected.invalid, Invalid::InvalidSpec(_));
    match existing {
        None if spec_invalid => None,
        Some(old) if !controlled_by(&old.metadata, dbg) => None,
        Some(_)
            if spec_invalid
                && dbg.spec.enable_config_map
                && desired.metadata.name.as_deref() == Some(dbg.spec.config_map.as_str()) =>
        {
            None
        }
        _ => summary_due(dbg, desired, existing).ok().flatten(),
    }
}

/// The summary write of a `rejected` Debugger, rendered only when one may
/// be due (see [`due_when_rejected`]).
pub fn when_rejected(
    dbg: &Debugger,
    rejected: &Rejected,
    observed: &Observed,
) -> Option<(ConfigMap, SummaryWrite)> {
    let existing = observed.summary.as_ref();
    let may = match existing {
        Some(old) => controlled_by(&old.metadata, dbg),
        None => !matches!(rejected.invalid, Invalid::InvalidSpec(_)),
    };
    if !may {
        return None;
    }
    let cm = desired(dbg, observed);
    due_when_rejected(dbg, rejected, &cm, existing).map(|how| (cm, how))
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
