//! The set of targets one pinger probes: the Pinger spec's lists, the peers and
//! the default gateway. Pure: building the set does no I/O.

use std::collections::BTreeSet;
use std::fmt;
use std::net::IpAddr;

use combo_api::hash::{fnv1a_seeded, mix64};
use combo_api::pinger::{parse_host, parse_host_port, Host, TargetError};
use combo_api::PingerSpec;

/// What kind of probe a target gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// ICMP echo.
    Icmp,
    /// TCP connect.
    Tcp,
    /// UDP datagram and reply.
    Udp,
    /// DNS lookup of a name.
    Dns,
}

impl Kind {
    /// The `kind` label of the metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Icmp => "icmp",
            Kind::Tcp => "tcp",
            Kind::Udp => "udp",
            Kind::Dns => "dns",
        }
    }

    /// The reason of the Warning Event when a round of this kind fails.
    pub fn failure_reason(self) -> &'static str {
        match self {
            Kind::Icmp => "PingFailed",
            Kind::Tcp => "TcpPingFailed",
            Kind::Udp => "UdpPingFailed",
            Kind::Dns => "DnsLookupFailed",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One probe target.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Target {
    /// Probe kind.
    pub kind: Kind,
    /// Address or name to probe (for DNS: the name to resolve).
    pub host: Host,
    /// Port of TCP and UDP targets.
    pub port: Option<u16>,
}

impl Target {
    /// An ICMP target.
    pub fn icmp(host: Host) -> Self {
        Target {
            kind: Kind::Icmp,
            host,
            port: None,
        }
    }

    /// The target as users wrote it: `10.0.0.1`, `[::1]:53`, `example.org`.
    /// It is the `target` label of the metrics.
    pub fn label(&self) -> String {
        match (self.port, &self.host) {
            (Some(p), Host::Ip(IpAddr::V6(ip))) => format!("[{ip}]:{p}"),
            (Some(p), h) => format!("{h}:{p}"),
            (None, h) => h.to_string(),
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.kind, self.label())
    }
}

/// The target lists of a spec, as written (standalone flags map onto it too).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TargetLists {
    /// ICMP targets.
    pub ping: Vec<String>,
    /// TCP targets, `host:port`.
    pub tcp: Vec<String>,
    /// UDP targets, `host:port`.
    pub udp: Vec<String>,
    /// Names to resolve.
    pub dns: Vec<String>,
}

impl From<&PingerSpec> for TargetLists {
    fn from(spec: &PingerSpec) -> Self {
        TargetLists {
            ping: spec.ping.clone(),
            tcp: spec.tcp_ping.clone(),
            udp: spec.udp_ping.clone(),
            dns: spec.dns.clone(),
        }
    }
}

/// Targets that parse, and a message for every entry that does not.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TargetSet {
    /// Valid targets, sorted and without duplicates.
    pub targets: BTreeSet<Target>,
    /// One message per rejected entry.
    pub invalid: Vec<String>,
}

/// Builds the target set from the lists plus extra ICMP addresses (peers and
/// the gateway). A bad entry is reported and skipped; the others stay.
pub fn build(lists: &TargetLists, extra_icmp: impl IntoIterator<Item = IpAddr>) -> TargetSet {
    let mut set = TargetSet::default();
    for entry in &lists.ping {
        match parse_host(entry) {
            Ok(h) => {
                set.targets.insert(Target::icmp(h));
            }
            Err(e) => set.invalid.push(format!("ping: {e}")),
        }
    }
    for (kind, entries) in [(Kind::Tcp, &lists.tcp), (Kind::Udp, &lists.udp)] {
        for entry in entries {
            match parse_host_port(entry) {
                Ok((host, port)) => {
                    set.targets.insert(Target {
                        kind,
                        host,
                        port: Some(port),
                    });
                }
                Err(e) => set.invalid.push(format!("{kind}: {e}")),
            }
        }
    }
    for entry in &lists.dns {
        match parse_host(entry) {
            Ok(Host::Name(n)) => {
                set.targets.insert(Target {
                    kind: Kind::Dns,
                    host: Host::Name(n),
                    port: None,
                });
            }
            Ok(Host::Ip(_)) => set
                .invalid
                .push(TargetError::NotAName(entry.clone()).to_string()),
            Err(e) => set.invalid.push(format!("dns: {e}")),
        }
    }
    for ip in extra_icmp {
        set.targets.insert(Target::icmp(Host::Ip(ip)));
    }
    set
}

