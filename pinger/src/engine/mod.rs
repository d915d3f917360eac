//! Probes every target from one scheduler task that holds each target's
//! state in one slot, and restarts nothing when settings change: targets
//! are added and removed one by one, and every round reads the settings
//! current at its start.
//!
//! Timing: a target's first round starts at its [`phase`] within the
//! interval, so the targets of one pod, and the pods of one Debugger, do not
//! probe in lockstep. The `count` probes of a round start at most 1 s apart,
//! spread over the first half of the interval, and run concurrently. A round
//! that takes longer than the interval (a timeout above it) delays only that
//! target's next round.
//!
//! Every round and probe starts on a [`TICK`] boundary. The scheduler
//! (`scheduler`) wakes once per tick that has work, walks the slots due
//! then, queues their echo requests, sends them in one batch per socket
//! (see [`crate::probe::icmp`]), and matches each reply to its slot by
//! sequence number. A finished round is recorded into the slot's metric
//! handles and `/recent` window (resolved once per target) and handed to
//! the [`Sink`]. TCP, UDP and DNS probes, and the name lookup of an ICMP
//! target given by name, run as a task per round that reports back to the
//! scheduler. docs/benchmarks.md, "Where the pinger's CPU goes", has the
//! profile that chose this layout.

mod scheduler;
mod slot;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::metrics::Metrics;
use crate::probe::Probers;
use crate::round::{Report, Thresholds};
use crate::targets::{phase, Target};

use self::scheduler::{Command, Scheduler};

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
    /// The resolver of the probes that run as tasks.
    pub probers: Probers,
}

/// Where finished rounds go: called by the scheduler, in its task, once per
/// round, after the round is recorded in the metrics.
pub trait Sink: Send + 'static {
    /// Takes a finished round of the target in place `id` of the engine (the
    /// same for all its rounds, given to another target only after it was
    /// removed); `false` stops the engine.
    fn round(&mut self, id: usize, report: &Report) -> bool;
}

/// A channel takes a copy of each round; the engine stops when the
/// receiver is gone.
impl Sink for mpsc::UnboundedSender<Report> {
    fn round(&mut self, _: usize, report: &Report) -> bool {
        self.send(report.clone()).is_ok()
    }
}

/// The handle of the scheduler: which targets it probes, and its task.
pub struct Engine {
    targets: BTreeSet<Target>,
    commands: mpsc::UnboundedSender<Command>,
    seed: u64,
    /// The scheduler until its task starts with the first target.
    idle: Option<Scheduler>,
    task: Option<JoinHandle<()>>,
}

impl Engine {
    /// An engine with no targets, giving each finished round to `sink`.
    /// `rounds` limits the rounds of every target (`None`: until removed);
    /// `seed` shifts every target's phase.
    pub fn new(settings: Settings, sink: impl Sink, seed: u64, rounds: Option<u64>) -> Self {
        let (commands, rx) = mpsc::unbounded_channel();
        Engine {
            targets: BTreeSet::new(),
            commands,
            seed,
            idle: Some(Scheduler::new(settings, Box::new(sink), rx, rounds)),
            task: None,
        }
    }

    /// Records every round in `metrics` (probe counters, RTT histogram,
    /// target gauge, `/recent` window) before the sink gets it; a removed
    /// target's series go with it.
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> Self {
        if let Some(s) = &mut self.idle {
            s.set_metrics(metrics);
        }
        self
    }

    /// Replaces the settings; running targets use them from their next round.
    pub fn set_settings(&self, settings: Settings) {
        let _ = self.commands.send(Command::Settings(Arc::new(settings)));
    }

    /// Makes the probed targets exactly `want`; returns the removed ones.
    pub fn set_targets(&mut self, want: &BTreeSet<Target>) -> Vec<Target> {
        let removed: Vec<Target> = self.targets.difference(want).cloned().collect();
        for t in &removed {
            self.targets.remove(t);
            let _ = self.commands.send(Command::Remove(t.clone()));
            tracing::debug!(target = %t, "target removed");
        }
        for t in want {
            if self.targets.insert(t.clone()) {
                tracing::debug!(target = %t, "target added");
                let _ = self
                    .commands
                    .send(Command::Add(t.clone(), phase(t, self.seed)));
            }
        }
        if !self.targets.is_empty() {
            if let Some(scheduler) = self.idle.take() {
                self.task = Some(tokio::spawn(scheduler.run()));
            }
        }
        removed
    }

    /// The targets probed now.
    pub fn targets(&self) -> &BTreeSet<Target> {
        &self.targets
    }

    /// Waits until every target finished its rounds (with a round limit).
    /// Dropped before, it stops the engine as dropping the engine does.
    pub async fn join(mut self) {
        let task = self.task.take().map(StopOnDrop);
        // Without commands left, the scheduler ends with the last round.
        drop(self);
        if let Some(mut task) = task {
            let _ = (&mut task.0).await;
        }
    }
}

/// Stops the scheduler's task when dropped.
struct StopOnDrop(JoinHandle<()>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
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

/// Spacing of the probes of one round.
pub fn probe_spacing(interval: Duration, count: u32) -> Duration {
    (interval / count.max(1) / 2).min(Duration::from_secs(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::dns::Dns;
    use crate::targets::Kind;
    use combo_api::pinger::Host;

    fn tcp(port: u16) -> Target {
        Target {
            kind: Kind::Tcp,
            host: Host::Ip([127, 0, 0, 1].into()),
            port: Some(port),
        }
    }

    pub(super) fn settings(interval: Duration, count: u32) -> Settings {
        Settings {
            interval,
            timeout: Duration::from_secs(1),
            count,
            limits: Thresholds::default(),
            probers: Probers {
                dns: Arc::new(Dns::new(&[], Duration::from_secs(1))),
            },
        }
    }

    #[tokio::test]
    async fn removed_targets_are_returned_once_and_kept_ones_stay() {
        // Rounds an hour apart: the test is over before any probe is due.
        let (reports, _rx) = mpsc::unbounded_channel();
        let mut engine = Engine::new(settings(Duration::from_secs(3600), 1), reports, 7, None);
        let (gone, stays) = (tcp(1), tcp(2));
        assert!(engine
            .set_targets(&BTreeSet::from([gone.clone(), stays.clone()]))
            .is_empty());
        let removed = engine.set_targets(&BTreeSet::from([stays.clone()]));
        assert_eq!(removed, std::slice::from_ref(&gone));
        assert_eq!(engine.targets().iter().collect::<Vec<_>>(), [&stays]);
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
