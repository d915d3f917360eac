//! Real kernel log lines, each on its own, against every check that reads
//! the kernel log: a line of a problem fails exactly the item named for it,
//! in one script; a harmless line (a user-space crash, firmware chatter, an
//! empty CD-ROM, a container killed at its own memory limit) fails nothing.
//! The lines are in the formats the kernel prints (the printk formats of
//! the kernel source) and those node-problem-detector's kernel-monitor.json
//! and readonly-monitor.json match.

mod support;

use support::scripts::{klog_append, Stateful, KLOG_SCRIPTS};
use support::Tree;

/// A problem the kernel logs: its records (one per line of the text), the
/// script and item it fails, and a part of the err message.
type Fault = (&'static str, &'static str, &'static str, &'static str);

/// The kernel itself and the machine under it.
const SVC_FAULTS: &[Fault] = &[
    ("INFO: task jbd2/sda1-8:312 blocked for more than 120 seconds.", "svc/kernlog.sh", "hung-tasks", "1 hung task line(s)"),
    ("INFO: task docker:20744 blocked for more than 120 seconds.", "svc/kernlog.sh", "hung-tasks", "task docker:20744"),
    ("INFO: task umount.aufs:21568 blocked for more than 120 seconds.", "svc/kernlog.sh", "hung-tasks", "umount.aufs"),
    ("watchdog: BUG: soft lockup - CPU#1 stuck for 22s! [kworker/1:2:1234]", "svc/kernlog.sh", "soft-lockups", "CPU#1 stuck"),
    ("NMI watchdog: Watchdog detected hard LOCKUP on cpu 3", "svc/kernlog.sh", "soft-lockups", "hard LOCKUP"),
    ("BUG: workqueue lockup - pool cpus=2 node=0 flags=0x0 nice=0 stuck for 31s!", "svc/kernlog.sh", "soft-lockups", "workqueue lockup"),
    ("rcu: INFO: rcu_sched self-detected stall on CPU", "svc/kernlog.sh", "rcu-stalls", "1 RCU stall line(s)"),
    ("rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:", "svc/kernlog.sh", "rcu-stalls", "rcu_preempt"),
    ("INFO: rcu_sched detected stalls on CPUs/tasks: { 3} (detected by 1, t=60002 jiffies, g=1234, c=1233, q=5)", "svc/kernlog.sh", "rcu-stalls", "rcu_sched"),
    ("rcu: INFO: rcu_preempt detected expedited stalls on CPUs/tasks: { 5-... } 21003 jiffies s: 1234 root: 0x1/.", "svc/kernlog.sh", "rcu-stalls", "expedited"),
    ("mce: [Hardware Error]: CPU 0: Machine Check: 0 Bank 5: be00000000800400", "svc/kernlog.sh", "hardware-errors", "Machine Check: 0 Bank 5"),
    ("mce: [Hardware Error]: CPU 3: Machine Check Exception: 5 Bank 4: b200000000070f0f", "svc/kernlog.sh", "hardware-errors", "1 hardware error line(s)"),
    ("{1}[Hardware Error]: event severity: fatal", "svc/kernlog.sh", "hardware-errors", "severity: fatal"),
    ("{2}[Hardware Error]: event severity: recoverable", "svc/kernlog.sh", "hardware-errors", "recoverable"),
    // A firmware report counts once, on its severity, not on its header.
    (
        "{5}[Hardware Error]: Hardware error from APEI Generic Hardware Error Source: 3\n\
         {5}[Hardware Error]: event severity: recoverable\n\
         {5}[Hardware Error]:  Error 0, type: recoverable\n\
         {5}[Hardware Error]:   section_type: PCIe error",
        "svc/kernlog.sh",
        "hardware-errors",
        "1 hardware error line(s) in the kernel log since the previous run, last: {5}[Hardware Error]: event severity: recoverable",
    ),
    // The previous boot's fatal error (BERT: no "{N}").
    (
        "BERT: Error records from previous boot:\n\
         [Hardware Error]: event severity: fatal",
        "svc/kernlog.sh",
        "hardware-errors",
        "last: [Hardware Error]: event severity: fatal",
    ),
    ("BUG: unable to handle kernel NULL pointer dereference at 0000000000000078", "svc/kernlog.sh", "oops", "1 oops line(s)"),
    ("BUG: kernel NULL pointer dereference, address: 0000000000000008", "svc/kernlog.sh", "oops", "NULL pointer"),
    ("BUG: unable to handle page fault for address: ffffffffc0a1b2c3", "svc/kernlog.sh", "oops", "page fault"),
    ("divide error: 0000 [#1] SMP ", "svc/kernlog.sh", "oops", "divide error"),
    ("general protection fault, probably for non-canonical address 0xdead000000000100: 0000 [#1] SMP PTI", "svc/kernlog.sh", "oops", "non-canonical"),
    ("general protection fault: 0000 [#1] SMP", "svc/kernlog.sh", "oops", "general protection fault"),
    ("invalid opcode: 0000 [#1] PREEMPT SMP NOPTI", "svc/kernlog.sh", "oops", "invalid opcode"),
    ("Oops: 0002 [#1] SMP PTI", "svc/kernlog.sh", "oops", "last: Oops: 0002"),
    ("Internal error: Oops: 0000000096000005 [#1] PREEMPT SMP", "svc/kernlog.sh", "oops", "Internal error"),
    ("kernel BUG at mm/slub.c:305!", "svc/kernlog.sh", "oops", "kernel BUG at"),
    ("Kernel panic - not syncing: Fatal exception in interrupt", "svc/kernlog.sh", "oops", "Kernel panic"),
];

