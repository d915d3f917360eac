//! Debounce: a category turns failing on a node only once it has failed
//! `failureThreshold` runs in a row, and a failing one clears only once it
//! has been healthy `successThreshold` runs in a row, as the report's
//! history counts them. The node's condition and its taint both follow
//! the [`Mark`] decided here. Pure (docs/operator.md#debounce).

use combo_api::summary::cut;
use combo_api::Category;
use k8s_openapi::api::core::v1::NodeCondition;

use crate::core::node_marks::Wanted;
use crate::marks::state::{self, failed_message, reason_of, State, MESSAGE_MAX};

/// Reason of a category's condition when it failed in the latest run, but
/// fewer runs in a row than `failureThreshold`.
pub const REASON_BELOW_FAILURE_THRESHOLD: &str = "BelowFailureThreshold";
/// Reason of a failing category's condition while it has been healthy
/// fewer runs in a row than `successThreshold`.
pub const REASON_RECOVERING: &str = "Recovering";

/// A Debugger's thresholds, in consecutive runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Thresholds {
    /// `failureThreshold`: failed runs that make a category failing.
    pub failure: u32,
    /// `successThreshold`: healthy runs that clear a failing category.
    pub success: u32,
}

impl Thresholds {
    /// The thresholds `wanted` asks for (0, which validation refuses,
    /// counts as 1).
    pub fn of(wanted: &Wanted) -> Thresholds {
        Thresholds {
            failure: wanted.failure_threshold.max(1),
            success: wanted.success_threshold.max(1),
        }
    }
}

/// What a node carries of one category of the Debugger, as far as it
/// counts: its condition while `nodeConditions` is on, its taint while
/// `taints` lists the category.
#[derive(Clone, Copy, Debug, Default)]
pub struct Carried<'a> {
    /// The category's condition on the node.
    pub condition: Option<&'a NodeCondition>,
    /// Whether the node carries the category's taint.
    pub tainted: bool,
}

impl Carried<'_> {
    /// Whether the node shows the category failing now: its condition is
    /// True, or it is tainted.
    pub fn failing(&self) -> bool {
        self.tainted || self.true_condition().is_some()
    }

    fn true_condition(&self) -> Option<&NodeCondition> {
        self.condition.filter(|c| c.status == "True")
    }
}

/// How a category stands on a node once debounced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mark {
    /// Failing (condition True, a taint): it failed `runs` runs in a row,
    /// at least `threshold`, or failed again before it cleared.
    Failing {
        /// The first failed item of the latest run.
        item: String,
        /// Its err message.
        message: String,
        /// Failed items besides it.
        more: u32,
        /// Latest runs in a row with a failed item of the category.
        runs: u32,
        /// `failureThreshold`.
        threshold: u32,
    },
    /// It failed the latest `runs` runs, fewer than `threshold`
    /// (condition False, no taint).
    Below {
        /// The first failed item of the latest run.
        item: String,
        /// Its err message.
        message: String,
        /// Failed items besides it.
        more: u32,
        /// Latest runs in a row with a failed item of the category.
        runs: u32,
        /// `failureThreshold`.
        threshold: u32,
    },
    /// It was failing and has been healthy `healthy` runs in a row, fewer
    /// than `threshold` (condition True, a taint).
    Recovering {
        /// The failure it recovers from as the node's condition names it,
        /// without its count; `None` when the node carries no True
        /// condition (only the taint).
        last: Option<String>,
        /// The runs it failed in a row, as that condition counted them.
        failed: Option<u32>,
        /// Latest runs in a row without a failed item of the category.
        healthy: u32,
        /// `successThreshold`.
        threshold: u32,
    },
    /// Not failing: no item failed, and it was not failing or has cleared.
    Healthy,
    /// The node missed a run; its last report is of `since`.
    Unknown {
        /// The `runAt` of its last report.
        since: String,
    },
}

impl Mark {
    /// Whether the category is failing: its condition True, its node
    /// tainted if the category taints.
    pub fn failing(&self) -> bool {
        matches!(self, Mark::Failing { .. } | Mark::Recovering { .. })
    }
}

