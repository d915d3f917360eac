//! Faults of one real node's network namespace: a link down and an MTU
//! that differs (veth pairs), a resolver answering SERVFAIL, and the
//! default route removed. Each is undone by its guard when it drops.

use std::process::{Child, Command, Stdio};

use anyhow::{bail, Result};

use crate::host::sh;

/// Port of the SERVFAIL server on the first real node's address.
pub const SERVFAIL_PORT: u16 = 5353;

/// Two veth pairs in the first node's network namespace: `kcf0` (its link
/// goes down when its peer does) and `kcm0` (its MTU is changed).
pub struct Links {
    netns: String,
}

impl Links {
    pub fn make(netns: &str) -> Result<Links> {
        let links = Links {
            netns: netns.to_string(),
        };
        for (a, b) in [("kcf0", "kcf1"), ("kcm0", "kcm1")] {
            sh(&format!(
                "ip -n {netns} link add {a} type veth peer name {b} && \
                 ip -n {netns} link set {a} up && ip -n {netns} link set {b} up"
            ))?;
        }
        Ok(links)
    }

    pub fn break_them(&self) -> Result<()> {
        let ns = &self.netns;
        sh(&format!(
            "ip -n {ns} link set kcf1 down && ip -n {ns} link set kcm0 mtu 1400"
        ))?;
        Ok(())
    }

    pub fn mend(&self) -> Result<()> {
        let ns = &self.netns;
        sh(&format!(
            "ip -n {ns} link set kcf1 up && ip -n {ns} link set kcm0 mtu 1500"
        ))?;
        Ok(())
    }
}

impl Drop for Links {
    fn drop(&mut self) {
        let _ = sh(&format!(
            "ip -n {0} link del kcf0; ip -n {0} link del kcm0",
            self.netns
        ));
    }
}

/// A DNS server in a node's network namespace that answers every query,
/// over UDP and TCP, with SERVFAIL; killed when dropped.
pub struct ServfailServer(Child);

const SERVFAIL_PY: &str = r#"
import socket, sys, threading
addr = (sys.argv[1], int(sys.argv[2]))
def answer(q):
    i = 12
    while i < len(q) and q[i]:
        i += q[i] + 1
    return q[:2] + bytes([0x80 | (q[2] & 0x79), 0x82]) + q[4:6] + bytes(6) + q[12:i + 5]
def tcp():
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(addr); s.listen(16)
    while True:
        c, _ = s.accept()
        try:
            n = int.from_bytes(c.recv(2), 'big'); q = b''
            while len(q) < n:
                q += c.recv(n - len(q))
            a = answer(q); c.sendall(len(a).to_bytes(2, 'big') + a)
        except Exception:
            pass
        c.close()
threading.Thread(target=tcp, daemon=True).start()
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(addr)
while True:
    q, peer = u.recvfrom(4096)
    u.sendto(answer(q), peer)
"#;

impl ServfailServer {
    pub fn start(netns: &str, ip: &str) -> Result<ServfailServer> {
        let child = Command::new("ip")
            .args(["netns", "exec", netns, "python3", "-c", SERVFAIL_PY, ip])
            .arg(SERVFAIL_PORT.to_string())
            .stdin(Stdio::null())
            .spawn()?;
        Ok(ServfailServer(child))
    }
}

impl Drop for ServfailServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `ip -n <netns> <args>` with `input` on stdin; its stdout. The input
/// goes through a file: `ip route restore` seeks in its stdin.
fn ip(netns: &str, args: &[&str], input: &[u8]) -> Result<Vec<u8>> {
    let stdin = if input.is_empty() {
        Stdio::null()
    } else {
        let path =
            std::env::temp_dir().join(format!("kube-combo-ip-{}-{netns}", std::process::id()));
        std::fs::write(&path, input)?;
        let file = std::fs::File::open(&path)?;
        std::fs::remove_file(&path)?;
        Stdio::from(file)
    };
    let out = Command::new("ip")
        .args(["-n", netns])
        .args(args)
        .stdin(stdin)
        .output()?;
    if !out.status.success() {
        bail!(
            "`ip -n {netns} {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(out.stdout)
}

/// The IPv4 and IPv6 default routes of `netns`, as `ip route` shows them.
fn default_routes(netns: &str) -> Result<String> {
    let v4 = ip(netns, &["-4", "route", "show", "default"], b"")?;
    let v6 = ip(netns, &["-6", "route", "show", "default"], b"")?;
    Ok(String::from_utf8_lossy(&[v4, v6].concat()).into_owned())
}

/// A default route in each of `spaces` that has none, as every node of a
/// real cluster has; removed when dropped. `cluster.sh` gives each real
/// node one, via the host, which drops what leaves the cluster's ranges;
/// one added here is on-link through `eth0`: a packet for an address
/// outside the cluster finds no neighbour and fails on the node instead of
/// being forwarded off the machine.
pub struct DefaultRoutes {
    added: Vec<String>,
}

impl DefaultRoutes {
    pub fn ensure(spaces: &[String]) -> Result<DefaultRoutes> {
        let mut guard = DefaultRoutes { added: Vec::new() };
        for ns in spaces {
            if default_routes(ns)?.trim().is_empty() {
                ip(ns, &["route", "add", "default", "dev", "eth0"], b"")?;
                guard.added.push(ns.clone());
            }
        }
        Ok(guard)
    }
}

impl Drop for DefaultRoutes {
    fn drop(&mut self) {
        for ns in &self.added {
            let _ = ip(ns, &["route", "del", "default", "dev", "eth0"], b"");
        }
    }
}

/// Every default route (IPv4 and IPv6) of a network namespace removed,
/// kept as `ip route save` dumps; put back exactly by [`Self::restore`], or
/// when dropped.
pub struct RouteRemoval {
    netns: String,
    before: String,
    dumps: [(&'static str, Vec<u8>); 2],
    restored: bool,
}

impl RouteRemoval {
    pub fn remove(netns: &str) -> Result<RouteRemoval> {
        let before = default_routes(netns)?;
        if before.trim().is_empty() {
            bail!("{netns} has no default route to remove");
        }
        let guard = RouteRemoval {
            netns: netns.to_string(),
            before,
            dumps: [
                (
                    "-4",
                    ip(netns, &["-4", "route", "save", "exact", "0.0.0.0/0"], b"")?,
                ),
                (
                    "-6",
                    ip(netns, &["-6", "route", "save", "exact", "::/0"], b"")?,
                ),
            ],
            restored: false,
        };
        ip(netns, &["-4", "route", "flush", "exact", "0.0.0.0/0"], b"")?;
        ip(netns, &["-6", "route", "flush", "exact", "::/0"], b"")?;
        let left = default_routes(netns)?;
        if !left.trim().is_empty() {
            bail!("default routes of {netns} left after the flush: {left}");
        }
        Ok(guard)
    }

    /// Puts the routes back and checks they are what they were.
    pub fn restore(&mut self) -> Result<()> {
        self.restored = true;
        for (family, dump) in &self.dumps {
            ip(&self.netns, &[family, "route", "restore"], dump)?;
        }
        let now = default_routes(&self.netns)?;
        if now != self.before {
            bail!(
                "default routes of {} not restored exactly: were {:?}, are {now:?}",
                self.netns,
                self.before
            );
        }
        Ok(())
    }
}

impl Drop for RouteRemoval {
    fn drop(&mut self) {
        if !self.restored {
            let _ = self.restore();
        }
    }
}
