//! Coverage: each candidate is probed by at least `min` others, or by all
//! others when there are fewer (docs/pinger.md#coverage). Pure.
//!
//! A candidate that `k < min` probers chose by rendezvous score gets
//! `min - k` extra probers: among the probers that did not choose it, those
//! with the highest [`rendezvous::score`] of (prober, candidate). The extras
//! depend only on the pods there are, so a join or a leave moves a few of
//! them, like the choice itself; with `max` well above `min` almost no
//! candidate needs any.

use std::collections::{BTreeSet, HashMap};

use combo_api::peers::rendezvous;

use super::{Mesh, Ranked};

/// Lowers `name`'s count by one, forgetting it at zero.
pub(super) fn uncount(counts: &mut HashMap<String, usize>, name: &str) {
    if let Some(n) = counts.get_mut(name) {
        *n -= 1;
        if *n == 0 {
            counts.remove(name);
        }
    }
}

impl Mesh {
    /// The probers `c` must have: `min`, or every other pod when fewer.
    fn target(&self) -> usize {
        self.min.min(self.pods.len().saturating_sub(1))
    }

    /// The extra probers `candidate` still needs after the choice.
    fn need(&self, candidate: &str) -> usize {
        let chosen_by = self.chosen_by.get(candidate).copied().unwrap_or(0);
        self.target().saturating_sub(chosen_by)
    }

    /// The probers that probe `candidate` for coverage.
    pub(super) fn extra_probers(&self, candidate: &str) -> Vec<String> {
        let extra = self.extra.get(candidate).into_iter().flatten();
        extra.map(|(_, p)| p.clone()).collect()
    }

    /// A new prober: the needy candidates it would serve better than one
    /// of their extras go to `affected`.
    pub(super) fn prober_joined(&self, prober: &str, affected: &mut BTreeSet<String>) {
        for (c, addrs) in &self.pods {
            if addrs.is_empty() || c == prober || affected.contains(c) {
                continue;
            }
            let need = self.need(c);
            if need == 0 {
                continue;
            }
            let have = self.extra.get(c).map(Vec::as_slice).unwrap_or_default();
            let s = rendezvous::score(prober, c);
            let beats = have.last().is_none_or(|(ls, lp)| {
                rendezvous::better((s, prober), (*ls, lp)) == std::cmp::Ordering::Less
            });
            if have.len() < need || beats {
                affected.insert(c.clone());
            }
        }
    }

    /// A prober gone: the candidates it served go to `affected`.
    pub(super) fn prober_left(&mut self, prober: &str, affected: &mut BTreeSet<String>) {
        for c in self.extra_of.remove(prober).unwrap_or_default() {
            if let Some(list) = self.extra.get_mut(&c) {
                list.retain(|(_, p)| p != prober);
            }
            affected.insert(c);
        }
    }

    /// Covers the `affected` candidates again (all of them while the
    /// Debugger has no more than `min + 1` pods, as the target follows
    /// the number of pods then).
    pub(super) fn settle(
        &mut self,
        mut affected: BTreeSet<String>,
        touched: &mut BTreeSet<String>,
    ) {
        if self.pods.len() <= self.min + 1 {
            affected.extend(self.pods.keys().cloned());
            affected.extend(self.extra.keys().cloned());
        }
        for c in affected {
            self.cover(&c, touched);
        }
    }

    /// Chooses `candidate`'s extra probers again; the probers whose list
    /// changed go to `touched`.
    pub(super) fn cover(&mut self, candidate: &str, touched: &mut BTreeSet<String>) {
        let want = self.extras_for(candidate);
        let old = self.extra.remove(candidate).unwrap_or_default();
        for (_, p) in &old {
            if !want.iter().any(|(_, q)| q == p) {
                if let Some(set) = self.extra_of.get_mut(p) {
                    set.remove(candidate);
                    if set.is_empty() {
                        self.extra_of.remove(p);
                    }
                }
                touched.insert(p.clone());
            }
        }
        for (_, p) in &want {
            if !old.iter().any(|(_, q)| q == p) {
                let set = self.extra_of.entry(p.clone()).or_default();
                set.insert(candidate.to_string());
                touched.insert(p.clone());
            }
        }
        if !want.is_empty() {
            self.extra.insert(candidate.to_string(), want);
        }
    }

    /// The extra probers `candidate` should have, best first.
    fn extras_for(&self, candidate: &str) -> Vec<Ranked> {
        let is_candidate = self.pods.get(candidate).is_some_and(|a| !a.is_empty());
        let need = self.need(candidate);
        if !is_candidate || need == 0 {
            return Vec::new();
        }
        let mut scored: Vec<(u64, &str)> = self
            .pods
            .keys()
            .filter(|p| p.as_str() != candidate)
            .map(|p| (rendezvous::score(p, candidate), p.as_str()))
            .collect();
        // Those that chose it are among the best `need + chosen_by`, at most.
        let keep = need + self.chosen_by.get(candidate).copied().unwrap_or(0);
        if keep < scored.len() {
            scored.select_nth_unstable_by(keep - 1, |a, b| rendezvous::better(*a, *b));
            scored.truncate(keep);
        }
        scored.sort_unstable_by(|a, b| rendezvous::better(*a, *b));
        scored
            .into_iter()
            .filter(|(_, p)| !self.chosen[*p].iter().any(|(_, n)| n == candidate))
            .take(need)
            .map(|(s, p)| (s, p.to_string()))
            .collect()
    }
}
