//! ICMP echo over one socket per address family, shared by all targets, with
//! sends and receives batched (docs/pinger.md, "Probes").
//!
//! The socket is an unprivileged `SOCK_DGRAM` ICMP socket when the group is
//! in `net.ipv4.ping_group_range`, else a raw socket (needs NET_RAW). On a
//! datagram socket the kernel rewrites the ICMP identifier, so replies are
//! told apart by (address, sequence) only: every address gets its own
//! sequence counter here, so two probes in flight to one address never share
//! a sequence number and a reply is never matched to the wrong probe.
//!
//! A probe queues its echo request and waits for its reply. One sender task
//! per socket sends every request queued at that moment with one
//! `sendmmsg`, and one receiver task reads every reply waiting with one
//! `recvmmsg` and answers the probes whose deadline passed: targets whose
//! rounds fall on the same tick cost one system call each way and no timer
//! of their own. Replies are decoded by surge-ping.

use std::collections::{BTreeSet, HashMap};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use combo_api::hash::FnvBuild;
use socket2::{Domain, Protocol, SockAddr, SockAddrStorage, Socket, Type};
use surge_ping::{Icmpv4Packet, Icmpv6Packet};
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio::sync::{oneshot, Notify, OnceCell};
use tokio::task::AbortHandle;

use crate::round::Outcome;

/// Payload of every echo request.
const PAYLOAD: [u8; 16] = *b"kube-combo-ping\0";

/// Most messages one `sendmmsg` or `recvmmsg` handles.
const BATCH: usize = 64;

/// Room for one received message: an IPv4 header with options, an ICMP
/// error quoting a request, or an echo reply of [`PAYLOAD`].
const MESSAGE: usize = 576;

/// The shared ICMP sockets, opened on first use.
pub struct Icmp {
    v4: OnceCell<Result<Arc<Channel>, String>>,
    v6: OnceCell<Result<Arc<Channel>, String>>,
    sequences: Mutex<HashMap<IpAddr, u16, FnvBuild>>,
    ident: u16,
}

impl Default for Icmp {
    fn default() -> Self {
        Icmp {
            v4: OnceCell::new(),
            v6: OnceCell::new(),
            sequences: Mutex::default(),
            // Only raw sockets use it; the kernel picks it on datagram sockets.
            ident: (std::process::id() & 0xffff) as u16,
        }
    }
}

impl Drop for Icmp {
    fn drop(&mut self) {
        for cell in [&self.v4, &self.v6] {
            if let Some(Ok(ch)) = cell.get() {
                ch.stop();
            }
        }
    }
}

impl Icmp {
    /// Sends one echo request to `ip` and waits for its reply.
    pub async fn ping(&self, ip: IpAddr, timeout: Duration) -> Outcome {
        let channel = match self.channel(ip).await {
            Ok(c) => c.clone(),
            Err(e) => return Outcome::Error(e.clone()),
        };
        let seq = self.next_sequence(ip);
        let packet = echo_request(ip.is_ipv6(), channel.raw, self.ident, seq);
        let reply = channel.submit(ip, seq, packet, timeout);
        // Forgets the request if the round is dropped while it waits.
        let _forget = Forget {
            channel: &channel,
            key: (ip, seq),
        };
        // The receiver task answers with the reply, or with a timeout once
        // the deadline has passed.
        reply
            .await
            .unwrap_or_else(|_| Outcome::Error("icmp: the socket's tasks stopped".into()))
    }

    /// Next sequence number for `ip`; wraps after 65536 probes to one address,
    /// far more than can be in flight within a timeout.
    fn next_sequence(&self, ip: IpAddr) -> u16 {
        let mut seqs = self.sequences.lock().unwrap_or_else(|p| p.into_inner());
        let seq = seqs.entry(ip).or_insert(0);
        *seq = seq.wrapping_add(1);
        *seq
    }

    /// Forgets the sequence counters of addresses no longer probed.
    pub fn retain(&self, keep: impl Fn(&IpAddr) -> bool) {
        let mut seqs = self.sequences.lock().unwrap_or_else(|p| p.into_inner());
        seqs.retain(|ip, _| keep(ip));
    }

