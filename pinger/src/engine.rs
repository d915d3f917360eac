//! Runs one independent task per target and restarts nothing when settings
//! change: targets are added and removed one by one, and every task reads the
//! current settings at the start of each round.
//!
//! Timing: a target's first round starts at its [`phase`] within the
//! interval, so the targets of one pod, and the pods of one Debugger, do not
//! probe in lockstep. The `count` probes of a round start at most 1 s apart,
//! spread over the first half of the interval, and run concurrently. A round
//! that takes longer than the interval (a timeout above it) delays only that
//! target's next round.
//!
//! Every round and probe starts on a [`TICK`] boundary, so the probes that
//! fall due together go out in one batch (see `probe::icmp`) and the
//! process wakes once per tick, not once per probe. The targets wait for
//! their tick on one shared clock ([`Ticks`]), not on a timer each.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures::future::join_all;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use crate::probe::{self, Probers};
use crate::round::{evaluate, Outcome, RoundStats, Thresholds};
use crate::targets::{phase, Target};
use crate::ticks::Ticks;

/// How rounds are run; shared by all targets.
#[derive(Clone)]
pub struct Settings {
    /// Time between the starts of two rounds of one target.
    pub interval: Duration,
    /// Time limit of one probe.
    pub timeout: Duration,
    /// Probes per round.
    pub count: u32,
    /// Pass/fail limits of a round.
    pub limits: Thresholds,
    /// Sockets and resolver.
    pub probers: Probers,
}

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

/// Owner of the per-target tasks.
pub struct Engine {
    tasks: HashMap<Target, JoinHandle<()>>,
    settings: watch::Sender<Arc<Settings>>,
    reports: mpsc::UnboundedSender<Report>,
    seed: u64,
    rounds: Option<u64>,
    /// The clock the tasks wait on, and its task once a target runs.
    ticks: Arc<Ticks>,
    clock: Option<JoinHandle<()>>,
}

impl Engine {
    /// An engine with no targets. `rounds` limits the rounds of every target
    /// (`None`: until removed); `seed` shifts every target's phase.
    pub fn new(
        settings: Settings,
        reports: mpsc::UnboundedSender<Report>,
        seed: u64,
        rounds: Option<u64>,
    ) -> Self {
        Engine {
            tasks: HashMap::new(),
            settings: watch::Sender::new(Arc::new(settings)),
            reports,
            seed,
            rounds,
            ticks: Arc::default(),
            clock: None,
        }
    }

    /// Replaces the settings; running tasks use them from their next round.
    pub fn set_settings(&self, settings: Settings) {
        self.settings.send_replace(Arc::new(settings));
    }

    /// Makes the running targets exactly `want`; returns the removed ones.
    pub fn set_targets(&mut self, want: &BTreeSet<Target>) -> Vec<Target> {
        let removed: Vec<Target> = self
            .tasks
            .keys()
            .filter(|t| !want.contains(*t))
            .cloned()
            .collect();
        for t in &removed {
            if let Some(task) = self.tasks.remove(t) {
                task.abort();
            }
            tracing::debug!(target = %t, "target removed");
        }
        if self.clock.is_none() && !want.is_empty() {
            let ticks = self.ticks.clone();
            self.clock = Some(tokio::spawn(async move { ticks.run().await }));
        }
        for t in want {
            if !self.tasks.contains_key(t) {
                tracing::debug!(target = %t, "target added");
                let task = tokio::spawn(run_target(
                    t.clone(),
                    self.settings.subscribe(),
                    self.reports.clone(),
                    phase(t, self.seed),
                    self.rounds,
                    self.ticks.clone(),
                ));
                self.tasks.insert(t.clone(), task);
            }
        }
        removed
    }

    /// Waits until every target finished its rounds (with a round limit).
    pub async fn join(mut self) {
        let tasks: Vec<JoinHandle<()>> = self.tasks.drain().map(|(_, t)| t).collect();
        // The clock runs until the tasks are done.
        let clock = self.clock.take();
        drop(self);
        join_all(tasks).await;
        if let Some(clock) = clock {
            clock.abort();
        }
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        for task in self.tasks.values().chain(&self.clock) {
            task.abort();
        }
    }
}

/// The grid probes are started on.
pub const TICK: Duration = Duration::from_millis(10);

/// `t` rounded up to the next [`TICK`] boundary of this process.
pub fn on_tick(t: tokio::time::Instant) -> tokio::time::Instant {
    static ORIGIN: std::sync::OnceLock<tokio::time::Instant> = std::sync::OnceLock::new();
    let origin = *ORIGIN.get_or_init(tokio::time::Instant::now);
    let since = t.saturating_duration_since(origin).as_nanos();
    let tick = TICK.as_nanos();
    let up = since.div_ceil(tick) * tick;
    origin + Duration::from_nanos(u64::try_from(up).unwrap_or(u64::MAX))
}