/// The network.
const NET_FAULTS: &[Fault] = &[
    (
        "unregister_netdevice: waiting for lo to become free. Usage count = 1",
        "net/kernlog.sh",
        "unregister-netdevice",
        "waiting for lo",
    ),
    (
        "nf_conntrack: nf_conntrack: table full, dropping packet",
        "net/kernlog.sh",
        "conntrack-full",
        "conntrack table full",
    ),
    (
        "NETDEV WATCHDOG: eth0 (ixgbe): transmit queue 3 timed out",
        "net/kernlog.sh",
        "tx-timeout:eth0",
        "1 transmit timeout line(s)",
    ),
    (
        "ixgbe 0000:01:00.0 eth1: NETDEV WATCHDOG: CPU: 3: transmit queue 2 timed out 5124 ms",
        "net/kernlog.sh",
        "tx-timeout:eth1",
        "transmit queue 2",
    ),
    (
        "e1000e 0000:00:19.0 eno1: Detected Hardware Unit Hang:",
        "net/kernlog.sh",
        "tx-timeout:eno1",
        "Hardware Unit Hang",
    ),
    (
        "ixgbe 0000:03:00.1 ens1f1: Detected Tx Unit Hang",
        "net/kernlog.sh",
        "tx-timeout:ens1f1",
        "Tx Unit Hang",
    ),
    (
        "neighbour: arp_cache: neighbor table overflow!",
        "net/kernlog.sh",
        "neighbour-table-full",
        "arp_cache",
    ),
];

