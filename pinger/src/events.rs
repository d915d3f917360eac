//! When a round result becomes a Kubernetes Event. Pure: the clock is passed in.
//!
//! Per target: a Warning once it has failed [`Policy::confirm`] rounds in a
//! row, repeats of a persisting failure every [`Policy::repeat_every`]
//! (published into the same Event series), `ProbeRecovered` when it passes
//! again. Two Events of one target are at least [`Policy::min_gap`] apart,
//! and a token bucket bounds all targets together, so a flapping or lossy
//! link cannot flood the API server. A transition held back by a limit is
//! not lost: the target's reported state is unchanged, so the next round
//! tries again.
//!
//! The defaults are chosen for 5,000 nodes with `maxPeers: 20` (see
//! [`Policy::default`]).

use std::collections::HashMap;
use std::hash::Hash;
use std::time::{Duration, Instant};

/// Reason of the Normal Event when a failing target passes again.
pub const REASON_RECOVERED: &str = "ProbeRecovered";

/// Limits of the Event stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Failed rounds in a row before a target's Warning.
    pub confirm: u32,
    /// Smallest time between two Events of one target.
    pub min_gap: Duration,
    /// How often a persisting failure updates its Event series.
    pub repeat_every: Duration,
    /// Events allowed in a burst, over all targets.
    pub burst: u32,
    /// Time to earn one more Event, over all targets.
    pub refill: Duration,
}

impl Default for Policy {
    /// * `confirm` 2: one failed round of three probes is what 1 % random
    ///   loss gives every 3,400 rounds (with `maxLossPercent: 50`), two in a
    ///   row one in 11 million; a dead peer is still reported after two
    ///   rounds (10 s at the default interval).
    /// * `repeat_every` 5 min: kube's Recorder folds a repeat into the
    ///   existing Event's series only within 6 minutes of the last one, so a
    ///   dead peer stays one Event series per prober, 12 writes an hour.
    /// * `burst` 10, `refill` 60 s: a pinger writes at most 10 Events at once
    ///   and 60 an hour; at 5,000 nodes that bounds the whole cluster to
    ///   300,000 an hour (83/s) even if every pinger were at its limit, and
    ///   one dead node costs its ~20 probers one Event each.
    /// * `min_gap` 30 s: a flapping target spends at most one token per
    ///   30 s, so one target alone cannot drain the bucket in a minute.
    fn default() -> Self {
        Policy {
            confirm: 2,
            min_gap: Duration::from_secs(30),
            repeat_every: Duration::from_secs(300),
            burst: 10,
            refill: Duration::from_secs(60),
        }
    }
}

/// What to publish for a target after a round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Warning: the target started failing.
    Failed,
    /// Warning, same series: the target is still failing.
    StillFailing,
    /// Normal `ProbeRecovered`: the target passes again.
    Recovered,
}

#[derive(Clone, Copy, Debug, Default)]
struct TargetState {
    reported_failing: bool,
    failed_rounds: u32,
    last_event: Option<Instant>,
}

/// Event de-duplication and rate limiting state of one pinger.
#[derive(Debug)]
pub struct Gate<K> {
    policy: Policy,
    targets: HashMap<K, TargetState>,
    tokens: f64,
    last_refill: Option<Instant>,
}

impl<K: Clone + Eq + Hash> Gate<K> {
    /// A gate with a full token bucket.
    pub fn new(policy: Policy) -> Self {
        Gate {
            policy,
            targets: HashMap::new(),
            tokens: f64::from(policy.burst),
            last_refill: None,
        }
    }

    /// Feeds one round's verdict; returns the Event to publish, if any.
    pub fn observe(&mut self, target: &K, passed: bool, now: Instant) -> Option<Decision> {
        self.refill(now);
        let state = self.targets.entry(target.clone()).or_default();
        state.failed_rounds = if passed {
            0
        } else {
            state.failed_rounds.saturating_add(1)
        };
        let since_last = state.last_event.map(|t| now.saturating_duration_since(t));
        let wanted = match (passed, state.reported_failing) {
            (false, false) if state.failed_rounds >= self.policy.confirm => Decision::Failed,
            (false, true) if since_last.is_none_or(|d| d >= self.policy.repeat_every) => {
                Decision::StillFailing
            }
            (true, true) => Decision::Recovered,
            _ => return None,
        };
        if since_last.is_some_and(|d| d < self.policy.min_gap) || self.tokens < 1.0 {
            return None;
        }
        self.tokens -= 1.0;
        state.last_event = Some(now);
        state.reported_failing = !passed;
        Some(wanted)
    }

    /// Drops a target that is no longer probed.
    pub fn forget(&mut self, target: &K) {
        self.targets.remove(target);
    }

