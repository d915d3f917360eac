//! `combo-runner dns` against a small DNS server of the test's own on
//! loopback, over UDP and TCP (docs/runner.md, "DNS check (`combo-runner dns`)"),
//! and in a network namespace the test makes to stand for a node's.

#[path = "../../pinger/tests/support/netns.rs"]
#[allow(
    dead_code,
    reason = "the runner's tests use a subset of the pinger's namespace kit"
)]
mod netns;
mod support;

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::Path;

use hickory_net::proto::op::{Message, ResponseCode};
use hickory_net::proto::rr::rdata::A;
use hickory_net::proto::rr::{RData, Record, RecordType};
use support::{runner, Tree};

/// What the server does for a query, by the name's first label:
/// `servfail`, `refused`, `nxdomain`, `empty` (NOERROR, no record), `silent`
/// (no answer at all); any other name has the A record 192.0.2.1 and no
/// AAAA record.
fn answer(query: &Message) -> Option<Message> {
    let q = query.queries.first()?;
    let first = q
        .name()
        .iter()
        .next()
        .map(|l| l.to_vec())
        .unwrap_or_default();
    let code = match first.as_slice() {
        b"silent" => return None,
        b"servfail" => ResponseCode::ServFail,
        b"refused" => ResponseCode::Refused,
        b"nxdomain" => ResponseCode::NXDomain,
        _ => ResponseCode::NoError,
    };
    let mut reply = Message::response(query.metadata.id, query.metadata.op_code);
    reply.metadata.response_code = code;
    reply.metadata.recursion_desired = query.metadata.recursion_desired;
    reply.add_query(q.clone());
    if code == ResponseCode::NoError && first != b"empty" && q.query_type() == RecordType::A {
        reply.add_answer(Record::from_rdata(
            q.name().clone(),
            60,
            RData::A(A(Ipv4Addr::new(192, 0, 2, 1))),
        ));
    }
    Some(reply)
}

fn reply_bytes(request: &[u8]) -> Option<Vec<u8>> {
    let query = Message::from_vec(request).ok()?;
    answer(&query)?.to_vec().ok()
}

/// Serves [`answer`] on UDP and TCP at the same address, in threads that
/// live as long as the test process.
fn serve(addr: SocketAddr) -> std::io::Result<SocketAddr> {
    let udp = UdpSocket::bind(addr)?;
    let addr = udp.local_addr()?;
    let tcp = TcpListener::bind(addr)?;
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok((n, from)) = udp.recv_from(&mut buf) {
            if let Some(reply) = reply_bytes(&buf[..n]) {
                let _ = udp.send_to(&reply, from);
            }
        }
    });
    std::thread::spawn(move || {
        for conn in tcp.incoming().flatten() {
            std::thread::spawn(move || serve_tcp(conn));
        }
    });
    Ok(addr)
}

/// Answers the length-framed queries of one connection until it closes.
fn serve_tcp(mut conn: TcpStream) {
    loop {
        let mut len = [0u8; 2];
        if conn.read_exact(&mut len).is_err() {
            return;
        }
        let mut request = vec![0u8; u16::from_be_bytes(len) as usize];
        if conn.read_exact(&mut request).is_err() {
            return;
        }
        if let Some(reply) = reply_bytes(&request) {
            let mut framed = (reply.len() as u16).to_be_bytes().to_vec();
            framed.extend_from_slice(&reply);
            if conn.write_all(&framed).is_err() {
                return;
            }
        }
    }
}

/// A server on a free loopback port; the UDP and TCP ports must match, so
/// a port whose TCP side is taken is given up for another.
fn server() -> SocketAddr {
    for _ in 0..20 {
        if let Ok(addr) = serve("127.0.0.1:0".parse().unwrap()) {
            return addr;
        }
    }
    panic!("no loopback port free for both UDP and TCP");
}

/// `combo-runner dns` with `args`: its exit status and stdout lines.
fn dns(args: &[&str]) -> (i32, Vec<String>) {
    let mut all = vec!["dns"];
    all.extend_from_slice(args);
    let out = runner(&all, &[]);
    let lines = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(String::from)
        .collect();
    (out.status.code().unwrap_or(-1), lines)
}

