//! Which peers a pinger probes when it may probe at most `maxPeers` of them.
//! Pure.
//!
//! Rendezvous (highest random weight) hashing: every pair (prober, peer) gets
//! a score from a hash of both pod names, and a prober takes the `max` peers
//! with the highest scores. The scores of one pair do not depend on any other
//! pod, so:
//!
//! * every pod is chosen by each other pod with the same chance
//!   `max / (n - 1)`: the number of probers of a pod (its in-degree) is
//!   binomial with mean exactly `max` (the total number of choices is
//!   `n × max`) and standard deviation below `√max`;
//! * a pod leaving changes only the choices of the probers that had chosen
//!   it (each takes its next-best peer instead), and a pod joining changes
//!   only the choices of the probers that now rank it in their top `max`
//!   (each drops its lowest one): about `max` probers either way, out of `n`.

use crate::hash::{fnv1a, fnv1a_more, mix64};

/// The scores of a prober's peers: FNV-1a over both names with a separator,
/// then the SplitMix64 finaliser so that names differing in one trailing
/// byte still get unrelated scores.
pub fn score(prober: &str, peer: &str) -> u64 {
    Scores::of(prober).peer(peer)
}

/// One prober's [`score`]s, with its own name hashed once.
#[derive(Clone, Copy, Debug)]
pub struct Scores(u64);

impl Scores {
    /// The scores of `prober`.
    pub fn of(prober: &str) -> Scores {
        Scores(fnv1a(&[prober.as_bytes()]))
    }

    /// The score of `peer` for this prober.
    pub fn peer(self, peer: &str) -> u64 {
        mix64(fnv1a_more(self.0, &[peer.as_bytes()]))
    }
}

/// The order of a choice: the higher score first, then the smaller name,
/// so that equal scores of different names still have one order.
pub fn better(a: (u64, &str), b: (u64, &str)) -> std::cmp::Ordering {
    b.0.cmp(&a.0).then(a.1.cmp(b.1))
}

