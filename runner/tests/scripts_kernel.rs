//! The checks of every category that read the kernel's own reports, against
//! fixture trees: the kernel log (`disk/ioerrors.sh`, `net/kernlog.sh`,
//! `mem/oom.sh`, `mem/kernlog.sh`, `svc/kernlog.sh`) and pressure stall
//! information (`*/psi.sh`). Each kind of kernel log line on its own:
//! `scripts_kernel_fixtures.rs`.

mod support;

use support::scripts::{err, klog_append, ok, run, skipped, skipped_by, skips, Stateful};
use support::Tree;

/// A problem in the kernel log: (script, item, item skipped on the first
/// run, injected line, err text).
type KlogCase = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
);

/// The problems each kernel log check reports.
const KLOG_CASES: [KlogCase; 12] = [
    (
        "disk/ioerrors.sh",
        "io:sdb",
        "io-errors",
        "blk_update_request: I/O error, dev sdb, sector 1234 op 0x0:(READ) flags 0x0",
        "1 I/O error line(s) in the kernel log since the previous run, last: blk_update_request",
    ),
    (
        "disk/ioerrors.sh",
        "fs:sda1",
        "fs-errors",
        "EXT4-fs error (device sda1): ext4_find_entry:1455: inode #2: comm ls: reading directory lblock 0",
        "1 filesystem error line(s)",
    ),
    (
        "svc/kernlog.sh",
        "hung-tasks",
        "hung-tasks",
        "INFO: task jbd2/sda1-8:312 blocked for more than 120 seconds.",
        "1 hung task line(s)",
    ),
    (
        "svc/kernlog.sh",
        "soft-lockups",
        "soft-lockups",
        "watchdog: BUG: soft lockup - CPU#1 stuck for 22s! [kworker/1:2:1234]",
        "CPU#1 stuck",
    ),
    (
        "svc/kernlog.sh",
        "oops",
        "oops",
        "BUG: kernel NULL pointer dereference, address: 0000000000000008",
        "1 oops line(s)",
    ),
    (
        "svc/kernlog.sh",
        "oops",
        "oops",
        "Oops: 0002 [#1] SMP PTI",
        "last: Oops: 0002",
    ),
    (
        "net/kernlog.sh",
        "unregister-netdevice",
        "unregister-netdevice",
        "unregister_netdevice: waiting for eth0 to become free. Usage count = 1",
        "waiting for eth0",
    ),
    (
        "net/kernlog.sh",
        "conntrack-full",
        "conntrack-full",
        "nf_conntrack: nf_conntrack: table full, dropping packet",
        "conntrack table full",
    ),
    (
        "mem/oom.sh",
        "oom-kills",
        "oom-kills",
        "Out of memory: Killed process 4242 (java) total-vm:9000kB, anon-rss:100kB",
        "1 OOM kill(s) since the previous run not at a container's own memory limit, last: java (pid 4242) in a global OOM",
    ),
    (
        "svc/kernlog.sh",
        "rcu-stalls",
        "rcu-stalls",
        "rcu: INFO: rcu_sched self-detected stall on CPU",
        "1 RCU stall line(s)",
    ),
    (
        "net/kernlog.sh",
        "tx-timeout:eth0",
        "tx-timeouts",
        "NETDEV WATCHDOG: eth0 (ixgbe): transmit queue 3 timed out",
        "transmit queue 3 timed out",
    ),
    (
        "mem/kernlog.sh",
        "memory-errors",
        "memory-errors",
        "EDAC MC0: 1 UE memory read error on CPU_SrcID#0_Ha#0_Chan#0_DIMM#0 (channel:0 slot:0 page:0x12345 offset:0x0 grain:32)",
        "1 memory error line(s)",
    ),
];