#[test]
fn each_answer_gives_its_verdict_over_udp_and_tcp() {
    let addr = server();
    let server = addr.to_string();
    let item = |t: &str| format!("dns:{server}/{t}");
    let both = |verdict: &str| {
        vec![
            format!("{verdict} {}", item("udp")).trim_end().to_string(),
            format!("{verdict} {}", item("tcp")).trim_end().to_string(),
        ]
    };
    let ask = |name: &str, extra: &[&str]| {
        let mut args = vec!["--name", name, "--server", &server, "--timeout-ms", "400"];
        args.extend_from_slice(extra);
        let (code, lines) = dns(&args);
        assert_eq!(code, 0, "the lines carry the verdict: {lines:?}");
        lines
    };
    let err = |msg: &str| {
        vec![
            format!("err {} {msg}", item("udp")),
            format!("err {} {msg}", item("tcp")),
        ]
    };

    assert_eq!(ask("host.test", &["--must-exist"]), both("ok"));
    assert_eq!(
        ask("servfail.test", &[]),
        err("SERVFAIL for servfail.test A; SERVFAIL for servfail.test AAAA")
    );
    assert_eq!(
        ask("refused.test", &[]),
        err("REFUSED for refused.test A; REFUSED for refused.test AAAA")
    );
    assert_eq!(
        ask("nxdomain.test", &[]),
        both("ok"),
        "NXDOMAIN is an answer when the name need not exist"
    );
    assert_eq!(
        ask("nxdomain.test", &["--must-exist"]),
        err("NXDOMAIN for nxdomain.test A; NXDOMAIN for nxdomain.test AAAA")
    );
    assert_eq!(ask("empty.test", &[]), both("ok"));
    assert_eq!(
        ask("empty.test", &["--must-exist"]),
        err("NOERROR without an address for empty.test A or AAAA")
    );
    assert_eq!(
        ask("silent.test", &[]),
        err("timeout after 400ms for silent.test A; timeout after 400ms for silent.test AAAA")
    );
}

#[test]
fn several_names_and_one_transport_give_one_line_naming_what_failed() {
    let server = server().to_string();
    let (code, lines) = dns(&[
        "--name",
        "host.test",
        "--name",
        "servfail.test",
        "--server",
        &server,
        "--udp",
    ]);
    assert_eq!(code, 0);
    assert_eq!(
        lines,
        vec![format!(
            "err dns:{server}/udp SERVFAIL for servfail.test A; SERVFAIL for servfail.test AAAA"
        )]
    );
    let (_, lines) = dns(&["--name", "host.test", "--server", &server, "--tcp"]);
    assert_eq!(lines, vec![format!("ok dns:{server}/tcp")]);
}

#[test]
fn a_closed_tcp_port_is_a_connection_error() {
    // A port just freed: nothing listens on it.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let server = format!("127.0.0.1:{port}");
    let (code, lines) = dns(&["--name", "host.test", "--server", &server, "--tcp"]);
    assert_eq!(code, 0);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with(&format!("err dns:{server}/tcp tcp connection failed: ")),
        "{lines:?}"
    );
    assert!(lines[0].to_lowercase().contains("refused"), "{lines:?}");
}

/// Port 53 on an address of 127.0.0.0/8 other than 127.0.0.1, for the
/// nameservers of a resolv.conf; `None` where port 53 cannot be bound
/// (not root).
fn server_on_port_53() -> Option<SocketAddr> {
    (0..20).find_map(|i| {
        let pid = std::process::id();
        let ip = Ipv4Addr::new(127, 53, (pid % 250) as u8 + 1, 10 + i);
        serve(SocketAddr::new(ip.into(), 53)).ok()
    })
}

