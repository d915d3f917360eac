//! One reconcile of one Debugger: the pipeline fetch -> validate -> render
//! -> apply -> status, each step in its own module, run in order here, and
//! every outcome logged in one place.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use combo_api::{Debugger, DebuggerStatus};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::runtime::controller::Action;
use kube::runtime::events::Event;
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};
use tracing::{info, instrument, warn};

use crate::context::Context;
use crate::fetch::{self, Observed};
use crate::records::{remember_run, remember_written};
use crate::render;
use crate::status::{self, PodCounts};
use crate::validate::{self, validate, Invalid};
use crate::{aggregate, apply, events, rbac, reports};

/// Errors of a reconcile.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The spec is invalid; the Debugger waits for a change.
    #[error("invalid spec: {0}")]
    Invalid(#[from] Invalid),
    /// Writing failed (transient).
    #[error(transparent)]
    Apply(#[from] apply::Error),
    /// Writing the status failed (transient).
    #[error("writing status")]
    Status(#[source] kube::Error),
}

impl Error {
    /// Label of the `reconcile_errors` metric.
    pub fn kind(&self) -> &'static str {
        match self {
            Error::Invalid(i) => match i {
                Invalid::InvalidSpec(_) => "invalid_spec",
                Invalid::PingerNotFound(_) => "pinger_not_found",
                Invalid::ConfigMapNotFound(_) => "config_map_not_found",
                Invalid::WorkloadRefused(_) => "workload_refused",
            },
            Error::Apply(_) => "apply",
            Error::Status(_) => "status",
        }
    }
}

/// One reconcile of one Debugger; every outcome is logged here.
#[instrument(skip(dbg, ctx), fields(namespace = %dbg.namespace().unwrap_or_default(), name = %dbg.name_any()))]
pub async fn reconcile(dbg: Arc<Debugger>, ctx: Arc<Context>) -> Result<Action, Error> {
    let started = Instant::now();
    let result = pipeline(&dbg, &ctx).await;
    ctx.metrics.reconciled(started.elapsed().as_secs_f64());
    match &result {
        Ok(action) => {
            ctx.failures
                .lock()
                .expect("failures lock")
                .remove(&ObjectRef::from_obj(dbg.as_ref()));
            tracing::debug!(?action, "reconciled");
        }
        Err(Error::Invalid(i)) => info!(reason = i.reason(), message = %i, "invalid spec"),
        Err(e) => warn!(error = %e, source = ?std::error::Error::source(e), "reconcile failed"),
    }
    result
}

async fn pipeline(dbg: &Debugger, ctx: &Arc<Context>) -> Result<Action, Error> {
    if dbg.metadata.deletion_timestamp.is_some() {
        // The garbage collector removes what it owns; recreating a workload
        // now would only race it.
        return Ok(Action::await_change());
    }
    let mut observed = fetch::observe(&ctx.caches, dbg).await;
    let counts = workload_counts(dbg, &observed);
    if counts.is_some_and(|c| c.no_node) && !observed.reports.is_empty() {
        // No node is selected any more: no report is current, and none of
        // these nodes will run again.
        prune_all(ctx, dbg, &observed).await;
        observed.reports.clear();
    }
    let found = validate::Found {
        pinger: observed.pinger.as_ref(),
        scripts: observed.scripts,
    };
    let mut verdict = validate(&dbg.name_any(), &dbg.spec, found);
    let (mut action, mut news, mut summary) = (None, Vec::new(), None);
    // A refused workload write: reported like an invalid spec, then
    // returned so that `error_policy` retries it with backoff.
    let mut refused = None;
    if verdict.is_ok() {
        match converge(dbg, ctx, &observed).await {
            Ok(done) => {
                action = done.action;
                news.extend(done.event);
                summary = done.summary;
            }
            Err(apply::Error::NotOwned { kind, name }) => {
                verdict = Err(Invalid::InvalidSpec(format!(
                    "{kind} {name:?} already exists and is not owned by this Debugger"
                )))
            }
            Err(e) => {
                let failures = ctx
                    .failures
                    .lock()
                    .expect("failures lock")
                    .get(&ObjectRef::from_obj(dbg))
                    .copied()
                    .unwrap_or(0);
                let reported = match &e {
                    apply::Error::Write { kind, name, source } => {
                        validate::refusal(kind, name, source, failures)
                    }
                    apply::Error::NotOwned { .. } => None,
                };
                match reported {
                    Some(r) => {
                        verdict = Err(r);
                        refused = Some(e);
                    }
                    None => return Err(e.into()),
                }
            }
        }
    }
    let runs = aggregate::run_summary(observed.reports.values().map(|r| r.as_ref()));
    let now = Utc::now();
    // Only this operator writes the status, so the one it wrote last is the
    // current one even when the cached Debugger does not show it yet.
    let uid = dbg.metadata.uid.clone().unwrap_or_default();
    let written = ctx.written.lock().expect("written lock").get(&uid).cloned();
    let with_written;
    let current = match written {
        Some(w) if dbg.status.as_ref() != Some(&w) => {
            with_written = Debugger {
                status: Some(w),
                ..dbg.clone()
            };
            &with_written
        }
        _ => dbg,
    };
    let new = status::compute(current, verdict.as_ref().err(), counts, &runs, now);
    let changed = status::changed(current, &new);
    if let Err(invalid) = &verdict {
        news.splice(0..0, ctx.pace.take(&uid));
        if newly_reported(current.status.as_ref(), &new) {
            news.push(events::for_invalid(invalid));
        }
    } else if changed || !news.is_empty() || summary.is_some() || ctx.pace.holds(&uid) {
        // A valid Debugger's summary ConfigMap, status and Events wait
        // while workloads are being written (see `pace`).
        match ctx.pace.hold(&uid, &dbg.object_ref(&()), news) {
            // Sooner than any requeue `converge` asks for, which the next
            // reconcile asks for again.
            Ok(wait) => return Ok(Action::requeue(wait)),
            Err(due) => news = due,
        }
    }
    for event in news {
        events::publish(&ctx.recorder, dbg, event).await;
    }
    // Status and summary: at most one write each per `coalesce::WINDOW`;
    // what has to wait is written by a requeue.
    let mut wait: Option<Duration> = None;
    let mut hold = |d: Duration| wait = Some(wait.map_or(d, |w| w.min(d)));
    // An invalid spec's status goes out at once: its Event is published
    // above, once per generation and message, and a held status would
    // publish it again. Such writes are bounded by spec changes anyway.
    let coalesced = verdict.is_ok();
    if changed {
        match ctx
            .status_writes
            .wait(&uid, Instant::now())
            .filter(|_| coalesced)
        {
            Some(d) => hold(d),
            None => {
                write_status(ctx, dbg, &new).await?;
                ctx.status_writes.wrote(&uid, Instant::now());
                remember_written(ctx, uid.clone(), new.clone());
            }
        }
    }
    if let Some((summary, how)) = summary {
        match ctx.summary_writes.wait(&uid, Instant::now()) {
            Some(d) => hold(d),
            None => {
                // Last: should it fail, the Events above are out and the
                // retry only writes the ConfigMap.
                ctx.summary_writes.wrote(&uid, Instant::now());
                apply::summary(&ctx.client, &ctx.metrics, &ctx.caches, dbg, &summary, how).await?;
            }
        }
    }
    if let Some(last) = &new.last_run_at {
        prune_departed(ctx, dbg, &uid, last, &observed).await;
    }
    if let Some(e) = refused {
        return Err(e.into());
    }
    verdict?;
    if let Some(w) = wait {
        return Ok(Action::requeue(w));
    }
    Ok(
        action.unwrap_or_else(|| match status::next_run_at(&dbg.spec.run_at, now) {
            // Refresh nextRunAt once the scheduled time has passed.
            Some(next) => Action::requeue(
                (next - now)
                    .to_std()
                    .unwrap_or_default()
                    .saturating_add(Duration::from_secs(1)),
            ),
            None => Action::await_change(),
        }),
    )
}

/// At a new run (the newest `runAt` of the reports changed since this
/// process last looked), deletes the reports of nodes that run no pod of
/// the Debugger any more and did not report that run; the next summary
/// leaves their keys out. The first look after a start only records the
/// run, so a restarted operator does not list every Debugger's pods.
async fn prune_departed(ctx: &Context, dbg: &Debugger, uid: &str, last: &str, observed: &Observed) {
    let previous = remember_run(ctx, uid, last);
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
    let nodes = match reports::nodes_with_pods(&ctx.client, &ns, &dbg.name_any()).await {
        Ok(n) => n,
        Err(e) => {
            warn!(error = %e, "listing the Debugger's pods failed; reports of departed nodes stay until the next run");
            return;
        }
    };
    let gone = aggregate::departed(candidates, last, &nodes);
    for name in &gone {
        ctx.metrics.write("DebuggerReport");
        match reports::delete(&ctx.client, &ns, name).await {
            Ok(()) => info!(report = %name, "removed the report of a node that left"),
            Err(e) => warn!(report = %name, error = %e, "removing a report failed"),
        }
    }
    ctx.caches.reports.forget(&ns, &dbg.name_any(), &gone);
}

/// Deletes every report of `dbg`: its selector matches no node.
async fn prune_all(ctx: &Context, dbg: &Debugger, observed: &Observed) {
    let ns = dbg.namespace().unwrap_or_default();
    let names: Vec<String> = observed.reports.values().map(|r| r.name.clone()).collect();
    for name in &names {
        ctx.metrics.write("DebuggerReport");
        match reports::delete(&ctx.client, &ns, name).await {
            Ok(()) => info!(report = %name, "removed a report: the Debugger selects no node"),
            Err(e) => warn!(report = %name, error = %e, "removing a report failed"),
        }
    }
    ctx.caches.reports.forget(&ns, &dbg.name_any(), &names);
}

/// What `converge` did and left to do.
struct Converged {
    /// A requeue when a replaced Pod has to be recreated.
    action: Option<Action>,
    /// The Event of a workload change.
    event: Option<Event>,
    /// The summary ConfigMap, when it has to be written (after the pause
    /// `pace` asks for), and how.
    summary: Option<(ConfigMap, apply::SummaryWrite)>,
}

/// Applies the workload RBAC and the workload, and tells whether the
/// summary ConfigMap has to be written.
async fn converge(
    dbg: &Debugger,
    ctx: &Arc<Context>,
    observed: &Observed,
) -> Result<Converged, apply::Error> {
    let (data, level) = aggregate::summary_data(&observed.reports);
    if level != aggregate::Level::Full {
        tracing::debug!(
            ?level,
            nodes = observed.reports.len(),
            "summary values shortened to fit"
        );
    }
    let summary = render::summary_config_map(dbg, data);
    // Checked first: a summary name taken by another owner is an invalid
    // spec, and then no workload is written.
    let summary_due = apply::summary_due(dbg, &summary, observed.summary.as_ref())?;
    let account_uid = rbac::ensure(&ctx.client, &ctx.metrics, &ctx.caches, dbg).await?;
    let desired = render::workload(
        dbg,
        observed.pinger.as_ref(),
        &ctx.images,
        account_uid.as_deref(),
    );
    let change = apply::workload(
        &ctx.client,
        &ctx.metrics,
        &ctx.caches,
        dbg,
        &desired,
        observed,
    )
    .await?;
    if change != apply::Change::Unchanged {
        ctx.pace.wrote();
    }
    let ns = dbg.namespace().unwrap_or_default();
    let event = events::for_change(change, desired.kind(), &ns, &dbg.name_any());
    if event.is_some() {
        info!(?change, kind = desired.kind(), "workload written");
    }
    Ok(Converged {
        action: matches!(change, apply::Change::Replacing | apply::Change::Waiting)
            .then(|| Action::requeue(Duration::from_secs(1))),
        event,
        summary: summary_due.map(|how| (summary, how)),
    })
}

/// Counts of the workload that matches the spec's type, else of whichever exists.
fn workload_counts(dbg: &Debugger, observed: &Observed) -> Option<PodCounts> {
    let ds = observed
        .daemonset
        .as_ref()
        .filter(|d| apply::controlled_by(&d.metadata, dbg))
        .map(status::daemonset_counts);
    let pod = observed
        .pod
        .as_ref()
        .filter(|p| {
            apply::controlled_by(&p.metadata, dbg) && p.metadata.deletion_timestamp.is_none()
        })
        .map(status::pod_counts);
    match dbg.spec.workload_type {
        combo_api::WorkloadType::Daemonset => ds.or(pod),
        combo_api::WorkloadType::Pod => pod.or(ds),
    }
}

/// Whether the Ready condition in `new` is news: a new generation or a
/// different reason or message than the status already carries. Pure.
pub fn newly_reported(old: Option<&DebuggerStatus>, new: &DebuggerStatus) -> bool {
    let Some(old) = old else { return true };
    let ready = |s: &DebuggerStatus| {
        status::ready_of(&s.conditions).map(|c| (c.reason.clone(), c.message.clone()))
    };
    old.observed_generation != new.observed_generation || ready(old) != ready(new)
}

async fn write_status(ctx: &Context, dbg: &Debugger, new: &DebuggerStatus) -> Result<(), Error> {
    apply::status(&ctx.client, &ctx.metrics, dbg, new, "DebuggerStatus")
        .await
        .map_err(Error::Status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use combo_api::DebuggerSpec;

    #[test]
    fn an_invalid_spec_is_reported_once_per_generation_and_message() {
        let invalid = Invalid::InvalidSpec("bad".into());
        let mut d = Debugger::new("a", DebuggerSpec::default());
        d.metadata.namespace = Some("ops".into());
        let first = status::compute(&d, Some(&invalid), None, &Default::default(), Utc::now());
        assert!(newly_reported(None, &first));
        assert!(!newly_reported(Some(&first), &first));
        let other = Invalid::InvalidSpec("worse".into());
        let second = status::compute(&d, Some(&other), None, &Default::default(), Utc::now());
        assert!(newly_reported(Some(&first), &second));
    }
}
