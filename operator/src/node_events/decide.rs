//! Decide: the Events on its Node that one report's run makes, from the
//! history the report carries (docs/operator.md, "Events on the Node").
//! Pure.
//!
//! * An item that turned failing in the run is a new Event, named from
//!   the node, the Debugger, the item and the run its failures started
//!   (`failingSince`): the same name for every run of that streak.
//! * An item that fails again in the next run is the same Event, its
//!   `count` (the streak's failed runs) and `lastTimestamp` patched.
//! * An item that recovered in the run is one Event of its own.
//!
//! A report seen for the first time (a new report, or every report after
//! the operator started or took the lead) makes only the Events of its
//! run's changes: those of the streaks going on are patched at their next
//! run, so a restart does not write every failing item's Event again. A
//! run seen before makes none.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use combo_api::hash::fnv1a;
use combo_api::history::{self, Change, History, FAILED};
use combo_api::summary::{cut, CUT_MARKER};
use combo_api::{Category, DebuggerReportSpec};
use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::{json, Value};

use crate::core::status::to_timestamp;
use crate::node_events::seen::Sight;
use crate::node_events::{COMPONENT, NAMESPACE};

/// Reason of an Event of a failed `disk` item.
pub const EVENT_DISK_PROBLEM: &str = "DiskProblem";
/// Reason of an Event of a failed `net` item.
pub const EVENT_NET_PROBLEM: &str = "NetProblem";
/// Reason of an Event of a failed `mem` item.
pub const EVENT_MEM_PROBLEM: &str = "MemProblem";
/// Reason of an Event of a failed `svc` item.
pub const EVENT_SVC_PROBLEM: &str = "SvcProblem";
/// Reason of an Event of a failed `custom` item.
pub const EVENT_CUSTOM_PROBLEM: &str = "CustomProblem";
/// Reason of an Event of a recovered `disk` item.
pub const EVENT_DISK_RECOVERED: &str = "DiskRecovered";
/// Reason of an Event of a recovered `net` item.
pub const EVENT_NET_RECOVERED: &str = "NetRecovered";
/// Reason of an Event of a recovered `mem` item.
pub const EVENT_MEM_RECOVERED: &str = "MemRecovered";
/// Reason of an Event of a recovered `svc` item.
pub const EVENT_SVC_RECOVERED: &str = "SvcRecovered";
/// Reason of an Event of a recovered `custom` item.
pub const EVENT_CUSTOM_RECOVERED: &str = "CustomRecovered";

/// Longest message, as the Events API takes notes: 1 KiB.
pub const MAX_MESSAGE: usize = 1024;
/// Longest object name.
const MAX_NAME: usize = 253;

/// The reasons of `category`'s Events: a failure's and a recovery's.
pub fn reasons(category: Category) -> (&'static str, &'static str) {
    match category {
        Category::Disk => (EVENT_DISK_PROBLEM, EVENT_DISK_RECOVERED),
        Category::Net => (EVENT_NET_PROBLEM, EVENT_NET_RECOVERED),
        Category::Mem => (EVENT_MEM_PROBLEM, EVENT_MEM_RECOVERED),
        Category::Svc => (EVENT_SVC_PROBLEM, EVENT_SVC_RECOVERED),
        Category::Custom => (EVENT_CUSTOM_PROBLEM, EVENT_CUSTOM_RECOVERED),
    }
}

/// One Event on a Node as it should be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeEvent {
    /// Its name, in [`NAMESPACE`].
    pub name: String,
    /// The Node.
    pub node: String,
    pub reason: &'static str,
    /// Warning (a failure) or Normal (a recovery).
    pub warning: bool,
    pub message: String,
    /// Failed runs of the streak; 1 for a recovery.
    pub count: u32,
    /// When the streak started, or the run of a recovery.
    pub first: DateTime<Utc>,
    /// The run.
    pub last: DateTime<Utc>,
    /// Whether it is new, so its write is a create; else it exists and its
    /// write is a patch (each falls back on the other).
    pub new: bool,
}

impl NodeEvent {
    /// The Event object, for a create.
    pub fn object(&self) -> Event {
        let mut e = Event {
            involved_object: ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Node".into()),
                name: Some(self.node.clone()),
                // `kubectl describe node` finds a Node's Events by the
                // node's name in `uid`, as the kubelet writes them.
                uid: Some(self.node.clone()),
                ..ObjectReference::default()
            },
            reason: Some(self.reason.into()),
            message: Some(self.message.clone()),
            type_: Some(if self.warning { "Warning" } else { "Normal" }.into()),
            count: Some(self.count as i32),
            first_timestamp: Some(Time(to_timestamp(self.first))),
            last_timestamp: Some(Time(to_timestamp(self.last))),
            source: Some(EventSource {
                component: Some(COMPONENT.into()),
                host: None,
            }),
            reporting_component: Some(COMPONENT.into()),
            ..Event::default()
        };
        e.metadata.name = Some(self.name.clone());
        e.metadata.namespace = Some(NAMESPACE.into());
        e
    }

    /// The merge patch that brings the Event there to this one.
    pub fn patch(&self) -> Value {
        json!({
            "count": self.count,
            "message": self.message,
            "lastTimestamp": Time(to_timestamp(self.last)),
        })
    }
}

