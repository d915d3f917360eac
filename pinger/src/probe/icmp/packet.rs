//! The ICMP messages of a probe, built and decoded without a socket: the
//! echo request sent, and what a received echo reply or ICMP error says
//! about the probe it answers. Pure.

use std::net::IpAddr;

use socket2::Type;
use surge_ping::{Icmpv4Packet, Icmpv6Packet};

/// Payload of every echo request.
pub(super) const PAYLOAD: [u8; 16] = *b"kube-combo-ping\0";

/// The size of an echo request: 8 bytes of header and the payload.
pub(super) const REQUEST: usize = 8 + PAYLOAD.len();

/// An echo request: type, code, checksum, identifier, sequence, payload.
/// The kernel fills in the checksum (and the identifier) on datagram sockets
/// and for ICMPv6; a raw IPv4 socket sends it as it is.
pub(super) fn echo_request(v6: bool, raw: bool, ident: u16, seq: u16) -> [u8; REQUEST] {
    let mut p = [0; REQUEST];
    p[0] = if v6 { 128 } else { 8 };
    p[4..6].copy_from_slice(&ident.to_be_bytes());
    p[6..8].copy_from_slice(&seq.to_be_bytes());
    p[8..].copy_from_slice(&PAYLOAD);
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
pub(super) struct Answer {
    /// The address the request went to.
    pub(super) to: IpAddr,
    /// Its sequence number.
    pub(super) seq: u16,
    /// `None` for an echo reply, else the ICMP error's description.
    pub(super) error: Option<String>,
}

/// Decodes a message read from the socket (surge-ping's decoder). `None`
/// for anything that answers no probe of this process: a malformed packet,
/// an echo request, or (on a raw socket) another process's reply.
pub(super) fn answer_of(message: &[u8], from: IpAddr, raw: bool, ident: u16) -> Option<Answer> {
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
pub(super) const PORT_UNREACHABLE: &str = "port unreachable";

#[cfg(test)]
mod tests {
    use super::*;

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
