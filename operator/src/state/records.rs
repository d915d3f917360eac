//! The record the operator keeps per Debugger between its reconciles: the
//! status it last wrote, the newest run it saw, since when runs of its
//! `runAt` are expected and its consecutive failures. One record per
//! Debugger uid, bounded by the Debuggers that still exist: a Debugger
//! deleted meanwhile is never reconciled again, so its record goes when
//! the records grow past [`over_bound`]
//! (docs/operator.md, "State kept between reconciles").

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use combo_api::{Debugger, DebuggerStatus};
use kube::runtime::reflector::Store;

/// What the operator keeps about one Debugger between its reconciles.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Record {
    /// The status last written. A reconcile can run on a cached Debugger
    /// that does not show the write yet; comparing with this too keeps it
    /// from writing the same status again.
    pub written: Option<DebuggerStatus>,
    /// The newest run seen: when it changes, reports of nodes that left
    /// are removed.
    pub run_seen: Option<String>,
    /// Its `runAt` and since when runs of it are expected
    /// (docs/operator.md#missed-runs).
    pub run_at_since: Option<(String, DateTime<Utc>)>,
    /// Consecutive transient failures, for backoff; 0 after a success.
    pub failures: u32,
}

/// The records of every Debugger, by uid, behind accessors that keep them
/// bounded: each change past [`over_bound`] records drops those of the
/// Debuggers `debuggers` no longer shows.
pub struct Records {
    by_uid: Mutex<HashMap<String, Record>>,
    debuggers: Store<Debugger>,
}

impl Records {
    /// No records yet; `debuggers` tells which Debuggers exist.
    pub fn new(debuggers: Store<Debugger>) -> Self {
        Records {
            by_uid: Mutex::default(),
            debuggers,
        }
    }

    /// A copy of the record of `uid`, if any.
    pub fn get(&self, uid: &str) -> Option<Record> {
        self.by_uid.lock().expect("records lock").get(uid).cloned()
    }

    /// The uids that have a record satisfying `pred`, sorted.
    pub fn uids(&self, pred: impl Fn(&Record) -> bool) -> Vec<String> {
        let records = self.by_uid.lock().expect("records lock");
        let mut uids: Vec<String> = records
            .iter()
            .filter(|(_, r)| pred(r))
            .map(|(uid, _)| uid.clone())
            .collect();
        uids.sort();
        uids
    }

    /// The status last written for `uid`.
    pub fn written(&self, uid: &str) -> Option<DebuggerStatus> {
        self.get(uid).and_then(|r| r.written)
    }

    /// Records the status written for `uid`.
    pub fn remember_written(&self, uid: &str, status: DebuggerStatus) {
        self.change(uid, |r| r.written = Some(status));
    }

    /// Records `last` as the newest run seen for `uid` and returns the one
    /// seen before.
    pub fn remember_run(&self, uid: &str, last: &str) -> Option<String> {
        self.change(uid, |r| r.run_seen.replace(last.to_string()))
    }

    /// Since when runs of `dbg`'s current `runAt` are expected: its
    /// creation, the first time this process sees the Debugger, else when
    /// this process saw the value change (docs/operator.md#missed-runs).
    pub fn run_at_since(&self, dbg: &Debugger, now: DateTime<Utc>) -> DateTime<Utc> {
        let created = dbg
            .metadata
            .creation_timestamp
            .as_ref()
            .and_then(|t| DateTime::from_timestamp(t.0.as_second(), 0));
        let run_at = &dbg.spec.run_at;
        self.change(&uid_of(dbg), |r| match &r.run_at_since {
            Some((seen, since)) if seen == run_at => *since,
            seen => {
                let since = if seen.is_some() {
                    now
                } else {
                    created.unwrap_or(now)
                };
                r.run_at_since = Some((run_at.clone(), since));
                since
            }
        })
    }

    /// The consecutive failures of `dbg` so far.
    pub fn failures(&self, dbg: &Debugger) -> u32 {
        self.get(&uid_of(dbg)).map_or(0, |r| r.failures)
    }

    /// Counts one more consecutive transient failure of `dbg` and returns
    /// the count.
    pub fn count_failure(&self, dbg: &Debugger) -> u32 {
        self.change(&uid_of(dbg), |r| {
            r.failures = r.failures.saturating_add(1);
            r.failures
        })
    }

    /// A reconcile of `dbg` succeeded: its failures are forgotten.
    pub fn succeeded(&self, dbg: &Debugger) {
        let mut records = self.by_uid.lock().expect("records lock");
        if let Some(r) = records.get_mut(&uid_of(dbg)) {
            r.failures = 0;
        }
    }

