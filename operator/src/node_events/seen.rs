//! Seen: the run of each report the Events were last decided for, so that
//! a report shown again for the same run (a re-list of the watch, a write
//! that changed nothing of the run) decides nothing twice. Pure.
//!
//! One entry per report that exists: a deletion removes it, and a re-list
//! keeps only the reports it lists.

use std::collections::{HashMap, HashSet};

use combo_api::DebuggerReport;
use kube::runtime::watcher;
use kube::ResourceExt;

/// How a report's run compares with what was seen of that report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sight {
    /// No run of the report was seen before (it is new, or the operator
    /// started or became the leader since).
    First,
    /// A run after the one seen before.
    NextRun,
    /// The run seen before.
    SameRun,
}

/// A report's namespace and name.
type Key = (String, String);

/// The run last seen of each report.
#[derive(Debug, Default)]
pub struct Seen {
    runs: HashMap<Key, Box<str>>,
    /// The reports a re-list has shown so far.
    listing: Option<HashSet<Key>>,
}

fn key(r: &DebuggerReport) -> Key {
    (r.namespace().unwrap_or_default(), r.name_any())
}

impl Seen {
    /// Takes one watch event: the report it shows, if any, and how its run
    /// compares, which it then records.
    pub fn observe<'e>(
        &mut self,
        event: &'e watcher::Event<DebuggerReport>,
    ) -> Option<(&'e DebuggerReport, Sight)> {
        match event {
            watcher::Event::Apply(r) => Some((r, self.sight(r))),
            watcher::Event::InitApply(r) => {
                if let Some(listed) = self.listing.as_mut() {
                    listed.insert(key(r));
                }
                Some((r, self.sight(r)))
            }
            watcher::Event::Delete(r) => {
                self.runs.remove(&key(r));
                None
            }
            watcher::Event::Init => {
                self.listing = Some(HashSet::new());
                None
            }
            watcher::Event::InitDone => {
                if let Some(listed) = self.listing.take() {
                    self.runs.retain(|k, _| listed.contains(k));
                }
                None
            }
        }
    }

    fn sight(&mut self, r: &DebuggerReport) -> Sight {
        let run = r.spec.run_at.as_str();
        match self.runs.insert(key(r), run.into()) {
            None => Sight::First,
            Some(before) if &*before == run => Sight::SameRun,
            Some(_) => Sight::NextRun,
        }
    }

    /// How many reports have a run recorded.
    pub fn len(&self) -> usize {
        self.runs.len()
    }

    /// Whether none has.
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }
}
