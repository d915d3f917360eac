use super::*;

fn path(prober: &str, target: &str, peer: bool, kind: &str, health: Health) -> Path {
    let failing = health == Health::Failing;
    Path {
        prober: prober.into(),
        target: target.into(),
        peer,
        address: None,
        kind: kind.into(),
        sent: if health == Health::Idle { 0 } else { 60 },
        loss: if failing { 100.0 } else { 0.0 },
        rtt_avg_ms: (!failing).then_some(0.5),
        rtt_max_ms: (!failing).then_some(1.0),
        health,
    }
}

fn health(failing: bool) -> Health {
    if failing {
        Health::Failing
    } else {
        Health::Ok
    }
}

fn node(i: usize) -> String {
    format!("node-{i}")
}

/// Every node of `1..=n` probing every other, failing where `fails`.
fn mesh(n: usize, fails: impl Fn(usize, usize) -> bool) -> Vec<Path> {
    let mut out = Vec::new();
    for a in 1..=n {
        for b in (1..=n).filter(|b| *b != a) {
            out.push(path(&node(a), &node(b), true, "icmp", health(fails(a, b))));
        }
    }
    out
}

/// Every node of `1..=n` probing `target`, failing from the probers in
/// `failing_from`.
fn listed(n: usize, target: &str, kind: &str, failing_from: &[usize]) -> Vec<Path> {
    (1..=n)
        .map(|a| {
            let h = health(failing_from.contains(&a));
            path(&node(a), target, false, kind, h)
        })
        .collect()
}

/// The faults as (word, at) and the number of their failing paths.
fn summary(paths: &[Path]) -> Vec<(&'static str, String, usize)> {
    classify(paths)
        .iter()
        .map(|f| {
            let at = match f {
                Fault::Node { node, .. } => node.clone(),
                Fault::Target { target, kind, .. } => format!("{target} ({kind})"),
                Fault::Path {
                    prober,
                    target,
                    kind,
                    ..
                } => format!("{prober} -> {target} ({kind})"),
            };
            (f.word(), at, f.paths().len())
        })
        .collect()
}

#[test]
fn one_node_dropping_all_traffic_in_a_five_node_mesh_is_one_node_side_fault_not_eight_paths() {
    let paths = mesh(5, |a, b| a == 3 || b == 3);
    assert_eq!(
        paths.iter().filter(|p| p.health == Health::Failing).count(),
        8
    );
    let faults = classify(&paths);
    assert_eq!(faults.len(), 1, "{faults:?}");
    let Fault::Node {
        node,
        as_prober,
        as_target,
        paths: failing,
    } = &faults[0]
    else {
        panic!("a node-side fault: {faults:?}");
    };
    assert_eq!(node, "node-3");
    assert_eq!(
        (*as_prober, *as_target),
        (
            Share {
                failing: 4,
                probed: 4
            },
            Share {
                failing: 4,
                probed: 4
            }
        )
    );
    // Its failing paths, both ways, are grouped under it.
    assert_eq!(failing.len(), 8);
    assert!(failing
        .iter()
        .all(|i| paths[*i].prober == "node-3" || paths[*i].target == "node-3"));
}

#[test]
fn a_node_whose_pinger_is_silent_is_node_side_from_the_probers_that_lose_it() {
    let paths: Vec<Path> = mesh(5, |_, b| b == 5)
        .into_iter()
        .filter(|p| p.prober != "node-5")
        .collect();
    assert_eq!(summary(&paths), [("node-side", node(5), 4)]);
}

#[test]
fn a_closed_port_on_one_target_probed_by_all_is_a_target_fault() {
    let mut paths = mesh(4, |_, _| false);
    paths.extend(listed(4, "10.96.0.1:443", "tcp", &[]));
    paths.extend(listed(4, "172.31.0.1:1", "tcp", &[1, 2, 3, 4]));
    let faults = classify(&paths);
    assert_eq!(
        summary(&paths),
        [("target", "172.31.0.1:1 (tcp)".into(), 4)]
    );
    let Fault::Target { probers, .. } = &faults[0] else {
        panic!("{faults:?}")
    };
    assert_eq!(
        *probers,
        Share {
            failing: 4,
            probed: 4
        }
    );
}

