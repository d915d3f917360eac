//! How each category ended on a node, from its report, and the node
//! condition that says so: status, reason and message. Pure
//! (docs/operator.md#node-conditions).

use combo_api::Category;

use crate::reports::aggregate::NodeReport;

/// Reason of a category's condition when no item of it failed.
pub const REASON_NO_FAILURES: &str = "NoFailures";
/// Reason of a node's conditions when it missed a run.
pub const REASON_RUN_MISSED: &str = "RunMissed";
/// Longest reason: the first failed item in CamelCase, cut.
pub const REASON_MAX: usize = 64;
/// Messages are cut to this many bytes (and ` [cut]`).
pub const MESSAGE_MAX: usize = 250;

/// How a category ended on a node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum State {
    /// An item failed: the first, its message, how many more failed.
    Failed {
        /// The first failed item.
        item: String,
        /// Its err message.
        message: String,
        /// Failed items besides it.
        more: u32,
    },
    /// No item failed.
    Healthy,
    /// The node missed a run; its last report is of `since`.
    Unknown {
        /// The `runAt` of its last report.
        since: String,
    },
}

/// The state of each of `categories` that `report` holds; `missed`: the
/// node missed the checked run. Pure.
pub fn states(
    report: &NodeReport,
    categories: &[Category],
    missed: bool,
) -> Vec<(Category, State)> {
    let spec = &report.spec;
    categories
        .iter()
        .filter_map(|c| Some((*c, report.first_failure(c.as_str())?)))
        .map(|(c, first)| {
            if missed {
                let since = spec.run_at.clone();
                return (c, State::Unknown { since });
            }
            // Every failure counts, those the report left out too.
            let count = report.failed_in(c.as_str());
            match first {
                Some(f) => (
                    c,
                    State::Failed {
                        item: f.item.to_string(),
                        message: f.message.to_string(),
                        more: count.saturating_sub(1),
                    },
                ),
                None => (c, State::Healthy),
            }
        })
        .collect()
}

/// `item` as a condition reason: CamelCase of its letters and digits
/// (`smart/sda`: `SmartSda`), prefixed `Item` unless it starts with a
/// letter, at most [`REASON_MAX`] characters. Pure.
pub fn reason_of(item: &str) -> String {
    let mut out = String::new();
    let mut upper = true;
    for c in item.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(if upper { c.to_ascii_uppercase() } else { c });
            upper = false;
        } else {
            upper = true;
        }
    }
    if !out.starts_with(|c: char| c.is_ascii_alphabetic()) {
        out.insert_str(0, "Item");
    }
    out.truncate(REASON_MAX);
    out
}

/// The message of a failed category, uncut: `<item>: <message>`, and
/// ` (+N more failed)` when `more` did. Pure.
pub fn failed_message(item: &str, message: &str, more: u32) -> String {
    let mut m = format!("{item}: {message}");
    if more > 0 {
        m.push_str(&format!(" (+{more} more failed)"));
    }
    m
}

/// Status, reason and message of `category`'s condition in `state`. Pure.
pub fn condition_of(category: Category, state: &State) -> (&'static str, String, String) {
    match state {
        State::Failed {
            item,
            message,
            more,
        } => {
            let mut m = failed_message(item, message, *more);
            combo_api::summary::cut(&mut m, MESSAGE_MAX);
            ("True", reason_of(item), m)
        }
        State::Healthy => (
            "False",
            REASON_NO_FAILURES.into(),
            format!("no {category} item failed"),
        ),
        State::Unknown { since } => (
            "Unknown",
            REASON_RUN_MISSED.into(),
            format!("no report of a run since {since}"),
        ),
    }
}
