//! The one task that runs every round: the slots of the targets, the ticks
//! they are due at, the probes waiting for a reply with their deadlines,
//! and the ICMP sockets. Each turn it wakes for the first of: a tick with
//! work, a deadline, a reply, a round task's result or a command.
//!
//! Here the slots, the ticks and the rounds' start and end; in `icmp` the
//! echo requests, replies and deadlines; in `tasks` the rounds that run as
//! tasks of their own; in `alarm` the timer of its next wake.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::SystemTime;

use combo_api::hash::FnvBuild;
use combo_api::pinger::Host;
use tokio::sync::mpsc;
use tokio::time::Instant;

use self::alarm::Alarm;
use self::icmp::{receive, Deadline};
use self::tasks::Done;
use super::slot::Slot;
use super::{on_tick, Settings, Sink};
use crate::metrics::Metrics;
use crate::probe::icmp::{Flight, Icmp};
use crate::round::Outcome;
use crate::targets::{Kind, Target};

mod alarm;
mod icmp;
mod tasks;

/// What the [`Engine`](super::Engine) asks of the scheduler.
pub(super) enum Command {
    /// Probe a target, its first round at this phase of the interval.
    Add(Target, f64),
    /// Stop probing a target and drop its state.
    Remove(Target),
    /// Settings for the rounds that start from now on.
    Settings(Arc<Settings>),
}

/// A slot's next step, due at a tick.
#[derive(Clone, Copy)]
struct Due {
    slot: u32,
    generation: u32,
    /// `None`: the next round starts; else that probe of the round in
    /// progress is sent.
    probe: Option<u32>,
}

pub(super) struct Scheduler {
    slots: Vec<Option<Slot>>,
    free: Vec<u32>,
    index: HashMap<Target, u32, FnvBuild>,
    generations: u32,
    /// Slots that have rounds left.
    live: usize,
    settings: Arc<Settings>,
    rounds: Option<u64>,
    /// The steps due at each tick; emptied lists are kept for reuse.
    due: BTreeMap<Instant, Vec<Due>>,
    spare: Vec<Vec<Due>>,
    /// In the order sent: with one timeout for all, the earliest first.
    deadlines: VecDeque<Deadline>,
    icmp: Icmp,
    commands: mpsc::UnboundedReceiver<Command>,
    commands_open: bool,
    done_tx: mpsc::UnboundedSender<Done>,
    done_rx: mpsc::UnboundedReceiver<Done>,
    sink: Box<dyn Sink>,
    stopped: bool,
    metrics: Option<Arc<Metrics>>,
    /// The one timer of the process's probing.
    alarm: Alarm,
    /// Probes finished while a socket was borrowed.
    finished: Vec<(Flight, Outcome)>,
}

/// What ended a wait.
enum Wake {
    Command(Option<Command>),
    Done(Done),
    Replies(bool, std::io::Result<std::time::Instant>),
    Timer,
}

impl Scheduler {
    pub(super) fn new(
        settings: Settings,
        sink: Box<dyn Sink>,
        commands: mpsc::UnboundedReceiver<Command>,
        rounds: Option<u64>,
    ) -> Self {
        let (done_tx, done_rx) = mpsc::unbounded_channel();
        Scheduler {
            slots: Vec::new(),
            free: Vec::new(),
            index: HashMap::default(),
            generations: 0,
            live: 0,
            settings: Arc::new(settings),
            rounds,
            due: BTreeMap::new(),
            spare: Vec::new(),
            deadlines: VecDeque::new(),
            icmp: Icmp::default(),
            commands,
            commands_open: true,
            done_tx,
            done_rx,
            sink,
            stopped: false,
            metrics: None,
            alarm: Alarm::default(),
            finished: Vec::new(),
        }
    }

    pub(super) fn set_metrics(&mut self, metrics: Arc<Metrics>) {
        self.metrics = Some(metrics);
    }

    /// Runs until the sink stops it, or until every target ran its rounds
    /// and the engine is gone.
    pub(super) async fn run(mut self) {
        loop {
            self.run_due().await;
            if self.stopped || (self.live == 0 && !self.commands_open) {
                return;
            }
            let wake = self.next_wake();
            match self.wait(wake).await {
                Wake::Command(Some(c)) => {
                    self.command(c);
                    while let Ok(c) = self.commands.try_recv() {
                        self.command(c);
                    }
                }
                Wake::Command(None) => self.commands_open = false,
                Wake::Done(d) => self.task_done(d),
                Wake::Replies(v6, Ok(read)) => self.replies(v6, read),
                Wake::Replies(_, Err(e)) => {
                    tracing::debug!(error = %e, "reading an ICMP socket failed");
                }
                Wake::Timer => {}
            }
        }
    }

