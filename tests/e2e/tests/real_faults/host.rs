//! Faults of this machine's kernel and filesystems, seen by the real nodes
//! it hosts: a small loop-mounted filesystem (full, out of inodes, read
//! only) and an OOM kill in a memory-limited cgroup. Each is undone by its
//! guard when it drops.

use std::process::Command;

use anyhow::{bail, Context as _, Result};
use combo_e2e::cluster_dir;

/// The filesystem the disk faults fill, mounted on the machine and inside
/// the first real node's mount namespace.
pub const FAULT_MOUNT: &str = "/mnt/kc-fault";
const FAULT_IMAGE: &str = "/tmp/kc-fault-disk.img";
/// The cgroup (v1 memory controller) the OOM kill happens in.
const OOM_CGROUP: &str = "/sys/fs/cgroup/memory/kc-fault-oom";

/// Runs `bash -c script`, failing with its stderr.
pub fn sh(script: &str) -> Result<String> {
    let out = Command::new("bash").args(["-c", script]).output()?;
    if !out.status.success() {
        bail!(
            "`{script}` failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Pid of a process `cluster.sh` recorded (`DIR/pids/<name>.pid`).
pub fn recorded_pid(name: &str) -> Result<u32> {
    let file = cluster_dir().join("pids").join(format!("{name}.pid"));
    let text = std::fs::read_to_string(&file).with_context(|| file.display().to_string())?;
    Ok(text.trim().parse()?)
}

/// `nsenter` into the mount namespace of real node `i` (its containerd's).
pub fn in_node_mounts(i: usize, script: &str) -> Result<String> {
    let pid = recorded_pid(&format!("containerd-real-{i}"))?;
    sh(&format!(
        "nsenter --mount=/proc/{pid}/ns/mnt -- bash -c '{script}'"
    ))
}

/// A small ext4 filesystem on a loop device, mounted at [`FAULT_MOUNT`] on
/// the machine (whose mount table the runners read: hostPID shows the
/// machine's PID 1) and in the first node's mount namespace (whose root the
/// runner mounts at /host, so only that node's `df` sees it).
pub struct LoopFs {
    device: String,
}

impl LoopFs {
    pub fn make() -> Result<LoopFs> {
        sh(&format!(
            "truncate -s 16M {FAULT_IMAGE} && mkfs.ext4 -q -F -N 128 -m 0 {FAULT_IMAGE}"
        ))?;
        let device = sh(&format!("losetup -f --show {FAULT_IMAGE}"))?
            .trim()
            .to_string();
        let fs = LoopFs { device };
        sh(&format!(
            "mkdir -p {FAULT_MOUNT} && mount {} {FAULT_MOUNT}",
            fs.device
        ))?;
        in_node_mounts(1, &format!("mount {} {FAULT_MOUNT}", fs.device))?;
        Ok(fs)
    }

    pub fn fill(&self) -> Result<()> {
        // The space file's inode first, then the other inodes (while there is
        // room for their directory entries), then the space.
        sh(&format!(
            "cd {FAULT_MOUNT} && touch fill && for i in $(seq 1 400); do touch f$i 2>/dev/null || break; done; \
             dd if=/dev/zero of=fill bs=64k 2>/dev/null; sync; true"
        ))?;
        sh(&format!("mount -o remount,ro {FAULT_MOUNT}"))?;
        Ok(())
    }

    pub fn empty(&self) -> Result<()> {
        sh(&format!(
            "mount -o remount,rw {FAULT_MOUNT} && rm -f {FAULT_MOUNT}/f* {FAULT_MOUNT}/fill && sync"
        ))?;
        Ok(())
    }
}

impl Drop for LoopFs {
    fn drop(&mut self) {
        let _ = in_node_mounts(1, &format!("umount -l {FAULT_MOUNT}"));
        let _ = sh(&format!(
            "umount -l {FAULT_MOUNT}; losetup -d {}; rmdir {FAULT_MOUNT}; rm -f {FAULT_IMAGE}",
            self.device
        ));
    }
}

/// A memory cgroup (v1) with a 32 MiB limit; removed when dropped.
pub struct OomCgroup;

impl OomCgroup {
    pub fn kill_one() -> Result<OomCgroup> {
        sh(&format!(
            "mkdir -p {OOM_CGROUP} && echo 32M > {OOM_CGROUP}/memory.limit_in_bytes"
        ))?;
        let guard = OomCgroup;
        // The shell moves itself into the group, then becomes the allocator.
        let out = Command::new("bash")
            .args([
                "-c",
                &format!(
                    "echo $$ > {OOM_CGROUP}/cgroup.procs && exec python3 -c 'b = bytearray(256 << 20)'"
                ),
            ])
            .output()?;
        use std::os::unix::process::ExitStatusExt as _;
        if out.status.signal() != Some(9) {
            bail!("the allocator was not OOM-killed: {:?}", out.status);
        }
        Ok(guard)
    }
}

impl Drop for OomCgroup {
    fn drop(&mut self) {
        let _ = sh(&format!("rmdir {OOM_CGROUP}"));
    }
}