/// Where in the interval a target's rounds start, as a fraction in `[0, 1)`.
/// Derived from the target and a per-process seed, so one pod's targets are
/// spread over the interval and two pods do not probe in lockstep.
pub fn phase(target: &Target, seed: u64) -> f64 {
    // FNV-1a: stable across runs and platforms, unlike `DefaultHasher`;
    // mixed, so targets differing in one digit land far apart.
    let h = mix64(fnv1a_seeded(seed, &[target.to_string().as_bytes()]));
    (h >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lists() -> TargetLists {
        TargetLists {
            ping: vec!["10.16.0.1".into(), "gateway.example".into(), "::1".into()],
            tcp: vec!["10.96.0.1:443".into(), "[::1]:22".into()],
            udp: vec!["10.96.0.10:53".into()],
            dns: vec!["kubernetes.default.svc.cluster.local".into()],
        }
    }

    #[test]
    fn every_list_entry_becomes_a_target_of_its_kind() {
        let set = build(&lists(), []);
        assert!(set.invalid.is_empty(), "{:?}", set.invalid);
        let labels: Vec<String> = set.targets.iter().map(|t| t.to_string()).collect();
        assert_eq!(
            labels,
            [
                "icmp 10.16.0.1",
                "icmp ::1",
                "icmp gateway.example",
                "tcp 10.96.0.1:443",
                "tcp [::1]:22",
                "udp 10.96.0.10:53",
                "dns kubernetes.default.svc.cluster.local",
            ]
        );
    }

    #[test]
    fn bad_entries_are_reported_and_the_others_kept() {
        let mut l = lists();
        l.ping.push("not a host".into());
        l.tcp.push("10.0.0.1".into());
        l.dns.push("10.0.0.1".into());
        let set = build(&l, []);
        assert_eq!(set.invalid.len(), 3, "{:?}", set.invalid);
        assert_eq!(set.targets.len(), 7);
    }

    #[test]
    fn peers_and_gateway_join_as_icmp_targets_without_duplicates() {
        let peers: Vec<IpAddr> = vec!["10.16.0.1".parse().unwrap(), "10.16.0.7".parse().unwrap()];
        let set = build(&lists(), peers);
        assert_eq!(set.targets.len(), 8);
        assert!(set
            .targets
            .contains(&Target::icmp(Host::Ip("10.16.0.7".parse().unwrap()))));
    }

    #[test]
    fn phases_are_in_range_and_differ_between_targets_and_seeds() {
        let set = build(&lists(), []);
        let phases: Vec<f64> = set.targets.iter().map(|t| phase(t, 1)).collect();
        assert!(phases.iter().all(|p| (0.0..1.0).contains(p)));
        let distinct: BTreeSet<u64> = phases.iter().map(|p| p.to_bits()).collect();
        assert_eq!(distinct.len(), phases.len());
        let t = set.targets.iter().next().unwrap();
        assert_ne!(phase(t, 1), phase(t, 2));
    }

    #[test]
    fn phases_stay_the_values_released_pinger_versions_computed() {
        // A changed phase moves every target's rounds within the interval
        // after an upgrade; these are the values of the first release.
        let one = |lists: TargetLists| build(&lists, []).targets.pop_first().unwrap();
        let icmp = |ip: &str| Target::icmp(Host::Ip(ip.parse().unwrap()));
        let tcp = one(TargetLists {
            tcp: vec!["[::1]:22".into()],
            ..TargetLists::default()
        });
        let dns = one(TargetLists {
            dns: vec!["kubernetes.default.svc.cluster.local".into()],
            ..TargetLists::default()
        });
        let of_2_53 = |n: u64| n as f64 / (1u64 << 53) as f64;
        assert_eq!(phase(&icmp("10.16.0.1"), 0), of_2_53(141_675_277_378_040));
        assert_eq!(phase(&icmp("10.16.0.1"), 1), of_2_53(3_692_100_324_863_487));
        assert_eq!(phase(&tcp, 42), of_2_53(2_921_493_349_617_714));
        assert_eq!(phase(&dns, 0xdead_beef), of_2_53(1_097_738_546_904_246));
    }

    #[test]
    fn phases_of_similar_targets_spread_over_the_whole_interval() {
        let lists = TargetLists {
            ping: (1..=200).map(|i| format!("127.1.0.{i}")).collect(),
            ..TargetLists::default()
        };
        let mut deciles = [0usize; 10];
        for t in &build(&lists, []).targets {
            deciles[(phase(t, 42) * 10.0) as usize] += 1;
        }
        // 20 expected per decile; a clump would leave some nearly empty.
        assert!(
            deciles.iter().all(|&n| (5..=40).contains(&n)),
            "{deciles:?}"
        );
    }
}
