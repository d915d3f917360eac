//! Which pods of the Debugger are peers, and what the pinger should probe.
//! Pure.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

use combo_api::pinger::parse_dns_server;
use combo_api::PingerSpec;

use crate::round::Thresholds;
use crate::targets::{self, TargetLists, TargetSet};
use combo_api::peers::{self, rendezvous};

/// The Debugger's peer pods by name, each with its addresses (two for a
/// dual-stack pod, never none).
pub type Pods = BTreeMap<String, Vec<IpAddr>>;

/// What a pinger in a pod needs to know about itself.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Me {
    /// Own pod name: never its own peer.
    pub pod: String,
    /// Own pod addresses, as far as known (two on a dual-stack pod): none
    /// is ever probed.
    pub ips: Vec<IpAddr>,
}

impl Me {
    /// Pod `pod` with the addresses of `pod_ips` (comma-separated, as in
    /// `POD_IPS`) and of `pod_ip` (`POD_IP`, for a pod made without
    /// `POD_IPS`); entries that are no address are left out.
    pub fn new(pod: impl Into<String>, pod_ips: Option<&str>, pod_ip: Option<&str>) -> Me {
        let all = [pod_ips.unwrap_or_default(), pod_ip.unwrap_or_default()].join(",");
        Me {
            pod: pod.into(),
            ips: peers::parse(&all).0,
        }
    }

    /// Whether `ip` is one of the own addresses.
    pub fn owns(&self, ip: &IpAddr) -> bool {
        self.ips.contains(ip)
    }

    /// Whether the pod has an IPv4 and an IPv6 address: its peers then
    /// have both too, and the table watch asks for them (docs/pinger.md,
    /// "Peer discovery").
    pub fn dual_stack(&self) -> bool {
        self.ips.iter().any(IpAddr::is_ipv4) && self.ips.iter().any(IpAddr::is_ipv6)
    }
}

/// Where the peers come from: the list the operator wrote on the own pod,
/// or the Debugger's pods the pinger follows itself (docs/pinger.md,
/// "Peer discovery").
#[derive(Clone, Copy, Debug)]
pub struct Known<'a> {
    /// The own pod's list, parsed; None while it has none.
    pub listed: Option<&'a [IpAddr]>,
    /// The Debugger's pods that are peers, by name, from the table watch.
    pub pods: &'a Pods,
}

/// The targets of a spec, with the peers and gateways it asks for. With a
/// bounded `spec.maxPeers` ([`peers::listed`]) the peers are the listed
/// addresses, none while there is no list; otherwise every peer pod or
/// `spec.maxPeers` of them, chosen by [`rendezvous::choose`] per pod and
/// probed on each of their addresses. Never the pod itself, by name or on
/// any of its addresses.
pub fn desired(spec: &PingerSpec, known: Known<'_>, me: &Me, gateways: &[IpAddr]) -> TargetSet {
    let mut extra: Vec<IpAddr> = Vec::new();
    if peers::listed(spec.peers, spec.max_peers) {
        let listed = known.listed.unwrap_or_default();
        extra.extend(listed.iter().filter(|ip| !me.owns(ip)));
    } else if spec.peers {
        let pods = known.pods;
        let candidates = pods
            .iter()
            .filter(|(name, ips)| **name != me.pod && ips.iter().any(|ip| !me.owns(ip)))
            .map(|(name, _)| name.as_str());
        let max = usize::try_from(spec.max_peers).unwrap_or(usize::MAX);
        for name in rendezvous::choose(&me.pod, candidates, max) {
            extra.extend(pods[name].iter().filter(|ip| !me.owns(ip)));
        }
    }
    if spec.gateway {
        extra.extend_from_slice(gateways);
    }
    targets::build(&TargetLists::from(spec), extra)
}

/// The round settings a spec asks for (without the sockets).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Knobs {
    /// Seconds between rounds.
    pub interval: Duration,
    /// Per-probe time limit.
    pub timeout: Duration,
    /// Probes per round.
    pub count: u32,
    /// Pass/fail limits.
    pub limits: Thresholds,
    /// DNS servers that parse; empty means resolv.conf.
    pub dns_servers: Vec<std::net::SocketAddr>,
}

