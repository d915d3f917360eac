//! The scripts that connect to an endpoint, against fixture trees and loopback
//! listeners: the kubelet's healthz, the runtime socket and the API server
//! (`svc/kubelet.sh`), DNS (`net/dns.sh`) and storage (`net/storage.sh`).

mod support;

use std::net::TcpListener;

use support::scripts::{err, host_netns, ok, run, run_full, skipped, skips, Items};
use support::Tree;

/// The built runner, which `svc/kubelet.sh` connects to sockets with.
const RUNNER: &str = env!("CARGO_BIN_EXE_combo-runner");

/// Runs `svc/kubelet.sh` on `t` with the runner as `COMBO_RUNNER` and `env`.
fn kubelet(t: &Tree, env: &[(&str, &str)]) -> Items {
    let mut all = vec![("COMBO_RUNNER", RUNNER)];
    all.extend_from_slice(env);
    run("svc/kubelet.sh", t.path(), &all)
}

/// Runs `svc/kubelet.sh` on `t` with the kubelet's healthz at `addr`.
fn kubelet_healthz_at(t: &Tree, addr: &str) -> Items {
    kubelet(t, &[("SVC_KUBELET_HEALTHZ", addr)])
}

/// Runs `svc/kubelet.sh` on `t` with the API server at `addr`
/// (`host:port`).
fn apiserver_at(t: &Tree, addr: &str) -> Items {
    let (host, port) = addr.split_once(':').unwrap();
    kubelet(
        t,
        &[
            ("KUBERNETES_SERVICE_HOST", host),
            ("KUBERNETES_SERVICE_PORT", port),
        ],
    )
}

/// On a machine that is no node every item is skipped, also where a
/// kubelet left directories behind; then a node without hostNetwork.
fn kubelet_checks_skip_off_a_node_and_without_host_network(t: &Tree, env: &[(&str, &str)]) {
    // Not a node: every item skipped.
    let (items, s) = run_full("svc/kubelet.sh", t.path(), env);
    assert!(items.is_empty(), "{items:?}");
    skipped(&s, "kubelet-healthz", "not a Kubernetes node");
    skipped(&s, "runtime-socket", "not a Kubernetes node");
    skipped(&s, "apiserver", "no KUBERNETES_SERVICE_HOST");
    // What a kubelet leaves behind on a machine that is no node.
    std::fs::create_dir_all(t.join("var/lib/kubelet/device-plugins")).unwrap();
    skipped(
        &skips("svc/kubelet.sh", t.path(), env),
        "runtime-socket",
        "not a Kubernetes node",
    );
    std::fs::create_dir_all(t.join("var/lib/kubelet/pki")).unwrap();
    skipped(
        &skips("svc/kubelet.sh", t.path(), env),
        "kubelet-healthz",
        "needs hostNetwork",
    );
}

/// Two kubelets, of node-1 and node-2, each naming its runtime endpoint:
/// the one of this node counts.
fn runtime_socket_of_this_nodes_kubelet(t: &Tree) {
    t.file(
        "proc/4321/cmdline",
        "/usr/bin/kubelet\0--container-runtime-endpoint\0unix:///node-1/containerd.sock\0--hostname-override=node-1\0",
        0o644,
    );
    t.file(
        "proc/4322/cmdline",
        "/usr/bin/kubelet\0--container-runtime-endpoint=unix:///run/containerd/containerd.sock\0--hostname-override\0node-2\0",
        0o644,
    );
    let items = kubelet(t, &[("SVC_KUBELET_HEALTHZ", ""), ("NODE_NAME", "node-1")]);
    err(
        &items,
        "runtime-socket",
        "runtime endpoint /node-1/containerd.sock: no such file",
    );
    assert!(
        !items.contains_key("kubelet-healthz"),
        "empty SVC_KUBELET_HEALTHZ: {items:?}"
    );
    ok(
        &kubelet(t, &[("SVC_KUBELET_HEALTHZ", ""), ("NODE_NAME", "node-2")]),
        "runtime-socket",
    );
}

#[test]
fn kubelet_healthz_runtime_socket_and_apiserver() {
    let t = Tree::new("kubelet");
    let healthy = support::http_once("200 OK", "ok", 1);
    let env = [("SVC_KUBELET_HEALTHZ", healthy.as_str())];
    kubelet_checks_skip_off_a_node_and_without_host_network(&t, &env);
    host_netns(&t);
    let sock = t.join("run/containerd/containerd.sock");
    std::fs::create_dir_all(sock.parent().unwrap()).unwrap();
    let _l = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let items = kubelet(&t, &env);
    ok(&items, "kubelet-healthz");
    ok(&items, "runtime-socket");
    let sick = support::http_once("500 Internal Server Error", "[-]syncloop failed", 1);
    err(
        &kubelet_healthz_at(&t, &sick),
        "kubelet-healthz",
        "healthz answered HTTP/1.1 500 Internal Server Error: [-]syncloop failed",
    );
    let closed = support::closed_port();
    err(
        &kubelet_healthz_at(&t, &closed),
        "kubelet-healthz",
        "no answer from http://",
    );
    runtime_socket_of_this_nodes_kubelet(&t);
    let api = support::http_once("200 OK", "ok", 1);
    ok(&apiserver_at(&t, &api), "apiserver");
    err(
        &apiserver_at(&t, &closed),
        "apiserver",
        "no TCP connection to the API server",
    );
}

