//! The four probes. Each returns an [`Outcome`] and never panics or errors out:
//! every failure is a result of the probe.

pub mod dns;
pub mod icmp;
pub mod tcp;
pub mod udp;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use combo_api::pinger::Host;

use crate::round::Outcome;
use crate::targets::{Kind, Target};

/// Everything a probe that runs as a task of its own needs that outlives
/// one probe: the DNS resolver. ICMP echoes are the engine's own
/// ([`icmp`]).
#[derive(Clone)]
pub struct Probers {
    /// DNS resolver of the DNS probes.
    pub dns: Arc<dns::Dns>,
}

/// A target with its address resolved for this round.
#[derive(Clone, Debug)]
pub enum Resolved {
    /// ICMP, TCP and UDP targets: the address to probe.
    Addr(SocketAddr),
    /// DNS targets: the name to look up.
    Name(String),
}

/// Resolves a target's host for one round. A name that does not resolve makes
/// every probe of the round an `error` (the round counts as lost).
pub async fn resolve(target: &Target, timeout: Duration) -> Result<Resolved, Outcome> {
    let port = target.port.unwrap_or(0);
    match (&target.host, target.kind) {
        (Host::Name(n), Kind::Dns) => Ok(Resolved::Name(n.clone())),
        (Host::Ip(ip), _) => Ok(Resolved::Addr(SocketAddr::new(*ip, port))),
        (Host::Name(n), _) => {
            let lookup = tokio::net::lookup_host((n.as_str(), port));
            match tokio::time::timeout(timeout, lookup).await {
                Err(_) => Err(Outcome::Error(format!("resolve {n}: timeout"))),
                Ok(Err(e)) => Err(Outcome::Error(format!("resolve {n}: {e}"))),
                Ok(Ok(mut addrs)) => addrs
                    .next()
                    .map(Resolved::Addr)
                    .ok_or_else(|| Outcome::Error(format!("resolve {n}: no address"))),
            }
        }
    }
}

impl Probers {
    /// Runs one TCP, UDP or DNS probe against `to` (ICMP: see [`icmp`]).
    pub async fn probe(&self, kind: Kind, to: &Resolved, timeout: Duration) -> Outcome {
        match (kind, to) {
            (Kind::Icmp, _) => Outcome::Error("icmp probes are the engine's".into()),
            (Kind::Tcp, Resolved::Addr(a)) => tcp::probe(*a, timeout).await,
            (Kind::Udp, Resolved::Addr(a)) => udp::probe(*a, timeout).await,
            (Kind::Dns, Resolved::Name(n)) => self.dns.lookup(n, timeout).await,
            (_, _) => Outcome::Error("target and probe kind do not match".into()),
        }
    }
}

/// Unspecified address of the family of `ip`, for binding.
pub(crate) fn any_of_family(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
        IpAddr::V6(_) => IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED),
    }
}

/// Maps an I/O error to a probe outcome: refused stays distinct, and an
/// error keeps the kernel's words with what they most likely mean on a
/// node (see [`cause`]).
pub(crate) fn io_outcome(e: &std::io::Error) -> Outcome {
    match e.kind() {
        std::io::ErrorKind::ConnectionRefused => Outcome::Refused,
        std::io::ErrorKind::TimedOut => Outcome::Timeout,
        _ => Outcome::Error(match cause(e) {
            Some(cause) => format!("{e}: {cause}"),
            None => e.to_string(),
        }),
    }
}

/// The usual cause of a send or connect refused with `e`, for the errnos
/// whose own words do not name it: a `blackhole` route gives EINVAL, a
/// `prohibit` route EACCES, and a firewall rule dropping the outgoing
/// packet (nftables or iptables `drop` in output) EPERM. "likely", as
/// these errnos have rarer causes too.
fn cause(e: &std::io::Error) -> Option<&'static str> {
    use nix::errno::Errno;
    match Errno::from_raw(e.raw_os_error()?) {
        Errno::EINVAL => Some("likely a blackhole route to it"),
        Errno::EACCES => Some("likely a prohibit route to it"),
        Errno::EPERM => Some("likely a firewall rule on this node dropping it"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Error;

    #[test]
    fn io_errors_map_to_outcomes_with_their_likely_cause() {
        let os = |n: nix::errno::Errno| io_outcome(&Error::from_raw_os_error(n as i32));
        assert_eq!(os(nix::errno::Errno::ECONNREFUSED), Outcome::Refused);
        assert_eq!(os(nix::errno::Errno::ETIMEDOUT), Outcome::Timeout);
        assert_eq!(
            os(nix::errno::Errno::EPERM),
            Outcome::Error(
                "Operation not permitted (os error 1): likely a firewall rule on this node dropping it"
                    .into()
            )
        );
        assert_eq!(
            os(nix::errno::Errno::EHOSTUNREACH),
            Outcome::Error("No route to host (os error 113)".into())
        );
        assert_eq!(
            io_outcome(&Error::other("odd")),
            Outcome::Error("odd".into())
        );
    }
}
