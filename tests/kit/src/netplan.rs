//! The test cluster's network plan (docs/testing.md, "Network plan"):
//! the names and addresses of the simulated and real nodes and their pods.
//! Its shell copy is `tests/e2e/netplan.sh`, which `cluster.sh` and
//! `realnodes.sh` source; the test below checks that the two agree.

/// The host's bridge every node is on.
pub const BRIDGE: &str = "kcbr0";
/// The host's address on [`BRIDGE`]: the API server, DNS and the registry.
pub const HOST_IP: &str = "172.31.0.1";
/// The image registry of the real nodes, on [`HOST_IP`].
pub const REGISTRY: &str = "172.31.0.1:5000";
/// The same images as [`REGISTRY`], served only with the user and
/// password of `<cluster dir>/private-registry.auth` (basic
/// authentication; docs/testing.md, "Real nodes").
pub const PRIVATE_REGISTRY: &str = "172.31.0.1:5001";

/// The name of simulated node `i`.
pub fn node_name(i: u32) -> String {
    format!("node-{i}")
}

/// Index `i` of simulated node `node-<i>`.
pub fn node_index(node: &str) -> Option<u32> {
    node.strip_prefix("node-")?.parse().ok()
}

/// The network namespace of a node, simulated (`node-<i>`) or real
/// (`real-<i>`), by its name: a rule put there applies to all traffic of
/// the node's pods.
pub fn node_netns(node: &str) -> String {
    format!("kc-{node}")
}

/// The InternalIP of simulated node `i`.
pub fn node_ip(i: u32) -> String {
    format!("172.31.0.{}", 10 + i)
}

/// Pod address `host` in the subnet of simulated node `i`; `.1` is the
/// node's bridge.
pub fn pod_ip(i: u32, host: u8) -> String {
    format!("172.30.{i}.{host}")
}

/// The pod subnet of simulated node `i`.
pub fn node_subnet(i: u32) -> String {
    format!("{}/24", pod_ip(i, 0))
}

/// The address of real node `i`.
pub fn real_ip(i: u32) -> String {
    format!("172.31.0.{}", 100 + i)
}

/// The pod subnet of real node `i`.
pub fn real_subnet(i: u32) -> String {
    format!("172.30.{}.0/24", 100 + i)
}

/// The network namespace of a pod of a simulated node, by its UID.
pub fn pod_netns(uid: &str) -> String {
    format!("kcp-{}", short(uid))
}

/// The node-side veth of a pod of a simulated node (interface names have
/// at most 15 bytes).
pub fn pod_veth(uid: &str) -> String {
    format!("kcv{}", short(uid))
}

fn short(uid: &str) -> String {
    uid.chars().filter(|c| *c != '-').take(8).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use std::process::Command;

    /// What `tests/e2e/netplan.sh` prints for `script`.
    fn shell(script: &str) -> String {
        let plan = Path::new(env!("CARGO_MANIFEST_DIR")).join("../e2e/netplan.sh");
        let out = Command::new("bash")
            .arg("-c")
            .arg(format!("source \"$0\"; {script}"))
            .arg(&plan)
            .output()
            .expect("bash runs");
        assert!(out.status.success(), "{script}: {out:?}");
        String::from_utf8(out.stdout)
            .unwrap()
            .trim_end()
            .to_string()
    }

    #[test]
    fn shell_plan_agrees_with_this_one() {
        assert_eq!(shell("echo $bridge"), BRIDGE);
        assert_eq!(shell("echo $host_ip"), HOST_IP);
        assert_eq!(shell("echo $registry"), REGISTRY);
        assert_eq!(shell("echo $private_registry"), PRIVATE_REGISTRY);
        assert_eq!(shell("echo $pod_netns_prefix"), pod_netns("")[..]);
        for i in [1, 3, 42] {
            assert_eq!(shell(&format!("node_netns {i}")), node_netns(&node_name(i)));
            assert_eq!(shell(&format!("node_ip {i}")), node_ip(i));
            assert_eq!(shell(&format!("node_subnet {i}")), node_subnet(i));
            assert_eq!(shell(&format!("node_gateway {i}")), pod_ip(i, 1));
            assert_eq!(
                shell(&format!("real_netns {i}")),
                node_netns(&format!("real-{i}"))
            );
            assert_eq!(shell(&format!("real_ip {i}")), real_ip(i));
            assert_eq!(shell(&format!("real_subnet {i}")), real_subnet(i));
            assert_eq!(
                shell(&format!("real_gateway {i}")),
                real_subnet(i).replace(".0/24", ".1")
            );
        }
    }

    #[test]
    fn a_pod_netns_is_named_by_its_uid_without_dashes() {
        assert_eq!(pod_netns("1a2b-3c4d-5e6f"), "kcp-1a2b3c4d");
        assert_eq!(pod_veth("1a2b-3c4d-5e6f"), "kcv1a2b3c4d");
        assert_eq!(node_index("node-7"), Some(7));
        assert_eq!(node_index("real-7"), None);
    }
}
