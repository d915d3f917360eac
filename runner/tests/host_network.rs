//! The checks of the node's network namespace trust `COMBO_HOST_NETWORK`,
//! which the operator sets from the pod's hostNetwork, over a comparison
//! with PID 1's namespace: a node's PID 1 need not be in the node's network
//! namespace (docs/checks.md, "What the pod sees"). Unset, as in local mode,
//! they compare. Fixture trees stand in for `/proc`; the kubelet's healthz
//! is a loopback listener.

mod support;

use std::net::TcpListener;
use std::path::Path;

use support::scripts::{run_full, ROUTE_HEADER};
use support::Tree;

const DEFAULT_ROUTE: &str = "eth0\t00000000\t0100000A\t0003\t0\t0\t0\t00000000\t0\t0\t0\n";
const SUBNET_ROUTE: &str = "eth0\t0000000A\t00000000\t0001\t0\t0\t0\t000000FF\t0\t0\t0\n";

/// `COMBO_HOST_NETWORK` as the operator sets it, or unset.
const UNSET: Option<&str> = None;
const HOST: Option<&str> = Some("true");
const OWN: Option<&str> = Some("false");

/// Runs `scripts/<rel>` with HOST_ROOT at `root`, fake tools first in PATH
/// and `COMBO_HOST_NETWORK` as given; `item`'s verdict: `ok`, `err: <message>`,
/// `skip: <reason>` or `absent`.
fn verdict(
    rel: &str,
    root: &Path,
    host_network: Option<&str>,
    env: &[(&str, &str)],
    item: &str,
) -> String {
    let hn = host_network.map(|v| ("COMBO_HOST_NETWORK", v));
    let all: Vec<(&str, &str)> = hn.into_iter().chain(env.iter().copied()).collect();
    let (items, skips) = run_full(rel, root, &all);
    match (items.get(item), skips.get(item)) {
        (Some(None), _) => "ok".into(),
        (Some(Some(msg)), _) => format!("err: {msg}"),
        (None, Some(why)) => format!("skip: {why}"),
        (None, None) => "absent".into(),
    }
}

/// PID 1 of the tree in a network namespace that is not this process's,
/// as the machine's PID 1 is for a kubelet in a namespace of its own.
fn pid1_elsewhere(t: &Tree) {
    t.symlink("proc/1/ns/net", "net:[1]");
}

/// PID 1 of the tree in this process's network namespace.
fn pid1_here(t: &Tree) {
    let _ = std::fs::remove_file(t.join("proc/1/ns/net"));
    let ns = std::fs::read_link("/proc/self/ns/net").unwrap();
    t.symlink("proc/1/ns/net", ns.to_str().unwrap());
}

#[test]
fn default_route_is_read_in_the_pods_namespace_with_host_network_else_pid_1s() {
    let t = Tree::new("hostnet-route");
    // PID 1 (the machine) has a default route; the node's namespace, this
    // process's, has lost it.
    t.file(
        "proc/1/net/route",
        &format!("{ROUTE_HEADER}{DEFAULT_ROUTE}"),
        0o644,
    );
    t.file(
        "proc/self/net/route",
        &format!("{ROUTE_HEADER}{SUBNET_ROUTE}"),
        0o644,
    );
    let route = |hn| verdict("net/route.sh", t.path(), hn, &[], "default-route");
    assert_eq!(route(HOST), "err: no default route (IPv4 or IPv6)");
    assert_eq!(route(OWN), "ok");
    assert_eq!(route(UNSET), "ok");
    // The other way round: the node's namespace has one, PID 1's not.
    t.file(
        "proc/1/net/route",
        &format!("{ROUTE_HEADER}{SUBNET_ROUTE}"),
        0o644,
    );
    t.file(
        "proc/self/net/route",
        &format!("{ROUTE_HEADER}{DEFAULT_ROUTE}"),
        0o644,
    );
    assert_eq!(route(HOST), "ok");
    assert!(route(OWN).starts_with("err: no default route"));
    assert!(route(UNSET).starts_with("err: no default route"));
}