/// Runs `script` on a kernel log holding `line` since boot, then logged
/// again, then after a reboot: reported once in the run after each time it
/// was logged.
fn reports_once((script, item, first, line, text): KlogCase) {
    let t = Tree::new("klog");
    // The same problem logged before the first run: since boot, never reported.
    klog_append(&t, &["Linux version 6.1", line]);
    let log = t.join("kmsg");
    let st = Stateful::new(&t, "s", &[("KERNEL_LOG_FILE", log.to_str().unwrap())]);
    let (items, s) = st.run_full(script, &[]);
    assert!(items.is_empty(), "{script}: first run {items:?}");
    skipped(&s, first, "baseline recorded; counting from the next run");
    let (items, s) = st.run_full(script, &[]);
    assert!(s.is_empty(), "{script}: {s:?}");
    assert!(
        items.values().all(Option::is_none),
        "{script}: nothing new: {items:?}"
    );
    klog_append(&t, &["eth0: link up", line]);
    let items = st.run(script, &[]);
    err(&items, item, text);
    let others = items.iter().filter(|(_, e)| e.is_some()).count();
    assert_eq!(others, 1, "{script}: only {item} fails: {items:?}");
    let items = st.run(script, &[]);
    assert!(
        items.values().all(Option::is_none),
        "{script}: {item} is not reported twice: {items:?}"
    );
    // After a reboot the whole log of the new boot is new, even with
    // sequence numbers below the position reached.
    t.file("proc/sys/kernel/random/boot_id", "b2\n", 0o644);
    t.file("kmsg", "", 0o644);
    klog_append(&t, &[line]);
    err(&st.run(script, &[]), item, text);
}

#[test]
fn kernel_log_checks_report_a_problem_once_in_the_run_after_it_was_logged() {
    for case in KLOG_CASES {
        reports_once(case);
    }
}

#[test]
fn kernel_log_checks_take_thresholds_and_skip_without_state_or_log() {
    let t = Tree::new("klog-env");
    klog_append(&t, &["booted"]);
    let log = t.join("kmsg");
    let log = log.to_str().unwrap();
    let st = Stateful::new(&t, "s", &[("KERNEL_LOG_FILE", log)]);
    st.run_full("disk/ioerrors.sh", &[]);
    klog_append(
        &t,
        &[
            "Buffer I/O error on dev sdc1, logical block 0, async page read",
            "blk_update_request: critical medium error, dev sdc, sector 10",
            "XFS (dm-0): metadata I/O error in \"xfs_trans_read_buf_map\" at daddr 0x1 len 8 error 5",
        ],
    );
    let items = st.run("disk/ioerrors.sh", &[("DISK_IO_ERRORS_MAX", "1")]);
    ok(&items, "io-errors");
    err(&items, "fs:dm-0", "metadata I/O error");
    // No STATE_DIR (a runner without it): skipped, never a since-boot red.
    let s = skips("disk/ioerrors.sh", t.path(), &[("KERNEL_LOG_FILE", log)]);
    skipped(&s, "io-errors", "no STATE_DIR");
    let s = skips("mem/oom.sh", t.path(), &[("KERNEL_LOG_FILE", log)]);
    skipped(&s, "oom-kills", "no STATE_DIR");
    // An unreadable log.
    let s = st.skips("svc/kernlog.sh", &[("KERNEL_LOG_FILE", "/nonexistent")]);
    skipped(&s, "hung-tasks", "kernel log not readable");
    skipped(&s, "oops", "KERNEL_LOG_FILE overrides");
}

/// The items of the kernel log with a limit: (script, item failed, item
/// when ok, the variable of the limit, two lines of the item).
const LIMITS: [(&str, &str, &str, &str, [&str; 2]); 8] = [
    (
        "svc/kernlog.sh",
        "rcu-stalls",
        "rcu-stalls",
        "SVC_RCU_STALLS_MAX",
        [
            "rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:",
            "rcu: INFO: rcu_preempt self-detected stall on CPU",
        ],
    ),
    (
        "svc/kernlog.sh",
        "hardware-errors",
        "hardware-errors",
        "SVC_HARDWARE_ERRORS_MAX",
        // Machine checks whose status has UC set (bit 61): uncorrected.
        [
            "mce: [Hardware Error]: CPU 0: Machine Check: 0 Bank 5: be00000000800400",
            "mce: [Hardware Error]: CPU 1: Machine Check Exception: 5 Bank 7: be00000000800400",
        ],
    ),
    (
        "net/kernlog.sh",
        "tx-timeout:eth0",
        "tx-timeouts",
        "NET_TX_TIMEOUTS_MAX",
        [
            "NETDEV WATCHDOG: eth0 (ixgbe): transmit queue 3 timed out",
            "NETDEV WATCHDOG: eth0 (ixgbe): transmit queue 1 timed out",
        ],
    ),
    (
        "net/kernlog.sh",
        "neighbour-table-full",
        "neighbour-table-full",
        "NET_NEIGHBOUR_FULL_MAX",
        [
            "neighbour: arp_cache: neighbor table overflow!",
            "neighbour: ndisc_cache: neighbor table overflow!",
        ],
    ),
    (
        "mem/kernlog.sh",
        "memory-errors",
        "memory-errors",
        "MEM_MEMORY_ERRORS_MAX",
        // Uncorrected (UE): each line counts; corrected ones (CE) have
        // mem/ecc.sh's tolerance instead.
        [
            "EDAC MC0: 1 UE memory read error on DIMM_A1 (channel:0 slot:0 page:0x1 offset:0x0 grain:32)",
            "EDAC MC0: 1 UE memory read error on DIMM_A1 (channel:0 slot:0 page:0x2 offset:0x0 grain:32)",
        ],
    ),
    (
        "mem/kernlog.sh",
        "memory-failure",
        "memory-failure",
        "MEM_MEMORY_FAILURE_MAX",
        [
            "Memory failure: 0x12345: recovery action for clean LRU page: Recovered",
            "Memory failure: 0x12346: recovery action for free buddy page: Recovered",
        ],
    ),
    (
        "mem/kernlog.sh",
        "allocation-failures",
        "allocation-failures",
        "MEM_ALLOC_FAILURES_MAX",
        [
            "kworker/0:1: page allocation failure: order:4, mode:0x40cc0(GFP_KERNEL|__GFP_COMP)",
            "ixgbe: page allocation failure: order:2, mode:0x820(GFP_ATOMIC)",
        ],
    ),
    (
        "disk/ioerrors.sh",
        "fs:dm-0",
        "fs-errors",
        "DISK_FS_ERRORS_MAX",
        [
            "XFS (dm-0): log I/O error -5",
            "XFS (dm-0): Filesystem has been shut down due to log error (0x2).",
        ],
    ),
];

