//! The floor of a probe's CPU cost, for `tests/bench/pinger.sh`
//! (docs/benchmarks.md, "Pinger against fping"): the same ICMP echoes as
//! combo-pinger sends, over the same kind of socket, batched the same way,
//! with nothing else. Not part of the pinger.
//!
//!     probe_floor TARGETS_FILE SECONDS
//!
//! One IPv4 address a line. Each target gets one echo request a second; the
//! targets are spread evenly over the second on the pinger's 10 ms grid, and
//! the requests of one tick leave in one `sendmmsg` of at most 64, as the
//! pinger's do. Between ticks the process waits in `ppoll` on the socket and
//! reads whatever arrived with `recvmmsg` of at most 64. No RTT, no
//! timestamps, no per-probe state: a reply is counted when it is an echo
//! reply. The socket is an unprivileged ICMP datagram socket when
//! `net.ipv4.ping_group_range` allows it, else a raw socket with the same
//! kernel filter the pinger sets (echo replies and errors only).
//!
//! Prints `sent S answered A socket dgram|raw` after a last second of
//! reading.

#![allow(
    unsafe_code,
    reason = "sendmmsg, recvmmsg, ppoll, clock_gettime and ICMP_FILTER have no safe wrappers that leave the loop as bare as the benchmark needs; every pointer handed to the kernel points into locals that outlive the call"
)]

use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::Duration;

use nix::libc;
use socket2::{Domain, Protocol, Socket, Type};

/// The pinger's tick and batch (docs/pinger.md, "Rounds, loss and RTT" and
/// "Probes").
const TICK: Duration = Duration::from_millis(10);
const BATCH: usize = 64;
const TICKS_PER_SECOND: usize = 100;
/// An echo request of the pinger's size: 8 bytes of header, 16 of payload.
const REQUEST: usize = 24;
const MESSAGE: usize = 576;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(file), Some(seconds)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: probe_floor TARGETS_FILE SECONDS");
        std::process::exit(2);
    };
    let seconds: usize = seconds.parse().expect("SECONDS is a number");
    let text = std::fs::read_to_string(file).expect("the targets file is readable");
    let targets: Vec<Ipv4Addr> = text
        .split_whitespace()
        .map(|l| l.parse().expect("one IPv4 address a line"))
        .collect();
    let (socket, raw) = open();
    let fd = socket.as_raw_fd();

    // The targets of each tick of the second, spread evenly.
    let n = targets.len();
    let mut slots: Vec<Vec<usize>> = vec![Vec::new(); TICKS_PER_SECOND];
    for i in 0..n {
        slots[i * TICKS_PER_SECOND / n.max(1)].push(i);
    }
    let addrs: Vec<libc::sockaddr_in> = targets.iter().map(|ip| sockaddr(*ip)).collect();
    let mut packets = vec![[0u8; REQUEST]; n];
    let ident = (std::process::id() & 0xffff) as u16;
    let mut sent = 0u64;
    let mut answered = 0u64;
    let mut bufs = vec![[0u8; MESSAGE]; BATCH];

    let start = now();
    for tick in 0..seconds * TICKS_PER_SECOND {
        let at = start + TICK * tick as u32;
        answered += wait_until(fd, at, raw, &mut bufs);
        let seq = (tick / TICKS_PER_SECOND + 1) as u16;
        for chunk in slots[tick % TICKS_PER_SECOND].chunks(BATCH) {
            for &i in chunk {
                echo_request(&mut packets[i], ident, seq, raw);
            }
            sent += send(fd, chunk, &addrs, &packets) as u64;
        }
        answered += drain(fd, raw, &mut bufs);
    }
    answered += wait_until(fd, now() + Duration::from_secs(1), raw, &mut bufs);
    println!(
        "sent {sent} answered {answered} socket {}",
        if raw { "raw" } else { "dgram" }
    );
}

/// An ICMP datagram socket, else a raw one passing only echo replies and
/// errors; and whether it is raw.
fn open() -> (OwnedFd, bool) {
    let (socket, raw) = match Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::ICMPV4)) {
        Ok(s) => (s, false),
        Err(_) => (
            Socket::new(Domain::IPV4, Type::RAW, Some(Protocol::ICMPV4))
                .expect("an ICMP socket (datagram or raw)"),
            true,
        ),
    };
    socket.set_nonblocking(true).expect("non-blocking");
    if raw {
        // SOL_RAW/ICMP_FILTER: a set bit drops that type; pass 0, 3, 11.
        let mask: u32 = !((1 << 0) | (1 << 3) | (1 << 11));
        // SAFETY: the option value is a local u32 of the length given.
        let rc = unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                255,
                1,
                std::ptr::from_ref(&mask).cast(),
                4,
            )
        };
        assert_eq!(rc, 0, "ICMP_FILTER");
    }
    (socket.into(), raw)
}

