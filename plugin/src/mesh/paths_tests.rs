use super::*;
use combo_api::recent::RecentTarget;

pub(crate) fn probers() -> Vec<Prober> {
    (1..=3)
        .map(|i| Prober {
            pod: format!("ds-{i}"),
            node: format!("node-{i}"),
            // node-2 is single-stack, the others dual-stack.
            ips: [format!("10.0.0.{i}"), format!("fd00::{i}")][..if i == 2 { 1 } else { 2 }]
                .to_vec(),
        })
        .collect()
}

fn target(kind: &str, target: &str, sent: u64, lost: u64, up: bool) -> RecentTarget {
    RecentTarget {
        kind: kind.into(),
        target: target.into(),
        sent,
        lost,
        rtt_avg_ms: (sent > lost).then_some(1.5),
        rtt_max_ms: (sent > lost).then_some(3.0),
        up,
    }
}

/// node-1 cannot reach node-3; node-2 loses a little to node-1; node-3
/// probes a DNS server that fine, and node-2's pinger did not answer.
pub(crate) fn answers() -> Vec<(usize, Recent)> {
    let recent = |targets| Recent {
        window_seconds: 300,
        targets,
    };
    vec![
        (
            0,
            recent(vec![
                target("icmp", "10.0.0.2", 60, 0, true),
                target("icmp", "10.0.0.3", 60, 60, false),
            ]),
        ),
        (
            2,
            recent(vec![
                target("icmp", "fd00::1", 60, 3, true),
                target("udp", "10.96.0.10:53", 60, 0, true),
                target("icmp", "10.0.0.9", 0, 0, true),
            ]),
        ),
    ]
}

#[test]
fn peers_are_named_by_node_on_either_address_and_other_targets_as_written() {
    let p = paths(&probers(), &answers());
    let pairs: Vec<(&str, &str, bool)> = p
        .iter()
        .map(|p| (p.prober.as_str(), p.target.as_str(), p.peer))
        .collect();
    assert!(pairs.contains(&("node-1", "node-3", true)), "{pairs:?}");
    assert!(pairs.contains(&("node-3", "node-1", true)), "{pairs:?}");
    assert!(pairs.contains(&("node-3", "10.96.0.10:53", false)));
    assert!(
        pairs.contains(&("node-3", "10.0.0.9", false)),
        "an address of no pod of the Debugger stays an address"
    );
}

#[test]
fn failing_paths_come_first_then_lossy_by_loss_then_ok_then_idle() {
    let p = paths(&probers(), &answers());
    let order: Vec<(Health, &str, &str)> = p
        .iter()
        .map(|p| (p.health, p.prober.as_str(), p.target.as_str()))
        .collect();
    assert_eq!(
        order,
        vec![
            (Health::Failing, "node-1", "node-3"),
            (Health::Lossy, "node-3", "node-1"),
            (Health::Ok, "node-1", "node-2"),
            (Health::Ok, "node-3", "10.96.0.10:53"),
            (Health::Idle, "node-3", "10.0.0.9"),
        ]
    );
    assert_eq!(p[0].loss, 100.0);
    assert_eq!(p[1].loss, 5.0);
}

#[test]
fn the_table_shows_failing_and_lossy_paths_unless_all_and_the_tally_counts_pingers() {
    let p = paths(&probers(), &answers());
    let failing = rows(&p, false);
    assert_eq!(
        failing,
        vec![
            vec![
                "node-1",
                "node-3 [10.0.0.3]",
                "icmp",
                "100%",
                "-",
                "-",
                "FAIL"
            ],
            vec![
                "node-3",
                "node-1 [fd00::1]",
                "icmp",
                "5%",
                "1.50ms",
                "3.00ms",
                "lossy"
            ],
        ]
    );
    let all = rows(&p, true);
    assert_eq!(all.len(), 5);
    // A single-stack peer is named by its node alone.
    assert_eq!(all[2][..2], ["node-1", "node-2"]);
    assert_eq!(
        tally(&p, 300, 2, 3),
        "5 paths over the last 5 minutes: 1 failing, 1 lossy, 2 ok, 1 idle; 2 of 3 pingers answered"
    );
}

#[test]
fn a_dual_stack_peer_is_a_path_per_address_and_its_failing_family_shows() {
    let answers = vec![(
        0,
        Recent {
            window_seconds: 300,
            targets: vec![
                target("icmp", "10.0.0.3", 60, 0, true),
                target("icmp", "fd00::3", 60, 60, false),
            ],
        },
    )];
    let p = paths(&probers(), &answers);
    let shown: Vec<(&str, Option<&str>, Health)> = p
        .iter()
        .map(|p| (p.target.as_str(), p.address.as_deref(), p.health))
        .collect();
    assert_eq!(
        shown,
        [
            ("node-3", Some("fd00::3"), Health::Failing),
            ("node-3", Some("10.0.0.3"), Health::Ok),
        ]
    );
    assert_eq!(rows(&p, false)[0][1], "node-3 [fd00::3]");
}