/// Memory: the node's own OOM kills and the kernel's memory errors.
const MEM_FAULTS: &[Fault] = &[
    (
        "Out of memory: Killed process 4242 (java) total-vm:9000kB, anon-rss:100kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:40kB oom_score_adj:0",
        "mem/oom.sh",
        "oom-kills",
        "1 OOM kill(s) since the previous run not at a container's own memory limit, last: java (pid 4242) in a global OOM",
    ),
    (
        "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/system.slice/foo.service,task=foo,pid=99,uid=0\n\
         Out of memory: Killed process 99 (foo) total-vm:102400kB, anon-rss:81920kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:200kB oom_score_adj:0",
        "mem/oom.sh",
        "oom-kills",
        "foo (pid 99) in a global OOM (the node ran out of memory), task cgroup /system.slice/foo.service",
    ),
    (
        "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/system.slice/containerd.service,task_memcg=/system.slice/containerd.service,task=containerd,pid=812,uid=0\n\
         Memory cgroup out of memory: Killed process 812 (containerd) total-vm:2097152kB, anon-rss:1048576kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:4096kB oom_score_adj:-999",
        "mem/oom.sh",
        "oom-kills",
        "containerd (pid 812) at the memory limit of cgroup /system.slice/containerd.service",
    ),
    (
        "Task in /system.slice/kubelet.service killed as a result of limit of /system.slice/kubelet.service\n\
         Memory cgroup out of memory: Kill process 1012 (kubelet) score 1035 or sacrifice child\n\
         Killed process 1012 (kubelet) total-vm:327128kB, anon-rss:306328kB, file-rss:11132kB",
        "mem/oom.sh",
        "oom-kills",
        "kubelet (pid 1012) at the memory limit of cgroup /system.slice/kubelet.service",
    ),
    (
        "Killed process 1012 (heapster) total-vm:327128kB, anon-rss:306328kB, file-rss:11132kB",
        "mem/oom.sh",
        "oom-kills",
        "heapster (pid 1012), kind not logged",
    ),
    (
        "Out of memory (oom_kill_allocating_task): Killed process 77 (bash) total-vm:10240kB, anon-rss:1024kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:40kB oom_score_adj:0",
        "mem/oom.sh",
        "oom-kills",
        "bash (pid 77) in a global OOM",
    ),
    (
        "oom-kill:constraint=CONSTRAINT_CPUSET,nodemask=(null),cpuset=pinned,mems_allowed=1,global_oom,task_memcg=/system.slice/numa.service,task=numa,pid=5,uid=0\n\
         Out of memory: Killed process 5 (numa) total-vm:10240kB, anon-rss:1024kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:40kB oom_score_adj:0",
        "mem/oom.sh",
        "oom-kills",
        "numa (pid 5) out of memory in its cpuset",
    ),
    // The pods together at the memory the node allots them (node
    // allocatable), or a QoS class of them at its limit: the node's.
    (
        "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=cri-containerd-5d8e.scope,mems_allowed=0,oom_memcg=/kubepods.slice,task_memcg=/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod123.slice/cri-containerd-5d8e.scope,task=java,pid=4242,uid=0\n\
         Memory cgroup out of memory: Killed process 4242 (java) total-vm:8523408kB, anon-rss:2096544kB, file-rss:27104kB, shmem-rss:0kB, UID:0 pgtables:4500kB oom_score_adj:969",
        "mem/oom.sh",
        "oom-kills",
        "java (pid 4242) at the memory limit of /kubepods.slice, the cgroup of all pods: the pods together used the memory the node allots them (node allocatable)",
    ),
    (
        "Task in /kubepods/burstable/pod1/abc killed as a result of limit of /kubepods\n\
         Memory cgroup out of memory: Kill process 1012 (heapster) score 1035 or sacrifice child\n\
         Killed process 1012 (heapster) total-vm:327128kB, anon-rss:306328kB, file-rss:11132kB, shmem-rss:12345kB",
        "mem/oom.sh",
        "oom-kills",
        "heapster (pid 1012) at the memory limit of /kubepods, the cgroup of all pods",
    ),
    (
        "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=cri-containerd-5d8e.scope,mems_allowed=0,oom_memcg=/kubepods.slice/kubepods-burstable.slice,task_memcg=/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod123.slice/cri-containerd-5d8e.scope,task=java,pid=4242,uid=0\n\
         Memory cgroup out of memory: Killed process 4242 (java) total-vm:8523408kB, anon-rss:2096544kB, file-rss:27104kB, shmem-rss:0kB, UID:0 pgtables:4500kB oom_score_adj:969",
        "mem/oom.sh",
        "oom-kills",
        "at the memory limit of /kubepods.slice/kubepods-burstable.slice, the cgroup of a QoS class",
    ),
    (
        "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=77aa,mems_allowed=0,oom_memcg=/kubepods/besteffort,task_memcg=/kubepods/besteffort/pod9/77aa,task=nginx,pid=77,uid=0\n\
         Memory cgroup out of memory: Killed process 77 (nginx) total-vm:10240kB, anon-rss:1024kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:40kB oom_score_adj:1000",
        "mem/oom.sh",
        "oom-kills",
        "nginx (pid 77) at the memory limit of /kubepods/besteffort, the cgroup of a QoS class",
    ),
    // Corrected errors: more than MEM_ECC_CE_MAX (10) on one memory
    // controller since the previous run (the test's node has no EDAC
    // counters for mem/ecc.sh to count them).
    (
        "EDAC MC0: 12 CE memory read error on CPU_SrcID#0_Ha#0_Chan#0_DIMM#0 (channel:0 slot:0 page:0x12345 offset:0x0 grain:32 syndrome:0x0 - area:DRAM err_code:0001:0090 socket:0 ha:0 channel_mask:1 rank:0)",
        "mem/kernlog.sh",
        "memory-errors",
        "12 corrected errors (EDAC MC0) since the previous run, more than MEM_ECC_CE_MAX 10",
    ),
    (
        "EDAC MC0: 1 UE memory read error on CPU_SrcID#0_Ha#0_Chan#0_DIMM#0 (channel:0 slot:0 page:0x12345 offset:0x0 grain:32 - area:DRAM err_code:0001:0090 socket:0 ha:0 channel_mask:1 rank:0)",
        "mem/kernlog.sh",
        "memory-errors",
        "1 memory error line(s)",
    ),
    (
        "EDAC MC1: 1 UE on mc#1csrow#2channel#0 (csrow:2 channel:0 page:0x812345 offset:0x640 grain:64)",
        "mem/kernlog.sh",
        "memory-errors",
        "EDAC MC1: 1 UE on mc#1csrow#2channel#0",
    ),
    (
        "Memory failure: 0x12345: recovery action for dirty LRU page: Recovered",
        "mem/kernlog.sh",
        "memory-failure",
        "1 memory failure line(s)",
    ),
    (
        "Memory failure: 0x7a9d5: Sending SIGBUS to stress:4242 due to hardware memory corruption",
        "mem/kernlog.sh",
        "memory-failure",
        "SIGBUS",
    ),
    (
        "mce: Uncorrected hardware memory error in user-access at 3b116a4400",
        "mem/kernlog.sh",
        "memory-failure",
        "user-access",
    ),
    (
        "kworker/u16:3: page allocation failure: order:4, mode:0x40cc0(GFP_KERNEL|__GFP_COMP), nodemask=(null),cpuset=/,mems_allowed=0",
        "mem/kernlog.sh",
        "allocation-failures",
        "order:4",
    ),
];

