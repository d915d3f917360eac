//! Helpers of the runner's integration tests: scratch trees and running the
//! built `combo-runner`; [`scripts`] runs the default scripts on fixtures.

#![allow(dead_code, reason = "each test file uses a different subset")]

pub mod scripts;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A scratch directory, removed when dropped.
pub struct Tree(PathBuf);

impl Tree {
    /// A fresh directory named after `tag`.
    pub fn new(tag: &str) -> Tree {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        let p = std::env::temp_dir().join(format!(
            "combo-runner-it-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Tree(p)
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// `rel` inside the tree.
    pub fn join(&self, rel: &str) -> PathBuf {
        self.0.join(rel)
    }

    /// Writes a file with `mode`, making parents.
    pub fn file(&self, rel: &str, content: &str, mode: u32) -> &Self {
        let p = self.0.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, content).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        self
    }

    /// Writes an executable sh script.
    pub fn script(&self, rel: &str, body: &str) -> &Self {
        self.file(rel, &format!("#!/bin/sh\n{body}\n"), 0o755)
    }

    /// Makes a symlink.
    pub fn symlink(&self, rel: &str, target: &str) -> &Self {
        let p = self.0.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, p).unwrap();
        self
    }

    /// Reads a file of the tree.
    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.0.join(rel)).unwrap_or_default()
    }

    /// The newest errlog of `category` (of scripts at the tree's top).
    pub fn errlog(&self, category: &str) -> String {
        let logs = self.list(&format!("{category}/errlog"));
        let newest = logs.last().expect("an errlog was written");
        self.read(&format!("{category}/errlog/{newest}"))
    }

    /// Names of the entries of a directory of the tree, sorted.
    pub fn list(&self, rel: &str) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.0.join(rel))
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `combo-runner` with `args` and extra environment. A `--once` run
/// without `--state-dir` keeps its scripts' state in a scratch root removed
/// afterwards, never in the machine's own.
pub fn runner(args: &[&str], env: &[(&str, &str)]) -> Output {
    let state = Tree::new("state");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_combo-runner"));
    cmd.args(args);
    if args.contains(&"--once") && !args.contains(&"--state-dir") {
        cmd.arg("--state-dir").arg(state.path());
    }
    cmd.envs(env.iter().copied())
        .env_remove("RUST_LOG")
        .output()
        .expect("combo-runner starts")
}

/// Runs `combo-runner --once --output <output> --scripts <dir> ...` with
/// extra environment.
pub fn once_as(output: &str, dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> Output {
    let mut args = vec![
        "--once",
        "--output",
        output,
        "--scripts",
        dir.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    runner(&args, env)
}

/// Runs `combo-runner --once --scripts <dir>`, which prints the table.
pub fn once_table(dir: &Path) -> Output {
    runner(&["--once", "--scripts", dir.to_str().unwrap()], &[])
}

/// The summary a `--output yaml` run printed.
pub fn parse_yaml(out: &Output) -> serde_yaml::Value {
    serde_yaml::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "yaml output ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// Runs `combo-runner --once --output yaml --scripts <dir> ...` and parses
/// the summary.
pub fn once_yaml(dir: &Path, extra: &[&str]) -> (i32, serde_yaml::Value, Output) {
    let out = once_as("yaml", dir, extra, &[]);
    (out.status.code().unwrap_or(-1), parse_yaml(&out), out)
}

/// The err message of `item` in `category` of a summary.
pub fn err_of<'a>(y: &'a serde_yaml::Value, category: &str, item: &str) -> Option<&'a str> {
    y[category][item]["err"].as_str()
}

/// Starts `combo-runner --once` on a script that records its pid and its
/// child's and sleeps, sends `signal` once both pids are written, and
/// returns how long the runner took to exit after it, and its status.
pub fn stop_mid_run(
    t: &Tree,
    signal: nix::sys::signal::Signal,
) -> (std::time::Duration, Option<i32>) {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    let dir = t.path().display().to_string();
    t.script(
        "disk/slow.sh",
        &format!(
            "echo 'err early boom'\n\
             sleep 60 & echo $! > {dir}/child.pid.new\n\
             echo $$ > {dir}/script.pid.new\n\
             mv {dir}/child.pid.new {dir}/child.pid; mv {dir}/script.pid.new {dir}/script.pid\n\
             wait"
        ),
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_combo-runner"))
        .args(["--once", "--timeout", "120", "--scripts", &dir])
        .arg("--state-dir")
        .arg(t.join("state"))
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("combo-runner starts");
    let started = Instant::now();
    while !(t.join("script.pid").exists() && t.join("child.pid").exists()) {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the script did not start"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let sent = Instant::now();
    nix::sys::signal::kill(pid, signal).expect("signal sent");
    // Polled, so a runner that ignores the signal fails the test after
    // 20 s instead of hanging it; the bound checked is the one promised.
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if sent.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            break child.wait().expect("wait");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    (sent.elapsed(), status.code())
}

/// Whether a process is still alive after a moment to die: SIGKILL lands
/// asynchronously, so a just-killed process may show for a few milliseconds.
pub fn alive(pid: u32) -> bool {
    for _ in 0..200 {
        if !alive_now(pid) {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    true
}

/// Whether a process exists and is not a zombie.
fn alive_now(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rsplit_once(") ").map(|(_, r)| r.chars().next());
            state != Some(Some('Z')) && state != Some(Some('X'))
        }
        Err(_) => false,
    }
}

/// A loopback address where nothing listens (a port bound, then freed).
pub fn closed_port() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().to_string()
}

/// Serves one HTTP answer to each of `n` connections on a loopback port.
pub fn http_once(status: &'static str, body: &'static str, n: usize) -> String {
    use std::io::{Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for s in l.incoming().take(n) {
            let mut s = s.unwrap();
            // The whole request: closing on unread bytes would reset the
            // connection.
            let mut req = Vec::new();
            let mut buf = [0u8; 1024];
            while !req.ends_with(b"\r\n\r\n") {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => req.extend_from_slice(&buf[..n]),
                }
            }
            let _ = write!(
                s,
                "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    addr
}
