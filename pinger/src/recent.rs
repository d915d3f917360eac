//! Loss and RTT of each target's last minutes, served as
//! [`combo_api::recent::PATH`] for `kubectl combo mesh`. Pure: the clock is
//! passed in.
//!
//! Bound: per target probed now, at most [`WINDOW_MINUTES`] one-minute
//! buckets, whatever the interval; a target's entry goes with its other
//! state through `Metrics::forget`.
//!
//! Each target's window is shared with its slot in the engine, which
//! records a round into it directly; this map is read only to serve.
//!
//! docs/pinger.md#the-mesh-view

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use combo_api::hash::FnvBuild;
use combo_api::recent::{Recent, RecentTarget, WINDOW_MINUTES};

use crate::round::Report;

/// One minute's probes of one target.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Bucket {
    minute: u64,
    sent: u64,
    lost: u64,
    rtt_sum: Duration,
    rtt_max: Duration,
}

/// One target's buckets, oldest first, and its last verdict.
#[derive(Debug, Default)]
pub struct Window {
    buckets: VecDeque<Bucket>,
    up: bool,
}

/// The last minutes of every target probed now, sorted when served.
#[derive(Debug, Default)]
pub struct Windows {
    targets: HashMap<(&'static str, Arc<String>), Arc<Mutex<Window>>, FnvBuild>,
}

fn minute_of(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs()
        / 60
}

impl Window {
    /// Counts a finished round in the minute it started.
    pub fn record(&mut self, report: &Report) {
        let minute = minute_of(report.started);
        let w = self;
        w.up = report.stats.passed;
        if w.buckets.back().is_none_or(|b| b.minute < minute) {
            w.buckets.push_back(Bucket {
                minute,
                ..Bucket::default()
            });
        }
        // A round never starts before the newest bucket's minute by more
        // than the interval; it is counted in the newest.
        let b = w.buckets.back_mut().expect("pushed above");
        for o in &report.outcomes {
            b.sent += 1;
            match o.rtt() {
                Some(rtt) => {
                    b.rtt_sum += rtt;
                    b.rtt_max = b.rtt_max.max(rtt);
                }
                None => b.lost += 1,
            }
        }
        while w.buckets.len() as u64 > WINDOW_MINUTES {
            w.buckets.pop_front();
        }
    }
}

impl Windows {
    /// The window of a target, made empty on first use.
    pub fn window(&mut self, kind: &'static str, label: &Arc<String>) -> Arc<Mutex<Window>> {
        self.targets
            .entry((kind, label.clone()))
            .or_default()
            .clone()
    }

    /// Counts a finished round of a target in the minute it started.
    pub fn record(&mut self, report: &Report) {
        self.window(report.target.kind.as_str(), &report.label)
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .record(report);
    }

    /// Drops a target no longer probed.
    pub fn forget(&mut self, kind: &'static str, label: &Arc<String>) {
        self.targets.remove(&(kind, label.clone()));
    }

    /// The summary at `now`: the buckets of the last [`WINDOW_MINUTES`]
    /// minutes, the current one included.
    pub fn summary(&self, now: SystemTime) -> Recent {
        let first = (minute_of(now) + 1).saturating_sub(WINDOW_MINUTES);
        let mut sorted: Vec<_> = self.targets.iter().collect();
        sorted.sort_unstable_by(|a, b| a.0.cmp(b.0));
        let targets = sorted
            .into_iter()
            .map(|((kind, label), w)| {
                let w = w.lock().unwrap_or_else(|p| p.into_inner());
                let mut t = RecentTarget {
                    kind: kind.to_string(),
                    target: label.to_string(),
                    up: w.up,
                    ..RecentTarget::default()
                };
                let (mut sum, mut max) = (Duration::ZERO, Duration::ZERO);
                for b in w.buckets.iter().filter(|b| b.minute >= first) {
                    t.sent += b.sent;
                    t.lost += b.lost;
                    sum += b.rtt_sum;
                    max = max.max(b.rtt_max);
                }
                let answered = t.sent - t.lost;
                if answered > 0 {
                    t.rtt_avg_ms = Some(sum.as_secs_f64() * 1e3 / answered as f64);
                    t.rtt_max_ms = Some(max.as_secs_f64() * 1e3);
                }
                t
            })
            .collect();
        Recent {
            window_seconds: WINDOW_MINUTES * 60,
            targets,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::tests::report_at;
    use crate::round::Outcome;

    fn at(minute: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(minute * 60 + 7)
    }

    #[test]
    fn loss_and_rtt_cover_the_last_five_minutes_only() {
        let mut w = Windows::default();
        let ok = |ms| Outcome::Ok(Duration::from_millis(ms));
        // Minute 100: all lost; minutes 102..=106: one of three lost.
        w.record(&report_at("10.0.0.2", at(100), vec![Outcome::Timeout; 3]));
        for m in 102..=106 {
            w.record(&report_at(
                "10.0.0.2",
                at(m),
                vec![ok(2), ok(4), Outcome::Refused],
            ));
        }
        let s = w.summary(at(106));
        assert_eq!(s.window_seconds, 300);
        let t = &s.targets[0];
        assert_eq!((t.target.as_str(), t.sent, t.lost), ("10.0.0.2", 15, 5));
        assert_eq!(t.rtt_avg_ms, Some(3.0));
        assert_eq!(t.rtt_max_ms, Some(4.0));
        assert!((t.loss_percent() - 33.333).abs() < 0.01);
        // Three minutes on, two of the five minutes are left.
        let later = &w.summary(at(109)).targets[0];
        assert_eq!((later.sent, later.lost), (6, 2));
    }

    #[test]
    fn a_target_keeps_at_most_five_buckets_and_goes_when_forgotten() {
        let mut w = Windows::default();
        for m in 0..50 {
            w.record(&report_at("10.0.0.3", at(m), vec![Outcome::Timeout]));
        }
        let key = ("icmp", Arc::new("10.0.0.3".to_string()));
        assert_eq!(w.targets[&key].lock().unwrap().buckets.len(), 5);
        assert!(!w.summary(at(49)).targets[0].up);
        assert_eq!(w.summary(at(49)).targets[0].rtt_avg_ms, None);
        w.forget(key.0, &key.1);
        assert!(w.targets.is_empty());
        assert!(w.summary(at(49)).targets.is_empty());
    }
}
