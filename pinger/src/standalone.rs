//! Standalone mode: probe the targets given on the command line, print one
//! line per target per round and a summary.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use combo_api::hash::FnvBuild;
use combo_api::pinger::parse_dns_server;
use tokio::sync::mpsc;

use crate::cli::Args;
use crate::engine::{Engine, Report, Settings};
use crate::metrics::{self, Metrics};
use crate::probe::{dns::Dns, icmp::Icmp, Probers};
use crate::round::{Millis, Thresholds};
use crate::targets::{self, Target};
use crate::{gateway, ExitCode};

/// Per-target totals for the summary.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Totals {
    /// Rounds run.
    pub rounds: u64,
    /// Rounds that failed.
    pub failed_rounds: u64,
    /// Probes sent.
    pub sent: u64,
    /// Probes answered.
    pub received: u64,
    /// Sum, min and max RTT of the answered probes.
    pub rtt_sum: Duration,
    /// Smallest RTT.
    pub rtt_min: Option<Duration>,
    /// Largest RTT.
    pub rtt_max: Option<Duration>,
}

impl Totals {
    /// Adds a round.
    pub fn add(&mut self, r: &Report) {
        self.rounds += 1;
        self.failed_rounds += u64::from(!r.stats.passed);
        self.sent += r.stats.sent as u64;
        self.received += r.stats.received as u64;
        for rtt in r.outcomes.iter().filter_map(|o| o.rtt()) {
            self.rtt_sum += rtt;
            self.rtt_min = Some(self.rtt_min.map_or(rtt, |m| m.min(rtt)));
            self.rtt_max = Some(self.rtt_max.map_or(rtt, |m| m.max(rtt)));
        }
    }
}

/// One output line for a round (printed after the round's start time).
pub fn round_line(r: &Report) -> String {
    match r.stats.failure(r.limits) {
        None => format!("round {} {}: ok {}", r.round, r.target, r.stats),
        Some(why) => format!("round {} {}: FAIL {} ({why})", r.round, r.target, r.stats),
    }
}

/// The summary lines, and whether every round passed.
pub fn summary(totals: &BTreeMap<Target, Totals>) -> (Vec<String>, bool) {
    let mut lines = vec!["--- summary ---".to_string()];
    let mut failed_targets = 0;
    for (t, s) in totals {
        failed_targets += usize::from(s.failed_rounds > 0 || s.rounds == 0);
        let rtt = match (s.rtt_min, s.rtt_max) {
            (Some(min), Some(max)) => format!(
                ", rtt min/avg/max {}/{}/{} ms",
                Millis(min),
                Millis(s.rtt_sum / s.received.max(1) as u32),
                Millis(max)
            ),
            _ => String::new(),
        };
        lines.push(format!(
            "{t}: {}/{} rounds passed, {}/{} probes answered{rtt}",
            s.rounds - s.failed_rounds,
            s.rounds,
            s.received,
            s.sent
        ));
    }
    let all_passed = failed_targets == 0;
    lines.push(if all_passed {
        format!("all {} targets passed every round", totals.len())
    } else {
        format!("{failed_targets} of {} targets failed", totals.len())
    });
    (lines, all_passed)
}

/// Runs standalone; returns the process exit code.
pub async fn run(args: Args) -> ExitCode {
    let dns_servers = match dns_servers(&args) {
        Ok(servers) => servers,
        Err(code) => return code,
    };
    let gateways = if args.gateway {
        gateway::default_gateways()
    } else {
        Vec::new()
    };
    let set = targets::build(&args.target_lists(), gateways);
    if let Some(bad) = set.invalid.first() {
        return usage(bad);
    }
    if set.targets.is_empty() {
        return usage("no target (no default gateway found)");
    }
    let settings = settings(&args, &dns_servers);
    let metrics = Arc::new(Metrics::default());
    let _server = match args.metrics_addr {
        Some(addr) => match metrics::serve(addr, metrics.clone()).await {
            Ok(h) => Some(h),
            Err(e) => {
                eprintln!("{}", combo_api::cli::error_line("combo-pinger", &e));
                return ExitCode::Usage;
            }
        },
        None => None,
    };
    let (tx, rx) = mpsc::unbounded_channel();
    let rounds = (args.rounds > 0).then_some(args.rounds);
    let mut engine = Engine::new(settings, tx, u64::from(std::process::id()), rounds);
    engine.set_targets(&set.targets);
    // Hashed while rounds come in (a round's lookup is one hash of its
    // target, not a search comparing targets down an ordered map), ordered
    // for the summary.
    let mut totals: HashMap<Target, Totals, FnvBuild> = set
        .targets
        .iter()
        .map(|t| (t.clone(), Totals::default()))
        .collect();
    // Lines are flushed at least every 100 ms rather than one write each:
    // with a thousand targets that is most of the process's system calls.
    let mut stdout = std::io::BufWriter::with_capacity(64 * 1024, std::io::stdout());
    follow_rounds(rx, engine.join(), &metrics, &mut totals, &mut stdout).await;
    let (lines, all_passed) = summary(&totals.into_iter().collect());
    for l in lines {
        let _ = writeln!(stdout, "{l}");
    }
    let _ = stdout.flush();
    if all_passed {
        ExitCode::Passed
    } else {
        ExitCode::Failed
    }
}

