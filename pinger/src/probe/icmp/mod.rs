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
//!
//! The pieces: `packet` builds echo requests and decodes what comes back
//! (pure); `waiters` is the table of probes waiting for their reply, with
//! their deadlines; `channel` opens a socket and runs its sender and
//! receiver tasks over that table; `mmsg` is the batched system calls and
//! `filter` the raw socket's kernel-side filter.

mod channel;
mod filter;
mod mmsg;
mod packet;
mod waiters;

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use combo_api::hash::FnvBuild;
use tokio::sync::OnceCell;

use crate::round::Outcome;

use self::channel::{Channel, Forget};
use self::packet::echo_request;

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
