//! What node marks add to a Debugger's status: the conditions
//! `RunsMissed`, `TaintLimitReached` and `TaintsDisabled`, the Warning
//! Event `TaintLimitReached`, and when to look again. Pure
//! (docs/operator.md#node-conditions-taints-and-missed-runs).

use chrono::{DateTime, Utc};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::runtime::events::{Event, EventType};

use crate::core::status;
use crate::marks::taints::Limit;
use crate::reports::missed::CONDITION_RUNS_MISSED;

/// Type (and reason, when True) of the condition telling that failing
/// nodes were left untainted.
pub const CONDITION_TAINT_LIMIT: &str = "TaintLimitReached";
/// Reason of `TaintLimitReached=False`.
pub const REASON_WITHIN_TAINT_LIMIT: &str = "WithinTaintLimit";
/// Type and reason of the condition of a Debugger asking for taints from
/// an operator that runs with `--no-taints`.
pub const CONDITION_TAINTS_DISABLED: &str = "TaintsDisabled";

/// What the node marks step tells the Debugger's status.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DebuggerMarks {
    /// `RunsMissed` as (status, reason, message), when `runAt` schedules
    /// runs and the spec is valid.
    pub runs_missed: Option<(bool, String, String)>,
    /// The taints' standing, when `taints` lists a category.
    pub limit: Option<Limit>,
    /// `taints` lists categories and the operator runs with `--no-taints`.
    pub taints_disabled: bool,
    /// When the next run's deadline passes.
    pub recheck_at: Option<DateTime<Utc>>,
}

fn truth(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}

/// The conditions `marks` add to the status (transition times kept from
/// `previous`), and the Events to record: `TaintLimitReached` when that
/// condition turns True. Pure.
pub fn conditions(
    previous: &[Condition],
    marks: &DebuggerMarks,
    generation: i64,
    now: DateTime<Utc>,
) -> (Vec<Condition>, Vec<Event>) {
    let mut out = Vec::new();
    let mut events = Vec::new();
    let make = |type_: &str, (status, reason, message): (&str, &str, String)| {
        status::condition(previous, type_, (status, reason, message), generation, now)
    };
    if let Some((missed, reason, message)) = &marks.runs_missed {
        out.push(make(
            CONDITION_RUNS_MISSED,
            (truth(*missed), reason, message.clone()),
        ));
    }
    if let Some(limit) = &marks.limit {
        let (reason, message) = if limit.reached() {
            (
                CONDITION_TAINT_LIMIT,
                format!(
                    "{} nodes fail a tainting category; {} of at most {} (maxTaintedPercent {} of {} nodes) are tainted",
                    limit.failing, limit.tainted, limit.limit, limit.percent, limit.nodes
                ),
            )
        } else {
            (
                REASON_WITHIN_TAINT_LIMIT,
                format!(
                    "every failing node is tainted; at most {} of {} nodes may be",
                    limit.limit, limit.nodes
                ),
            )
        };
        let was = previous
            .iter()
            .any(|c| c.type_ == CONDITION_TAINT_LIMIT && c.status == "True");
        if limit.reached() && !was {
            events.push(Event {
                type_: EventType::Warning,
                reason: CONDITION_TAINT_LIMIT.into(),
                note: Some(crate::core::events::note(&message)),
                action: "Taint".into(),
                secondary: None,
            });
        }
        out.push(make(
            CONDITION_TAINT_LIMIT,
            (truth(limit.reached()), reason, message),
        ));
    }
    if marks.taints_disabled {
        out.push(make(
            CONDITION_TAINTS_DISABLED,
            (
                "True",
                CONDITION_TAINTS_DISABLED,
                "the operator runs with --no-taints: spec.taints is not applied".into(),
            ),
        ));
    }
    (out, events)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        "2026-01-01T00:00:00Z".parse().unwrap()
    }

    fn limit(left_out: usize) -> Limit {
        Limit {
            failing: 2 + left_out,
            tainted: 2,
            left_out,
            limit: 2,
            nodes: 20,
            percent: 10,
        }
    }

    #[test]
    fn the_limit_condition_turning_true_records_one_warning() {
        let marks = DebuggerMarks {
            limit: Some(limit(3)),
            ..DebuggerMarks::default()
        };
        let (first, events) = conditions(&[], &marks, 1, now());
        assert_eq!(first.len(), 1);
        assert_eq!(first[0].type_, "TaintLimitReached");
        assert_eq!(first[0].status, "True");
        assert_eq!(
            first[0].message,
            "5 nodes fail a tainting category; 2 of at most 2 (maxTaintedPercent 10 of 20 nodes) are tainted"
        );
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].reason, "TaintLimitReached");
        let later = now() + chrono::Duration::minutes(5);
        let (again, events) = conditions(&first, &marks, 1, later);
        assert!(events.is_empty(), "still reached: no second Event");
        assert_eq!(again[0].last_transition_time, first[0].last_transition_time);
        let within = DebuggerMarks {
            limit: Some(limit(0)),
            ..DebuggerMarks::default()
        };
        let (cleared, events) = conditions(&again, &within, 1, later);
        assert!(events.is_empty());
        assert_eq!(
            (cleared[0].status.as_str(), cleared[0].reason.as_str()),
            ("False", "WithinTaintLimit")
        );
    }

    #[test]
    fn runs_missed_and_taints_disabled_are_their_own_conditions() {
        let marks = DebuggerMarks {
            runs_missed: Some((false, "NoRunsMissed".into(), "no node missed a run".into())),
            taints_disabled: true,
            ..DebuggerMarks::default()
        };
        let (c, events) = conditions(&[], &marks, 4, now());
        let types: Vec<(&str, &str)> = c
            .iter()
            .map(|c| (c.type_.as_str(), c.status.as_str()))
            .collect();
        assert_eq!(types, [("RunsMissed", "False"), ("TaintsDisabled", "True")]);
        assert!(events.is_empty());
        assert_eq!(c[0].observed_generation, Some(4));
        assert!(conditions(&[], &DebuggerMarks::default(), 1, now())
            .0
            .is_empty());
    }
}