    async fn channel(&self, ip: IpAddr) -> &Result<Arc<Channel>, String> {
        let (cell, v6) = match ip {
            IpAddr::V4(_) => (&self.v4, false),
            IpAddr::V6(_) => (&self.v6, true),
        };
        let ident = self.ident;
        cell.get_or_init(|| async move {
            Channel::open(v6, ident).map_err(|e| {
                tracing::error!(error = %e, v6, "cannot open an ICMP socket (unprivileged ICMP needs net.ipv4.ping_group_range to include the group, raw needs NET_RAW)");
                format!("icmp socket: {e}")
            })
        })
        .await
    }
}

/// An echo request: type, code, checksum, identifier, sequence, payload.
/// The kernel fills in the checksum (and the identifier) on datagram sockets
/// and for ICMPv6; a raw IPv4 socket sends it as it is.
fn echo_request(v6: bool, raw: bool, ident: u16, seq: u16) -> Vec<u8> {
    let mut p = Vec::with_capacity(8 + PAYLOAD.len());
    p.extend_from_slice(&[if v6 { 128 } else { 8 }, 0, 0, 0]);
    p.extend_from_slice(&ident.to_be_bytes());
    p.extend_from_slice(&seq.to_be_bytes());
    p.extend_from_slice(&PAYLOAD);
    if raw && !v6 {
        let sum = checksum(&p);
        p[2..4].copy_from_slice(&sum.to_be_bytes());
    }
    p
}

/// The Internet checksum (RFC 1071) of `data`.
fn checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = data
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// What a received message says about the probe it answers.
#[derive(Debug, PartialEq)]
struct Answer {
    /// The address the request went to.
    to: IpAddr,
    /// Its sequence number.
    seq: u16,
    /// `None` for an echo reply, else the ICMP error's description.
    error: Option<String>,
}

/// Decodes a message read from the socket (surge-ping's decoder). `None`
/// for anything that answers no probe of this process: a malformed packet,
/// an echo request, or (on a raw socket) another process's reply.
fn answer_of(message: &[u8], from: IpAddr, raw: bool, ident: u16) -> Option<Answer> {
    let kind = if raw { Type::RAW } else { Type::DGRAM };
    let (to, id, seq, error) = match from {
        IpAddr::V4(src) => {
            let p =
                Icmpv4Packet::decode(message, kind, src, std::net::Ipv4Addr::UNSPECIFIED).ok()?;
            let error = match (p.get_icmp_type().0, p.get_icmp_code().0) {
                (0, _) => None,
                (3, 3) => Some(PORT_UNREACHABLE.to_string()),
                (3, code) => Some(format!("destination unreachable (code {code})")),
                (11, _) => Some("time exceeded".to_string()),
                (t, code) => Some(format!("icmp type {t} code {code}")),
            };
            (
                IpAddr::V4(p.get_real_dest()),
                p.get_identifier().0,
                p.get_sequence().0,
                error,
            )
        }
        IpAddr::V6(src) => {
            let p = Icmpv6Packet::decode(message, src).ok()?;
            let error = match (p.get_icmpv6_type().0, p.get_icmpv6_code().0) {
                (129, _) => None,
                (1, 4) => Some(PORT_UNREACHABLE.to_string()),
                (1, code) => Some(format!("destination unreachable (code {code})")),
                (3, _) => Some("time exceeded".to_string()),
                (t, code) => Some(format!("icmpv6 type {t} code {code}")),
            };
            (
                IpAddr::V6(p.get_real_dest()),
                p.get_identifier().0,
                p.get_sequence().0,
                error,
            )
        }
    };
    if raw && id != ident {
        return None;
    }
    Some(Answer { to, seq, error })
}

/// The error of an ICMP port unreachable: a `refused` probe.
const PORT_UNREACHABLE: &str = "port unreachable";

