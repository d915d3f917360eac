//! Run-now requests: the one fate of each `kubecombo.io/run-now` value,
//! said in condition `RunNow` (docs/operator.md, "Run-now requests").
//! A request runs on the pods there are when it is due, or is dropped,
//! and a request that nothing can run any more is taken off the Debugger
//! once the status says so, so that no pod runs it later under its old
//! time. Pure.

use chrono::{DateTime, Duration, Utc};
use combo_api::runat::parse_run_now;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

use crate::core::status::{self, PodCounts, REASON_NO_NODES_SELECTED, REASON_WORKLOAD_NOT_READY};

/// The condition type that answers a Debugger's run-now request.
pub const CONDITION_RUN_NOW: &str = "RunNow";
/// Reason of `RunNow=True`: the request ran.
pub const REASON_RAN: &str = "Ran";
/// Reason of `RunNow=False`: the request was dropped and never runs.
pub const REASON_DROPPED: &str = "Dropped";
/// Reason of `RunNow=Unknown`: its time has not come, or its runs have
/// not all been reported yet.
pub const REASON_WAITING: &str = "Waiting";
/// How long after its time a request waits for a Ready pod when none of
/// the workload's pods is Ready: a pod Ready later would run it minutes
/// late under its old time. As long as a roll keeps `Ready=True`
/// ([`status::ROLLOUT_GRACE`]).
pub const NOT_READY_GRACE: Duration = status::ROLLOUT_GRACE;

/// When to look again after dropping a request, to take it off once the
/// status holds the answer: past the 2 s coalescing of status writes.
pub const AFTER_STATUS: Duration = Duration::seconds(3);

/// What can run a request: the workload and what reported it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Serving<'a> {
    /// Pod counts of the workload; `None` when it has none.
    pub counts: Option<PodCounts>,
    /// The reason of an invalid spec (nothing is applied then).
    pub invalid: Option<&'a str>,
    /// Reports whose `kubecombo.io/run-now-done` is the request.
    pub served: i32,
}

/// What the operator does about a request.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Answer {
    /// The `RunNow` condition; `None` for a Debugger never asked.
    pub condition: Option<Condition>,
    /// The annotation value to take off the Debugger (only if it still
    /// holds it).
    pub remove: Option<String>,
    /// When to look again.
    pub recheck: Option<DateTime<Utc>>,
}

/// The start of every message about request `value`.
fn prefix(value: &str) -> String {
    format!("run-now request of {value} ")
}

/// The answer to the request `value` (the annotation, if set), given the
/// conditions the Debugger carries (`previous`), what can serve it, its
/// generation and the time. An answered request keeps its answer; a
/// request nothing can run any more is removed, answered or not.
pub fn answer(
    value: Option<&str>,
    previous: &[Condition],
    serving: Serving<'_>,
    generation: i64,
    now: DateTime<Utc>,
) -> Answer {
    let before = previous.iter().find(|c| c.type_ == CONDITION_RUN_NOW);
    let Some(value) = value else {
        // The last answer stays in sight after the annotation is gone.
        return Answer {
            condition: before.cloned(),
            ..Answer::default()
        };
    };
    let said = |(state, reason, message): (&str, &str, String)| {
        let message = format!("{}{message}", prefix(value));
        status::condition(
            previous,
            CONDITION_RUN_NOW,
            (state, reason, message),
            generation,
            now,
        )
    };
    let cannot_run = match serving.counts {
        Some(c) if c.no_node => Some(REASON_NO_NODES_SELECTED),
        Some(_) => None,
        None => serving.invalid,
    };
    let answered = before
        .filter(|c| c.message.starts_with(&prefix(value)))
        .filter(|c| c.reason != REASON_WAITING);
    if let Some(done) = answered {
        // Its nodes are gone, or it was dropped: nothing runs it again.
        let gone = cannot_run.is_some() || done.reason == REASON_DROPPED;
        return Answer {
            condition: Some(done.clone()),
            remove: gone.then(|| value.to_string()),
            recheck: None,
        };
    }
    // Taken off once the status says so (the branch above): a removal
    // seen before a held status write would leave no answer.
    let dropped = |why: String| Answer {
        condition: Some(said((
            "False",
            REASON_DROPPED,
            format!("dropped: {why}; it does not run later"),
        ))),
        remove: None,
        recheck: Some(now + AFTER_STATUS),
    };
    let run = match parse_run_now(value) {
        Ok(run) => run,
        Err(e) => return dropped(e),
    };
    if run.0 > now {
        return Answer {
            condition: Some(said((
                "Unknown",
                REASON_WAITING,
                "waits for its time".into(),
            ))),
            remove: None,
            recheck: Some(run.0),
        };
    }
    if let Some(reason) = cannot_run {
        return dropped(format!("{reason}: no pod was there to run it"));
    }
    let counts = serving.counts.unwrap_or_default();
    let (served, desired) = (serving.served, counts.desired);
    let grace_over = now >= run.0 + NOT_READY_GRACE;
    if served > 0 && (served >= desired || grace_over) {
        return Answer {
            condition: Some(said((
                "True",
                REASON_RAN,
                format!("ran on {served} of {desired} node(s)"),
            ))),
            remove: None,
            recheck: None,
        };
    }
    if served == 0 && counts.ready == 0 && grace_over {
        return dropped(format!(
            "{REASON_WORKLOAD_NOT_READY}: no pod was Ready within {} s of its time",
            NOT_READY_GRACE.num_seconds()
        ));
    }
    Answer {
        condition: Some(said((
            "Unknown",
            REASON_WAITING,
            format!("runs: {served} of {desired} node(s) reported it"),
        ))),
        remove: None,
        recheck: Some(run.0 + NOT_READY_GRACE + Duration::seconds(1)),
    }
}

#[cfg(test)]
#[path = "run_now_tests.rs"]
mod tests;
