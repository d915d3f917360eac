//! Small servers the tests run on loopback (or inside a test's own network
//! namespace): a UDP echo, and a DNS responder with canned answers.

#![allow(dead_code, reason = "each test file uses a different subset")]

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::thread;
use std::time::Duration;

/// Starts a UDP server on `bind` that answers each datagram with
/// `respond(datagram)` (nothing for `None`). It stops after `max` datagrams,
/// or 30 s without one, so it never outlives the test by much.
fn udp_server(
    bind: SocketAddr,
    max: usize,
    respond: impl Fn(&[u8]) -> Option<Vec<u8>> + Send + 'static,
) -> SocketAddr {
    let sock = UdpSocket::bind(bind).expect("bind udp server");
    let addr = sock.local_addr().unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    thread::spawn(move || {
        let mut buf = [0u8; 2048];
        for _ in 0..max {
            let Ok((n, from)) = sock.recv_from(&mut buf) else {
                return;
            };
            if let Some(reply) = respond(&buf[..n]) {
                let _ = sock.send_to(&reply, from);
            }
        }
    });
    addr
}

/// Starts a UDP server on `bind` that echoes every datagram after `delay`.
/// It stops after `max` datagrams, so it never outlives the test by much.
pub fn udp_echo(bind: SocketAddr, delay: Duration, max: usize) -> SocketAddr {
    udp_server(bind, max, move |d| {
        thread::sleep(delay);
        Some(d.to_vec())
    })
}

/// The DNS responder's zone: `answer.test` has A 127.0.0.9, `missing.test`
/// does not exist (NXDOMAIN), `silent.test` gets no reply at all.
pub fn dns_server(bind: SocketAddr, max: usize) -> SocketAddr {
    udp_server(bind, max, dns_reply)
}

/// Builds the reply to one query, or None for silence.
fn dns_reply(q: &[u8]) -> Option<Vec<u8>> {
    if q.len() < 12 {
        return None;
    }
    // Question name: labels up to the root.
    let mut i = 12;
    let mut labels = Vec::new();
    while i < q.len() && q[i] != 0 {
        let len = q[i] as usize;
        labels.push(String::from_utf8_lossy(q.get(i + 1..i + 1 + len)?).to_ascii_lowercase());
        i += 1 + len;
    }
    let qend = i + 5; // root byte, QTYPE, QCLASS
    let question = q.get(12..qend)?;
    let qtype = u16::from_be_bytes([q[i + 1], q[i + 2]]);
    let name = labels.join(".");
    let (rcode, answer): (u8, Option<Ipv4Addr>) = match name.as_str() {
        "silent.test" => return None,
        "answer.test" if qtype == 1 => (0, Some(Ipv4Addr::new(127, 0, 0, 9))),
        "answer.test" => (0, None),
        _ => (3, None),
    };
    let mut r = Vec::with_capacity(64);
    r.extend_from_slice(&q[0..2]); // id
    r.push(0x81 | (q[2] & 0x01)); // QR, opcode 0, RD copied... AA off
    r.push(0x80 | rcode); // RA, rcode
    r.extend_from_slice(&[0, 1, 0, u8::from(answer.is_some()), 0, 0, 0, 0]);
    r.extend_from_slice(question);
    if let Some(ip) = answer {
        r.extend_from_slice(&[0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4]);
        r.extend_from_slice(&ip.octets());
    }
    Some(r)
}
