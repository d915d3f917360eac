//! Loss, latency, black holes and routes that refuse injected inside
//! network namespaces the tests create; the measured values must match
//! what was injected. The tests that inject a fault record it in the suite
//! report (docs/testing.md, "Suite report") under `faults` before they
//! assert.

#[path = "support/engine.rs"]
mod engine;
#[path = "support/icmp_responder.rs"]
mod icmp_responder;
#[path = "support/netns.rs"]
mod netns;
mod support;

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use combo_pinger::engine::{Engine, Settings};
use combo_pinger::round::Report;
use combo_pinger::targets::{self, Target, TargetLists};
use combo_testkit::suite::Case;
use engine::settings;
use netns::Netns;
use tokio::sync::mpsc;

fn icmp_targets(ips: &[&str]) -> std::collections::BTreeSet<Target> {
    let lists = TargetLists {
        ping: ips.iter().map(|s| s.to_string()).collect(),
        ..TargetLists::default()
    };
    targets::build(&lists, []).targets
}

/// Runs an engine until every target finished `rounds` rounds; returns the
/// reports per target with the time each arrived.
async fn collect(
    s: Settings,
    targets: std::collections::BTreeSet<Target>,
    rounds: u64,
) -> BTreeMap<String, Vec<(Instant, Report)>> {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut engine = Engine::new(s, tx, 7, Some(rounds));
    engine.set_targets(&targets);
    let done = tokio::spawn(engine.join());
    let mut out: BTreeMap<String, Vec<(Instant, Report)>> = BTreeMap::new();
    while let Some(r) = rx.recv().await {
        out.entry(r.target.label())
            .or_default()
            .push((Instant::now(), r));
    }
    done.await.unwrap();
    out
}

#[test]
fn random_drop_of_thirty_percent_is_measured_as_thirty_percent_loss() {
    let case = Case::new(
        "faults",
        "pinger: 30% of echo requests dropped at random",
        1,
    );
    let ns = Netns::new();
    ns.nft(
        "table inet loss {\n chain inp {\n  type filter hook input priority 0;\n  icmp type echo-request numgen random mod 100 < 30 drop\n }\n}\n",
    );
    let reports =
        ns.block_on(|| collect(settings(1000, 300, 100), icmp_targets(&["127.0.0.1"]), 3));
    let rounds = &reports["127.0.0.1"];
    let sent: usize = rounds.iter().map(|(_, r)| r.stats.sent).sum();
    let received: usize = rounds.iter().map(|(_, r)| r.stats.received).sum();
    let loss = 1.0 - received as f64 / sent as f64;
    // 300 probes: the standard deviation of the loss is 2.6 points.
    let measured = rounds.len() == 3 && (0.20..=0.40).contains(&loss);
    case.done(u64::from(measured), 0);
    assert_eq!(rounds.len(), 3);
    assert!((0.20..=0.40).contains(&loss), "measured loss {loss}");
}

#[test]
fn replies_delayed_per_address_show_each_address_its_own_rtt_over_datagram_sockets() {
    let case = Case::new(
        "faults",
        "pinger: replies of 20 addresses delayed by 0 to 160 ms each",
        20,
    );
    let ns = Netns::new();
    ns.sysctl("net.ipv4.icmp_echo_ignore_all", "1");
    // Unprivileged ICMP (SOCK_DGRAM), where the kernel rewrites the identifier.
    ns.sysctl("net.ipv4.ping_group_range", "0 2147483647");
    // Delays 40 ms apart: an address given another's replies would be off
    // by 40 ms or more.
    let delay_of = |ip: Ipv4Addr| Duration::from_millis(u64::from(ip.octets()[3] % 5) * 40);
    let until = Instant::now() + Duration::from_secs(30);
    let responder = ns.spawn(move || icmp_responder::serve(until, delay_of));
    let ips: Vec<String> = (1..=20).map(|i| format!("127.0.0.{i}")).collect();
    let ip_refs: Vec<&str> = ips.iter().map(String::as_str).collect();
    let reports = ns.block_on({
        let targets = icmp_targets(&ip_refs);
        move || collect(settings(1000, 1000, 3), targets, 2)
    });
    // Each address's smallest RTT over its 6 probes minus its injected
    // delay: what the responder thread and the machine add. A loaded
    // machine only adds, and rarely to every probe, so the smallest RTT is
    // the one to compare; each is compared with the median over all
    // addresses, within half a step.
    let mut problems: Vec<(String, String)> = Vec::new();
    let mut offsets = Vec::new();
    for ip in &ips {
        let want = delay_of(ip.parse().unwrap());
        let mut fastest = Duration::MAX;
        for (_, r) in reports.get(ip).map_or(&[][..], Vec::as_slice) {
            let Some(min) = r.stats.min.filter(|_| r.stats.received == 3) else {
                problems.push((ip.clone(), format!("{}", r.stats)));
                continue;
            };
            if min + Duration::from_millis(2) < want {
                problems.push((
                    ip.clone(),
                    format!("RTT {min:?} is below the injected {want:?}"),
                ));
            }
            fastest = fastest.min(min);
        }
        if fastest == Duration::MAX {
            problems.push((ip.clone(), "no reply".into()));
        } else {
            offsets.push((ip.clone(), fastest, want, fastest.saturating_sub(want)));
        }
    }
    let mut sorted: Vec<Duration> = offsets.iter().map(|o| o.3).collect();
    sorted.sort();
    let median = sorted.get(sorted.len() / 2).copied().unwrap_or_default();
    for (ip, fastest, want, offset) in &offsets {
        if offset.abs_diff(median) >= Duration::from_millis(20) {
            problems.push((
                ip.clone(),
                format!("smallest RTT {fastest:?}, injected {want:?}, {offset:?} over it against {median:?} for the median address"),
            ));
        }
    }
    let wrong: std::collections::BTreeSet<&String> = problems.iter().map(|(ip, _)| ip).collect();
    case.done((ips.len() - wrong.len()) as u64, 0);
    assert!(problems.is_empty(), "{problems:#?}");
    drop(responder);
}