    async fn wait(&mut self, wake: Option<Instant>) -> Wake {
        self.alarm.set(wake);
        let (v4, v6) = self.icmp.open();
        // Replies first: one read when a deadline is due too may still
        // answer the probe in time.
        tokio::select! {
            biased;
            r = receive(v4) => Wake::Replies(false, r),
            r = receive(v6) => Wake::Replies(true, r),
            c = self.commands.recv(), if self.commands_open => Wake::Command(c),
            Some(d) = self.done_rx.recv() => Wake::Done(d),
            () = self.alarm.rung() => Wake::Timer,
        }
    }

    /// The first tick with work or deadline of a waiting probe. Deadlines
    /// of answered probes are dropped here, so the timer is set only for
    /// probes still waiting.
    fn next_wake(&mut self) -> Option<Instant> {
        while let Some(d) = self.deadlines.front() {
            if self.waiting(d).is_some() {
                break;
            }
            self.deadlines.pop_front();
        }
        let tick = self.due.keys().next().copied();
        let deadline = self.deadlines.front().map(|d| d.at);
        match (tick, deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Times out the probes past their deadline, takes the steps due by
    /// now and sends what they queued.
    async fn run_due(&mut self) {
        let now = Instant::now();
        self.expire(now);
        while let Some(entry) = self.due.first_entry() {
            if *entry.key() > now {
                break;
            }
            let (at, mut steps) = entry.remove_entry();
            for step in steps.drain(..) {
                self.step(step, at, now);
            }
            self.spare.push(steps);
        }
        self.flush().await;
    }

    fn slot(&mut self, i: u32, generation: u32) -> Option<&mut Slot> {
        self.slots
            .get_mut(i as usize)?
            .as_mut()
            .filter(|s| s.generation == generation)
    }

    fn at(&mut self, at: Instant, step: Due) {
        let spare = &mut self.spare;
        self.due
            .entry(at)
            .or_insert_with(|| spare.pop().unwrap_or_default())
            .push(step);
    }

    fn command(&mut self, c: Command) {
        match c {
            Command::Settings(s) => self.settings = s,
            Command::Add(target, phase) => self.add(target, phase),
            Command::Remove(target) => self.remove(&target),
        }
    }

    fn add(&mut self, target: Target, phase: f64) {
        if self.index.contains_key(&target) {
            return;
        }
        self.generations = self.generations.wrapping_add(1);
        let generation = self.generations;
        let first = on_tick(Instant::now() + self.settings.interval.mul_f64(phase));
        let slot = Slot::new(target.clone(), generation, self.settings.clone());
        let i = match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = Some(slot);
                i
            }
            None => {
                self.slots.push(Some(slot));
                (self.slots.len() - 1) as u32
            }
        };
        self.index.insert(target, i);
        self.live += 1;
        self.at(
            first,
            Due {
                slot: i,
                generation,
                probe: None,
            },
        );
    }

    fn remove(&mut self, target: &Target) {
        let Some(i) = self.index.remove(target) else {
            return;
        };
        let Some(slot) = self.slots[i as usize].take() else {
            return;
        };
        if let Some(ip) = slot.addr {
            if let Ok(socket) = self.icmp.socket(ip) {
                for (k, p) in slot.probes.iter().enumerate() {
                    if let Some(seq) = p.seq {
                        let flight = Flight {
                            slot: i,
                            probe: k as u32,
                        };
                        socket.flights.end(seq, flight);
                    }
                }
            }
        }
        if let Some(task) = &slot.task {
            task.abort();
        }
        if let Some(m) = &self.metrics {
            match &slot.series {
                Some(series) => m.forget_series(series),
                None => m.forget(target),
            }
        }
        if !slot.finished {
            self.live -= 1;
        }
        self.free.push(i);
    }

    fn step(&mut self, step: Due, at: Instant, now: Instant) {
        match step.probe {
            None => self.begin(step.slot, step.generation, at),
            Some(k) => {
                if let Some(slot) = self.slot(step.slot, step.generation) {
                    let round = slot.report.round;
                    self.send(step.slot, round, k, now);
                }
            }
        }
    }

