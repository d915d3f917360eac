//! Which pods of the Debugger are peers, and what the pinger should probe.
//! Pure.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

use combo_api::pinger::parse_dns_server;
use combo_api::PingerSpec;

use crate::round::Thresholds;
use crate::targets::{self, TargetLists, TargetSet};
use combo_api::peers::rendezvous;

/// What a pinger in a pod needs to know about itself.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Me {
    /// Own pod name: never its own peer.
    pub pod: String,
    /// Own pod IP, if known: never its own peer either.
    pub ip: Option<IpAddr>,
}

/// The targets of a spec, with the peers and gateways it asks for: at most
/// `spec.maxPeers` peers, chosen by [`rendezvous::choose`].
pub fn desired(
    spec: &PingerSpec,
    peers: &BTreeMap<String, IpAddr>,
    me: &Me,
    gateways: &[IpAddr],
) -> TargetSet {
    let mut extra: Vec<IpAddr> = Vec::new();
    if spec.peers {
        let candidates = peers
            .iter()
            .filter(|(name, ip)| **name != me.pod && Some(**ip) != me.ip)
            .map(|(name, _)| name.as_str());
        let max = usize::try_from(spec.max_peers).unwrap_or(usize::MAX);
        extra.extend(
            rendezvous::choose(&me.pod, candidates, max)
                .into_iter()
                .map(|name| peers[name]),
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
        let spec = PingerSpec::default();
        let set = desired(&spec, &peers, &me, &gw);
        let labels: Vec<String> = set.targets.iter().map(|t| t.label()).collect();
        assert_eq!(labels, ["10.0.0.2"]);
        let spec = PingerSpec {
            peers: false,
            gateway: true,
            ping: vec!["10.9.9.9".into()],
            ..PingerSpec::default()
        };
        let labels: Vec<String> = desired(&spec, &peers, &me, &gw)
            .targets
            .iter()
            .map(|t| t.label())
            .collect();
        assert_eq!(labels, ["10.0.0.254", "10.9.9.9"]);
    }

    #[test]
    fn at_most_max_peers_are_probed_and_the_choice_is_the_rendezvous_one() {
        let peers: BTreeMap<String, IpAddr> = (1..=50u8)
            .map(|i| (format!("p{i}"), IpAddr::from([10, 0, 0, i])))
            .collect();
        let me = Me {
            pod: "p1".into(),
            ip: Some("10.0.0.1".parse().unwrap()),
        };
        let spec = PingerSpec {
            max_peers: 7,
            ..PingerSpec::default()
        };
        let got: Vec<IpAddr> = desired(&spec, &peers, &me, &[])
            .targets
            .iter()
            .map(|t| match t.host {
                combo_api::pinger::Host::Ip(ip) => ip,
                _ => unreachable!("peers are addresses"),
            })
            .collect();
        let mut want: Vec<IpAddr> = rendezvous::choose("p1", peers.keys().map(String::as_str), 7)
            .into_iter()
            .map(|n| peers[n])
            .collect();
        want.sort();
        assert_eq!(got, want);
        let all = PingerSpec {
            max_peers: 0,
            ..PingerSpec::default()
        };
        assert_eq!(desired(&all, &peers, &me, &[]).targets.len(), 49);
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
