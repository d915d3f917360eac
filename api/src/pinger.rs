//! The `Pinger` custom resource (docs/reference.md, "Pinger") and its target syntax.

use std::net::{IpAddr, SocketAddr};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};

use crate::schema;

/// Pattern of a `ping` target: an IPv4/IPv6 address or a DNS name. The exact
/// check is [`parse_host`]; the schema only rejects impossible characters.
pub const HOST_PATTERN: &str = r"^[0-9A-Za-z.:%_-]+$";
/// Pattern of a `tcpPing`/`udpPing` target: `host:port` or `[v6]:port`.
pub const HOST_PORT_PATTERN: &str = r"^(\[[0-9A-Fa-f:.%]+\]|[0-9A-Za-z._-]+):[0-9]{1,5}$";
/// Pattern of a `dnsServers` entry: `ip`, `ip:port` or `[v6]:port`.
pub const DNS_SERVER_PATTERN: &str = r"^(\[[0-9A-Fa-f:.%]+\](:[0-9]{1,5})?|[0-9A-Fa-f:.]+)$";

/// A Pinger describes persistent probe loops: ICMP, TCP, UDP and DNS.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "kubecombo.io",
    version = "v1",
    kind = "Pinger",
    doc = "A Pinger describes probe loops (ICMP, TCP, UDP and DNS) that the pinger container of each Debugger following it runs continuously, exporting latency and loss as Prometheus metrics.",
    namespaced,
    shortname = "pgr",
    status = "PingerStatus",
    printcolumn = r#"{"name":"READY","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"REASON","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].reason"}"#,
    printcolumn = r#"{"name":"TARGETS","type":"string","jsonPath":".status.targets"}"#,
    printcolumn = r#"{"name":"INTERVAL","type":"integer","jsonPath":".spec.intervalSeconds"}"#,
    printcolumn = r#"{"name":"PEERS","type":"boolean","jsonPath":".spec.peers"}"#,
    printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct PingerSpec {
    /// Pinger image; empty means the operator's `--pinger-image`.
    #[serde(default)]
    pub image: String,

    /// Serve Prometheus metrics on `metricsPort`.
    #[serde(default = "yes")]
    pub enable_metrics: bool,

    /// Port of the `/metrics` endpoint.
    #[serde(default = "default_metrics_port")]
    #[schemars(schema_with = "metrics_port_schema")]
    pub metrics_port: u16,

    /// One round per target per interval, in seconds.
    #[serde(default = "default_interval")]
    #[schemars(schema_with = "interval_schema")]
    pub interval_seconds: u32,

    /// Time limit of one probe in milliseconds.
    #[serde(default = "default_timeout_ms")]
    #[schemars(schema_with = "timeout_schema")]
    pub timeout_ms: u32,

    /// Probes per target per round.
    #[serde(default = "default_count")]
    #[schemars(schema_with = "count_schema")]
    pub count: u32,

    /// ICMP echo targets: IPv4/IPv6 addresses or DNS names.
    #[serde(default)]
    #[schemars(schema_with = "host_list")]
    pub ping: Vec<String>,

    /// TCP connect targets, `host:port` (`[v6]:port` for IPv6).
    #[serde(default)]
    #[schemars(schema_with = "host_port_list")]
    pub tcp_ping: Vec<String>,

    /// UDP targets, `host:port`; a reply datagram is success.
    #[serde(default)]
    #[schemars(schema_with = "host_port_list")]
    pub udp_ping: Vec<String>,

    /// DNS names to resolve each round.
    #[serde(default)]
    #[schemars(schema_with = "host_list")]
    pub dns: Vec<String>,

    /// DNS servers, `ip[:port]`; empty means the pod's resolv.conf.
    #[serde(default)]
    #[schemars(schema_with = "dns_server_list")]
    pub dns_servers: Vec<String>,

    /// Also ping other Running and Ready pods of the same Debugger.
    #[serde(default = "yes")]
    pub peers: bool,

    /// Peers each pinger chooses to probe, so every pod is probed by about
    /// this many others; 0 means all. With 1–1000 the operator writes each
    /// pod's list; with 0 or over 1000, each pinger watches all the pods.
    #[serde(default = "default_max_peers")]
    #[schemars(schema_with = "max_peers_schema")]
    pub max_peers: u32,

    /// Each Ready pod is probed by at least this many others (all others
    /// when there are fewer), with `maxPeers` from 1 to 1000.
    #[serde(default = "default_min_probers")]
    #[schemars(schema_with = "min_probers_schema")]
    pub min_probers: u32,

    /// Also ping the pod's default gateway.
    #[serde(default)]
    pub gateway: bool,

    /// A round with more loss than this (percent) fails; the default lets
    /// one lost probe of the default three pass.
    #[serde(default = "default_max_loss")]
    #[schemars(schema_with = "loss_schema")]
    pub max_loss_percent: u32,

    /// A round whose average RTT is above this fails; 0 means no limit.
    #[serde(default)]
    #[schemars(schema_with = "latency_schema")]
    pub max_latency_ms: u32,
}

