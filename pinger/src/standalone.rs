//! Standalone mode: probe the targets given on the command line, print one
//! line per target per round and a summary.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use combo_api::pinger::parse_dns_server;

use crate::cli::Args;
use crate::engine::{Engine, Settings, Sink};
use crate::metrics::{self, Metrics};
use crate::probe::{dns::Dns, Probers};
use crate::round::Report;
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
    RoundLine(r).to_string()
}

/// Displays [`round_line`], written straight into the output buffer.
struct RoundLine<'a>(&'a Report);

impl fmt::Display for RoundLine<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = self.0;
        let kind = r.target.kind;
        match r.stats.failure(r.limits) {
            None => write!(f, "round {} {kind} {}: ok {}", r.round, r.label, r.stats),
            Some(why) => write!(
                f,
                "round {} {kind} {}: FAIL {} ({why})",
                r.round, r.label, r.stats
            ),
        }
    }
}

/// What standalone mode keeps of the rounds: the output, buffered, and
/// each target's totals, by its place in the engine (no lookup of the
/// target per round). The engine writes into it from its task as each
/// round finishes; [`run`] flushes it and prints the summary.
struct Output {
    stdout: std::io::BufWriter<std::io::Stdout>,
    totals: Vec<Option<(Target, Totals)>>,
    clock: Stamps,
    /// The line being written, its room kept.
    line: Vec<u8>,
}

impl Output {
    /// Every target's totals, ordered for the summary; `all` are the
    /// targets, those without a round among them.
    fn totals(&mut self, all: &BTreeSet<Target>) -> BTreeMap<Target, Totals> {
        let mut out: BTreeMap<Target, Totals> =
            all.iter().map(|t| (t.clone(), Totals::default())).collect();
        out.extend(self.totals.drain(..).flatten());
        out
    }
}

/// Appends `n` in decimal, with at least `digits` digits.
fn push_number(out: &mut Vec<u8>, mut n: u64, digits: usize) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 && buf.len() - i >= digits {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

/// Appends a duration as [`Millis`] displays it: `0.052`.
fn push_millis(out: &mut Vec<u8>, d: Duration) {
    let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
    push_number(out, us / 1000, 1);
    out.push(b'.');
    push_number(out, us % 1000, 3);
}

/// Appends a round's output line: `Stamp`, a space, `RoundLine` and a
/// newline. A passed round, nearly every one, is written here digit by
/// digit: through `fmt`'s machinery its line was a third of the cost of
/// printing it (docs/benchmarks.md, "The engine as one scheduler"). A
/// failed one goes through [`RoundLine`].
fn push_line(out: &mut Vec<u8>, at: &Stamp, r: &Report) {
    let st = &r.stats;
    if !st.passed {
        let _ = writeln!(out, "{at} {}", RoundLine(r));
        return;
    }
    out.extend_from_slice(at.prefix.as_bytes());
    out.push(b'.');
    push_number(out, u64::from(at.micros), 6);
    out.extend_from_slice(b"Z round ");
    push_number(out, r.round, 1);
    out.push(b' ');
    out.extend_from_slice(r.target.kind.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(r.label.as_bytes());
    out.extend_from_slice(b": ok ");
    push_number(out, st.received as u64, 1);
    out.push(b'/');
    push_number(out, st.sent as u64, 1);
    out.extend_from_slice(b" received, loss ");
    push_number(out, st.loss_percent.round() as u64, 1);
    out.extend_from_slice(b"%, rtt min/avg/max ");
    match (st.min, st.avg, st.max) {
        (Some(a), Some(b), Some(c)) => {
            push_millis(out, a);
            out.push(b'/');
            push_millis(out, b);
            out.push(b'/');
            push_millis(out, c);
            out.extend_from_slice(b" ms\n");
        }
        _ => out.extend_from_slice(b"-\n"),
    }
}

/// The engine's sink in standalone mode.
struct Lines(Arc<Mutex<Output>>);

impl Sink for Lines {
    fn round(&mut self, id: usize, r: &Report) -> bool {
        let mut out = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let out = &mut *out;
        let at = out.clock.format(r.started);
        out.line.clear();
        push_line(&mut out.line, &at, r);
        let _ = out.stdout.write_all(&out.line);
        if out.totals.len() <= id {
            out.totals.resize_with(id + 1, || None);
        }
        out.totals[id]
            .get_or_insert_with(|| (r.target.clone(), Totals::default()))
            .1
            .add(r);
        true
    }
}

/// Formats times as RFC 3339 in UTC with microseconds
/// (`2026-01-02T03:04:05.123456Z`, as chrono's `to_rfc3339_opts` with
/// `SecondsFormat::Micros` does); the date and time of day are made once
/// per second, as a thousand lines a second share them.
#[derive(Default)]
struct Stamps {
    second: Option<u64>,
    prefix: String,
}

impl Stamps {
    fn format(&mut self, t: std::time::SystemTime) -> Stamp<'_> {
        let since = t
            .duration_since(std::time::SystemTime::UNIX_EPOCH)
            .unwrap_or_default();
        if self.second != Some(since.as_secs()) {
            let whole = t - Duration::from_nanos(u64::from(since.subsec_nanos()));
            let at = chrono::DateTime::<chrono::Utc>::from(whole);
            self.prefix = at.format("%Y-%m-%dT%H:%M:%S").to_string();
            self.second = Some(since.as_secs());
        }
        Stamp {
            prefix: &self.prefix,
            micros: since.subsec_micros(),
        }
    }
}

/// One time formatted by [`Stamps`].
struct Stamp<'a> {
    prefix: &'a str,
    micros: u32,
}

