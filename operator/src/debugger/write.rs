//! Write: what the reconcile decided after the workload, through what the
//! operator keeps between reconciles: the reports of nodes no longer
//! selected, the node marks, then Events and statuses held while workloads
//! are written (`pace`), at most one status and one summary write per
//! Debugger every 2 s (`coalesce`), the status last written, and the
//! reports of nodes that left (docs/operator.md, "The pipeline").

use std::sync::Arc;
use std::time::{Duration, Instant};

use combo_api::{keys, Debugger, DebuggerStatus};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{DeleteParams, Patch, PatchParams, Preconditions};
use kube::runtime::controller::Action;
use kube::{Api, Resource, ResourceExt};
use tracing::{info, warn};

use crate::core::spec_hash::spec_hash_of;
use crate::debugger::decide::Plan;
use crate::debugger::error::Error;
use crate::marks::step::{self, MarksWrites};
use crate::state::context::Context;
use crate::state::observed::Observed;
use crate::{edge, reports::aggregate, reports::store};

/// What the write stage makes for one Debugger.
pub struct Writes {
    /// The status, Events, summary and next look.
    pub plan: Plan,
    /// The node marks' writes, when there are any to make.
    pub marks: Option<MarksWrites>,
    /// The reports to delete because no node is selected any more.
    pub unselected: Vec<String>,
}

/// What the write stage did.
pub struct Written {
    /// What the controller does next.
    pub next: Action,
    /// Whether the node marks' writes all landed: their failure is the
    /// reconcile's error once the rest is written.
    pub marks: Result<(), step::Error>,
}

/// Makes `writes` for `dbg` (uid `uid`).
pub async fn write(
    ctx: &Arc<Context>,
    dbg: &Debugger,
    uid: &str,
    writes: Writes,
    observed: &Observed,
) -> Result<Written, Error> {
    if !writes.unselected.is_empty() {
        delete_reports(ctx, dbg, &writes.unselected, "no node selected").await;
    }
    let marks = match writes.marks {
        Some(m) => step::write(ctx, dbg, m).await,
        None => Ok(()),
    };
    if let Some(value) = &writes.plan.remove_run_now {
        remove_run_now(ctx, dbg, value).await;
    }
    let next = write_plan(ctx, dbg, uid, writes.plan, observed).await?;
    Ok(Written { next, marks })
}

/// Writes `plan` for `dbg` and tells what the controller does next.
async fn write_plan(
    ctx: &Arc<Context>,
    dbg: &Debugger,
    uid: &str,
    plan: Plan,
    observed: &Observed,
) -> Result<Action, Error> {
    let Plan {
        status,
        status_changed,
        paced,
        mut events,
        summary,
        next,
        ..
    } = plan;
    if !paced {
        events.splice(0..0, ctx.pace.take(uid));
    } else if status_changed || !events.is_empty() || summary.is_some() || ctx.pace.holds(uid) {
        // A valid Debugger's summary ConfigMap, status and Events wait
        // while workloads are being written (see `pace`).
        match ctx.pace.hold(uid, &dbg.object_ref(&()), events) {
            // Sooner than any requeue the workload step asks for, which
            // the next reconcile asks for again.
            Ok(wait) => return Ok(Action::requeue(wait)),
            Err(due) => events = due,
        }
    }
    for event in events {
        edge::events::publish(&ctx.recorder, dbg, event).await;
    }
    // Status and summary: at most one write each per `coalesce::WINDOW`,
    // a large summary less often while reports come (`coalesce`); what
    // has to wait is written by a requeue.
    let mut wait: Option<Duration> = None;
    let mut hold = |d: Duration| wait = Some(wait.map_or(d, |w| w.min(d)));
    // An invalid spec's status goes out at once: its Event is published
    // above, once per generation and message, and a held status would
    // publish it again. Such writes are bounded by spec changes anyway.
    if status_changed {
        match ctx
            .status_writes
            .wait(uid, Instant::now())
            .filter(|_| paced)
        {
            Some(d) => hold(d),
            None => {
                write_status(ctx, dbg, &status).await?;
                ctx.status_writes.wrote(uid, Instant::now());
                ctx.records.remember_written(uid, status.clone());
            }
        }
    }
    if let Some((summary, how)) = summary {
        let hash = spec_hash_of(&summary.metadata).unwrap_or_default();
        let bytes = summary
            .data
            .iter()
            .flatten()
            .map(|(k, v)| k.len() + v.len())
            .sum();
        match ctx.summary_writes.wait(uid, hash, bytes, Instant::now()) {
            Some(d) => hold(d),
            None => {
                // Last: should it fail, the Events above are out and the
                // retry only writes the ConfigMap.
                ctx.summary_writes.wrote(uid, Instant::now());
                crate::summary::write::summary(
                    &ctx.client,
                    &ctx.metrics,
                    &ctx.caches,
                    dbg,
                    &summary,
                    how,
                )
                .await?;
            }
        }
    }
    if let Some(last) = &status.last_run_at {
        prune_departed(ctx, dbg, uid, last, observed).await;
    }
    delete_former_summaries(ctx, dbg, &observed.former_summaries).await;
    Ok(wait.map_or(next, Action::requeue))
}