/// One socket with its sender and receiver tasks.
struct Channel {
    socket: AsyncFd<Socket>,
    raw: bool,
    ident: u16,
    shared: Mutex<Shared>,
    /// A request was queued.
    queued: Notify,
    /// A deadline earlier than every other was queued.
    sooner: Notify,
    tasks: Mutex<Vec<AbortHandle>>,
}

#[derive(Default)]
struct Shared {
    /// Requests not sent yet, in order.
    outgoing: Vec<Request>,
    /// Probes waiting for their reply, by (address, sequence).
    waiting: HashMap<(IpAddr, u16), Waiter, FnvBuild>,
    /// Their deadlines, earliest first. An answered probe's entry goes with
    /// its waiter, so the receiver's timer is set only for probes still
    /// waiting: when every reply is in, the process sleeps until the next
    /// tick instead of waking at each answered probe's old deadline.
    deadlines: BTreeSet<(Instant, IpAddr, u16)>,
}

impl Shared {
    /// Takes the waiter of a probe, and its deadline.
    fn take(&mut self, key: (IpAddr, u16)) -> Option<Waiter> {
        let w = self.waiting.remove(&key)?;
        self.deadlines.remove(&(w.deadline, key.0, key.1));
        Some(w)
    }

    /// Answers every probe whose deadline has passed with a timeout and
    /// drops its waiter, so a target that never answers leaves nothing
    /// behind; returns the next deadline.
    fn expire(&mut self, now: Instant) -> Option<Instant> {
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

struct Request {
    to: IpAddr,
    seq: u16,
    packet: Vec<u8>,
}

struct Waiter {
    /// When the request was handed to the kernel (monotonic, and wall clock
    /// to compare with the kernel's receive time of the reply).
    sent: Option<(Instant, SystemTime)>,
    /// When the probe times out.
    deadline: Instant,
    reply: oneshot::Sender<Outcome>,
}

/// Removes a probe's waiter when its wait ends.
struct Forget<'a> {
    channel: &'a Channel,
    key: (IpAddr, u16),
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
    fn open(v6: bool, ident: u16) -> io::Result<Arc<Channel>> {
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
    fn stop(&self) {
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
    fn submit(
        &self,
        to: IpAddr,
        seq: u16,
        packet: Vec<u8>,
        timeout: Duration,
    ) -> oneshot::Receiver<Outcome> {
        let (tx, rx) = oneshot::channel();
        let deadline = Instant::now() + timeout;
        let mut s = self.lock();
        // A probe that still waits on this sequence number (65536 probes
        // to one address ago) is given up.
        s.take((to, seq));
        s.waiting.insert(
            (to, seq),
            Waiter {
                sent: None,
                deadline,
                reply: tx,
            },
        );
        let sooner = s
            .deadlines
            .first()
            .is_none_or(|(first, _, _)| deadline < *first);
        s.deadlines.insert((deadline, to, seq));
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
                            let _ = w.reply.send(super::io_outcome(&e));
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

/// Sends `requests` with one `sendmmsg`; returns how many the kernel took.
#[allow(
    unsafe_code,
    reason = "sendmmsg has no safe wrapper in socket2; every pointer handed to the kernel points into locals that outlive the call"
)]
fn send_batch(fd: RawFd, requests: &[Request]) -> io::Result<usize> {
    use nix::libc;
    let addrs: Vec<SockAddr> = requests
        .iter()
        .map(|r| SockAddr::from(SocketAddr::new(r.to, 0)))
        .collect();
    let mut iovs: Vec<libc::iovec> = requests
        .iter()
        .map(|r| libc::iovec {
            iov_base: r.packet.as_ptr() as *mut libc::c_void,
            iov_len: r.packet.len(),
        })
        .collect();
    let mut msgs: Vec<libc::mmsghdr> = addrs
        .iter()
        .zip(iovs.iter_mut())
        .map(|(a, iov)| {
            // SAFETY: mmsghdr is plain data; all-zero is a valid value.
            let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
            m.msg_hdr.msg_name = a.as_ptr() as *mut libc::c_void;
            m.msg_hdr.msg_namelen = a.len();
            m.msg_hdr.msg_iov = std::ptr::from_mut(iov);
            m.msg_hdr.msg_iovlen = 1;
            m
        })
        .collect();
    // SAFETY: `msgs` holds `msgs.len()` headers whose name and iovec pointers
    // point into `addrs`, `iovs` and the requests' packets, all alive until
    // the call returns; the kernel only reads them.
    let n = unsafe {
        libc::sendmmsg(
            fd,
            msgs.as_mut_ptr(),
            msgs.len() as libc::c_uint,
            libc::MSG_DONTWAIT,
        )
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// One message read by [`receive_batch`].
struct Received {
    /// Its length in its buffer.
    len: usize,
    /// Its sender.
    from: Option<IpAddr>,
    /// When the kernel received it (`SO_TIMESTAMPNS`).
    at: Option<SystemTime>,
}

/// Room for the control messages of one received message: one
/// `SCM_TIMESTAMPNS` (a `timespec` after its header), 8-byte aligned.
type Control = [u64; 8];

/// Reads the waiting messages into `bufs` with one `recvmmsg`; returns, in
/// order, each message's length, sender and kernel receive time.
#[allow(
    unsafe_code,
    reason = "recvmmsg and the CMSG macros have no safe wrapper in socket2; the kernel writes only into the buffers, address storage and control buffers passed, whose sizes it is given"
)]
fn receive_batch(fd: RawFd, bufs: &mut [[u8; MESSAGE]]) -> io::Result<Vec<Received>> {
    use nix::libc;
    let count = bufs.len();
    let mut names: Vec<SockAddrStorage> = (0..count).map(|_| SockAddrStorage::zeroed()).collect();
    let mut controls: Vec<Control> = vec![[0; 8]; count];
    let mut iovs: Vec<libc::iovec> = bufs
        .iter_mut()
        .map(|b| libc::iovec {
            iov_base: b.as_mut_ptr().cast(),
            iov_len: b.len(),
        })
        .collect();
    let mut msgs: Vec<libc::mmsghdr> = names
        .iter_mut()
        .zip(iovs.iter_mut())
        .zip(controls.iter_mut())
        .map(|((name, iov), control)| {
            // SAFETY: mmsghdr is plain data; all-zero is a valid value.
            let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
            m.msg_hdr.msg_name = std::ptr::from_mut(name).cast();
            m.msg_hdr.msg_namelen = name.size_of();
            m.msg_hdr.msg_iov = std::ptr::from_mut(iov);
            m.msg_hdr.msg_iovlen = 1;
            m.msg_hdr.msg_control = control.as_mut_ptr().cast();
            m.msg_hdr.msg_controllen = std::mem::size_of::<Control>();
            m
        })
        .collect();
    // SAFETY: every header points at one buffer, one sockaddr_storage and one
    // control buffer of the lengths it states, all alive and not otherwise
    // borrowed until the call returns.
    let n = unsafe {
        libc::recvmmsg(
            fd,
            msgs.as_mut_ptr(),
            count as libc::c_uint,
            libc::MSG_DONTWAIT,
            std::ptr::null_mut(),
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut heads = Vec::with_capacity(n as usize);
    for m in msgs.iter().take(n as usize) {
        let mut at = None;
        // SAFETY: the kernel wrote `msg_controllen` bytes of control messages
        // into this header's control buffer; the CMSG macros stay within it,
        // and an SCM_TIMESTAMPNS message carries a timespec.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&raw const m.msg_hdr);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                    let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                    at = Some(
                        SystemTime::UNIX_EPOCH + Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32),
                    );
                }
                c = libc::CMSG_NXTHDR(&raw const m.msg_hdr, c);
            }
        }
        heads.push((m.msg_len, m.msg_hdr.msg_namelen, at));
    }
    drop(msgs);
    let mut out = Vec::with_capacity(heads.len());
    for ((len, namelen, at), name) in heads.into_iter().zip(names) {
        // SAFETY: the kernel wrote a socket address of `namelen` bytes into
        // this storage.
        let addr = unsafe { SockAddr::new(name, namelen) };
        out.push(Received {
            len: (len as usize).min(MESSAGE),
            from: addr.as_socket().map(|a| a.ip()),
            at,
        });
    }
    Ok(out)
}

