//! Running a default script of `scripts/` against a fixture tree (a fake
//! `/proc`, `/sys`, kernel log and tools) and reading its `ok`, `err` and
//! `skip` lines; the fixtures that tests of several categories build.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::Tree;

/// The default scripts of the repository.
pub fn scripts_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts")
}

/// Every default script, as `<category>/<file>`, sorted.
pub fn default_scripts() -> Vec<String> {
    let mut v = Vec::new();
    for cat in ["disk", "net", "mem", "svc"] {
        for e in std::fs::read_dir(scripts_dir().join(cat))
            .unwrap()
            .flatten()
        {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.ends_with(".sh") {
                v.push(format!("{cat}/{name}"));
            }
        }
    }
    v.sort();
    v
}

/// Every default script that reads the kernel log.
pub const KLOG_SCRIPTS: [&str; 5] = [
    "disk/ioerrors.sh",
    "net/kernlog.sh",
    "mem/oom.sh",
    "mem/kernlog.sh",
    "svc/kernlog.sh",
];

/// Items a script printed: item -> Some(err message) or None for ok.
pub type Items = BTreeMap<String, Option<String>>;

/// Skipped items a script printed: item -> reason.
pub type Skips = BTreeMap<String, String>;

/// Variables of the runner's environment a test must not inherit. A test
/// that wants one (`COMBO_HOST_NETWORK`, `STATE_DIR`, ...) passes it in
/// `env`, which is applied after these are cleared.
pub const CLEARED: [&str; 9] = [
    "POD_NAME",
    "NODE_NAME",
    "KUBERNETES_SERVICE_HOST",
    "KUBERNETES_SERVICE_PORT",
    "STATE_DIR",
    "PREVIOUS_RUN_ID",
    "KERNEL_LOG_FILE",
    "COMBO_RUNNER",
    "COMBO_HOST_NETWORK",
];

/// Runs `scripts/<rel>` with HOST_ROOT at `root`, fake tools first in PATH,
/// [`CLEARED`] unset and then `env` set; asserts it exits 0 and returns its ok/err items and its skipped items.
pub fn run_full(rel: &str, root: &Path, env: &[(&str, &str)]) -> (Items, Skips) {
    parse(&stdout(rel, root, env))
}

