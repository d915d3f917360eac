//! The scripts that connect to an endpoint, against fixture trees and loopback
//! listeners: the kubelet's healthz, the runtime socket and the API server
//! (`svc/kubelet.sh`), DNS (`net/dns.sh`) and storage (`net/storage.sh`).

mod support;

use std::net::TcpListener;

use support::scripts::{err, host_netns, ok, run, run_full, skipped, skips};
use support::Tree;

#[test]
fn kubelet_healthz_runtime_socket_and_apiserver() {
    let t = Tree::new("kubelet");
    let healthy = support::http_once("200 OK", "ok", 1);
    let env = [("SVC_KUBELET_HEALTHZ", healthy.as_str())];
    // Not a node: every item skipped.
    let (items, s) = run_full("svc/kubelet.sh", t.path(), &env);
    assert!(items.is_empty(), "{items:?}");
    skipped(&s, "kubelet-healthz", "not a Kubernetes node");
    skipped(&s, "runtime-socket", "not a Kubernetes node");
    skipped(&s, "apiserver", "no KUBERNETES_SERVICE_HOST");
    // What a kubelet leaves behind on a machine that is no node.
    std::fs::create_dir_all(t.join("var/lib/kubelet/device-plugins")).unwrap();
    skipped(
        &skips("svc/kubelet.sh", t.path(), &env),
        "runtime-socket",
        "not a Kubernetes node",
    );
    std::fs::create_dir_all(t.join("var/lib/kubelet/pki")).unwrap();
    skipped(
        &skips("svc/kubelet.sh", t.path(), &env),
        "kubelet-healthz",
        "needs hostNetwork",
    );
    host_netns(&t);
    let sock = t.join("run/containerd/containerd.sock");
    std::fs::create_dir_all(sock.parent().unwrap()).unwrap();
    let _l = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let items = run("svc/kubelet.sh", t.path(), &env);
    ok(&items, "kubelet-healthz");
    ok(&items, "runtime-socket");
    let sick = support::http_once("500 Internal Server Error", "[-]syncloop failed", 1);
    err(
        &run(
            "svc/kubelet.sh",
            t.path(),
            &[("SVC_KUBELET_HEALTHZ", sick.as_str())],
        ),
        "kubelet-healthz",
        "healthz answered HTTP/1.1 500 Internal Server Error: [-]syncloop failed",
    );
    let closed = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().to_string()
    };
    err(
        &run(
            "svc/kubelet.sh",
            t.path(),
            &[("SVC_KUBELET_HEALTHZ", closed.as_str())],
        ),
        "kubelet-healthz",
        "no answer from http://",
    );
    // The kubelet of this node names its runtime endpoint: that one counts.
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
    let items = run(
        "svc/kubelet.sh",
        t.path(),
        &[("SVC_KUBELET_HEALTHZ", ""), ("NODE_NAME", "node-1")],
    );
    err(
        &items,
        "runtime-socket",
        "runtime endpoint /node-1/containerd.sock is not a socket",
    );
    assert!(
        !items.contains_key("kubelet-healthz"),
        "empty SVC_KUBELET_HEALTHZ: {items:?}"
    );
    ok(
        &run(
            "svc/kubelet.sh",
            t.path(),
            &[("SVC_KUBELET_HEALTHZ", ""), ("NODE_NAME", "node-2")],
        ),
        "runtime-socket",
    );
    let api = support::http_once("200 OK", "ok", 1);
    let (host, port) = api.split_once(':').unwrap();
    ok(
        &run(
            "svc/kubelet.sh",
            t.path(),
            &[
                ("KUBERNETES_SERVICE_HOST", host),
                ("KUBERNETES_SERVICE_PORT", port),
            ],
        ),
        "apiserver",
    );
    let (host, port) = closed.split_once(':').unwrap();
    err(
        &run(
            "svc/kubelet.sh",
            t.path(),
            &[
                ("KUBERNETES_SERVICE_HOST", host),
                ("KUBERNETES_SERVICE_PORT", port),
            ],
        ),
        "apiserver",
        "no TCP connection to the API server",
    );
}

#[test]
fn dns_passes_the_runner_dns_lines_through() {
    let t = Tree::new("dns");
    t.file("etc/resolv.conf", "search x\nnameserver 127.0.0.1\n", 0o644);
    let skipped_without = skips("net/dns.sh", t.path(), &[]);
    skipped(&skipped_without, "dns", "no COMBO_RUNNER");
    let args = t.join("args");
    t.script(
        "fakebin/fake-runner",
        &format!(
            "echo \"$*\" >> '{}'\necho 'resolving' >&2\n\
             case \"$*\" in\n\
               *--server*) echo 'err dns:10.96.0.10/udp SERVFAIL'; echo 'ok dns:10.96.0.10/tcp' ;;\n\
               *) echo 'ok dns:127.0.0.1/udp'; echo 'ok dns:127.0.0.1/tcp' ;;\n\
             esac",
            args.display()
        ),
    );
    let runner = t.join("fakebin/fake-runner");
    let runner = runner.to_str().unwrap();
    let conf = t.join("etc/resolv.conf");
    let items = run("net/dns.sh", t.path(), &[("COMBO_RUNNER", runner)]);
    ok(&items, "dns:127.0.0.1/udp");
    ok(&items, "dns:127.0.0.1/tcp");
    assert_eq!(
        t.read("args").trim(),
        format!(
            "dns --name kubernetes.default.svc.cluster.local --resolv-conf {}",
            conf.display()
        ),
        "the node's own resolvers: any answer will do"
    );
    std::fs::remove_file(&args).unwrap();
    let items = run(
        "net/dns.sh",
        t.path(),
        &[
            ("COMBO_RUNNER", runner),
            ("NET_DNS_NAME", "example.org"),
            ("NET_CLUSTER_DNS", "10.96.0.10"),
        ],
    );
    err(&items, "dns:10.96.0.10/udp", "SERVFAIL");
    ok(&items, "dns:10.96.0.10/tcp");
    assert_eq!(
        t.read("args").lines().collect::<Vec<_>>(),
        [
            format!(
                "dns --name example.org --resolv-conf {} --must-exist",
                conf.display()
            ),
            "dns --name example.org --server 10.96.0.10 --must-exist".to_string(),
        ]
    );
    std::fs::remove_file(&args).unwrap();
    run(
        "net/dns.sh",
        t.path(),
        &[("COMBO_RUNNER", runner), ("NET_DNS_TRANSPORTS", "udp")],
    );
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
    skipped(
        &skips("net/dns.sh", t.path(), &[("COMBO_RUNNER", runner)]),
        "dns",
        "unrecognized subcommand",
    );
    t.script(
        "fakebin/fake-runner",
        "echo 'cannot open socket' >&2; exit 1",
    );
    err(
        &run("net/dns.sh", t.path(), &[("COMBO_RUNNER", runner)]),
        "dns",
        "exited 1: cannot open socket",
    );
    t.file("etc/resolv.conf", "search x\n", 0o644);
    err(
        &run("net/dns.sh", t.path(), &[("COMBO_RUNNER", runner)]),
        "nameservers",
        "no nameserver",
    );
}

#[test]
fn storage_endpoints_accept_connections() {
    let t = Tree::new("storage");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let open = listener.local_addr().unwrap().to_string();
    let closed = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .to_string();
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