/// Kernel-side filters for raw ICMP sockets.
///
/// A raw ICMP socket receives a copy of every ICMP message the host gets,
/// including the echo requests of every ping on the machine (and, on
/// loopback, its own). Letting only echo replies and the errors that can
/// answer a probe through halves the packets read per probe on loopback and
/// keeps unrelated ICMP traffic out of the pinger.
mod filter {
    use std::io;
    use std::os::unix::io::RawFd;

    /// `SOL_RAW`/`ICMP_FILTER` (linux/icmp.h): a 32-bit mask, a set bit drops
    /// that ICMPv4 type.
    const SOL_RAW: i32 = 255;
    const ICMP_FILTER: i32 = 1;
    /// `IPPROTO_ICMPV6`/`ICMP6_FILTER` (linux/icmpv6.h): 256 bits, a set bit
    /// drops that ICMPv6 type.
    const IPPROTO_ICMPV6: i32 = 58;
    const ICMP6_FILTER: i32 = 1;

    /// ICMPv4 types let through: echo reply, destination unreachable, time
    /// exceeded.
    const V4_PASS: [u8; 3] = [0, 3, 11];
    /// ICMPv6 types let through: destination unreachable, time exceeded,
    /// echo reply.
    const V6_PASS: [u8; 3] = [1, 3, 129];