#[test]
fn conntrack_is_judged_when_the_pod_has_host_network_whatever_pid_1s_namespace() {
    let t = Tree::new("hostnet-conntrack");
    t.file("proc/sys/net/netfilter/nf_conntrack_count", "900\n", 0o644);
    t.file("proc/sys/net/netfilter/nf_conntrack_max", "1000\n", 0o644);
    pid1_elsewhere(&t);
    let conntrack = |hn| verdict("net/conntrack.sh", t.path(), hn, &[], "conntrack");
    assert_eq!(
        conntrack(HOST),
        "err: 900 of 1000 conntrack entries used (90%, limit 80%)"
    );
    let own = "skip: not in the node's network namespace (needs hostNetwork)";
    assert_eq!(conntrack(OWN), own);
    assert_eq!(conntrack(UNSET), own);
    // Unset, sharing PID 1's namespace is what tells.
    pid1_here(&t);
    assert!(conntrack(UNSET).starts_with("err: 900 of 1000"));
    assert_eq!(conntrack(OWN), own, "the pod spec wins over PID 1");
    t.file("proc/sys/net/netfilter/nf_conntrack_count", "100\n", 0o644);
    assert_eq!(conntrack(HOST), "ok");
}

#[test]
fn kubelet_healthz_of_the_pods_namespace_is_red_when_the_kubelet_is_gone_or_stopped() {
    let t = Tree::new("hostnet-kubelet");
    std::fs::create_dir_all(t.join("var/lib/kubelet/pki")).unwrap();
    pid1_elsewhere(&t);
    let healthz = |hn, addr: &str| {
        let env = [("SVC_KUBELET_HEALTHZ", addr), ("SVC_HTTP_TIMEOUT", "1")];
        verdict("svc/kubelet.sh", t.path(), hn, &env, "kubelet-healthz")
    };
    let kubelet = support::http_once("200 OK", "ok", 3);
    assert_eq!(healthz(HOST, &kubelet), "ok");
    let own = "skip: not in the node's network namespace (needs hostNetwork)";
    assert_eq!(healthz(OWN, &kubelet), own);
    assert_eq!(healthz(UNSET, &kubelet), own);
    // Stopped (SIGSTOP): the kernel accepts the connection, nobody answers.
    let stopped = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = stopped.local_addr().unwrap().to_string();
    assert_eq!(
        healthz(HOST, &addr),
        format!(
            "err: no answer from http://{addr}/healthz within 1s (the kubelet is not running or hangs)"
        )
    );
    // Gone: nothing listens.
    drop(stopped);
    assert!(
        healthz(HOST, &addr).starts_with("err: no answer from http://"),
        "{}",
        healthz(HOST, &addr)
    );
    // Unset and in PID 1's namespace (local mode on the node): judged.
    pid1_here(&t);
    assert_eq!(healthz(UNSET, &kubelet), "ok");
}

#[test]
fn address_conflicts_use_the_pods_namespace_with_host_network() {
    let t = Tree::new("hostnet-ipconflict");
    let inet6 = |dad_failed: bool| {
        format!(
            "fe800000000000000000000000000001 02 40 20 {}     eth0\n",
            if dad_failed { "88" } else { "80" }
        )
    };
    t.file("proc/1/net/if_inet6", &inet6(false), 0o644);
    t.file("proc/self/net/if_inet6", &inet6(true), 0o644);
    t.script("fakebin/arping", "exit 0");
    t.script(
        "fakebin/ip",
        "echo '2: eth0    inet 10.0.0.5/24 brd 10.0.0.255 scope global eth0\\       valid_lft forever'",
    );
    pid1_elsewhere(&t);
    let check = |hn, item| verdict("net/ipconflict.sh", t.path(), hn, &[], item);
    assert!(check(HOST, "dad:eth0").starts_with("err: IPv6 duplicate address"));
    assert_eq!(check(OWN, "dad:eth0"), "ok");
    assert_eq!(check(HOST, "ipv4:10.0.0.5"), "ok");
    assert_eq!(check(OWN, "ipv4:10.0.0.5"), "absent");
    assert_eq!(
        check(OWN, "ipv4-conflict"),
        "skip: not in the node's network namespace (needs hostNetwork)"
    );
}

#[test]
fn the_runner_passes_its_host_network_variable_to_the_scripts() {
    let t = Tree::new("hostnet-runner");
    t.script(
        "net/hostnet.sh",
        "echo \"ok host-network:${COMBO_HOST_NETWORK:-unset}\"",
    );
    let dir = t.path().to_str().unwrap();
    for (value, item) in [
        ("true", "host-network:true"),
        ("false", "host-network:false"),
    ] {
        let out = support::runner(
            &["--once", "--output", "yaml", "--scripts", dir],
            &[("COMBO_HOST_NETWORK", value)],
        );
        let y: serde_yaml::Value = serde_yaml::from_slice(&out.stdout).unwrap();
        assert!(y["net"].get(item).is_some(), "{value}: {y:?}");
    }
}
