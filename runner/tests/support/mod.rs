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

/// Runs `combo-runner --once --output yaml --scripts <dir> ...` and parses
/// the summary.
pub fn once_yaml(dir: &Path, extra: &[&str]) -> (i32, serde_yaml::Value, Output) {
    let mut args = vec![
        "--once",
        "--output",
        "yaml",
        "--scripts",
        dir.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = runner(&args, &[]);
    let yaml: serde_yaml::Value = serde_yaml::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "yaml output ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), yaml, out)
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