    /// Starts a slot's round at tick `at`.
    fn begin(&mut self, i: u32, generation: u32, at: Instant) {
        let slot = self.slots[i as usize].as_mut();
        let Some(slot) = slot.filter(|s| s.generation == generation) else {
            return;
        };
        slot.begin(self.settings.clone(), at, SystemTime::now());
        let whose = (i, generation, slot.report.round);
        let target = &slot.report.target;
        // An ICMP round by address, nearly every round, clones nothing.
        let (settings, done) = (&self.settings, &self.done_tx);
        let task = match (target.kind, &target.host) {
            (Kind::Icmp, Host::Ip(_)) => return self.icmp_round(i, at),
            (Kind::Icmp, Host::Name(_)) => {
                tasks::lookup(target.clone(), settings.clone(), done.clone(), whose)
            }
            _ => tasks::round(target.clone(), settings.clone(), done.clone(), whose),
        };
        slot.task = Some(task);
    }

    /// Sets a probe's outcome, and completes its round with the last.
    fn finish(&mut self, i: u32, round: u64, k: usize, outcome: Outcome) {
        let Some(slot) = self.slots[i as usize].as_mut() else {
            return;
        };
        if slot.finish(round, k, outcome) {
            self.complete(i);
        }
    }

    /// Judges slot `i`'s finished round, records it, hands it to the sink
    /// and schedules the next.
    fn complete(&mut self, i: u32) {
        let rounds = self.rounds;
        let Some(slot) = self.slots[i as usize].as_mut() else {
            return;
        };
        slot.judge();
        if let Some(m) = &self.metrics {
            let series = slot
                .series
                .get_or_insert_with(|| m.series(&slot.report.target, slot.report.label.clone()));
            m.record(series, &slot.report);
        }
        if !self.sink.round(i as usize, &slot.report) {
            self.stopped = true;
        }
        if rounds.is_some_and(|n| slot.report.round >= n) {
            slot.finished = true;
            self.live -= 1;
            return;
        }
        let next = on_tick((slot.start + slot.settings.interval).max(Instant::now()));
        let step = Due {
            slot: i,
            generation: slot.generation,
            probe: None,
        };
        self.at(next, step);
    }
}

impl Drop for Scheduler {
    fn drop(&mut self) {
        for slot in self.slots.iter().flatten() {
            if let Some(task) = &slot.task {
                task.abort();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::IpAddr;
    use std::time::Duration;

    use super::*;
    use crate::engine::tests::settings;

    fn scheduler() -> Scheduler {
        let (reports, _) = mpsc::unbounded_channel::<crate::round::Report>();
        let (_, commands) = mpsc::unbounded_channel();
        let s = settings(Duration::from_secs(3600), 2);
        Scheduler::new(s, Box::new(reports), commands, None)
    }

    fn icmp(last: u8) -> Target {
        Target::icmp(Host::Ip([127, 0, 0, last].into()))
    }

    #[tokio::test]
    async fn a_removed_target_leaves_no_slot_and_its_place_goes_to_the_next() {
        let mut s = scheduler();
        s.add(icmp(1), 0.5);
        s.add(icmp(2), 0.5);
        s.add(icmp(2), 0.1);
        assert_eq!((s.slots.len(), s.live), (2, 2), "added once");
        s.remove(&icmp(1));
        assert!(s.slots[0].is_none());
        assert_eq!(s.index.keys().collect::<Vec<_>>(), [&icmp(2)]);
        assert_eq!(s.live, 1);
        s.add(icmp(3), 0.5);
        assert_eq!(s.slots.len(), 2, "the free place is taken again");
        let third = s.slots[0].as_ref().unwrap();
        assert_eq!(third.report.target, icmp(3));
        assert_ne!(third.generation, 1, "steps due for the removed one miss it");
        assert!(s.slot(0, 1).is_none());
    }

    #[tokio::test]
    async fn a_target_removed_while_its_probes_wait_frees_their_sequence_numbers() {
        let mut s = scheduler();
        s.add(icmp(1), 0.0);
        let generation = s.slots[0].as_ref().unwrap().generation;
        s.begin(0, generation, Instant::now());
        let ip = IpAddr::from([127, 0, 0, 1]);
        let waiting = |s: &mut Scheduler| s.icmp.socket(ip).unwrap().flights.waiting();
        assert_eq!(waiting(&mut s), 1, "the round's first probe is queued");
        assert_eq!(s.deadlines.len(), 1);
        s.remove(&icmp(1));
        assert_eq!(waiting(&mut s), 0);
        let deadline = s.deadlines[0];
        assert_eq!(s.waiting(&deadline), None, "its deadline wakes no one");
    }
}
