//! What a busy production node has and the test nodes lack, none of it a
//! node fault: thousands of processes, container root filesystems and pod
//! volumes in the mount table (one full, one out of inodes, one read-only),
//! a container killed at its own memory limit, user-space crashes in the
//! kernel log and systemd-resolved's stub resolver on loopback. Each is
//! undone by its guard when it drops.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Result};
use combo_e2e::{cluster_dir, wait_for};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{DeleteParams, PostParams};
use kube::{Api, Client};

use crate::host::{in_node_mounts, sh};

/// Where the busy node's scratch files live (overlay layers, volume images).
const SCRATCH: &str = "/tmp/kc-busy";
/// containerd's task directory, where a container's root filesystem is mounted.
const TASKS: &str = "/run/containerd/io.containerd.runtime.v2.task/k8s.io";
/// The kubelet's directory, with its pod volumes and CSI staging mounts.
const KUBELET: &str = "/var/lib/kubelet";

/// `n` idle processes, killed when dropped.
pub struct Sleepers(Vec<Child>);

impl Sleepers {
    pub fn start(n: usize) -> Result<Sleepers> {
        let mut all = Sleepers(Vec::with_capacity(n));
        for _ in 0..n {
            let child = Command::new("sleep")
                .arg("3600")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .spawn()?;
            all.0.push(child);
        }
        Ok(all)
    }
}

impl Drop for Sleepers {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
        }
        for c in &mut self.0 {
            let _ = c.wait();
        }
    }
}

/// Container and pod storage in the machine's mount table (which the
/// runners read through the machine's PID 1) and, for the volumes, in the
/// first real node's mount namespace (under its runner's `/host`): `overlays`
/// container root filesystems under containerd's task directory, and
/// `volumes` pod volume mounts of three CSI volumes (full, out of inodes,
/// read-only), each staged once under the kubelet's plugins directory.
pub struct Storage {
    /// Mount points, in the order made (unmounted in reverse).
    machine: Vec<String>,
    node: Vec<String>,
    loops: Vec<String>,
    /// Top directories this guard made (removed when dropped).
    made: Vec<PathBuf>,
}

/// The three volumes: name, mkfs inode count, what fills it, mount options.
const VOLUMES: [(&str, u32, &str, &str); 3] = [
    (
        "pvc-kcbusy-full",
        256,
        "dd if=/dev/zero of=fill bs=64k 2>/dev/null; sync; true",
        "rw",
    ),
    (
        "pvc-kcbusy-inodes",
        64,
        "for i in $(seq 1 100); do touch f$i 2>/dev/null || break; done; sync; true",
        "rw",
    ),
    ("pvc-kcbusy-readonly", 256, "true", "ro"),
];

impl Storage {
    pub fn make(overlays: usize, volumes: usize) -> Result<Storage> {
        let mut s = Storage {
            machine: Vec::new(),
            node: Vec::new(),
            loops: Vec::new(),
            made: Vec::new(),
        };
        for dir in [SCRATCH, TASKS, KUBELET] {
            s.made.extend(make_dir(Path::new(dir))?);
        }
        sh(&format!(
            "mkdir -p {SCRATCH}/lower && echo layer > {SCRATCH}/lower/etc-os"
        ))?;
        for i in 0..overlays {
            let id = format!("kcbusy{i:04}");
            let target = format!("{TASKS}/{id}/rootfs");
            sh(&format!(
                "mkdir -p {SCRATCH}/{id}/upper {SCRATCH}/{id}/work {target} && \
                 mount -t overlay overlay -o lowerdir={SCRATCH}/lower,upperdir={SCRATCH}/{id}/upper,workdir={SCRATCH}/{id}/work {target}"
            ))?;
            s.machine.push(target);
        }
        for (k, (name, inodes, fill, opts)) in VOLUMES.iter().enumerate() {
            let image = format!("{SCRATCH}/{name}.img");
            sh(&format!(
                "truncate -s 8M {image} && mkfs.ext4 -q -F -N {inodes} -m 0 {image}"
            ))?;
            let dev = sh(&format!("losetup -f --show {image}"))?
                .trim()
                .to_string();
            s.loops.push(dev.clone());
            let stage = format!("{KUBELET}/plugins/kubernetes.io/csi/pv/{name}/globalmount");
            sh(&format!(
                "mkdir -p {stage} && mount {dev} {stage} && cd {stage} && {fill}"
            ))?;
            if *opts == "ro" {
                sh(&format!("mount -o remount,ro {stage}"))?;
            }
            s.machine.push(stage.clone());
            in_node_mounts(1, &format!("mount -o {opts} {dev} {stage}"))?;
            s.node.push(stage.clone());
            // The pods using the volume: a bind mount of its root each.
            for p in (k..volumes).step_by(VOLUMES.len()) {
                let target = format!(
                    "{KUBELET}/pods/kcbusy-pod-{p:03}/volumes/kubernetes.io~csi/{name}/mount"
                );
                sh(&format!(
                    "mkdir -p {target} && mount --bind {stage} {target}"
                ))?;
                s.machine.push(target.clone());
                in_node_mounts(1, &format!("mount --bind {stage} {target}"))?;
                s.node.push(target);
            }
        }
        Ok(s)
    }
}

