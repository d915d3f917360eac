//! One ICMP socket: opening it (datagram, else raw), queueing echo requests,
//! sending the queue with one `sendmmsg` per [`BATCH`], and reading what came
//! back with one `recvmmsg`. No task of its own: the engine's scheduler
//! drives it.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant, SystemTime};

use socket2::{Domain, Protocol, SockAddr, Type};
use tokio::io::unix::AsyncFd;

use crate::round::Outcome;

use super::filter;
use super::flights::{Flight, Flights};
use super::mmsg::{receive_batch, send_batch, Inbox, Request, BATCH};
use super::packet::{answer_of, echo_request, PORT_UNREACHABLE};

/// What a received message says about one waiting probe.
pub struct Reply {
    /// The probe.
    pub flight: Flight,
    /// The address the probe went to.
    pub from: IpAddr,
    /// Its sequence number.
    pub seq: u16,
    /// When the kernel received it, when known.
    pub at: Option<SystemTime>,
    /// `None` for an echo reply, else the probe's failure.
    pub failure: Option<Outcome>,
}

/// One socket, its waiting probes and its queue.
pub struct Socket {
    fd: AsyncFd<socket2::Socket>,
    raw: bool,
    v6: bool,
    ident: u16,
    /// The probes waiting for a reply.
    pub flights: Flights,
    outgoing: Vec<Request>,
    inbox: Inbox,
    /// The replies of the last [`Socket::receive`], for the scheduler to
    /// take.
    pub replies: Vec<Reply>,
}

impl Socket {
    #[allow(
        unsafe_code,
        reason = "tokio's AsyncFd::register is unsafe: it needs the descriptor to stay open and the same while registered, which owning the socket guarantees"
    )]
    pub(super) fn open(v6: bool, ident: u16) -> io::Result<Socket> {
        let (domain, protocol) = if v6 {
            (Domain::IPV6, Protocol::ICMPV6)
        } else {
            (Domain::IPV4, Protocol::ICMPV4)
        };
        let (socket, raw) = match socket2::Socket::new(domain, Type::DGRAM, Some(protocol)) {
            Ok(s) => (s, false),
            Err(dgram) => match socket2::Socket::new(domain, Type::RAW, Some(protocol)) {
                Ok(s) => (s, true),
                Err(raw) => {
                    return Err(io::Error::new(
                        raw.kind(),
                        format!("datagram: {dgram}; raw: {raw}"),
                    ))
                }
            },
        };
        socket.set_nonblocking(true)?;
        // The kernel's receive time of each reply, so that an RTT does not
        // include the wait until the batch is read.
        if let Err(e) = nix::sys::socket::setsockopt(
            &socket,
            nix::sys::socket::sockopt::ReceiveTimestampns,
            &true,
        ) {
            tracing::debug!(error = %e, "no receive timestamps on the ICMP socket");
        }
        if raw {
            if let Err(e) = filter::replies_only(socket.as_raw_fd(), v6) {
                tracing::warn!(error = %e, "cannot set an ICMP filter on the raw socket; every ICMP message will be read");
            }
        }
        // SAFETY: the socket owns its descriptor and moves into the AsyncFd,
        // which alone holds it from here on: it stays open and the same for
        // the AsyncFd's lifetime.
        let fd = unsafe { AsyncFd::register(socket) }?;
        Ok(Socket {
            fd,
            raw,
            v6,
            ident,
            flights: Flights::default(),
            outgoing: Vec::new(),
            inbox: Inbox::default(),
            replies: Vec::new(),
        })
    }

    /// Queues an echo request to `to` for `flight`; returns its sequence
    /// number, or the probe's outcome when none is free.
    pub fn queue(&mut self, to: IpAddr, flight: Flight) -> Result<u16, Outcome> {
        let Some(seq) = self.flights.start(flight) else {
            return Err(Outcome::Error(
                "icmp: 65536 probes wait on this socket".into(),
            ));
        };
        self.outgoing.push(Request {
            to: SockAddr::from(SocketAddr::new(to, 0)),
            packet: echo_request(self.v6, self.raw, self.ident, seq),
            seq,
            flight,
        });
        Ok(seq)
    }

    /// Whether requests wait to be sent.
    pub fn has_queued(&self) -> bool {
        !self.outgoing.is_empty()
    }

    /// Sends the queue. `sent` gets each request's flight with the time it
    /// was handed to the kernel, or the outcome of a request the kernel
    /// refused (its flight ended here).
    pub async fn flush(
        &mut self,
        mut sent: impl FnMut(Flight, Result<(Instant, SystemTime), Outcome>),
    ) {
        let batch = std::mem::take(&mut self.outgoing);
        let mut rest = &batch[..];
        while !rest.is_empty() {
            let chunk = &rest[..rest.len().min(BATCH)];
            let start = (Instant::now(), SystemTime::now());
            match send_batch(self.fd.get_ref().as_raw_fd(), chunk) {
                Ok(n) => {
                    // The system call handles the requests one after the
                    // other: each gets its share of its span.
                    let n = n.clamp(1, chunk.len());
                    let span = Instant::now().saturating_duration_since(start.0);
                    for (k, r) in chunk[..n].iter().enumerate() {
                        let offset = span * k as u32 / n as u32;
                        sent(r.flight, Ok((start.0 + offset, start.1 + offset)));
                    }
                    rest = &rest[n..];
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if let Ok(mut ready) = self.fd.writable().await {
                        ready.clear_ready();
                    }
                }
                Err(e) => {
                    // The first request of the chunk failed (no route, for
                    // one): that probe's outcome; go on with the rest.
                    let r = &rest[0];
                    self.flights.end(r.seq, r.flight);
                    sent(r.flight, Err(crate::probe::io_outcome(&e)));
                    rest = &rest[1..];
                }
            }
        }
        // The queue's room is kept for the next tick.
        let mut batch = batch;
        batch.clear();
        if self.outgoing.is_empty() {
            self.outgoing = batch;
        }
    }

    /// Waits until messages arrive and reads up to 64 of them; adds
    /// the replies that answer a waiting probe to [`Socket::replies`] and
    /// returns when they were read. Cancel-safe: nothing is read until it
    /// completes.
    pub async fn receive(&mut self) -> io::Result<Instant> {
        loop {
            let mut ready = self.fd.readable().await?;
            let inbox = &mut self.inbox;
            let read = ready.try_io(|s| receive_batch(s.get_ref().as_raw_fd(), inbox));
            match read {
                Err(_would_block) => continue,
                Ok(r) => r?,
            }
            let now = Instant::now();
            if self.inbox.received.len() < BATCH {
                // The queue was emptied: no need for a read that only says
                // so. A message arriving after this read makes the socket
                // ready again.
                ready.clear_ready();
            }
            drop(ready);
            self.answers();
            return Ok(now);
        }
    }

    fn answers(&mut self) {
        let inbox = &self.inbox;
        for (buf, r) in inbox.bufs.iter().zip(&inbox.received) {
            let Some(from) = r.from else { continue };
            let Some(a) = answer_of(&buf[..r.len], from, self.raw, self.ident) else {
                continue;
            };
            let Some(flight) = self.flights.get(a.seq) else {
                continue;
            };
            let failure = a.error.map(|e| {
                if e == PORT_UNREACHABLE {
                    Outcome::Refused
                } else {
                    Outcome::Error(e)
                }
            });
            self.replies.push(Reply {
                flight,
                from: a.to,
                seq: a.seq,
                at: r.at,
                failure,
            });
        }
    }
}