#[test]
fn one_failing_pair_is_a_path_fault() {
    let mut paths = mesh(5, |a, b| (a, b) == (1, 4));
    paths.extend(listed(5, "10.96.0.10:53", "udp", &[2]));
    assert_eq!(
        summary(&paths),
        [
            ("path", "node-1 -> node-4 (icmp)".into(), 1),
            ("path", "node-2 -> 10.96.0.10:53 (udp)".into(), 1),
        ]
    );
}

#[test]
fn a_healthy_mesh_has_no_fault_whatever_its_lossy_and_idle_paths() {
    let mut paths = mesh(5, |_, _| false);
    paths[0].health = Health::Lossy;
    paths[1].health = Health::Idle;
    paths.extend(listed(5, "172.31.0.1", "icmp", &[]));
    assert!(classify(&paths).is_empty());
    assert!(classify(&[]).is_empty());
}

#[test]
fn in_a_two_node_mesh_a_lost_peer_is_a_path_and_losing_listed_targets_too_is_node_side() {
    // One peer each: the minimum of 2 failing pairs keeps either node, and
    // either direction, from being node-side.
    assert_eq!(
        summary(&mesh(2, |a, _| a == 1)),
        [("path", "node-1 -> node-2 (icmp)".into(), 1)]
    );
    assert_eq!(
        summary(&mesh(2, |_, _| true)),
        [
            ("path", "node-1 -> node-2 (icmp)".into(), 1),
            ("path", "node-2 -> node-1 (icmp)".into(), 1),
        ]
    );
    // node-1 drops all its traffic and probes two listed targets, as
    // node-2 does: it loses 3 of 3, node-2 loses only node-1 of its 3.
    let mut paths = mesh(2, |_, _| true);
    paths.extend(listed(2, "172.31.0.1", "icmp", &[1]));
    paths.extend(listed(2, "172.31.0.1:5000", "tcp", &[1]));
    assert_eq!(summary(&paths), [("node-side", node(1), 4)]);
}

#[test]
fn a_closed_port_while_one_of_two_nodes_is_down_rests_on_one_healthy_prober_and_is_a_path() {
    let mut paths = mesh(2, |_, _| true);
    paths.extend(listed(2, "172.31.0.1", "icmp", &[1]));
    paths.extend(listed(2, "172.31.0.1:1", "tcp", &[1, 2]));
    assert_eq!(
        summary(&paths),
        [
            ("node-side", node(1), 4),
            ("path", "node-2 -> 172.31.0.1:1 (tcp)".into(), 1),
        ]
    );
    // With a third node the target's healthy probers are two again.
    let mut paths = mesh(3, |a, b| a == 1 || b == 1);
    paths.extend(listed(3, "172.31.0.1", "icmp", &[1]));
    paths.extend(listed(3, "172.31.0.1:1", "tcp", &[1, 2, 3]));
    assert_eq!(
        summary(&paths),
        [
            ("node-side", node(1), 6),
            ("target", "172.31.0.1:1 (tcp)".into(), 2),
        ]
    );
}

#[test]
fn half_is_no_majority_a_node_losing_two_of_four_peers_is_two_paths() {
    let paths = mesh(5, |a, b| a == 1 && (b == 2 || b == 3));
    assert_eq!(
        summary(&paths),
        [
            ("path", "node-1 -> node-2 (icmp)".into(), 1),
            ("path", "node-1 -> node-3 (icmp)".into(), 1),
        ]
    );
    // One more lost, 3 of 4: node-side.
    let paths = mesh(5, |a, b| a == 1 && b != 5);
    assert_eq!(summary(&paths), [("node-side", node(1), 3)]);
}