async fn run_target(
    target: Target,
    settings: watch::Receiver<Arc<Settings>>,
    reports: mpsc::UnboundedSender<Report>,
    phase: f64,
    rounds: Option<u64>,
    ticks: Arc<Ticks>,
) {
    let label = Arc::new(target.label());
    let first = settings.borrow().interval.mul_f64(phase);
    let mut next = on_tick(tokio::time::Instant::now() + first);
    for round in 1.. {
        ticks.sleep_until(next).await;
        let s = settings.borrow().clone();
        let started = SystemTime::now();
        let outcomes = run_round(&target, &s, &ticks).await;
        let stats = evaluate(&outcomes, s.limits);
        let report = Report {
            target: target.clone(),
            label: label.clone(),
            round,
            started,
            outcomes,
            stats,
            limits: s.limits,
        };
        if reports.send(report).is_err() || rounds.is_some_and(|n| round >= n) {
            return;
        }
        let now = tokio::time::Instant::now();
        next = on_tick((next + s.interval).max(now));
    }
}

/// Spacing of the probes of one round.
pub fn probe_spacing(interval: Duration, count: u32) -> Duration {
    (interval / count.max(1) / 2).min(Duration::from_secs(1))
}

async fn run_round(target: &Target, s: &Settings, ticks: &Ticks) -> Vec<Outcome> {
    let count = s.count.max(1);
    let resolved = match probe::resolve(target, s.timeout).await {
        Ok(r) => r,
        Err(failure) => return vec![failure; count as usize],
    };
    if count == 1 {
        return vec![s.probers.probe(target.kind, &resolved, s.timeout).await];
    }
    let spacing = probe_spacing(s.interval, count);
    let start = tokio::time::Instant::now();
    let probes = (0..count).map(|i| {
        let resolved = &resolved;
        async move {
            if i > 0 {
                ticks.sleep_until(on_tick(start + spacing * i)).await;
            }
            s.probers.probe(target.kind, resolved, s.timeout).await
        }
    });
    join_all(probes).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::{dns::Dns, icmp::Icmp};
    use crate::targets::Kind;
    use combo_api::pinger::Host;

    fn tcp(port: u16) -> Target {
        Target {
            kind: Kind::Tcp,
            host: Host::Ip([127, 0, 0, 1].into()),
            port: Some(port),
        }
    }

    #[tokio::test]
    async fn a_removed_target_has_its_task_stopped_and_dropped() {
        // Rounds an hour apart: the test is over before any probe is due.
        let settings = Settings {
            interval: Duration::from_secs(3600),
            timeout: Duration::from_secs(1),
            count: 1,
            limits: Thresholds::default(),
            probers: Probers {
                icmp: Arc::new(Icmp::default()),
                dns: Arc::new(Dns::new(&[], Duration::from_secs(1))),
            },
        };
        let (reports, _rx) = mpsc::unbounded_channel();
        let mut engine = Engine::new(settings, reports, 7, None);
        let (gone, stays) = (tcp(1), tcp(2));
        engine.set_targets(&BTreeSet::from([gone.clone(), stays.clone()]));
        let handles = |e: &Engine, t: &Target| e.tasks[t].abort_handle();
        let (gone_task, kept_task) = (handles(&engine, &gone), handles(&engine, &stays));

        let removed = engine.set_targets(&BTreeSet::from([stays.clone()]));
        assert_eq!(removed, std::slice::from_ref(&gone));
        assert_eq!(engine.tasks.keys().collect::<Vec<_>>(), [&stays]);
        for _ in 0..100 {
            if gone_task.is_finished() {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert!(gone_task.is_finished(), "the removed target's task stopped");
        assert!(!kept_task.is_finished(), "the kept target's task runs on");
        assert!(engine.set_targets(&BTreeSet::from([stays])).is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn starts_are_rounded_up_to_the_tick_grid() {
        let t0 = on_tick(tokio::time::Instant::now());
        assert_eq!(on_tick(t0), t0, "a boundary stays");
        assert_eq!(on_tick(t0 + Duration::from_millis(1)), t0 + TICK);
        assert_eq!(on_tick(t0 + TICK + Duration::from_nanos(1)), t0 + TICK * 2);
        assert_eq!(
            on_tick(t0 + Duration::from_secs(5)),
            t0 + Duration::from_secs(5)
        );
    }

    #[test]
    fn probes_of_a_round_are_spread_over_half_the_interval_at_most_a_second_apart() {
        assert_eq!(
            probe_spacing(Duration::from_secs(1), 5),
            Duration::from_millis(100)
        );
        assert_eq!(
            probe_spacing(Duration::from_secs(60), 3),
            Duration::from_secs(1)
        );
        assert_eq!(
            probe_spacing(Duration::from_secs(2), 0),
            Duration::from_secs(1)
        );
    }
}
