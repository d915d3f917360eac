//! The one task that runs every round: the slots of the targets, the ticks
//! they are due at, the probes waiting for a reply with their deadlines,
//! and the ICMP sockets. Each turn it wakes for the first of: a tick with
//! work, a deadline, a reply, a round task's result or a command.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::SystemTime;

use combo_api::hash::FnvBuild;
use combo_api::pinger::Host;
use tokio::sync::mpsc;
use tokio::time::{Instant, Sleep};

use super::slot::Slot;
use super::{on_tick, probe_spacing, Settings, Sink};
use crate::metrics::Metrics;
use crate::probe::icmp::{round_trip, Flight, Icmp, Socket};
use crate::probe::{self, Resolved};
use crate::round::Outcome;
use crate::targets::{Kind, Target};

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

/// When a probe waiting for its reply times out.
#[derive(Clone, Copy)]
struct Deadline {
    at: Instant,
    slot: u32,
    generation: u32,
    round: u64,
    probe: u32,
}

/// The result of a round's task.
struct Done {
    slot: u32,
    generation: u32,
    round: u64,
    result: TaskResult,
}

enum TaskResult {
    /// A TCP, UDP or DNS round's outcomes.
    Outcomes(Vec<Outcome>),
    /// The address of an ICMP target given by name, or the failure of
    /// every probe of the round.
    Resolved(Result<IpAddr, Outcome>),
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
    timer: Pin<Box<Sleep>>,
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
            timer: Box::pin(tokio::time::sleep_until(far())),
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
        let at = wake.unwrap_or_else(far);
        if self.timer.deadline() != at {
            self.timer.as_mut().reset(at);
        }
        let (v4, v6) = self.icmp.open();
        // Replies first: one read when a deadline is due too may still
        // answer the probe in time.
        tokio::select! {
            biased;
            r = receive(v4) => Wake::Replies(false, r),
            r = receive(v6) => Wake::Replies(true, r),
            c = self.commands.recv(), if self.commands_open => Wake::Command(c),
            Some(d) = self.done_rx.recv() => Wake::Done(d),
            () = &mut self.timer => Wake::Timer,
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
        let settings = self.settings.clone();
        let done_tx = self.done_tx.clone();
        let Some(slot) = self.slot(i, generation) else {
            return;
        };
        slot.begin(settings.clone(), at, SystemTime::now());
        let round = slot.report.round;
        let target = &slot.report.target;
        match (target.kind, &target.host) {
            (Kind::Icmp, Host::Ip(_)) => self.icmp_round(i, at),
            (Kind::Icmp, Host::Name(_)) => {
                let target = target.clone();
                let task = tokio::spawn(async move {
                    let result = match probe::resolve(&target, settings.timeout).await {
                        Ok(Resolved::Addr(a)) => Ok(a.ip()),
                        Ok(Resolved::Name(_)) => Err(Outcome::Error("not an address".into())),
                        Err(failure) => Err(failure),
                    };
                    let result = TaskResult::Resolved(result);
                    let _ = done_tx.send(Done {
                        slot: i,
                        generation,
                        round,
                        result,
                    });
                });
                slot.task = Some(task.abort_handle());
            }
            _ => {
                let target = target.clone();
                let task = tokio::spawn(async move {
                    let outcomes = TaskResult::Outcomes(task_round(&target, &settings).await);
                    let _ = done_tx.send(Done {
                        slot: i,
                        generation,
                        round,
                        result: outcomes,
                    });
                });
                slot.task = Some(task.abort_handle());
            }
        }
    }

    /// Sends the first echo request of slot `i`'s round now and schedules
    /// the others, `probe_spacing` apart from `start`.
    fn icmp_round(&mut self, i: u32, start: Instant) {
        let Some(slot) = self.slots[i as usize].as_ref() else {
            return;
        };
        let (generation, round) = (slot.generation, slot.report.round);
        let count = slot.probes.len() as u32;
        let spacing = probe_spacing(slot.settings.interval, count);
        for k in 1..count {
            let step = Due {
                slot: i,
                generation,
                probe: Some(k),
            };
            self.at(on_tick(start + spacing * k), step);
        }
        self.send(i, round, 0, Instant::now());
    }

    /// Queues probe `k` of slot `i`'s round `round` on its socket.
    fn send(&mut self, i: u32, round: u64, k: u32, now: Instant) {
        let Some(slot) = self.slots[i as usize].as_mut() else {
            return;
        };
        let Some(ip) = slot.addr else { return };
        let flight = Flight { slot: i, probe: k };
        let queued = match self.icmp.socket(ip) {
            Ok(socket) => socket.queue(ip, flight),
            Err(e) => Err(Outcome::Error(e.to_string())),
        };
        match queued {
            Ok(seq) => {
                slot.probes[k as usize].seq = Some(seq);
                self.deadlines.push_back(Deadline {
                    at: now + slot.settings.timeout,
                    slot: i,
                    generation: slot.generation,
                    round,
                    probe: k,
                });
            }
            Err(failure) => self.finish(i, round, k as usize, failure),
        }
    }

