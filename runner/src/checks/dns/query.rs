//! Asking one DNS server, over one transport, for the A and AAAA records of
//! some names: hickory's client on a connection to that server alone, so
//! nothing is cached and no other server is tried.

use std::net::SocketAddr;
use std::time::Duration;

use futures::StreamExt;
use hickory_net::proto::op::{DnsRequestOptions, Query};
use hickory_net::proto::rr::{Name, RecordType};
use hickory_net::runtime::TokioRuntimeProvider;
use hickory_net::tcp::TcpClientStream;
use hickory_net::udp::UdpClientStream;
use hickory_net::xfer::DnsExchange;
use hickory_net::{DnsHandle, NetError};

use super::verdict::{Answer, Asked, Outcome};

/// How the queries travel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// One datagram per query (hickory resends it within the time limit).
    Udp,
    /// One connection for all queries, each framed by its length.
    Tcp,
}

impl Transport {
    /// `udp` or `tcp`, as the item names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Udp => "udp",
            Transport::Tcp => "tcp",
        }
    }
}

/// The record types asked for each name.
const TYPES: [(RecordType, &str); 2] = [(RecordType::A, "A"), (RecordType::AAAA, "AAAA")];

/// Asks `server` over `transport` for the A and AAAA records of each of
/// `names`, all at once, each query within `timeout`.
pub async fn ask(
    server: SocketAddr,
    transport: Transport,
    names: &[Name],
    timeout: Duration,
) -> Outcome {
    // Its tasks (the connection's background) live as long as a clone of
    // it does: this one is kept until every answer is in.
    let provider = TokioRuntimeProvider::new();
    let exchange = match transport {
        Transport::Udp => UdpClientStream::builder(server, provider.clone())
            .with_timeout(Some(timeout))
            .exchange(),
        Transport::Tcp => {
            let connect = TcpClientStream::exchange(server, None, timeout, None, provider.clone());
            match tokio::time::timeout(timeout, connect).await {
                Ok(Ok(exchange)) => exchange,
                Ok(Err(e)) => {
                    return Outcome::Unreachable(format!(
                        "tcp connection failed: {}",
                        describe(&e, timeout)
                    ))
                }
                Err(_) => {
                    return Outcome::Unreachable(format!(
                        "tcp connection failed: timeout after {}ms",
                        timeout.as_millis()
                    ))
                }
            }
        }
    };
    let queries = names
        .iter()
        .flat_map(|n| TYPES.iter().map(move |t| (n, *t)))
        .map(|(name, (rtype, label))| {
            let exchange = exchange.clone();
            async move {
                Asked {
                    name: name.to_string().trim_end_matches('.').to_string(),
                    rtype: label,
                    answer: one(&exchange, name.clone(), rtype, timeout).await,
                }
            }
        });
    let answers = futures::future::join_all(queries).await;
    drop(provider);
    Outcome::Asked(answers)
}

/// One query and its answer.
async fn one(
    exchange: &DnsExchange<TokioRuntimeProvider>,
    name: Name,
    rtype: RecordType,
    timeout: Duration,
) -> Answer {
    let start = tokio::time::Instant::now();
    let mut responses = exchange.lookup(Query::query(name, rtype), DnsRequestOptions::default());
    // hickory keeps its own time limit; this one holds whatever it does.
    match tokio::time::timeout(timeout + Duration::from_millis(100), responses.next()).await {
        Err(_) => Answer::Timeout,
        // hickory ends a UDP query's answers without one at its time limit.
        Ok(None) if start.elapsed() >= timeout => Answer::Timeout,
        Ok(None) => Answer::Failed("no answer".into()),
        Ok(Some(Err(NetError::Timeout))) => Answer::Timeout,
        Ok(Some(Err(e))) => Answer::Failed(describe(&e, timeout)),
        Ok(Some(Ok(response))) => Answer::Response {
            rcode: response.metadata.response_code.into(),
            addresses: response
                .answers
                .iter()
                .filter(|r| r.record_type() == rtype)
                .count(),
        },
    }
}

/// A network error in a few words.
fn describe(e: &NetError, timeout: Duration) -> String {
    match e {
        NetError::Timeout => format!("timeout after {}ms", timeout.as_millis()),
        NetError::Io(io) => io.to_string(),
        // The connection's background task has ended: the server closed it.
        NetError::Busy => "connection closed".to_string(),
        other => other.to_string(),
    }
}
