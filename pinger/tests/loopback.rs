//! Every probe against real sockets on loopback.

#[path = "support/engine.rs"]
mod engine;
mod support;

use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::sync::Arc;
use std::time::Duration;

use combo_pinger::engine::Engine;
use combo_pinger::probe::{dns::Dns, tcp, udp, Probers};
use combo_pinger::round::Outcome;
use combo_pinger::round::Report;
use combo_pinger::targets::{self, TargetLists};
use tokio::sync::mpsc;

const TIMEOUT: Duration = Duration::from_millis(500);

fn free_udp_port() -> SocketAddr {
    // Bound and dropped: nobody listens there afterwards.
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

/// Rounds of `count` ICMP probes to each of `ips`, `rounds` each, through
/// the engine; the reports in the order they came.
async fn icmp_rounds(ips: Vec<String>, count: u32, rounds: u64) -> Vec<Report> {
    let set = targets::build(
        &TargetLists {
            ping: ips,
            ..TargetLists::default()
        },
        [],
    )
    .targets;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut engine = Engine::new(engine::settings(100, 2000, count), tx, 7, Some(rounds));
    engine.set_targets(&set);
    let done = tokio::spawn(engine.join());
    let mut out = Vec::new();
    while let Some(r) = rx.recv().await {
        out.push(r);
    }
    done.await.unwrap();
    out
}

#[tokio::test]
async fn icmp_echo_to_ipv4_and_ipv6_loopback_is_answered() {
    let reports = icmp_rounds(vec!["127.0.0.1".into(), "::1".into()], 1, 2).await;
    assert_eq!(reports.len(), 4);
    for r in reports {
        assert!(
            matches!(r.outcomes[..], [Outcome::Ok(_)]),
            "{}: {:?}",
            r.target,
            r.outcomes
        );
    }
}

#[tokio::test]
async fn concurrent_icmp_probes_to_many_addresses_each_get_their_own_reply() {
    let ips = (1..=50u8).map(|i| format!("127.0.1.{i}")).collect();
    let reports = icmp_rounds(ips, 3, 2).await;
    assert_eq!(reports.len(), 100);
    for r in reports {
        assert_eq!(r.outcomes.len(), 3);
        for o in &r.outcomes {
            let rtt = o.rtt().unwrap_or_else(|| panic!("{}: {o}", r.target));
            assert!(rtt < Duration::from_secs(2), "{}: {rtt:?}", r.target);
        }
    }
}

#[tokio::test]
async fn tcp_connect_succeeds_on_an_open_port_and_is_refused_on_a_closed_one() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let open = listener.local_addr().unwrap();
    assert!(matches!(tcp::probe(open, TIMEOUT).await, Outcome::Ok(_)));
    drop(listener);
    assert_eq!(tcp::probe(open, TIMEOUT).await, Outcome::Refused);
}

#[tokio::test]
async fn udp_reply_is_success_port_unreachable_is_refused_and_silence_is_timeout() {
    let echo = support::udp_echo("127.0.0.1:0".parse().unwrap(), Duration::ZERO, 10);
    assert!(matches!(udp::probe(echo, TIMEOUT).await, Outcome::Ok(_)));
    assert_eq!(udp::probe(free_udp_port(), TIMEOUT).await, Outcome::Refused);
    let silent = UdpSocket::bind("127.0.0.1:0").unwrap();
    let outcome = udp::probe(silent.local_addr().unwrap(), Duration::from_millis(200)).await;
    assert_eq!(outcome, Outcome::Timeout);
}

#[tokio::test]
async fn dns_lookups_tell_an_answer_from_nxdomain_and_from_no_answer() {
    let server = support::dns_server("127.0.0.1:0".parse().unwrap(), 50);
    let dns = Dns::new(&[server], TIMEOUT);
    let ok = dns.lookup("answer.test.", TIMEOUT).await;
    assert!(matches!(ok, Outcome::Ok(_)), "{ok}");
    assert_eq!(
        dns.lookup("missing.test.", TIMEOUT).await,
        Outcome::Error("NXDOMAIN".into())
    );
    assert_eq!(dns.lookup("silent.test.", TIMEOUT).await, Outcome::Timeout);
}

#[tokio::test]
async fn a_dns_server_that_is_not_there_is_refused_or_times_out() {
    let dns = Dns::new(&[free_udp_port()], TIMEOUT);
    let outcome = dns.lookup("answer.test.", TIMEOUT).await;
    assert!(
        matches!(
            outcome,
            Outcome::Refused | Outcome::Timeout | Outcome::Error(_)
        ),
        "{outcome}"
    );
    assert!(outcome.rtt().is_none());
}

#[tokio::test]
async fn probers_dispatch_by_target_kind() {
    let probers = Probers {
        dns: Arc::new(Dns::new(&[], TIMEOUT)),
    };
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let t = combo_pinger::targets::build(
        &combo_pinger::targets::TargetLists {
            tcp: vec![listener.local_addr().unwrap().to_string()],
            ..Default::default()
        },
        [],
    );
    let target = t.targets.iter().next().unwrap();
    let to = combo_pinger::probe::resolve(target, TIMEOUT).await.unwrap();
    assert!(matches!(
        probers.probe(target.kind, &to, TIMEOUT).await,
        Outcome::Ok(_)
    ));
}

#[tokio::test]
async fn a_late_udp_responder_shows_its_delay_and_fails_a_latency_limit() {
    use combo_pinger::round::{evaluate, Thresholds};
    let delay = Duration::from_millis(60);
    let echo = support::udp_echo("127.0.0.1:0".parse().unwrap(), delay, 10);
    let mut outcomes = Vec::new();
    for _ in 0..3 {
        outcomes.push(udp::probe(echo, Duration::from_secs(2)).await);
    }
    let limits = Thresholds {
        max_loss_percent: 0,
        max_latency_ms: 30,
    };
    let stats = evaluate(&outcomes, limits);
    let avg = stats.avg.expect("answered");
    // Never below the delay; above it by what a loaded machine adds in
    // scheduling the responder thread.
    assert!(
        avg >= delay && avg < delay + Duration::from_millis(500),
        "{avg:?}"
    );
    assert!(!stats.passed);
    let failure = stats.failure(limits).unwrap();
    assert!(
        failure.starts_with("avg rtt ") && failure.contains("30"),
        "{failure}"
    );
}

#[tokio::test]
async fn tcp_and_udp_probes_work_over_ipv6_loopback() {
    let listener = TcpListener::bind("[::1]:0").unwrap();
    let open = listener.local_addr().unwrap();
    assert!(matches!(tcp::probe(open, TIMEOUT).await, Outcome::Ok(_)));
    let echo = support::udp_echo("[::1]:0".parse().unwrap(), Duration::ZERO, 10);
    assert!(matches!(udp::probe(echo, TIMEOUT).await, Outcome::Ok(_)));
    let closed = UdpSocket::bind("[::1]:0").unwrap().local_addr().unwrap();
    assert_eq!(udp::probe(closed, TIMEOUT).await, Outcome::Refused);
}