#[test]
fn kernel_log_items_are_ok_up_to_their_limit() {
    for (script, item, ok_item, var, lines) in LIMITS {
        let t = Tree::new("klog-limit");
        klog_append(&t, &["Linux version 6.1"]);
        let log = t.join("kmsg");
        let env = [("KERNEL_LOG_FILE", log.to_str().unwrap())];
        let runs = ["default", "two", "one"].map(|n| Stateful::new(&t, n, &env));
        for st in &runs {
            st.run_full(script, &[]);
        }
        klog_append(&t, &lines);
        err(&runs[0].run(script, &[]), item, "2 ");
        ok(&runs[1].run(script, &[(var, "2")]), ok_item);
        err(&runs[2].run(script, &[(var, "1")]), item, lines[1]);
    }
}

/// A container killed at its own memory limit, as a 6.x kernel logs it.
const POD_OOM: [&str; 2] = [
    "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=cri-containerd-abc.scope,mems_allowed=0,oom_memcg=/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod123.slice/cri-containerd-abc.scope,task_memcg=/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod123.slice/cri-containerd-abc.scope,task=stress,pid=4242,uid=0",
    "Memory cgroup out of memory: Killed process 4242 (stress) total-vm:1000kB, anon-rss:500kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:40kB oom_score_adj:999",
];

/// The kubelet killed at the limit of its own (system) cgroup.
const KUBELET_OOM: [&str; 2] = [
    "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/system.slice/kubelet.service,task_memcg=/system.slice/kubelet.service,task=kubelet,pid=812,uid=0",
    "Memory cgroup out of memory: Killed process 812 (kubelet) total-vm:2097152kB, anon-rss:1048576kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:4096kB oom_score_adj:-999",
];

