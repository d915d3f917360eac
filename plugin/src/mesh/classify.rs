//! What the failing paths of a mesh say together
//! (docs/pinger.md#node-target-or-path): a node that loses most of its
//! peers, or that most peers lose, is one node-side fault; a target other
//! than a node that most probers lose is one target fault; every other
//! failing pair is a path fault. Pure and deterministic: the same paths
//! give the same faults in the same order.
//!
//! The unit is a *pair*: prober node, target, kind. A dual-stack peer's
//! addresses are one pair (it fails when one of its paths fails), so a
//! peer counts once per prober. A pair that sent nothing in the window
//! (`idle`) is not counted; `lossy` and `ok` pairs count as probed and not
//! failing.
//!
//! 1. Node-side. For each node, count its probed and failing pairs as
//!    prober, and as target (a peer's pairs, one per prober). A node
//!    *qualifies* when, on either side, at least [`MIN_FAILING`] pairs
//!    fail and they are more than half ([`MOST`]) of those probed. Of the
//!    qualifying nodes the one with the most failing pairs (both sides
//!    together) is a node-side fault, ties to the first by name; every
//!    pair it is in, failing or not, is then taken out of the counts (it
//!    says nothing about the other end) and the step repeats until no node
//!    qualifies. So a dead node's probers are not called dead for losing
//!    it, and two dead nodes of a small mesh are both found.
//! 2. Target. Of the pairs left, for each target that is not a node of the
//!    mesh (ICMP to another address, TCP, UDP, DNS, a TCP port of a pod),
//!    count the probers probing it and those failing: at least
//!    [`MIN_FAILING`] failing and more than half is a target fault. The
//!    probers of a node-side fault are out by then: a target fault rests
//!    on probers whose own side is healthy.
//! 3. Path. Every failing pair left is a path fault.
//!
//! "More than half" makes a tie no majority: 2 failing of 4 is no fault of
//! the node. The minimum keeps a 2-node mesh from calling everything
//! node-side: there one node's only peer failing is a path fault; a node
//! is node-side only when it also loses listed targets (2 failing of its
//! targets at least).

use std::collections::BTreeMap;

use serde::Serialize;

use super::paths::{Health, Path};

/// Fewest failing pairs (as prober, as target, of a target) that make a
/// node-side or target fault: one failing pair is a path.
pub const MIN_FAILING: usize = 2;

/// "Most": failing pairs over probed ones above this fraction
/// (numerator, denominator), compared exactly in integers.
pub const MOST: (usize, usize) = (1, 2);

/// Pairs failing of those probed, on one side of a node or of a target.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Share {
    /// Failing pairs.
    pub failing: usize,
    /// Probed pairs (failing ones included).
    pub probed: usize,
}

impl Share {
    /// At least [`MIN_FAILING`] failing, and more than [`MOST`] of those
    /// probed.
    pub fn is_most(self) -> bool {
        self.failing >= MIN_FAILING && self.failing * MOST.1 > self.probed * MOST.0
    }

    fn add(&mut self, failing: bool) {
        self.probed += 1;
        self.failing += usize::from(failing);
    }
}

/// What a group of failing paths is. `paths` are indices into the slice
/// given to [`classify`], of its failing paths only, in its order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// One node loses most of its targets or most of its probers lose it.
    Node {
        node: String,
        /// Its pairs as prober when it was found.
        as_prober: Share,
        /// Its pairs as target when it was found.
        as_target: Share,
        paths: Vec<usize>,
    },
    /// Most probers whose own side is healthy lose one target that is not
    /// a node of the mesh.
    Target {
        target: String,
        kind: String,
        /// Its probers' pairs.
        probers: Share,
        paths: Vec<usize>,
    },
    /// One pair fails on its own.
    Path {
        prober: String,
        target: String,
        kind: String,
        paths: Vec<usize>,
    },
}

impl Fault {
    /// The failing paths of the fault.
    pub fn paths(&self) -> &[usize] {
        match self {
            Fault::Node { paths, .. } | Fault::Target { paths, .. } | Fault::Path { paths, .. } => {
                paths
            }
        }
    }

    /// `node-side`, `target` or `path`, as printed.
    pub fn word(&self) -> &'static str {
        match self {
            Fault::Node { .. } => "node-side",
            Fault::Target { .. } => "target",
            Fault::Path { .. } => "path",
        }
    }
}

/// One prober's paths to one target and kind.
struct Pair<'a> {
    prober: &'a str,
    target: &'a str,
    peer: bool,
    kind: &'a str,
    probed: bool,
    failing: Vec<usize>,
    taken: bool,
}

impl Pair<'_> {
    fn counts(&self) -> bool {
        !self.taken && self.probed
    }

    fn has_node(&self, node: &str) -> bool {
        self.prober == node || (self.peer && self.target == node)
    }
}