/// Disks and filesystems, named with the whole device.
const DISK_FAULTS: &[Fault] = &[
    ("blk_update_request: I/O error, dev sdb, sector 1234 op 0x0:(READ) flags 0x0 phys_seg 1 prio class 0", "disk/ioerrors.sh", "io:sdb", "1 I/O error line(s)"),
    ("I/O error, dev nvme0n1, sector 2048 op 0x1:(WRITE) flags 0x8800 phys_seg 1 prio class 2", "disk/ioerrors.sh", "io:nvme0n1", "sector 2048"),
    ("blk_update_request: I/O error, dev nvme0n1, sector 2048 op 0x1:(WRITE) flags 0x8800 phys_seg 1 prio class 0", "disk/ioerrors.sh", "io:nvme0n1", "blk_update_request"),
    ("nvme0n1: I/O Cmd(0x2) @ LBA 123, 8 blocks, I/O Error (sct 0x2 / sc 0x81)", "disk/ioerrors.sh", "io:nvme0n1", "LBA 123"),
    ("nvme1n1: Read(0x2) @ LBA 4096, 8 blocks, Unrecovered Read Error (sct 0x2 / sc 0x81) DNR ", "disk/ioerrors.sh", "io:nvme1n1", "Unrecovered Read Error"),
    ("nvme nvme0: I/O 123 QID 4 timeout, aborting", "disk/ioerrors.sh", "io:nvme0", "QID 4 timeout"),
    ("Buffer I/O error on dev dm-0, logical block 0, async page read", "disk/ioerrors.sh", "io:dm-0", "Buffer I/O error"),
    ("Buffer I/O error on device sdb1, logical block 0", "disk/ioerrors.sh", "io:sdb1", "logical block 0"),
    ("blk_update_request: critical medium error, dev sdc, sector 10 op 0x0:(READ) flags 0x0 phys_seg 1 prio class 0", "disk/ioerrors.sh", "io:sdc", "critical medium error"),
    ("sd 2:0:0:0: [sdb] tag#0 Sense Key : Medium Error [current]", "disk/ioerrors.sh", "io:sdb", "Medium Error"),
    ("ata1.00: failed command: READ FPDMA QUEUED", "disk/ioerrors.sh", "io:ata1.00", "failed command"),
    ("print_req_error: I/O error, dev vda, sector 4096", "disk/ioerrors.sh", "io:vda", "print_req_error"),
    ("EXT4-fs error (device sda1): ext4_find_entry:1455: inode #2: comm ls: reading directory lblock 0", "disk/ioerrors.sh", "fs:sda1", "1 filesystem error line(s)"),
    ("EXT4-fs warning (device sda1): ext4_dx_add_entry:2461: Directory (ino: 1234) index full, reach max htree level :2", "disk/ioerrors.sh", "fs:sda1", "index full"),
    ("EXT4-fs (sda1): Remounting filesystem read-only", "disk/ioerrors.sh", "fs:sda1", "Remounting filesystem read-only"),
    ("EXT4-fs (dm-4): error count since last fsck: 3", "disk/ioerrors.sh", "fs:dm-4", "error count"),
    ("Aborting journal on device sda1-8.", "disk/ioerrors.sh", "fs:sda1", "Aborting journal"),
    ("JBD2: Error -5 detected when updating journal superblock for dm-2-8.", "disk/ioerrors.sh", "fs:dm-2", "JBD2"),
    ("XFS (dm-0): Filesystem has been shut down due to log error (0x2).", "disk/ioerrors.sh", "fs:dm-0", "shut down due to log error"),
    ("XFS (dm-1): Log I/O Error Detected. Shutting down filesystem", "disk/ioerrors.sh", "fs:dm-1", "Log I/O Error Detected"),
    ("XFS (sdb1): log I/O error -5", "disk/ioerrors.sh", "fs:sdb1", "log I/O error -5"),
    ("XFS (sda2): Corruption of in-memory data detected.  Shutting down filesystem", "disk/ioerrors.sh", "fs:sda2", "Shutting down filesystem"),
    ("XFS (dm-3): Metadata corruption detected at xfs_inode_buf_verify+0x14d/0x160 [xfs], xfs_inode block 0x12345 xfs_inode_buf_verify", "disk/ioerrors.sh", "fs:dm-3", "Metadata corruption"),
    ("XFS (sdb): metadata I/O error in \"xfs_trans_read_buf_map\" at daddr 0x1 len 8 error 5", "disk/ioerrors.sh", "fs:sdb", "metadata I/O error"),
    ("BTRFS error (device sdd1): bdev /dev/sdd1 errs: wr 0, rd 1, flush 0, corrupt 0, gen 0", "disk/ioerrors.sh", "fs:sdd1", "BTRFS error"),
    ("BTRFS critical (device nvme1n1p2): corrupt leaf: root=2 block=1234 slot=5, invalid key objectid", "disk/ioerrors.sh", "fs:nvme1n1p2", "corrupt leaf"),
    ("FAT-fs (sdb1): error, fat_get_cluster: invalid cluster chain (i_pos 0)", "disk/ioerrors.sh", "fs:sdb1", "FAT-fs"),
];