/// The `--dns-server` addresses, or the usage error of the first that does
/// not parse.
fn dns_servers(args: &Args) -> Result<Vec<SocketAddr>, ExitCode> {
    args.dns_server
        .iter()
        .map(|s| parse_dns_server(s).map_err(|e| usage(&format!("--dns-server: {e}"))))
        .collect()
}

/// The engine's settings from the flags.
fn settings(args: &Args, dns_servers: &[SocketAddr]) -> Settings {
    let timeout = Duration::from_millis(u64::from(args.timeout_ms));
    Settings {
        interval: Duration::from_secs(u64::from(args.interval)),
        timeout,
        count: args.count,
        limits: Thresholds {
            max_loss_percent: args.max_loss_percent,
            max_latency_ms: args.max_latency_ms,
        },
        probers: Probers {
            icmp: Arc::new(Icmp::default()),
            dns: Arc::new(Dns::new(dns_servers, timeout)),
        },
    }
}

/// Prints a line for each round reported on `rx`, and counts it in
/// `metrics` and `totals`, until no sender is left or SIGINT/SIGTERM
/// comes; `done` is the engine finishing its rounds.
async fn follow_rounds(
    mut rx: mpsc::UnboundedReceiver<Report>,
    done: impl std::future::Future<Output = ()>,
    metrics: &Metrics,
    totals: &mut HashMap<Target, Totals, FnvBuild>,
    stdout: &mut impl Write,
) {
    tokio::pin!(done);
    let mut finished = false;
    let stop = combo_api::signal::shutdown();
    tokio::pin!(stop);
    let mut flush = tokio::time::interval(Duration::from_millis(100));
    flush.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            report = rx.recv() => match report {
                Some(r) => {
                    metrics.record(&r);
                    let at = chrono::DateTime::<chrono::Utc>::from(r.started);
                    let _ = writeln!(stdout, "{} {}", at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true), round_line(&r));
                    match totals.get_mut(&r.target) {
                        Some(t) => t.add(&r),
                        None => totals.entry(r.target.clone()).or_default().add(&r),
                    }
                }
                None => break,
            },
            _ = flush.tick() => {
                let _ = stdout.flush();
            }
            () = &mut done, if !finished => finished = true,
            _ = &mut stop => break,
        }
    }
}

fn usage(msg: &str) -> ExitCode {
    eprintln!("combo-pinger: {msg}");
    ExitCode::Usage
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::round::{evaluate, Outcome};
    use crate::targets::Kind;
    use combo_api::pinger::Host;

    fn report(round: u64, outcomes: Vec<Outcome>) -> Report {
        let limits = Thresholds::default();
        let target = Target {
            kind: Kind::Udp,
            host: Host::Ip("127.0.0.1".parse().unwrap()),
            port: Some(53),
        };
        Report {
            label: std::sync::Arc::new(target.label()),
            target,
            round,
            started: std::time::SystemTime::UNIX_EPOCH,
            stats: evaluate(&outcomes, limits),
            outcomes,
            limits,
        }
    }

    #[test]
    fn round_lines_say_ok_or_fail_with_the_reason() {
        let ok = report(1, vec![Outcome::Ok(Duration::from_micros(1500))]);
        assert_eq!(
            round_line(&ok),
            "round 1 udp 127.0.0.1:53: ok 1/1 received, loss 0%, rtt min/avg/max 1.500/1.500/1.500 ms"
        );
        let bad = report(2, vec![Outcome::Refused]);
        assert_eq!(
            round_line(&bad),
            "round 2 udp 127.0.0.1:53: FAIL 0/1 received, loss 100%, rtt min/avg/max - (loss 100% > 0%, refused)"
        );
    }

    #[test]
    fn the_summary_fails_when_any_round_of_any_target_failed() {
        let ok = report(1, vec![Outcome::Ok(Duration::from_millis(1))]);
        let bad = report(2, vec![Outcome::Timeout]);
        let mut totals = BTreeMap::new();
        totals
            .entry(ok.target.clone())
            .or_insert_with(Totals::default)
            .add(&ok);
        let (lines, passed) = summary(&totals);
        assert!(passed);
        assert_eq!(lines.last().unwrap(), "all 1 targets passed every round");
        totals.get_mut(&bad.target).unwrap().add(&bad);
        let (lines, passed) = summary(&totals);
        assert!(!passed);
        assert_eq!(
            lines[1],
            "udp 127.0.0.1:53: 1/2 rounds passed, 1/2 probes answered, rtt min/avg/max 1.000/1.000/1.000 ms"
        );
        assert_eq!(lines.last().unwrap(), "1 of 1 targets failed");
    }
}
