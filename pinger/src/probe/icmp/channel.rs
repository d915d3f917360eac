//! One ICMP socket with its sender and receiver tasks: opening it (datagram,
//! else raw), queueing a probe's request, sending the queue with one
//! `sendmmsg`, and matching each batch of replies to the probes waiting.

use std::io;
use std::net::IpAddr;
use std::os::fd::AsRawFd;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use socket2::{Domain, Protocol, Socket, Type};
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio::sync::{oneshot, Notify};
use tokio::task::AbortHandle;

use crate::round::Outcome;

use super::filter;
use super::mmsg::{receive_batch, send_batch, BATCH, MESSAGE};
use super::packet::{answer_of, PORT_UNREACHABLE};
use super::waiters::{Request, Shared};

/// One socket with its sender and receiver tasks.
pub(super) struct Channel {
    socket: AsyncFd<Socket>,
    pub(super) raw: bool,
    ident: u16,
    shared: Mutex<Shared>,
    /// A request was queued.
    queued: Notify,
    /// A deadline earlier than every other was queued.
    sooner: Notify,
    tasks: Mutex<Vec<AbortHandle>>,
}

/// Removes a probe's waiter when its wait ends.
pub(super) struct Forget<'a> {
    pub(super) channel: &'a Channel,
    pub(super) key: (IpAddr, u16),
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.channel.lock().take(self.key);
    }
}

