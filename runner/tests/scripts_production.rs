//! The default scripts on what a production node has: pod volumes and
//! container mounts in the mount table, thousands of processes, commands
//! that hang on a bad mount, disk or daemon, disks in standby, and a
//! runtime that died and left its socket behind.

mod support;

use std::os::unix::net::UnixListener;

use support::scripts::{err, host_netns, ok, run, run_full, skipped, Items};
use support::Tree;

/// The built runner, which `svc/kubelet.sh` connects to sockets with.
const RUNNER: &str = env!("CARGO_BIN_EXE_combo-runner");

/// A `df` in `fakebin` answering `space`% and `inodes`% for each listed
/// mount point of the tree (every other path 50%), sleeping for those in
/// `hang`.
fn fake_df(t: &Tree, usage: &[(&str, u32, u32)], hang: &[&str]) {
    let mut cases = String::new();
    for mp in hang {
        cases.push_str(&format!(
            "  '{}{mp}') exec sleep 30 ;;\n",
            t.path().display()
        ));
    }
    for (mp, space, inodes) in usage {
        cases.push_str(&format!(
            "  '{}{mp}') if [ \"$2\" = -i ]; then u={inodes}; else u={space}; fi ;;\n",
            t.path().display()
        ));
    }
    t.script(
        "fakebin/df",
        &format!(
            "u=50\ncase \"$3\" in\n{cases}esac\n\
             echo 'Filesystem 1024-blocks Used Available Capacity Mounted on'\n\
             echo \"/dev/x 1000 1 1 $u% $3\""
        ),
    );
}

/// The mounts a node running pods has besides its own: a PersistentVolume
/// (CSI staging and the pod's mount, the latter read-only), a subPath, an
/// emptyDir on its own disk, and the overlays and shm of containerd, k3s,
/// CRI-O and Docker.
const POD_AND_CONTAINER_MOUNTS: &str = "\
40 26 8:32 / /var/lib/kubelet/plugins/kubernetes.io/csi/ebs.csi.aws.com/abc/globalmount ro - ext4 /dev/sdc ro\n\
41 26 8:32 / /var/lib/kubelet/pods/0a1b/volumes/kubernetes.io~csi/pvc-1/mount ro - ext4 /dev/sdc ro\n\
42 26 8:48 / /var/lib/kubelet/pods/0a1b/volume-subpaths/data/app/0 rw - xfs /dev/sdd rw\n\
43 26 0:50 / /run/containerd/io.containerd.runtime.v2.task/k8s.io/c1/rootfs rw - overlay overlay rw,lowerdir=/l,upperdir=/u,workdir=/w\n\
44 26 0:51 / /run/containerd/io.containerd.grpc.v1.cri/sandboxes/s1/shm rw - tmpfs shm rw\n\
45 26 0:52 / /run/k3s/containerd/io.containerd.runtime.v2.task/k8s.io/c2/rootfs rw - overlay overlay rw\n\
46 26 0:53 / /var/lib/containers/storage/overlay/c3/merged rw - overlay overlay rw\n\
47 26 0:54 / /run/containers/storage/overlay-containers/c3/userdata/shm rw - tmpfs shm rw\n\
48 26 0:55 / /var/lib/docker/overlay2/c4/merged rw - overlay overlay rw\n\
49 26 8:64 / /var/lib/containerd/io.containerd.snapshotter.v1.blockfile/s2 rw - ext4 /dev/loop3 rw\n";

/// A node with an ext4 `/`, an xfs `/var` and the mounts of its pods and
/// containers, each of them full and the PV read-only.
fn busy_node(t: &Tree) {
    t.file(
        "proc/1/mountinfo",
        &format!(
            "22 1 0:21 / /proc rw - proc proc rw\n\
             25 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n\
             26 25 8:17 / /var rw,relatime - xfs /dev/sdb1 rw\n\
             {POD_AND_CONTAINER_MOUNTS}"
        ),
        0o644,
    );
    fake_df(
        t,
        &[
            (
                "/var/lib/kubelet/pods/0a1b/volumes/kubernetes.io~csi/pvc-1/mount",
                99,
                99,
            ),
            (
                "/var/lib/kubelet/plugins/kubernetes.io/csi/ebs.csi.aws.com/abc/globalmount",
                99,
                99,
            ),
            (
                "/var/lib/kubelet/pods/0a1b/volume-subpaths/data/app/0",
                99,
                99,
            ),
        ],
        &[],
    );
}