/// The history of `spec` when it is that of the report's run: the run is
/// its latest.
fn history_of_run(spec: &DebuggerReportSpec) -> Option<&History> {
    let h = &spec.history;
    (h.runs.last() == Some(&spec.run_at)).then_some(h)
}

/// Items of each category that turned failing in the report's run (none
/// without a history of it), only the categories there are.
pub fn turned_failing(spec: &DebuggerReportSpec) -> BTreeMap<Category, u64> {
    let mut out = BTreeMap::new();
    let Some(history) = history_of_run(spec) else {
        return out;
    };
    for (key, change) in history.changes() {
        let (cat, _) = history::split(key);
        if let (Change::Failed, Ok(c)) = (change, cat.parse::<Category>()) {
            *out.entry(c).or_insert(0) += 1;
        }
    }
    out
}

/// The Events of the run of `spec` (a report in namespace `ns`), as
/// `sight` saw it.
pub fn decide(ns: &str, spec: &DebuggerReportSpec, sight: Sight) -> Vec<NodeEvent> {
    let Some(history) = history_of_run(spec) else {
        return Vec::new();
    };
    if sight == Sight::SameRun {
        return Vec::new();
    }
    let Some(run) = parse(&spec.run_at) else {
        return Vec::new();
    };
    let changes: BTreeMap<&str, Change> = history.changes().into_iter().collect();
    let mut out = Vec::new();
    for (key, h) in &history.items {
        let (cat, item) = history::split(key);
        let Ok(category) = cat.parse::<Category>() else {
            continue;
        };
        let (problem, recovered) = reasons(category);
        let prefix = format!("{ns}/{}: {key}", spec.debugger);
        let change = changes.get(key.as_str()).copied();
        let failing = h.verdicts.ends_with(FAILED);
        match change {
            Some(Change::Recovered) => {
                let runs = failed_before_last(&h.verdicts);
                out.push(NodeEvent {
                    name: name(spec, ns, key, &["recovered", &spec.run_at]),
                    node: spec.node.clone(),
                    reason: recovered,
                    warning: false,
                    message: fit(format!("{prefix} recovered after {runs} failed runs")),
                    count: 1,
                    first: run,
                    last: run,
                    new: true,
                });
            }
            _ if !failing || (change.is_none() && sight == Sight::First) => {}
            _ => {
                let since = if h.failing_since.is_empty() {
                    &spec.run_at
                } else {
                    &h.failing_since
                };
                let err = spec
                    .categories
                    .get(cat)
                    .and_then(|items| items.get(item))
                    .and_then(|r| r.err.as_deref())
                    .unwrap_or("failed");
                out.push(NodeEvent {
                    name: name(spec, ns, key, &["failing", since]),
                    node: spec.node.clone(),
                    reason: problem,
                    warning: true,
                    message: fit(format!("{prefix}: {err}")),
                    count: history.failing_runs(key).max(1) as u32,
                    first: parse(since).unwrap_or(run),
                    last: run,
                    new: change == Some(Change::Failed),
                });
            }
        }
    }
    out
}

/// Failed runs just before the last verdict: the streak a recovery ended
/// (at most the runs a history keeps).
fn failed_before_last(verdicts: &str) -> usize {
    let mut rev = verdicts.chars().rev();
    rev.next();
    rev.take_while(|c| *c == FAILED).count()
}

/// `message` cut to [`MAX_MESSAGE`] bytes, its cut marked.
fn fit(mut message: String) -> String {
    if message.len() > MAX_MESSAGE {
        cut(&mut message, MAX_MESSAGE - CUT_MARKER.len());
    }
    message
}

/// The name of the Event of item `key` of `spec`'s node in namespace `ns`,
/// told apart by `parts`: `<node>.<16 hex digits>`, the node's name cut
/// when it would make the name too long.
fn name(spec: &DebuggerReportSpec, ns: &str, key: &str, parts: &[&str]) -> String {
    let mut hashed: Vec<&[u8]> = vec![
        spec.node.as_bytes(),
        ns.as_bytes(),
        spec.debugger.as_bytes(),
        key.as_bytes(),
    ];
    hashed.extend(parts.iter().map(|p| p.as_bytes()));
    let hash = format!("{:016x}", fnv1a(&hashed));
    let mut end = spec.node.len().min(MAX_NAME - hash.len() - 1);
    while !spec.node.is_char_boundary(end) {
        end -= 1;
    }
    let head = spec.node[..end].trim_end_matches(['.', '-']);
    format!("{head}.{hash}")
}

fn parse(t: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(t).ok().map(|t| t.to_utc())
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
