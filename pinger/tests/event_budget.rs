//! The Event budget under real loss: 1 % random drop made with nftables in a
//! network namespace, and a dead address, probed by the real engine with the
//! Pinger's default count and loss limit. Rounds run every 150 ms; the Event
//! gate is fed each round at the time it would have had at the default 5 s
//! interval, so 120 rounds stand for 10 minutes.

#[path = "support/netns.rs"]
#[allow(dead_code, reason = "this test uses part of the helper")]
mod netns;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use combo_api::PingerSpec;
use combo_pinger::engine::{Engine, Settings};
use combo_pinger::events::{Decision, Gate, Policy};
use combo_pinger::probe::{dns::Dns, Probers};
use combo_pinger::round::Report;
use combo_pinger::round::{evaluate, Thresholds};
use combo_pinger::targets::{self, TargetLists};
use netns::Netns;
use tokio::sync::mpsc;

const ROUNDS: u64 = 120;
const DEAD: &str = "127.0.0.250";

/// Reports of every target, in round order.
fn probe_lossy_and_dead_targets() -> Vec<Report> {
    let ns = Netns::new();
    ns.nft(&format!(
        "table inet loss {{\n chain inp {{\n  type filter hook input priority 0;\n  ip daddr {DEAD} icmp type echo-request drop\n  icmp type echo-request numgen random mod 100 < 1 drop\n }}\n}}\n"
    ));
    let spec = PingerSpec::default();
    let mut ping: Vec<String> = (1..=20).map(|i| format!("127.0.0.{i}")).collect();
    ping.push(DEAD.into());
    let set = targets::build(
        &TargetLists {
            ping,
            ..TargetLists::default()
        },
        [],
    )
    .targets;
    let settings = Settings {
        interval: Duration::from_millis(150),
        timeout: Duration::from_millis(100),
        count: spec.count,
        limits: Thresholds {
            max_loss_percent: spec.max_loss_percent,
            max_latency_ms: spec.max_latency_ms,
        },
        probers: Probers {
            dns: Arc::new(Dns::new(
                &["127.0.0.1:53".parse().unwrap()],
                Duration::from_secs(1),
            )),
        },
    };
    let mut reports = ns.block_on(move || async move {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut engine = Engine::new(settings, tx, 7, Some(ROUNDS));
        engine.set_targets(&set);
        let done = tokio::spawn(engine.join());
        let mut out = Vec::new();
        while let Some(r) = rx.recv().await {
            out.push(r);
        }
        done.await.unwrap();
        out
    });
    reports.sort_by(|a, b| (a.round, &a.target).cmp(&(b.round, &b.target)));
    reports
}

/// Feeds the reports through a gate, each round at `round × 5 s`; returns
/// the decisions per target label.
fn gate(
    reports: &[Report],
    policy: Policy,
    passed: impl Fn(&Report) -> bool,
) -> BTreeMap<String, Vec<Decision>> {
    let mut g = Gate::new(policy);
    let t0 = Instant::now();
    let mut out: BTreeMap<String, Vec<Decision>> = BTreeMap::new();
    for r in reports {
        let at = t0 + Duration::from_secs(5 * r.round);
        if let Some(d) = g.observe(&r.target, passed(r), at) {
            out.entry(r.target.label()).or_default().push(d);
        }
    }
    out
}

#[test]
fn one_percent_loss_under_the_defaults_gives_almost_no_events_and_a_dead_peer_one_series() {
    let reports = probe_lossy_and_dead_targets();
    let lossy: Vec<&Report> = reports
        .iter()
        .filter(|r| r.target.label() != DEAD)
        .collect();
    assert_eq!(lossy.len() as u64, 20 * ROUNDS);
    let sent: usize = lossy.iter().map(|r| r.stats.sent).sum();
    let lost: usize = lossy.iter().map(|r| r.stats.sent - r.stats.received).sum();
    // 7,200 probes at 1 %: 72 expected, standard deviation 8.5.
    assert!((30..=130).contains(&lost), "{lost} of {sent} probes lost");

    let now = gate(&reports, Policy::default(), |r| r.stats.passed);
    let dead = now.get(DEAD).cloned().unwrap_or_default();
    // Ten simulated minutes of a dead peer: its Warning, and one repeat into
    // the same series five minutes later.
    assert_eq!(dead, [Decision::Failed, Decision::StillFailing]);
    let lossy_events: usize = now
        .iter()
        .filter(|(t, _)| *t != DEAD)
        .map(|(_, d)| d.len())
        .sum();

    // The same probes judged as before: any loss fails a round, every
    // failed round is reported, a larger and faster bucket.
    let strict = Thresholds {
        max_loss_percent: 0,
        max_latency_ms: 0,
    };
    let before = gate(
        &reports,
        Policy {
            confirm: 1,
            min_gap: Duration::from_secs(10),
            repeat_every: Duration::from_secs(60),
            burst: 20,
            refill: Duration::from_secs(3),
        },
        |r| evaluate(&r.outcomes, strict).passed,
    );
    let before_events: usize = before
        .iter()
        .filter(|(t, _)| *t != DEAD)
        .map(|(_, d)| d.len())
        .sum();
    eprintln!(
        "{lost} of {sent} probes lost; Events of 20 lossy targets in 10 simulated minutes: {lossy_events} with the defaults, {before_events} with maxLossPercent 0 and no confirmation"
    );
    assert!(lossy_events <= 2, "{now:?}");
    assert!(before_events >= 10, "{before:?}");
}