fn sockaddr(ip: Ipv4Addr) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: 0,
        sin_addr: libc::in_addr {
            s_addr: u32::from(ip).to_be(),
        },
        sin_zero: [0; 8],
    }
}

/// Writes an echo request with `seq` into `p`; with its checksum on a raw
/// socket (the kernel fills it in on a datagram socket).
fn echo_request(p: &mut [u8; REQUEST], ident: u16, seq: u16, raw: bool) {
    p[0] = 8;
    p[2..4].copy_from_slice(&[0, 0]);
    p[4..6].copy_from_slice(&ident.to_be_bytes());
    p[6..8].copy_from_slice(&seq.to_be_bytes());
    p[8..].copy_from_slice(b"kube-combo-ping\0");
    if raw {
        let mut sum: u32 = p
            .chunks(2)
            .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
            .sum();
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        p[2..4].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    }
}

/// Sends the requests of `targets` with one `sendmmsg`; returns how many
/// the kernel took.
fn send(
    fd: i32,
    targets: &[usize],
    addrs: &[libc::sockaddr_in],
    packets: &[[u8; REQUEST]],
) -> usize {
    let mut iovs: [libc::iovec; BATCH] = [libc::iovec {
        iov_base: std::ptr::null_mut(),
        iov_len: 0,
    }; BATCH];
    // SAFETY: mmsghdr is plain data; all-zero is a valid value.
    let mut msgs: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
    for (k, &i) in targets.iter().enumerate() {
        iovs[k] = libc::iovec {
            iov_base: packets[i].as_ptr() as *mut libc::c_void,
            iov_len: REQUEST,
        };
        let h = &mut msgs[k].msg_hdr;
        h.msg_name = std::ptr::from_ref(&addrs[i]) as *mut libc::c_void;
        h.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        h.msg_iov = std::ptr::from_mut(&mut iovs[k]);
        h.msg_iovlen = 1;
    }
    // SAFETY: the first `targets.len()` headers point into `addrs`, `iovs`
    // and `packets`, alive until the call returns; the kernel only reads them.
    let n = unsafe {
        libc::sendmmsg(
            fd,
            msgs.as_mut_ptr(),
            targets.len() as libc::c_uint,
            libc::MSG_DONTWAIT,
        )
    };
    usize::try_from(n).unwrap_or(0)
}

/// Reads every waiting message; returns the echo replies among them.
fn drain(fd: i32, raw: bool, bufs: &mut [[u8; MESSAGE]]) -> u64 {
    let mut replies = 0;
    loop {
        let mut iovs: [libc::iovec; BATCH] = [libc::iovec {
            iov_base: std::ptr::null_mut(),
            iov_len: 0,
        }; BATCH];
        // SAFETY: mmsghdr is plain data; all-zero is a valid value.
        let mut msgs: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
        for ((m, iov), b) in msgs.iter_mut().zip(iovs.iter_mut()).zip(bufs.iter_mut()) {
            *iov = libc::iovec {
                iov_base: b.as_mut_ptr().cast(),
                iov_len: MESSAGE,
            };
            m.msg_hdr.msg_iov = std::ptr::from_mut(iov);
            m.msg_hdr.msg_iovlen = 1;
        }
        // SAFETY: every header points at one buffer of the length it states,
        // alive and not otherwise borrowed until the call returns.
        let n = unsafe {
            libc::recvmmsg(
                fd,
                msgs.as_mut_ptr(),
                BATCH as libc::c_uint,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        let Ok(n) = usize::try_from(n) else {
            return replies;
        };
        for (m, b) in msgs.iter().zip(bufs.iter()).take(n) {
            // A raw socket's message starts with the IP header.
            let at = if raw { usize::from(b[0] & 0x0f) * 4 } else { 0 };
            replies += u64::from(m.msg_len as usize > at && b[at] == 0);
        }
        if n < BATCH {
            return replies;
        }
    }
}

fn now() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a local timespec the kernel writes.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &raw mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Waits in `ppoll` until `at`, reading what arrives meanwhile; returns the
/// echo replies read.
fn wait_until(fd: i32, at: Duration, raw: bool, bufs: &mut [[u8; MESSAGE]]) -> u64 {
    let mut replies = 0;
    loop {
        let left = at.saturating_sub(now());
        if left.is_zero() {
            return replies;
        }
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let ts = libc::timespec {
            tv_sec: left.as_secs() as libc::time_t,
            tv_nsec: libc::c_long::from(left.subsec_nanos() as i32),
        };
        // SAFETY: one pollfd and one timespec, locals alive for the call.
        let ready = unsafe { libc::ppoll(&raw mut pfd, 1, &raw const ts, std::ptr::null()) };
        if ready > 0 {
            replies += drain(fd, raw, bufs);
        }
    }
}
