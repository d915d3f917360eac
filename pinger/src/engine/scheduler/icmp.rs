//! The scheduler's ICMP half: sending a slot's echo requests, stamping
//! their send times, matching replies to slots, and timing out the probes
//! whose deadline passed.

use tokio::time::Instant;

use super::{Due, Scheduler};
use crate::engine::{on_tick, probe_spacing};
use crate::probe::icmp::{round_trip, Flight, Socket};
use crate::round::Outcome;

/// When a probe waiting for its reply times out.
#[derive(Clone, Copy)]
pub(super) struct Deadline {
    pub(super) at: Instant,
    pub(super) slot: u32,
    pub(super) generation: u32,
    pub(super) round: u64,
    pub(super) probe: u32,
}

impl Scheduler {
    /// Sends the first echo request of slot `i`'s round now and schedules
    /// the others, `probe_spacing` apart from `start`.
    pub(super) fn icmp_round(&mut self, i: u32, start: Instant) {
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
    pub(super) fn send(&mut self, i: u32, round: u64, k: u32, now: Instant) {
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
    pub(super) async fn flush(&mut self) {
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
    pub(super) fn replies(&mut self, v6: bool, read: std::time::Instant) {
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
    pub(super) fn waiting(&self, d: &Deadline) -> Option<u16> {
        let slot = self.slots.get(d.slot as usize)?.as_ref()?;
        if slot.generation != d.generation {
            return None;
        }
        slot.waiting(d.round, d.probe as usize)?.seq
    }

    /// Times out every probe whose deadline passed by `now`.
    pub(super) fn expire(&mut self, now: Instant) {
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
}

/// The replies of one socket, when it is open.
pub(super) async fn receive(socket: Option<&mut Socket>) -> std::io::Result<std::time::Instant> {
    match socket {
        Some(s) => s.receive().await,
        None => std::future::pending().await,
    }
}