/// Makes `dir` and its missing parents; the topmost one made, if any.
fn make_dir(dir: &Path) -> Result<Option<PathBuf>> {
    let top = dir
        .ancestors()
        .take_while(|a| !a.exists())
        .last()
        .map(Path::to_path_buf);
    std::fs::create_dir_all(dir)?;
    Ok(top)
}

impl Drop for Storage {
    fn drop(&mut self) {
        for mp in self.node.iter().rev() {
            let _ = in_node_mounts(1, &format!("umount -l {mp}"));
        }
        for mp in self.machine.iter().rev() {
            let _ = sh(&format!("umount -l {mp}"));
        }
        for dev in &self.loops {
            let _ = sh(&format!("losetup -d {dev}"));
        }
        for dir in self.made.iter().rev() {
            let _ = std::fs::remove_dir_all(dir);
        }
        let _ = std::fs::remove_dir_all(SCRATCH);
        let _ = sh(&format!(
            "rm -rf {TASKS}/kcbusy* {KUBELET}/pods/kcbusy-pod-* {KUBELET}/plugins/kubernetes.io/csi/pv/pvc-kcbusy-*"
        ));
    }
}

/// A pod on `node` whose container is killed at its own 16 MiB memory
/// limit (`tail` of `/dev/zero` buffers one endless line); deleted when
/// dropped.
pub struct OomKilledPod {
    api: Api<Pod>,
    name: String,
}

impl OomKilledPod {
    pub async fn run(c: &Client, ns: &str, node: &str, image: &str) -> Result<OomKilledPod> {
        let api: Api<Pod> = Api::namespaced(c.clone(), ns);
        let name = "kc-busy-oom".to_string();
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": { "name": name },
            "spec": {
                "nodeName": node,
                "restartPolicy": "Never",
                "tolerations": [{ "operator": "Exists" }],
                "containers": [{
                    "name": "hog",
                    "image": image,
                    "command": ["tail", "/dev/zero"],
                    "resources": { "limits": { "memory": "16Mi", "cpu": "200m" } }
                }]
            }
        }))?;
        api.create(&PostParams::default(), &pod).await?;
        let guard = OomKilledPod { api, name };
        wait_for(
            Duration::from_secs(120),
            "the memory hog OOMKilled at its limit",
            || async {
                let p = guard.api.get(&guard.name).await?;
                let uid = p.metadata.uid.clone().unwrap_or_default();
                let state = p
                    .status
                    .and_then(|s| s.container_statuses)
                    .and_then(|cs| cs.into_iter().next())
                    .and_then(|cs| cs.state)
                    .and_then(|s| s.terminated);
                match state {
                    Some(t) if t.reason.as_deref() == Some("OOMKilled") => Ok(true),
                    // The kubelet says OOMKilled only when containerd caught
                    // the cgroup's OOM event before the exit; the kernel's
                    // own line for the pod's cgroup says it all the same.
                    Some(t) if t.exit_code == 137 && kernel_killed_in_pod(&uid)? => {
                        println!("the memory hog: the kernel's OOM kill in pod {uid} (the kubelet's reason: {:?})", t.reason);
                        Ok(true)
                    }
                    Some(t) => bail!("the memory hog ended otherwise: {t:?}"),
                    None => Ok(false),
                }
            },
        )
        .await?;
        Ok(guard)
    }
}