#[test]
fn a_black_holed_address_times_out_while_the_others_keep_their_rhythm() {
    let case = Case::new(
        "faults",
        "pinger: echo requests to one address dropped (nftables black hole)",
        1,
    );
    let ns = Netns::new();
    ns.nft(
        "table inet hole {\n chain inp {\n  type filter hook input priority 0;\n  ip daddr 127.0.0.66 icmp type echo-request drop\n }\n}\n",
    );
    let targets = icmp_targets(&["127.0.0.66", "127.0.0.1", "127.0.0.2"]);
    // The timeout is eight intervals: a black hole that delayed the others
    // would cut their rounds to a handful.
    let reports = ns.block_on(move || async move {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut engine = Engine::new(settings(250, 2000, 1), tx, 7, None);
        engine.set_targets(&targets);
        let mut counts: BTreeMap<String, Vec<Report>> = BTreeMap::new();
        // Run until the black hole's second round reports.
        while let Some(r) = rx.recv().await {
            let label = r.target.label();
            counts.entry(label.clone()).or_default().push(r);
            if label == "127.0.0.66" && counts[&label].len() == 2 {
                break;
            }
        }
        drop(engine);
        counts
    });
    let hole = &reports["127.0.0.66"];
    let mut problems = Vec::new();
    if !hole
        .iter()
        .all(|r| r.outcomes == [combo_pinger::round::Outcome::Timeout])
    {
        problems.push(format!("the black hole was answered: {hole:?}"));
    }
    for ip in ["127.0.0.1", "127.0.0.2"] {
        let rounds = reports.get(ip).map_or(&[][..], Vec::as_slice);
        if !rounds.iter().all(|r| r.stats.passed) {
            problems.push(format!("{ip}: a round failed"));
        }
        // Two black-hole rounds take at least 4 s; at 250 ms per round the
        // others ran about 16 rounds meanwhile.
        if rounds.len() < 12 {
            problems.push(format!("{ip}: only {} rounds", rounds.len()));
        }
    }
    case.done(u64::from(problems.is_empty()), 0);
    assert!(problems.is_empty(), "{problems:#?}");
}

/// The address each kind of route (or, for `drop`, an nftables rule in
/// the output hook) sends nowhere in the routes test, and the error the
/// kernel gives each send to it (EINVAL, EHOSTUNREACH, EACCES, EPERM),
/// which the round reports as its first failure.
const ROUTED_AWAY: [(&str, &str, &str); 5] = [
    (
        "blackhole",
        "10.77.0.1",
        "error: Invalid argument (os error 22): likely a blackhole route to it",
    ),
    (
        "unreachable",
        "10.77.0.2",
        "error: No route to host (os error 113)",
    ),
    (
        "prohibit",
        "10.77.0.3",
        "error: Permission denied (os error 13): likely a prohibit route to it",
    ),
    (
        "blackhole",
        "2001:db8::1",
        "error: Invalid argument (os error 22): likely a blackhole route to it",
    ),
    (
        "drop",
        "127.0.0.77",
        "error: Operation not permitted (os error 1): likely a firewall rule on this node dropping it",
    ),
];

