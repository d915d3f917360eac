//! A dual-stack peer in network namespaces the test makes: the pinger
//! probes it on its IPv4 and its IPv6 address, as it builds its targets
//! from the peer's pod (all peers) or from its list (maxPeers 1-1,000),
//! and a fault of one family shows on that family's address alone. The
//! fault is recorded in the suite report (docs/testing.md, "Suite report")
//! under `faults` before the test asserts.

#[path = "support/engine.rs"]
mod engine;
#[path = "support/netns.rs"]
#[allow(dead_code, reason = "this test uses part of the helper")]
mod netns;

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use combo_api::PingerSpec;
use combo_pinger::cluster::peers::{desired, Known, Me, Pods};
use combo_pinger::engine::Engine;
use combo_pinger::round::Outcome;
use combo_pinger::targets::Target;
use combo_testkit::suite::Case;
use engine::settings;
use netns::Netns;
use tokio::sync::mpsc;

/// The pinger's pod (near) and its peer (far), each with an IPv4 and an
/// IPv6 (unique local) address on one veth pair.
const NEAR: [&str; 2] = ["10.98.0.1", "fd98::1"];
const FAR: [&str; 2] = ["10.98.0.2", "fd98::2"];

/// Two namespaces, near and far, joined by a veth pair, both dual-stack;
/// each deleted when dropped.
fn dual_stack_pair() -> (Netns, Netns) {
    let (near, far) = (Netns::new(), Netns::new());
    // The links are made inside the namespaces, so their names only need
    // to differ from each other.
    let (vn, vf) = ("kcds-near", "kcds-far");
    netns::run(&[
        "ip", "link", "add", vn, "netns", &near.name, "type", "veth", "peer", "name", vf, "netns",
        &far.name,
    ]);
    for (ns, dev, [v4, v6]) in [(&near, vn, NEAR), (&far, vf, FAR)] {
        ns.exec(&["ip", "addr", "add", &format!("{v4}/24"), "dev", dev]);
        // nodad: usable at once, not after duplicate address detection.
        ns.exec(&[
            "ip",
            "-6",
            "addr",
            "add",
            &format!("{v6}/64"),
            "dev",
            dev,
            "nodad",
        ]);
        ns.exec(&["ip", "link", "set", dev, "up"]);
    }
    (near, far)
}

/// Drops (`true`) or lets through again (`false`) the IPv6 echo requests
/// that reach `ns`; its IPv4 and neighbour discovery stay.
fn drop_ipv6_echo_requests(ns: &Netns, on: bool) {
    if on {
        ns.nft(
            "table inet v6hole {\n chain inp {\n  type filter hook input priority 0;\n  icmpv6 type echo-request drop\n }\n}\n",
        );
    } else {
        ns.exec(&["nft", "delete", "table", "inet", "v6hole"]);
    }
}

fn ips(list: &[&str]) -> Vec<IpAddr> {
    list.iter().map(|s| s.parse().unwrap()).collect()
}

/// The targets the pinger of the near pod builds for the far one: from the
/// Debugger's pods (`maxPeers: 0`, the pods as the table watch gives them
/// with their Pods included) and from the list the operator writes
/// (`maxPeers: 20`), which hold every address of both pods.
fn targets_of_the_dual_stack_peer() -> (BTreeSet<Target>, BTreeSet<Target>) {
    let me = Me::new("near", Some(&NEAR.join(",")), Some(NEAR[0]));
    let spec = |max_peers| PingerSpec {
        max_peers,
        gateway: false,
        ..PingerSpec::default()
    };
    let pods: Pods = BTreeMap::from([
        ("near".to_string(), ips(&NEAR)),
        ("far".to_string(), ips(&FAR)),
    ]);
    let from_pods = Known {
        listed: None,
        pods: &pods,
    };
    let (listed, bad) = combo_api::peers::parse(&[NEAR, FAR].concat().join(","));
    assert!(bad.is_empty(), "{bad:?}");
    let from_list = Known {
        listed: Some(&listed),
        pods: &Pods::new(),
    };
    (
        desired(&spec(0), from_pods, &me, &[]).targets,
        desired(&spec(20), from_list, &me, &[]).targets,
    )
}