impl From<&PingerSpec> for Knobs {
    fn from(spec: &PingerSpec) -> Self {
        Knobs {
            interval: Duration::from_secs(u64::from(spec.interval_seconds.clamp(1, 3600))),
            timeout: Duration::from_millis(u64::from(spec.timeout_ms.clamp(1, 60_000))),
            count: spec.count.clamp(1, 100),
            limits: Thresholds {
                max_loss_percent: spec.max_loss_percent.min(100),
                max_latency_ms: spec.max_latency_ms,
            },
            dns_servers: spec
                .dns_servers
                .iter()
                .filter_map(|s| parse_dns_server(s).ok())
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// The peer pods of the table watch, without a list.
    fn pods(pods: &Pods) -> Known<'_> {
        Known { listed: None, pods }
    }

    /// Single-stack pods, one address each.
    fn single(pods: &[(&str, &str)]) -> Pods {
        pods.iter()
            .map(|(n, ip)| (n.to_string(), vec![ip.parse().unwrap()]))
            .collect()
    }

    fn labels(set: &TargetSet) -> Vec<String> {
        set.targets.iter().map(|t| t.label()).collect()
    }

    fn ips(list: &[&str]) -> Vec<IpAddr> {
        list.iter().map(|s| s.parse().unwrap()).collect()
    }

    #[test]
    fn peers_exclude_the_pod_itself_and_follow_the_peers_switch() {
        let peers = single(&[("a", "10.0.0.1"), ("b", "10.0.0.2"), ("c", "10.0.0.3")]);
        let me = Me::new("a", None, Some("10.0.0.3"));
        let gw: Vec<IpAddr> = vec!["10.0.0.254".parse().unwrap()];
        let spec = PingerSpec {
            max_peers: 0,
            ..PingerSpec::default()
        };
        assert_eq!(
            labels(&desired(&spec, pods(&peers), &me, &gw)),
            ["10.0.0.2"]
        );
        let spec = PingerSpec {
            peers: false,
            gateway: true,
            ping: vec!["10.9.9.9".into()],
            ..PingerSpec::default()
        };
        assert_eq!(
            labels(&desired(&spec, pods(&peers), &me, &gw)),
            ["10.0.0.254", "10.9.9.9"]
        );
    }

    #[test]
    fn above_the_largest_list_at_most_max_peers_are_probed_by_the_rendezvous_choice() {
        // Above the largest list: the pinger chooses from the pods itself.
        let max = combo_api::peers::LIST_MAX as usize + 1;
        let peers: Pods = (1..=max + 50)
            .map(|i| {
                (
                    format!("p{i}"),
                    vec![IpAddr::from((0x0a00_0000 + i as u32).to_be_bytes())],
                )
            })
            .collect();
        let me = Me::new("p1", None, Some("10.0.0.1"));
        let spec = PingerSpec {
            max_peers: max as u32,
            ..PingerSpec::default()
        };
        let got: Vec<IpAddr> = desired(&spec, pods(&peers), &me, &[])
            .targets
            .iter()
            .map(|t| match t.host {
                combo_api::pinger::Host::Ip(ip) => ip,
                _ => unreachable!("peers are addresses"),
            })
            .collect();
        let mut want: Vec<IpAddr> = rendezvous::choose("p1", peers.keys().map(String::as_str), max)
            .into_iter()
            .map(|n| peers[n][0])
            .collect();
        want.sort();
        assert_eq!(got, want);
        let all = PingerSpec {
            max_peers: 0,
            ..PingerSpec::default()
        };
        assert_eq!(
            desired(&all, pods(&peers), &me, &[]).targets.len(),
            max + 49
        );
    }

    #[test]
    fn with_a_bounded_max_the_peers_are_the_listed_ones_but_the_pod_itself() {
        // Pods the table watch would know: in list mode they count for
        // nothing.
        let pods: Pods = (1..=9u8)
            .map(|i| (format!("p{i}"), vec![IpAddr::from([10, 0, 1, i])]))
            .collect();
        let me = Me::new("p1", None, Some("10.0.0.1"));
        let listed = ips(&["10.0.0.1", "10.0.0.2", "fd00::3"]);
        let known = Known {
            listed: Some(&listed),
            pods: &pods,
        };
        let spec = PingerSpec {
            max_peers: 20,
            ..PingerSpec::default()
        };
        assert_eq!(
            labels(&desired(&spec, known, &me, &[])),
            ["10.0.0.2", "fd00::3"]
        );
        // No list yet: no peers, and no fallback to the pods.
        let unlisted = Known {
            listed: None,
            pods: &pods,
        };
        assert!(desired(&spec, unlisted, &me, &[]).targets.is_empty());
        // peers: false probes no peer, listed or not.
        let off = PingerSpec {
            peers: false,
            ping: vec!["10.9.9.9".into()],
            ..spec.clone()
        };
        assert_eq!(labels(&desired(&off, known, &me, &[])), ["10.9.9.9"]);
        // maxPeers 0 (all): the pods but p1 itself, not the list.
        let all = PingerSpec {
            max_peers: 0,
            ..spec
        };
        assert_eq!(desired(&all, known, &me, &[]).targets.len(), 8);
    }

    #[test]
    fn own_addresses_are_those_of_pod_ips_and_pod_ip_and_both_families_make_a_pod_dual_stack() {
        let me = Me::new("p", Some("fd00::1,10.0.0.1"), Some("10.0.0.1"));
        assert_eq!(me.ips, ips(&["10.0.0.1", "fd00::1"]));
        assert!(me.dual_stack());
        // Without POD_IPS (a pod made before it), POD_IP alone.
        let me = Me::new("p", None, Some("10.0.0.1"));
        assert_eq!(me.ips, ips(&["10.0.0.1"]));
        assert!(!me.dual_stack());
        assert!(!Me::new("p", Some("fd00::1"), Some("fd00::1")).dual_stack());
        assert!(!Me::new("p", Some("10.0.0.1,10.0.0.2"), None).dual_stack());
        let me = Me::new("p", Some("10.0.0.1,junk"), Some(""));
        assert_eq!(me.ips, ips(&["10.0.0.1"]));
        assert_eq!(Me::new("p", None, None).ips, ips(&[]));
    }

    #[test]
    fn a_dual_stack_peer_is_probed_on_both_addresses_and_no_own_address_is_probed() {
        let me = Me::new("me", Some("10.0.0.1,fd00::1"), Some("10.0.0.1"));
        let dual = |v4: &str, v6: &str| ips(&[v4, v6]);
        let peers: Pods = [
            ("me", dual("10.0.0.1", "fd00::1")),
            ("b", dual("10.0.0.2", "fd00::2")),
            ("c", ips(&["10.0.0.3"])),
            // Another name on the own IPv6 address: only its other one.
            ("d", dual("10.0.0.4", "fd00::1")),
            // Only own addresses: no candidate at all.
            ("stale", ips(&["fd00::1"])),
        ]
        .into_iter()
        .map(|(n, a)| (n.to_string(), a))
        .collect();
        let all = PingerSpec {
            max_peers: 0,
            ..PingerSpec::default()
        };
        assert_eq!(
            labels(&desired(&all, pods(&peers), &me, &[])),
            ["10.0.0.2", "10.0.0.3", "10.0.0.4", "fd00::2"]
        );
        // From a list: the same addresses, the own ones left out.
        let listed = ips(&["10.0.0.1", "10.0.0.2", "fd00::1", "fd00::2"]);
        let known = Known {
            listed: Some(&listed),
            pods: &peers,
        };
        let bounded = PingerSpec {
            max_peers: 20,
            ..PingerSpec::default()
        };
        assert_eq!(
            labels(&desired(&bounded, known, &me, &[])),
            ["10.0.0.2", "fd00::2"]
        );
    }

    #[test]
    fn dual_stack_pods_are_chosen_by_name_so_max_peers_counts_pods_not_addresses() {
        let max = combo_api::peers::LIST_MAX as usize + 1;
        let peers: Pods = (1..=max as u32 + 50)
            .map(|i| {
                let v4 = IpAddr::from((0x0a00_0000 + i).to_be_bytes());
                let v6 = IpAddr::from((0xfd00_u128 << 112 | u128::from(i)).to_be_bytes());
                (format!("p{i}"), vec![v4, v6])
            })
            .collect();
        let me = Me::new("p1", Some("10.0.0.1,fd00::1"), None);
        let spec = PingerSpec {
            max_peers: max as u32,
            ..PingerSpec::default()
        };
        let got: BTreeSet<String> = labels(&desired(&spec, pods(&peers), &me, &[]))
            .into_iter()
            .collect();
        let want: BTreeSet<String> =
            rendezvous::choose("p1", peers.keys().map(String::as_str), max)
                .into_iter()
                .flat_map(|n| peers[n].iter().map(IpAddr::to_string))
                .collect();
        assert_eq!(got.len(), 2 * max);
        assert_eq!(got, want);
    }

    #[test]
    fn knobs_take_the_spec_values_and_skip_bad_dns_servers() {
        let spec = PingerSpec {
            interval_seconds: 2,
            timeout_ms: 300,
            count: 4,
            max_loss_percent: 20,
            max_latency_ms: 50,
            dns_servers: vec!["10.96.0.10".into(), "bad".into()],
            ..PingerSpec::default()
        };
        let k = Knobs::from(&spec);
        assert_eq!(k.interval, Duration::from_secs(2));
        assert_eq!(k.timeout, Duration::from_millis(300));
        assert_eq!(k.count, 4);
        assert_eq!(k.limits.max_loss_percent, 20);
        assert_eq!(k.limits.max_latency_ms, 50);
        assert_eq!(k.dns_servers, vec!["10.96.0.10:53".parse().unwrap()]);
    }
}