fn write_resolv_conf(path: &Path, servers: &[&str]) {
    let mut text = String::from("# test\nsearch svc.cluster.local\n");
    for s in servers {
        text.push_str(&format!("nameserver {s}\n"));
    }
    text.push_str("options ndots:5\n");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn the_nameservers_of_resolv_conf_are_asked_under_host_root_by_default() {
    let Some(addr) = server_on_port_53() else {
        eprintln!("port 53 cannot be bound here: resolv.conf servers not queried");
        return;
    };
    let ip = addr.ip().to_string();
    let t = Tree::new("dns-resolv");
    write_resolv_conf(&t.join("etc/resolv.conf"), &[&ip, "not-an-ip", &ip]);
    // The tree's PID 1, "the node's", is in this process's network
    // namespace (as with hostNetwork): its loopback is ours.
    t.symlink("proc/1/ns/net", "/proc/self/ns/net");
    let out = runner(
        &[
            "--host-root",
            t.path().to_str().unwrap(),
            "dns",
            "--name",
            "host.test",
            "--must-exist",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines,
        vec![
            format!(
                "err dns:not-an-ip nameserver in {} is not an IP address",
                t.join("etc/resolv.conf").display()
            )
            .as_str(),
            &format!("ok dns:{ip}/udp"),
            &format!("ok dns:{ip}/tcp"),
        ],
        "each nameserver once, in order"
    );
    // --resolv-conf names the file.
    let other = t.join("other.conf");
    write_resolv_conf(&other, &[&ip]);
    let (_, lines) = dns(&[
        "--name",
        "servfail.test",
        "--resolv-conf",
        other.to_str().unwrap(),
        "--udp",
    ]);
    assert_eq!(
        lines,
        vec![format!(
            "err dns:{ip}/udp SERVFAIL for servfail.test A; SERVFAIL for servfail.test AAAA"
        )]
    );
}

#[test]
fn a_missing_or_empty_resolv_conf_is_one_err_line() {
    let t = Tree::new("dns-noconf");
    let missing = t.join("missing.conf");
    let (code, lines) = dns(&[
        "--name",
        "x.test",
        "--resolv-conf",
        missing.to_str().unwrap(),
    ]);
    assert_eq!(code, 0);
    assert_eq!(lines.len(), 1);
    assert!(
        lines[0].starts_with(&format!("err dns cannot read {}: ", missing.display())),
        "{lines:?}"
    );
    let empty = t.join("empty.conf");
    write_resolv_conf(&empty, &[]);
    let (_, lines) = dns(&["--name", "x.test", "--resolv-conf", empty.to_str().unwrap()]);
    assert_eq!(
        lines,
        vec![format!("err dns no nameserver in {}", empty.display())]
    );
}

#[test]
fn usage_errors_exit_two_with_one_line() {
    for args in [
        &["dns"][..],
        &["dns", "--name", "x.test", "--server", "dns.example"][..],
        &["dns", "--name", "x.test", "--timeout-ms", "0"][..],
    ] {
        let out = runner(args, &[]);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("combo-runner: "), "{stderr}");
        assert!(out.stdout.is_empty());
    }
    let out = runner(&["dns"], &[]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--name <NAME>"),
        "the missing flag is named"
    );
}

/// A node's root for `combo-runner --host-root`: its resolv.conf names
/// systemd-resolved's stub, resolved's own list names `upstream`, and its
/// PID 1's network namespace is `netns` (`None`: no `proc/1/ns/net`).
fn node_root(tag: &str, upstream: &str, netns: Option<&str>) -> Tree {
    let t = Tree::new(tag);
    write_resolv_conf(&t.join("etc/resolv.conf"), &["127.0.0.53"]);
    write_resolv_conf(&t.join("run/systemd/resolve/resolv.conf"), &[upstream]);
    if let Some(target) = netns {
        t.symlink("proc/1/ns/net", target);
    }
    t
}

fn dns_as_the_node(root: &Tree) -> Vec<String> {
    let out = runner(
        &[
            "--host-root",
            root.path().to_str().unwrap(),
            "dns",
            "--name",
            "host.test",
            "--must-exist",
            "--timeout-ms",
            "1000",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(String::from)
        .collect()
}

#[test]
fn a_loopback_nameserver_of_the_node_and_resolveds_upstreams_are_asked_in_the_nodes_namespace() {
    // The "node": a namespace of the test's own, with resolved's stub on
    // 127.0.0.53 and an upstream on 127.0.0.2, both answering host.test;
    // neither listens in this process's namespace (a resolver of the
    // machine on 127.0.0.53 would not know host.test: --must-exist tells).
    let node = netns::Netns::new();
    // The servers' threads are started from one in the namespace, and
    // stay in it.
    node.spawn(|| {
        for ip in ["127.0.0.53", "127.0.0.2"] {
            serve(format!("{ip}:53").parse().unwrap()).expect("port 53 in the namespace");
        }
    })
    .join()
    .unwrap();
    let path = format!("/var/run/netns/{}", node.name);
    let root = node_root("dns-node", "127.0.0.2", Some(&path));
    assert_eq!(
        dns_as_the_node(&root),
        vec![
            "ok dns:127.0.0.53/udp",
            "ok dns:127.0.0.53/tcp",
            "ok dns:127.0.0.2/udp",
            "ok dns:127.0.0.2/tcp",
        ]
    );
}

#[test]
fn without_a_way_into_the_nodes_namespace_a_loopback_nameserver_is_skip_not_err() {
    let not_a_namespace = Tree::new("dns-not-ns");
    std::fs::write(not_a_namespace.join("net"), "").unwrap();
    let fake = not_a_namespace.join("net");
    for (tag, netns) in [
        ("dns-no-pid1", None),
        ("dns-bad-pid1", Some(fake.to_str().unwrap())),
    ] {
        let root = node_root(tag, "127.0.0.2", netns);
        let lines = dns_as_the_node(&root);
        assert_eq!(lines.len(), 4, "{tag}: {lines:?}");
        for (line, item) in lines.iter().zip([
            "dns:127.0.0.53/udp",
            "dns:127.0.0.53/tcp",
            "dns:127.0.0.2/udp",
            "dns:127.0.0.2/tcp",
        ]) {
            assert!(line.starts_with(&format!("skip {item} a loopback nameserver of the node answers only in the node's network namespace, and ")), "{tag}: {line}");
            assert!(
                line.ends_with("it needs enableSys (hostPID, privileged) or hostNetwork"),
                "{tag}: {line}"
            );
        }
    }
}