/// Runs `scripts/<rel>` as [`run_full`] does and returns its stdout.
pub fn stdout(rel: &str, root: &Path, env: &[(&str, &str)]) -> String {
    let path = format!(
        "{}:{}",
        root.join("fakebin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new(scripts_dir().join(rel));
    for v in CLEARED {
        cmd.env_remove(v);
    }
    let out = cmd
        .env("HOST_ROOT", root)
        .env("PATH", path)
        .envs(env.iter().copied())
        .output()
        .expect("script runs");
    assert!(
        out.status.success(),
        "{rel} exited {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The ok/err items and the skipped items of a script's stdout.
fn parse(stdout: &str) -> (Items, Skips) {
    let mut items = Items::new();
    let mut skips = Skips::new();
    for line in stdout.lines() {
        let mut w = line.splitn(3, ' ');
        match (w.next(), w.next(), w.next()) {
            (Some("ok"), Some(i), _) => {
                items.insert(i.into(), None);
            }
            (Some("err"), Some(i), m) => {
                items.insert(i.into(), Some(m.unwrap_or_default().into()));
            }
            (Some("skip"), Some(i), m) => {
                skips.insert(i.into(), m.unwrap_or_default().into());
            }
            _ => {}
        }
    }
    (items, skips)
}

/// Runs of default scripts on one fixture tree that keep their state in one
/// directory (STATE_DIR) from run to run, as the runner's runs do; `env` is
/// set in every run, and a run's own settings after it.
pub struct Stateful<'a> {
    root: &'a Path,
    dir: String,
    env: Vec<(&'a str, &'a str)>,
}

impl<'a> Stateful<'a> {
    /// Runs on `t` with a fresh state directory `state/<name>` of it.
    pub fn new(t: &'a Tree, name: &str, env: &[(&'a str, &'a str)]) -> Self {
        Stateful {
            root: t.path(),
            dir: state(t, name),
            env: env.to_vec(),
        }
    }

    /// The state directory.
    pub fn dir(&self) -> &str {
        &self.dir
    }

    /// Runs `scripts/<rel>` with the state directory, `env` and then
    /// `extra` set, like [`run_full`].
    pub fn run_full(&self, rel: &str, extra: &[(&str, &str)]) -> (Items, Skips) {
        parse(&self.stdout(rel, extra))
    }

    /// Like [`Stateful::run_full`], the whole stdout.
    pub fn stdout(&self, rel: &str, extra: &[(&str, &str)]) -> String {
        let mut env = vec![("STATE_DIR", self.dir.as_str())];
        env.extend_from_slice(&self.env);
        env.extend_from_slice(extra);
        stdout(rel, self.root, &env)
    }

    /// Like [`Stateful::run_full`], the ok/err items.
    pub fn run(&self, rel: &str, extra: &[(&str, &str)]) -> Items {
        self.run_full(rel, extra).0
    }

    /// Like [`Stateful::run_full`], the skipped items.
    pub fn skips(&self, rel: &str, extra: &[(&str, &str)]) -> Skips {
        self.run_full(rel, extra).1
    }
}

/// Runs `scripts/<rel>` and returns its ok/err items.
pub fn run(rel: &str, root: &Path, env: &[(&str, &str)]) -> Items {
    run_full(rel, root, env).0
}

/// Runs `scripts/<rel>` and returns its skipped items.
pub fn skips(rel: &str, root: &Path, env: &[(&str, &str)]) -> Skips {
    run_full(rel, root, env).1
}

/// Asserts that `item` was skipped with a reason containing `contains`.
pub fn skipped(s: &Skips, item: &str, contains: &str) {
    let why = s
        .get(item)
        .unwrap_or_else(|| panic!("{item} should be skipped: {s:?}"));
    assert!(why.contains(contains), "{item}: {why:?} lacks {contains:?}");
}

/// Asserts that `scripts/<rel>`, run on `root` without settings, skipped
/// `item` with a reason containing `contains`.
pub fn skipped_by(rel: &str, root: &Path, item: &str, contains: &str) {
    skipped(&skips(rel, root, &[]), item, contains);
}

/// Asserts that `item` is ok.
pub fn ok(items: &Items, item: &str) {
    assert_eq!(
        items.get(item),
        Some(&None),
        "{item} should be ok: {items:?}"
    );
}

/// Asserts that `item` failed with a message containing `contains`.
pub fn err(items: &Items, item: &str, contains: &str) {
    let msg = items
        .get(item)
        .cloned()
        .flatten()
        .unwrap_or_else(|| panic!("{item} should fail: {items:?}"));
    assert!(msg.contains(contains), "{item}: {msg:?} lacks {contains:?}");
}

/// The header line of `/proc/net/route`.
pub const ROUTE_HEADER: &str =
    "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n";

/// An interface under `sys/class/net`: its flags, operstate and
/// statistics counters (`stats`, the others 0).
pub fn iface(t: &Tree, name: &str, flags: &str, state: &str, stats: &[(&str, u64)]) {
    let base = format!("sys/class/net/{name}");
    t.file(&format!("{base}/flags"), &format!("{flags}\n"), 0o644);
    t.file(&format!("{base}/operstate"), &format!("{state}\n"), 0o644);
    for s in [
        "rx_errors",
        "tx_errors",
        "rx_dropped",
        "tx_dropped",
        "rx_packets",
        "tx_packets",
    ] {
        let v = stats
            .iter()
            .find(|(k, _)| *k == s)
            .map(|(_, v)| *v)
            .unwrap_or(0);
        t.file(&format!("{base}/statistics/{s}"), &format!("{v}\n"), 0o644);
    }
}

/// An interface that is up (flags 0x1003) with statistics counters
/// (`stats`, the others 0), as [`iface`].
pub fn up(t: &Tree, name: &str, stats: &[(&str, u64)]) {
    iface(t, name, "0x1003", "up", stats);
}

/// A fresh state directory for one script (STATE_DIR), as a string.
pub fn state(t: &Tree, name: &str) -> String {
    let p = t.join(&format!("state/{name}"));
    std::fs::create_dir_all(&p).unwrap();
    p.to_str().unwrap().to_string()
}

/// Appends records in /dev/kmsg format to the tree's `kmsg` file, numbered
/// on from the records already there.
pub fn klog_append(t: &Tree, msgs: &[&str]) {
    let mut text = t.read("kmsg");
    let first = text.lines().count() + 1;
    for (seq, m) in (first..).zip(msgs) {
        text.push_str(&format!("3,{seq},{}000000,-;{m}\n", 100 + seq));
    }
    t.file("kmsg", &text, 0o644);
}

/// Makes PID 1 of the tree share this process's network namespace, as the
/// host's PID 1 does for a pod with hostNetwork and enableSys.
pub fn host_netns(t: &Tree) {
    let ns = std::fs::read_link("/proc/self/ns/net").unwrap();
    t.symlink("proc/1/ns/net", ns.to_str().unwrap());
}