/// Observed state of a Pinger.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PingerStatus {
    /// The generation of the spec this status describes.
    #[serde(default)]
    pub observed_generation: i64,
    /// Conditions; `Ready` tells whether every target parses and there is
    /// something to probe.
    #[serde(default)]
    pub conditions: Vec<Condition>,
    /// What it probes, in short: the number of listed targets (ping,
    /// tcpPing, udpPing and dns), then `+peers` and `+gateway` when those
    /// are on, such as `3+peers`; `0` for nothing.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub targets: String,
}

fn yes() -> bool {
    true
}
fn default_metrics_port() -> u16 {
    8080
}
fn default_interval() -> u32 {
    5
}
fn default_timeout_ms() -> u32 {
    1000
}
fn default_count() -> u32 {
    3
}
fn default_max_peers() -> u32 {
    20
}
fn default_min_probers() -> u32 {
    3
}
fn default_max_loss() -> u32 {
    50
}
fn max_peers_schema(_: &mut SchemaGenerator) -> Schema {
    schema::int_range(0, 100_000, 20)
}
fn min_probers_schema(_: &mut SchemaGenerator) -> Schema {
    schema::int_range(0, 100, 3)
}
fn metrics_port_schema(_: &mut SchemaGenerator) -> Schema {
    schema::int_range(1, 65535, 8080)
}
fn interval_schema(_: &mut SchemaGenerator) -> Schema {
    schema::int_range(1, 3600, 5)
}
fn timeout_schema(_: &mut SchemaGenerator) -> Schema {
    schema::int_range(1, 60_000, 1000)
}
fn count_schema(_: &mut SchemaGenerator) -> Schema {
    schema::int_range(1, 100, 3)
}
fn loss_schema(_: &mut SchemaGenerator) -> Schema {
    schema::int_range(0, 100, 50)
}
fn latency_schema(_: &mut SchemaGenerator) -> Schema {
    schema::int_range(0, 60_000, 0)
}
fn host_list(_: &mut SchemaGenerator) -> Schema {
    schema::string_list(HOST_PATTERN)
}
fn host_port_list(_: &mut SchemaGenerator) -> Schema {
    schema::string_list(HOST_PORT_PATTERN)
}
fn dns_server_list(_: &mut SchemaGenerator) -> Schema {
    schema::string_list(DNS_SERVER_PATTERN)
}

impl Default for PingerSpec {
    fn default() -> Self {
        serde_json::from_str("{}").expect("every field has a default")
    }
}

/// A probe target host: an address, or a DNS name resolved each round.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Host {
    /// A literal IPv4 or IPv6 address.
    Ip(IpAddr),
    /// A DNS name (validated as RFC 1123 labels).
    Name(String),
}

impl std::fmt::Display for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Host::Ip(ip) => write!(f, "{ip}"),
            Host::Name(n) => f.write_str(n),
        }
    }
}

