//! Pod network namespaces behind their node's namespace (see cluster.sh).

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use anyhow::{bail, Result};

// The plan's names and addresses, shared with cluster.sh and the
// end-to-end tests.
pub use combo_testkit::netplan::{node_index, node_ip, node_netns, pod_netns};
use combo_testkit::netplan::{node_name, pod_ip, pod_veth};

/// Pod address allocation per node: `172.30.<i>.2` .. `.254`.
#[derive(Default, Debug)]
pub struct Ipam {
    used: BTreeMap<u32, BTreeSet<u8>>,
}

impl Ipam {
    /// The lowest free pod address on node `index`.
    pub fn allocate(&mut self, index: u32) -> Option<String> {
        let used = self.used.entry(index).or_default();
        let host = (2..=254u8).find(|h| !used.contains(h))?;
        used.insert(host);
        Some(pod_ip(index, host))
    }

    /// Returns an address to the pool.
    pub fn release(&mut self, ip: &str) {
        let parts: Vec<&str> = ip.split('.').collect();
        if let (Some(Ok(index)), Some(Ok(host))) = (
            parts.get(2).map(|s| s.parse::<u32>()),
            parts.get(3).map(|s| s.parse::<u8>()),
        ) {
            if let Some(set) = self.used.get_mut(&index) {
                set.remove(&host);
            }
        }
    }
}

fn run(args: &[&str]) -> Result<()> {
    let out = Command::new(args[0]).args(&args[1..]).output()?;
    if !out.status.success() {
        bail!(
            "{} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// Makes the pod's namespace with `ip`/24 on eth0, linked to the node's cbr0,
/// default route through the node. Unprivileged ICMP is allowed in it, as
/// container runtimes do.
pub fn create_pod_netns(uid: &str, node_index: u32, ip: &str) -> Result<()> {
    let ns = pod_netns(uid);
    let node_ns = node_netns(&node_name(node_index));
    let veth = pod_veth(uid);
    let _ = delete_pod_netns(uid);
    run(&["ip", "netns", "add", &ns])?;
    run(&[
        "ip", "-n", &node_ns, "link", "add", &veth, "type", "veth", "peer", "name", "eth0",
        "netns", &ns,
    ])?;
    run(&[
        "ip", "-n", &node_ns, "link", "set", &veth, "master", "cbr0", "up",
    ])?;
    run(&["ip", "-n", &ns, "link", "set", "lo", "up"])?;
    run(&[
        "ip",
        "-n",
        &ns,
        "addr",
        "add",
        &format!("{ip}/24"),
        "dev",
        "eth0",
    ])?;
    run(&["ip", "-n", &ns, "link", "set", "eth0", "up"])?;
    // A pod deleted earlier may have had this address: the node's bridge
    // still holds its MAC for it as REACHABLE for up to 45 s and would send
    // the new pod's first packets to that gone MAC. Forget it, as a CNI
    // plugin's gratuitous ARP makes the node do.
    run(&[
        "ip", "-n", &node_ns, "neigh", "flush", "to", ip, "dev", "cbr0",
    ])?;
    run(&[
        "ip",
        "-n",
        &ns,
        "route",
        "add",
        "default",
        "via",
        &pod_ip(node_index, 1),
    ])?;
    run(&[
        "ip",
        "netns",
        "exec",
        &ns,
        "sysctl",
        "-qw",
        "net.ipv4.ping_group_range=0 2147483647",
    ])?;
    Ok(())
}

/// Removes a pod's namespace (its veth goes with it).
pub fn delete_pod_netns(uid: &str) -> Result<()> {
    run(&["ip", "netns", "del", &pod_netns(uid)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fit_linux_interface_and_namespace_limits() {
        let uid = "3f2a9c1e-8b7d-4e2f-9a1b-0c3d5e7f9a1b";
        assert_eq!(pod_netns(uid), "kcp-3f2a9c1e");
        assert!(pod_veth(uid).len() <= 15);
        assert_eq!(node_netns("node-2"), "kc-node-2");
        assert_eq!(node_index("node-12"), Some(12));
        assert_eq!(node_index("worker"), None);
        assert_eq!(node_ip(3), "172.31.0.13");
    }

    #[test]
    fn ipam_hands_out_lowest_free_address_per_node() {
        let mut ipam = Ipam::default();
        assert_eq!(ipam.allocate(1).as_deref(), Some("172.30.1.2"));
        assert_eq!(ipam.allocate(1).as_deref(), Some("172.30.1.3"));
        assert_eq!(ipam.allocate(2).as_deref(), Some("172.30.2.2"));
        ipam.release("172.30.1.2");
        assert_eq!(ipam.allocate(1).as_deref(), Some("172.30.1.2"));
        for _ in 0..252 {
            ipam.allocate(5).unwrap();
        }
        assert_eq!(ipam.allocate(5), Some("172.30.5.254".into()));
        assert_eq!(ipam.allocate(5), None);
    }
}