fn names(items: &Items) -> Vec<&str> {
    items.keys().map(String::as_str).collect()
}

#[test]
fn pod_volumes_and_container_storage_are_not_node_items() {
    let t = Tree::new("prod-mounts");
    busy_node(&t);
    let usage = run("disk/usage.sh", t.path(), &[]);
    assert_eq!(
        names(&usage),
        ["/", "/var", "inodes:/", "inodes:/var"],
        "only the node's filesystems: {usage:?}"
    );
    assert!(usage.values().all(Option::is_none), "{usage:?}");
    let ro = run("disk/readonly.sh", t.path(), &[]);
    assert_eq!(names(&ro), ["ro:/", "ro:/var"], "{ro:?}");
    assert!(ro.values().all(Option::is_none), "{ro:?}");
    // The list is the admin's: emptied, the PV is an item again, full and
    // read-only; DISK_IGNORE_MOUNTS still leaves out more.
    let all = [("DISK_EXCLUDE_MOUNTS", "")];
    let usage = run("disk/usage.sh", t.path(), &all);
    err(
        &usage,
        "/var/lib/kubelet/plugins/kubernetes.io/csi/ebs.csi.aws.com/abc/globalmount",
        "disk full (99% used",
    );
    err(
        &run("disk/readonly.sh", t.path(), &all),
        "ro:/var/lib/kubelet/plugins/kubernetes.io/csi/ebs.csi.aws.com/abc/globalmount",
        "filesystem is read-only",
    );
    let ignored = run(
        "disk/readonly.sh",
        t.path(),
        &[("DISK_IGNORE_MOUNTS", "/var")],
    );
    assert_eq!(names(&ignored), ["ro:/"], "{ignored:?}");
}

#[test]
fn an_immutable_os_overlay_or_tmpfs_root_stays_checked() {
    for root in ["overlay overlay rw,lowerdir=/usr", "tmpfs tmpfs rw"] {
        let t = Tree::new("prod-root");
        t.file(
            "proc/1/mountinfo",
            &format!(
                "25 1 0:30 / / rw - {root}\n\
                 26 25 8:17 / /var rw - ext4 /dev/sda9 rw\n\
                 27 25 0:31 / /etc rw - overlay overlay rw,upperdir=/var/etc\n\
                 {POD_AND_CONTAINER_MOUNTS}"
            ),
            0o644,
        );
        fake_df(&t, &[("/", 95, 10)], &[]);
        let usage = run("disk/usage.sh", t.path(), &[]);
        err(&usage, "/", "disk full (95% used");
        ok(&usage, "/var");
        assert_eq!(
            names(&usage),
            ["/", "/var", "inodes:/", "inodes:/var"],
            "the root whatever its type, no other overlay: {usage:?}"
        );
    }
}

#[test]
fn a_df_hung_on_a_mount_is_cut_at_the_limit_and_named() {
    let t = Tree::new("prod-df-hang");
    busy_node(&t);
    fake_df(&t, &[], &["/var"]);
    let usage = run("disk/usage.sh", t.path(), &[("CHECK_COMMAND_TIMEOUT", "1")]);
    err(&usage, "/var", "cannot read usage: df timed out after 1s");
    ok(&usage, "/");
    ok(&usage, "inodes:/");
    assert!(!usage.contains_key("inodes:/var"), "{usage:?}");
}