/// The mark of a category whose latest run ended in `state`, after
/// `streaks` (latest runs in a row with a failed item of it, and without
/// one, from the report's history), on a node that carries `carried`.
/// A report without history (`None`, an older runner) has nothing to
/// count: its latest run counts as one run of its state and decides, as
/// with thresholds of 1. Pure.
pub fn mark(
    state: State,
    streaks: Option<(u32, u32)>,
    carried: Carried<'_>,
    thresholds: Thresholds,
) -> Mark {
    let (thresholds, (fail, ok)) = match streaks {
        Some(s) => (thresholds, s),
        // Counting to the thresholds would leave such a node below the
        // failure threshold, or recovering, for good.
        None => (
            Thresholds {
                failure: 1,
                success: 1,
            },
            (1, 1),
        ),
    };
    match state {
        State::Unknown { since } => Mark::Unknown { since },
        State::Failed {
            item,
            message,
            more,
        } => {
            // An item the history left out (past its size) still failed
            // in this run.
            let runs = fail.max(1);
            let threshold = thresholds.failure;
            if runs >= threshold || carried.failing() {
                Mark::Failing {
                    item,
                    message,
                    more,
                    runs,
                    threshold,
                }
            } else {
                Mark::Below {
                    item,
                    message,
                    more,
                    runs,
                    threshold,
                }
            }
        }
        State::Healthy => {
            let healthy = ok.max(1);
            if healthy >= thresholds.success || !carried.failing() {
                return Mark::Healthy;
            }
            let (last, failed) = match carried.true_condition().and_then(|c| c.message.as_deref()) {
                Some(m) => {
                    let (last, failed) = split_note(m);
                    (Some(last), failed)
                }
                None => (None, None),
            };
            Mark::Recovering {
                last,
                failed,
                healthy,
                threshold: thresholds.success,
            }
        }
    }
}

/// Status, reason and message of `category`'s condition at `mark`. The
/// runs counted come last, in parentheses, and survive the cut of a long
/// message. Pure.
pub fn condition_of(category: Category, mark: &Mark) -> (&'static str, String, String) {
    match mark {
        Mark::Failing {
            item,
            message,
            more,
            runs,
            threshold,
        } => {
            let note = (*runs > 1 || *threshold > 1).then(|| failed_runs(*runs));
            let m = noted(failed_message(item, message, *more), note);
            ("True", reason_of(item), m)
        }
        Mark::Below {
            item,
            message,
            more,
            runs,
            threshold,
        } => {
            let note = format!("failed {runs} of {threshold} runs");
            let m = noted(failed_message(item, message, *more), Some(note));
            ("False", REASON_BELOW_FAILURE_THRESHOLD.into(), m)
        }
        Mark::Recovering {
            last,
            failed,
            healthy,
            threshold,
        } => {
            let last = last
                .clone()
                .unwrap_or_else(|| format!("no {category} item failed"));
            let clear = format!("healthy {healthy} of {threshold} runs to clear");
            let note = match failed {
                Some(n) => format!("{}; {clear}", failed_runs(*n)),
                None => clear,
            };
            ("True", REASON_RECOVERING.into(), noted(last, Some(note)))
        }
        Mark::Healthy => state::condition_of(category, &State::Healthy),
        Mark::Unknown { since } => state::condition_of(
            category,
            &State::Unknown {
                since: since.clone(),
            },
        ),
    }
}

/// `failed N runs` (`1 run`).
fn failed_runs(n: u32) -> String {
    format!("failed {n} {}", if n == 1 { "run" } else { "runs" })
}

/// `base`, and ` (<note>)` when there is a note, within [`MESSAGE_MAX`]
/// (and a cut mark): the base is cut, never the note.
fn noted(mut base: String, note: Option<String>) -> String {
    let Some(note) = note else {
        cut(&mut base, MESSAGE_MAX);
        return base;
    };
    let note = format!(" ({note})");
    cut(&mut base, MESSAGE_MAX.saturating_sub(note.len()));
    base + &note
}

/// A True condition's message split as [`condition_of`] wrote it: the
/// failure it names, and the runs its note says it failed.
/// `/var: 97% used (failed 4 runs)` gives `/var: 97% used` and 4; a
/// message without a note (`failed 1 run` is left out by default, or an
/// older operator wrote it) is all failure. Pure.
pub fn split_note(message: &str) -> (String, Option<u32>) {
    let parsed = message
        .strip_suffix(')')
        .and_then(|m| m.rsplit_once(" ("))
        .and_then(|(base, note)| {
            let mut failed = None;
            for part in note.split("; ") {
                let runs = part
                    .strip_prefix("failed ")
                    .and_then(|p| p.strip_suffix(" runs").or_else(|| p.strip_suffix(" run")));
                if let Some(n) = runs {
                    failed = Some(n.parse::<u32>().ok()?);
                } else if !(part.starts_with("healthy ") && part.ends_with(" to clear")) {
                    return None;
                }
            }
            Some((base.to_string(), failed))
        });
    parsed.unwrap_or_else(|| (message.to_string(), None))
}

#[cfg(test)]
#[path = "debounce_tests.rs"]
mod tests;