/// The outcomes of the peer's rounds, per address and phase, in order.
#[derive(Debug, Default)]
struct Rounds {
    /// IPv4 rounds before, during and after the IPv6 drop.
    v4: [Vec<Outcome>; 3],
    /// IPv6 rounds before, during and after it.
    v6: [Vec<Outcome>; 3],
    /// Whether IPv6 was answered again after the drop was lifted.
    recovered: bool,
}

/// Probes `targets` from the near namespace: until both addresses have
/// been answered three times, then with the far side's IPv6 echo
/// requests dropped for six IPv6 rounds, then without until IPv6 is
/// answered again (or 60 more rounds). `far` is deleted at the end.
async fn probe_through_the_drop(far: Netns, targets: BTreeSet<Target>) -> Rounds {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut engine = Engine::new(settings(200, 400, 1), tx, 7, None);
    engine.set_targets(&targets);
    let mut rounds = Rounds::default();
    let mut phase = 0;
    let answered = |o: &[Outcome]| o.iter().filter(|o| matches!(o, Outcome::Ok(_))).count();
    while let Some(r) = rx.recv().await {
        let [outcome] = &r.outcomes[..] else {
            panic!("one probe per round: {:?}", r.outcomes);
        };
        let v6 = r.target.label() == FAR[1];
        let list = if v6 { &mut rounds.v6 } else { &mut rounds.v4 };
        list[phase].push(outcome.clone());
        match phase {
            0 if answered(&rounds.v4[0]) >= 3 && answered(&rounds.v6[0]) >= 3 => {
                drop_ipv6_echo_requests(&far, true);
                phase = 1;
            }
            0 if rounds.v4[0].len() > 50 => break,
            1 if rounds.v6[1].len() == 6 => {
                drop_ipv6_echo_requests(&far, false);
                phase = 2;
            }
            2 if v6 && matches!(outcome, Outcome::Ok(_)) => {
                rounds.recovered = true;
                break;
            }
            2 if rounds.v6[2].len() > 60 => break,
            _ => {}
        }
    }
    drop(engine);
    rounds
}

#[test]
fn a_dual_stack_peer_is_probed_on_both_addresses_and_an_ipv6_fault_fails_only_its_ipv6_address() {
    let case = Case::new(
        "faults",
        "pinger: a dual-stack peer's IPv6 echo requests dropped (nftables), IPv4 untouched",
        1,
    );
    let (from_pods, from_list) = targets_of_the_dual_stack_peer();
    let labels: Vec<String> = from_pods.iter().map(Target::label).collect();
    assert_eq!(labels, FAR, "both addresses of the peer, none of its own");
    assert_eq!(from_list, from_pods, "the list gives the same targets");

    let (near, far) = dual_stack_pair();
    let rounds = near.block_on(move || probe_through_the_drop(far, from_pods));
    let ok = |o: &Outcome| matches!(o, Outcome::Ok(_));
    let mut problems = Vec::new();
    if rounds.v4[0].iter().filter(|o| ok(o)).count() < 3
        || rounds.v6[0].iter().filter(|o| ok(o)).count() < 3
    {
        problems.push("both addresses answered before the drop");
    }
    // The first IPv6 round after the drop may have been answered before it.
    let dropped = rounds.v6[1].get(1..).unwrap_or_default();
    if dropped.len() < 5 || !dropped.iter().all(|o| *o == Outcome::Timeout) {
        problems.push("every IPv6 round timed out while its echo requests were dropped");
    }
    if rounds.v4[1].len() < 4 || !rounds.v4[1].iter().all(ok) {
        problems.push("IPv4 answered in every round (at least 4) while IPv6 was dropped");
    }
    if !rounds.recovered {
        problems.push("IPv6 answered again once the drop was lifted");
    }
    case.done(u64::from(problems.is_empty()), 0);
    assert!(problems.is_empty(), "not so: {problems:#?}\n{rounds:?}");
}
