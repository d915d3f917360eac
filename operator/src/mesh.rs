//! One Debugger's pods and the peers chosen for each, kept up to date one
//! pod change at a time. Pure.
//!
//! Every pod that is not terminating is a prober; the pods that are
//! Running and Ready with an address are also candidates (peers). Each
//! prober holds its `max` best candidates by
//! [`combo_api::peers::rendezvous`] score. A change touches
//! only the probers it concerns, and says which they are, so the operator
//! rewrites about `max` lists per pod coming or going instead of all of
//! them (docs/operator.md, "Peer lists").
//!
//! Cost per change, with n pods: a candidate joining scores it once for
//! every prober (n hashes); a candidate leaving re-chooses the probers that
//! had it (about `max` × n hashes); a new prober chooses once (n hashes).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::IpAddr;

use combo_api::peers::{self, rendezvous};

/// A choice: the candidate's score for the prober, and its name.
type Ranked = (u64, String);

/// The pods of one Debugger and each one's chosen peers.
#[derive(Debug, Default)]
pub struct Mesh {
    max: usize,
    /// Every prober; the address of those that are candidates.
    pods: BTreeMap<String, Option<IpAddr>>,
    /// Each prober's choice, best first, at most `max` long.
    chosen: HashMap<String, Vec<Ranked>>,
}

impl Mesh {
    /// An empty mesh in which each pod probes at most `max` peers (at
    /// least 1).
    pub fn new(max: usize) -> Mesh {
        Mesh {
            max: max.max(1),
            ..Mesh::default()
        }
    }

    /// A mesh of `pods` (name, and address when it can be probed) at
    /// once: each prober chooses once among all candidates, instead of
    /// the candidates joining one by one.
    pub fn with_pods<'a>(
        max: usize,
        pods: impl IntoIterator<Item = (&'a str, Option<IpAddr>)>,
    ) -> Mesh {
        let mut mesh = Mesh::new(max);
        mesh.pods = pods
            .into_iter()
            .map(|(n, ip)| (n.to_string(), ip))
            .collect();
        mesh.chosen = mesh
            .pods
            .keys()
            .map(|p| (p.clone(), mesh.rank_for(p)))
            .collect();
        mesh
    }

    /// The bound it was made with.
    pub fn max(&self) -> usize {
        self.max
    }

    /// Adds or updates pod `name`; `peer` is its address when it can be
    /// probed. Returns the probers whose list may have changed.
    pub fn set(&mut self, name: &str, peer: Option<IpAddr>) -> BTreeSet<String> {
        let mut touched = BTreeSet::new();
        let before = self.pods.insert(name.to_string(), peer);
        if before.is_none() {
            // A new prober chooses among the candidates there are.
            let ranked = self.rank_for(name);
            self.chosen.insert(name.to_string(), ranked);
            touched.insert(name.to_string());
        }
        let was = before.flatten();
        match (was, peer) {
            (None, Some(_)) => self.joined(name, &mut touched),
            (Some(_), None) => self.left(name, &mut touched),
            (Some(a), Some(b)) if a != b => touched.extend(self.choosers_of(name)),
            _ => {}
        }
        touched
    }

    /// Removes pod `name`. Returns the probers whose list may have changed
    /// (not the pod itself, which has no list any more).
    pub fn remove(&mut self, name: &str) -> BTreeSet<String> {
        let mut touched = BTreeSet::new();
        let Some(was) = self.pods.remove(name) else {
            return touched;
        };
        self.chosen.remove(name);
        if was.is_some() {
            self.left(name, &mut touched);
        }
        touched
    }

    /// The annotation value of `prober`'s list (see
    /// [`combo_api::peers::format`]); None for a pod it does not know.
    pub fn list(&self, prober: &str) -> Option<String> {
        let chosen = self.chosen.get(prober)?;
        let ips: Vec<IpAddr> = chosen
            .iter()
            .filter_map(|(_, name)| self.pods.get(name).copied().flatten())
            .collect();
        Some(peers::format(&ips))
    }