impl Channel {
    #[allow(
        unsafe_code,
        reason = "tokio's AsyncFd::register is unsafe: it needs the descriptor to stay open and the same while registered, which owning the socket guarantees"
    )]
    pub(super) fn open(v6: bool, ident: u16) -> io::Result<Arc<Channel>> {
        let (domain, protocol) = if v6 {
            (Domain::IPV6, Protocol::ICMPV6)
        } else {
            (Domain::IPV4, Protocol::ICMPV4)
        };
        let (socket, raw) = match Socket::new(domain, Type::DGRAM, Some(protocol)) {
            Ok(s) => (s, false),
            Err(dgram) => match Socket::new(domain, Type::RAW, Some(protocol)) {
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
        let socket = unsafe { AsyncFd::register(socket) }?;
        let channel = Arc::new(Channel {
            socket,
            raw,
            ident,
            shared: Mutex::default(),
            queued: Notify::new(),
            sooner: Notify::new(),
            tasks: Mutex::default(),
        });
        let sender = tokio::spawn(channel.clone().send_loop()).abort_handle();
        let receiver = tokio::spawn(channel.clone().receive_loop()).abort_handle();
        *channel.tasks.lock().unwrap_or_else(|p| p.into_inner()) = vec![sender, receiver];
        Ok(channel)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Stops the tasks; they hold the channel, so this is what closes it.
    pub(super) fn stop(&self) {
        for t in self
            .tasks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
        {
            t.abort();
        }
    }

    /// Queues a request; its outcome arrives on the receiver, a timeout once
    /// `timeout` has passed.
    pub(super) fn submit(
        &self,
        to: IpAddr,
        seq: u16,
        packet: Vec<u8>,
        timeout: Duration,
    ) -> oneshot::Receiver<Outcome> {
        let mut s = self.lock();
        let (rx, sooner) = s.wait(to, seq, Instant::now() + timeout);
        s.outgoing.push(Request { to, seq, packet });
        if s.outgoing.len() == 1 {
            self.queued.notify_one();
        }
        if sooner {
            self.sooner.notify_one();
        }
        rx
    }

    /// Answers every probe whose deadline has passed with a timeout; returns
    /// the next deadline.
    fn expire(&self, now: Instant) -> Option<Instant> {
        self.lock().expire(now)
    }

    /// Records when each request of a batch was sent: the batch's system call
    /// handles them one after the other between `start` and `end`, so each
    /// gets its share of that span.
    fn stamp_sent(&self, batch: &[Request], start: (Instant, SystemTime), end: Instant) {
        let span = end.saturating_duration_since(start.0);
        let n = batch.len().max(1) as u32;
        let mut s = self.lock();
        for (k, r) in batch.iter().enumerate() {
            if let Some(w) = s.waiting.get_mut(&(r.to, r.seq)) {
                let offset = span * k as u32 / n;
                w.sent = Some((start.0 + offset, start.1 + offset));
            }
        }
    }

    async fn send_loop(self: Arc<Self>) {
        loop {
            self.queued.notified().await;
            // The probes due at this tick queue theirs first.
            tokio::task::yield_now().await;
            let batch = std::mem::take(&mut self.lock().outgoing);
            let mut rest = &batch[..];
            while !rest.is_empty() {
                let chunk = &rest[..rest.len().min(BATCH)];
                let mut start = None;
                let sent = self
                    .socket
                    .async_io(Interest::WRITABLE, |s| {
                        let now = (Instant::now(), SystemTime::now());
                        start = Some(now);
                        // Stamped before the call too: on loopback the
                        // replies arrive while it runs.
                        self.stamp_sent(chunk, now, now.0);
                        send_batch(s.as_raw_fd(), chunk)
                    })
                    .await;
                if let Some(start) = start {
                    let taken = sent.as_ref().map_or(1, |n| (*n).max(1));
                    self.stamp_sent(&chunk[..taken.min(chunk.len())], start, Instant::now());
                }
                match sent {
                    Ok(n) => rest = &rest[n.clamp(1, rest.len())..],
                    Err(e) => {
                        // The first request of the chunk failed (no route,
                        // for one): that probe's outcome; go on with the rest.
                        let r = &rest[0];
                        if let Some(w) = self.lock().take((r.to, r.seq)) {
                            let _ = w.reply.send(crate::probe::io_outcome(&e));
                        }
                        rest = &rest[1..];
                    }
                }
            }
        }
    }

    async fn receive_loop(self: Arc<Self>) {
        let mut bufs = vec![[0u8; MESSAGE]; BATCH];
        let far = Duration::from_secs(3600);
        loop {
            let next = self.expire(Instant::now());
            let wake = tokio::time::Instant::from_std(next.unwrap_or_else(|| Instant::now() + far));
            let ready = tokio::select! {
                r = self.socket.readable() => r,
                () = tokio::time::sleep_until(wake) => continue,
                () = self.sooner.notified() => continue,
            };
            let mut ready = match ready {
                Ok(r) => r,
                Err(e) => {
                    tracing::error!(error = %e, "the ICMP socket cannot be polled");
                    return;
                }
            };
            let read = ready.try_io(|s| receive_batch(s.get_ref().as_raw_fd(), &mut bufs));
            let received = match read {
                Err(_would_block) => continue,
                Ok(Err(e)) => {
                    tracing::debug!(error = %e, "reading the ICMP socket failed");
                    continue;
                }
                Ok(Ok(r)) => r,
            };
            let now = Instant::now();
            if received.len() < BATCH {
                // The queue was emptied: no need for a read that only says
                // so. A message arriving after this read makes the socket
                // ready again.
                ready.clear_ready();
            }
            let mut s = self.lock();
            for (buf, r) in bufs.iter().zip(&received) {
                let Some(from) = r.from else { continue };
                let Some(a) = answer_of(&buf[..r.len], from, self.raw, self.ident) else {
                    continue;
                };
                let Some(w) = s.take((a.to, a.seq)) else {
                    continue;
                };
                let outcome = match (a.error, w.sent) {
                    (None, Some(sent)) => Outcome::Ok(round_trip(sent, r.at, now)),
                    (None, None) => Outcome::Ok(Duration::ZERO),
                    (Some(e), _) if e == PORT_UNREACHABLE => Outcome::Refused,
                    (Some(e), _) => Outcome::Error(e),
                };
                let _ = w.reply.send(outcome);
            }
        }
    }
}

/// The round-trip time of a probe sent at `sent`: to the kernel's receive
/// time of its reply when there is one, so that the wait until this process
/// reads the reply is not counted; else to `read`, when it was read.
fn round_trip(
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
