//! Converge: the writes that bring a Debugger's workload and its RBAC to
//! what its spec asks for (none, when the spec is invalid), and the summary
//! ConfigMap it is due (docs/operator.md, "The pipeline"). With the write
//! stage, the only step that sends requests: the workload first, since
//! what the status says of it depends on what the apply did.

use std::sync::Arc;
use std::time::Duration;

use combo_api::Debugger;
use kube::runtime::controller::Action;
use tracing::info;

use crate::core::change::Change;
use crate::core::status::{self, PodCounts};
use crate::core::validate::{self, Invalid, Rejected, Valid};
use crate::debugger::decide::Converged;
use crate::edge::apply::{controlled_by, Error as ApplyError};
use crate::state::context::Context;
use crate::state::observed::Observed;
use crate::{core::events, summary::plan, workload::apply, workload::rbac, workload::render};

/// What converging a Debugger's workload did.
pub enum Outcome {
    /// The workload and its RBAC are as the valid spec asks.
    Applied(Valid, Box<Converged>),
    /// The spec was invalid, or a name it needs is another's
    /// (`InvalidSpec`): nothing of it is written, and a workload written
    /// before a summary name was found taken is removed.
    Rejected(Rejected),
    /// The API server refuses the workload for good (`WorkloadRefused`);
    /// the error is returned after the status, so that the retry backs
    /// off.
    Refused(Rejected, ApplyError),
}

/// Converges a `valid` Debugger. A name another owner holds turns the
/// verdict into `InvalidSpec`; a write the API server refuses for good
/// into `WorkloadRefused`. Any other failure is the reconcile's error.
pub async fn converge(
    dbg: &Debugger,
    ctx: &Arc<Context>,
    observed: &Observed,
    valid: Valid,
) -> Result<Outcome, ApplyError> {
    match workload(dbg, ctx, observed, &valid).await {
        Ok(done) => Ok(Outcome::Applied(valid, Box::new(done))),
        Err(ApplyError::NotOwned { kind, name }) => {
            if kind == "ConfigMap" {
                // The summary is another's: this Debugger runs nothing
                // (docs/operator.md, "What the operator writes"), also when
                // its workload was written before the name was found taken.
                apply::remove_workload(&ctx.client, &ctx.metrics, &ctx.caches, dbg, observed)
                    .await?;
            }
            let taken = Invalid::InvalidSpec(format!(
                "{kind} {name:?} already exists and is not owned by this Debugger"
            ));
            Ok(Outcome::Rejected(Rejected::after(valid, taken)))
        }
        Err(e) => {
            let failures = ctx.records.failures(dbg);
            let reported = match &e {
                ApplyError::Write { kind, name, source } => {
                    validate::refusal(kind, name, source, failures)
                }
                ApplyError::NotOwned { .. } => None,
            };
            match reported {
                Some(refused) => Ok(Outcome::Refused(Rejected::after(valid, refused), e)),
                None => Err(e),
            }
        }
    }
}

/// Converges a Debugger whose spec is invalid: whatever else is wrong, a
/// Debugger whose summary name another ConfigMap holds runs nothing
/// (docs/operator.md, "What the operator writes").
pub async fn rejected(
    dbg: &Debugger,
    ctx: &Arc<Context>,
    observed: &Observed,
    rejected: Rejected,
) -> Result<Outcome, ApplyError> {
    if plan::taken(dbg, observed) {
        apply::remove_workload(&ctx.client, &ctx.metrics, &ctx.caches, dbg, observed).await?;
    }
    Ok(Outcome::Rejected(rejected))
}

/// Applies the workload RBAC and the workload, and tells whether the
/// summary ConfigMap has to be written.
async fn workload(
    dbg: &Debugger,
    ctx: &Arc<Context>,
    observed: &Observed,
    valid: &Valid,
) -> Result<Converged, ApplyError> {
    let summary = plan::desired(dbg, observed);
    // Checked first: a summary name taken by another owner is an invalid
    // spec, and then no workload is written.
    let summary_due = crate::summary::write::summary_due(dbg, &summary, observed.summary.as_ref())?;
    let account_uid = rbac::ensure(&ctx.client, &ctx.metrics, &ctx.caches, dbg, valid).await?;
    let desired = render::workload(dbg, valid, account_uid.as_deref());
    let change = apply::workload(
        &ctx.client,
        &ctx.metrics,
        &ctx.caches,
        dbg,
        &desired,
        observed,
    )
    .await?;
    if change != Change::Unchanged {
        ctx.pace.wrote();
    }
    let event = events::for_change(change, desired.kind(), &valid.namespace, &valid.name);
    if event.is_some() {
        info!(?change, kind = desired.kind(), "workload written");
    }
    Ok(Converged {
        action: matches!(change, Change::Replacing | Change::Waiting)
            .then(|| Action::requeue(Duration::from_secs(1))),
        event,
        summary: summary_due.map(|how| (summary, how)),
    })
}

/// Counts of the workload that matches the spec's type, else of whichever exists.
pub fn workload_counts(dbg: &Debugger, observed: &Observed) -> Option<PodCounts> {
    let ds = observed
        .daemonset
        .as_ref()
        .filter(|d| controlled_by(&d.metadata, dbg))
        .map(status::daemonset_counts);
    let pod = observed
        .pod
        .as_ref()
        .filter(|p| controlled_by(&p.metadata, dbg) && p.metadata.deletion_timestamp.is_none())
        .map(status::pod_counts);
    match dbg.spec.workload_type {
        combo_api::WorkloadType::Daemonset => ds.or(pod),
        combo_api::WorkloadType::Pod => pod.or(ds),
    }
}