/// Lines that are no fault of the node: none fails any item.
const HARMLESS: &[&str] = &[
    "python3[4242]: segfault at 0 ip 00007f1c2a3b4c5d sp 00007ffd12345678 error 4 in libc.so.6[7f1c2a300000+195000] likely on CPU 3 (core 3, socket 0)",
    "traps: python3[4242] general protection fault ip:7f1c2a3b4c5d sp:7ffd12345678 error:0 in libc.so.6[7f1c2a300000+195000]",
    "traps: foo[1] trap invalid opcode ip:55d0c0ffee00 sp:7ffc0ffee000 error:0 in foo[55d0c0f00000+1000]",
    "traps: node[777] trap divide error ip:55d0c0ffee00 sp:7ffc0ffee000 error:0 in node[55d0c0f00000+3000000]",
    "ACPI: Added _OSI(Module Device)",
    "ACPI Error: AE_NOT_FOUND, While resolving a named reference package element - LNXCPU (20210730/dspkginit-438)",
    "[Firmware Bug]: TSC_DEADLINE disabled due to Errata; please update microcode to version: 0x3a (or later)",
    "x86/cpu: SGX disabled by BIOS.",
    "I/O error, dev sr0, sector 0 op 0x0:(READ) flags 0x80700 phys_seg 1 prio class 0",
    "blk_update_request: I/O error, dev fd0, sector 0 op 0x0:(READ) flags 0x0 phys_seg 1 prio class 0",
    "Buffer I/O error on dev sr0, logical block 0, async page read",
    "sr 1:0:0:0: [sr0] tag#0 Sense Key : Medium Error [current]",
    "audit: type=1400 audit(1700000000.123:45): apparmor=\"DENIED\" operation=\"open\" profile=\"cri-containerd.apparmor.d\" name=\"/proc/sys/kernel/shm_max\" pid=4242 comm=\"java\" requested_mask=\"r\" denied_mask=\"r\" fsuid=0 ouid=0",
    "EXT4-fs (sda1): mounted filesystem with ordered data mode. Opts: (null)",
    "EXT4-fs (sda1): re-mounted. Opts: errors=remount-ro",
    "EXT4-fs (sdb1): mounted filesystem 0b4c7e7a-9f6e-4a4b-8e6d-1d2f3a4b5c6d r/w with ordered data mode. Quota mode: none.",
    "EXT4-fs (sda1): warning: maximal mount count reached, running e2fsck is recommended",
    "XFS (sda1): Mounting V5 Filesystem",
    "XFS (sda1): Ending clean mount",
    "BTRFS info (device sda1): disk space caching is enabled",
    "nvme nvme0: pci function 0000:00:04.0",
    "sd 0:0:0:0: [sda] Attached SCSI disk",
    // A container killed at its own limit: its workload's event.
    "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=cri-containerd-abc.scope,mems_allowed=0,oom_memcg=/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod123.slice/cri-containerd-abc.scope,task_memcg=/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod123.slice/cri-containerd-abc.scope,task=stress,pid=4242,uid=0\n\
     Memory cgroup out of memory: Killed process 4242 (stress) total-vm:1000kB, anon-rss:500kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:40kB oom_score_adj:999",
    // The same on a kubelet without pod cgroups: containerd's own.
    "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=451aac6652ee,mems_allowed=0,oom_memcg=/k8s.io/451aac6652ee,task_memcg=/k8s.io/451aac6652ee,task=tail,pid=16763,uid=0\n\
     Memory cgroup out of memory: Killed process 16763 (tail) total-vm:18528kB, anon-rss:16128kB, file-rss:1260kB, shmem-rss:0kB, UID:0 pgtables:72kB oom_score_adj:0",
    // The same when the kernel rate-limited the summary.
    "Memory cgroup out of memory: Killed process 4243 (stress) total-vm:1000kB, anon-rss:500kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:40kB oom_score_adj:999",
    // cgroup v1 and kernels before 4.19 (node-problem-detector's test log).
    "Task in /kubepods/burstable/pod1/abc killed as a result of limit of /kubepods/burstable/pod1/abc\n\
     Memory cgroup out of memory: Kill process 1012 (heapster) score 1035 or sacrifice child\n\
     Killed process 1012 (heapster) total-vm:327128kB, anon-rss:306328kB, file-rss:11132kB, shmem-rss:12345kB",
    // A pod's own cgroup at its limit (the sum of its containers' limits):
    // the pod's, not the node's.
    "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=cri-containerd-5d8e.scope,mems_allowed=0,oom_memcg=/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod123.slice,task_memcg=/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod123.slice/cri-containerd-5d8e.scope,task=java,pid=4242,uid=0\n\
     Memory cgroup out of memory: Killed process 4242 (java) total-vm:8523408kB, anon-rss:2096544kB, file-rss:27104kB, shmem-rss:0kB, UID:0 pgtables:4500kB oom_score_adj:969",
    "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=9c9c,mems_allowed=0,oom_memcg=/kubepods/pod0d1e2f3a,task_memcg=/kubepods/pod0d1e2f3a/9c9c,task=redis,pid=88,uid=0\n\
     Memory cgroup out of memory: Killed process 88 (redis) total-vm:10240kB, anon-rss:1024kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:40kB oom_score_adj:-997",
    // Corrected hardware errors: one item, one tolerance. A corrected
    // memory error is mem/ecc.sh's ecc:<mc> where EDAC counters exist, else
    // memory-errors above MEM_ECC_CE_MAX (10) per controller: one corrected
    // error is within it, and never hardware-errors.
    "EDAC MC0: 1 CE memory read error on CPU_SrcID#0_Ha#0_Chan#0_DIMM#0 (channel:0 slot:0 page:0x12345 offset:0x0 grain:32 syndrome:0x0 - area:DRAM err_code:0001:0090 socket:0 ha:0 channel_mask:1 rank:0)",
    // The same in the old EDAC format: mem/ecc.sh's counters count it.
    "EDAC MC1: CE page 0x1234, offset 0x560, grain 0, syndrome 0x1b6, row 1, channel 0, label \"\": amd64_edac",
    // The notice that follows every machine check, corrected ones too.
    "mce: [Hardware Error]: Machine check events logged",
    // A machine check whose status has UC clear: corrected.
    "mce: [Hardware Error]: CPU 0: Machine Check: 0 Bank 7: 8c00004000010090",
    // A firmware report counts on its severity line, not its header; a
    // corrected or informational one not at all.
    "{1}[Hardware Error]: Hardware error from APEI Generic Hardware Error Source: 1",
    "{3}[Hardware Error]: event severity: corrected",
    "{4}[Hardware Error]: event severity: info",
    "EDAC MC: Ver: 3.0.0",
    "EDAC sbridge: Seeking for: PCI ID 8086:6fa0",
    "mce: CPU0: Thermal monitoring enabled (TM1)",
    "RAS: Correctable Errors collector initialized.",
    "rcu: Hierarchical RCU implementation.",
    "nf_conntrack: default automatic helper assignment has been turned off for security reasons and CT-based firewall rule not found. Use the iptables CT target to attach helpers instead.",
    "IPv6: ADDRCONF(NETDEV_CHANGE): eth0: link becomes ready",
    "ixgbe 0000:01:00.0 eth0: NIC Link is Up 10 Gbps, Flow Control: RX/TX",
    "usb 1-1: device descriptor read/64, error -71",
    "systemd[1]: Started Journal Service.",
];

