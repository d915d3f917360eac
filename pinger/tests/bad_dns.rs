//! A DNS server that answers garbage (docs/pinger.md): each lookup ends in
//! an error or a timeout for that target, never a panic or a stalled
//! prober, and a good server keeps being answered meanwhile. The lookups
//! are recorded in the suite report (docs/testing.md, "Suite report")
//! under `bad input` before the test asserts.

mod support;

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use combo_pinger::probe::dns::Dns;
use combo_pinger::round::Outcome;
use combo_testkit::suite::Case;

const TIMEOUT: Duration = Duration::from_millis(500);

/// Lookups through each garbage server.
const LOOKUPS: usize = 8;

/// How a garbage server answers a query (its bytes, as received).
#[derive(Clone, Copy, Debug)]
enum Garbage {
    /// Random bytes of random length.
    Noise,
    /// The first three bytes of a header.
    Truncated,
    /// The query sent back with another ID and the answer bit set.
    WrongId,
    /// A header with the right ID claiming 65,535 answers, and no body.
    Lying,
    /// Many answers to one query.
    Flood,
}

fn reply(mode: Garbage, query: &[u8], seed: &mut u64) -> Vec<Vec<u8>> {
    let mut next = || {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    };
    match mode {
        Garbage::Noise => {
            let n = (next() % 600) as usize;
            vec![(0..n).map(|_| next() as u8).collect()]
        }
        Garbage::Truncated => vec![query.iter().take(3).copied().collect()],
        Garbage::WrongId => {
            let mut r = query.to_vec();
            if r.len() >= 3 {
                r[0] ^= 0x5a;
                r[2] |= 0x80;
            }
            vec![r]
        }
        Garbage::Lying => {
            let mut r = query.iter().take(12).copied().collect::<Vec<u8>>();
            r.resize(12, 0);
            r[2] |= 0x80;
            r[6] = 0xff;
            r[7] = 0xff;
            vec![r]
        }
        Garbage::Flood => (0..50)
            .map(|_| (0..64).map(|_| next() as u8).collect())
            .collect(),
    }
}

/// A UDP server on loopback answering every query the `mode` way.
fn garbage_server(mode: Garbage) -> SocketAddr {
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = sock.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64 ^ addr.port() as u64;
        let mut buf = [0u8; 1500];
        while let Ok((n, from)) = sock.recv_from(&mut buf) {
            for r in reply(mode, &buf[..n], &mut seed) {
                let _ = sock.send_to(&r, from);
            }
        }
    });
    addr
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_answering_garbage_gives_an_error_or_timeout_and_stalls_nothing() {
    // Answers up to 1,000 queries: 5 modes x 8 lookups, with retries.
    let good = support::dns_server("127.0.0.1:0".parse().unwrap(), 1000);
    let healthy = Dns::new(&[good], TIMEOUT);
    let modes = [
        Garbage::Noise,
        Garbage::Truncated,
        Garbage::WrongId,
        Garbage::Lying,
        Garbage::Flood,
    ];
    let case = Case::new(
        "bad input",
        "pinger: DNS answers of noise, truncated, wrong-ID, lying and flooding servers",
        (modes.len() * LOOKUPS) as u64,
    );
    let mut problems = Vec::new();
    for mode in modes {
        let bad = Dns::new(&[garbage_server(mode)], TIMEOUT);
        for i in 0..LOOKUPS {
            let started = Instant::now();
            let (outcome, good) = tokio::join!(
                bad.lookup("answer.test.", TIMEOUT),
                healthy.lookup("answer.test.", TIMEOUT)
            );
            let took = started.elapsed();
            let mut wrong = Vec::new();
            if !matches!(outcome, Outcome::Error(_) | Outcome::Timeout) {
                wrong.push(format!("the garbage gave {outcome}"));
            }
            if took >= TIMEOUT * 4 {
                wrong.push(format!("the lookup outlived its timeout ({took:?})"));
            }
            if !matches!(good, Outcome::Ok(_)) {
                wrong.push(format!("the good server is not answered: {good}"));
            }
            if !wrong.is_empty() {
                problems.push(format!("{mode:?} #{i}: {}", wrong.join("; ")));
            }
        }
    }
    case.done((modes.len() * LOOKUPS - problems.len()) as u64, 0);
    assert!(problems.is_empty(), "{problems:#?}");
}
