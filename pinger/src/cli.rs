//! Command line. Target flags select standalone mode; without them the pinger
//! follows the Pinger named by `--pinger` / `PINGER_NAME` in the cluster.

use std::net::SocketAddr;

use clap::Parser;

use crate::targets::TargetLists;

/// Persistent ICMP, TCP, UDP and DNS probing.
///
/// With target flags it runs standalone and prints one line per target per
/// round and a summary (exit 0: every round passed, 1: some failed, 2: usage
/// error). Without them it runs in the cluster, following the Pinger named by
/// PINGER_NAME in POD_NAMESPACE.
#[derive(Parser, Debug, Clone)]
#[command(name = "combo-pinger", version)]
// The field comments are the `--help` text, where `[v6]` and `[:port]` are
// literal brackets, not links.
#[allow(rustdoc::broken_intra_doc_links)]
pub struct Args {
    /// ICMP echo target: IPv4/IPv6 address or DNS name (repeatable).
    #[arg(long, value_name = "HOST")]
    pub ping: Vec<String>,
    /// TCP connect target, host:port or [v6]:port (repeatable).
    #[arg(long, value_name = "HOST:PORT")]
    pub tcp: Vec<String>,
    /// UDP target, host:port; a reply datagram is success (repeatable).
    #[arg(long, value_name = "HOST:PORT")]
    pub udp: Vec<String>,
    /// DNS name to resolve (repeatable).
    #[arg(long, value_name = "NAME")]
    pub dns: Vec<String>,
    /// DNS server, ip[:port] (repeatable); default: /etc/resolv.conf.
    #[arg(long = "dns-server", value_name = "IP[:PORT]")]
    pub dns_server: Vec<String>,
    /// Also ping this host's default gateway(s).
    #[arg(long)]
    pub gateway: bool,
    /// Seconds between rounds of one target.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=3600))]
    pub interval: u32,
    /// Time limit of one probe, in milliseconds.
    #[arg(long = "timeout-ms", default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=60_000))]
    pub timeout_ms: u32,
    /// Probes per target per round.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub count: u32,
    /// A round with more loss than this (percent) fails.
    #[arg(long = "max-loss-percent", default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub max_loss_percent: u32,
    /// A round whose average RTT is above this fails; 0 means no limit.
    #[arg(long = "max-latency-ms", default_value_t = 0)]
    pub max_latency_ms: u32,
    /// Rounds per target; 0 runs until SIGINT/SIGTERM.
    #[arg(long, default_value_t = 0)]
    pub rounds: u64,
    /// Serve Prometheus metrics on this address, e.g. 0.0.0.0:8080.
    #[arg(long = "metrics-addr", value_name = "ADDR")]
    pub metrics_addr: Option<SocketAddr>,
    /// Pinger to follow in the cluster (in-cluster mode).
    #[arg(long, env = "PINGER_NAME", value_name = "NAME")]
    pub pinger: Option<String>,
}

impl Args {
    /// The target flags as target lists.
    pub fn target_lists(&self) -> TargetLists {
        TargetLists {
            ping: self.ping.clone(),
            tcp: self.tcp.clone(),
            udp: self.udp.clone(),
            dns: self.dns.clone(),
        }
    }

    /// True when any target flag is given.
    pub fn standalone(&self) -> bool {
        self.gateway || self.target_lists() != TargetLists::default()
    }
}
