//! The generator on its own (docs/testing.md, "Model-based test"): a seed
//! gives the same run each time, and a default run holds every kind of
//! action and collision.

use std::collections::BTreeMap;

use super::*;

#[test]
fn the_same_seed_gives_the_same_sequences() {
    for i in 0..50 {
        let a = sequence(7, i, 3);
        assert_eq!(a, sequence(7, i, 3));
        assert!((3..=6).contains(&a.len()), "{a:?}");
    }
    assert_ne!(
        (0..20).map(|i| sequence(7, i, 3)).collect::<Vec<_>>(),
        (0..20).map(|i| sequence(8, i, 3)).collect::<Vec<_>>()
    );
}

#[test]
fn restarts_go_to_distinct_sequences_spread_over_the_run() {
    let r = restarts(3, 200, 2);
    assert_eq!(r.len(), 2);
    let k: Vec<usize> = r.keys().copied().collect();
    assert!(k[0] < 100 && k[1] >= 100, "{k:?}");
    assert_eq!(restarts(3, 1, 2).len(), 1);
    assert!(restarts(3, 10, 0).is_empty());
}

/// How often each kind of action and collision came up.
type Seen = BTreeMap<&'static str, usize>;

/// Counts one `kind` in `seen` when `happened`.
fn count(seen: &mut Seen, kind: &'static str, happened: bool) {
    if happened {
        *seen.entry(kind).or_default() += 1;
    }
}

/// Whether a Debugger of `m` names `name` in the part of its spec `of`
/// gives.
fn in_use(m: &Model, name: &str, of: fn(&Spec) -> &Ref) -> bool {
    m.debuggers
        .values()
        .any(|d| *of(&d.spec) == Ref::Named(name.to_string()))
}

/// The kind of action `a`, which took the model from `before` to `after`;
/// counts in `seen` what it did to objects in use.
fn kind(a: &Action, before: &Model, after: &Model, seen: &mut Seen) -> &'static str {
    match a {
        Action::CreateConfigMap { .. } => "create ConfigMap",
        Action::EditConfigMap { .. } => "edit ConfigMap",
        Action::DeleteConfigMap { name } => {
            let used = in_use(before, name, |s| &s.scripts);
            count(seen, "delete a scripts ConfigMap in use", used);
            "delete ConfigMap"
        }
        Action::CreatePinger { bad_dns, .. } => {
            count(seen, "Pinger with an IP in dns", bad_dns.is_some());
            "create Pinger"
        }
        Action::EditPinger { .. } => "edit Pinger",
        Action::DeletePinger { name } => {
            let used = in_use(before, name, |s| &s.pinger);
            count(seen, "delete a Pinger in use", used);
            "delete Pinger"
        }
        Action::CreateDebugger { .. } => "create Debugger",
        Action::CreateSharingDebuggers { .. } => "create two Debuggers sharing a summary",
        Action::DeleteScriptsOf { .. } => "delete a Debugger's scripts ConfigMap",
        Action::EditDebugger {
            name,
            change: Change::Workload(_),
        } => {
            let running = before.runs(name) && after.runs(name);
            count(seen, "switch a running Debugger", running);
            "switch workload"
        }
        Action::EditDebugger { .. } => "edit Debugger",
        Action::DeleteDebugger { name } => {
            count(seen, "delete a running Debugger", before.runs(name));
            "delete Debugger"
        }
        Action::RestartOperator => "restart",
    }
}

/// Counts in `seen` what the Debuggers of `m` are after a step from
/// `before`.
fn count_debuggers(before: &Model, m: &Model, seen: &mut Seen) {
    for (name, d) in &m.debuggers {
        let summary = d.spec.summary_name(name);
        let users = before.configmaps.contains_key(&summary) && m.configmaps.contains_key(&summary);
        count(seen, "summary is a user ConfigMap", users);
        let own = d.spec.scripts == Ref::Named(summary);
        count(seen, "summary is its scripts ConfigMap", own);
        count(seen, "name over 63", name.len() > MAX_NAME);
        count(
            seen,
            "selector matches no node",
            d.spec.nodes == Nodes::None,
        );
        count(seen, "a Debugger that should run", m.runs(name));
    }
}

/// What a default run of sequences must hold, each at least 5 times.
const EXPECTED: [&str; 22] = [
    "create ConfigMap",
    "edit ConfigMap",
    "delete ConfigMap",
    "create Pinger",
    "edit Pinger",
    "delete Pinger",
    "create Debugger",
    "switch workload",
    "edit Debugger",
    "delete Debugger",
    "delete a scripts ConfigMap in use",
    "Pinger with an IP in dns",
    "delete a Pinger in use",
    "summary is a user ConfigMap",
    "summary is its scripts ConfigMap",
    "name over 63",
    "selector matches no node",
    "a Debugger that should run",
    "switch a running Debugger",
    "delete a running Debugger",
    "create two Debuggers sharing a summary",
    "delete a Debugger's scripts ConfigMap",
];

/// What the issue asks the sequences to hold, counted over a default
/// run: each must come up.
#[test]
fn two_hundred_sequences_hold_every_kind_of_action_and_collision() {
    let mut seen = Seen::new();
    for seed in [1, 20261124] {
        for i in 0..200 {
            let mut m = Model::default();
            for a in sequence(seed, i, 3) {
                let before = m.clone();
                m.apply(&a);
                let kind = kind(&a, &before, &m, &mut seen);
                count(&mut seen, kind, true);
                count_debuggers(&before, &m, &mut seen);
            }
        }
    }
    for kind in EXPECTED {
        assert!(
            seen.get(kind).copied().unwrap_or_default() >= 5,
            "{kind}: {seen:#?}"
        );
    }
}