#[test]
fn oom_kills_at_a_containers_own_limit_are_noted_and_the_nodes_own_fail() {
    let t = Tree::new("oom-kinds");
    t.file("proc/vmstat", "oom_kill 3\n", 0o644);
    klog_append(&t, &["Linux version 6.1"]);
    let log = t.join("kmsg");
    let st = Stateful::new(&t, "s", &[("KERNEL_LOG_FILE", log.to_str().unwrap())]);
    skipped(
        &st.skips("mem/oom.sh", &[]),
        "oom-kills",
        "baseline recorded",
    );
    // A container at its own limit: the kubelet reports it; the node is fine.
    klog_append(&t, &POD_OOM);
    t.file("proc/vmstat", "oom_kill 4\n", 0o644);
    assert_eq!(
        st.stdout("mem/oom.sh", &[]).trim(),
        "ok oom-kills 1 container(s) killed at their own memory limit since the previous run \
         (the kubelet reports them as OOMKilled), last: stress (pid 4242) in \
         /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod123.slice/cri-containerd-abc.scope"
    );
    // A system cgroup at its limit fails, naming the process and the cgroup.
    klog_append(
        &t,
        &[KUBELET_OOM[0], KUBELET_OOM[1], POD_OOM[0], POD_OOM[1]],
    );
    t.file("proc/vmstat", "oom_kill 6\n", 0o644);
    err(
        &st.run("mem/oom.sh", &[]),
        "oom-kills",
        "1 OOM kill(s) since the previous run not at a container's own memory limit, \
         last: kubelet (pid 812) at the memory limit of cgroup /system.slice/kubelet.service; \
         also 1 container(s) killed at their own memory limit",
    );
    // Kills the counter shows but the log does not are the node's.
    t.file("proc/vmstat", "oom_kill 8\n", 0o644);
    err(
        &st.run("mem/oom.sh", &[]),
        "oom-kills",
        "2 OOM kill(s) since the previous run not in the kernel log (/proc/vmstat counts them), so their kind is unknown",
    );
    t.file("proc/vmstat", "oom_kill 9\n", 0o644);
    err(
        &st.run("mem/oom.sh", &[("KERNEL_LOG_FILE", "/nonexistent")]),
        "oom-kills",
        "1 OOM kill(s) since the previous run of unknown kind: the kernel log is not readable",
    );
    // The pods' cgroups are a setting.
    klog_append(&t, &KUBELET_OOM);
    t.file("proc/vmstat", "oom_kill 10\n", 0o644);
    ok(
        &st.run(
            "mem/oom.sh",
            &[(
                "MEM_OOM_POD_CGROUPS",
                "/kubepods.slice /system.slice/kubelet.service",
            )],
        ),
        "oom-kills",
    );
}

#[test]
fn removable_drives_are_left_out_of_io_errors_unless_the_setting_keeps_them() {
    let t = Tree::new("io-ignore");
    klog_append(&t, &["Linux version 6.1"]);
    let log = t.join("kmsg");
    let env = [("KERNEL_LOG_FILE", log.to_str().unwrap())];
    let runs = ["default", "none", "loops"].map(|n| Stateful::new(&t, n, &env));
    for st in &runs {
        st.run_full("disk/ioerrors.sh", &[]);
    }
    klog_append(
        &t,
        &[
            "I/O error, dev sr0, sector 0 op 0x0:(READ) flags 0x80700 phys_seg 1 prio class 0",
            "Buffer I/O error on dev fd0, logical block 0, async page read",
            "blk_update_request: I/O error, dev loop7, sector 0 op 0x0:(READ) flags 0x0 phys_seg 1 prio class 0",
        ],
    );
    let items = runs[0].run("disk/ioerrors.sh", &[]);
    err(&items, "io:loop7", "dev loop7");
    assert_eq!(items.len(), 2, "sr0 and fd0 left out: {items:?}");
    let items = runs[1].run("disk/ioerrors.sh", &[("DISK_IO_IGNORE_DEVICES", "")]);
    err(&items, "io:sr0", "dev sr0");
    err(&items, "io:fd0", "dev fd0");
    let items = runs[2].run(
        "disk/ioerrors.sh",
        &[("DISK_IO_IGNORE_DEVICES", "sr[0-9] fd? loop*")],
    );
    ok(&items, "io-errors");
}

#[test]
fn pressure_checks_take_thresholds_and_skip_without_psi() {
    let t = Tree::new("psi");
    for (script, item) in [
        ("svc/psi.sh", "psi:cpu"),
        ("mem/psi.sh", "psi:memory"),
        ("disk/psi.sh", "psi:io"),
    ] {
        skipped_by(script, t.path(), item, "kernel without PSI");
    }
    let psi = "some avg10=55.00 avg60=10.00 avg300=1.00 total=1000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
    for r in ["cpu", "memory", "io"] {
        t.file(&format!("proc/pressure/{r}"), psi, 0o644);
    }
    ok(&run("svc/psi.sh", t.path(), &[]), "psi:cpu");
    err(
        &run("mem/psi.sh", t.path(), &[]),
        "psi:memory",
        "tasks waited for memory 55.0% of the last 10s (limit 20%)",
    );
    err(&run("disk/psi.sh", t.path(), &[]), "psi:io", "(limit 50%)");
    ok(
        &run(
            "disk/psi.sh",
            t.path(),
            &[("DISK_PSI_IO_MAX_PERCENT", "60")],
        ),
        "psi:io",
    );
    err(
        &run("svc/psi.sh", t.path(), &[("SVC_PSI_CPU_MAX_PERCENT", "50")]),
        "psi:cpu",
        "cpu pressure",
    );
}