/// The err items, as (script, item, message), that every kernel-log check
/// reports in its run after `text` (one record per line) was logged, on a
/// fresh log whose first run recorded the baseline.
fn errs_after(text: &str) -> Vec<(String, String, String)> {
    let t = Tree::new("klog-line");
    klog_append(&t, &["Linux version 6.1.0 (gcc 12.2.0)"]);
    let log = t.join("kmsg").to_str().unwrap().to_string();
    let runs: Vec<(&str, Stateful)> = KLOG_SCRIPTS
        .iter()
        .map(|s| {
            let st = Stateful::new(&t, &s.replace('/', "-"), &[("KERNEL_LOG_FILE", &log)]);
            (*s, st)
        })
        .collect();
    for (script, st) in &runs {
        let (items, skips) = st.run_full(script, &[]);
        assert!(
            items.is_empty() && !skips.is_empty(),
            "{script}: the first run records the baseline: {items:?}"
        );
    }
    let records: Vec<&str> = text.lines().map(str::trim_start).collect();
    klog_append(&t, &records);
    let mut errs = Vec::new();
    for (script, st) in &runs {
        let (items, skips) = st.run_full(script, &[]);
        assert!(skips.is_empty(), "{script}: {skips:?}");
        for (item, e) in items {
            if let Some(msg) = e {
                errs.push((script.to_string(), item, msg));
            }
        }
    }
    errs
}

