//! Which peers a pinger probes, and how the operator tells it. Pure.
//!
//! With `peers: true` and `maxPeers` between 1 and [`LIST_MAX`], the
//! operator follows the pods of each Debugger, chooses each pod's peers by
//! [`rendezvous`] hashing and applies them to the pod as the annotation
//! [`keys::ANNOTATION_PEERS`](crate::keys::ANNOTATION_PEERS). The pinger
//! learns its list from the watch of its own pod. What a pinger receives
//! then grows with `maxPeers`, not with the Debugger's pods: a pod coming or
//! going rewrites the lists of about `maxPeers` probers, and no other.
//!
//! With `maxPeers: 0` (all peers) or above [`LIST_MAX`] each list would hold
//! most of the pods anyway, so the pinger follows the pods itself.

pub mod rendezvous;

use std::net::IpAddr;

/// The largest `maxPeers` the operator writes lists for. A list holds every
/// address of each peer (both of a dual-stack pod): 1,000 dual-stack peers
/// at their widest (IPv4 and a full IPv6 address each) are under 56 KB.
/// Coverage adds peers to some lists beyond `maxPeers`, with no fixed bound
/// per list (it adds them only to pods too few others chose, which with a
/// `maxPeers` near this one almost never happens); as many peers again
/// would still be under 112 KB, within the 256 KiB Kubernetes allows for
/// all of a pod's annotations.
pub const LIST_MAX: u32 = 1000;

/// Whether peers come from the operator's list for this spec (`true`), or
/// the pinger follows its Debugger's pods itself (`false`; also when
/// `peers` is off, as there is nothing to follow then).
pub fn listed(peers: bool, max_peers: u32) -> bool {
    peers && (1..=LIST_MAX).contains(&max_peers)
}

