//! Generated sequences of the model-based test
//! (docs/testing.md, "Model-based test"): each action is chosen from the
//! model of what the user has made so far, from a seeded generator. Pure.

use std::collections::BTreeMap;

use crate::plan::{
    Action, Categories, Change, Model, Nodes, Ref, Spec, Workload, MAX_NAME, SCRIPT_KEY,
};

/// A small seeded generator (splitmix64): the same seed and sequence
/// number give the same actions on every machine.
pub struct Rng(u64);

impl Rng {
    /// The generator of sequence `stream` of run `seed`.
    pub fn new(seed: u64, stream: u64) -> Rng {
        let mut rng = Rng(seed ^ stream.wrapping_mul(0xA076_1D64_78BD_642F));
        rng.next();
        rng
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// An index into `weights`, each chosen in proportion to its weight
    /// (at least one weight is not 0).
    pub fn weighted(&mut self, weights: &[u32]) -> usize {
        let total: u64 = weights.iter().map(|w| u64::from(*w)).sum();
        let mut x = self.next() % total;
        for (i, w) in weights.iter().enumerate() {
            if x < u64::from(*w) {
                return i;
            }
            x -= u64::from(*w);
        }
        unreachable!("x < total")
    }

    pub fn pick<T: Clone>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())].clone()
    }
}

fn script_data(rng: &mut Rng) -> BTreeMap<String, String> {
    BTreeMap::from([(
        SCRIPT_KEY.to_string(),
        format!("#!/bin/sh\necho \"ok hello-{}\"\n", rng.below(100_000)),
    )])
}

fn note_data(rng: &mut Rng) -> BTreeMap<String, String> {
    BTreeMap::from([("note".to_string(), format!("mine {}", rng.below(100_000)))])
}

fn bad_dns(rng: &mut Rng) -> Option<String> {
    match rng.below(3) {
        0 => Some("172.31.0.101".to_string()),
        1 => Some("10.1.2.3".to_string()),
        _ => None,
    }
}

/// The next action of a sequence, given the model so far.
fn next_action(m: &mut Model, rng: &mut Rng, nodes: usize) -> Action {
    let cms: Vec<String> = m.configmaps.keys().cloned().collect();
    let pingers: Vec<String> = m.pingers.keys().cloned().collect();
    let debuggers: Vec<String> = m.debuggers.keys().cloned().collect();
    let w = |cond: bool, w: u32| if cond { w } else { 0 };
    let choice = rng.weighted(&[
        w(
            debuggers.len() < 3,
            if debuggers.is_empty() { 8 } else { 3 },
        ),
        w(!debuggers.is_empty(), 6),
        w(!debuggers.is_empty(), 1),
        3,
        w(!cms.is_empty(), 1),
        w(!cms.is_empty(), 2),
        2,
        w(!pingers.is_empty(), 1),
        w(!pingers.is_empty(), 2),
        w(debuggers.len() < 2, 1),
        w(!scripts_in_use(m).is_empty(), 2),
    ]);
    match choice {
        0 => create_debugger(m, rng, nodes),
        1 => edit_debugger(m, rng, nodes, &debuggers),
        2 => Action::DeleteDebugger {
            name: rng.pick(&debuggers),
        },
        3 => {
            let names = m.cm_names();
            let name = rng.pick(&names);
            let scripts = rng.below(3) != 0;
            let data = configmap_data(rng, scripts);
            Action::CreateConfigMap { name, data }
        }
        4 => {
            let name = rng.pick(&cms);
            let data = configmap_data(rng, m.configmaps[&name].scripts);
            Action::EditConfigMap { name, data }
        }
        5 => delete_configmap(m, rng, cms),
        6 => {
            let names = m.pinger_names();
            Action::CreatePinger {
                name: rng.pick(&names),
                bad_dns: bad_dns(rng),
            }
        }
        7 => {
            let name = rng.pick(&pingers);
            let bad = match &m.pingers[&name] {
                Some(_) => None,
                None => Some("172.31.0.101".to_string()),
            };
            Action::EditPinger { name, bad_dns: bad }
        }
        8 => delete_pinger(m, rng, pingers),
        9 => {
            let Action::CreateDebugger { name, mut spec } = create_debugger(m, rng, nodes) else {
                unreachable!("create_debugger creates a Debugger")
            };
            spec.summary = Some(m.fresh("shared"));
            Action::CreateSharingDebuggers {
                first: name,
                second: m.next_debugger(),
                spec,
            }
        }
        _ => {
            let (debugger, name) = rng.pick(&scripts_in_use(m));
            Action::DeleteScriptsOf { debugger, name }
        }
    }
}