/// Whether the kernel log has an OOM kill at the memory limit of a cgroup
/// of pod `uid` (cgroupfs `pod<uid>`, systemd `pod<uid with _>`).
fn kernel_killed_in_pod(uid: &str) -> Result<bool> {
    if uid.is_empty() {
        return Ok(false);
    }
    let systemd = uid.replace('-', "_");
    Ok(sh("dmesg")?.lines().any(|l| {
        l.contains("oom-kill:constraint=CONSTRAINT_MEMCG")
            && (l.contains(&format!("pod{uid}")) || l.contains(&format!("pod{systemd}")))
    }))
}

impl Drop for OomKilledPod {
    fn drop(&mut self) {
        let api = self.api.clone();
        let name = self.name.clone();
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            rt.block_on(api.delete(&name, &DeleteParams::default()))?;
            anyhow::Ok(())
        })
        .join();
    }
}

/// Kernel log lines a busy node logs that are no node fault: user-space
/// crashes, an empty virtual CD-ROM drive, audit and firmware chatter.
pub const HARMLESS_KMSG: [&str; 6] = [
    "traps: python3[4242] general protection fault ip:7f3c2b1e4a3d sp:7ffd6c2e9f80 error:0 in libc.so.6[7f3c2b18a000+155000]",
    "python3[4243]: segfault at 0 ip 00007f3c2b1e4a3d sp 00007ffd6c2e9f80 error 4 in libc.so.6[7f3c2b18a000+155000] likely on CPU 1 (core 1, socket 0)",
    "traps: node[4244] trap invalid opcode ip:55d1c0a3b2c1 sp:7ffe1a2b3c40 error:0 in node[55d1c0000000+2a00000]",
    "I/O error, dev sr0, sector 0 op 0x0:(READ) flags 0x80700 phys_seg 1 prio class 0",
    "audit: type=1400 audit(1764230400.123:45): apparmor=\"DENIED\" operation=\"open\" profile=\"cri-containerd.apparmor.d\" name=\"/proc/1/environ\" pid=4245 comm=\"cat\" requested_mask=\"r\" denied_mask=\"r\" fsuid=0 ouid=0",
    "[Firmware Bug]: TSC_DEADLINE disabled due to Errata; please update microcode to version: 0x3a (or later)",
];

/// CPU time (seconds) the container `container_id` (containerd's id) has
/// used so far, from its cpuacct cgroup (v1) on the machine.
pub fn container_cpu_seconds(container_id: &str) -> Result<f64> {
    let found = sh(&format!(
        "find /sys/fs/cgroup/cpuacct/ -maxdepth 4 -type d -name '{container_id}' | head -n 1"
    ))?;
    let dir = found.trim();
    if dir.is_empty() {
        bail!("no cpuacct cgroup of container {container_id}");
    }
    let ns: u64 = std::fs::read_to_string(format!("{dir}/cpuacct.usage"))?
        .trim()
        .parse()?;
    Ok(ns as f64 / 1e9)
}

/// Where systemd-resolved writes its upstream servers.
const RESOLVED_DIR: &str = "/run/systemd/resolve";
/// The stub resolved listens on.
pub const STUB: &str = "127.0.0.53";

/// systemd-resolved as Ubuntu runs it, on the first real node: the node's
/// resolv.conf names only the stub 127.0.0.53, answered by a forwarder on
/// that address in the node's network namespace (loopback: nothing outside
/// the namespace reaches it), and resolved's own list, `upstream` alone,
/// is in /run/systemd/resolve/resolv.conf of the node's mount namespace.
/// Dropped: the forwarder stopped, the node's files as they were.
pub struct StubResolver {
    forwarder: Child,
    conf: PathBuf,
    saved: String,
    made: Option<PathBuf>,
    mounted: bool,
}