/// The annotation value of a list: the addresses, sorted, joined by
/// commas; empty when there are none.
pub fn format(ips: &[IpAddr]) -> String {
    let mut sorted = ips.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    sorted
        .iter()
        .map(IpAddr::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// The addresses of an annotation value, and the entries that are no
/// address (skipped, for the caller to log).
pub fn parse(value: &str) -> (Vec<IpAddr>, Vec<String>) {
    let mut ips = Vec::new();
    let mut bad = Vec::new();
    for entry in value.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        match entry.parse() {
            Ok(ip) => ips.push(ip),
            Err(_) => bad.push(entry.to_string()),
        }
    }
    ips.sort_unstable();
    ips.dedup();
    (ips, bad)
}

/// The annotation value naming the node of each address: `address=node`
/// pairs in address order, joined by commas; empty when there are none.
pub fn format_nodes<'a>(pairs: impl IntoIterator<Item = (IpAddr, &'a str)>) -> String {
    let mut sorted: Vec<(IpAddr, &str)> =
        pairs.into_iter().filter(|(_, n)| !n.is_empty()).collect();
    sorted.sort_unstable();
    sorted.dedup_by_key(|(ip, _)| *ip);
    sorted
        .iter()
        .map(|(ip, node)| format!("{ip}={node}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// The node of each address of a [`format_nodes`] value; entries that do
/// not parse are skipped.
pub fn parse_nodes(value: &str) -> std::collections::BTreeMap<IpAddr, String> {
    value
        .split(',')
        .filter_map(|entry| {
            let (ip, node) = entry.trim().split_once('=')?;
            let node = node.trim();
            (!node.is_empty()).then(|| Some((ip.trim().parse().ok()?, node.to_string())))?
        })
        .collect()
}

/// Every address of a pod: each entry of its `status.podIPs` that is an
/// address (both of a dual-stack pod), repeats kept once, in the order
/// given; `status.podIP` when no entry is one. The operator's lists and the
/// pinger's own view of the pods read a pod through this, so both probe
/// the same addresses.
pub fn pod_addresses<'a>(
    pod_ips: impl IntoIterator<Item = &'a str>,
    pod_ip: Option<&str>,
) -> Vec<IpAddr> {
    let mut out: Vec<IpAddr> = Vec::new();
    for ip in pod_ips.into_iter().filter_map(|ip| ip.trim().parse().ok()) {
        if !out.contains(&ip) {
            out.push(ip);
        }
    }
    if out.is_empty() {
        out.extend(pod_ip.and_then(|ip| ip.trim().parse::<IpAddr>().ok()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ips(all: &[&str]) -> Vec<IpAddr> {
        all.iter().map(|s| s.parse().unwrap()).collect()
    }

    #[test]
    fn a_pod_is_probed_on_each_of_its_pod_ips_or_else_its_pod_ip() {
        let dual = ["10.0.0.2", "fd00::2"];
        assert_eq!(
            pod_addresses(dual, Some("10.0.0.2")),
            ips(&["10.0.0.2", "fd00::2"])
        );
        // Order as given, repeats once.
        assert_eq!(
            pod_addresses(["fd00::2", "10.0.0.2", "fd00::2"], None),
            ips(&["fd00::2", "10.0.0.2"])
        );
        // An API server that fills only podIP (or a pod just scheduled).
        assert_eq!(pod_addresses([], Some("10.0.0.3")), ips(&["10.0.0.3"]));
        // Entries that are no address are skipped; with none left, podIP.
        assert_eq!(
            pod_addresses(["pending", "10.0.0.300"], Some("10.0.0.4")),
            ips(&["10.0.0.4"])
        );
        assert_eq!(
            pod_addresses(["x", "fd00::5"], Some("10.0.0.5")),
            ips(&["fd00::5"])
        );
        assert!(pod_addresses([], None).is_empty());
        assert!(pod_addresses([], Some("")).is_empty());
    }

    #[test]
    fn the_nodes_of_a_list_read_back_as_written_and_bad_entries_are_skipped() {
        let pairs = [
            ("fd00::7".parse().unwrap(), "node-7"),
            ("10.0.0.9".parse().unwrap(), "node-9"),
            ("10.0.0.7".parse().unwrap(), "node-7"),
            ("10.0.0.8".parse().unwrap(), ""),
        ];
        let value = format_nodes(pairs);
        assert_eq!(value, "10.0.0.7=node-7,10.0.0.9=node-9,fd00::7=node-7");
        let back = parse_nodes(&value);
        assert_eq!(back.len(), 3);
        assert_eq!(back[&"fd00::7".parse::<IpAddr>().unwrap()], "node-7");
        let odd = parse_nodes(" 10.0.0.1 = a ,x=b,10.0.0.2=,10.0.0.3,,");
        assert_eq!(odd.len(), 1);
        assert_eq!(odd[&"10.0.0.1".parse::<IpAddr>().unwrap()], "a");
        assert_eq!(format_nodes([]), "");
    }

    #[test]
    fn a_list_reads_back_as_written_in_address_order() {
        let ips: Vec<IpAddr> = ["10.0.0.9", "fd00::1", "10.0.0.10", "10.0.0.9"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        let value = format(&ips);
        assert_eq!(value, "10.0.0.9,10.0.0.10,fd00::1");
        let (back, bad) = parse(&value);
        assert_eq!(format(&back), value);
        assert!(bad.is_empty());
        assert_eq!(format(&[]), "");
        assert_eq!(parse(""), (Vec::new(), Vec::new()));
    }

    #[test]
    fn entries_that_are_no_address_are_skipped_and_named() {
        let (ips, bad) = parse(" 10.0.0.1 ,,peer-2,10.0.0.300,::1");
        assert_eq!(
            ips,
            [
                "10.0.0.1".parse::<IpAddr>().unwrap(),
                "::1".parse().unwrap()
            ]
        );
        assert_eq!(bad, ["peer-2", "10.0.0.300"]);
    }

    #[test]
    fn lists_are_used_for_a_bounded_max_and_never_without_peers() {
        assert!(listed(true, 1));
        assert!(listed(true, 20));
        assert!(listed(true, LIST_MAX));
        assert!(!listed(true, 0));
        assert!(!listed(true, LIST_MAX + 1));
        assert!(!listed(false, 20));
    }

    #[test]
    fn the_largest_list_fits_a_pods_annotations() {
        // LIST_MAX dual-stack peers, each address at its longest.
        let widest: Vec<IpAddr> = (0..LIST_MAX)
            .flat_map(|i| {
                let v4 = format!("255.255.{}.{}", 100 + i / 156, 100 + i % 156);
                let v6 = format!("fd12:3456:789a:bcde:f012:3456:789a:{:x}", 0x1000 + i);
                [v4.parse().unwrap(), v6.parse().unwrap()]
            })
            .collect();
        let value = format(&widest);
        assert_eq!(parse(&value).0.len(), 2 * LIST_MAX as usize);
        // Room for as many peers again (coverage) within 128 KiB, half of
        // what Kubernetes allows for all annotations.
        assert!(value.len() < 64 * 1024, "{} bytes", value.len());
    }
}