/// (Debugger, its scripts ConfigMap) for each Debugger whose scripts
/// ConfigMap exists.
fn scripts_in_use(m: &Model) -> Vec<(String, String)> {
    m.debuggers
        .iter()
        .filter_map(|(d, x)| match &x.spec.scripts {
            Ref::Named(cm) if m.configmaps.contains_key(cm) => Some((d.clone(), cm.clone())),
            _ => None,
        })
        .collect()
}

/// A ConfigMap's data: a script, or a note.
fn configmap_data(rng: &mut Rng, scripts: bool) -> BTreeMap<String, String> {
    if scripts {
        script_data(rng)
    } else {
        note_data(rng)
    }
}

fn create_debugger(m: &mut Model, rng: &mut Rng, nodes: usize) -> Action {
    let base = m.next_debugger();
    // Over 63 characters: refused as a label value.
    let name = if rng.below(12) == 0 {
        format!("{base}-{}", "l".repeat(MAX_NAME))
    } else {
        base
    };
    let mut spec = Spec {
        workload: workload(rng),
        nodes: node_choice(rng, nodes),
        scripts: Ref::Off,
        pinger: Ref::Off,
        categories: categories(rng),
        summary: None,
    };
    spec.scripts = scripts_ref(m, rng);
    spec.pinger = pinger_ref(m, rng);
    spec.summary = summary_choice(m, rng, &spec);
    Action::CreateDebugger { name, spec }
}

fn edit_debugger(m: &mut Model, rng: &mut Rng, nodes: usize, debuggers: &[String]) -> Action {
    let name = rng.pick(debuggers);
    let spec = m.debuggers[&name].spec.clone();
    let change = match rng.weighted(&[4, 3, 3, 3, 1, 3]) {
        0 => Change::Workload(match spec.workload {
            Workload::DaemonSet => Workload::Pod,
            Workload::Pod => Workload::DaemonSet,
        }),
        1 => Change::Nodes(node_choice(rng, nodes)),
        2 => Change::Scripts(scripts_ref(m, rng)),
        3 => Change::Pinger(pinger_ref(m, rng)),
        4 => Change::Categories(categories(rng)),
        _ => Change::Summary(summary_choice(m, rng, &spec)),
    };
    Action::EditDebugger { name, change }
}

/// Mostly one a Debugger uses: a deletion mid-run.
fn delete_configmap(m: &Model, rng: &mut Rng, cms: Vec<String>) -> Action {
    let used: Vec<String> = cms
        .iter()
        .filter(|c| {
            m.debuggers.iter().any(|(d, x)| {
                x.spec.scripts == Ref::Named(c.to_string()) || x.spec.summary_name(d) == **c
            })
        })
        .cloned()
        .collect();
    let from = if !used.is_empty() && rng.below(4) != 0 {
        used
    } else {
        cms
    };
    Action::DeleteConfigMap {
        name: rng.pick(&from),
    }
}

/// One a Debugger uses, when there is one.
fn delete_pinger(m: &Model, rng: &mut Rng, pingers: Vec<String>) -> Action {
    let used: Vec<String> = pingers
        .iter()
        .filter(|p| {
            m.debuggers
                .values()
                .any(|d| d.spec.pinger == Ref::Named(p.to_string()))
        })
        .cloned()
        .collect();
    let from = if used.is_empty() { pingers } else { used };
    Action::DeletePinger {
        name: rng.pick(&from),
    }
}