#[test]
fn smartctl_leaves_disks_in_standby_asleep_and_a_hung_one_is_cut() {
    let t = Tree::new("prod-smart");
    for d in ["sda", "sdb", "sdc"] {
        t.file(&format!("sys/block/{d}/size"), "1\n", 0o644);
        t.file(&format!("dev/{d}"), "", 0o644);
    }
    // sda is in standby: only "-n standby" keeps smartctl from waking it
    // (and from reading a health it would then have).
    t.script(
        "fakebin/smartctl",
        &format!(
            "echo \"$*\" >> '{}'\nfor a in \"$@\"; do d=$a; done\n\
             case \"$* \" in *'-n standby '*) standby=1 ;; esac\n\
             case $d in\n\
               */sda) if [ -n \"$standby\" ]; then echo 'Device is in STANDBY mode, exit(2)'; exit 2; fi\n\
                      echo 'SMART overall-health self-assessment test result: PASSED' ;;\n\
               */sdb) exec sleep 30 ;;\n\
               */sdc) echo 'SMART overall-health self-assessment test result: PASSED' ;;\n\
             esac",
            t.join("calls").display()
        ),
    );
    let dev = t.join("dev");
    let env = [
        ("DISK_DEV_DIR", dev.to_str().unwrap()),
        ("CHECK_COMMAND_TIMEOUT", "1"),
    ];
    let (items, s) = run_full("disk/smart.sh", t.path(), &env);
    skipped(&s, "smart:sda", "standby mode (spun down): not woken");
    err(&items, "smart:sdb", "smartctl timed out after 1s");
    ok(&items, "smart:sdc");
    let calls = t.read("calls");
    assert_eq!(calls.lines().count(), 3, "{calls}");
    assert!(
        calls.lines().all(|l| l.starts_with("-n standby ")),
        "{calls}"
    );
}

/// A node with a kubelet whose runtime endpoint is
/// `/run/containerd/containerd.sock`, among `others` other processes and a
/// kernel thread.
fn kubelet_node(t: &Tree, others: u32) {
    t.file("var/lib/kubelet/pki/kubelet.crt", "", 0o644);
    for pid in 100..100 + others {
        t.file(
            &format!("proc/{pid}/cmdline"),
            "/pause\0--flag\0/var/lib/kubelet\0",
            0o644,
        );
    }
    t.file("proc/2/cmdline", "", 0o644);
    t.file(
        "proc/4321/cmdline",
        "/usr/bin/kubelet\0--config=/var/lib/kubelet/config.yaml\0--container-runtime-endpoint=unix:///run/containerd/containerd.sock\0",
        0o644,
    );
    std::fs::create_dir_all(t.join("run/containerd")).unwrap();
}

/// `svc/kubelet.sh`'s items on `t`, with the runner to connect.
fn kubelet(t: &Tree, env: &[(&str, &str)]) -> (Items, support::scripts::Skips) {
    let mut all = vec![("SVC_KUBELET_HEALTHZ", ""), ("COMBO_RUNNER", RUNNER)];
    all.extend_from_slice(env);
    run_full("svc/kubelet.sh", t.path(), &all)
}

#[test]
fn a_runtime_socket_must_accept_a_connection_not_just_exist() {
    let t = Tree::new("prod-sock");
    kubelet_node(&t, 3);
    let sock = t.join("run/containerd/containerd.sock");
    let listener = UnixListener::bind(&sock).unwrap();
    ok(&kubelet(&t, &[]).0, "runtime-socket");
    // containerd died: its socket file stays, nobody listens.
    drop(listener);
    assert!(sock.exists());
    err(
        &kubelet(&t, &[]).0,
        "runtime-socket",
        "/run/containerd/containerd.sock: connection refused: nothing listens on it (a stale socket",
    );
    std::fs::remove_file(&sock).unwrap();
    err(
        &kubelet(&t, &[]).0,
        "runtime-socket",
        "/run/containerd/containerd.sock: no such file",
    );
    // Without the kubelet's flag, the list: a stale socket is named.
    std::fs::remove_file(t.join("proc/4321/cmdline")).unwrap();
    let stale = t.join("run/crio/crio.sock");
    std::fs::create_dir_all(stale.parent().unwrap()).unwrap();
    drop(UnixListener::bind(&stale).unwrap());
    let list = [(
        "SVC_RUNTIME_SOCKETS",
        "/run/containerd/containerd.sock /run/crio/crio.sock",
    )];
    err(
        &kubelet(&t, &list).0,
        "runtime-socket",
        "/run/crio/crio.sock: connection refused",
    );
    let _live = UnixListener::bind(&sock).unwrap();
    ok(&kubelet(&t, &list).0, "runtime-socket");
    let (_, s) = kubelet(&t, &[("COMBO_RUNNER", "")]);
    skipped(
        &s,
        "runtime-socket",
        "no COMBO_RUNNER with the probe-socket",
    );
}

