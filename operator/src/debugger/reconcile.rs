//! One reconcile of one Debugger: the pipeline `observe` -> `validate` ->
//! `converge` (render and apply the workload) -> `decide` (the node marks,
//! then the status, Events and summary) -> `write`, each step in its own
//! module, run in order here, and every outcome logged in one place.

use std::sync::Arc;
use std::time::Instant;

use chrono::Utc;
use combo_api::Debugger;
use kube::runtime::controller::Action;
use kube::ResourceExt;
use tracing::{info, instrument, warn};

use crate::core::validate::validate;
use crate::debugger::converge::{self, Outcome};
use crate::debugger::decide::{self, Converged, Inputs};
use crate::debugger::error::Error;
use crate::debugger::observe;
use crate::debugger::write::{self, Writes, Written};
use crate::state::context::Context;
use crate::{marks::finalizer, marks::step, summary::plan};

/// One reconcile of one Debugger; every outcome is logged here.
#[instrument(skip(dbg, ctx), fields(namespace = %dbg.namespace().unwrap_or_default(), name = %dbg.name_any()))]
pub async fn reconcile(dbg: Arc<Debugger>, ctx: Arc<Context>) -> Result<Action, Error> {
    let started = Instant::now();
    let result = pipeline(&dbg, &ctx).await;
    ctx.metrics.reconciled(started.elapsed().as_secs_f64());
    match &result {
        Ok(action) => {
            ctx.records.succeeded(&dbg);
            tracing::debug!(?action, "reconciled");
        }
        Err(Error::Invalid(i, _)) => info!(reason = i.reason(), message = %i, "invalid spec"),
        Err(e) if e.going_away() => {
            info!(error = %e, source = ?std::error::Error::source(e), "the Debugger or its namespace is being deleted; waiting for its deletion");
            return Ok(Action::await_change());
        }
        Err(e) => warn!(error = %e, source = ?std::error::Error::source(e), "reconcile failed"),
    }
    result
}

/// The pipeline: observe, validate, converge the workload, decide the
/// rest, write it. Each step is a module; only `converge` (the workload)
/// and `write` (everything else) send requests.
async fn pipeline(dbg: &Debugger, ctx: &Arc<Context>) -> Result<Action, Error> {
    let uid = dbg.metadata.uid.clone().unwrap_or_default();
    if dbg.metadata.deletion_timestamp.is_some() {
        // The garbage collector removes what it owns; recreating a workload
        // now would only race it. Node marks are not owned: they go first
        // (docs/operator.md#removal-and-the-finalizer).
        if finalizer::holds(dbg) {
            let marks = step::decide_removal(ctx, dbg).await;
            step::write(ctx, dbg, marks).await?;
        }
        ctx.metrics.results().forget(dbg);
        return Ok(Action::await_change());
    }
    let now = Utc::now();
    let since = ctx.records.run_at_since(dbg, now);
    let mut observed = observe::observe(&ctx.caches, dbg).await;
    let counts = converge::workload_counts(dbg, &observed);
    let unselected = decide::unselected(counts, &observed);
    if !unselected.is_empty() {
        // The status and the summary are computed without them; the write
        // stage deletes them.
        observed.reports.clear();
    }
    let outcome = match validate(dbg, observed.found(), &ctx.images) {
        Ok(valid) => converge::converge(dbg, ctx, &observed, valid).await?,
        Err(rejected) => converge::rejected(dbg, ctx, &observed, rejected).await?,
    };
    let (verdict, applied, refused) = match outcome {
        Outcome::Applied(valid, done) => (Ok(valid), Some(*done), None),
        Outcome::Rejected(r) => (Err(r), None, None),
        Outcome::Refused(r, e) => (Err(r), None, Some(e)),
    };
    // Whatever the condition, the summary of a rejected Debugger follows
    // the reports the status is computed from
    // (docs/operator.md, "Reports, summary and status").
    let converged = applied.unwrap_or_else(|| Converged {
        summary: verdict
            .as_ref()
            .err()
            .and_then(|r| plan::when_rejected(dbg, r, &observed)),
        ..Converged::default()
    });
    let (marks, marks_writes) =
        step::decide(ctx, dbg, &verdict, &observed, counts, since, now).await;
    let plan = decide::decide(Inputs {
        dbg,
        written: ctx.records.written(&uid),
        verdict: &verdict,
        converged,
        counts,
        runs: crate::reports::runs::run_summary(observed.reports.values().map(|r| r.as_ref())),
        marks,
        pinger_not_ready: observed
            .pinger
            .as_ref()
            .filter(|_| dbg.spec.enable_pinger)
            .and_then(crate::pinger::status::not_ready),
        waiting: ctx
            .caches
            .waiting
            .describe(&dbg.namespace().unwrap_or_default(), &dbg.name_any()),
        refused: ctx
            .caches
            .refusals
            .describe(&dbg.namespace().unwrap_or_default(), &dbg.name_any()),
        run_now_served: dbg
            .annotations()
            .get(combo_api::keys::ANNOTATION_RUN_NOW)
            .map_or(0, |asked| {
                crate::reports::runs::served(observed.reports.values().map(|r| r.as_ref()), asked)
            }),
        now,
    });
    ctx.metrics
        .results()
        .record(dbg, &observed.reports, &verdict, since);
    let writes = Writes {
        plan,
        marks: marks_writes,
        unselected,
    };
    let Written { next, marks } = write::write(ctx, dbg, &uid, writes, &observed).await?;
    if let Some(e) = refused {
        return Err(e.into());
    }
    marks?;
    match verdict {
        Ok(_) => Ok(next),
        // A write held by the coalescing is made by this requeue, not left
        // for an unrelated change.
        Err(r) => Err(Error::Invalid(r.invalid, next)),
    }
}
