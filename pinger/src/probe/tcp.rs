//! TCP ping: a connect within the timeout is success.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::net::TcpSocket;

use crate::round::Outcome;

/// Connects to `addr`. The socket closes with a reset (zero linger), so
/// frequent probes leave no TIME_WAIT sockets behind.
pub async fn probe(addr: SocketAddr, timeout: Duration) -> Outcome {
    let socket = match if addr.is_ipv4() {
        TcpSocket::new_v4()
    } else {
        TcpSocket::new_v6()
    } {
        Ok(s) => s,
        Err(e) => return Outcome::Error(format!("socket: {e}")),
    };
    if let Err(e) = socket.set_zero_linger() {
        return Outcome::Error(format!("SO_LINGER: {e}"));
    }
    let start = Instant::now();
    match tokio::time::timeout(timeout, socket.connect(addr)).await {
        Ok(Ok(_stream)) => Outcome::Ok(start.elapsed()),
        Ok(Err(e)) => super::io_outcome(&e),
        Err(_) => Outcome::Timeout,
    }
}
