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

/// Runs `scripts/<rel>` with HOST_ROOT at `root`, fake tools first in PATH.
fn run(rel: &str, root: &Path, env: &[(&str, &str)]) -> Items {
    let path = format!(
        "{}:{}",
        root.join("fakebin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new(scripts_dir().join(rel))
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
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let mut w = line.splitn(3, ' ');
        match (w.next(), w.next(), w.next()) {
            (Some("ok"), Some(i), _) => {
                items.insert(i.into(), None);
            }
            (Some("err"), Some(i), m) => {
                items.insert(i.into(), Some(m.unwrap_or_default().into()));
            }
            _ => {}
        }
    }
    items
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
    let io = run("disk/ioerrors.sh", t.path(), &[]);
    ok(&io, "io-errors");
}

#[test]
fn disk_checks_find_full_disks_inodes_read_only_remounts_and_io_errors() {
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
    let io = run("disk/ioerrors.sh", t.path(), &[]);
    err(&io, "io:sdb", "2 I/O error line(s)");
    err(&io, "io:sdb1", "metadata I/O error");
    let windowed = run(
        "disk/ioerrors.sh",
        t.path(),
        &[("DISK_IO_WINDOW_SECONDS", "60")],
    );
    ok(&windowed, "io-errors");
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
    let counters = run("net/counters.sh", t.path(), &[]);
    ok(&counters, "counters:eth0");
    ok(&run("net/route.sh", t.path(), &[]), "default-route");
}

#[test]
fn net_checks_find_down_links_bad_counters_and_a_missing_default_route() {
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
    let counters = run("net/counters.sh", t.path(), &[]);
    err(&counters, "counters:eth0", "600 rx/tx errors (limit 100)");
    err(&counters, "counters:eth1", "50 of 1000 packets dropped");
    err(
        &run("net/route.sh", t.path(), &[]),
        "default-route",
        "no default route",
    );
    t.file("proc/1/net/ipv6_route", "00000000000000000000000000000000 00 00000000000000000000000000000000 00 fe800000000000000000000000000001 00000400 00000001 00000000 00000003     eth0\n", 0o644);
    ok(&run("net/route.sh", t.path(), &[]), "default-route");
}

#[test]
fn dns_check_tells_a_listening_nameserver_from_a_closed_one() {
    let t = Tree::new("dns");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    t.file(
        "etc/resolv.conf",
        "search cluster.local\nnameserver 127.0.0.1\noptions ndots:5\n",
        0o644,
    );
    let items = run("net/dns.sh", t.path(), &[("NET_DNS_PORT", &port)]);
    assert_eq!(items.len(), 1);
    ok(&items, "nameserver:127.0.0.1");
    drop(listener);
    let items = run(
        "net/dns.sh",
        t.path(),
        &[("NET_DNS_PORT", &port), ("NET_DNS_TIMEOUT", "1")],
    );
    err(&items, "nameserver:127.0.0.1", "not reachable on tcp port");
    t.file("etc/resolv.conf", "search x\n", 0o644);
    err(
        &run("net/dns.sh", t.path(), &[]),
        "nameservers",
        "no nameserver",
    );
}

#[test]
fn mem_checks_pass_on_a_healthy_node() {
    let t = Tree::new("mem-ok");
    meminfo(&t, 8_000_000, 4_000_000, 0, 0);
    t.file("dev/kmsg", "6,1,1000000,-;booted\n", 0o644);
    t.file("proc/uptime", "5000.00 9000.00\n", 0o644);
    ok(&run("mem/available.sh", t.path(), &[]), "available");
    ok(&run("mem/swap.sh", t.path(), &[]), "swap");
    ok(&run("mem/oom.sh", t.path(), &[]), "oom-kills");
}

#[test]
fn mem_checks_find_low_memory_heavy_swap_and_recent_oom_kills() {
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
    err(
        &run("mem/oom.sh", t.path(), &[]),
        "oom-kills",
        "1 OOM kill(s) in the last 3600s, last: Out of memory: Killed process 4242 (java)",
    );
    ok(
        &run("mem/oom.sh", t.path(), &[("MEM_OOM_KILLS_MAX", "1")]),
        "oom-kills",
    );
    // Without a readable kernel log the counter since boot is used.
    std::fs::remove_file(t.join("dev/kmsg")).unwrap();
    t.file("fakebin/dmesg", "#!/bin/sh\nexit 1\n", 0o755);
    err(
        &run("mem/oom.sh", t.path(), &[]),
        "oom-kills",
        "3 OOM kill(s) since boot",
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
fn svc_reports_nothing_and_succeeds_without_a_reachable_systemd() {
    let t = Tree::new("svc-none");
    t.file("proc/1/comm", "bash\n", 0o644);
    assert!(run("svc/systemd.sh", t.path(), &[]).is_empty());
    let empty = Tree::new("svc-empty");
    assert!(run("svc/systemd.sh", empty.path(), &[]).is_empty());
}

#[test]
fn every_script_runs_against_this_machine() {
    // Nameservers come from a loopback-only file: tests reach no other address.
    let t = Tree::new("real");
    t.file("resolv.conf", "nameserver 127.0.0.1\n", 0o644);
    let conf = t.join("resolv.conf");
    let root = Path::new("/");
    let env = [
        ("NET_RESOLV_CONF", conf.to_str().unwrap()),
        ("NET_DNS_TIMEOUT", "1"),
    ];
    let mut seen = 0;
    for rel in [
        "disk/usage.sh",
        "disk/readonly.sh",
        "disk/ioerrors.sh",
        "net/links.sh",
        "net/counters.sh",
        "net/route.sh",
        "net/dns.sh",
        "mem/available.sh",
        "mem/swap.sh",
        "mem/oom.sh",
        "svc/systemd.sh",
    ] {
        let items = run(rel, root, &env);
        seen += items.len();
        for (item, e) in &items {
            assert!(
                !item.is_empty() && e.as_deref() != Some(""),
                "{rel}: {item} {e:?}"
            );
        }
    }
    assert!(seen >= 8, "the real machine yields items ({seen})");
}