#[test]
fn addresses_behind_blackhole_unreachable_and_prohibit_routes_fail_each_round_while_another_keeps_its_rhythm(
) {
    let case = Case::new(
        "faults",
        "pinger: addresses behind blackhole, unreachable and prohibit routes (IPv4), a blackhole route (IPv6) and an nftables drop on output",
        ROUTED_AWAY.len() as u64,
    );
    let ns = Netns::new();
    for (kind, addr, _) in ROUTED_AWAY {
        if kind == "drop" {
            ns.nft(&format!(
                "table inet out {{\n chain out {{\n  type filter hook output priority 0;\n  ip daddr {addr} drop\n }}\n}}\n"
            ));
            continue;
        }
        let family = if addr.contains(':') { "-6" } else { "-4" };
        ns.exec(&["ip", family, "route", "add", kind, addr]);
    }
    let mut ips: Vec<&str> = ROUTED_AWAY.iter().map(|(_, a, _)| *a).collect();
    ips.push("127.0.0.1");
    let targets = icmp_targets(&ips);
    // The kernel refuses each send at once, so every target has its
    // round every 250 ms; the timeout of eight intervals would show a
    // send error taken for a lost reply, or a sender stalled by it.
    let (reports, ended) = ns.block_on(move || async move {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut engine = Engine::new(settings(250, 2000, 2), tx, 7, None);
        engine.set_targets(&targets);
        let mut reports: BTreeMap<String, Vec<Report>> = BTreeMap::new();
        let mut ended = true;
        while let Some(r) = rx.recv().await {
            let label = r.target.label();
            reports.entry(label.clone()).or_default().push(r);
            // 16 rounds of the healthy target: 4 s.
            if label == "127.0.0.1" && reports[&label].len() == 16 {
                ended = false;
                break;
            }
        }
        drop(engine);
        (reports, ended)
    });
    let mut shared = Vec::new();
    if ended {
        shared.push("the engine stopped before 16 rounds of 127.0.0.1".to_string());
    }
    let near = reports.get("127.0.0.1").map_or(&[][..], Vec::as_slice);
    if !near.iter().all(|r| r.stats.passed && r.stats.received == 2) {
        shared.push(format!("127.0.0.1 lost probes: {near:?}"));
    }
    let mut problems = Vec::new();
    for (kind, addr, error) in ROUTED_AWAY {
        let rounds = reports.get(addr).map_or(&[][..], Vec::as_slice);
        let failed_at_once = rounds.iter().all(|r| {
            r.stats.loss_percent == 100.0
                && r.stats.first_failure.as_deref() == Some(error)
                && r.outcomes.len() == 2
                && r.outcomes
                    .iter()
                    .all(|o| matches!(o, combo_pinger::round::Outcome::Error(_)))
        });
        // Rounds in step with the healthy target's 16: a send error taken
        // for a lost reply would give two rounds (2 s timeout) in 4 s.
        if !failed_at_once || rounds.len() < 12 {
            problems.push(format!(
                "{kind} {addr}: {} rounds, outcomes {:?}",
                rounds.len(),
                rounds.iter().map(|r| &r.outcomes).collect::<Vec<_>>()
            ));
        }
    }
    let handled = if shared.is_empty() {
        ROUTED_AWAY.len() - problems.len()
    } else {
        0
    };
    case.done(handled as u64, 0);
    assert!(shared.is_empty(), "{shared:#?}");
    assert!(problems.is_empty(), "{problems:#?}");
}

/// Two namespaces joined by a veth pair: `a` (10.99.0.1) has its default
/// route via `b` (10.99.0.2), and `ip netns exec` gives `a` a resolv.conf
/// naming a DNS server that runs in `b`.
struct Routed {
    a: Netns,
    b: Netns,
    etc: std::path::PathBuf,
}

impl Routed {
    fn new() -> Self {
        let (a, b) = (Netns::new(), Netns::new());
        let (va, vb) = (format!("{}a", &a.name[..8]), format!("{}b", &b.name[..8]));
        netns::run(&[
            "ip", "link", "add", &va, "netns", &a.name, "type", "veth", "peer", "name", &vb,
            "netns", &b.name,
        ]);
        a.exec(&["ip", "addr", "add", "10.99.0.1/24", "dev", &va]);
        a.exec(&["ip", "link", "set", &va, "up"]);
        a.exec(&["ip", "route", "add", "default", "via", "10.99.0.2"]);
        b.exec(&["ip", "addr", "add", "10.99.0.2/24", "dev", &vb]);
        b.exec(&["ip", "link", "set", &vb, "up"]);
        let etc = std::path::PathBuf::from("/etc/netns").join(&a.name);
        std::fs::create_dir_all(&etc).unwrap();
        std::fs::write(etc.join("resolv.conf"), "nameserver 10.99.0.2\n").unwrap();
        Routed { a, b, etc }
    }
}

impl Drop for Routed {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.etc);
    }
}

