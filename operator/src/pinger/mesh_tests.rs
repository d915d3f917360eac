use super::*;

fn ip(i: u32) -> IpAddr {
    IpAddr::from((0x0a00_0000u32 + i).to_be_bytes())
}

/// The IPv6 address of a dual-stack pod: fd00::<i>.
fn ip6(i: u32) -> IpAddr {
    IpAddr::V6(((0xfd00u128 << 112) + u128::from(i)).into())
}

/// What every list must be, computed from scratch: [`rendezvous::choose`]
/// over the candidates, then each candidate chosen by fewer than
/// `min(min, pods - 1)` added to the lists of the other probers that score
/// it highest.
fn expected(m: &Mesh) -> BTreeMap<String, String> {
    let candidates: Vec<&str> = m
        .pods
        .iter()
        .filter(|(_, addrs)| !addrs.is_empty())
        .map(|(n, _)| n.as_str())
        .collect();
    let mut chosen: BTreeMap<&str, BTreeSet<&str>> = m
        .pods
        .keys()
        .map(|p| {
            let c = rendezvous::choose(p, candidates.iter().copied(), m.max);
            (p.as_str(), c.into_iter().collect())
        })
        .collect();
    let target = m.min.min(m.pods.len().saturating_sub(1));
    for c in &candidates {
        let have = chosen.values().filter(|l| l.contains(c)).count();
        let mut others: Vec<(u64, &str)> = chosen
            .iter()
            .filter(|(p, l)| *p != c && !l.contains(c))
            .map(|(p, _)| (rendezvous::score(p, c), *p))
            .collect();
        others.sort_by(|a, b| rendezvous::better(*a, *b));
        let extra: Vec<&str> = others
            .iter()
            .take(target.saturating_sub(have))
            .map(|(_, p)| *p)
            .collect();
        for p in extra {
            chosen.get_mut(p).unwrap().insert(c);
        }
    }
    chosen
        .into_iter()
        .map(|(p, l)| {
            let ips: Vec<IpAddr> = l.into_iter().flat_map(|n| m.pods[n].clone()).collect();
            (p.to_string(), peers::format(&ips))
        })
        .collect()
}

/// How many others probe each candidate, from the lists.
fn probers(m: &Mesh) -> BTreeMap<IpAddr, usize> {
    let mut count: BTreeMap<IpAddr, usize> = m.pods.values().flatten().map(|ip| (*ip, 0)).collect();
    for list in lists(m).values() {
        for ip in peers::parse(list).0 {
            *count.get_mut(&ip).unwrap() += 1;
        }
    }
    count
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
    for (max, min) in [(5, 0), (2, 4), (1, 3)] {
        walk(Mesh::new(max, min));
    }
}

/// A deterministic walk: pods join, turn ready, change address, gain or
/// lose a second one, turn unready and leave, in an order a small LCG picks; after every step the
/// lists equal a fresh choice, and a changed list was reported.
fn walk(mut m: Mesh) {
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
            2 => m.set(&pod, Vec::new()),
            3 | 4 => m.set(&pod, vec![ip(step), ip6(step)]),
            _ => m.set(&pod, vec![ip(step)]),
        });
    }
    assert!(
        m.pods.len() > 20,
        "the walk should leave a crowd: {}",
        m.pods.len()
    );
    let least = probers(&m).into_values().min().unwrap();
    assert!(least >= m.min, "a pod has {least} probers, min {}", m.min);
}

#[test]
fn a_pod_coming_or_going_rewrites_about_max_lists_of_a_thousand() {
    let mut m = Mesh::new(20, 0);
    for i in 0..1000 {
        m.set(&format!("node-check-{i:05x}"), vec![ip(i)]);
    }
    let joined = check(&mut m, |m| m.set("node-check-new", vec![ip(5000)]));
    // The new pod's own list, and each prober that ranks it in its top
    // 20: binomial with mean 20.
    assert!((5..=45).contains(&joined), "{joined} lists for one join");
    let left = check(&mut m, |m| m.remove("node-check-00017"));
    assert!((5..=45).contains(&left), "{left} lists for one leave");
    let unready = check(&mut m, |m| m.set("node-check-00018", Vec::new()));
    assert!(unready <= 45, "{unready} lists for one pod turning unready");
    let moved = check(&mut m, |m| m.set("node-check-00019", vec![ip(7000)]));
    assert!(moved <= 45, "{moved} lists for one address change");
    let same = check(&mut m, |m| m.set("node-check-00020", vec![ip(0x20)]));
    assert_eq!(same, 0, "an unchanged pod touches nothing");
}

#[test]
fn a_mesh_made_at_once_equals_one_made_a_pod_at_a_time() {
    let pods: Vec<(String, Vec<IpAddr>)> = (0..400u32)
        .map(|i| {
            let addrs = match i % 7 {
                0 => vec![],
                1 => vec![ip(i), ip6(i)],
                _ => vec![ip(i)],
            };
            (format!("pod-{i}"), addrs)
        })
        .collect();
    let at_once = Mesh::with_pods(20, 0, pods.iter().map(|(n, ip)| (n.as_str(), ip.clone())));
    let mut one_by_one = Mesh::new(20, 0);
    for (n, ip) in &pods {
        one_by_one.set(n, ip.clone());
    }
    assert_eq!(lists(&at_once), lists(&one_by_one));
    assert_eq!(lists(&at_once), expected(&at_once));
}