    /// Sends what the sockets queued, stamping each probe's send time.
    async fn flush(&mut self) {
        let (v4, v6) = self.icmp.open();
        for socket in [v4, v6].into_iter().flatten() {
            if !socket.has_queued() {
                continue;
            }
            let slots = &mut self.slots;
            let finished = &mut self.finished;
            socket
                .flush(|flight, sent| match sent {
                    Ok(at) => {
                        let probe = slots[flight.slot as usize]
                            .as_mut()
                            .and_then(|s| s.probes.get_mut(flight.probe as usize));
                        if let Some(p) = probe {
                            p.sent = Some(at);
                        }
                    }
                    Err(failure) => finished.push((flight, failure)),
                })
                .await;
        }
        self.finish_pending();
    }

    /// Finishes the probes collected in `self.finished`.
    fn finish_pending(&mut self) {
        let mut finished = std::mem::take(&mut self.finished);
        for (flight, outcome) in finished.drain(..) {
            let round = match self.slots[flight.slot as usize].as_ref() {
                Some(s) => s.report.round,
                None => continue,
            };
            self.finish(flight.slot, round, flight.probe as usize, outcome);
        }
        self.finished = finished;
    }

    /// Matches the replies just read on one socket to their probes.
    fn replies(&mut self, v6: bool, read: std::time::Instant) {
        let (v4s, v6s) = self.icmp.open();
        let Some(socket) = (if v6 { v6s } else { v4s }) else {
            return;
        };
        let slots = &self.slots;
        for r in socket.replies.drain(..) {
            let slot = slots[r.flight.slot as usize].as_ref();
            let Some(slot) = slot.filter(|s| s.addr == Some(r.from)) else {
                continue;
            };
            let probe = slot.probes.get(r.flight.probe as usize);
            let Some(p) = probe.filter(|p| p.seq == Some(r.seq) && !p.done) else {
                continue;
            };
            socket.flights.end(r.seq, r.flight);
            let outcome = match (r.failure, p.sent) {
                (Some(failure), _) => failure,
                (None, Some(sent)) => {
                    let rtt = round_trip(sent, r.at, read);
                    // Answered later than the timeout by the kernel's
                    // clock, however soon it was read: lost.
                    if rtt > slot.settings.timeout {
                        Outcome::Timeout
                    } else {
                        Outcome::Ok(rtt)
                    }
                }
                (None, None) => Outcome::Ok(std::time::Duration::ZERO),
            };
            self.finished.push((r.flight, outcome));
        }
        self.finish_pending();
    }

    /// The probe a deadline is for, while it still waits.
    fn waiting(&self, d: &Deadline) -> Option<u16> {
        let slot = self.slots.get(d.slot as usize)?.as_ref()?;
        if slot.generation != d.generation {
            return None;
        }
        slot.waiting(d.round, d.probe as usize)?.seq
    }

    /// Times out every probe whose deadline passed by `now`.
    fn expire(&mut self, now: Instant) {
        while let Some(&d) = self.deadlines.front() {
            if d.at > now {
                break;
            }
            self.deadlines.pop_front();
            let Some(seq) = self.waiting(&d) else {
                continue;
            };
            let flight = Flight {
                slot: d.slot,
                probe: d.probe,
            };
            if let Some(ip) = self.slots[d.slot as usize].as_ref().and_then(|s| s.addr) {
                if let Ok(socket) = self.icmp.socket(ip) {
                    socket.flights.end(seq, flight);
                }
            }
            self.finish(d.slot, d.round, d.probe as usize, Outcome::Timeout);
        }
    }

    fn task_done(&mut self, d: Done) {
        let Some(slot) = self.slot(d.slot, d.generation) else {
            return;
        };
        match d.result {
            TaskResult::Outcomes(outcomes) => {
                if slot.finish_all(d.round, outcomes) {
                    self.complete(d.slot);
                }
            }
            TaskResult::Resolved(Err(failure)) => {
                let n = slot.probes.len();
                if slot.finish_all(d.round, vec![failure; n]) {
                    self.complete(d.slot);
                }
            }
            TaskResult::Resolved(Ok(ip)) => {
                if d.round == slot.report.round && slot.left > 0 {
                    slot.addr = Some(ip);
                    slot.task = None;
                    self.icmp_round(d.slot, Instant::now());
                }
            }
        }
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

/// An instant no probe waits for: the timer's setting when nothing is due.
fn far() -> Instant {
    Instant::now() + std::time::Duration::from_secs(86_400 * 365)
}

/// The replies of one socket, when it is open.
async fn receive(socket: Option<&mut Socket>) -> std::io::Result<std::time::Instant> {
    match socket {
        Some(s) => s.receive().await,
        None => std::future::pending().await,
    }
}

/// A TCP, UDP or DNS round, as a task: the probes `probe_spacing` apart,
/// concurrently.
async fn task_round(target: &Target, s: &Settings) -> Vec<Outcome> {
    let count = s.count.max(1);
    let resolved = match probe::resolve(target, s.timeout).await {
        Ok(r) => r,
        Err(failure) => return vec![failure; count as usize],
    };
    if count == 1 {
        return vec![s.probers.probe(target.kind, &resolved, s.timeout).await];
    }
    let spacing = probe_spacing(s.interval, count);
    let start = Instant::now();
    let probes = (0..count).map(|i| {
        let resolved = &resolved;
        async move {
            if i > 0 {
                tokio::time::sleep_until(on_tick(start + spacing * i)).await;
            }
            s.probers.probe(target.kind, resolved, s.timeout).await
        }
    });
    futures::future::join_all(probes).await
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::engine::tests::settings;

    fn scheduler() -> Scheduler {
        let (reports, _) = mpsc::unbounded_channel::<super::super::Report>();
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