    fn refill(&mut self, now: Instant) {
        if let Some(last) = self.last_refill {
            let earned = now.saturating_duration_since(last).as_secs_f64()
                / self.policy.refill.as_secs_f64().max(1e-9);
            self.tokens = (self.tokens + earned).min(f64::from(self.policy.burst));
        }
        self.last_refill = Some(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    fn policy() -> Policy {
        Policy {
            confirm: 1,
            min_gap: 10 * S,
            repeat_every: 60 * S,
            burst: 100,
            refill: S,
        }
    }

    #[test]
    fn a_passing_target_produces_no_event() {
        let mut g = Gate::new(policy());
        let t0 = Instant::now();
        for i in 0..10 {
            assert_eq!(g.observe(&"a", true, t0 + i * S), None);
        }
    }

    #[test]
    fn failing_then_passing_gives_one_warning_then_one_recovery() {
        let mut g = Gate::new(policy());
        let t0 = Instant::now();
        assert_eq!(g.observe(&"a", false, t0), Some(Decision::Failed));
        for i in 1..30 {
            assert_eq!(g.observe(&"a", false, t0 + i * S), None, "round {i}");
        }
        assert_eq!(
            g.observe(&"a", true, t0 + 30 * S),
            Some(Decision::Recovered)
        );
        assert_eq!(g.observe(&"a", true, t0 + 31 * S), None);
    }

    #[test]
    fn a_persisting_failure_repeats_into_its_series_at_the_repeat_interval() {
        let mut g = Gate::new(policy());
        let t0 = Instant::now();
        let decisions: Vec<(u32, Decision)> = (0..=130)
            .filter_map(|i| g.observe(&"a", false, t0 + i * S).map(|d| (i, d)))
            .collect();
        assert_eq!(
            decisions,
            [
                (0, Decision::Failed),
                (60, Decision::StillFailing),
                (120, Decision::StillFailing)
            ]
        );
    }

    #[test]
    fn a_flapping_target_is_held_to_the_minimum_gap_and_ends_in_the_true_state() {
        let mut g = Gate::new(policy());
        let t0 = Instant::now();
        let mut events = Vec::new();
        for i in 0..60u32 {
            if let Some(d) = g.observe(&"a", i % 2 == 1, t0 + i * S) {
                events.push((i, d));
            }
        }
        // 60 flips in 60 s, but Events at least 10 s apart.
        assert!(events.len() <= 6, "{events:?}");
        assert!(events.windows(2).all(|w| w[1].0 - w[0].0 >= 10));
        // The last Event said "recovered"; a failure right after it is held
        // back by the gap, and delivered once the gap allows.
        let (last_at, last) = *events.last().unwrap();
        assert_eq!(last, Decision::Recovered);
        assert_eq!(g.observe(&"a", false, t0 + (last_at + 1) * S), None);
        assert_eq!(
            g.observe(&"a", false, t0 + (last_at + 10) * S),
            Some(Decision::Failed)
        );
    }

    #[test]
    fn the_shared_bucket_bounds_many_targets_failing_at_once() {
        let mut g = Gate::new(Policy {
            burst: 5,
            refill: 10 * S,
            ..policy()
        });
        let t0 = Instant::now();
        let published = (0..50)
            .filter(|i| g.observe(i, false, t0).is_some())
            .count();
        assert_eq!(published, 5);
        // Ten seconds later one more token, so one more target gets its Warning.
        let later = (0..50)
            .filter(|i| g.observe(i, false, t0 + 10 * S).is_some())
            .count();
        assert_eq!(later, 1);
    }

    #[test]
    fn a_failure_is_reported_only_once_it_lasts_the_confirming_rounds() {
        let mut g = Gate::new(Policy {
            confirm: 2,
            ..policy()
        });
        let t0 = Instant::now();
        // Single failed rounds between passes: never an Event.
        for i in 0..20u32 {
            assert_eq!(g.observe(&"a", i % 3 != 0, t0 + i * 5 * S), None);
        }
        assert_eq!(g.observe(&"a", false, t0 + 100 * S), None);
        assert_eq!(g.observe(&"a", false, t0 + 105 * S), Some(Decision::Failed));
    }

    #[test]
    fn a_dead_peer_under_the_defaults_is_one_series_repeated_within_the_recorder_window() {
        let mut g = Gate::new(Policy::default());
        let t0 = Instant::now();
        // One hour of failed rounds at the default 5 s interval.
        let decisions: Vec<(u32, Decision)> = (0..720u32)
            .filter_map(|i| {
                g.observe(&"dead", false, t0 + i * 5 * S)
                    .map(|d| (i * 5, d))
            })
            .collect();
        assert_eq!(decisions[0], (5, Decision::Failed));
        assert!(decisions[1..]
            .iter()
            .all(|(_, d)| *d == Decision::StillFailing));
        assert_eq!(decisions.len(), 12);
        // kube's Recorder continues a series within 6 minutes of its last Event.
        assert!(decisions.windows(2).all(|w| w[1].0 - w[0].0 < 360));
    }

    #[test]
    fn the_default_budget_holds_any_number_of_flapping_targets_to_sixty_an_hour_plus_the_burst() {
        let mut g = Gate::new(Policy::default());
        let t0 = Instant::now();
        let mut events = 0;
        for round in 0..720u32 {
            for target in 0..20u32 {
                // Two failed rounds, then one pass, for ever.
                let passed = (round + target) % 3 == 2;
                if g.observe(&target, passed, t0 + round * 5 * S).is_some() {
                    events += 1;
                }
            }
        }
        assert!((60..=70).contains(&events), "{events} Events in an hour");
    }

    #[test]
    fn a_forgotten_target_starts_fresh() {
        let mut g = Gate::new(policy());
        let t0 = Instant::now();
        assert_eq!(g.observe(&"a", false, t0), Some(Decision::Failed));
        g.forget(&"a");
        assert_eq!(g.observe(&"a", true, t0 + 20 * S), None);
    }
}
