//! Where the nameservers of the node's resolv.conf are asked: in the node's
//! network namespace, as the node asks them (docs/checks.md, net `dns:`).
//!
//! A nameserver on loopback (systemd-resolved's stub `127.0.0.53`, a
//! node-local cache on `127.0.0.1`) answers only there; from a pod's own
//! namespace it never answers, and that says nothing about the node. With
//! `enableSys` the pod sees the node's PID 1 (hostPID) and may enter its
//! network namespace (privileged): a thread of its own does, and asks from
//! there.

use std::fs::File;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use nix::sched::{setns, CloneFlags};

/// The addresses of systemd-resolved's stub listeners: a resolv.conf that
/// names one is resolved's, whose upstream servers are in
/// `/run/systemd/resolve/resolv.conf`.
pub const RESOLVED_STUBS: [Ipv4Addr; 2] =
    [Ipv4Addr::new(127, 0, 0, 53), Ipv4Addr::new(127, 0, 0, 54)];

/// Where resolved writes its upstream servers, under the node's root.
pub const RESOLVED_CONF: &str = "run/systemd/resolve/resolv.conf";

/// Where the node's network namespace is, under the node's root: its
/// PID 1's.
pub const NODE_NETNS: &str = "proc/1/ns/net";

/// Whether `server` is systemd-resolved's stub.
pub fn is_resolved_stub(server: SocketAddr) -> bool {
    matches!(server.ip(), IpAddr::V4(ip) if RESOLVED_STUBS.contains(&ip))
}

/// Whether `server` answers only inside its own network namespace
/// (127.0.0.0/8, `::1`).
pub fn is_loopback(server: SocketAddr) -> bool {
    server.ip().is_loopback()
}

/// The node's network namespace, as this process finds it.
#[derive(Debug)]
pub enum NodeNetns {
    /// This process is in it: hostNetwork, or local mode on the node.
    Here,
    /// Another namespace, open, to be entered.
    Elsewhere(File),
    /// It cannot be opened (no hostPID or not root: no enableSys); why.
    Closed(String),
}

/// Opens the namespace file at `path` and tells whether it is this
/// process's own.
pub fn open(path: &Path) -> NodeNetns {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) => return NodeNetns::Closed(format!("{} cannot be opened: {e}", path.display())),
    };
    let theirs = match file.metadata() {
        Ok(m) => m,
        Err(e) => return NodeNetns::Closed(format!("{} cannot be read: {e}", path.display())),
    };
    match std::fs::metadata("/proc/self/ns/net") {
        Ok(ours) if ours.dev() == theirs.dev() && ours.ino() == theirs.ino() => NodeNetns::Here,
        _ => NodeNetns::Elsewhere(file),
    }
}

/// Runs `work` on a new thread that has entered the network namespace
/// `ns`, so that every socket it opens is in there; the thread ends with
/// it, and no other thread of the runner changes namespace. `Err` says
/// why the namespace could not be entered (not privileged, not a
/// namespace).
pub async fn run_in<T, F>(ns: File, path: &Path, work: F) -> Result<T, String>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let shown = path.display().to_string();
    let thread = std::thread::spawn(move || {
        setns(&ns, CloneFlags::CLONE_NEWNET)
            .map_err(|e| format!("entering {shown} failed: {e}"))?;
        Ok(work())
    });
    tokio::task::spawn_blocking(move || thread.join())
        .await
        .map_err(|e| format!("the namespace thread failed: {e}"))?
        .map_err(|_| "the namespace thread panicked".to_string())?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_and_the_resolved_stub_are_told_apart() {
        let s = |t: &str| t.parse::<SocketAddr>().unwrap();
        assert!(is_loopback(s("127.0.0.53:53")));
        assert!(is_loopback(s("127.1.2.3:53")));
        assert!(is_loopback(s("[::1]:53")));
        assert!(!is_loopback(s("10.96.0.10:53")));
        assert!(is_resolved_stub(s("127.0.0.53:53")));
        assert!(is_resolved_stub(s("127.0.0.54:53")));
        assert!(!is_resolved_stub(s("127.0.0.1:53")));
    }

    #[test]
    fn a_missing_namespace_file_is_closed_and_our_own_is_here() {
        match open(Path::new("/nonexistent/proc/1/ns/net")) {
            NodeNetns::Closed(why) => assert!(why.contains("cannot be opened"), "{why}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            open(Path::new("/proc/self/ns/net")),
            NodeNetns::Here
        ));
    }
}
