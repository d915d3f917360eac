//! The disk scripts of `scripts/disk` against fixture trees: usage, read-only
//! remounts, busyness, RAID, SMART and device state.

mod support;

use support::scripts::{err, ok, run, run_full, skipped, skipped_by, skips, Stateful};
use support::Tree;

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
fn a_shut_down_xfs_is_named_though_it_stays_mounted_read_write() {
    let t = Tree::new("xfs-shutdown");
    node(&t, "rw,attr2", &[("/", 40, 10), ("/var", 40, 10)], "");
    let var = format!("{}/var", t.path().display());
    // A shut-down XFS answers every stat with EIO (xfs_vn_getattr).
    t.file(
        "fakebin/stat",
        &format!(
            "#!/bin/sh\nshift 2\nfor p; do case $p in {var}) echo \"stat: cannot statx '$p': Input/output error\" >&2 ;; *) echo \"$p\" ;; esac; done\n"
        ),
        0o755,
    );
    let ro = run("disk/readonly.sh", t.path(), &[]);
    err(&ro, "ro:/var", "XFS shut down");
    ok(&ro, "ro:/");
    // The stat of a healthy XFS answers.
    t.file(
        "fakebin/stat",
        "#!/bin/sh\nshift 2\nfor p; do echo \"$p\"; done\n",
        0o755,
    );
    let ro = run("disk/readonly.sh", t.path(), &[]);
    ok(&ro, "ro:/var");
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
    let st = Stateful::new(&t, "b", &[]);
    stats(1000, 10_000, 50_000, 100_000);
    let s = st.skips("disk/busy.sh", &[]);
    skipped(&s, "busy:sda", "baseline recorded");
    skipped(&s, "await:sda", "baseline recorded");
    assert_eq!(
        s.len(),
        2,
        "partitions and loop devices are not checked: {s:?}"
    );
    // 100 s later: busy 95 s of them, 1000 I/Os of 600 ms each.
    stats(1100, 11_000, 650_000, 195_000);
    let items = st.run("disk/busy.sh", &[]);
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
    let items = st.run("disk/busy.sh", &[]);
    ok(&items, "busy:sda");
    ok(&items, "await:sda");
    stats(1300, 13_000, 1_260_000, 295_000);
    let items = st.run(
        "disk/busy.sh",
        &[
            ("DISK_BUSY_MAX_PERCENT", "96"),
            ("DISK_AWAIT_MAX_MS", "700"),
        ],
    );
    ok(&items, "busy:sda");
    ok(&items, "await:sda");
}

#[test]
fn raid_arrays_and_controllers() {
    let t = Tree::new("raid");
    skipped_by("disk/raid.sh", t.path(), "raid", "no software (md) array");
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
        "smartctl is not in the runner image (Debian package smartmontools)",
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

    // A drive whose overall health passes with sectors it cannot read.
    t.script(
        "fakebin/smartctl",
        "printf '%s\\n' 'SMART overall-health self-assessment test result: PASSED' \
         '  5 Reallocated_Sector_Ct   0x0033   100   100   010    Pre-fail  Always       -       8' \
         '197 Current_Pending_Sector  0x0012   100   100   000    Old_age   Always       -       3' \
         '198 Offline_Uncorrectable   0x0010   100   100   000    Old_age   Offline      -       1'",
    );
    err(
        &run("disk/smart.sh", t.path(), &env),
        "smart:sda",
        "3 pending and 1 offline-uncorrectable sectors (limit 0)",
    );
    let tolerant = [
        ("DISK_DEV_DIR", dev.to_str().unwrap()),
        ("DISK_BAD_SECTORS_MAX", "3"),
    ];
    ok(&run("disk/smart.sh", t.path(), &tolerant), "smart:sda");
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