#[test]
fn the_process_scan_starts_no_process_per_process() {
    let t = Tree::new("prod-procs");
    kubelet_node(&t, 500);
    let _l = UnixListener::bind(t.join("run/containerd/containerd.sock")).unwrap();
    // Each tool a per-process scan would start logs its start.
    let log = t.join("starts");
    for tool in ["tr", "head", "cat", "awk", "sed", "grep"] {
        t.script(
            &format!("fakebin/{tool}"),
            &format!(
                "echo {tool} >> '{}'\nPATH=${{PATH#*:}} exec {tool} \"$@\"",
                log.display()
            ),
        );
    }
    let (items, _) = kubelet(&t, &[]);
    ok(&items, "runtime-socket");
    let starts = t.read("starts");
    assert!(
        starts.lines().count() < 20,
        "{} tool starts for 500 processes: {starts}",
        starts.lines().count()
    );
}

#[test]
fn a_hung_systemd_is_err_naming_systemctl_and_the_limit() {
    let t = Tree::new("prod-systemd");
    t.file("proc/1/comm", "systemd\n", 0o644);
    t.script(
        "fakebin/nsenter",
        "while [ \"$1\" != -- ]; do shift; done\nshift\nexec \"$@\"",
    );
    t.script("fakebin/systemctl", "exec sleep 30");
    let (items, s) = run_full(
        "svc/systemd.sh",
        t.path(),
        &[("CHECK_COMMAND_TIMEOUT", "1")],
    );
    err(
        &items,
        "failed-units",
        "systemctl is-system-running timed out after 1s",
    );
    skipped(&s, "kubelet", "timed out after 1s");
}

#[test]
fn arping_runs_bounded_and_in_parallel() {
    let t = Tree::new("prod-arping");
    host_netns(&t);
    let addrs: Vec<String> = (1..=12).map(|i| format!("10.0.0.{i}")).collect();
    let ip_lines: String = addrs
        .iter()
        .map(|a| format!("echo '2: eth0    inet {a}/24 scope global eth0'\n"))
        .collect();
    t.script("fakebin/ip", &ip_lines);
    // Each arping marks itself running, waits, and logs how many ran then.
    let dir = t.join("running");
    std::fs::create_dir_all(&dir).unwrap();
    t.script(
        "fakebin/arping",
        &format!(
            "for a in \"$@\"; do last=$a; done\necho \"$*\" >> '{d}/../args'\n\
             [ \"$last\" = 10.0.0.12 ] && exec sleep 30\n\
             touch '{d}'/$$; sleep 0.5; ls '{d}' | wc -l >> '{d}/../seen'; rm -f '{d}'/$$",
            d = dir.display()
        ),
    );
    let (items, s) = run_full(
        "net/ipconflict.sh",
        t.path(),
        &[("CHECK_COMMAND_TIMEOUT", "2")],
    );
    for a in &addrs[..11] {
        ok(&items, &format!("ipv4:{a}"));
    }
    skipped(&s, "ipv4:10.0.0.12", "arping timed out after 2s on eth0");
    let most = t
        .read("seen")
        .lines()
        .filter_map(|l| l.trim().parse::<u32>().ok())
        .max()
        .unwrap_or(0);
    assert!((2..=8).contains(&most), "{most} arpings at once");
    assert!(
        t.read("args").lines().all(|l| l.contains("-w 1 ")),
        "{}",
        t.read("args")
    );
}
