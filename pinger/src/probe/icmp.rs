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
            Client::new(&config).map_err(|e| {
                tracing::error!(error = %e, family = ?kind, "cannot open an ICMP socket (unprivileged ICMP needs net.ipv4.ping_group_range to include the group, raw needs NET_RAW)");
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
        assert_eq!(icmp.next_sequence(a), PingSequence(1));
        assert_eq!(icmp.next_sequence(a), PingSequence(2));
        assert_eq!(icmp.next_sequence(b), PingSequence(1));
        icmp.retain(|ip| *ip == b);
        assert_eq!(icmp.next_sequence(a), PingSequence(1));
        assert_eq!(icmp.next_sequence(b), PingSequence(2));
    }
}