/// Why a target entry was rejected.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TargetError {
    /// Neither an address nor a valid DNS name.
    #[error("{0:?} is neither an IP address nor a valid DNS name")]
    BadHost(String),
    /// Not `host:port`.
    #[error("{0:?} is not host:port (use [addr]:port for IPv6)")]
    BadHostPort(String),
    /// Port 0 or above 65535.
    #[error("{0:?} has an invalid port")]
    BadPort(String),
    /// A `dns` entry that is an address: there is no name to look up.
    #[error("dns: {0:?} is an address, not a name to resolve")]
    NotAName(String),
}

/// Parses a `ping` or `dns` entry.
pub fn parse_host(s: &str) -> Result<Host, TargetError> {
    let t = s.trim();
    if let Ok(ip) = t.parse::<IpAddr>() {
        return Ok(Host::Ip(ip));
    }
    if is_dns_name(t) {
        Ok(Host::Name(t.trim_end_matches('.').to_ascii_lowercase()))
    } else {
        Err(TargetError::BadHost(s.to_string()))
    }
}

/// Parses a `tcpPing`/`udpPing` entry: `host:port` or `[v6]:port`.
pub fn parse_host_port(s: &str) -> Result<(Host, u16), TargetError> {
    let t = s.trim();
    if let Ok(sa) = t.parse::<SocketAddr>() {
        if sa.port() == 0 {
            return Err(TargetError::BadPort(s.to_string()));
        }
        return Ok((Host::Ip(sa.ip()), sa.port()));
    }
    let (host, port) = t
        .rsplit_once(':')
        .ok_or_else(|| TargetError::BadHostPort(s.to_string()))?;
    if host.contains(':') || host.starts_with('[') {
        return Err(TargetError::BadHostPort(s.to_string()));
    }
    let port: u16 = port
        .parse()
        .ok()
        .filter(|p| *p != 0)
        .ok_or_else(|| TargetError::BadPort(s.to_string()))?;
    match parse_host(host) {
        Ok(h) => Ok((h, port)),
        Err(_) => Err(TargetError::BadHostPort(s.to_string())),
    }
}

/// Parses a `dnsServers` entry, `ip[:port]`; the port defaults to 53.
pub fn parse_dns_server(s: &str) -> Result<SocketAddr, TargetError> {
    let t = s.trim();
    if let Ok(ip) = t.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, 53));
    }
    match t.parse::<SocketAddr>() {
        Ok(sa) if sa.port() != 0 => Ok(sa),
        Ok(_) => Err(TargetError::BadPort(s.to_string())),
        Err(_) => Err(TargetError::BadHostPort(s.to_string())),
    }
}

/// RFC 1123 host name: dot-separated labels of letters, digits and hyphens,
/// each 1..=63 characters, not starting or ending with a hyphen; 253 in all.
/// An all-numeric last label is refused so that `10.0.0.300` is not a name.
pub fn is_dns_name(s: &str) -> bool {
    let s = s.strip_suffix('.').unwrap_or(s);
    if s.is_empty() || s.len() > 253 {
        return false;
    }
    let labels: Vec<&str> = s.split('.').collect();
    let label_ok = |l: &&str| {
        !l.is_empty()
            && l.len() <= 63
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    labels.iter().all(label_ok)
        && !labels
            .last()
            .is_some_and(|l| l.bytes().all(|b| b.is_ascii_digit()))
}

impl PingerSpec {
    /// Every target entry that does not parse, with the reason; empty when
    /// the spec is valid.
    pub fn invalid_targets(&self) -> Vec<String> {
        let mut bad = Vec::new();
        for t in &self.ping {
            if let Err(e) = parse_host(t) {
                bad.push(e.to_string());
            }
        }
        for t in &self.dns {
            match parse_host(t) {
                Err(e) => bad.push(e.to_string()),
                Ok(Host::Ip(_)) => bad.push(TargetError::NotAName(t.clone()).to_string()),
                Ok(Host::Name(_)) => {}
            }
        }
        for t in self.tcp_ping.iter().chain(&self.udp_ping) {
            if let Err(e) = parse_host_port(t) {
                bad.push(e.to_string());
            }
        }
        for t in &self.dns_servers {
            if let Err(e) = parse_dns_server(t) {
                bad.push(e.to_string());
            }
        }
        bad
    }
}

#[cfg(test)]
#[path = "pinger_tests.rs"]
mod tests;
