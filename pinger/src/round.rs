//! One round of probes against one target: loss, RTT and the verdict against
//! the thresholds. Pure.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::targets::Target;

/// The result of one round of one target.
#[derive(Clone, Debug)]
pub struct Report {
    /// The target.
    pub target: Target,
    /// The target's label (`Target::label`), made once per target, shared
    /// by all its reports.
    pub label: Arc<String>,
    /// Round number, from 1.
    pub round: u64,
    /// When the round started (wall clock, for display).
    pub started: SystemTime,
    /// Each probe's outcome, in order.
    pub outcomes: Vec<Outcome>,
    /// Summary and verdict.
    pub stats: RoundStats,
    /// The limits the round was judged by.
    pub limits: Thresholds,
}

/// Result of a single probe.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A reply (or an accepted connection) after this round-trip time.
    Ok(Duration),
    /// No answer within the timeout.
    Timeout,
    /// Actively refused: TCP RST, ICMP port unreachable.
    Refused,
    /// Any other failure, with a short message (e.g. `NXDOMAIN`).
    Error(String),
}

impl Outcome {
    /// The `result` label of `combo_pinger_probes_total`.
    pub fn label(&self) -> &'static str {
        match self {
            Outcome::Ok(_) => "ok",
            Outcome::Timeout => "timeout",
            Outcome::Refused => "refused",
            Outcome::Error(_) => "error",
        }
    }

    /// The place of [`Outcome::label`] in `ok`, `timeout`, `refused`,
    /// `error`.
    pub fn index(&self) -> usize {
        match self {
            Outcome::Ok(_) => 0,
            Outcome::Timeout => 1,
            Outcome::Refused => 2,
            Outcome::Error(_) => 3,
        }
    }

    /// The round-trip time of a successful probe.
    pub fn rtt(&self) -> Option<Duration> {
        match self {
            Outcome::Ok(d) => Some(*d),
            _ => None,
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Ok(d) => write!(f, "ok {}", ms(*d)),
            Outcome::Timeout => f.write_str("timeout"),
            Outcome::Refused => f.write_str("refused"),
            Outcome::Error(m) => write!(f, "error: {m}"),
        }
    }
}

/// Pass/fail limits of a round.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Thresholds {
    /// A round with more loss than this (percent) fails.
    pub max_loss_percent: u32,
    /// A round whose average RTT is above this fails; 0 means no limit.
    pub max_latency_ms: u32,
}

/// Summary of one round.
#[derive(Clone, Debug, PartialEq)]
pub struct RoundStats {
    /// Probes sent.
    pub sent: usize,
    /// Probes answered.
    pub received: usize,
    /// Lost share in percent, 0..=100.
    pub loss_percent: f64,
    /// Smallest RTT of the answered probes.
    pub min: Option<Duration>,
    /// Mean RTT of the answered probes.
    pub avg: Option<Duration>,
    /// Largest RTT of the answered probes.
    pub max: Option<Duration>,
    /// The first failure, when some probe failed: `timeout`, `refused`, `error: NXDOMAIN`.
    pub first_failure: Option<String>,
    /// Whether the round passed the thresholds.
    pub passed: bool,
}

/// Summarises the outcomes of one round and judges them.
pub fn evaluate(outcomes: &[Outcome], limits: Thresholds) -> RoundStats {
    let (mut received, mut sum) = (0usize, Duration::ZERO);
    let (mut min, mut max) = (None::<Duration>, None::<Duration>);
    for rtt in outcomes.iter().filter_map(Outcome::rtt) {
        received += 1;
        sum += rtt;
        min = Some(min.map_or(rtt, |m| m.min(rtt)));
        max = Some(max.map_or(rtt, |m| m.max(rtt)));
    }
    let sent = outcomes.len();
    let loss_percent = if sent == 0 {
        100.0
    } else {
        (sent - received) as f64 * 100.0 / sent as f64
    };
    let avg = (received > 0).then(|| sum / received as u32);
    let loss_ok = sent > 0 && loss_percent <= f64::from(limits.max_loss_percent);
    let latency_ok = limits.max_latency_ms == 0
        || avg.is_none_or(|a| a <= Duration::from_millis(u64::from(limits.max_latency_ms)));
    RoundStats {
        sent,
        received,
        loss_percent,
        min,
        avg,
        max,
        first_failure: outcomes
            .iter()
            .find(|o| o.rtt().is_none())
            .map(ToString::to_string),
        passed: loss_ok && latency_ok,
    }
}

impl RoundStats {
    /// Why the round failed, for logs and Events; `None` when it passed.
    pub fn failure(&self, limits: Thresholds) -> Option<String> {
        if self.passed {
            return None;
        }
        let mut why = Vec::new();
        if self.loss_percent > f64::from(limits.max_loss_percent) || self.sent == 0 {
            why.push(format!(
                "loss {}% > {}%",
                Percent(self.loss_percent),
                limits.max_loss_percent
            ));
        }
        if let Some(avg) = self.avg.filter(|_| limits.max_latency_ms > 0) {
            if avg > Duration::from_millis(u64::from(limits.max_latency_ms)) {
                why.push(format!("avg rtt {} > {}ms", ms(avg), limits.max_latency_ms));
            }
        }
        if let Some(f) = &self.first_failure {
            why.push(f.clone());
        }
        Some(why.join(", "))
    }
}