/// How long choosing every list of a 5,000-pod Debugger takes
/// (`cargo test --release -p combo-operator --lib -- --ignored --nocapture mesh`).
#[test]
#[ignore = "a measurement, not a check"]
fn time_to_choose_every_list_of_five_thousand_pods() {
    let pods: Vec<(String, Vec<IpAddr>)> = (0..5000u32)
        .map(|i| (format!("node-check-{i:05x}"), vec![ip(i)]))
        .collect();
    let start = std::time::Instant::now();
    let mesh = Mesh::with_pods(20, 0, pods.iter().map(|(n, ip)| (n.as_str(), ip.clone())));
    let all = start.elapsed();
    let start = std::time::Instant::now();
    let mut m = mesh;
    let joined = m.set("node-check-new", vec![ip(9999)]).len();
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
    let mut m = Mesh::new(3, 0);
    m.set("a", vec![ip(1)]);
    m.set("b", vec![ip(2)]);
    let touched = m.set("pending", Vec::new());
    assert_eq!(touched, BTreeSet::from(["pending".to_string()]));
    assert_eq!(m.list("pending").unwrap(), "10.0.0.1,10.0.0.2");
    assert_eq!(m.list("a").unwrap(), "10.0.0.2");
    assert_eq!(m.list("gone"), None);
    assert!(m.remove("gone").is_empty());
}

#[test]
fn a_max_of_zero_is_taken_as_one() {
    let mut m = Mesh::new(0, 0);
    for i in 0..5 {
        m.set(&format!("p{i}"), vec![ip(i)]);
    }
    assert_eq!(m.bounds(), (1, 0));
    assert!(m.pods.keys().all(|p| !m.list(p).unwrap().contains(',')));
}

#[test]
fn every_pod_of_a_thousand_has_min_probers_even_when_max_is_smaller() {
    let pods: Vec<(String, Vec<IpAddr>)> = (0..1000u32)
        .map(|i| (format!("node-check-{i:05x}"), vec![ip(i)]))
        .collect();
    let plain = Mesh::with_pods(2, 0, pods.iter().map(|(n, ip)| (n.as_str(), ip.clone())));
    let least_plain = probers(&plain).into_values().min().unwrap();
    // Rendezvous alone: in-degree about Poisson(2), many pods below 3.
    assert!(
        least_plain < 3,
        "chance alone covered every pod: {least_plain}"
    );
    let mut m = Mesh::with_pods(2, 3, pods.iter().map(|(n, ip)| (n.as_str(), ip.clone())));
    assert_eq!(lists(&m), expected(&m));
    assert!(probers(&m).into_values().all(|k| k >= 3));
    let joined = check(&mut m, |m| m.set("node-check-new", vec![ip(5000)]));
    let left = check(&mut m, |m| m.remove("node-check-00017"));
    assert!(
        joined <= 12 && left <= 12,
        "join {joined}, leave {left} lists"
    );
    assert!(probers(&m).into_values().all(|k| k >= 3));
}

#[test]
fn with_fewer_pods_than_min_every_pod_probes_all_others() {
    let mut m = Mesh::new(1, 3);
    for i in 0..3 {
        m.set(&format!("p{i}"), vec![ip(i)]);
    }
    assert_eq!(m.list("p0").unwrap(), "10.0.0.1,10.0.0.2");
    assert_eq!(m.list("p1").unwrap(), "10.0.0.0,10.0.0.2");
    m.set("p3", vec![ip(3)]);
    assert!(probers(&m).into_values().all(|k| k == 3));
    m.remove("p3");
    m.remove("p2");
    assert_eq!(m.list("p0").unwrap(), "10.0.0.1");
    assert_eq!(lists(&m), expected(&m));
}

#[test]
fn a_dual_stack_pod_is_in_its_probers_lists_with_both_addresses() {
    let mut m = Mesh::new(3, 0);
    for i in 0..12 {
        m.set(&format!("p{i}"), vec![ip(i)]);
    }
    m.set("dual", vec![ip(100), ip6(100)]);
    let holders: Vec<String> = lists(&m)
        .into_iter()
        .filter(|(_, l)| l.split(',').any(|a| a == "10.0.0.100"))
        .map(|(p, _)| p)
        .collect();
    assert!(!holders.is_empty());
    for (p, l) in lists(&m) {
        let v4 = l.split(',').any(|a| a == "10.0.0.100");
        let v6 = l.split(',').any(|a| a == "fd00::64");
        assert_eq!(v4, v6, "{p} probes one address of two: {l}");
    }
    // Its own list is per pod too: three peers, three addresses.
    assert_eq!(m.list("dual").unwrap().split(',').count(), 3);
    assert_eq!(lists(&m), expected(&m));
}

#[test]
fn a_pod_gaining_a_second_address_rewrites_only_its_probers_lists() {
    let mut m = Mesh::new(4, 2);
    for i in 0..40 {
        m.set(&format!("p{i:02}"), vec![ip(i)]);
    }
    let holders = |m: &Mesh| -> BTreeSet<String> {
        lists(m)
            .into_iter()
            .filter(|(_, l)| l.split(',').any(|a| a == "10.0.0.7"))
            .map(|(p, _)| p)
            .collect()
    };
    let before = holders(&m);
    let touched = m.set("p07", vec![ip(7), ip6(7)]);
    assert_eq!(touched, before, "the same probers, no others");
    assert_eq!(holders(&m), before);
    assert_eq!(lists(&m), expected(&m));
    let back = check(&mut m, |m| m.set("p07", vec![ip(7)]));
    assert_eq!(back, before.len());
    assert_eq!(check(&mut m, |m| m.set("p07", vec![ip(7)])), 0);
}