/// Asserts that each fault fails its item and nothing else.
fn each_fails_only_its_item(faults: &[Fault]) {
    for (text, script, item, contains) in faults {
        let errs = errs_after(text);
        let [(s, i, msg)] = errs.as_slice() else {
            panic!("{text:?}: one err item expected ({script} {item}), got {errs:?}");
        };
        assert_eq!(
            (s.as_str(), i.as_str()),
            (*script, *item),
            "{text:?}: {msg}"
        );
        assert!(
            msg.contains(contains),
            "{text:?}: {msg:?} lacks {contains:?}"
        );
    }
}

#[test]
fn kernel_problems_fail_the_one_item_named_for_them() {
    assert!(SVC_FAULTS.len() >= 20);
    each_fails_only_its_item(SVC_FAULTS);
}

#[test]
fn network_problems_fail_the_one_item_named_for_them() {
    each_fails_only_its_item(NET_FAULTS);
}

#[test]
fn node_ooms_and_memory_errors_fail_the_one_item_named_for_them() {
    each_fails_only_its_item(MEM_FAULTS);
}

#[test]
fn disk_and_filesystem_errors_fail_the_item_of_their_whole_device() {
    each_fails_only_its_item(DISK_FAULTS);
}

#[test]
fn harmless_lines_fail_no_item() {
    assert!(HARMLESS.len() >= 20);
    for text in HARMLESS {
        let errs = errs_after(text);
        assert!(errs.is_empty(), "{text:?} failed {errs:?}");
    }
}