impl StubResolver {
    pub fn start(netns: &str, upstream: &str) -> Result<StubResolver> {
        let conf = cluster_dir().join("real/real-1/resolv.conf");
        let saved = std::fs::read_to_string(&conf)?;
        let forwarder = Command::new("ip")
            .args(["netns", "exec", netns, "dnsmasq", "--keep-in-foreground"])
            .args([
                "--conf-file=/dev/null",
                "--no-resolv",
                "--no-hosts",
                "--pid-file=",
            ])
            .args(["--bind-interfaces", &format!("--listen-address={STUB}")])
            .args([
                "--port",
                "53",
                "--user=root",
                &format!("--server={upstream}"),
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        let mut guard = StubResolver {
            forwarder,
            conf,
            saved,
            made: None,
            mounted: false,
        };
        guard.made = make_dir(Path::new(RESOLVED_DIR))?;
        in_node_mounts(
            1,
            &format!(
                "mount -t tmpfs -o size=64k kc-resolved {RESOLVED_DIR} && \
                 echo \"nameserver {upstream}\" > {RESOLVED_DIR}/resolv.conf"
            ),
        )?;
        guard.mounted = true;
        std::fs::write(
            &guard.conf,
            format!("nameserver {STUB}\noptions edns0 trust-ad\nsearch .\n"),
        )?;
        Ok(guard)
    }
}

impl Drop for StubResolver {
    fn drop(&mut self) {
        let _ = std::fs::write(&self.conf, &self.saved);
        if self.mounted {
            let _ = in_node_mounts(1, &format!("umount -l {RESOLVED_DIR}"));
        }
        if let Some(dir) = &self.made {
            let _ = std::fs::remove_dir_all(dir);
        }
        let _ = self.forwarder.kill();
        let _ = self.forwarder.wait();
    }
}

/// The machine's busy share of all CPUs, sampled from `/proc/stat` every
/// second while it lives, as the `cpu:usage` check counts it (idle,
/// iowait and steal are not busy). The real nodes share this machine's
/// CPUs, so an `err cpu:usage` is true when the machine itself was that
/// busy over the item's window, whatever made it so.
pub struct CpuSampler {
    samples: std::sync::Arc<std::sync::Mutex<Vec<(std::time::Instant, u64, u64)>>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

/// (busy, total) jiffies of all CPUs from `/proc/stat`.
fn busy_total() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .filter_map(|f| f.parse().ok())
        .collect();
    let total: u64 = v.iter().sum();
    let idle = v.get(3)? + v.get(4)? + v.get(7).copied().unwrap_or(0);
    Some((total - idle, total))
}

impl CpuSampler {
    pub fn start() -> CpuSampler {
        let samples = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (s, halt) = (samples.clone(), stop.clone());
        std::thread::spawn(move || {
            while !halt.load(std::sync::atomic::Ordering::Relaxed) {
                if let Some((busy, total)) = busy_total() {
                    s.lock()
                        .expect("samples")
                        .push((std::time::Instant::now(), busy, total));
                }
                std::thread::sleep(std::time::Duration::from_secs(1));
            }
        });
        CpuSampler { samples, stop }
    }

    /// The busy share in percent over the last `seconds` (from the sample
    /// nearest that far back to the newest), if the sampler has been
    /// running that long.
    pub fn busy_percent_over(&self, seconds: u64) -> Option<f64> {
        let samples = self.samples.lock().expect("samples");
        let &(now, busy, total) = samples.last()?;
        let since = now.checked_sub(std::time::Duration::from_secs(seconds))?;
        let &(_, busy0, total0) = samples.iter().rev().find(|(t, _, _)| *t <= since)?;
        (total > total0).then(|| (busy - busy0) as f64 * 100.0 / (total - total0) as f64)
    }
}

impl Drop for CpuSampler {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}
