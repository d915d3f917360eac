//! Faults that the kernel itself meets and logs, made on this machine (the
//! real nodes share its kernel and its log): an ext4 error, an XFS
//! shutdown, block I/O errors of a loop device whose backing file sits on a
//! full filesystem, a hung task blocked on a FUSE daemon that never
//! answers, and the OOM killer at the memory limit of a QoS class's cgroup. Each maker waits until the kernel has written its lines; what
//! it made is undone when its [`Made`] drops (each loop device stays
//! attached until then, so that every fault names a device of its own),
//! and on every error path, so nothing stays mounted, attached, blocked or
//! changed.

use std::fs::{File, OpenOptions};
use std::io::{Read as _, Write as _};
use std::os::fd::AsRawFd as _;
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};

use crate::host::sh;

/// What one fault left in the kernel log: the item that names it, and what
/// undoes the fault when dropped.
pub struct Made {
    pub what: &'static str,
    pub item: String,
    _undo: Box<dyn Send>,
}

/// How long the kernel gets to write a fault's lines.
const KERNEL_WAIT: Duration = Duration::from_secs(60);

/// The kernel log as `dmesg` prints it.
fn kernel_log() -> Result<String> {
    sh("dmesg")
}

/// Waits until the kernel log has a line containing every part of `parts`.
fn wait_for_kernel_line(parts: &[&str]) -> Result<String> {
    let start = Instant::now();
    loop {
        if let Some(l) = kernel_log()?
            .lines()
            .find(|l| parts.iter().all(|p| l.contains(p)))
        {
            return Ok(l.to_string());
        }
        if start.elapsed() > KERNEL_WAIT {
            bail!("the kernel wrote no line with {parts:?} within {KERNEL_WAIT:?}");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A sparse image file attached to a loop device and, when `fs` is given,
/// formatted and mounted; detached, unmounted and removed when dropped.
struct LoopDisk {
    image: String,
    device: String,
    mount: Option<String>,
}

impl LoopDisk {
    fn attach(image: &str, size: &str) -> Result<LoopDisk> {
        sh(&format!("truncate -s {size} {image}"))?;
        let device = sh(&format!("losetup -f --show {image}"))
            .inspect_err(|_| {
                let _ = std::fs::remove_file(image);
            })?
            .trim()
            .to_string();
        Ok(LoopDisk {
            image: image.to_string(),
            device,
            mount: None,
        })
    }

    fn formatted(image: &str, size: &str, mkfs: &str, dir: &str, opts: &str) -> Result<LoopDisk> {
        sh(&format!("truncate -s {size} {image} && {mkfs} {image}"))?;
        let mut d = LoopDisk::attach(image, size)?;
        sh(&format!(
            "mkdir -p {dir} && mount -o {opts} {} {dir}",
            d.device
        ))?;
        d.mount = Some(dir.to_string());
        Ok(d)
    }

    /// The device's kernel name (`loop3`).
    fn name(&self) -> &str {
        self.device.trim_start_matches("/dev/")
    }
}

impl Drop for LoopDisk {
    fn drop(&mut self) {
        if let Some(dir) = &self.mount {
            let _ = sh(&format!("umount {dir} || umount -l {dir}; rmdir {dir}"));
        }
        let _ = sh(&format!("losetup -d {}", self.device));
        let _ = std::fs::remove_file(&self.image);
    }
}

/// An ext4 error: the filesystem's own error trigger
/// (`/sys/fs/ext4/<dev>/trigger_fs_error`), on a loop-mounted ext4 with
/// `errors=continue`.
pub fn ext4_error() -> Result<Made> {
    let d = LoopDisk::formatted(
        "/tmp/kc-kernel-ext4.img",
        "16M",
        "mkfs.ext4 -q -F",
        "/tmp/kc-kernel-ext4",
        "errors=continue",
    )?;
    sh(&format!(
        "echo kc-kernel-fault > /sys/fs/ext4/{}/trigger_fs_error",
        d.name()
    ))?;
    wait_for_kernel_line(&[
        &format!("EXT4-fs error (device {})", d.name()),
        "kc-kernel-fault",
    ])?;
    Ok(Made {
        what: "ext4 error",
        item: format!("fs:{}", d.name()),
        _undo: Box::new(d),
    })
}

/// An XFS shutdown, as `xfs_io -x -c shutdown` asks the filesystem for it.
pub fn xfs_shutdown() -> Result<Made> {
    let d = LoopDisk::formatted(
        "/tmp/kc-kernel-xfs.img",
        "320M",
        "mkfs.xfs -q -f",
        "/tmp/kc-kernel-xfs",
        "defaults",
    )?;
    sh("xfs_io -x -c shutdown /tmp/kc-kernel-xfs")?;
    wait_for_kernel_line(&[&format!("XFS ({})", d.name()), "hutting down filesystem"])?;
    Ok(Made {
        what: "XFS shutdown",
        item: format!("fs:{}", d.name()),
        _undo: Box::new(d),
    })
}

/// A small tmpfs that holds a loop device's sparse backing file: writing
/// past its size fails in the block layer. Unmounted when dropped.
struct FullTmpfs(&'static str);

impl Drop for FullTmpfs {
    fn drop(&mut self) {
        let _ = sh(&format!("umount {0} || umount -l {0}; rmdir {0}", self.0));
    }
}

/// Block I/O errors: direct writes to a loop device whose backing file
/// sits on a full filesystem.
pub fn full_backing_io_errors() -> Result<Made> {
    let dir = "/tmp/kc-kernel-full";
    sh(&format!(
        "mkdir -p {dir} && mount -t tmpfs -o size=2M kc-kernel-full {dir}"
    ))?;
    let fs = FullTmpfs(dir);
    let d = LoopDisk::attach(&format!("{dir}/backing"), "64M")?;
    // dd stops at the first failed write; the kernel has logged it.
    let _ = sh(&format!(
        "dd if=/dev/zero of={} bs=1M count=8 oflag=direct 2>&1",
        d.device
    ));
    wait_for_kernel_line(&[&format!("dev {}, sector", d.name())])?;
    let item = format!("io:{}", d.name());
    Ok(Made {
        what: "block I/O errors",
        item,
        // The loop device goes before the filesystem that holds its file.
        _undo: Box::new((d, fs)),
    })
}

/// The hung-task settings this test changes, put back when dropped.
struct HungTaskSysctls {
    timeout: String,
    warnings: String,
}

const HUNG_TIMEOUT: &str = "/proc/sys/kernel/hung_task_timeout_secs";
const HUNG_WARNINGS: &str = "/proc/sys/kernel/hung_task_warnings";
const HUNG_PANIC: &str = "/proc/sys/kernel/hung_task_panic";
/// The hung-task timeout for the test, in seconds.
const HUNG_SECONDS: u64 = 2;

impl HungTaskSysctls {
    fn lower() -> Result<HungTaskSysctls> {
        let read = |p: &str| std::fs::read_to_string(p).map(|s| s.trim().to_string());
        let panic = read(HUNG_PANIC)
            .with_context(|| format!("{HUNG_PANIC}: no hung-task detector in this kernel"))?;
        if panic != "0" {
            bail!("kernel.hung_task_panic is {panic}: a hung task would panic this machine, so none is made");
        }
        let s = HungTaskSysctls {
            timeout: read(HUNG_TIMEOUT)?,
            warnings: read(HUNG_WARNINGS)?,
        };
        // The count of reports left for this boot; each report takes one.
        std::fs::write(HUNG_WARNINGS, "10")?;
        std::fs::write(HUNG_TIMEOUT, HUNG_SECONDS.to_string())?;
        Ok(s)
    }
}

impl Drop for HungTaskSysctls {
    fn drop(&mut self) {
        let _ = std::fs::write(HUNG_TIMEOUT, &self.timeout);
        let _ = std::fs::write(HUNG_WARNINGS, &self.warnings);
    }
}

/// A FUSE mount whose daemon is this test: it answers the kernel's INIT and
/// nothing after. Dropping it aborts the connection (every request waiting
/// on it ends), then unmounts.
struct SilentFuse {
    dir: &'static str,
    dev: File,
    /// The connection's number under /sys/fs/fuse/connections.
    conn: String,
    /// Whether this test mounted fusectl (and so unmounts it).
    mounted_fusectl: bool,
}

const FUSE_INIT: u32 = 26;
const FUSECTL: &str = "/sys/fs/fuse/connections";

impl SilentFuse {
    fn mount(dir: &'static str) -> Result<SilentFuse> {
        std::fs::create_dir_all(dir)?;
        let dev = OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/fuse")?;
        let data = format!("fd={},rootmode=40000,user_id=0,group_id=0", dev.as_raw_fd());
        nix::mount::mount(
            Some("kc-kernel-fuse"),
            dir,
            Some("fuse"),
            nix::mount::MsFlags::MS_NOSUID | nix::mount::MsFlags::MS_NODEV,
            Some(data.as_str()),
        )
        .with_context(|| format!("mounting FUSE on {dir}"))?;
        let conn = sh(&format!(
            "awk '$5 == \"{dir}\" {{ split($3, d, \":\"); print d[2] }}' /proc/self/mountinfo"
        ))?
        .trim()
        .to_string();
        let mounted_fusectl =
            !sh(&format!("mountpoint -q {FUSECTL} && echo yes || true"))?.contains("yes");
        let mut f = SilentFuse {
            dir,
            dev,
            conn,
            mounted_fusectl,
        };
        if f.mounted_fusectl {
            sh(&format!("mount -t fusectl none {FUSECTL}"))?;
        }
        f.answer_init()?;
        Ok(f)
    }

    /// Reads the kernel's INIT request and answers it (protocol 7.31, no
    /// feature flags).
    fn answer_init(&mut self) -> Result<()> {
        let mut buf = vec![0u8; 1 << 20];
        let n = self.dev.read(&mut buf)?;
        let word = |at: usize| u32::from_ne_bytes(buf[at..at + 4].try_into().unwrap());
        if n < 40 || word(4) != FUSE_INIT {
            bail!("the first FUSE request is not INIT (opcode {})", word(4));
        }
        let unique = &buf[8..16];
        let mut out = Vec::with_capacity(80);
        out.extend_from_slice(&80u32.to_ne_bytes()); // length
        out.extend_from_slice(&0i32.to_ne_bytes()); // error
        out.extend_from_slice(unique);
        for v in [7u32, 31, 0, 0] {
            out.extend_from_slice(&v.to_ne_bytes()); // major, minor, readahead, flags
        }
        out.extend_from_slice(&[0u8; 4]); // max_background, congestion_threshold
        out.extend_from_slice(&4096u32.to_ne_bytes()); // max_write
        out.extend_from_slice(&1u32.to_ne_bytes()); // time_gran
        out.resize(80, 0);
        self.dev.write_all(&out)?;
        Ok(())
    }

    /// Waits for one request from the kernel and leaves it unanswered;
    /// errs when none comes within `wait`.
    fn take_one_request(&self, wait: Duration) -> Result<()> {
        let mut dev = self.dev.try_clone()?;
        let (tx, rx) = mpsc::channel();
        // The reader stays blocked until the connection is aborted.
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 1 << 20];
            let got = dev.read(&mut buf).map(|n| n >= 40);
            let _ = tx.send(got);
            // The next read returns once the connection is aborted.
            let _ = dev.read(&mut buf);
        });
        match rx.recv_timeout(wait) {
            Ok(Ok(true)) => Ok(()),
            Ok(other) => bail!("reading the FUSE request: {other:?}"),
            Err(_) => bail!("no FUSE request within {wait:?}"),
        }
    }
}

impl Drop for SilentFuse {
    fn drop(&mut self) {
        if !self.conn.is_empty() {
            let _ = std::fs::write(format!("{FUSECTL}/{}/abort", self.conn), "1");
        }
        let _ = nix::mount::umount2(self.dir, nix::mount::MntFlags::MNT_DETACH);
        let _ = std::fs::remove_dir(self.dir);
        if self.mounted_fusectl {
            let _ = sh(&format!("umount {FUSECTL}"));
        }
    }
}

/// A hung task: `stat` of a file on a FUSE mount whose daemon took the
/// request and never answers, killed while it waits, so that it waits on
/// uninterruptibly; the kernel's hung-task detector reports it after
/// [`HUNG_SECONDS`]. Refused when `kernel.hung_task_panic` is set.
pub fn hung_task() -> Result<Made> {
    let _sysctls = HungTaskSysctls::lower()?;
    let fuse = SilentFuse::mount("/tmp/kc-kernel-fuse")?;
    let mut victim = Command::new("stat")
        .arg("/tmp/kc-kernel-fuse/kc-hung")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    let waited = fuse
        .take_one_request(Duration::from_secs(10))
        .and_then(|()| {
            // A fatal signal while the request is with the daemon: the task
            // waits for the answer in state D.
            victim.kill()?;
            wait_for_kernel_line(&[&format!("task stat:{} blocked for more than", victim.id())])
        });
    drop(fuse);
    let _ = victim.wait();
    waited?;
    Ok(Made {
        what: "hung task",
        item: "hung-tasks".to_string(),
        _undo: Box::new(()),
    })
}

/// A memory cgroup named as the kubelet names a QoS class's
/// (`.../kubepods/besteffort`), with a 16 MiB limit, and a pod's cgroup
/// under it; both removed when dropped, after the victim in it is gone.
struct QosCgroups {
    /// The hierarchy's mount (`/sys/fs/cgroup/memory`, or `/sys/fs/cgroup`
    /// for cgroup v2).
    root: String,
    /// The cgroups made, deepest last, as paths under `root`.
    made: Vec<String>,
    victim: Option<std::process::Child>,
}

impl QosCgroups {
    const PATH: [&'static str; 4] = ["kc-kernel-oom", "kubepods", "besteffort", "pod-kc-oom"];

    fn make() -> Result<QosCgroups> {
        let v2 = std::path::Path::new("/sys/fs/cgroup/cgroup.controllers").exists();
        let root = if v2 {
            "/sys/fs/cgroup"
        } else {
            "/sys/fs/cgroup/memory"
        };
        let mut q = QosCgroups {
            root: root.to_string(),
            made: Vec::new(),
            victim: None,
        };
        let mut path = String::new();
        for part in Self::PATH {
            if v2 {
                // Each level hands the memory controller to its children.
                std::fs::write(format!("{root}{path}/cgroup.subtree_control"), "+memory")
                    .with_context(|| format!("enabling memory in {root}{path}"))?;
            }
            path = format!("{path}/{part}");
            std::fs::create_dir(format!("{root}{path}"))
                .with_context(|| format!("creating {root}{path}"))?;
            q.made.push(path.clone());
        }
        let limit = if v2 {
            "memory.max"
        } else {
            "memory.limit_in_bytes"
        };
        std::fs::write(format!("{root}{}/{limit}", q.qos()), "16M")?;
        Ok(q)
    }

    /// The QoS class's cgroup, as the kernel names it.
    fn qos(&self) -> &str {
        &self.made[2]
    }

    fn pod(&self) -> &str {
        &self.made[3]
    }
}

impl Drop for QosCgroups {
    fn drop(&mut self) {
        if let Some(v) = &mut self.victim {
            let _ = v.kill();
            let _ = v.wait();
        }
        for path in self.made.iter().rev() {
            let _ = std::fs::remove_dir(format!("{}{path}", self.root));
        }
    }
}

/// The pods of a QoS class together past their memory: the kernel's OOM
/// killer at the limit of a cgroup named as the kubelet names a QoS class's
/// (`.../kubepods/besteffort`, limit 16 MiB), killing a process of a pod's
/// cgroup under it that wants 64 MiB. A node-level fault, unlike a
/// container at its own limit.
pub fn qos_class_oom() -> Result<Made> {
    let mut q = QosCgroups::make()?;
    let procs = format!("{}{}/cgroup.procs", q.root, q.pod());
    let script = format!("echo $$ > {procs} && exec perl -e '$x = \"k\" x (64 << 20); sleep 600'");
    let child = Command::new("bash")
        .args(["-c", &script])
        .stdin(std::process::Stdio::null())
        .spawn()?;
    let pid = child.id();
    q.victim = Some(child);
    let qos = q.qos().to_string();
    wait_for_kernel_line(&[
        "oom-kill:constraint=CONSTRAINT_MEMCG",
        &format!("oom_memcg={qos},"),
        &format!("pid={pid},"),
    ])?;
    wait_for_kernel_line(&[
        "Memory cgroup out of memory: Killed process",
        &format!("{pid} (perl)"),
    ])?;
    Ok(Made {
        what: "QoS class OOM",
        item: "oom-kills".to_string(),
        _undo: Box::new(q),
    })
}

const AREA: &str = "real kernel faults";

/// A function that makes one fault and says what names it.
type Maker = fn() -> Result<Made>;

/// A Debugger of the kernel-log categories, on every real node.
const DEBUGGER: &str = r#"apiVersion: kubecombo.io/v1
kind: Debugger
metadata:
  name: kernel
spec:
  workloadType: daemonset
  cpu: 200m
  memory: 256Mi
  enableSys: true
  enablePinger: false
  categories: [disk, mem, svc]
  scriptTimeoutSeconds: 60
"#;

#[tokio::test(flavor = "multi_thread")]
async fn faults_the_kernel_itself_logs_are_named_by_the_next_run() -> Result<()> {
    use combo_e2e::*;
    use combo_testkit::suite::Case;

    if !real_cluster_or_skip("faults_the_kernel_itself_logs_are_named_by_the_next_run") {
        return Ok(());
    }
    install_from_registry();
    let nodes = real_nodes();
    let ns = namespace("real-kernel").await;
    let c = client().await;
    apply_yaml(&ns.name, DEBUGGER)?;
    crate::pods_ready(&c, &ns.name, "kernel").await?;
    // The first run records the kernel log's position.
    crate::run(&c, &ns.name, "kernel").await?;

    let makers: [(&str, Maker); 5] = [
        ("ext4 error", ext4_error),
        ("XFS shutdown", xfs_shutdown),
        ("block I/O errors", full_backing_io_errors),
        ("hung task", hung_task),
        ("QoS class OOM", qos_class_oom),
    ];
    let case = Case::new(AREA, "named", (makers.len() * nodes.len()) as u64);
    let mut made = Vec::new();
    let mut problems = Vec::new();
    for (what, make) in makers {
        match make() {
            Ok(m) => made.push(m),
            Err(e) => problems.push(format!("{what}: not made: {e:#}")),
        }
    }
    // The kernel has logged every fault: each is undone before the run,
    // which names them from the log alone.
    let made: Vec<(&str, String)> = made.into_iter().map(|m| (m.what, m.item.clone())).collect();
    let red = crate::run(&c, &ns.name, "kernel").await?;
    let mut named = 0u64;
    for (what, item) in &made {
        let category = match item.as_str() {
            "hung-tasks" => "svc",
            "oom-kills" => "mem",
            _ => "disk",
        };
        for node in &nodes {
            let v = crate::verdict(&red[node], category, item);
            println!("{AREA}: {node} {what}: {category}/{item}: {v}");
            // The OOM is the pods' together, not a container's own limit.
            let told = item != "oom-kills" || v.contains("QoS class");
            if v.starts_with("err") && told {
                named += 1;
            } else {
                problems.push(format!("{node} {what}: {category}/{item} is {v}"));
            }
        }
    }
    // Nothing else red: each fault is one item.
    for (node, s) in &red {
        for (category, item, msg) in s.failed() {
            if !made.iter().any(|(_, m)| m == item) {
                problems.push(format!(
                    "{node} {category}/{item}: {msg}: not a fault made here"
                ));
            }
        }
    }
    case.done(named, 0);
    println!("{AREA}: named {named} of {}", makers.len() * nodes.len());
    assert!(problems.is_empty(), "{AREA}: {problems:#?}");
    drop(ns);
    Ok(())
}
