//! Faults of one real node as a whole: its conntrack table at 90 % and
//! its kubelet stopped. Each is undone by its guard when it drops.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};

use crate::host::{recorded_pid, sh};

const CONNTRACK_MAX: &str = "/proc/sys/net/netfilter/nf_conntrack_max";
/// Entries the filler keeps in the node's table: UDP flows to closed ports
/// of 127.0.0.1, sent again every few seconds so that none times out
/// (nf_conntrack_udp_timeout, 30 s by default).
const FILL_FLOWS: u32 = 20_000;
const FILL_PY: &str = r#"
import socket, sys, time
n = int(sys.argv[1])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
while True:
    for p in range(n):
        s.sendto(b"x", ("127.0.0.1", 40000 + p))
    time.sleep(5)
"#;

/// The number in `/proc/sys/net/netfilter/<name>` of a network namespace
/// (`None`: the machine's, this process's).
fn netfilter(netns: Option<&str>, name: &str) -> Result<u64> {
    let path = format!("/proc/sys/net/netfilter/{name}");
    let text = match netns {
        Some(ns) => sh(&format!("ip netns exec {ns} cat {path}"))?,
        None => std::fs::read_to_string(&path)?,
    };
    Ok(text.trim().parse()?)
}

/// One node's conntrack table at 90 %: [`FILL_FLOWS`] flows kept alive in
/// its network namespace, and the machine's nf_conntrack_max lowered so
/// that they are 90 % of it. The count is per network namespace, the limit
/// is the kernel's (read-only in a namespace other than the machine's), so
/// only that node's table is near full; the others' counts are checked to
/// stay far below. Dropped: the limit back, the filler killed (its flows
/// time out).
pub struct ConntrackFill {
    filler: Child,
    saved_max: Option<String>,
}

impl ConntrackFill {
    pub fn to_90_percent(netns: &str, others: &[String]) -> Result<ConntrackFill> {
        let filler = Command::new("ip")
            .args(["netns", "exec", netns, "python3", "-c", FILL_PY])
            .arg(FILL_FLOWS.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()?;
        let mut guard = ConntrackFill {
            filler,
            saved_max: None,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        let count = loop {
            let count = netfilter(Some(netns), "nf_conntrack_count")?;
            if count >= u64::from(FILL_FLOWS) {
                break count;
            }
            if Instant::now() > deadline {
                bail!("{netns} tracks {count} connections, not the filler's {FILL_FLOWS}");
            }
            std::thread::sleep(Duration::from_millis(200));
        };
        let max = count * 100 / 90;
        let mut spaces: Vec<Option<&str>> = others.iter().map(|o| Some(o.as_str())).collect();
        spaces.push(None);
        for other in spaces {
            let theirs = netfilter(other, "nf_conntrack_count")?;
            if theirs * 2 > max {
                bail!(
                    "{} tracks {theirs} connections: too many to lower nf_conntrack_max to {max}",
                    other.unwrap_or("the machine")
                );
            }
        }
        guard.saved_max = Some(std::fs::read_to_string(CONNTRACK_MAX)?);
        std::fs::write(CONNTRACK_MAX, max.to_string())?;
        Ok(guard)
    }
}

impl Drop for ConntrackFill {
    fn drop(&mut self) {
        if let Some(max) = self.saved_max.take() {
            let _ = std::fs::write(CONNTRACK_MAX, max.trim());
        }
        let _ = self.filler.kill();
        let _ = self.filler.wait();
    }
}

/// Real node `i`'s kubelet stopped with SIGSTOP (its healthz accepts
/// connections and never answers); continued by [`Self::resume`], or
/// when dropped.
pub struct StoppedKubelet {
    pid: u32,
    netns: String,
}

/// The state letter of `/proc/<pid>/stat` (`T`: stopped).
fn state(pid: u32) -> Result<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    match stat.rsplit_once(") ").and_then(|(_, r)| r.chars().next()) {
        Some(c) => Ok(c),
        None => bail!("unreadable /proc/{pid}/stat: {stat}"),
    }
}

impl StoppedKubelet {
    pub fn stop(i: usize, netns: &str) -> Result<StoppedKubelet> {
        let pid = recorded_pid(&format!("kubelet-real-{i}"))?;
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        if comm.trim() != "kubelet" {
            bail!("pid {pid} recorded for real-{i}'s kubelet is {comm:?}");
        }
        sh(&format!("kill -STOP {pid}"))?;
        let guard = StoppedKubelet {
            pid,
            netns: netns.to_string(),
        };
        let deadline = Instant::now() + Duration::from_secs(5);
        while state(pid)? != 'T' {
            if Instant::now() > deadline {
                bail!("real-{i}'s kubelet (pid {pid}) did not stop");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(guard)
    }

    /// Continues the kubelet and waits until its healthz answers `ok`.
    pub fn resume(self) -> Result<()> {
        sh(&format!("kill -CONT {}", self.pid))?;
        let probe = format!(
            "ip netns exec {} curl -fsS --max-time 2 http://127.0.0.1:10248/healthz",
            self.netns
        );
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            match sh(&probe) {
                Ok(body) if body.trim() == "ok" => return Ok(()),
                Ok(_) | Err(_) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(500))
                }
                r => bail!("the kubelet (pid {}) is not healthy again: {r:?}", self.pid),
            }
        }
    }
}

impl Drop for StoppedKubelet {
    fn drop(&mut self) {
        let _ = sh(&format!("kill -CONT {}", self.pid));
    }
}
