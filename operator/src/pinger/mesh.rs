//! One Debugger's pods and the peers chosen for each, kept up to date one
//! pod change at a time. Pure.
//!
//! Every pod that is not terminating is a prober; the pods that are
//! Running and Ready with an address are also candidates (peers). Each
//! prober holds its `max` best candidates by
//! [`combo_api::peers::rendezvous`] score, and its list holds every
//! address of each: the choice is per pod, so a dual-stack peer is probed
//! on both addresses by the same probers. A change touches
//! only the probers it concerns, and says which they are, so the operator
//! rewrites about `max` lists per pod coming or going instead of all of
//! them (docs/operator.md, "Peer lists").
//!
//! Cost per change, with n pods: a candidate joining scores it once for
//! every prober (n hashes); a candidate leaving re-chooses the probers that
//! had it (about `max` × n hashes); a new prober chooses once (n hashes).
//!
//! Coverage (docs/pinger.md#coverage): a candidate that fewer than `min`
//! probers chose gets the missing ones from the probers that score it
//! highest (`mesh_cover.rs`), so each is probed by at least `min` others, or by
//! all when there are fewer.

#[path = "mesh_cover.rs"]
mod cover;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::mem;
use std::net::IpAddr;

use combo_api::peers::{self, rendezvous};

/// A choice: the candidate's score for the prober, and its name.
type Ranked = (u64, String);

/// The pods of one Debugger and each one's chosen peers.
#[derive(Debug, Default)]
pub struct Mesh {
    max: usize,
    /// Probers each candidate has at least (fewer when there are fewer).
    min: usize,
    /// Every prober; the addresses of those that are candidates (empty
    /// for the others).
    pods: BTreeMap<String, Vec<IpAddr>>,
    /// Each prober's choice, best first, at most `max` long.
    chosen: HashMap<String, Vec<Ranked>>,
    /// How many probers chose each candidate (its in-degree in `chosen`).
    chosen_by: HashMap<String, usize>,
    /// The probers a candidate gets on top of those that chose it, best
    /// first (see [`cover`]).
    extra: HashMap<String, Vec<Ranked>>,
    /// The other way round: the candidates each prober probes for coverage.
    extra_of: HashMap<String, BTreeSet<String>>,
}

impl Mesh {
    /// An empty mesh in which each pod chooses at most `max` peers (at
    /// least 1) and each candidate is probed by at least `min` others.
    pub fn new(max: usize, min: usize) -> Mesh {
        Mesh {
            max: max.max(1),
            min,
            ..Mesh::default()
        }
    }

    /// A mesh of `pods` (name, and addresses when it can be probed) at
    /// once: each prober chooses once among all candidates, instead of
    /// the candidates joining one by one.
    pub fn with_pods<'a>(
        max: usize,
        min: usize,
        pods: impl IntoIterator<Item = (&'a str, Vec<IpAddr>)>,
    ) -> Mesh {
        let mut mesh = Mesh::new(max, min);
        mesh.pods = pods
            .into_iter()
            .map(|(n, addrs)| (n.to_string(), addrs))
            .collect();
        let mut affected = BTreeSet::new();
        let probers: Vec<String> = mesh.pods.keys().cloned().collect();
        for p in probers {
            let ranked = mesh.rank_for(&p);
            mesh.set_choice(&p, ranked, &mut affected);
        }
        let all: Vec<String> = mesh.pods.keys().cloned().collect();
        let mut touched = BTreeSet::new();
        for c in all {
            mesh.cover(&c, &mut touched);
        }
        mesh
    }

    /// The bounds it was made with: (max, min).
    pub fn bounds(&self) -> (usize, usize) {
        (self.max, self.min)
    }

    /// Adds or updates pod `name`; `addrs` are its addresses when it can
    /// be probed, empty when not. Returns the probers whose list may have
    /// changed.
    pub fn set(&mut self, name: &str, addrs: Vec<IpAddr>) -> BTreeSet<String> {
        let mut touched = BTreeSet::new();
        let mut affected = BTreeSet::new();
        let is = !addrs.is_empty();
        let before = self.pods.insert(name.to_string(), addrs);
        if before.is_none() {
            // A new prober chooses among the candidates there are.
            let ranked = self.rank_for(name);
            self.set_choice(name, ranked, &mut affected);
            touched.insert(name.to_string());
        }
        let was = before.as_ref().is_some_and(|a| !a.is_empty());
        match (was, is) {
            (false, true) => self.joined(name, &mut touched, &mut affected),
            (true, false) => self.left(name, &mut touched, &mut affected),
            // New addresses (one more, one less, another): the same
            // probers, new lists.
            (true, true) if before.as_ref() != self.pods.get(name) => {
                touched.extend(self.choosers_of(name));
                touched.extend(self.extra_probers(name));
            }
            _ => {}
        }
        if was != is {
            affected.insert(name.to_string());
        }
        if before.is_none() {
            self.prober_joined(name, &mut affected);
        }
        self.settle(affected, &mut touched);
        touched
    }

