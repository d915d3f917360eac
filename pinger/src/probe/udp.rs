//! UDP ping: a reply datagram is success; ICMP port unreachable, seen as
//! `ECONNREFUSED` on the connected socket, is `refused` at once; silence is
//! `timeout`.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::net::UdpSocket;

use crate::round::Outcome;

/// The datagram sent: a DNS query for the root's NS records (id 0x6b63,
/// recursion desired). A DNS server answers it, an echo server echoes it, and
/// any other service sees a harmless 17-byte packet.
pub const PAYLOAD: [u8; 17] = [
    0x6b, 0x63, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // header
    0x00, // root name
    0x00, 0x02, // QTYPE NS
    0x00, 0x01, // QCLASS IN
];

/// Sends one datagram to `addr` and waits for any reply.
pub async fn probe(addr: SocketAddr, timeout: Duration) -> Outcome {
    let bind = SocketAddr::new(super::any_of_family(addr.ip()), 0);
    let socket = match UdpSocket::bind(bind).await {
        Ok(s) => s,
        Err(e) => return Outcome::Error(format!("socket: {e}")),
    };
    if let Err(e) = socket.connect(addr).await {
        return super::io_outcome(&e);
    }
    let start = Instant::now();
    if let Err(e) = socket.send(&PAYLOAD).await {
        return super::io_outcome(&e);
    }
    let mut buf = [0u8; 512];
    match tokio::time::timeout(timeout, socket.recv(&mut buf)).await {
        Ok(Ok(_)) => Outcome::Ok(start.elapsed()),
        Ok(Err(e)) => super::io_outcome(&e),
        Err(_) => Outcome::Timeout,
    }
}
