//! The probes of one socket waiting for their reply, with their deadlines,
//! and the requests not sent yet. Pure: the clock is passed in, so expiry is
//! tested without a socket.

use std::collections::{BTreeSet, HashMap};
use std::net::IpAddr;
use std::time::{Instant, SystemTime};

use combo_api::hash::FnvBuild;
use tokio::sync::oneshot;

use crate::round::Outcome;

#[derive(Default)]
pub(super) struct Shared {
    /// Requests not sent yet, in order.
    pub(super) outgoing: Vec<Request>,
    /// Probes waiting for their reply, by (address, sequence).
    pub(super) waiting: HashMap<(IpAddr, u16), Waiter, FnvBuild>,
    /// Their deadlines, earliest first. An answered probe's entry goes with
    /// its waiter, so the receiver's timer is set only for probes still
    /// waiting: when every reply is in, the process sleeps until the next
    /// tick instead of waking at each answered probe's old deadline.
    pub(super) deadlines: BTreeSet<(Instant, IpAddr, u16)>,
}

impl Shared {
    /// Registers a probe to `to` with sequence `seq` that waits until
    /// `deadline`; a probe still waiting on that sequence number (65536
    /// probes to one address ago) is given up. Returns the receiver of its
    /// outcome, and whether its deadline is now the earliest.
    pub(super) fn wait(
        &mut self,
        to: IpAddr,
        seq: u16,
        deadline: Instant,
    ) -> (oneshot::Receiver<Outcome>, bool) {
        let (tx, rx) = oneshot::channel();
        self.take((to, seq));
        self.waiting.insert(
            (to, seq),
            Waiter {
                sent: None,
                deadline,
                reply: tx,
            },
        );
        let sooner = self
            .deadlines
            .first()
            .is_none_or(|(first, _, _)| deadline < *first);
        self.deadlines.insert((deadline, to, seq));
        (rx, sooner)
    }

    /// Takes the waiter of a probe, and its deadline.
    pub(super) fn take(&mut self, key: (IpAddr, u16)) -> Option<Waiter> {
        let w = self.waiting.remove(&key)?;
        self.deadlines.remove(&(w.deadline, key.0, key.1));
        Some(w)
    }

    /// Answers every probe whose deadline has passed with a timeout and
    /// drops its waiter, so a target that never answers leaves nothing
    /// behind; returns the next deadline.
    pub(super) fn expire(&mut self, now: Instant) -> Option<Instant> {
        while let Some(&(deadline, to, seq)) = self.deadlines.first() {
            if deadline > now {
                return Some(deadline);
            }
            self.deadlines.pop_first();
            if let Some(w) = self.waiting.remove(&(to, seq)) {
                let _ = w.reply.send(Outcome::Timeout);
            }
        }
        None
    }
}

pub(super) struct Request {
    pub(super) to: IpAddr,
    pub(super) seq: u16,
    pub(super) packet: Vec<u8>,
}

pub(super) struct Waiter {
    /// When the request was handed to the kernel (monotonic, and wall clock
    /// to compare with the kernel's receive time of the reply).
    pub(super) sent: Option<(Instant, SystemTime)>,
    /// When the probe times out.
    pub(super) deadline: Instant,
    pub(super) reply: oneshot::Sender<Outcome>,
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn an_answered_probe_takes_its_deadline_with_it() {
        let mut s = Shared::default();
        let now = Instant::now();
        let mut replies = Vec::new();
        for (last, seq) in [(1u8, 7u16), (2, 8)] {
            let to = IpAddr::from([127, 0, 0, last]);
            let (reply, _) = s.wait(to, seq, now + Duration::from_millis(u64::from(seq)));
            replies.push(reply);
        }
        let first = IpAddr::from([127, 0, 0, 1]);
        assert!(s.take((first, 7)).is_some());
        assert!(s.take((first, 7)).is_none(), "taken once");
        // Only the probe still waiting sets the receiver's timer.
        let left: Vec<_> = s.deadlines.iter().map(|&(_, to, seq)| (to, seq)).collect();
        assert_eq!(left, vec![(IpAddr::from([127, 0, 0, 2]), 8)]);
        assert!(s.take((IpAddr::from([127, 0, 0, 2]), 8)).is_some());
        assert!(s.deadlines.is_empty() && s.waiting.is_empty());
    }

    #[test]
    fn probes_past_their_deadline_time_out_and_leave_no_waiter() {
        let mut s = Shared::default();
        let now = Instant::now();
        let to = IpAddr::from([127, 0, 0, 1]);
        let mut replies = Vec::new();
        for seq in 1..=3u16 {
            let (reply, _) = s.wait(to, seq, now + Duration::from_millis(u64::from(seq)));
            replies.push(reply);
        }
        let third = now + Duration::from_millis(3);
        assert_eq!(s.expire(now + Duration::from_millis(2)), Some(third));
        assert_eq!(s.waiting.keys().collect::<Vec<_>>(), [&(to, 3)]);
        assert_eq!(s.deadlines.len(), 1);
        let mut replies = replies.into_iter();
        for _ in 0..2 {
            assert_eq!(replies.next().unwrap().try_recv(), Ok(Outcome::Timeout));
        }
        let mut last = replies.next().unwrap();
        assert!(last.try_recv().is_err(), "the third still waits");
        assert_eq!(s.expire(third), None);
        assert!(s.waiting.is_empty() && s.deadlines.is_empty());
        assert_eq!(last.try_recv(), Ok(Outcome::Timeout));
    }
}
