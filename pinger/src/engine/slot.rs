//! What the scheduler keeps per target, in one place: the round in
//! progress (its report, filled in as probes finish), each probe's
//! sequence number and send time, the target's metric handles and its
//! round task, if any. Pure: the scheduler passes the clock in.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::SystemTime;

use combo_api::pinger::Host;
use tokio::task::AbortHandle;
use tokio::time::Instant;

use super::Settings;
use crate::metrics::Series;
use crate::round::Report;
use crate::round::{evaluate, Outcome};
use crate::targets::Target;

/// One probe of the round in progress.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Probe {
    /// Its sequence number while its echo request waits for a reply.
    pub(super) seq: Option<u16>,
    /// When it was handed to the kernel (monotonic, and wall clock to
    /// compare with the kernel's receive time of the reply).
    pub(super) sent: Option<(std::time::Instant, SystemTime)>,
    /// Whether its outcome is in.
    pub(super) done: bool,
}

/// One target's state.
pub(super) struct Slot {
    /// Told apart from an earlier target in the same place.
    pub(super) generation: u32,
    /// The round in progress (outcomes filled in as they come), or the
    /// last one.
    pub(super) report: Report,
    /// Its settings, read at its start.
    pub(super) settings: Arc<Settings>,
    /// The tick it started on.
    pub(super) start: Instant,
    /// The address its echo requests go to.
    pub(super) addr: Option<IpAddr>,
    pub(super) probes: Vec<Probe>,
    /// Probes whose outcome is not in.
    pub(super) left: usize,
    /// Its metric handles, made with its first finished round.
    pub(super) series: Option<Series>,
    /// The task of a round that runs as one (TCP, UDP, DNS, a name
    /// lookup).
    pub(super) task: Option<AbortHandle>,
    /// Ran all its rounds.
    pub(super) finished: bool,
}

impl Slot {
    pub(super) fn new(target: Target, generation: u32, settings: Arc<Settings>) -> Slot {
        let label = Arc::new(target.label());
        Slot {
            generation,
            report: Report {
                target,
                label,
                round: 0,
                started: SystemTime::UNIX_EPOCH,
                outcomes: Vec::new(),
                stats: evaluate(&[], settings.limits),
                limits: settings.limits,
            },
            settings,
            start: Instant::now(),
            addr: None,
            probes: Vec::new(),
            left: 0,
            series: None,
            task: None,
            finished: false,
        }
    }

    /// Starts the next round, at tick `start`, under `settings`. The
    /// outcomes start as timeouts and are replaced as probes finish.
    pub(super) fn begin(&mut self, settings: Arc<Settings>, start: Instant, started: SystemTime) {
        let count = settings.count.max(1) as usize;
        self.report.round += 1;
        self.report.started = started;
        self.report.limits = settings.limits;
        self.report.outcomes.clear();
        self.report.outcomes.resize(count, Outcome::Timeout);
        self.probes.clear();
        self.probes.resize(count, Probe::default());
        self.left = count;
        self.start = start;
        self.addr = match self.report.target.host {
            Host::Ip(ip) => Some(ip),
            Host::Name(_) => None,
        };
        self.settings = settings;
    }

    /// Sets the outcome of probe `i` of round `round`; true when that
    /// finished the round. A probe already done, or of another round, is
    /// left as it is.
    pub(super) fn finish(&mut self, round: u64, i: usize, outcome: Outcome) -> bool {
        if round != self.report.round {
            return false;
        }
        let Some(p) = self.probes.get_mut(i).filter(|p| !p.done) else {
            return false;
        };
        p.done = true;
        p.seq = None;
        self.report.outcomes[i] = outcome;
        self.left -= 1;
        self.left == 0
    }

    /// Sets every outcome of round `round` at once (a round run as a task,
    /// or a name that did not resolve); true when the round was waiting
    /// for them.
    pub(super) fn finish_all(&mut self, round: u64, outcomes: Vec<Outcome>) -> bool {
        if round != self.report.round || self.left == 0 {
            return false;
        }
        for p in &mut self.probes {
            p.done = true;
            p.seq = None;
        }
        self.report.outcomes = outcomes;
        self.left = 0;
        self.task = None;
        true
    }

    /// Judges the finished round.
    pub(super) fn judge(&mut self) {
        self.report.stats = evaluate(&self.report.outcomes, self.report.limits);
    }

    /// The probe `i` of round `round` while it waits for its reply.
    pub(super) fn waiting(&self, round: u64, i: usize) -> Option<&Probe> {
        (round == self.report.round)
            .then(|| self.probes.get(i))
            .flatten()
            .filter(|p| !p.done)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::engine::tests::settings;
    use crate::round::Outcome;

    fn slot(count: u32) -> Slot {
        let s = Arc::new(settings(Duration::from_secs(1), count));
        let mut slot = Slot::new(Target::icmp(Host::Ip([127, 0, 0, 1].into())), 1, s.clone());
        slot.begin(s, Instant::now(), SystemTime::UNIX_EPOCH);
        slot
    }

    #[tokio::test]
    async fn a_round_finishes_with_its_last_probe_and_each_probe_counts_once() {
        let mut s = slot(3);
        let ok = Outcome::Ok(Duration::from_micros(40));
        assert!(!s.finish(1, 0, ok.clone()));
        assert!(!s.finish(1, 0, Outcome::Refused), "a probe counts once");
        assert!(!s.finish(2, 1, ok.clone()), "another round's probe");
        assert!(!s.finish(1, 2, ok.clone()));
        assert!(s.waiting(1, 1).is_some());
        assert!(s.finish(1, 1, Outcome::Timeout));
        s.judge();
        assert_eq!(s.report.outcomes, [ok.clone(), Outcome::Timeout, ok]);
        assert_eq!((s.report.stats.sent, s.report.stats.received), (3, 2));
        assert!(s.waiting(1, 1).is_none());
    }

    #[tokio::test]
    async fn a_new_round_starts_with_its_probes_waiting_and_timeouts_in_place() {
        let mut s = slot(2);
        assert!(s.finish_all(1, vec![Outcome::Refused; 2]));
        assert!(!s.finish_all(1, vec![Outcome::Refused; 2]), "once");
        let again = s.settings.clone();
        s.begin(again, Instant::now(), SystemTime::UNIX_EPOCH);
        assert_eq!(s.report.round, 2);
        assert_eq!(s.report.outcomes, [Outcome::Timeout, Outcome::Timeout]);
        assert_eq!(s.left, 2);
        assert!(s.waiting(2, 0).is_some() && s.waiting(2, 1).is_some());
    }
}