    /// The ICMPv4 filter mask. Pure.
    pub fn v4_mask() -> u32 {
        V4_PASS.iter().fold(u32::MAX, |m, t| m & !(1 << t))
    }

    /// The ICMPv6 filter words. Pure.
    pub fn v6_words() -> [u32; 8] {
        let mut w = [u32::MAX; 8];
        for t in V6_PASS {
            w[usize::from(t >> 5)] &= !(1 << (t & 31));
        }
        w
    }

    /// Sets the filter on raw socket `fd`.
    #[allow(
        unsafe_code,
        reason = "ICMP_FILTER and ICMP6_FILTER have no safe wrapper in socket2 or nix; the option value is a plain local array of the size passed"
    )]
    pub fn replies_only(fd: RawFd, v6: bool) -> io::Result<()> {
        let v4 = v4_mask();
        let v6w = v6_words();
        let (level, name, ptr, len) = if v6 {
            (
                IPPROTO_ICMPV6,
                ICMP6_FILTER,
                v6w.as_ptr().cast::<nix::libc::c_void>(),
                std::mem::size_of_val(&v6w),
            )
        } else {
            (
                SOL_RAW,
                ICMP_FILTER,
                std::ptr::from_ref(&v4).cast::<nix::libc::c_void>(),
                std::mem::size_of_val(&v4),
            )
        };
        // SAFETY: `ptr` points to `len` initialised bytes that live until the
        // call returns; the kernel copies them.
        let rc =
            unsafe { nix::libc::setsockopt(fd, level, name, ptr, len as nix::libc::socklen_t) };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_socket_filters_pass_only_replies_and_errors() {
        let m = filter::v4_mask();
        for passed in [0, 3, 11] {
            assert_eq!(m & (1 << passed), 0, "type {passed} passes");
        }
        assert_ne!(m & (1 << 8), 0, "echo requests are dropped");
        let w = filter::v6_words();
        let blocked = |t: usize| w[t / 32] & (1 << (t % 32)) != 0;
        assert!(!blocked(129) && !blocked(1) && !blocked(3));
        assert!(blocked(128), "echo requests are dropped");
        assert!(blocked(135), "neighbour solicitations are dropped");
    }

    #[test]
    fn sequences_are_counted_per_address() {
        let icmp = Icmp::default();
        let a: IpAddr = "127.0.0.1".parse().unwrap();
        let b: IpAddr = "127.0.0.2".parse().unwrap();
        assert_eq!(icmp.next_sequence(a), 1);
        assert_eq!(icmp.next_sequence(a), 2);
        assert_eq!(icmp.next_sequence(b), 1);
        icmp.retain(|ip| *ip == b);
        assert_eq!(icmp.next_sequence(a), 1);
        assert_eq!(icmp.next_sequence(b), 2);
    }

    #[test]
    fn an_answered_probe_takes_its_deadline_with_it() {
        let mut s = Shared::default();
        let now = Instant::now();
        let mut replies = Vec::new();
        for (last, seq) in [(1u8, 7u16), (2, 8)] {
            let to = IpAddr::from([127, 0, 0, last]);
            let (tx, rx) = oneshot::channel();
            let deadline = now + Duration::from_millis(u64::from(seq));
            s.waiting.insert(
                (to, seq),
                Waiter {
                    sent: None,
                    deadline,
                    reply: tx,
                },
            );
            s.deadlines.insert((deadline, to, seq));
            replies.push(rx);
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
            let (tx, rx) = oneshot::channel();
            let deadline = now + Duration::from_millis(u64::from(seq));
            s.waiting.insert(
                (to, seq),
                Waiter {
                    sent: None,
                    deadline,
                    reply: tx,
                },
            );
            s.deadlines.insert((deadline, to, seq));
            replies.push(rx);
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

    #[test]
    fn a_raw_echo_request_carries_a_valid_checksum() {
        let p = echo_request(false, true, 0x1234, 7);
        assert_eq!(&p[..2], &[8, 0]);
        assert_eq!(&p[4..8], &[0x12, 0x34, 0, 7]);
        assert_eq!(&p[8..], &PAYLOAD);
        assert_eq!(checksum(&p), 0, "a packet with its checksum sums to zero");
        // The kernel fills it in on datagram sockets and for ICMPv6.
        assert_eq!(&echo_request(false, false, 1, 7)[2..4], &[0, 0]);
        assert_eq!(echo_request(true, true, 1, 7)[0], 128);
    }

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

    /// An IPv4 packet from `src` to `dst` carrying `icmp`.
    fn ipv4(src: [u8; 4], dst: [u8; 4], icmp: &[u8]) -> Vec<u8> {
        let mut h = vec![0x45, 0, 0, 0, 0, 0, 0, 0, 64, 1, 0, 0];
        h[2..4].copy_from_slice(&((20 + icmp.len()) as u16).to_be_bytes());
        h.extend_from_slice(&src);
        h.extend_from_slice(&dst);
        h.extend_from_slice(icmp);
        h
    }

    #[test]
    fn replies_and_errors_are_matched_to_the_probe_they_answer() {
        let from: IpAddr = "10.0.0.9".parse().unwrap();
        let mut reply = echo_request(false, true, 0x1234, 7);
        reply[0] = 0;
        // Datagram socket: the ICMP message alone; any identifier.
        assert_eq!(
            answer_of(&reply, from, false, 1),
            Some(Answer {
                to: from,
                seq: 7,
                error: None
            })
        );
        // Raw socket: with the IP header, and only this process's identifier.
        let raw = ipv4([10, 0, 0, 9], [10, 0, 0, 1], &reply);
        assert_eq!(answer_of(&raw, from, true, 0x1234).unwrap().seq, 7);
        assert_eq!(answer_of(&raw, from, true, 0x4321), None);
        // A router's "host unreachable" quoting the request to 10.0.0.9.
        let request = echo_request(false, true, 0x1234, 8);
        let quoted = ipv4([10, 0, 0, 1], [10, 0, 0, 9], &request);
        let mut err = vec![3, 1, 0, 0, 0, 0, 0, 0];
        err.extend_from_slice(&quoted);
        let router: IpAddr = "10.0.0.254".parse().unwrap();
        let raw_err = ipv4([10, 0, 0, 254], [10, 0, 0, 1], &err);
        assert_eq!(
            answer_of(&raw_err, router, true, 0x1234),
            Some(Answer {
                to: from,
                seq: 8,
                error: Some("destination unreachable (code 1)".into())
            })
        );
        // Garbage and echo requests answer nothing.
        assert_eq!(answer_of(&[0xff; 3], from, false, 1), None);
        assert_eq!(answer_of(&request, from, false, 1), None);
    }
}
