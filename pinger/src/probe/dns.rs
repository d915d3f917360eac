//! DNS lookup probe: hickory-resolver with its cache off and one attempt per
//! probe, against explicit servers or the system's resolv.conf.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use hickory_resolver::config::{NameServerConfig, ResolverConfig, ResolverOpts};
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::net::NetError;
use hickory_resolver::TokioResolver;

use crate::round::Outcome;

/// Why the resolver could not be built.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// resolv.conf is missing or unreadable.
    #[error("cannot read the system resolver configuration")]
    SystemConf(#[source] NetError),
    /// The resolver rejected its configuration.
    #[error("cannot build the DNS resolver")]
    Build(#[source] NetError),
}

/// A resolver for DNS probes. When it cannot be built (no resolv.conf), every
/// DNS probe reports why as an `error`.
pub struct Dns {
    resolver: Result<TokioResolver, String>,
}

impl Dns {
    /// A resolver asking `servers` (UDP, falling back to TCP on truncation),
    /// or the servers of resolv.conf when empty. `timeout` bounds one query.
    pub fn new(servers: &[SocketAddr], timeout: Duration) -> Self {
        let resolver = build(servers, timeout).map_err(|e| {
            let msg = format!("{e}: {}", e.source_message());
            tracing::error!(error = %msg, "DNS probes cannot run");
            msg
        });
        Dns { resolver }
    }

    /// Resolves `name` to addresses once.
    pub async fn lookup(&self, name: &str, timeout: Duration) -> Outcome {
        let resolver = match &self.resolver {
            Ok(r) => r,
            Err(e) => return Outcome::Error(e.clone()),
        };
        let start = Instant::now();
        let result = tokio::time::timeout(timeout, resolver.lookup_ip(name)).await;
        match result {
            Err(_) => Outcome::Timeout,
            Ok(Ok(found)) if found.iter().next().is_some() => Outcome::Ok(start.elapsed()),
            Ok(Ok(_)) => Outcome::Error("no address".into()),
            Ok(Err(e)) => classify(&e),
        }
    }
}

impl Error {
    fn source_message(&self) -> String {
        match self {
            Error::SystemConf(e) | Error::Build(e) => e.to_string(),
        }
    }
}

fn build(servers: &[SocketAddr], timeout: Duration) -> Result<TokioResolver, Error> {
    {
        let provider = TokioRuntimeProvider::default();
        let mut builder = if servers.is_empty() {
            TokioResolver::builder(provider).map_err(Error::SystemConf)?
        } else {
            let name_servers = servers
                .iter()
                .map(|s| {
                    let mut ns = NameServerConfig::udp_and_tcp(s.ip());
                    for c in &mut ns.connections {
                        c.port = s.port();
                    }
                    ns
                })
                .collect();
            TokioResolver::builder_with_config(
                ResolverConfig::from_name_servers(name_servers),
                provider,
            )
        };
        let opts: &mut ResolverOpts = builder.options_mut();
        opts.cache_size = 0;
        opts.attempts = 0;
        opts.timeout = timeout;
        builder.build().map_err(Error::Build)
    }
}

fn classify(e: &NetError) -> Outcome {
    if e.is_nx_domain() {
        Outcome::Error("NXDOMAIN".into())
    } else if e.is_no_records_found() {
        Outcome::Error("no records".into())
    } else {
        match e {
            NetError::Timeout => Outcome::Timeout,
            NetError::Io(io) => super::io_outcome(io),
            other => Outcome::Error(other.to_string()),
        }
    }
}
