//! The default scripts of `scripts/` against fixture trees (a fake `/proc`,
//! `/sys`, kernel log and tools made by each test) and once against this
//! machine.

mod support;

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

use support::Tree;

fn scripts_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts")
}

/// Items a script printed: item -> Some(err message) or None for ok.
type Items = BTreeMap<String, Option<String>>;

/// Skipped items a script printed: item -> reason.
type Skips = BTreeMap<String, String>;

/// Variables of the runner's environment a test must not inherit.
const CLEARED: [&str; 9] = [
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

/// Runs `scripts/<rel>` with HOST_ROOT at `root`, fake tools first in PATH;
/// returns its ok/err items and its skipped items.
fn run_full(rel: &str, root: &Path, env: &[(&str, &str)]) -> (Items, Skips) {
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
    let mut items = Items::new();
    let mut skips = Skips::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
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

/// Runs `scripts/<rel>` and returns its ok/err items.
fn run(rel: &str, root: &Path, env: &[(&str, &str)]) -> Items {
    run_full(rel, root, env).0
}

/// Runs `scripts/<rel>` and returns its skipped items.
fn skips(rel: &str, root: &Path, env: &[(&str, &str)]) -> Skips {
    run_full(rel, root, env).1
}

/// Asserts that `item` was skipped with a reason containing `contains`.
fn skipped(s: &Skips, item: &str, contains: &str) {
    let why = s
        .get(item)
        .unwrap_or_else(|| panic!("{item} should be skipped: {s:?}"));
    assert!(why.contains(contains), "{item}: {why:?} lacks {contains:?}");
}

fn ok(items: &Items, item: &str) {
    assert_eq!(
        items.get(item),
        Some(&None),
        "{item} should be ok: {items:?}"
    );
}

fn err(items: &Items, item: &str, contains: &str) {
    let msg = items
        .get(item)
        .cloned()
        .flatten()
        .unwrap_or_else(|| panic!("{item} should fail: {items:?}"));
    assert!(msg.contains(contains), "{item}: {msg:?} lacks {contains:?}");
}

/// A node with an ext4 `/`, an xfs `/var`, a bind mount and pseudo
/// filesystems; `df` answers from `usage` (mount -> (space %, inode %)).
fn node(t: &Tree, super_opts_var: &str, usage: &[(&str, u32, u32)], kmsg: &str) {
    t.file(
        "proc/1/mountinfo",
        &format!(
            "22 1 0:21 / /proc rw,relatime - proc proc rw\n\
             25 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n\
             26 25 8:17 / /var rw,relatime - xfs /dev/sdb1 {super_opts_var}\n\
             27 25 8:1 /srv/data /mnt/bind rw - ext4 /dev/sda1 rw\n\
             28 25 0:30 / /run rw - tmpfs tmpfs rw\n"
        ),
        0o644,
    );
    let mut cases = String::new();
    for (mp, space, inodes) in usage {
        let p = format!(
            "{}{}",
            t.path().display(),
            if *mp == "/" { "/" } else { mp }
        );
        cases.push_str(&format!(
            "  '{p}') if [ \"$2\" = -i ]; then u={inodes}; else u={space}; fi ;;\n"
        ));
    }
    t.file(
        "fakebin/df",
        &format!(
            "#!/bin/sh\ncase \"$3\" in\n{cases}  *) echo \"df: $3: No such file\" >&2; exit 1 ;;\nesac\n\
             echo 'Filesystem 1024-blocks Used Available Capacity Mounted on'\n\
             echo \"/dev/x 1000 1 1 $u% $3\"\n"
        ),
        0o755,
    );
    t.file("dev/kmsg", kmsg, 0o644);
    t.file("proc/uptime", "5000.00 9000.00\n", 0o644);
}

fn iface(t: &Tree, name: &str, flags: &str, state: &str, stats: &[(&str, u64)]) {
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

const ROUTE_HEADER: &str =
    "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n";

fn meminfo(t: &Tree, total: u64, avail: u64, swap_total: u64, swap_free: u64) {
    t.file(
        "proc/meminfo",
        &format!(
            "MemTotal:       {total} kB\nMemFree:        1000 kB\nMemAvailable:   {avail} kB\n\
             SwapTotal:      {swap_total} kB\nSwapFree:       {swap_free} kB\n"
        ),
        0o644,
    );
    t.file("proc/vmstat", "nr_free_pages 100\noom_kill 3\n", 0o644);
}

/// Fake systemd reached through nsenter: `failed` lists failed units,
/// `units` maps unit -> active state (absent = not installed).
fn systemd(t: &Tree, failed: &[&str], units: &[(&str, &str)]) {
    t.file("proc/1/comm", "systemd\n", 0o644);
    t.file(
        "fakebin/nsenter",
        "#!/bin/sh\nwhile [ \"$1\" != -- ]; do shift; done\nshift\nexec \"$@\"\n",
        0o755,
    );
    let failed_lines: String = failed
        .iter()
        .map(|u| format!("{u} loaded failed failed x\n"))
        .collect();
    let mut cases = String::new();
    for (u, s) in units {
        cases.push_str(&format!("  {u}) load=loaded; state={s} ;;\n"));
    }
    t.file(
        "fakebin/systemctl",
        &format!(
            "#!/bin/sh\nunit=\"\"; for a in \"$@\"; do unit=$a; done\n\
             load=not-found; state=inactive\ncase $unit in\n{cases}esac\n\
             case $1 in\n\
               is-system-running) echo running ;;\n\
               list-units) printf '%s' '{failed_lines}' ;;\n\
               show) echo $load ;;\n\
               is-active) echo $state; [ $state = active ] ;;\n\
             esac\n"
        ),
        0o755,
    );
}

#[test]
fn every_script_is_shellcheck_clean() {
    let mut files: Vec<PathBuf> = vec![scripts_dir().join("lib/common.sh")];
    for cat in ["disk", "net", "mem", "svc"] {
        for e in std::fs::read_dir(scripts_dir().join(cat))
            .unwrap()
            .flatten()
        {
            if e.path().extension().is_some_and(|x| x == "sh") {
                files.push(e.path());
            }
        }
    }
    assert!(files.len() >= 10, "{files:?}");
    let out = Command::new("shellcheck")
        .arg("-x")
        .args(&files)
        .output()
        .expect("shellcheck installed");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn disk_checks_pass_on_a_healthy_node() {
    let t = Tree::new("disk-ok");
    node(
        &t,
        "rw,attr2",
        &[("/", 40, 10), ("/var", 85, 20)],
        "6,1,1000000,-;EXT4-fs (sda1): mounted filesystem\n",
    );
    let usage = run("disk/usage.sh", t.path(), &[]);
    ok(&usage, "/");
    ok(&usage, "/var");
    ok(&usage, "inodes:/");
    assert_eq!(
        usage.len(),
        4,
        "bind mounts and tmpfs are not checked: {usage:?}"
    );
    let ro = run("disk/readonly.sh", t.path(), &[]);
    assert_eq!(ro.len(), 2);
    ok(&ro, "ro:/var");
}

#[test]
fn disk_checks_find_full_disks_inodes_and_read_only_remounts() {
    let t = Tree::new("disk-bad");
    let kmsg = "3,10,4000000000,-;blk_update_request: I/O error, dev sdb, sector 1234 op 0x0:(READ)\n\
                3,11,4000100000,-;blk_update_request: I/O error, dev sdb, sector 1240 op 0x0:(READ)\n\
                2,12,4000200000,-;XFS (sdb1): metadata I/O error in \"xfs_trans_read_buf_map\"\n";
    node(&t, "ro,attr2", &[("/", 95, 97), ("/var", 97, 20)], kmsg);
    let usage = run("disk/usage.sh", t.path(), &[]);
    err(&usage, "/var", "disk full (97% used, limit 90%)");
    err(&usage, "/", "95% used");
    err(&usage, "inodes:/", "97% used");
    ok(&usage, "inodes:/var");
    let relaxed = run(
        "disk/usage.sh",
        t.path(),
        &[
            ("DISK_USAGE_MAX_PERCENT", "98"),
            ("DISK_INODES_MAX_PERCENT", "98"),
        ],
    );
    assert!(relaxed.values().all(Option::is_none), "{relaxed:?}");
    let ignored = run("disk/usage.sh", t.path(), &[("DISK_IGNORE_MOUNTS", "/v*")]);
    assert!(!ignored.contains_key("/var"));
    let ro = run("disk/readonly.sh", t.path(), &[]);
    err(&ro, "ro:/var", "read-only");
    ok(&ro, "ro:/");
}

#[test]
fn net_checks_pass_on_a_healthy_node() {
    let t = Tree::new("net-ok");
    iface(
        &t,
        "eth0",
        "0x1003",
        "up",
        &[
            ("rx_packets", 10000),
            ("tx_packets", 10000),
            ("rx_dropped", 10),
        ],
    );
    iface(&t, "eth9", "0x1002", "down", &[]);
    iface(&t, "lo", "0x9", "unknown", &[]);
    iface(&t, "veth12", "0x1003", "down", &[]);
    t.file(
        "proc/1/net/route",
        &format!("{ROUTE_HEADER}eth0\t00000000\t0100000A\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"),
        0o644,
    );
    let links = run("net/links.sh", t.path(), &[]);
    assert_eq!(links.keys().collect::<Vec<_>>(), vec!["eth0", "eth9"]);
    assert!(links.values().all(Option::is_none), "{links:?}");
    ok(&run("net/route.sh", t.path(), &[]), "default-route");
}

#[test]
fn net_checks_find_down_links_and_a_missing_default_route() {
    let t = Tree::new("net-bad");
    iface(
        &t,
        "eth0",
        "0x1003",
        "up",
        &[
            ("rx_errors", 400),
            ("tx_errors", 200),
            ("rx_packets", 100000),
        ],
    );
    iface(
        &t,
        "eth1",
        "0x1003",
        "down",
        &[("rx_packets", 1000), ("rx_dropped", 50)],
    );
    t.file(
        "proc/1/net/route",
        &format!("{ROUTE_HEADER}eth0\t0000000A\t00000000\t0001\t0\t0\t0\t000000FF\t0\t0\t0\n"),
        0o644,
    );
    t.file("proc/1/net/ipv6_route", "00000000000000000000000000000000 00 00000000000000000000000000000000 00 00000000000000000000000000000000 ffffffff 00000001 00000000 00200200       lo\n", 0o644);
    let links = run("net/links.sh", t.path(), &[]);
    err(&links, "eth1", "link down");
    ok(&links, "eth0");
    err(
        &run("net/route.sh", t.path(), &[]),
        "default-route",
        "no default route",
    );
    t.file("proc/1/net/ipv6_route", "00000000000000000000000000000000 00 00000000000000000000000000000000 00 fe800000000000000000000000000001 00000400 00000001 00000000 00000003     eth0\n", 0o644);
    ok(&run("net/route.sh", t.path(), &[]), "default-route");
}

#[test]
fn mem_checks_pass_on_a_healthy_node() {
    let t = Tree::new("mem-ok");
    meminfo(&t, 8_000_000, 4_000_000, 0, 0);
    t.file("dev/kmsg", "6,1,1000000,-;booted\n", 0o644);
    t.file("proc/uptime", "5000.00 9000.00\n", 0o644);
    ok(&run("mem/available.sh", t.path(), &[]), "available");
    ok(&run("mem/swap.sh", t.path(), &[]), "swap");
}

#[test]
fn mem_checks_find_low_memory_and_heavy_swap() {
    let t = Tree::new("mem-bad");
    meminfo(&t, 8_000_000, 400_000, 2_000_000, 200_000);
    t.file("proc/uptime", "5000.00 9000.00\n", 0o644);
    t.file(
        "dev/kmsg",
        "3,1,100000000,-;Out of memory: Killed process 111 (old) total-vm:1kB\n\
         3,2,4900000000,-;Out of memory: Killed process 4242 (java) total-vm:9000kB\n",
        0o644,
    );
    err(
        &run("mem/available.sh", t.path(), &[]),
        "available",
        "390 MiB of 7812 MiB available (5%, limit 10%)",
    );
    err(
        &run("mem/swap.sh", t.path(), &[]),
        "swap",
        "(90%, limit 50%)",
    );
}

#[test]
fn svc_checks_pass_when_host_services_are_healthy() {
    let t = Tree::new("svc-ok");
    systemd(&t, &[], &[("kubelet", "active"), ("containerd", "active")]);
    let items = run("svc/systemd.sh", t.path(), &[]);
    assert_eq!(items.len(), 3, "{items:?}");
    assert!(items.values().all(Option::is_none), "{items:?}");
}

#[test]
fn svc_checks_find_failed_units_and_inactive_kubelet_and_runtime() {
    let t = Tree::new("svc-bad");
    systemd(
        &t,
        &["foo.service", "bar.mount"],
        &[("kubelet", "inactive"), ("crio", "failed")],
    );
    let items = run("svc/systemd.sh", t.path(), &[]);
    err(&items, "failed-units", "foo.service bar.mount");
    err(&items, "kubelet", "unit kubelet is inactive");
    err(&items, "container-runtime", "unit crio is failed");
    let quiet = run(
        "svc/systemd.sh",
        t.path(),
        &[
            ("SVC_IGNORE_UNITS", "foo.* bar.*"),
            ("SVC_KUBELET_UNIT", ""),
            ("SVC_RUNTIME_UNITS", ""),
        ],
    );
    assert_eq!(quiet.len(), 1);
    ok(&quiet, "failed-units");
}

#[test]
fn svc_skips_its_items_without_a_reachable_systemd() {
    let t = Tree::new("svc-none");
    t.file("proc/1/comm", "bash\n", 0o644);
    let (items, s) = run_full("svc/systemd.sh", t.path(), &[]);
    assert!(items.is_empty(), "{items:?}");
    for i in ["failed-units", "kubelet", "container-runtime"] {
        skipped(&s, i, "is bash");
    }
    let empty = Tree::new("svc-empty");
    let (items, s) = run_full("svc/systemd.sh", empty.path(), &[]);
    assert!(items.is_empty());
    skipped(&s, "kubelet", "host systemd not reachable (PID 1 of ");
}

// ---- Checks judged since the previous run, and the checks added with them
// (docs/checks.md). Each test names the fault it injects.

/// A fresh state directory for one script (STATE_DIR), as a string.
fn state(t: &Tree, name: &str) -> String {
    let p = t.join(&format!("state/{name}"));
    std::fs::create_dir_all(&p).unwrap();
    p.to_str().unwrap().to_string()
}

/// Appends records in /dev/kmsg format to the tree's `kmsg` file, numbered
/// on from the records already there.
fn klog_append(t: &Tree, msgs: &[&str]) {
    let mut text = t.read("kmsg");
    let first = text.lines().count() + 1;
    for (seq, m) in (first..).zip(msgs) {
        text.push_str(&format!("3,{seq},{}000000,-;{m}\n", 100 + seq));
    }
    t.file("kmsg", &text, 0o644);
}

/// Makes PID 1 of the tree share this process's network namespace, as the
/// host's PID 1 does for a pod with hostNetwork and enableSys.
fn host_netns(t: &Tree) {
    let ns = std::fs::read_link("/proc/self/ns/net").unwrap();
    t.symlink("proc/1/ns/net", ns.to_str().unwrap());
}

#[test]
fn kernel_log_checks_report_a_problem_once_in_the_run_after_it_was_logged() {
    // (script, item, item skipped on the first run, injected line, err text)
    let cases = [
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
            "1 OOM kill(s) since the previous run, last: Out of memory: Killed process 4242 (java)",
        ),
    ];
    for (script, item, first, line, text) in cases {
        let t = Tree::new("klog");
        // The same problem logged before the first run: since boot, never reported.
        klog_append(&t, &["Linux version 6.1", line]);
        let st = state(&t, "s");
        let log = t.join("kmsg");
        let env = [
            ("STATE_DIR", st.as_str()),
            ("KERNEL_LOG_FILE", log.to_str().unwrap()),
        ];
        let (items, s) = run_full(script, t.path(), &env);
        assert!(items.is_empty(), "{script}: first run {items:?}");
        skipped(&s, first, "baseline recorded; counting from the next run");
        let (items, s) = run_full(script, t.path(), &env);
        assert!(s.is_empty(), "{script}: {s:?}");
        assert!(
            items.values().all(Option::is_none),
            "{script}: nothing new: {items:?}"
        );
        klog_append(&t, &["eth0: link up", line]);
        let items = run(script, t.path(), &env);
        err(&items, item, text);
        let others = items.iter().filter(|(_, e)| e.is_some()).count();
        assert_eq!(others, 1, "{script}: only {item} fails: {items:?}");
        let items = run(script, t.path(), &env);
        assert!(
            items.values().all(Option::is_none),
            "{script}: {item} is not reported twice: {items:?}"
        );
        // After a reboot the whole log of the new boot is new, even with
        // sequence numbers below the position reached.
        t.file("proc/sys/kernel/random/boot_id", "b2\n", 0o644);
        t.file("kmsg", "", 0o644);
        klog_append(&t, &[line]);
        err(&run(script, t.path(), &env), item, text);
    }
}

#[test]
fn kernel_log_checks_take_thresholds_and_skip_without_state_or_log() {
    let t = Tree::new("klog-env");
    klog_append(&t, &["booted"]);
    let st = state(&t, "s");
    let log = t.join("kmsg");
    let log = log.to_str().unwrap();
    let env = [("STATE_DIR", st.as_str()), ("KERNEL_LOG_FILE", log)];
    run_full("disk/ioerrors.sh", t.path(), &env);
    klog_append(
        &t,
        &[
            "Buffer I/O error on dev sdc1, logical block 0, async page read",
            "blk_update_request: critical medium error, dev sdc, sector 10",
            "XFS (dm-0): metadata I/O error in \"xfs_trans_read_buf_map\" at daddr 0x1 len 8 error 5",
        ],
    );
    let items = run(
        "disk/ioerrors.sh",
        t.path(),
        &[
            ("STATE_DIR", st.as_str()),
            ("KERNEL_LOG_FILE", log),
            ("DISK_IO_ERRORS_MAX", "1"),
        ],
    );
    ok(&items, "io-errors");
    err(&items, "fs:dm-0", "metadata I/O error");
    // No STATE_DIR (a runner without it): skipped, never a since-boot red.
    let s = skips("disk/ioerrors.sh", t.path(), &[("KERNEL_LOG_FILE", log)]);
    skipped(&s, "io-errors", "no STATE_DIR");
    let s = skips("mem/oom.sh", t.path(), &[("KERNEL_LOG_FILE", log)]);
    skipped(&s, "oom-kills", "no STATE_DIR");
    // An unreadable log.
    let s = skips(
        "svc/kernlog.sh",
        t.path(),
        &[
            ("STATE_DIR", st.as_str()),
            ("KERNEL_LOG_FILE", "/nonexistent"),
        ],
    );
    skipped(&s, "hung-tasks", "kernel log not readable");
    skipped(&s, "oops", "KERNEL_LOG_FILE overrides");
}

#[test]
fn oom_kills_count_the_vmstat_counter_since_the_previous_run() {
    let t = Tree::new("oom");
    meminfo(&t, 8_000_000, 4_000_000, 0, 0); // oom_kill 3 since boot
    let st = state(&t, "oom");
    let env = [
        ("STATE_DIR", st.as_str()),
        ("KERNEL_LOG_FILE", "/nonexistent"),
    ];
    skipped(
        &skips("mem/oom.sh", t.path(), &env),
        "oom-kills",
        "baseline recorded",
    );
    ok(&run("mem/oom.sh", t.path(), &env), "oom-kills");
    t.file("proc/vmstat", "nr_free_pages 100\noom_kill 5\n", 0o644);
    err(
        &run("mem/oom.sh", t.path(), &env),
        "oom-kills",
        "2 OOM kill(s) since the previous run",
    );
    ok(&run("mem/oom.sh", t.path(), &env), "oom-kills");
    t.file("proc/vmstat", "oom_kill 7\n", 0o644);
    let relaxed = [
        ("STATE_DIR", st.as_str()),
        ("KERNEL_LOG_FILE", "/nonexistent"),
        ("MEM_OOM_KILLS_MAX", "2"),
    ];
    ok(&run("mem/oom.sh", t.path(), &relaxed), "oom-kills");
}

#[test]
fn net_counters_count_errors_and_drops_since_the_previous_run() {
    let t = Tree::new("counters");
    // Many errors since boot: not reported.
    iface(
        &t,
        "eth0",
        "0x1003",
        "up",
        &[
            ("rx_errors", 400),
            ("rx_packets", 100000),
            ("rx_dropped", 9000),
        ],
    );
    iface(&t, "veth1", "0x1003", "up", &[("rx_errors", 5)]);
    let st = state(&t, "c");
    let env = [("STATE_DIR", st.as_str())];
    let (items, s) = run_full("net/counters.sh", t.path(), &env);
    assert!(items.is_empty(), "{items:?}");
    skipped(&s, "errors:eth0", "baseline recorded");
    skipped(&s, "drops:eth0", "baseline recorded");
    assert!(!s.contains_key("errors:veth1"), "veth ignored: {s:?}");
    let items = run("net/counters.sh", t.path(), &env);
    ok(&items, "errors:eth0");
    ok(&items, "drops:eth0");
    iface(
        &t,
        "eth0",
        "0x1003",
        "up",
        &[
            ("rx_errors", 420),
            ("tx_errors", 5),
            ("rx_packets", 110000),
            ("rx_dropped", 9500),
        ],
    );
    let items = run("net/counters.sh", t.path(), &env);
    err(
        &items,
        "errors:eth0",
        "25 rx/tx errors since the previous run (limit 10)",
    );
    err(
        &items,
        "drops:eth0",
        "500 packets dropped of 10500 since the previous run (4.8%, limit 1%)",
    );
    let items = run("net/counters.sh", t.path(), &env);
    ok(&items, "errors:eth0");
    ok(&items, "drops:eth0");
    iface(
        &t,
        "eth0",
        "0x1003",
        "up",
        &[
            ("rx_errors", 440),
            ("rx_packets", 120000),
            ("rx_dropped", 9600),
        ],
    );
    let items = run(
        "net/counters.sh",
        t.path(),
        &[
            ("STATE_DIR", st.as_str()),
            ("NET_ERRORS_MAX", "20"),
            ("NET_DROPS_MIN", "1000"),
        ],
    );
    ok(&items, "errors:eth0");
    ok(&items, "drops:eth0");
    let s = skips("net/counters.sh", t.path(), &[]);
    skipped(&s, "errors:eth0", "no STATE_DIR");
}

#[test]
fn disk_busyness_and_await_are_judged_since_the_previous_run() {
    let t = Tree::new("busy");
    t.file("sys/block/sda/size", "1000\n", 0o644);
    let stats = |up: u32, ios: u64, wait: u64, ticks: u64| {
        t.file("proc/uptime", &format!("{up}.00 1.00\n"), 0o644);
        t.file(
            "proc/diskstats",
            &format!(
                "   8       0 sda {ios} 0 0 {wait} 0 0 0 0 0 {ticks} 0 0 0 0 0\n   8       1 sda1 5 0 0 5 0 0 0 0 0 99999999 0\n   7       0 loop0 1 0 0 1 0 0 0 0 0 1 0\n"
            ),
            0o644,
        );
    };
    let st = state(&t, "b");
    let env = [("STATE_DIR", st.as_str())];
    stats(1000, 10_000, 50_000, 100_000);
    let s = skips("disk/busy.sh", t.path(), &env);
    skipped(&s, "busy:sda", "baseline recorded");
    skipped(&s, "await:sda", "baseline recorded");
    assert_eq!(
        s.len(),
        2,
        "partitions and loop devices are not checked: {s:?}"
    );
    // 100 s later: busy 95 s of them, 1000 I/Os of 600 ms each.
    stats(1100, 11_000, 650_000, 195_000);
    let items = run("disk/busy.sh", t.path(), &env);
    err(
        &items,
        "busy:sda",
        "busy 95% of the 100s since the previous run (limit 90%)",
    );
    err(
        &items,
        "await:sda",
        "600 ms per I/O on average over 1000 I/Os",
    );
    stats(1200, 12_000, 660_000, 200_000);
    let items = run("disk/busy.sh", t.path(), &env);
    ok(&items, "busy:sda");
    ok(&items, "await:sda");
    stats(1300, 13_000, 1_260_000, 295_000);
    let items = run(
        "disk/busy.sh",
        t.path(),
        &[
            ("STATE_DIR", st.as_str()),
            ("DISK_BUSY_MAX_PERCENT", "96"),
            ("DISK_AWAIT_MAX_MS", "700"),
        ],
    );
    ok(&items, "busy:sda");
    ok(&items, "await:sda");
}

#[test]
fn ecc_errors_are_counted_since_the_previous_run() {
    let t = Tree::new("ecc");
    skipped(&skips("mem/ecc.sh", t.path(), &[]), "ecc", "no EDAC");
    let mc = |ce: u32, ue: u32| {
        t.file(
            "sys/devices/system/edac/mc/mc0/ce_count",
            &format!("{ce}\n"),
            0o644,
        );
        t.file(
            "sys/devices/system/edac/mc/mc0/ue_count",
            &format!("{ue}\n"),
            0o644,
        );
    };
    let st = state(&t, "e");
    let env = [("STATE_DIR", st.as_str())];
    mc(500, 1);
    skipped(
        &skips("mem/ecc.sh", t.path(), &env),
        "ecc:mc0",
        "baseline recorded",
    );
    ok(&run("mem/ecc.sh", t.path(), &env), "ecc:mc0");
    mc(500, 2);
    err(
        &run("mem/ecc.sh", t.path(), &env),
        "ecc:mc0",
        "1 uncorrected memory error(s)",
    );
    mc(530, 2);
    err(
        &run("mem/ecc.sh", t.path(), &env),
        "ecc:mc0",
        "30 corrected memory errors",
    );
    mc(560, 2);
    ok(
        &run(
            "mem/ecc.sh",
            t.path(),
            &[("STATE_DIR", st.as_str()), ("MEM_ECC_CE_MAX", "30")],
        ),
        "ecc:mc0",
    );
}

#[test]
fn kubelet_and_runtime_restarts_are_counted_since_the_previous_run() {
    let t = Tree::new("restarts");
    systemd(&t, &[], &[]);
    let dir = t.join("restarts");
    t.file(
        "fakebin/systemctl",
        &format!(
            "#!/bin/sh\nunit=\"\"; for a in \"$@\"; do unit=$a; done\n\
             case \"$1 $3\" in\n\
               is-system-running*) echo running ;;\n\
               'show LoadState') case $unit in kubelet|containerd) echo loaded ;; *) echo not-found ;; esac ;;\n\
               'show NRestarts') cat '{}'/$unit ;;\n\
             esac\n",
            dir.display()
        ),
        0o755,
    );
    let n = |k: u32, c: u32| {
        t.file("restarts/kubelet", &format!("{k}\n"), 0o644);
        t.file("restarts/containerd", &format!("{c}\n"), 0o644);
    };
    let st = state(&t, "r");
    let env = [("STATE_DIR", st.as_str())];
    n(40, 3);
    let s = skips("svc/restarts.sh", t.path(), &env);
    skipped(&s, "restarts:kubelet", "baseline recorded");
    skipped(&s, "restarts:container-runtime", "baseline recorded");
    n(45, 4);
    let items = run("svc/restarts.sh", t.path(), &env);
    err(
        &items,
        "restarts:kubelet",
        "restarted 5 times since the previous run (limit 2)",
    );
    ok(&items, "restarts:container-runtime");
    n(45, 7);
    let items = run("svc/restarts.sh", t.path(), &env);
    ok(&items, "restarts:kubelet");
    err(&items, "restarts:container-runtime", "restarted 3 times");
    let none = Tree::new("restarts-none");
    let s = skips("svc/restarts.sh", none.path(), &env);
    skipped(&s, "restarts:kubelet", "host systemd not reachable");
}

#[test]
fn pressure_checks_take_thresholds_and_skip_without_psi() {
    let t = Tree::new("psi");
    for (script, item) in [
        ("svc/psi.sh", "psi:cpu"),
        ("mem/psi.sh", "psi:memory"),
        ("disk/psi.sh", "psi:io"),
    ] {
        skipped(&skips(script, t.path(), &[]), item, "kernel without PSI");
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

#[test]
fn pid_and_file_limits() {
    let t = Tree::new("limits");
    t.file("proc/loadavg", "0.50 0.40 0.30 2/30000 12345\n", 0o644);
    t.file("proc/sys/kernel/pid_max", "32768\n", 0o644);
    t.file("proc/sys/fs/file-nr", "900\t0\t1000\n", 0o644);
    let items = run("svc/limits.sh", t.path(), &[]);
    err(
        &items,
        "pids",
        "30000 tasks of pid_max 32768 (92%, limit 80%)",
    );
    err(
        &items,
        "file-descriptors",
        "900 open files of file-max 1000 (90%",
    );
    let items = run(
        "svc/limits.sh",
        t.path(),
        &[
            ("SVC_PIDS_MAX_PERCENT", "95"),
            ("SVC_FILES_MAX_PERCENT", "95"),
        ],
    );
    ok(&items, "pids");
    ok(&items, "file-descriptors");
    t.file("proc/sys/kernel/threads-max", "31000\n", 0o644);
    err(
        &run("svc/limits.sh", t.path(), &[("SVC_PIDS_MAX_PERCENT", "95")]),
        "pids",
        "of threads-max 31000",
    );
    t.file(
        "proc/sys/fs/file-nr",
        "900\t0\t9223372036854775807\n",
        0o644,
    );
    ok(&run("svc/limits.sh", t.path(), &[]), "file-descriptors");
}

#[test]
fn conntrack_usage_in_the_node_network_namespace() {
    let t = Tree::new("conntrack");
    t.file("proc/sys/net/netfilter/nf_conntrack_count", "900\n", 0o644);
    t.file("proc/sys/net/netfilter/nf_conntrack_max", "1000\n", 0o644);
    skipped(
        &skips("net/conntrack.sh", t.path(), &[]),
        "conntrack",
        "needs hostNetwork",
    );
    host_netns(&t);
    err(
        &run("net/conntrack.sh", t.path(), &[]),
        "conntrack",
        "900 of 1000 conntrack entries used (90%, limit 80%)",
    );
    ok(
        &run(
            "net/conntrack.sh",
            t.path(),
            &[("NET_CONNTRACK_MAX_PERCENT", "95")],
        ),
        "conntrack",
    );
    std::fs::remove_file(t.join("proc/sys/net/netfilter/nf_conntrack_count")).unwrap();
    skipped(
        &skips("net/conntrack.sh", t.path(), &[]),
        "conntrack",
        "nf_conntrack not loaded",
    );
}

/// A physical interface: a device, an MTU, a speed and a duplex.
fn phys(t: &Tree, name: &str, mtu: u32, speed: &str, duplex: &str) {
    iface(t, name, "0x1003", "up", &[]);
    let base = format!("sys/class/net/{name}");
    t.file(&format!("{base}/device/vendor"), "0x8086\n", 0o644);
    t.file(&format!("{base}/mtu"), &format!("{mtu}\n"), 0o644);
    t.file(&format!("{base}/speed"), &format!("{speed}\n"), 0o644);
    t.file(&format!("{base}/duplex"), &format!("{duplex}\n"), 0o644);
}

#[test]
fn mtu_speed_and_duplex_of_physical_interfaces() {
    let t = Tree::new("mtu");
    skipped(
        &skips("net/mtu.sh", t.path(), &[]),
        "mtu",
        "no physical interface",
    );
    phys(&t, "eth0", 1500, "1000", "full");
    phys(&t, "eth1", 1500, "100", "full");
    phys(&t, "eth2", 9000, "10000", "half");
    phys(&t, "eth3", 1500, "-1", "unknown");
    iface(&t, "br0", "0x1003", "up", &[]);
    t.file("sys/class/net/br0/mtu", "1400\n", 0o644);
    iface(&t, "veth9", "0x1003", "up", &[]);
    let items = run("net/mtu.sh", t.path(), &[]);
    ok(&items, "mtu:eth0");
    err(
        &items,
        "mtu:eth2",
        "MTU 9000, expected 1500 (the MTU of most interfaces)",
    );
    assert!(!items.contains_key("mtu:br0"), "virtual: {items:?}");
    let items = run("net/mtu.sh", t.path(), &[("NET_EXPECTED_MTU", "9000")]);
    ok(&items, "mtu:eth2");
    err(&items, "mtu:eth0", "expected 9000 (NET_EXPECTED_MTU)");
    err(
        &run("net/mtu.sh", t.path(), &[("NET_MTU_IFACES", "eth0 br*")]),
        "mtu:br0",
        "MTU 1400",
    );
    let (items, s) = run_full("net/speed.sh", t.path(), &[]);
    ok(&items, "speed:eth0");
    ok(&items, "duplex:eth0");
    err(&items, "speed:eth1", "100 Mb/s (lowest healthy 1000 Mb/s)");
    err(&items, "duplex:eth2", "half duplex");
    skipped(&s, "speed:eth3", "no link speed (-1)");
    skipped(&s, "duplex:eth3", "no duplex (unknown)");
    skipped(&s, "speed:br0", "virtual interface");
    assert!(!s.contains_key("speed:veth9"));
    ok(
        &run("net/speed.sh", t.path(), &[("NET_SPEED_MIN_MBPS", "100")]),
        "speed:eth1",
    );
}

#[test]
fn bonding_slaves_aggregation_speeds_and_modes() {
    let t = Tree::new("bond");
    skipped(
        &skips("net/bonding.sh", t.path(), &[]),
        "bonding",
        "no bonding interface",
    );
    let lacp = |agg2: u32, speed2: u32| {
        format!(
            "Ethernet Channel Bonding Driver: v5.10\n\nBonding Mode: IEEE 802.3ad Dynamic link aggregation\n\
             MII Status: up\n\n802.3ad info\nActive Aggregator Info:\n\tAggregator ID: 1\n\tNumber of ports: 2\n\n\
             Slave Interface: eth0\nMII Status: up\nSpeed: 10000 Mbps\nDuplex: full\nAggregator ID: 1\n\n\
             Slave Interface: eth1\nMII Status: up\nSpeed: {speed2} Mbps\nDuplex: full\nAggregator ID: {agg2}\n"
        )
    };
    t.file("proc/1/net/bonding/bond0", &lacp(1, 10000), 0o644);
    t.file("proc/1/net/bonding/bond2", &lacp(2, 1000), 0o644);
    t.file(
        "proc/1/net/bonding/bond1",
        "Bonding Mode: fault-tolerance (active-backup)\nMII Status: up\n\n\
         Slave Interface: eth4\nMII Status: up\nSpeed: 1000 Mbps\nDuplex: full\n\n\
         Slave Interface: eth5\nMII Status: down\nSpeed: Unknown\nDuplex: Unknown\n",
        0o644,
    );
    let items = run("net/bonding.sh", t.path(), &[]);
    ok(&items, "bond:bond0");
    ok(&items, "bond-speed:bond0");
    ok(&items, "bond-mode:bond0");
    err(
        &items,
        "bond:bond2",
        "slave eth1 not in the active LACP aggregator (2, active 1)",
    );
    err(
        &items,
        "bond-speed:bond2",
        "eth0 10000 full, eth1 1000 full",
    );
    err(&items, "bond:bond1", "slave eth5 MII status down");
    ok(&items, "bond-speed:bond1");
    err(
        &items,
        "bond-mode:bond1",
        "mode fault-tolerance (active-backup), the other bonds use IEEE 802.3ad",
    );
    let items = run(
        "net/bonding.sh",
        t.path(),
        &[
            ("NET_BOND_MODE", "active-backup"),
            ("NET_BOND_MIN_SLAVES", "3"),
        ],
    );
    ok(&items, "bond-mode:bond1");
    err(
        &items,
        "bond-mode:bond0",
        "expected active-backup (NET_BOND_MODE)",
    );
    err(&items, "bond:bond0", "2 slave(s), fewer than 3");
}

#[test]
fn ip_conflicts_from_ipv6_dad_and_arping() {
    let t = Tree::new("ipconflict");
    t.file(
        "proc/1/net/if_inet6",
        "fe800000000000000000000000000001 02 40 20 80     eth0\n\
         20010db8000000000000000000000001 03 40 00 88     eth1\n\
         00000000000000000000000000000001 01 80 10 80       lo\n",
        0o644,
    );
    let (items, s) = run_full("net/ipconflict.sh", t.path(), &[]);
    ok(&items, "dad:eth0");
    err(
        &items,
        "dad:eth1",
        "duplicate address detection failed for 20010db8000000000000000000000001",
    );
    assert!(!items.contains_key("dad:lo"));
    skipped(&s, "ipv4-conflict", "arping is not in the image");
    t.script(
        "fakebin/arping",
        "for a in \"$@\"; do last=$a; done\n[ \"$last\" != 10.0.0.6 ]",
    );
    t.script(
        "fakebin/ip",
        "echo '2: eth0    inet 10.0.0.5/24 brd 10.0.0.255 scope global eth0\\       valid_lft forever'\n\
         echo '3: eth1    inet 10.0.0.6/24 brd 10.0.0.255 scope global eth1\\       valid_lft forever'",
    );
    skipped(
        &skips("net/ipconflict.sh", t.path(), &[]),
        "ipv4-conflict",
        "needs hostNetwork",
    );
    host_netns(&t);
    let items = run("net/ipconflict.sh", t.path(), &[]);
    ok(&items, "ipv4:10.0.0.5");
    err(
        &items,
        "ipv4:10.0.0.6",
        "another host answers ARP for 10.0.0.6 on eth1",
    );
}

#[test]
fn raid_arrays_and_controllers() {
    let t = Tree::new("raid");
    skipped(
        &skips("disk/raid.sh", t.path(), &[]),
        "raid",
        "no software (md) array",
    );
    t.file(
        "proc/mdstat",
        "Personalities : [raid1]\n\
         md0 : active raid1 sdb1[1] sda1[0]\n      1048512 blocks super 1.2 [2/2] [UU]\n\n\
         md1 : active raid1 sdd1[1](F) sdc1[0]\n      2096128 blocks super 1.2 [2/1] [U_]\n\
         \x20     [=>...................]  recovery =  8.5% (178560/2096128) finish=1.2min\n\n\
         unused devices: <none>\n",
        0o644,
    );
    t.file(
        "sys/bus/pci/devices/0000:03:00.0/class",
        "0x010400\n",
        0o644,
    );
    t.file("sys/bus/pci/devices/0000:03:00.0/vendor", "0x1000\n", 0o644);
    t.file(
        "sys/bus/pci/devices/0000:00:1f.0/class",
        "0x060100\n",
        0o644,
    );
    let (items, s) = run_full("disk/raid.sh", t.path(), &[]);
    ok(&items, "raid:md0");
    err(
        &items,
        "raid:md1",
        "degraded: 1 of 2 members up [U_], recovery =  8.5%",
    );
    skipped(&s, "raid:0000:03:00.0", "needs the vendor's tool");
    assert_eq!(s.len(), 1, "{s:?}");
}

#[test]
fn smart_health_ssd_wear_and_sata_link() {
    let t = Tree::new("smart");
    t.file("sys/block/sda/size", "1\n", 0o644);
    t.file("sys/block/nvme0n1/size", "1\n", 0o644);
    t.file("sys/block/sdb/size", "1\n", 0o644);
    let dev = t.join("dev");
    let env = [("DISK_DEV_DIR", dev.to_str().unwrap())];
    skipped(
        &skips("disk/smart.sh", t.path(), &env),
        "smart:sda",
        "smartctl is not in the image",
    );
    t.script(
        "fakebin/smartctl",
        "for a in \"$@\"; do d=$a; done\ncase $d in\n\
         */sda) printf '%s\\n' 'Device Model:     X SSD' 'Rotation Rate:    Solid State Device' \
         'SATA Version is:  SATA 3.3, 6.0 Gb/s (current: 1.5 Gb/s)' \
         'SMART overall-health self-assessment test result: PASSED' \
         '233 Media_Wearout_Indicator 0x0032   015   015   000    Old_age   Always       -       0' ;;\n\
         */nvme0n1) printf '%s\\n' 'Model Number:  Y NVMe' 'SMART overall-health self-assessment test result: FAILED!' 'Percentage Used:  3%' ;;\n\
         */sdb) printf '%s\\n' 'Smartctl open device: /dev/sdb failed: Permission denied'; exit 2 ;;\n\
         esac",
    );
    for d in ["sda", "nvme0n1", "sdb"] {
        t.file(&format!("dev/{d}"), "", 0o644);
    }
    let (items, s) = run_full("disk/smart.sh", t.path(), &env);
    ok(&items, "smart:sda");
    err(
        &items,
        "wear:sda",
        "85% of the rated endurance used (limit 80%)",
    );
    err(
        &items,
        "sata:sda",
        "SATA link at 1.5 Gb/s, the drive supports 6.0 Gb/s",
    );
    err(&items, "smart:nvme0n1", "SMART health FAILED!");
    ok(&items, "wear:nvme0n1");
    skipped(&s, "smart:sdb", "Permission denied");
    let relaxed = [
        ("DISK_DEV_DIR", dev.to_str().unwrap()),
        ("DISK_SSD_WEAR_MAX_PERCENT", "90"),
    ];
    ok(&run("disk/smart.sh", t.path(), &relaxed), "wear:sda");
}

#[test]
fn device_state_and_nvme_link() {
    let t = Tree::new("devices");
    t.file("sys/block/sda/device/state", "running\n", 0o644);
    t.file("sys/block/sdb/device/state", "offline\n", 0o644);
    let nvme = "sys/class/nvme/nvme0/device";
    t.file(
        &format!("{nvme}/current_link_speed"),
        "8.0 GT/s PCIe\n",
        0o644,
    );
    t.file(&format!("{nvme}/max_link_speed"), "16.0 GT/s PCIe\n", 0o644);
    t.file(&format!("{nvme}/current_link_width"), "4\n", 0o644);
    t.file(&format!("{nvme}/max_link_width"), "4\n", 0o644);
    let items = run("disk/devices.sh", t.path(), &[]);
    ok(&items, "state:sda");
    err(&items, "state:sdb", "device state is offline");
    err(
        &items,
        "pcie:nvme0",
        "PCIe link degraded: 8.0 GT/s x4, the drive supports 16.0 GT/s x4",
    );
    t.file(
        &format!("{nvme}/current_link_speed"),
        "16.0 GT/s PCIe\n",
        0o644,
    );
    ok(&run("disk/devices.sh", t.path(), &[]), "pcie:nvme0");
}

#[test]
fn memory_modules_speed_vendor_and_size() {
    let t = Tree::new("dimm");
    meminfo(&t, 16_000_000, 8_000_000, 0, 0);
    let s = skips("mem/dimm.sh", t.path(), &[]);
    skipped(&s, "dimm:speed", "dmidecode is not in the image");
    skipped(&s, "size", "MEM_EXPECTED_MIB is not set");
    err(
        &run("mem/dimm.sh", t.path(), &[("MEM_EXPECTED_MIB", "32768")]),
        "size",
        "the kernel sees 15625 MiB of the 32768 MiB of MEM_EXPECTED_MIB",
    );
    t.script(
        "fakebin/dmidecode",
        "printf 'Handle 0x1100, DMI type 17, 40 bytes\\nMemory Device\\n\\tSize: 16 GB\\n\\tSpeed: 3200 MT/s\\n\\tManufacturer: Samsung\\n\\tConfigured Memory Speed: 3200 MT/s\\n\\n'\n\
         printf 'Handle 0x1101, DMI type 17, 40 bytes\\nMemory Device\\n\\tSize: 16384 MB\\n\\tSpeed: 3200 MT/s\\n\\tManufacturer: Hynix\\n\\tConfigured Memory Speed: 2933 MT/s\\n\\n'\n\
         printf 'Handle 0x1102, DMI type 17, 40 bytes\\nMemory Device\\n\\tSize: No Module Installed\\n\\tManufacturer: NO DIMM\\n'",
    );
    let items = run("mem/dimm.sh", t.path(), &[]);
    err(
        &items,
        "dimm:speed",
        "different speeds: 3200 MT/s, 2933 MT/s",
    );
    err(
        &items,
        "dimm:vendor",
        "modules of 2 vendors (limit 1): Samsung, Hynix",
    );
    err(
        &items,
        "size",
        "15625 MiB of the 32768 MiB of the installed modules",
    );
    let items = run(
        "mem/dimm.sh",
        t.path(),
        &[("MEM_DIMM_VENDORS_MAX", "2"), ("MEM_EXPECTED_MIB", "16384")],
    );
    ok(&items, "dimm:vendor");
    ok(&items, "size");
    t.script(
        "fakebin/dmidecode",
        "echo '/sys/firmware/dmi/tables/smbios_entry_point: Permission denied' >&2; exit 1",
    );
    skipped(
        &skips("mem/dimm.sh", t.path(), &[]),
        "dimm:vendor",
        "Permission denied",
    );
}

#[test]
fn temperatures_from_thermal_zones_and_hwmon() {
    let t = Tree::new("thermal");
    skipped(
        &skips("svc/thermal.sh", t.path(), &[]),
        "temp",
        "no thermal zone",
    );
    t.file("sys/class/hwmon/hwmon0/name", "k10temp\n", 0o644);
    t.file("sys/class/hwmon/hwmon0/temp1_input", "50000\n", 0o644);
    ok(&run("svc/thermal.sh", t.path(), &[]), "temp:k10temp");
    t.file(
        "sys/class/thermal/thermal_zone0/type",
        "x86_pkg_temp\n",
        0o644,
    );
    t.file("sys/class/thermal/thermal_zone0/temp", "95000\n", 0o644);
    t.file("sys/class/thermal/thermal_zone1/type", "acpitz\n", 0o644);
    t.file("sys/class/thermal/thermal_zone1/temp", "40000\n", 0o644);
    let items = run("svc/thermal.sh", t.path(), &[]);
    err(
        &items,
        "temp:x86_pkg_temp",
        "95°C (thermal_zone0; limit 90°C)",
    );
    ok(&items, "temp:acpitz");
    ok(
        &run(
            "svc/thermal.sh",
            t.path(),
            &[("SVC_TEMP_MAX_CELSIUS", "100")],
        ),
        "temp:x86_pkg_temp",
    );
}

#[test]
fn cpu_usage_since_the_previous_run_load_and_model() {
    let t = Tree::new("cpu");
    let at = |up: u32, busy: u64, idle: u64| {
        t.file("proc/uptime", &format!("{up}.00 1.00\n"), 0o644);
        t.file(
            "proc/stat",
            &format!("cpu  {busy} 0 0 {idle} 0 0 0 0 0 0\ncpu0 1 0 0 1 0 0 0 0 0 0\ncpu1 1 0 0 1 0 0 0 0 0 0\n"),
            0o644,
        );
    };
    t.file("proc/loadavg", "9.00 9.00 9.00 3/300 1234\n", 0o644);
    t.file(
        "proc/cpuinfo",
        "processor\t: 0\nmodel name\t: Xeon A\n\nprocessor\t: 1\nmodel name\t: Xeon A\n",
        0o644,
    );
    let st = state(&t, "cpu");
    let env = [("STATE_DIR", st.as_str())];
    at(1000, 1000, 1000);
    let (items, s) = run_full("svc/cpu.sh", t.path(), &env);
    skipped(&s, "cpu:usage", "baseline recorded");
    err(
        &items,
        "cpu:load",
        "load average 9.00 over 5 minutes on 2 CPUs (4.5 per CPU, limit 4)",
    );
    assert_eq!(items.get("cpu:model"), Some(&None));
    at(1030, 2000, 1000);
    skipped(
        &skips("svc/cpu.sh", t.path(), &env),
        "cpu:usage",
        "fewer than 60s",
    );
    at(1100, 20_600, 1_100);
    err(
        &run("svc/cpu.sh", t.path(), &env),
        "cpu:usage",
        "CPUs 99% busy on average over the 100s since the previous run (limit 95%)",
    );
    at(1200, 21_600, 10_100);
    let items = run(
        "svc/cpu.sh",
        t.path(),
        &[
            ("STATE_DIR", st.as_str()),
            ("SVC_LOAD_MAX_PER_CPU", "5"),
            ("SVC_CPU_MODEL", "Xeon B*"),
        ],
    );
    ok(&items, "cpu:usage");
    ok(&items, "cpu:load");
    err(
        &items,
        "cpu:model",
        "Xeon A, expected Xeon B* (SVC_CPU_MODEL)",
    );
    t.file(
        "proc/cpuinfo",
        "processor\t: 0\nmodel name\t: Xeon A\n\nprocessor\t: 1\nmodel name\t: Xeon C\n",
        0o644,
    );
    err(
        &run("svc/cpu.sh", t.path(), &env),
        "cpu:model",
        "different models",
    );
}

#[test]
fn clock_sync_from_timedatectl_chrony_or_timesyncd() {
    let t = Tree::new("clock");
    systemd(&t, &[], &[]);
    t.script("fakebin/timedatectl", "cat \"$(dirname \"$0\")/../synced\"");
    t.file("synced", "yes\n", 0o644);
    ok(&run("svc/clock.sh", t.path(), &[]), "clock-sync");
    t.file("synced", "no\n", 0o644);
    err(
        &run("svc/clock.sh", t.path(), &[]),
        "clock-sync",
        "NTPSynchronized=no",
    );
    t.script("fakebin/timedatectl", "exit 1");
    skipped(
        &skips("svc/clock.sh", t.path(), &[]),
        "clock-sync",
        "no timedatectl, chronyc or timesyncd",
    );
    t.file("run/systemd/timesync/synchronized", "", 0o644);
    ok(&run("svc/clock.sh", t.path(), &[]), "clock-sync");
    t.script(
        "fakebin/chronyc",
        "printf '%s\\n' 'Reference ID    : 0A000001 (ntp)' 'System time     : 0.800000000 seconds fast of NTP time' 'Leap status     : Normal'",
    );
    err(
        &run("svc/clock.sh", t.path(), &[]),
        "clock-sync",
        "chrony: the clock is 800 ms off NTP time (limit 500 ms)",
    );
    ok(
        &run(
            "svc/clock.sh",
            t.path(),
            &[("SVC_CLOCK_MAX_OFFSET_MS", "1000")],
        ),
        "clock-sync",
    );
    t.script(
        "fakebin/chronyc",
        "echo 'Leap status     : Not synchronised'",
    );
    err(
        &run("svc/clock.sh", t.path(), &[]),
        "clock-sync",
        "leap status Not synchronised",
    );
}

#[test]
fn kubelet_healthz_runtime_socket_and_apiserver() {
    let t = Tree::new("kubelet");
    let healthy = support::http_once("200 OK", "ok", 1);
    let env = [("SVC_KUBELET_HEALTHZ", healthy.as_str())];
    // Not a node: every item skipped.
    let (items, s) = run_full("svc/kubelet.sh", t.path(), &env);
    assert!(items.is_empty(), "{items:?}");
    skipped(&s, "kubelet-healthz", "not a Kubernetes node");
    skipped(&s, "runtime-socket", "not a Kubernetes node");
    skipped(&s, "apiserver", "no KUBERNETES_SERVICE_HOST");
    // What a kubelet leaves behind on a machine that is no node.
    std::fs::create_dir_all(t.join("var/lib/kubelet/device-plugins")).unwrap();
    skipped(
        &skips("svc/kubelet.sh", t.path(), &env),
        "runtime-socket",
        "not a Kubernetes node",
    );
    std::fs::create_dir_all(t.join("var/lib/kubelet/pki")).unwrap();
    skipped(
        &skips("svc/kubelet.sh", t.path(), &env),
        "kubelet-healthz",
        "needs hostNetwork",
    );
    host_netns(&t);
    let sock = t.join("run/containerd/containerd.sock");
    std::fs::create_dir_all(sock.parent().unwrap()).unwrap();
    let _l = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let items = run("svc/kubelet.sh", t.path(), &env);
    ok(&items, "kubelet-healthz");
    ok(&items, "runtime-socket");
    let sick = support::http_once("500 Internal Server Error", "[-]syncloop failed", 1);
    err(
        &run(
            "svc/kubelet.sh",
            t.path(),
            &[("SVC_KUBELET_HEALTHZ", sick.as_str())],
        ),
        "kubelet-healthz",
        "healthz answered HTTP/1.1 500 Internal Server Error: [-]syncloop failed",
    );
    let closed = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().to_string()
    };
    err(
        &run(
            "svc/kubelet.sh",
            t.path(),
            &[("SVC_KUBELET_HEALTHZ", closed.as_str())],
        ),
        "kubelet-healthz",
        "no answer from http://",
    );
    // The kubelet of this node names its runtime endpoint: that one counts.
    t.file(
        "proc/4321/cmdline",
        "/usr/bin/kubelet\0--container-runtime-endpoint\0unix:///node-1/containerd.sock\0--hostname-override=node-1\0",
        0o644,
    );
    t.file(
        "proc/4322/cmdline",
        "/usr/bin/kubelet\0--container-runtime-endpoint=unix:///run/containerd/containerd.sock\0--hostname-override\0node-2\0",
        0o644,
    );
    let items = run(
        "svc/kubelet.sh",
        t.path(),
        &[("SVC_KUBELET_HEALTHZ", ""), ("NODE_NAME", "node-1")],
    );
    err(
        &items,
        "runtime-socket",
        "runtime endpoint /node-1/containerd.sock is not a socket",
    );
    assert!(
        !items.contains_key("kubelet-healthz"),
        "empty SVC_KUBELET_HEALTHZ: {items:?}"
    );
    ok(
        &run(
            "svc/kubelet.sh",
            t.path(),
            &[("SVC_KUBELET_HEALTHZ", ""), ("NODE_NAME", "node-2")],
        ),
        "runtime-socket",
    );
    let api = support::http_once("200 OK", "ok", 1);
    let (host, port) = api.split_once(':').unwrap();
    ok(
        &run(
            "svc/kubelet.sh",
            t.path(),
            &[
                ("KUBERNETES_SERVICE_HOST", host),
                ("KUBERNETES_SERVICE_PORT", port),
            ],
        ),
        "apiserver",
    );
    let (host, port) = closed.split_once(':').unwrap();
    err(
        &run(
            "svc/kubelet.sh",
            t.path(),
            &[
                ("KUBERNETES_SERVICE_HOST", host),
                ("KUBERNETES_SERVICE_PORT", port),
            ],
        ),
        "apiserver",
        "no TCP connection to the API server",
    );
}

#[test]
fn dns_passes_the_runner_dns_lines_through() {
    let t = Tree::new("dns");
    t.file("etc/resolv.conf", "search x\nnameserver 127.0.0.1\n", 0o644);
    let skipped_without = skips("net/dns.sh", t.path(), &[]);
    skipped(&skipped_without, "dns", "no COMBO_RUNNER");
    let args = t.join("args");
    t.script(
        "fakebin/fake-runner",
        &format!(
            "echo \"$*\" >> '{}'\necho 'resolving' >&2\n\
             case \"$*\" in\n\
               *--server*) echo 'err dns:10.96.0.10/udp SERVFAIL'; echo 'ok dns:10.96.0.10/tcp' ;;\n\
               *) echo 'ok dns:127.0.0.1/udp'; echo 'ok dns:127.0.0.1/tcp' ;;\n\
             esac",
            args.display()
        ),
    );
    let runner = t.join("fakebin/fake-runner");
    let runner = runner.to_str().unwrap();
    let conf = t.join("etc/resolv.conf");
    let items = run("net/dns.sh", t.path(), &[("COMBO_RUNNER", runner)]);
    ok(&items, "dns:127.0.0.1/udp");
    ok(&items, "dns:127.0.0.1/tcp");
    assert_eq!(
        t.read("args").trim(),
        format!(
            "dns --name kubernetes.default.svc.cluster.local --resolv-conf {}",
            conf.display()
        ),
        "the node's own resolvers: any answer will do"
    );
    std::fs::remove_file(&args).unwrap();
    let items = run(
        "net/dns.sh",
        t.path(),
        &[
            ("COMBO_RUNNER", runner),
            ("NET_DNS_NAME", "example.org"),
            ("NET_CLUSTER_DNS", "10.96.0.10"),
        ],
    );
    err(&items, "dns:10.96.0.10/udp", "SERVFAIL");
    ok(&items, "dns:10.96.0.10/tcp");
    assert_eq!(
        t.read("args").lines().collect::<Vec<_>>(),
        [
            format!(
                "dns --name example.org --resolv-conf {} --must-exist",
                conf.display()
            ),
            "dns --name example.org --server 10.96.0.10 --must-exist".to_string(),
        ]
    );
    std::fs::remove_file(&args).unwrap();
    run(
        "net/dns.sh",
        t.path(),
        &[("COMBO_RUNNER", runner), ("NET_DNS_TRANSPORTS", "udp")],
    );
    assert_eq!(
        t.read("args").trim(),
        format!(
            "dns --name kubernetes.default.svc.cluster.local --udp --resolv-conf {}",
            conf.display()
        ),
        "only UDP asked"
    );
    t.script(
        "fakebin/fake-runner",
        "echo 'error: unrecognized subcommand dns' >&2; exit 2",
    );
    skipped(
        &skips("net/dns.sh", t.path(), &[("COMBO_RUNNER", runner)]),
        "dns",
        "unrecognized subcommand",
    );
    t.script(
        "fakebin/fake-runner",
        "echo 'cannot open socket' >&2; exit 1",
    );
    err(
        &run("net/dns.sh", t.path(), &[("COMBO_RUNNER", runner)]),
        "dns",
        "exited 1: cannot open socket",
    );
    t.file("etc/resolv.conf", "search x\n", 0o644);
    err(
        &run("net/dns.sh", t.path(), &[("COMBO_RUNNER", runner)]),
        "nameservers",
        "no nameserver",
    );
}

#[test]
fn storage_endpoints_accept_connections() {
    let t = Tree::new("storage");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let open = listener.local_addr().unwrap().to_string();
    let closed = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .to_string();
    assert!(run("net/storage.sh", t.path(), &[]).is_empty());
    let targets = format!("{open} {closed}");
    let items = run(
        "net/storage.sh",
        t.path(),
        &[
            ("NET_STORAGE_TARGETS", &targets),
            ("NET_STORAGE_TIMEOUT", "1"),
        ],
    );
    ok(&items, &format!("storage:{open}"));
    err(
        &items,
        &format!("storage:{closed}"),
        "no TCP connection within 1s",
    );
}

/// Every default script, as `<category>/<file>`.
fn all_scripts() -> Vec<String> {
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

#[test]
fn every_script_runs_against_this_machine() {
    // Nameservers come from a loopback-only file: tests reach no other address.
    let t = Tree::new("real");
    t.file("resolv.conf", "nameserver 127.0.0.1\n", 0o644);
    let conf = t.join("resolv.conf");
    let root = Path::new("/");
    let mut seen = 0;
    let mut skipped_items = 0;
    let mut failed = Vec::new();
    // Twice: the first run records the baselines, the second judges.
    for round in 0..2 {
        for rel in all_scripts() {
            let st = state(&t, &rel.replace('/', "_"));
            let env = [
                ("NET_RESOLV_CONF", conf.to_str().unwrap()),
                ("STATE_DIR", st.as_str()),
            ];
            let (items, s) = run_full(&rel, root, &env);
            for (item, e) in &items {
                assert!(
                    !item.is_empty() && e.as_deref() != Some(""),
                    "{rel}: {item} {e:?}"
                );
                // What the machine's load decides (other jobs share it) may be red.
                let load = ["cpu:", "psi:", "busy:", "await:"]
                    .iter()
                    .any(|p| item.starts_with(p));
                if round == 1 && e.is_some() && !load {
                    failed.push(format!("{rel}: {item}: {e:?}"));
                }
            }
            for (item, why) in &s {
                assert!(
                    !item.is_empty() && !why.is_empty(),
                    "{rel}: skip {item} {why:?}"
                );
            }
            if round == 1 {
                seen += items.len();
                skipped_items += s.len();
            }
        }
    }
    assert!(seen >= 8, "the real machine yields items ({seen})");
    assert!(
        skipped_items > 0,
        "some checks need what this machine lacks"
    );
    assert!(failed.is_empty(), "this machine is healthy: {failed:#?}");
}

/// Copies the default scripts `rels` (and lib/common.sh) into `t`/scripts.
fn copy_scripts(t: &Tree, rels: &[&str]) -> PathBuf {
    for rel in rels.iter().chain(&["lib/common.sh"]) {
        let text = std::fs::read_to_string(scripts_dir().join(rel)).unwrap();
        t.file(&format!("scripts/{rel}"), &text, 0o755);
    }
    t.join("scripts")
}

#[test]
fn the_runner_keeps_each_script_state_so_problems_are_reported_once() {
    let t = Tree::new("once-state");
    let scripts = copy_scripts(&t, &["svc/kernlog.sh", "net/counters.sh", "mem/oom.sh"]);
    let h = Tree::new("once-host");
    let host = h.path().to_str().unwrap();
    iface(
        &h,
        "eth0",
        "0x1003",
        "up",
        &[("rx_errors", 400), ("rx_packets", 1000)],
    );
    h.file("proc/vmstat", "oom_kill 9\n", 0o644);
    klog_append(
        &t,
        &[
            "booted",
            "INFO: task a:1 blocked for more than 120 seconds.",
        ],
    );
    let log = t.join("kmsg");
    let state_dir = t.join("state");
    let once = || {
        let out = support::runner(
            &[
                "--once",
                "--output",
                "yaml",
                "--scripts",
                scripts.to_str().unwrap(),
                "--state-dir",
                state_dir.to_str().unwrap(),
            ],
            &[
                ("HOST_ROOT", host),
                ("KERNEL_LOG_FILE", log.to_str().unwrap()),
            ],
        );
        let y: serde_yaml::Value = serde_yaml::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "{e}: {}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        });
        (out.status.code(), y)
    };
    // First run: every counting check records its baseline and skips.
    let (code, y) = once();
    assert_eq!(code, Some(0), "skips do not fail the run: {y:?}");
    for (cat, item) in [
        ("svc", "hung-tasks"),
        ("svc", "oops"),
        ("net", "errors:eth0"),
        ("net", "drops:eth0"),
        ("mem", "oom-kills"),
    ] {
        assert_eq!(
            y[cat][item]["skip"].as_str(),
            Some("baseline recorded; counting from the next run"),
            "{cat}/{item}: {y:?}"
        );
    }
    // Faults between two runs: reported by the next run only.
    klog_append(&t, &["INFO: task b:2 blocked for more than 120 seconds."]);
    iface(
        &h,
        "eth0",
        "0x1003",
        "up",
        &[("rx_errors", 450), ("rx_packets", 2000)],
    );
    h.file("proc/vmstat", "oom_kill 10\n", 0o644);
    let (code, y) = once();
    assert_eq!(code, Some(1), "{y:?}");
    let e = |cat: &str, item: &str| y[cat][item]["err"].as_str().unwrap_or_default().to_string();
    assert!(
        e("svc", "hung-tasks").contains(
            "1 hung task line(s) in the kernel log since the previous run, last: INFO: task b:2"
        ),
        "{y:?}"
    );
    assert!(
        e("net", "errors:eth0").contains("50 rx/tx errors since the previous run"),
        "{y:?}"
    );
    assert!(
        e("mem", "oom-kills").contains("1 OOM kill(s) since the previous run"),
        "{y:?}"
    );
    assert_eq!(
        y["svc"]["oops"],
        serde_yaml::Value::Mapping(Default::default())
    );
    let (code, y) = once();
    assert_eq!(code, Some(0), "nothing new since the previous run: {y:?}");
}
