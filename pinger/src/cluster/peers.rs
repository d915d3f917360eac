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

/// What a pinger in a pod needs to know about itself.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Me {
    /// Own pod name: never its own peer.
    pub pod: String,
    /// Own pod IP, if known: never its own peer either.
    pub ip: Option<IpAddr>,
}

/// Where the peers come from: the list the operator wrote on the own pod,
/// or the Debugger's pods the pinger follows itself (docs/pinger.md,
/// "Peer discovery").
#[derive(Clone, Copy, Debug)]
pub struct Known<'a> {
    /// The own pod's list, parsed; None while it has none.
    pub listed: Option<&'a [IpAddr]>,
    /// The Debugger's pods that are peers, by name, from the table watch.
    pub pods: &'a BTreeMap<String, IpAddr>,
}

/// The targets of a spec, with the peers and gateways it asks for. With a
/// bounded `spec.maxPeers` ([`peers::listed`]) the peers are the listed
/// addresses, none while there is no list; otherwise every peer pod or
/// `spec.maxPeers` of them, chosen by [`rendezvous::choose`]. Never the
/// pod itself.
pub fn desired(spec: &PingerSpec, known: Known<'_>, me: &Me, gateways: &[IpAddr]) -> TargetSet {
    let mut extra: Vec<IpAddr> = Vec::new();
    if peers::listed(spec.peers, spec.max_peers) {
        let listed = known.listed.unwrap_or_default();
        extra.extend(listed.iter().filter(|ip| Some(**ip) != me.ip));
    } else if spec.peers {
        let pods = known.pods;
        let candidates = pods
            .iter()
            .filter(|(name, ip)| **name != me.pod && Some(**ip) != me.ip)
            .map(|(name, _)| name.as_str());
        let max = usize::try_from(spec.max_peers).unwrap_or(usize::MAX);
        extra.extend(
            rendezvous::choose(&me.pod, candidates, max)
                .into_iter()
                .map(|name| pods[name]),
        );
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

    /// The peer pods of the table watch, without a list.
    fn pods(pods: &BTreeMap<String, IpAddr>) -> Known<'_> {
        Known { listed: None, pods }
    }

    fn labels(set: &TargetSet) -> Vec<String> {
        set.targets.iter().map(|t| t.label()).collect()
    }

    fn ips(list: &[&str]) -> Vec<IpAddr> {
        list.iter().map(|s| s.parse().unwrap()).collect()
    }

    #[test]
    fn peers_exclude_the_pod_itself_and_follow_the_peers_switch() {
        let peers: BTreeMap<String, IpAddr> = [
            ("a".to_string(), "10.0.0.1".parse().unwrap()),
            ("b".to_string(), "10.0.0.2".parse().unwrap()),
            ("c".to_string(), "10.0.0.3".parse().unwrap()),
        ]
        .into();
        let me = Me {
            pod: "a".into(),
            ip: Some("10.0.0.3".parse().unwrap()),
        };
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
        let peers: BTreeMap<String, IpAddr> = (1..=max + 50)
            .map(|i| {
                (
                    format!("p{i}"),
                    IpAddr::from((0x0a00_0000 + i as u32).to_be_bytes()),
                )
            })
            .collect();
        let me = Me {
            pod: "p1".into(),
            ip: Some("10.0.0.1".parse().unwrap()),
        };
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
            .map(|n| peers[n])
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
        let pods: BTreeMap<String, IpAddr> = (1..=9u8)
            .map(|i| (format!("p{i}"), IpAddr::from([10, 0, 1, i])))
            .collect();
        let me = Me {
            pod: "p1".into(),
            ip: Some("10.0.0.1".parse().unwrap()),
        };
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