/// Deletes the summaries `dbg` wrote under a former `summaryConfigMap`
/// (names and UIDs; one replaced since is left alone). A failure is
/// logged: the next reconcile finds them again.
async fn delete_former_summaries(ctx: &Context, dbg: &Debugger, former: &[(String, String)]) {
    let ns = dbg.namespace().unwrap_or_default();
    let api: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &ns);
    for (name, uid) in former {
        ctx.metrics.write("ConfigMap");
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: Some(uid.clone()),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match api.delete(name, &params).await {
            Ok(_) => {
                info!(config_map = %name, "removed the summary written under a former summaryConfigMap")
            }
            Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
            Err(e) => warn!(config_map = %name, error = %e, "removing a former summary failed"),
        }
    }
}

/// At a new run (the newest `runAt` of the reports changed since this
/// process last looked), deletes the reports of nodes that run no pod of
/// the Debugger any more and did not report that run; the next summary
/// leaves their keys out. The first look after a start only records the
/// run, so a restarted operator does not list every Debugger's pods.
async fn prune_departed(ctx: &Context, dbg: &Debugger, uid: &str, last: &str, observed: &Observed) {
    let previous = ctx.records.remember_run(uid, last);
    if previous.is_none() || previous.as_deref() == Some(last) {
        return;
    }
    let candidates: Vec<&aggregate::NodeReport> = observed
        .reports
        .values()
        .map(|r| r.as_ref())
        .filter(|r| r.spec.run_at.as_str() != last)
        .collect();
    if candidates.is_empty() {
        return;
    }
    let ns = dbg.namespace().unwrap_or_default();
    let nodes = match store::nodes_with_pods(&ctx.client, &ns, &dbg.name_any()).await {
        Ok(n) => n,
        Err(e) => {
            warn!(error = %e, "listing the Debugger's pods failed; reports of departed nodes stay until the next run");
            return;
        }
    };
    let gone = crate::reports::runs::departed(candidates, last, &nodes);
    delete_reports(ctx, dbg, &gone, "a node that left").await;
}

/// Deletes the reports `names` of `dbg`, logging `why`, and forgets them.
async fn delete_reports(ctx: &Context, dbg: &Debugger, names: &[String], why: &str) {
    let ns = dbg.namespace().unwrap_or_default();
    for name in names {
        ctx.metrics.write("DebuggerReport");
        match store::delete(&ctx.client, &ns, name).await {
            Ok(()) => info!(report = %name, why, "removed a report"),
            Err(e) => warn!(report = %name, error = %e, "removing a report failed"),
        }
    }
    ctx.caches.reports.forget(&ns, &dbg.name_any(), names);
}

/// Takes the run-now request `value` off `dbg`, only if it is still the
/// one there: read afresh, and removed under that read's resourceVersion,
/// so a newer request set meanwhile stays
/// (docs/operator.md, "Run-now requests"). Not paced: a pod that starts while the request is still
/// there would run it. A conflict reads again; a failure is logged, and
/// the next reconcile decides again.
async fn remove_run_now(ctx: &Context, dbg: &Debugger, value: &str) {
    let ns = dbg.namespace().unwrap_or_default();
    let api: Api<Debugger> = Api::namespaced(ctx.client.clone(), &ns);
    let name = dbg.name_any();
    for _ in 0..RUN_NOW_ATTEMPTS {
        let fresh = match api.get_metadata_opt(&name).await {
            Ok(Some(m)) => m.metadata,
            Ok(None) => return,
            Err(e) => {
                return warn!(request = %value, error = %e, "reading the Debugger for its run-now request failed")
            }
        };
        let held = fresh
            .annotations
            .as_ref()
            .and_then(|a| a.get(keys::ANNOTATION_RUN_NOW));
        if held.map(String::as_str) != Some(value) {
            return;
        }
        let patch = serde_json::json!({"metadata": {
            "resourceVersion": fresh.resource_version,
            "annotations": {keys::ANNOTATION_RUN_NOW: null},
        }});
        ctx.metrics.write("Debugger");
        match api
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => return info!(request = %value, "took off a run-now request nothing can run"),
            Err(kube::Error::Api(e)) if e.code == 409 => continue,
            Err(kube::Error::Api(e)) if e.code == 404 => return,
            Err(e) => {
                return warn!(request = %value, error = %e, "taking off a run-now request failed")
            }
        }
    }
    warn!(request = %value, "the Debugger kept changing; its run-now request is taken off at the next reconcile");
}

/// Reads and removals of a run-now request before it waits for the next
/// reconcile: a conflict means the Debugger changed between the two.
const RUN_NOW_ATTEMPTS: usize = 3;

async fn write_status(ctx: &Context, dbg: &Debugger, new: &DebuggerStatus) -> Result<(), Error> {
    edge::apply::status(&ctx.client, &ctx.metrics, dbg, new, "DebuggerStatus")
        .await
        .map_err(Error::Status)
}