    /// Removes pod `name`. Returns the probers whose list may have changed
    /// (not the pod itself, which has no list any more).
    pub fn remove(&mut self, name: &str) -> BTreeSet<String> {
        let mut touched = BTreeSet::new();
        let mut affected = BTreeSet::new();
        let Some(was) = self.pods.remove(name) else {
            return touched;
        };
        self.set_choice(name, Vec::new(), &mut affected);
        self.chosen.remove(name);
        if !was.is_empty() {
            self.left(name, &mut touched, &mut affected);
            affected.insert(name.to_string());
        }
        self.prober_left(name, &mut affected);
        self.settle(affected, &mut touched);
        touched.remove(name);
        touched
    }

    /// The annotation value of `prober`'s list (see
    /// [`combo_api::peers::format`]): every address of each peer it
    /// probes; None for a pod it does not know.
    pub fn list(&self, prober: &str) -> Option<String> {
        let ips: Vec<IpAddr> = self
            .peers_of(prober)?
            .filter_map(|name| self.pods.get(name))
            .flatten()
            .copied()
            .collect();
        Some(peers::format(&ips))
    }

    /// The pods `prober` probes (chosen, then added for coverage); None
    /// for a pod it does not know.
    pub fn peers_of<'a>(&'a self, prober: &str) -> Option<impl Iterator<Item = &'a String> + 'a> {
        let chosen = self.chosen.get(prober)?;
        let extra = self.extra_of.get(prober).into_iter().flatten();
        Some(chosen.iter().map(|(_, name)| name).chain(extra))
    }

    /// `name` became a candidate: every other prober that ranks it in its
    /// best `max` takes it and drops its last.
    fn joined(
        &mut self,
        name: &str,
        touched: &mut BTreeSet<String>,
        affected: &mut BTreeSet<String>,
    ) {
        let max = self.max;
        for (prober, list) in self.chosen.iter_mut() {
            if prober == name {
                continue;
            }
            let s = rendezvous::score(prober, name);
            let at = list.partition_point(|(ps, pn)| {
                rendezvous::better((*ps, pn), (s, name)) == std::cmp::Ordering::Less
            });
            if at < max {
                list.insert(at, (s, name.to_string()));
                *self.chosen_by.entry(name.to_string()).or_default() += 1;
                affected.insert(name.to_string());
                if let Some((_, dropped)) = (list.len() > max).then(|| list.pop()).flatten() {
                    cover::uncount(&mut self.chosen_by, &dropped);
                    affected.insert(dropped);
                }
                touched.insert(prober.clone());
            }
        }
    }

    /// `name` is no candidate any more: the probers that had it choose again.
    fn left(
        &mut self,
        name: &str,
        touched: &mut BTreeSet<String>,
        affected: &mut BTreeSet<String>,
    ) {
        for prober in self.choosers_of(name) {
            let ranked = self.rank_for(&prober);
            self.set_choice(&prober, ranked, affected);
            touched.insert(prober);
        }
    }

    /// Replaces `prober`'s choice, keeping the counts of [`Mesh::chosen_by`];
    /// the candidates whose count changed go to `affected`.
    fn set_choice(&mut self, prober: &str, ranked: Vec<Ranked>, affected: &mut BTreeSet<String>) {
        let old = mem::replace(
            self.chosen.entry(prober.to_string()).or_default(),
            ranked.clone(),
        );
        for (_, n) in &old {
            if !ranked.iter().any(|(_, m)| m == n) {
                cover::uncount(&mut self.chosen_by, n);
                affected.insert(n.clone());
            }
        }
        for (_, n) in &ranked {
            if !old.iter().any(|(_, m)| m == n) {
                *self.chosen_by.entry(n.clone()).or_default() += 1;
                affected.insert(n.clone());
            }
        }
    }

    /// The probers whose choice holds `name`.
    fn choosers_of(&self, name: &str) -> Vec<String> {
        self.chosen
            .iter()
            .filter(|(_, list)| list.iter().any(|(_, n)| n == name))
            .map(|(p, _)| p.clone())
            .collect()
    }

    /// `prober`'s best `max` among today's candidates.
    fn rank_for(&self, prober: &str) -> Vec<Ranked> {
        let candidates = self
            .pods
            .iter()
            .filter(|(_, addrs)| !addrs.is_empty())
            .map(|(n, _)| n.as_str());
        rendezvous::top(prober, candidates, self.max)
            .into_iter()
            .map(|(s, n)| (s, n.to_string()))
            .collect()
    }
}

#[cfg(test)]
#[path = "mesh_tests.rs"]
mod tests;
