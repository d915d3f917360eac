//! Container processes: a private mount namespace inside the pod's network
//! namespace, in a process group of its own so the whole tree can be stopped.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context as _, Result};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use tokio::process::{Child, Command};

use crate::volumes::Mount;

/// A running container process.
pub struct Proc {
    child: Child,
    pgid: i32,
}

/// Quotes `s` for `sh`.
pub fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The shell script that sets up the mounts and then execs the program
/// (`"$@"`). Mount points that do not exist are made first (a file for a
/// file, a directory for a directory).
pub fn mount_script(mounts: &[Mount]) -> String {
    let mut s = String::from("set -e\n");
    for m in mounts {
        let src = sh_quote(&m.src.to_string_lossy());
        let dst = sh_quote(&m.dst.to_string_lossy());
        s.push_str(&format!(
            "if [ -d {src} ]; then mkdir -p {dst}; else mkdir -p \"$(dirname {dst})\"; [ -e {dst} ] || : > {dst}; fi\n"
        ));
        s.push_str(&format!("mount --rbind {src} {dst}\n"));
        if m.read_only {
            s.push_str(&format!("mount -o remount,bind,ro {dst}\n"));
        }
    }
    s.push_str("cd /\nexec \"$@\"\n");
    s
}

/// Starts `program args` with exactly `env`, inside the network namespace
/// at `netns_path`, with `mounts`, its output appended to `log`.
pub fn spawn(
    netns_path: &Path,
    mounts: &[Mount],
    program: &Path,
    args: &[String],
    env: &BTreeMap<String, String>,
    log: &PathBuf,
) -> Result<Proc> {
    if let Some(dir) = log.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .with_context(|| format!("open {}", log.display()))?;
    let err = out.try_clone()?;
    let mut cmd = Command::new("/usr/bin/nsenter");
    cmd.arg(format!("--net={}", netns_path.display()))
        .args([
            "--",
            "/usr/bin/unshare",
            "--mount",
            "--propagation",
            "private",
            "--",
        ])
        .args(["/bin/sh", "-c", &mount_script(mounts), "sh"])
        .arg(program)
        .args(args)
        .env_clear()
        .envs(env)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0)
        .kill_on_drop(false);
    let child = cmd
        .spawn()
        .with_context(|| format!("start {}", program.display()))?;
    let pgid = child.id().map(|p| p as i32).unwrap_or(0);
    Ok(Proc { child, pgid })
}

impl Proc {
    /// The exit code if the process has ended (128 + signal when killed).
    pub fn try_exit(&mut self) -> Option<i32> {
        use std::os::unix::process::ExitStatusExt;
        match self.child.try_wait() {
            Ok(Some(st)) => Some(st.code().unwrap_or_else(|| 128 + st.signal().unwrap_or(0))),
            _ => None,
        }
    }

    /// SIGTERM to the whole group, SIGKILL after `grace`; returns the exit code.
    pub async fn stop(&mut self, grace: Duration) -> i32 {
        if let Some(code) = self.try_exit() {
            self.kill_group(Signal::SIGKILL);
            return code;
        }
        self.kill_group(Signal::SIGTERM);
        let code = match tokio::time::timeout(grace, self.child.wait()).await {
            Ok(Ok(st)) => st.code().unwrap_or(137),
            _ => {
                self.kill_group(Signal::SIGKILL);
                self.child
                    .wait()
                    .await
                    .ok()
                    .and_then(|s| s.code())
                    .unwrap_or(137)
            }
        };
        // Whatever the program forked lives in the same group: stop it too.
        self.kill_group(Signal::SIGKILL);
        code
    }

    fn kill_group(&self, sig: Signal) {
        if self.pgid > 0 {
            let _ = killpg(Pid::from_raw(self.pgid), sig);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Processes of group `pgid` that are not zombies.
    fn live_in_group(pgid: i32) -> usize {
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("stat")).ok())
            .filter(|stat| {
                // Fields after the parenthesised command: state ppid pgrp ...
                let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
                let f: Vec<&str> = rest.split_whitespace().collect();
                f.len() > 2 && f[2] == pgid.to_string() && f[0] != "Z"
            })
            .count()
    }

    #[test]
    fn quoting_survives_single_quotes() {
        assert_eq!(sh_quote("a'b"), r"'a'\''b'");
    }

    #[test]
    fn mount_script_binds_in_order_and_remounts_read_only() {
        let s = mount_script(&[
            Mount {
                src: "/d/scripts".into(),
                dst: "/scripts".into(),
                read_only: false,
            },
            Mount {
                src: "/d/cm".into(),
                dst: "/scripts/custom".into(),
                read_only: true,
            },
        ]);
        let a = s.find("mount --rbind '/d/scripts' '/scripts'").unwrap();
        let b = s.find("mount --rbind '/d/cm' '/scripts/custom'").unwrap();
        assert!(a < b);
        assert!(s.contains("mount -o remount,bind,ro '/scripts/custom'"));
        assert!(!s.contains("remount,bind,ro '/scripts'\n"));
        assert!(s.ends_with("exec \"$@\"\n"));
    }

    #[tokio::test]
    async fn a_started_program_sees_its_mounts_and_env_and_stops_with_its_children() {
        let dir = std::env::temp_dir().join(format!("nodesim-proc-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(dir.join("src/hello"), "from the volume").unwrap();
        let target = dir.join("mnt");
        let log = dir.join("out.log");
        let env: BTreeMap<String, String> = [
            ("PATH".to_string(), "/usr/bin:/bin".to_string()),
            ("GREETING".to_string(), "hi".to_string()),
        ]
        .into();
        let mut p = spawn(
            Path::new("/proc/self/ns/net"),
            &[Mount {
                src: dir.join("src"),
                dst: target.clone(),
                read_only: true,
            }],
            Path::new("/bin/sh"),
            &[
                "-c".into(),
                format!(
                    "echo $GREETING; cat {}/hello; echo; sleep 300 & sleep 300",
                    target.display()
                ),
            ],
            &env,
            &log,
        )
        .unwrap();
        // The output appears once the program has run its first commands.
        let mut text = String::new();
        for _ in 0..100 {
            text = std::fs::read_to_string(&log).unwrap_or_default();
            if text.contains("from the volume") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(text, "hi\nfrom the volume\n");
        // The bind mount lived only in the program's mount namespace.
        assert!(!target.join("hello").exists());
        let pgid = p.pgid;
        assert!(p.try_exit().is_none());
        p.stop(Duration::from_secs(5)).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(live_in_group(pgid), 0, "children outlived the stop");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