fn workload(rng: &mut Rng) -> Workload {
    if rng.below(2) == 0 {
        Workload::DaemonSet
    } else {
        Workload::Pod
    }
}

fn node_choice(rng: &mut Rng, nodes: usize) -> Nodes {
    match rng.weighted(&[2, 6, 2]) {
        0 => Nodes::All,
        1 => Nodes::One(1 + rng.below(nodes.max(1))),
        _ => Nodes::None,
    }
}

fn categories(rng: &mut Rng) -> Categories {
    match rng.weighted(&[8, 2, 1]) {
        0 => Categories::Default,
        1 => Categories::Only(rng.pick(&["disk", "custom"])),
        _ => Categories::Empty,
    }
}

/// A scripts ConfigMap: mostly one of the user's (scripts first), or one
/// that does not exist yet, or none; rarely enabled without a name.
fn scripts_ref(m: &mut Model, rng: &mut Rng) -> Ref {
    let mut have: Vec<String> = m
        .configmaps
        .iter()
        .filter(|(_, c)| c.scripts)
        .map(|(n, _)| n.clone())
        .collect();
    if have.is_empty() {
        have = m.configmaps.keys().cloned().collect();
    }
    match rng.weighted(&[3, if have.is_empty() { 0 } else { 6 }, 2, 1]) {
        0 => Ref::Off,
        1 => Ref::Named(rng.pick(&have)),
        2 => Ref::Named(m.fresh("scripts")),
        _ => Ref::Unnamed,
    }
}

fn pinger_ref(m: &mut Model, rng: &mut Rng) -> Ref {
    let have: Vec<String> = m.pingers.keys().cloned().collect();
    match rng.weighted(&[5, if have.is_empty() { 0 } else { 4 }, 2, 1]) {
        0 => Ref::Off,
        1 => Ref::Named(rng.pick(&have)),
        2 => Ref::Named(m.fresh("p")),
        _ => Ref::Unnamed,
    }
}

/// `summaryConfigMap`: mostly the default or a new name; often a
/// collision: a ConfigMap the user made, or the Debugger's own scripts
/// ConfigMap.
fn summary_choice(m: &mut Model, rng: &mut Rng, spec: &Spec) -> Option<String> {
    let user: Vec<String> = m.configmaps.keys().cloned().collect();
    let own = match &spec.scripts {
        Ref::Named(n) => Some(n.clone()),
        _ => None,
    };
    match rng.weighted(&[
        8,
        3,
        if user.is_empty() { 0 } else { 2 },
        if own.is_some() { 2 } else { 0 },
    ]) {
        0 => None,
        1 => Some(m.fresh("summary")),
        2 => Some(rng.pick(&user)),
        _ => own,
    }
}

/// Sequence `index` of run `seed` on a cluster of `nodes` nodes: 3 to 6
/// actions, each chosen from the model after the ones before.
pub fn sequence(seed: u64, index: usize, nodes: usize) -> Vec<Action> {
    let mut rng = Rng::new(seed, index as u64 + 1);
    let len = 3 + rng.below(4);
    let mut m = Model::default();
    (0..len)
        .map(|_| {
            let a = next_action(&mut m, &mut rng, nodes);
            m.apply(&a);
            a
        })
        .collect()
}

/// Which sequences of `n` restart the operator, and before which of their
/// actions: `restarts` distinct sequences, spread over the run.
pub fn restarts(seed: u64, n: usize, restarts: usize) -> BTreeMap<usize, usize> {
    let mut rng = Rng::new(seed, 0);
    let mut out = BTreeMap::new();
    let k = restarts.min(n);
    for slot in 0..k {
        // One in each of k equal stretches of the run, so they are apart.
        let lo = slot * n / k;
        let hi = ((slot + 1) * n / k).max(lo + 1);
        out.insert(lo + rng.below(hi - lo), 1 + rng.below(2));
    }
    out
}

#[cfg(test)]
#[path = "generate_tests.rs"]
mod tests;
