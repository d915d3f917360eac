//! ICMP echo over one socket per address family, shared by all targets, with
//! sends and receives batched (docs/pinger.md, "Probes").
//!
//! The socket is an unprivileged `SOCK_DGRAM` ICMP socket when the group is
//! in `net.ipv4.ping_group_range`, else a raw socket (needs NET_RAW). On a
//! datagram socket the kernel rewrites the ICMP identifier, so replies are
//! told apart by sequence number (and checked against the address): the
//! socket hands out every sequence number to one waiting probe at a time
//! (`flights`), so a reply is never matched to the wrong probe.
//!
//! The engine's scheduler queues the requests of a tick, sends them with
//! one `sendmmsg` per 64, and reads every reply waiting with one
//! `recvmmsg`: targets whose probes fall on the same tick cost one system
//! call each way, no task and no timer of their own. Replies are decoded by
//! surge-ping.
//!
//! The pieces: `packet` builds echo requests and decodes what comes back
//! (pure); `flights` is the table of probes waiting for their reply (pure);
//! `socket` opens a socket, sends its queue and reads its replies; `mmsg`
//! is the batched system calls and `filter` the raw socket's kernel-side
//! filter.

mod filter;
mod flights;
mod mmsg;
mod packet;
mod socket;

use std::net::IpAddr;

pub use self::flights::Flight;
pub use self::socket::{round_trip, Reply, Socket};

/// The ICMP sockets, opened on first use; owned by the engine's scheduler.
pub struct Icmp {
    v4: Option<Result<Socket, String>>,
    v6: Option<Result<Socket, String>>,
    ident: u16,
}

impl Default for Icmp {
    fn default() -> Self {
        Icmp {
            v4: None,
            v6: None,
            // Only raw sockets use it; the kernel picks it on datagram sockets.
            ident: (std::process::id() & 0xffff) as u16,
        }
    }
}

impl Icmp {
    /// The socket of `ip`'s family, opened on first use; the error of
    /// opening it, for every probe, when it cannot be.
    pub fn socket(&mut self, ip: IpAddr) -> Result<&mut Socket, &str> {
        let v6 = ip.is_ipv6();
        let cell = if v6 { &mut self.v6 } else { &mut self.v4 };
        let ident = self.ident;
        let s = cell.get_or_insert_with(|| {
            Socket::open(v6, ident).map_err(|e| {
                tracing::error!(error = %e, v6, "cannot open an ICMP socket (unprivileged ICMP needs net.ipv4.ping_group_range to include the group, raw needs NET_RAW)");
                format!("icmp socket: {e}")
            })
        });
        s.as_mut().map_err(|e| e.as_str())
    }

    /// The open sockets, IPv4 first.
    pub fn open(&mut self) -> (Option<&mut Socket>, Option<&mut Socket>) {
        (
            self.v4.as_mut().and_then(|s| s.as_mut().ok()),
            self.v6.as_mut().and_then(|s| s.as_mut().ok()),
        )
    }
}
