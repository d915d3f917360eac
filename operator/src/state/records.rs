//! The records kept per Debugger between reconciles (`written`,
//! `runs_seen`, `failures` of the [`Context`]), each bounded by the
//! Debuggers that still exist: a Debugger deleted meanwhile is never
//! reconciled again, so its entries go when the record grows past
//! [`over_bound`] (docs/operator.md, "State kept between reconciles").

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use combo_api::{Debugger, DebuggerStatus};
use kube::runtime::reflector::{ObjectRef, Store};

use crate::state::context::Context;

/// Records the status written for `uid` (a per-Debugger record, see
/// [`remember`]).
pub(crate) fn remember_written(ctx: &Context, uid: String, status: DebuggerStatus) {
    let mut written = ctx.written.lock().expect("written lock");
    remember(&mut written, uid, status, &ctx.debuggers, uid_of);
}

/// Records `last` as the newest run seen for `uid` and returns the one
/// seen before (a per-Debugger record, see [`remember`]).
pub(crate) fn remember_run(ctx: &Context, uid: &str, last: &str) -> Option<String> {
    let mut runs = ctx.runs_seen.lock().expect("runs lock");
    remember(
        &mut runs,
        uid.to_string(),
        last.to_string(),
        &ctx.debuggers,
        uid_of,
    )
}

/// Since when runs of `dbg`'s current `runAt` are expected: its creation,
/// the first time this process sees the Debugger, else when this process
/// saw the value change (a per-Debugger record, see [`remember`];
/// docs/operator.md#missed-runs).
pub(crate) fn run_at_since(ctx: &Context, dbg: &Debugger, now: DateTime<Utc>) -> DateTime<Utc> {
    let uid = dbg.metadata.uid.clone().unwrap_or_default();
    let mut seen = ctx.run_at_since.lock().expect("run_at_since lock");
    let since = match seen.get(&uid) {
        Some((run_at, since)) if *run_at == dbg.spec.run_at => return *since,
        Some(_) => now,
        None => dbg
            .metadata
            .creation_timestamp
            .as_ref()
            .and_then(|t| DateTime::from_timestamp(t.0.as_second(), 0))
            .unwrap_or(now),
    };
    remember(
        &mut seen,
        uid,
        (dbg.spec.run_at.clone(), since),
        &ctx.debuggers,
        uid_of,
    );
    since
}

fn uid_of(dbg: &Debugger) -> Option<String> {
    dbg.metadata.uid.clone()
}

/// Counts one more consecutive transient failure of `dbg` and returns the
/// count (a per-Debugger record, see [`remember`]).
pub(crate) fn count_failure(ctx: &Context, dbg: &Debugger) -> u32 {
    let key = ObjectRef::from_obj(dbg);
    let mut failures = ctx.failures.lock().expect("failures lock");
    let n = failures.get(&key).copied().unwrap_or(0).saturating_add(1);
    // A success removes the count; a Debugger deleted while failing has
    // none, so `remember` drops the counts of Debuggers that are gone.
    remember(&mut failures, key, n, &ctx.debuggers, |d| {
        Some(ObjectRef::from_obj(d))
    });
    n
}

/// Puts `value` under `key` in a record kept per Debugger and returns the
/// value it replaces. A Debugger deleted meanwhile is never reconciled
/// again, so nothing else removes its entry: once the record holds more
/// than [`over_bound`] of the Debuggers `debuggers` shows, the entries of
/// those that are gone (by `key_of`) are dropped. Each record is pruned on
/// its own insertions, so none depends on another being written.
pub(crate) fn remember<K, V>(
    map: &mut HashMap<K, V>,
    key: K,
    value: V,
    debuggers: &Store<Debugger>,
    key_of: impl Fn(&Debugger) -> Option<K>,
) -> Option<V>
where
    K: Eq + std::hash::Hash,
{
    let previous = map.insert(key, value);
    let known = debuggers.state();
    if map.len() > over_bound(known.len()) {
        let live: HashSet<K> = known.iter().filter_map(|d| key_of(d)).collect();
        retain_live(map, &live);
    }
    previous
}

/// Size past which a per-Debugger record is pruned of Debuggers that are
/// gone: twice the live ones, plus some slack. Pure.
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
    use combo_api::DebuggerSpec;
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

    #[test]
    fn a_record_is_pruned_on_its_own_insertions_and_keeps_the_live_entry() {
        let (store, mut writer) = reflector::store::<Debugger>();
        let mut live = Debugger::new("live", DebuggerSpec::default());
        live.metadata.namespace = Some("ops".into());
        live.metadata.uid = Some("uid-live".into());
        writer.apply_watcher_event(&watcher::Event::Apply(live));
        let mut runs: HashMap<String, String> = HashMap::new();
        let first = remember(&mut runs, "uid-live".into(), "run-1".into(), &store, uid_of);
        assert_eq!(first, None);
        // 100 Debuggers seen once each and deleted since: only insertions
        // into this record itself keep it bounded.
        for i in 0..100 {
            remember(
                &mut runs,
                format!("uid-gone-{i}"),
                "run-1".into(),
                &store,
                uid_of,
            );
            assert!(runs.len() <= over_bound(1), "{} runs kept", runs.len());
        }
        assert!(runs.len() < 100);
        let again = remember(&mut runs, "uid-live".into(), "run-2".into(), &store, uid_of);
        assert_eq!(again.as_deref(), Some("run-1"), "the live entry was kept");
    }
}
