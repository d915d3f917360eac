//! One reconcile of one Debugger: the pipeline observe (`fetch`) ->
//! `validate` -> `converge` (render and apply the workload) -> `plan` ->
//! `write`, each step in its own module, run in order here, and every
//! outcome logged in one place.

use std::sync::Arc;
use std::time::Instant;

use chrono::Utc;
use combo_api::Debugger;
use kube::runtime::controller::Action;
use kube::ResourceExt;
use tracing::{info, instrument, warn};

use crate::core::validate::validate;
use crate::debugger::decide::{self, Converged, Inputs};
use crate::debugger::error::Error;
use crate::debugger::observe;
use crate::state::context::Context;
use crate::{
    debugger::converge, debugger::write, marks::finalizer, marks::step, summary::plan,
    workload::apply,
};

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
        Err(e) => warn!(error = %e, source = ?std::error::Error::source(e), "reconcile failed"),
    }
    result
}

/// The pipeline: observe, validate, converge the workload, plan the rest,
/// write it. Each step is a module; only `converge` and `write` send
/// requests.
async fn pipeline(dbg: &Debugger, ctx: &Arc<Context>) -> Result<Action, Error> {
    if dbg.metadata.deletion_timestamp.is_some() {
        // The garbage collector removes what it owns; recreating a workload
        // now would only race it. Node marks are not owned: they go first
        // (docs/operator.md#removal-and-the-finalizer).
        if finalizer::holds(dbg) {
            step::remove_all(ctx, dbg).await?;
        }
        ctx.metrics.results().forget(dbg);
        return Ok(Action::await_change());
    }
    let mut observed = observe::observe(&ctx.caches, dbg).await;
    let counts = converge::workload_counts(dbg, &observed);
    if counts.is_some_and(|c| c.no_node) && !observed.reports.is_empty() {
        write::prune_unselected(ctx, dbg, &mut observed).await;
    }
    let (verdict, converged, refused) = match validate(&dbg.name_any(), &dbg.spec, observed.found())
    {
        Ok(valid) => converge::converge(dbg, ctx, &observed, valid).await?,
        Err(rejected) => {
            // Whatever else is wrong, a Debugger whose summary name another
            // ConfigMap holds runs nothing
            // (docs/operator.md, "What the operator writes").
            if plan::taken(dbg, &observed) {
                apply::remove_workload(&ctx.client, &ctx.metrics, &ctx.caches, dbg, &observed)
                    .await?;
            }
            (Err(rejected), Converged::default(), None)
        }
    };
    let mut converged = converged;
    if let Err(rejected) = &verdict {
        // Whatever the condition, the summary follows the reports the
        // status is computed from
        // (docs/operator.md, "Reports, summary and status").
        converged.summary = plan::when_rejected(dbg, rejected, &observed);
    }
    let uid = dbg.metadata.uid.clone().unwrap_or_default();
    let now = Utc::now();
    let (marks, marked) = step::step(ctx, dbg, &verdict, &observed, counts, now).await;
    let plan = decide::plan(Inputs {
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
        now,
    });
    let since = ctx.records.run_at_since(dbg, now);
    ctx.metrics
        .results()
        .record(dbg, &observed.reports, &verdict, since);
    let next = write::write(ctx, dbg, &uid, plan, &observed).await?;
    if let Some(e) = refused {
        return Err(e.into());
    }
    marked?;
    match verdict {
        Ok(_) => Ok(next),
        // A write held by the coalescing is made by this requeue, not left
        // for an unrelated change.
        Err(r) => Err(Error::Invalid(r.invalid, next)),
    }
}