/// The round-trip time of a probe sent at `sent`: to the kernel's receive
/// time of its reply when there is one, so that the wait until this process
/// reads the reply is not counted; else to `read`, when it was read.
pub fn round_trip(
    sent: (Instant, SystemTime),
    received: Option<SystemTime>,
    read: Instant,
) -> Duration {
    let by_clock = read.saturating_duration_since(sent.0);
    match received.map(|at| at.duration_since(sent.1)) {
        // A wall clock stepped between the two gives a time outside
        // [0, by_clock]: the monotonic one is used then.
        Some(Ok(rtt)) if rtt <= by_clock => rtt,
        _ => by_clock,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rtt_ends_at_the_kernels_receive_time_unless_the_wall_clock_stepped() {
        let sent = (Instant::now(), SystemTime::now());
        let read = sent.0 + Duration::from_micros(300);
        let rx = sent.1 + Duration::from_micros(20);
        assert_eq!(round_trip(sent, Some(rx), read), Duration::from_micros(20));
        // No receive time, or one the monotonic clock contradicts.
        assert_eq!(round_trip(sent, None, read), Duration::from_micros(300));
        let stepped_back = sent.1 - Duration::from_secs(5);
        assert_eq!(
            round_trip(sent, Some(stepped_back), read),
            Duration::from_micros(300)
        );
        let stepped_on = sent.1 + Duration::from_secs(5);
        assert_eq!(
            round_trip(sent, Some(stepped_on), read),
            Duration::from_micros(300)
        );
    }
}