    /// `name` became a candidate: every other prober that ranks it in its
    /// best `max` takes it and drops its last.
    fn joined(&mut self, name: &str, touched: &mut BTreeSet<String>) {
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
                list.truncate(max);
                touched.insert(prober.clone());
            }
        }
    }

    /// `name` is no candidate any more: the probers that had it choose again.
    fn left(&mut self, name: &str, touched: &mut BTreeSet<String>) {
        for prober in self.choosers_of(name) {
            let ranked = self.rank_for(&prober);
            self.chosen.insert(prober.clone(), ranked);
            touched.insert(prober);
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
            .filter(|(_, ip)| ip.is_some())
            .map(|(n, _)| n.as_str());
        rendezvous::top(prober, candidates, self.max)
            .into_iter()
            .map(|(s, n)| (s, n.to_string()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(i: u32) -> IpAddr {
        IpAddr::from((0x0a00_0000u32 + i).to_be_bytes())
    }

    /// What every list must be: [`rendezvous::choose`] over the candidates,
    /// computed from scratch.
    fn expected(m: &Mesh) -> BTreeMap<String, String> {
        let candidates: Vec<&str> = m
            .pods
            .iter()
            .filter(|(_, ip)| ip.is_some())
            .map(|(n, _)| n.as_str())
            .collect();
        m.pods
            .keys()
            .map(|p| {
                let ips: Vec<IpAddr> = rendezvous::choose(p, candidates.iter().copied(), m.max)
                    .into_iter()
                    .map(|n| m.pods[n].unwrap())
                    .collect();
                (p.clone(), peers::format(&ips))
            })
            .collect()
    }

    fn lists(m: &Mesh) -> BTreeMap<String, String> {
        m.pods
            .keys()
            .map(|p| (p.clone(), m.list(p).unwrap()))
            .collect()
    }

    /// Applies `step` and checks that the lists equal a fresh choice and
    /// that every list that changed was reported.
    fn check(m: &mut Mesh, step: impl FnOnce(&mut Mesh) -> BTreeSet<String>) -> usize {
        let before = lists(m);
        let touched = step(m);
        let after = lists(m);
        assert_eq!(after, expected(m), "lists differ from a fresh choice");
        for (p, list) in &after {
            if before.get(p) != Some(list) {
                assert!(touched.contains(p), "{p}'s list changed unreported");
            }
        }
        touched.len()
    }

    #[test]
    fn every_change_leaves_the_lists_a_fresh_choice_would_give() {
        // A deterministic walk: pods join, turn ready, change address,
        // turn unready and leave, in an order a small LCG picks.
        let mut m = Mesh::new(5);
        let mut x: u64 = 42;
        let mut next = |n: u64| {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (x >> 33) % n
        };
        for step in 0..1500 {
            let pod = format!("pod-{}", next(60));
            let change = next(10);
            check(&mut m, |m| match change {
                0 | 1 => m.remove(&pod),
                2 => m.set(&pod, None),
                _ => m.set(&pod, Some(ip(step))),
            });
        }
        assert!(
            m.pods.len() > 20,
            "the walk should leave a crowd: {}",
            m.pods.len()
        );
    }

    #[test]
    fn a_pod_coming_or_going_rewrites_about_max_lists_of_a_thousand() {
        let mut m = Mesh::new(20);
        for i in 0..1000 {
            m.set(&format!("node-check-{i:05x}"), Some(ip(i)));
        }
        let joined = check(&mut m, |m| m.set("node-check-new", Some(ip(5000))));
        // The new pod's own list, and each prober that ranks it in its top
        // 20: binomial with mean 20.
        assert!((5..=45).contains(&joined), "{joined} lists for one join");
        let left = check(&mut m, |m| m.remove("node-check-00017"));
        assert!((5..=45).contains(&left), "{left} lists for one leave");
        let unready = check(&mut m, |m| m.set("node-check-00018", None));
        assert!(unready <= 45, "{unready} lists for one pod turning unready");
        let moved = check(&mut m, |m| m.set("node-check-00019", Some(ip(7000))));
        assert!(moved <= 45, "{moved} lists for one address change");
        let same = check(&mut m, |m| m.set("node-check-00020", Some(ip(0x20))));
        assert_eq!(same, 0, "an unchanged pod touches nothing");
    }

    #[test]
    fn a_mesh_made_at_once_equals_one_made_a_pod_at_a_time() {
        let pods: Vec<(String, Option<IpAddr>)> = (0..400u32)
            .map(|i| (format!("pod-{i}"), (i % 7 != 0).then(|| ip(i))))
            .collect();
        let at_once = Mesh::with_pods(20, pods.iter().map(|(n, ip)| (n.as_str(), *ip)));
        let mut one_by_one = Mesh::new(20);
        for (n, ip) in &pods {
            one_by_one.set(n, *ip);
        }
        assert_eq!(lists(&at_once), lists(&one_by_one));
        assert_eq!(lists(&at_once), expected(&at_once));
    }

    /// How long choosing every list of a 5,000-pod Debugger takes
    /// (`cargo test --release -p combo-operator --lib -- --ignored --nocapture mesh`).
    #[test]
    #[ignore = "a measurement, not a check"]
    fn time_to_choose_every_list_of_five_thousand_pods() {
        let pods: Vec<(String, Option<IpAddr>)> = (0..5000u32)
            .map(|i| (format!("node-check-{i:05x}"), Some(ip(i))))
            .collect();
        let start = std::time::Instant::now();
        let mesh = Mesh::with_pods(20, pods.iter().map(|(n, ip)| (n.as_str(), *ip)));
        let all = start.elapsed();
        let start = std::time::Instant::now();
        let mut m = mesh;
        let joined = m.set("node-check-new", Some(ip(9999))).len();
        let join = start.elapsed();
        let start = std::time::Instant::now();
        let left = m.remove("node-check-00017").len();
        let leave = start.elapsed();
        eprintln!(
            "5,000 pods: every list {all:?}; a join {join:?} ({joined} lists); a leave {leave:?} ({left} lists)"
        );
    }

    #[test]
    fn a_prober_that_is_no_candidate_still_gets_a_list_and_never_itself() {
        let mut m = Mesh::new(3);
        m.set("a", Some(ip(1)));
        m.set("b", Some(ip(2)));
        let touched = m.set("pending", None);
        assert_eq!(touched, BTreeSet::from(["pending".to_string()]));
        assert_eq!(m.list("pending").unwrap(), "10.0.0.1,10.0.0.2");
        assert_eq!(m.list("a").unwrap(), "10.0.0.2");
        assert_eq!(m.list("gone"), None);
        assert!(m.remove("gone").is_empty());
    }

    #[test]
    fn a_max_of_zero_is_taken_as_one() {
        let mut m = Mesh::new(0);
        for i in 0..5 {
            m.set(&format!("p{i}"), Some(ip(i)));
        }
        assert_eq!(m.max(), 1);
        assert!(m.pods.keys().all(|p| !m.list(p).unwrap().contains(',')));
    }
}
