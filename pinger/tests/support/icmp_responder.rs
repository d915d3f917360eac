//! Answers ICMP echo requests from a raw socket after a per-address delay,
//! standing in for the kernel (run it where `net.ipv4.icmp_echo_ignore_all=1`).

use std::io::Read;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, SockAddr, Socket, Type};

/// Serves until `until`; echo requests to `dst` are answered after `delay(dst)`.
pub fn serve(until: Instant, delay: impl Fn(Ipv4Addr) -> Duration + Send + Sync + 'static) {
    let sock = Socket::new(Domain::IPV4, Type::RAW, Some(Protocol::ICMPV4)).unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut buf = [0u8; 2048];
    while Instant::now() < until {
        // A raw IPv4 socket reads whole packets, IP header included.
        let Ok(n) = (&sock).read(&mut buf) else {
            continue;
        };
        let packet = &buf[..n];
        if n < 20 {
            continue;
        }
        let ihl = usize::from(packet[0] & 0x0f) * 4;
        if packet.len() < ihl + 8 || packet[ihl] != 8 {
            continue; // not an echo request
        }
        let src = Ipv4Addr::new(packet[12], packet[13], packet[14], packet[15]);
        let dst = Ipv4Addr::new(packet[16], packet[17], packet[18], packet[19]);
        let mut reply = packet[ihl..].to_vec();
        reply[0] = 0; // echo reply
        reply[2] = 0;
        reply[3] = 0;
        let sum = checksum(&reply);
        reply[2..4].copy_from_slice(&sum.to_be_bytes());
        let wait = delay(dst);
        std::thread::spawn(move || {
            std::thread::sleep(wait);
            // A raw socket sends from the address the request went to when
            // it is bound there; bind a fresh socket per reply for that.
            let out = Socket::new(Domain::IPV4, Type::RAW, Some(Protocol::ICMPV4)).unwrap();
            let _ = out.bind(&SockAddr::from(SocketAddrV4::new(dst, 0)));
            let _ = out.send_to(&reply, &SockAddr::from(SocketAddrV4::new(src, 0)));
        });
    }
}

fn checksum(data: &[u8]) -> u16 {
    let mut sum = 0u32;
    for chunk in data.chunks(2) {
        let word = u16::from_be_bytes([chunk[0], *chunk.get(1).unwrap_or(&0)]);
        sum += u32::from(word);
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}