impl fmt::Display for Stamp<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:06}Z", self.prefix, self.micros)
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
    // Lines are flushed at least every 100 ms rather than one write each:
    // with a thousand targets that is most of the process's system calls.
    let output = Arc::new(Mutex::new(Output {
        stdout: std::io::BufWriter::with_capacity(64 * 1024, std::io::stdout()),
        totals: Vec::new(),
        clock: Stamps::default(),
        line: Vec::new(),
    }));
    let rounds = (args.rounds > 0).then_some(args.rounds);
    let sink = Lines(output.clone());
    let mut engine =
        Engine::new(settings, sink, u64::from(std::process::id()), rounds).with_metrics(metrics);
    engine.set_targets(&set.targets);
    follow_rounds(engine.join(), &output).await;
    let mut out = output.lock().unwrap_or_else(|p| p.into_inner());
    let totals = out.totals(&set.targets);
    let (lines, all_passed) = summary(&totals);
    for l in lines {
        let _ = writeln!(out.stdout, "{l}");
    }
    let _ = out.stdout.flush();
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
            dns: Arc::new(Dns::new(dns_servers, timeout)),
        },
    }
}

/// Flushes the rounds' lines every 100 ms until the engine finished its
/// rounds (`done`) or SIGINT/SIGTERM comes.
async fn follow_rounds(done: impl std::future::Future<Output = ()>, output: &Mutex<Output>) {
    tokio::pin!(done);
    let stop = combo_api::signal::shutdown();
    tokio::pin!(stop);
    let mut flush = tokio::time::interval(Duration::from_millis(100));
    flush.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = flush.tick() => {
                let _ = output.lock().unwrap_or_else(|p| p.into_inner()).stdout.flush();
            }
            () = &mut done => break,
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
    fn lines_written_digit_by_digit_read_as_the_formatted_ones() {
        let mut clock = Stamps::default();
        let t = std::time::SystemTime::UNIX_EPOCH + Duration::from_nanos(1_795_000_000_000_042_000);
        let us = Duration::from_micros;
        let lenient = Thresholds {
            max_loss_percent: 70,
            max_latency_ms: 0,
        };
        let rounds = [
            report(1, vec![Outcome::Ok(us(1500))]),
            report(
                12_345,
                vec![Outcome::Ok(us(7)), Outcome::Ok(us(1_234_567_890))],
            ),
            report(3, vec![Outcome::Refused]),
            Report {
                stats: evaluate(
                    &[Outcome::Ok(us(40)), Outcome::Timeout, Outcome::Timeout],
                    lenient,
                ),
                limits: lenient,
                ..report(
                    4,
                    vec![Outcome::Ok(us(40)), Outcome::Timeout, Outcome::Timeout],
                )
            },
            Report {
                stats: evaluate(
                    &[Outcome::Timeout, Outcome::Timeout],
                    Thresholds {
                        max_loss_percent: 100,
                        max_latency_ms: 0,
                    },
                ),
                ..report(5, vec![Outcome::Timeout; 2])
            },
        ];
        for r in &rounds {
            let at = clock.format(t);
            let formatted = format!("{at} {}\n", RoundLine(r));
            let mut line = Vec::new();
            push_line(&mut line, &at, r);
            assert_eq!(String::from_utf8(line).unwrap(), formatted);
        }
    }

    #[test]
    fn times_are_printed_as_chrono_prints_rfc3339_with_microseconds() {
        let mut clock = Stamps::default();
        let base = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000);
        for t in [
            base + Duration::from_nanos(123_456_789),
            base + Duration::from_micros(999_999),
            base + Duration::from_secs(1),
            base + Duration::from_secs(86_400 * 400 + 59) + Duration::from_micros(7),
            base + Duration::from_nanos(5),
        ] {
            let chrono = chrono::DateTime::<chrono::Utc>::from(t)
                .to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
            assert_eq!(clock.format(t).to_string(), chrono);
        }
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