impl fmt::Display for RoundStats {
    /// `3/3 received, loss 0%, rtt min/avg/max 0.041/0.052/0.060 ms`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{} received, loss {}%, rtt min/avg/max ",
            self.received,
            self.sent,
            Percent(self.loss_percent)
        )?;
        match (self.min, self.avg, self.max) {
            (Some(a), Some(b), Some(c)) => {
                write!(f, "{}/{}/{} ms", Millis(a), Millis(b), Millis(c))
            }
            _ => f.write_str("-"),
        }
    }
}

/// A duration in milliseconds with three decimals: `0.052ms`.
pub fn ms(d: Duration) -> String {
    format!("{}ms", Millis(d))
}

/// Displays a duration as milliseconds with three decimals (`0.052`), in
/// integer arithmetic: float formatting with a precision is slow, and this
/// runs for every round of every target.
pub struct Millis(pub Duration);

impl fmt::Display for Millis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // u64, not the u128 of `as_micros`, whose formatting is slower.
        let us = u64::try_from(self.0.as_micros()).unwrap_or(u64::MAX);
        write!(f, "{}.{:03}", us / 1000, us % 1000)
    }
}

/// Displays a percentage rounded to a whole number.
struct Percent(f64);

impl fmt::Display for Percent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0.round() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(ms: u64) -> Outcome {
        Outcome::Ok(Duration::from_millis(ms))
    }

    #[test]
    fn a_clean_round_passes_with_min_avg_max() {
        let s = evaluate(&[ok(1), ok(2), ok(6)], Thresholds::default());
        assert!(s.passed);
        assert_eq!(s.loss_percent, 0.0);
        assert_eq!(s.min, Some(Duration::from_millis(1)));
        assert_eq!(s.avg, Some(Duration::from_millis(3)));
        assert_eq!(s.max, Some(Duration::from_millis(6)));
        assert_eq!(s.first_failure, None);
        assert_eq!(s.failure(Thresholds::default()), None);
        assert_eq!(
            s.to_string(),
            "3/3 received, loss 0%, rtt min/avg/max 1.000/3.000/6.000 ms"
        );
    }

    #[test]
    fn loss_above_the_limit_fails_and_at_the_limit_passes() {
        let outcomes = [ok(1), Outcome::Timeout, ok(1), ok(1)];
        let strict = Thresholds::default();
        let s = evaluate(&outcomes, strict);
        assert_eq!(s.loss_percent, 25.0);
        assert!(!s.passed);
        assert_eq!(s.failure(strict).unwrap(), "loss 25% > 0%, timeout");
        let lenient = Thresholds {
            max_loss_percent: 25,
            ..Thresholds::default()
        };
        assert!(evaluate(&outcomes, lenient).passed);
    }

    #[test]
    fn average_latency_above_the_limit_fails_and_zero_means_no_limit() {
        let outcomes = [ok(10), ok(30)];
        let limit = Thresholds {
            max_latency_ms: 15,
            ..Thresholds::default()
        };
        let s = evaluate(&outcomes, limit);
        assert!(!s.passed);
        assert_eq!(s.failure(limit).unwrap(), "avg rtt 20.000ms > 15ms");
        assert!(evaluate(&outcomes, Thresholds::default()).passed);
        let loose = Thresholds {
            max_latency_ms: 20,
            ..Thresholds::default()
        };
        assert!(evaluate(&outcomes, loose).passed);
    }

    #[test]
    fn a_round_with_no_answer_fails_and_names_the_first_failure() {
        let s = evaluate(
            &[Outcome::Error("NXDOMAIN".into()), Outcome::Refused],
            Thresholds::default(),
        );
        assert!(!s.passed);
        assert_eq!(s.loss_percent, 100.0);
        assert_eq!(s.avg, None);
        assert_eq!(s.first_failure.as_deref(), Some("error: NXDOMAIN"));
        assert_eq!(s.to_string(), "0/2 received, loss 100%, rtt min/avg/max -");
    }

    #[test]
    fn an_empty_round_fails() {
        assert!(!evaluate(&[], Thresholds::default()).passed);
    }

    #[test]
    fn outcomes_carry_the_metric_result_labels() {
        for (i, o) in [
            ok(1),
            Outcome::Timeout,
            Outcome::Refused,
            Outcome::Error("x".into()),
        ]
        .iter()
        .enumerate()
        {
            assert_eq!(o.index(), i, "{o}");
        }
        assert_eq!(ok(1).label(), "ok");
        assert_eq!(Outcome::Timeout.label(), "timeout");
        assert_eq!(Outcome::Refused.label(), "refused");
        assert_eq!(Outcome::Error("x".into()).label(), "error");
    }
}