/// The faults of `paths` (as [`super::paths::paths`] gives them, any
/// order): node-side faults first, by failing paths (most first) then
/// node; then target faults, by failing paths then kind and target; then
/// path faults by prober, target and kind. No failing path, no fault.
pub fn classify(paths: &[Path]) -> Vec<Fault> {
    let mut pairs = pairs_of(paths);
    let mut nodes = Vec::new();
    while let Some((node, as_prober, as_target)) = worst_node(&pairs) {
        let mut failing = Vec::new();
        for p in pairs.iter_mut().filter(|p| !p.taken && p.has_node(&node)) {
            p.taken = true;
            failing.extend(&p.failing);
        }
        nodes.push(Fault::Node {
            node,
            as_prober,
            as_target,
            paths: sorted(failing),
        });
    }
    let mut targets = Vec::new();
    let mut shares: BTreeMap<(&str, &str), Share> = BTreeMap::new();
    for p in pairs.iter().filter(|p| p.counts() && !p.peer) {
        shares
            .entry((p.kind, p.target))
            .or_default()
            .add(!p.failing.is_empty());
    }
    for ((kind, target), probers) in shares.into_iter().filter(|(_, s)| s.is_most()) {
        let mut failing = Vec::new();
        for p in pairs
            .iter_mut()
            .filter(|p| !p.taken && !p.peer && (p.kind, p.target) == (kind, target))
        {
            p.taken = !p.failing.is_empty();
            failing.extend(&p.failing);
        }
        targets.push(Fault::Target {
            target: target.to_string(),
            kind: kind.to_string(),
            probers,
            paths: sorted(failing),
        });
    }
    let mut left: Vec<&Pair<'_>> = pairs
        .iter()
        .filter(|p| !p.taken && !p.failing.is_empty())
        .collect();
    left.sort_by_key(|p| (p.prober, p.target, p.kind));
    let singles = left.into_iter().map(|p| Fault::Path {
        prober: p.prober.to_string(),
        target: p.target.to_string(),
        kind: p.kind.to_string(),
        paths: p.failing.clone(),
    });
    let by_size = |f: &Fault| std::cmp::Reverse(f.paths().len());
    nodes.sort_by_key(|f| (by_size(f), name_of(f)));
    targets.sort_by_key(|f| (by_size(f), name_of(f)));
    nodes.into_iter().chain(targets).chain(singles).collect()
}

/// The node or the kind and target of a fault, for its order.
fn name_of(f: &Fault) -> (String, String) {
    match f {
        Fault::Node { node, .. } => (node.clone(), String::new()),
        Fault::Target { target, kind, .. } | Fault::Path { target, kind, .. } => {
            (kind.clone(), target.clone())
        }
    }
}

fn sorted(mut v: Vec<usize>) -> Vec<usize> {
    v.sort_unstable();
    v
}

/// The pairs of `paths`, by prober, target and kind.
fn pairs_of(paths: &[Path]) -> Vec<Pair<'_>> {
    let mut by_key: BTreeMap<(&str, bool, &str, &str), Pair<'_>> = BTreeMap::new();
    for (i, p) in paths.iter().enumerate() {
        let pair = by_key
            .entry((&p.prober, p.peer, &p.target, &p.kind))
            .or_insert_with(|| Pair {
                prober: &p.prober,
                target: &p.target,
                peer: p.peer,
                kind: &p.kind,
                probed: false,
                failing: Vec::new(),
                taken: false,
            });
        pair.probed |= p.health != Health::Idle;
        if p.health == Health::Failing {
            pair.failing.push(i);
        }
    }
    by_key.into_values().collect()
}

/// The qualifying node with the most failing pairs left, ties to the first
/// by name, with its shares as prober and as target.
fn worst_node(pairs: &[Pair<'_>]) -> Option<(String, Share, Share)> {
    let mut sides: BTreeMap<&str, (Share, Share)> = BTreeMap::new();
    for p in pairs.iter().filter(|p| p.counts()) {
        let failing = !p.failing.is_empty();
        sides.entry(p.prober).or_default().0.add(failing);
        if p.peer {
            sides.entry(p.target).or_default().1.add(failing);
        }
    }
    let mut best: Option<(&str, Share, Share)> = None;
    for (node, (prober, target)) in sides {
        if !(prober.is_most() || target.is_most()) {
            continue;
        }
        let weight = prober.failing + target.failing;
        // Ascending names: a later node wins only with more.
        if best.is_none_or(|(_, p, t)| weight > p.failing + t.failing) {
            best = Some((node, prober, target));
        }
    }
    best.map(|(node, p, t)| (node.to_string(), p, t))
}

#[cfg(test)]
#[path = "classify_tests.rs"]
mod tests;