#[test]
fn two_dead_nodes_of_four_are_both_node_side_and_their_healthy_peers_are_not() {
    // node-1 and node-4 lose 2 of their 3 peers each, but both are lost
    // to nodes that are down themselves.
    let dead = |n| n == 2 || n == 3;
    let paths = mesh(4, |a, b| dead(a) || dead(b));
    assert_eq!(
        summary(&paths),
        [("node-side", node(2), 6), ("node-side", node(3), 4)]
    );
}

#[test]
fn equal_nodes_go_to_the_first_by_name_and_the_second_is_judged_on_what_is_left() {
    // Both nodes of two lose everything, each with two listed targets.
    let mut paths = mesh(2, |_, _| true);
    paths.extend(listed(2, "172.31.0.1", "icmp", &[1, 2]));
    paths.extend(listed(2, "172.31.0.1:5000", "tcp", &[1, 2]));
    let faults = classify(&paths);
    assert_eq!(
        summary(&paths),
        [("node-side", node(1), 4), ("node-side", node(2), 2)]
    );
    let Fault::Node { as_prober, .. } = &faults[1] else {
        panic!("{faults:?}")
    };
    assert_eq!(
        *as_prober,
        Share {
            failing: 2,
            probed: 2
        },
        "node-1's pairs were out"
    );
}

#[test]
fn a_dual_stack_peer_is_one_pair_and_its_failing_family_is_grouped_with_it() {
    let mut paths = Vec::new();
    for a in 1..=3 {
        for b in (1..=3).filter(|b| *b != a) {
            for (ip, v6) in [(format!("10.0.0.{b}"), false), (format!("fd00::{b}"), true)] {
                let mut p = path(&node(a), &node(b), true, "icmp", health(v6 && b == 3));
                p.address = Some(ip);
                paths.push(p);
            }
        }
    }
    // node-3's IPv6 address fails from both probers: 2 of 2 pairs.
    let faults = classify(&paths);
    assert_eq!(summary(&paths), [("node-side", node(3), 2)]);
    let Fault::Node { as_target, .. } = &faults[0] else {
        panic!("{faults:?}")
    };
    assert_eq!(
        *as_target,
        Share {
            failing: 2,
            probed: 2
        }
    );
    assert!(faults[0]
        .paths()
        .iter()
        .all(|i| paths[*i].address.as_deref() == Some("fd00::3")));
}

#[test]
fn idle_pairs_are_not_counted() {
    // node-1 fails 2 of its 4 peers and 2 more have sent nothing yet: 2 of
    // 2 probed.
    let mut paths = mesh(5, |a, b| a == 1 && b <= 3);
    for p in paths
        .iter_mut()
        .filter(|p| p.prober == "node-1" && p.target >= node(4))
    {
        p.health = Health::Idle;
    }
    assert_eq!(summary(&paths), [("node-side", node(1), 2)]);
}

#[test]
fn the_faults_do_not_depend_on_the_order_of_the_paths() {
    let mut paths = mesh(5, |a, b| a == 2 || b == 2 || (a, b) == (4, 5));
    paths.extend(listed(5, "172.31.0.1:1", "tcp", &[1, 2, 3, 4, 5]));
    type Identities = Vec<(&'static str, Vec<(String, String, String)>)>;
    let identities = |paths: &[Path]| -> Identities {
        classify(paths)
            .iter()
            .map(|f| {
                let ids = f
                    .paths()
                    .iter()
                    .map(|i| {
                        let p = &paths[*i];
                        (p.prober.clone(), p.target.clone(), p.kind.clone())
                    })
                    .collect::<std::collections::BTreeSet<_>>();
                (f.word(), ids.into_iter().collect())
            })
            .collect()
    };
    let forward = identities(&paths);
    paths.reverse();
    assert_eq!(identities(&paths), forward);
    assert_eq!(
        forward
            .iter()
            .map(|(w, ids)| (*w, ids.len()))
            .collect::<Vec<_>>(),
        [("node-side", 9), ("target", 4), ("path", 1)]
    );
}