    /// Changes the record of `uid` (made when missing) with `f`, then
    /// prunes the records of Debuggers that are gone once there are more
    /// than [`over_bound`] of those that exist. Every change prunes, so no
    /// record relies on another kind of write to stay bounded.
    fn change<T>(&self, uid: &str, f: impl FnOnce(&mut Record) -> T) -> T {
        let mut records = self.by_uid.lock().expect("records lock");
        let out = f(records.entry(uid.to_string()).or_default());
        let known = self.debuggers.state();
        if records.len() > over_bound(known.len()) {
            let live: HashSet<String> = known.iter().map(|d| uid_of(d)).collect();
            retain_live(&mut records, &live);
        }
        out
    }
}

fn uid_of(dbg: &Debugger) -> String {
    dbg.metadata.uid.clone().unwrap_or_default()
}

/// Size past which the records are pruned of Debuggers that are gone:
/// twice the live ones, plus some slack. Pure.
pub fn over_bound(live: usize) -> usize {
    2 * live + 16
}

/// Keeps only the entries of `map` whose key is in `live`. Pure.
pub fn retain_live<K: Eq + std::hash::Hash, V>(map: &mut HashMap<K, V>, live: &HashSet<K>) {
    map.retain(|k, _| live.contains(k));
}

#[cfg(test)]
mod tests {
    use super::*;
    use combo_testkit::fixtures::debugger;
    use kube::runtime::{reflector, watcher};

    #[test]
    fn records_of_debuggers_that_are_gone_are_pruned_past_the_bound() {
        let live: std::collections::HashSet<String> =
            ["a", "b"].into_iter().map(String::from).collect();
        let mut failures: std::collections::HashMap<String, u32> = (0..over_bound(2) + 1)
            .map(|i| (format!("gone-{i}"), 3))
            .chain([("a".to_string(), 1)])
            .collect();
        assert!(failures.len() > over_bound(live.len()));
        retain_live(&mut failures, &live);
        assert_eq!(
            failures.into_iter().collect::<Vec<_>>(),
            [("a".to_string(), 1)]
        );
        assert_eq!(over_bound(0), 16);
        assert_eq!(over_bound(10_000), 20_016);
    }

    fn store_with(uid: &str) -> Store<Debugger> {
        let (store, mut writer) = reflector::store::<Debugger>();
        let live = debugger("ops", "live").uid(uid).build();
        writer.apply_watcher_event(&watcher::Event::Apply(live));
        store
    }

    #[test]
    fn a_record_is_pruned_on_its_own_insertions_and_keeps_the_live_entry() {
        let records = Records::new(store_with("uid-live"));
        assert_eq!(records.remember_run("uid-live", "run-1"), None);
        // 100 Debuggers seen once each and deleted since: every change
        // keeps the records bounded.
        for i in 0..100 {
            records.remember_run(&format!("uid-gone-{i}"), "run-1");
            let kept = records.uids(|_| true).len();
            assert!(kept <= over_bound(1), "{kept} records kept");
        }
        let again = records.remember_run("uid-live", "run-2");
        assert_eq!(again.as_deref(), Some("run-1"), "the live entry was kept");
    }

    #[test]
    fn runs_are_expected_from_creation_then_from_a_change_of_run_at() {
        let records = Records::new(store_with("uid-live"));
        let mut d = debugger("ops", "live")
            .uid("uid-live")
            .run_at("@every 1h")
            .build();
        let created: DateTime<Utc> = "2026-01-01T00:00:00Z".parse().unwrap();
        d.metadata.creation_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            crate::core::status::to_timestamp(created),
        ));
        let now: DateTime<Utc> = "2026-01-02T00:00:00Z".parse().unwrap();
        assert_eq!(records.run_at_since(&d, now), created, "first sight");
        let later = now + chrono::Duration::hours(1);
        assert_eq!(records.run_at_since(&d, later), created, "same runAt");
        d.spec.run_at = "@every 2h".into();
        assert_eq!(records.run_at_since(&d, later), later, "runAt changed");
    }

    #[test]
    fn failures_count_up_and_a_success_forgets_them() {
        let records = Records::new(store_with("uid-live"));
        let d = debugger("ops", "live").uid("uid-live").build();
        assert_eq!(records.failures(&d), 0);
        assert_eq!(records.count_failure(&d), 1);
        assert_eq!(records.count_failure(&d), 2);
        assert_eq!(records.failures(&d), 2);
        records.succeeded(&d);
        assert_eq!(records.failures(&d), 0);
        assert_eq!(records.count_failure(&d), 1);
    }
}