#[test]
fn a_peer_whose_link_goes_down_fails_while_the_others_keep_their_rhythm_and_recovers() {
    let case = Case::new("faults", "pinger: a peer's link set down, then up", 1);
    let net = Routed::new();
    let far_link = format!("{}b", &net.b.name[..8]);
    let b = net.b.name.clone();
    let link = move |state: &str| {
        netns::run(&[
            "ip", "netns", "exec", &b, "ip", "link", "set", &far_link, state,
        ]);
    };
    let targets = icmp_targets(&["10.99.0.2", "127.0.0.1"]);
    let (during_down, near_rounds, recovered) = net.a.block_on(move || async move {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut engine = Engine::new(settings(200, 400, 1), tx, 7, None);
        engine.set_targets(&targets);
        // Per round of the peer: whether its probe was answered.
        let (mut far, mut near) = (Vec::new(), 0usize);
        let (mut down_at, mut recovered) = (None, false);
        while let Some(r) = rx.recv().await {
            let answered = matches!(r.outcomes[..], [combo_pinger::round::Outcome::Ok(_)]);
            match r.target.label().as_str() {
                "127.0.0.1" => near += 1,
                _ => far.push(answered),
            }
            // Three answered rounds, then the link goes down for five of
            // the peer's rounds, then up again until a round is answered.
            if down_at.is_none() && far.len() == 3 {
                link("down");
                down_at = Some((near, far.len()));
            }
            if let Some((_, at)) = down_at {
                if far.len() == at + 5 {
                    link("up");
                }
                if far.len() > at + 5 && far.last() == Some(&true) {
                    recovered = true;
                    break;
                }
                if far.len() > at + 60 {
                    break;
                }
            }
        }
        drop(engine);
        let (near_at, at) = down_at.expect("the link went down");
        // Rounds that started once the link was down (one may have been
        // in flight).
        let during: Vec<bool> = far[at + 1..at + 5].to_vec();
        (during, near - near_at, recovered)
    });
    let handled = during_down == [false; 4] && near_rounds >= 8 && recovered;
    case.done(u64::from(handled), 0);
    assert_eq!(
        during_down, [false; 4],
        "the peer is not answered while its link is down"
    );
    assert!(
        near_rounds >= 8,
        "the other target kept its rhythm: {near_rounds} rounds meanwhile"
    );
    assert!(recovered, "the peer is answered again once its link is up");
}

#[test]
fn the_gateway_of_the_real_default_route_and_the_resolv_conf_server_are_probed() {
    let net = Routed::new();
    net.b
        .spawn(|| {
            support::dns_server("10.99.0.2:53".parse().unwrap(), 100);
        })
        .join()
        .unwrap();
    net.a.sysctl("net.ipv4.ping_group_range", "0 2147483647");
    let out = std::process::Command::new("ip")
        .args([
            "netns",
            "exec",
            &net.a.name,
            env!("CARGO_BIN_EXE_combo-pinger"),
        ])
        .args(["--gateway", "--dns", "answer.test", "--dns", "missing.test"])
        .args(["--interval", "1", "--rounds", "2", "--count", "1"])
        .env_remove("PINGER_NAME")
        .output()
        .expect("combo-pinger runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let rounds: Vec<&str> = stdout.lines().filter(|l| l.contains(" round ")).collect();
    let of = |label: &str| -> Vec<&str> {
        rounds
            .iter()
            .copied()
            .filter(|l| l.contains(label))
            .collect()
    };
    let gateway = of("icmp 10.99.0.2");
    assert_eq!(gateway.len(), 2, "{stdout}");
    assert!(
        gateway.iter().all(|l| l.contains(": ok 1/1 received")),
        "{stdout}"
    );
    let answer = of("dns answer.test");
    assert_eq!(answer.len(), 2, "{stdout}");
    assert!(answer.iter().all(|l| l.contains(": ok")), "{stdout}");
    let missing = of("dns missing.test");
    assert_eq!(missing.len(), 2, "{stdout}");
    assert!(missing.iter().all(|l| l.contains("NXDOMAIN")), "{stdout}");
    assert_eq!(out.status.code(), Some(1), "one target failed: {stdout}");
}

#[test]
fn raw_sockets_behind_their_icmp_filters_still_get_every_reply() {
    // A new namespace keeps net.ipv4.ping_group_range closed ("1 0"), so
    // both families fall back to raw sockets, which carry ICMP_FILTER /
    // ICMP6_FILTER letting only replies and errors through.
    let ns = Netns::new();
    let reports = ns.block_on(|| {
        collect(
            settings(300, 300, 5),
            icmp_targets(&["127.0.0.1", "::1"]),
            2,
        )
    });
    for target in ["127.0.0.1", "::1"] {
        let rounds = &reports[target];
        assert_eq!(rounds.len(), 2, "{target}");
        for (_, r) in rounds {
            assert_eq!((r.stats.sent, r.stats.received), (5, 5), "{target}");
        }
    }
}
