//! Network namespaces made by a test, and running code inside them.

use std::fs::File;
use std::future::Future;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Once;

use combo_testkit::leftovers;
use nix::sched::{setns, CloneFlags};

/// A network namespace with `lo` up; deleted on drop.
pub struct Netns {
    /// Its name under /var/run/netns.
    pub name: String,
}

static NEXT: AtomicU32 = AtomicU32::new(0);

/// Namespaces are `kcpt-<pid>-<n>`; those of test processes killed before
/// their drop are removed by the next process's first namespace.
const PREFIX: &str = "kcpt-";
static SWEEP: Once = Once::new();

impl Netns {
    /// Makes a fresh namespace. Needs root (the test environment runs as root).
    pub fn new() -> Self {
        SWEEP.call_once(|| {
            for gone in leftovers::orphans_in(Path::new("/var/run/netns"), PREFIX) {
                let _ = Command::new("ip").args(["netns", "del", &gone]).status();
            }
        });
        let name = leftovers::own_name(PREFIX, &NEXT.fetch_add(1, Ordering::Relaxed).to_string());
        run(&["ip", "netns", "add", &name]);
        let ns = Netns { name };
        ns.exec(&["ip", "link", "set", "lo", "up"]);
        ns
    }

    /// Runs a command inside the namespace; panics when it fails.
    pub fn exec(&self, args: &[&str]) {
        let mut all = vec!["ip", "netns", "exec", &self.name];
        all.extend_from_slice(args);
        run(&all);
    }

    /// Applies an nftables ruleset inside the namespace.
    pub fn nft(&self, ruleset: &str) {
        let path = std::env::temp_dir().join(format!("{}.nft", self.name));
        std::fs::write(&path, ruleset).unwrap();
        self.exec(&["nft", "-f", path.to_str().unwrap()]);
        let _ = std::fs::remove_file(path);
    }

    /// Sets a sysctl inside the namespace.
    pub fn sysctl(&self, key: &str, value: &str) {
        self.exec(&["sysctl", "-q", "-w", &format!("{key}={value}")]);
    }

    /// Runs `make()`'s future on a fresh single-threaded runtime whose thread
    /// lives in this namespace, so every socket it opens is in there.
    pub fn block_on<F, Fut, T>(&self, make: F) -> T
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = T>,
        T: Send + 'static,
    {
        let path = format!("/var/run/netns/{}", self.name);
        std::thread::spawn(move || {
            enter(&path);
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(make())
        })
        .join()
        .expect("namespace thread")
    }

    /// Runs `f` on a new thread inside this namespace (for blocking servers).
    pub fn spawn<F: FnOnce() + Send + 'static>(&self, f: F) -> std::thread::JoinHandle<()> {
        let path = format!("/var/run/netns/{}", self.name);
        std::thread::spawn(move || {
            enter(&path);
            f()
        })
    }
}

fn enter(path: &str) {
    let fd = File::open(path).expect("netns file");
    setns(&fd, CloneFlags::CLONE_NEWNET).expect("setns (needs root)");
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .output();
    }
}

/// Runs a command; panics when it fails.
pub fn run(args: &[&str]) {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