/// The `max` candidates with the highest [`score`]s for `prober`, best
/// first, with their scores; all of them when `max` is 0 or not smaller
/// than their number. The prober itself and repeated names are left out.
pub fn top<'a, I>(prober: &str, candidates: I, max: usize) -> Vec<(u64, &'a str)>
where
    I: IntoIterator<Item = &'a str>,
{
    let scores = Scores::of(prober);
    let mut scored: Vec<(u64, &'a str)> = candidates
        .into_iter()
        .filter(|c| *c != prober)
        .map(|c| (scores.peer(c), c))
        .collect();
    scored.sort_unstable_by(|a, b| a.1.cmp(b.1));
    scored.dedup_by(|a, b| a.1 == b.1);
    // Only the best `max` need an order: select them first, so a prober
    // among n candidates costs O(n), not O(n log n).
    if max > 0 && max < scored.len() {
        scored.select_nth_unstable_by(max - 1, |a, b| better(*a, *b));
        scored.truncate(max);
    }
    scored.sort_unstable_by(|a, b| better(*a, *b));
    scored
}

/// The peers `prober` probes: the names of [`top`], sorted by name. The
/// result depends only on the set of candidates, not on their order.
pub fn choose<'a, I>(prober: &str, candidates: I, max: usize) -> Vec<&'a str>
where
    I: IntoIterator<Item = &'a str>,
{
    let mut chosen: Vec<&str> = top(prober, candidates, max)
        .into_iter()
        .map(|(_, c)| c)
        .collect();
    chosen.sort_unstable();
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeMap, BTreeSet};

    fn pods(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("node-check-{i:05x}")).collect()
    }

    /// Who probes whom: prober -> chosen peers.
    fn graph(pods: &[String], max: usize) -> BTreeMap<String, BTreeSet<String>> {
        pods.iter()
            .map(|p| {
                let chosen = choose(p, pods.iter().map(String::as_str), max);
                (p.clone(), chosen.into_iter().map(String::from).collect())
            })
            .collect()
    }

    fn in_degrees(g: &BTreeMap<String, BTreeSet<String>>) -> BTreeMap<&str, usize> {
        let mut deg: BTreeMap<&str, usize> = g.keys().map(|p| (p.as_str(), 0)).collect();
        for peers in g.values() {
            for p in peers {
                *deg.get_mut(p.as_str()).unwrap() += 1;
            }
        }
        deg
    }

    #[test]
    fn every_one_of_a_thousand_pods_is_probed_by_about_max_peers_others() {
        let pods = pods(1000);
        let g = graph(&pods, 20);
        assert!(g.values().all(|peers| peers.len() == 20));
        assert!(g.iter().all(|(me, peers)| !peers.contains(me)));
        let deg = in_degrees(&g);
        let min = *deg.values().min().unwrap();
        let max = *deg.values().max().unwrap();
        let mean = deg.values().sum::<usize>() as f64 / deg.len() as f64;
        // Binomial(999, 20/999): sd 4.4; over 1,000 pods the extremes lie
        // about 3.3 sd from the mean.
        assert_eq!(mean, 20.0);
        assert!(min >= 5, "least-probed pod has {min} probers");
        assert!(max <= 36, "most-probed pod has {max} probers");
        // About 2.5 % of a binomial lie beyond 2.26 sd (±10) from the mean.
        let within_ten = deg.values().filter(|d| d.abs_diff(20) <= 10).count();
        assert!(within_ten >= 950, "{within_ten} of 1000 within 20±10");
        eprintln!("in-degree over 1000 pods: min {min}, max {max}, {within_ten} within 20±10");
    }

    #[test]
    fn one_pod_leaving_changes_only_the_choices_that_involved_it() {
        let all = pods(300);
        let before = graph(&all, 20);
        let gone = all[17].clone();
        let rest: Vec<String> = all.iter().filter(|p| **p != gone).cloned().collect();
        let after = graph(&rest, 20);
        let mut changed = 0;
        for (prober, peers) in &after {
            let old = &before[prober];
            if old.contains(&gone) {
                // Lost the pod that left, gained exactly one other.
                assert_eq!(old.difference(peers).collect::<Vec<_>>(), [&gone]);
                assert_eq!(peers.difference(old).count(), 1);
                changed += 1;
            } else {
                assert_eq!(old, peers, "{prober} changed without a reason");
            }
        }
        assert_eq!(changed, in_degrees(&before)[gone.as_str()]);
    }

    #[test]
    fn one_pod_joining_changes_only_the_choices_of_the_pods_that_pick_it() {
        let all = pods(300);
        let before = graph(&all, 20);
        let mut more = all.clone();
        more.push("node-check-new".into());
        let after = graph(&more, 20);
        let mut changed = 0;
        for (prober, old) in &before {
            let new = &after[prober];
            if new.contains("node-check-new") {
                assert_eq!(new.difference(old).collect::<Vec<_>>(), ["node-check-new"]);
                assert_eq!(old.difference(new).count(), 1);
                changed += 1;
            } else {
                assert_eq!(old, new, "{prober} changed without a reason");
            }
        }
        assert!(changed > 0 && changed <= 40, "{changed} probers moved");
        assert_eq!(after["node-check-new"].len(), 20);
    }

    #[test]
    fn zero_or_a_large_max_chooses_every_other_pod_in_any_input_order() {
        let all = pods(5);
        let names: Vec<&str> = all.iter().map(String::as_str).collect();
        let mut reversed = names.clone();
        reversed.reverse();
        let others: Vec<&str> = names[1..].to_vec();
        assert_eq!(choose(names[0], names.clone(), 0), others);
        assert_eq!(choose(names[0], reversed.clone(), 10), others);
        assert_eq!(
            choose(names[0], names.clone(), 2),
            choose(names[0], reversed, 2)
        );
        assert_eq!(choose(names[0], names, 2).len(), 2);
    }

    #[test]
    fn scores_stay_the_values_released_pinger_versions_computed() {
        // A changed score would reshuffle every prober's peers on upgrade.
        assert_eq!(
            score("node-check-00000", "node-check-00001"),
            0x8025_26a4_4af0_f692
        );
        assert_eq!(
            score("node-check-00001", "node-check-00000"),
            0x9ef8_5a0e_77f5_7c7e
        );
        assert_eq!(score("a", "b"), 0xeb38_c838_c62d_597e);
        assert_eq!(score("", ""), 0x25fc_6dd3_6ce0_4b20);
    }

    #[test]
    fn scores_of_a_pair_depend_on_both_names_and_their_order() {
        assert_ne!(score("a", "b"), score("b", "a"));
        assert_ne!(score("ab", "c"), score("a", "bc"));
        assert_eq!(score("a", "b"), score("a", "b"));
    }
}
