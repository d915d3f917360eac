//! ICMP echo over one socket per address family, shared by all targets.
//!
//! surge-ping opens an unprivileged `SOCK_DGRAM` ICMP socket first and falls
//! back to a raw socket (needs NET_RAW). On a datagram socket the kernel
//! rewrites the ICMP identifier, so replies are told apart by (address,
//! sequence) only: every address gets its own sequence counter here, so two
//! probes in flight to one address never share a sequence number and a reply
//! is never matched to the wrong probe.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Duration;

use surge_ping::{Client, Config, PingIdentifier, PingSequence, SurgeError, ICMP};
use tokio::sync::OnceCell;

use crate::round::Outcome;

/// Payload of every echo request.
const PAYLOAD: [u8; 16] = *b"kube-combo-ping\0";

/// The shared ICMP clients.
pub struct Icmp {
    v4: OnceCell<Result<Client, String>>,
    v6: OnceCell<Result<Client, String>>,
    sequences: Mutex<HashMap<IpAddr, u16>>,
    ident: PingIdentifier,
}

impl Default for Icmp {
    fn default() -> Self {
        Icmp {
            v4: OnceCell::new(),
            v6: OnceCell::new(),
            sequences: Mutex::new(HashMap::new()),
            // Only raw sockets use it; the kernel picks it on datagram sockets.
            ident: PingIdentifier((std::process::id() & 0xffff) as u16),
        }
    }
}

impl Icmp {
    /// Sends one echo request to `ip` and waits for its reply.
    pub async fn ping(&self, ip: IpAddr, timeout: Duration) -> Outcome {
        let client = match self.client(ip).await {
            Ok(c) => c,
            Err(e) => return Outcome::Error(e.clone()),
        };
        let mut pinger = client.pinger(ip, self.ident).await;
        pinger.timeout(timeout);
        match pinger.ping(self.next_sequence(ip), &PAYLOAD).await {
            Ok((_, rtt)) => Outcome::Ok(rtt),
            Err(SurgeError::Timeout { .. }) => Outcome::Timeout,
            Err(SurgeError::IOError(e)) => super::io_outcome(&e),
            Err(e) => Outcome::Error(e.to_string()),
        }
    }

    /// Next sequence number for `ip`; wraps after 65536 probes to one address,
    /// far more than can be in flight within a timeout.
    fn next_sequence(&self, ip: IpAddr) -> PingSequence {
        let mut seqs = self.sequences.lock().unwrap_or_else(|p| p.into_inner());
        let seq = seqs.entry(ip).or_insert(0);
        *seq = seq.wrapping_add(1);
        PingSequence(*seq)
    }

    /// Forgets the sequence counters of addresses no longer probed.
    pub fn retain(&self, keep: impl Fn(&IpAddr) -> bool) {
        let mut seqs = self.sequences.lock().unwrap_or_else(|p| p.into_inner());
        seqs.retain(|ip, _| keep(ip));
    }

    async fn client(&self, ip: IpAddr) -> &Result<Client, String> {
        let (cell, kind) = match ip {
            IpAddr::V4(_) => (&self.v4, ICMP::V4),
            IpAddr::V6(_) => (&self.v6, ICMP::V6),
        };
        cell.get_or_init(|| async move {
            let config = Config::builder().kind(kind).build();
            let client = Client::new(&config).map_err(|e| {
                tracing::error!(error = %e, family = ?kind, "cannot open an ICMP socket (unprivileged ICMP needs net.ipv4.ping_group_range to include the group, raw needs NET_RAW)");
                format!("icmp socket: {e}")
            })?;
            let socket = client.get_socket();
            if socket.get_type() == socket2::Type::RAW {
                if let Err(e) = filter::replies_only(socket.get_native_sock(), ip.is_ipv6()) {
                    tracing::warn!(error = %e, "cannot set an ICMP filter on the raw socket; every ICMP message will be read");
                }
            }
            Ok(client)
        })
        .await
    }
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
        assert_eq!(icmp.next_sequence(a), PingSequence(1));
        assert_eq!(icmp.next_sequence(a), PingSequence(2));
        assert_eq!(icmp.next_sequence(b), PingSequence(1));
        icmp.retain(|ip| *ip == b);
        assert_eq!(icmp.next_sequence(a), PingSequence(1));
        assert_eq!(icmp.next_sequence(b), PingSequence(2));
    }
}