/// A stand-in `combo-runner` in `fakebin` that appends its arguments to
/// the tree's `args` file and answers as `combo-runner dns` does; its path.
fn fake_runner(t: &Tree) -> String {
    t.script(
        "fakebin/fake-runner",
        &format!(
            "echo \"$*\" >> '{}'\necho 'resolving' >&2\n\
             case \"$*\" in\n\
               *--server*) echo 'err dns:10.96.0.10/udp SERVFAIL'; echo 'ok dns:10.96.0.10/tcp' ;;\n\
               *) echo 'ok dns:127.0.0.1/udp'; echo 'ok dns:127.0.0.1/tcp' ;;\n\
             esac",
            t.join("args").display()
        ),
    );
    t.join("fakebin/fake-runner").to_str().unwrap().to_string()
}

/// The arguments the fake runner was called with since the last call,
/// one call a line.
fn runner_calls(t: &Tree) -> String {
    let calls = t.read("args");
    std::fs::remove_file(t.join("args")).unwrap();
    calls
}

#[test]
fn dns_passes_the_runner_dns_lines_through() {
    let t = Tree::new("dns");
    t.file("etc/resolv.conf", "search x\nnameserver 127.0.0.1\n", 0o644);
    let skipped_without = skips("net/dns.sh", t.path(), &[]);
    skipped(&skipped_without, "dns", "no COMBO_RUNNER");
    let runner = fake_runner(&t);
    let dns = |extra: &[(&str, &str)]| {
        let mut env = vec![("COMBO_RUNNER", runner.as_str())];
        env.extend_from_slice(extra);
        run_full("net/dns.sh", t.path(), &env)
    };
    let conf = t.join("etc/resolv.conf");
    let items = dns(&[]).0;
    ok(&items, "dns:127.0.0.1/udp");
    ok(&items, "dns:127.0.0.1/tcp");
    assert_eq!(
        runner_calls(&t).trim(),
        format!(
            "dns --name kubernetes.default.svc.cluster.local --resolv-conf {}",
            conf.display()
        ),
        "the node's own resolvers: any answer will do"
    );
    let items = dns(&[
        ("NET_DNS_NAME", "example.org"),
        ("NET_CLUSTER_DNS", "10.96.0.10"),
    ])
    .0;
    err(&items, "dns:10.96.0.10/udp", "SERVFAIL");
    ok(&items, "dns:10.96.0.10/tcp");
    assert_eq!(
        runner_calls(&t).lines().collect::<Vec<_>>(),
        [
            format!(
                "dns --name example.org --resolv-conf {} --must-exist",
                conf.display()
            ),
            "dns --name example.org --server 10.96.0.10 --must-exist".to_string(),
        ]
    );
    dns(&[("NET_DNS_TRANSPORTS", "udp")]);
    assert_eq!(
        t.read("args").trim(),
        format!(
            "dns --name kubernetes.default.svc.cluster.local --udp --resolv-conf {}",
            conf.display()
        ),
        "only UDP asked"
    );
    t.script(
        "fakebin/fake-runner",
        "echo 'error: unrecognized subcommand dns' >&2; exit 2",
    );
    skipped(&dns(&[]).1, "dns", "unrecognized subcommand");
    t.script(
        "fakebin/fake-runner",
        "echo 'cannot open socket' >&2; exit 1",
    );
    err(&dns(&[]).0, "dns", "exited 1: cannot open socket");
    t.file("etc/resolv.conf", "search x\n", 0o644);
    err(&dns(&[]).0, "nameservers", "no nameserver");
}

#[test]
fn storage_endpoints_accept_connections() {
    let t = Tree::new("storage");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let open = listener.local_addr().unwrap().to_string();
    let closed = support::closed_port();
    assert!(run("net/storage.sh", t.path(), &[]).is_empty());
    let targets = format!("{open} {closed}");
    let items = run(
        "net/storage.sh",
        t.path(),
        &[
            ("NET_STORAGE_TARGETS", &targets),
            ("NET_STORAGE_TIMEOUT", "1"),
        ],
    );
    ok(&items, &format!("storage:{open}"));
    err(
        &items,
        &format!("storage:{closed}"),
        "no TCP connection within 1s",
    );
}
