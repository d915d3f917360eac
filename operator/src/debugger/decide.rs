//! Plan: what one reconcile writes after the workload, decided from what
//! it observed and what the operator wrote before. Pure: the status, the
//! Events, the summary ConfigMap and when to look again, with no I/O and
//! no clock of its own (docs/operator.md, "The pipeline").

use chrono::{DateTime, Utc};
use combo_api::{keys, Debugger, DebuggerStatus};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::runtime::controller::Action;
use kube::runtime::events::Event;
use kube::ResourceExt;

use crate::core::events;
use crate::core::run_now::{self, Serving};
use crate::core::status::{self, PodCounts, RunSummary};
use crate::core::validate::Verdict;
use crate::marks::{self, status::DebuggerMarks};
use crate::state::observed::Observed;
use crate::summary::write::SummaryWrite;

/// The reports to delete before anything else is decided: all of them,
/// when the Debugger's workload selects no node, since none of them is
/// current and none of those nodes will run again.
pub fn unselected(counts: Option<PodCounts>, observed: &Observed) -> Vec<String> {
    if !counts.is_some_and(|c| c.no_node) {
        return Vec::new();
    }
    observed.reports.values().map(|r| r.name.clone()).collect()
}

/// What the workload step did, when the spec was valid.
#[derive(Default)]
pub struct Converged {
    /// A requeue when a replaced Pod has to be recreated.
    pub action: Option<Action>,
    /// The Event of a workload change.
    pub event: Option<Event>,
    /// The summary ConfigMap, when it has to be written, and how.
    pub summary: Option<(ConfigMap, SummaryWrite)>,
}

/// Everything a plan is made from.
pub struct Inputs<'a> {
    /// The Debugger as the cache shows it.
    pub dbg: &'a Debugger,
    /// The status the operator last wrote for it, if the cache may not
    /// show it yet.
    pub written: Option<DebuggerStatus>,
    /// The verdict: valid (with its parsed `runAt`), or why not.
    pub verdict: &'a Verdict,
    /// What the workload step did (nothing for an invalid spec).
    pub converged: Converged,
    /// Pod counts of the workload, if one exists.
    pub counts: Option<PodCounts>,
    /// Run fields from the reports.
    pub runs: RunSummary,
    /// What the node marks step adds: conditions, an Event, a recheck.
    pub marks: DebuggerMarks,
    /// Why the Pinger it uses is not Ready, if it is not.
    pub pinger_not_ready: Option<String>,
    /// What its pods wait on, if some wait ([`crate::watch::waiting::describe`]).
    pub waiting: Option<String>,
    /// Why its DaemonSet's pods are refused, if they are
    /// ([`crate::watch::refusals::Refusals::describe`]).
    pub refused: Option<String>,
    /// Reports that record the Debugger's run-now request as run
    /// ([`crate::reports::runs::served`]).
    pub run_now_served: i32,
    /// The time the plan is for.
    pub now: DateTime<Utc>,
}

/// The writes of one reconcile after the workload.
pub struct Plan {
    /// The status the Debugger should have.
    pub status: DebuggerStatus,
    /// Whether it differs from the current one (a write is due).
    pub status_changed: bool,
    /// Whether status and summary writes are coalesced and paced (a valid
    /// spec); an invalid spec's status goes out at once, its Event once per
    /// generation and message.
    pub paced: bool,
    /// Events to publish, in order.
    pub events: Vec<Event>,
    /// The summary ConfigMap to write, and how.
    pub summary: Option<(ConfigMap, SummaryWrite)>,
    /// The run-now request to take off the Debugger: nothing can run it
    /// any more (docs/operator.md, "Run-now requests").
    pub remove_run_now: Option<String>,
    /// What the controller does next once everything is written.
    pub next: Action,
}

/// The plan for `inputs`. Pure.
pub fn decide(inputs: Inputs<'_>) -> Plan {
    let Inputs {
        dbg,
        written,
        verdict,
        converged,
        counts,
        runs,
        marks,
        pinger_not_ready,
        waiting,
        refused,
        run_now_served,
        now,
    } = inputs;
    // Only this operator writes the status, so the one it wrote last is the
    // current one even when the cached Debugger does not show it yet.
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
    let (run_at, invalid) = match verdict {
        Ok(valid) => (Some(&valid.run_at), None),
        Err(rejected) => (rejected.run_at.as_ref(), Some(&rejected.invalid)),
    };
    let mut status = status::compute(
        current,
        invalid,
        counts,
        &runs,
        run_at,
        now,
        pinger_not_ready.as_deref(),
    );
    let previous = current.status.as_ref().map(|s| s.conditions.as_slice());
    status::with_refused(
        &mut status,
        previous.unwrap_or_default(),
        refused.as_deref(),
        now,
    );
    status::with_waiting(&mut status, waiting.as_deref());
    let (conditions, marks_events) = marks::status::conditions(
        previous.unwrap_or_default(),
        &marks,
        status.observed_generation,
        now,
    );
    status.conditions.extend(conditions);
    let request = run_now::answer(
        dbg.annotations()
            .get(keys::ANNOTATION_RUN_NOW)
            .map(String::as_str),
        previous.unwrap_or_default(),
        Serving {
            counts,
            invalid: invalid.map(|i| i.reason()),
            served: run_now_served,
        },
        status.observed_generation,
        now,
    );
    status.conditions.extend(request.condition);
    let status_changed = status::changed(current, &status);
    let mut events: Vec<Event> = converged.event.into_iter().collect();
    if let Some(invalid) = invalid {
        if newly_reported(current.status.as_ref(), &status) {
            events.push(events::for_invalid(invalid));
        }
    } else if let Some(refused) = newly_refused(previous.unwrap_or_default(), &status) {
        events.push(events::for_refused_pods(refused));
    }
    let new_generation =
        current.status.as_ref().map(|s| s.observed_generation) != dbg.metadata.generation;
    if let (Ok(valid), true) = (verdict, new_generation) {
        events.extend(events::for_distant(&valid.run_at, now));
    }
    events.extend(marks_events);
    // An invalid spec waits for a change: its retry looks again only for
    // a held write (see `write`).
    let next = if invalid.is_some() {
        Action::await_change()
    } else {
        converged.action.unwrap_or_else(|| {
            // Refresh nextRunAt once the scheduled time has passed; check the
            // runs nodes missed once a deadline passes.
            let refresh = run_at
                .and_then(|r| r.next_after(now))
                .map(|t| t + chrono::Duration::seconds(1));
            let rollout = status::rollout_recheck(&status);
            match refresh
                .into_iter()
                .chain(marks.recheck_at)
                .chain(rollout)
                .chain(request.recheck)
                .min()
            {
                Some(at) => Action::requeue((at - now).to_std().unwrap_or_default()),
                None => Action::await_change(),
            }
        })
    };
    Plan {
        status,
        status_changed,
        paced: verdict.is_ok(),
        events,
        summary: converged.summary,
        remove_run_now: request.remove,
        next,
    }
}

/// The message of `new`'s Ready condition when it has just become
/// `WorkloadRefused`, for its Event: once per refusal, not per retry of
/// the DaemonSet controller (each names a new pod). Pure.
fn newly_refused<'a>(previous: &[Condition], new: &'a DebuggerStatus) -> Option<&'a str> {
    let refused = |c: &&Condition| c.reason == status::REASON_WORKLOAD_REFUSED;
    let now = status::ready_of(&new.conditions).filter(refused)?;
    status::ready_of(previous)
        .filter(refused)
        .is_none()
        .then_some(now.message.as_str())
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

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
