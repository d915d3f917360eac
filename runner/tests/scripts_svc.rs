//! The svc scripts of `scripts/svc` against fixture trees: systemd units,
//! restarts, limits, temperatures, CPU and clock sync.

mod support;

use support::scripts::{err, ok, run, run_full, skipped, skipped_by, skips, Stateful};
use support::Tree;

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
    let st = Stateful::new(&t, "r", &[]);
    n(40, 3);
    let s = st.skips("svc/restarts.sh", &[]);
    skipped(&s, "restarts:kubelet", "baseline recorded");
    skipped(&s, "restarts:container-runtime", "baseline recorded");
    n(45, 4);
    let items = st.run("svc/restarts.sh", &[]);
    err(
        &items,
        "restarts:kubelet",
        "restarted 5 times since the previous run (limit 2)",
    );
    ok(&items, "restarts:container-runtime");
    n(45, 7);
    let items = st.run("svc/restarts.sh", &[]);
    ok(&items, "restarts:kubelet");
    err(&items, "restarts:container-runtime", "restarted 3 times");
    let none = Tree::new("restarts-none");
    let s = skips("svc/restarts.sh", none.path(), &[("STATE_DIR", st.dir())]);
    skipped(&s, "restarts:kubelet", "host systemd not reachable");
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
fn temperatures_from_thermal_zones_and_hwmon() {
    let t = Tree::new("thermal");
    skipped_by("svc/thermal.sh", t.path(), "temp", "no thermal zone");
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
    let st = Stateful::new(&t, "cpu", &[]);
    at(1000, 1000, 1000);
    let (items, s) = st.run_full("svc/cpu.sh", &[]);
    skipped(&s, "cpu:usage", "baseline recorded");
    err(
        &items,
        "cpu:load",
        "load average 9.00 over 5 minutes on 2 CPUs (4.5 per CPU, limit 4)",
    );
    assert_eq!(items.get("cpu:model"), Some(&None));
    at(1030, 2000, 1000);
    skipped(&st.skips("svc/cpu.sh", &[]), "cpu:usage", "fewer than 60s");
    at(1100, 20_600, 1_100);
    err(
        &st.run("svc/cpu.sh", &[]),
        "cpu:usage",
        "CPUs 99% busy on average over the 100s since the previous run (limit 95%)",
    );
    at(1200, 21_600, 10_100);
    let items = st.run(
        "svc/cpu.sh",
        &[("SVC_LOAD_MAX_PER_CPU", "5"), ("SVC_CPU_MODEL", "Xeon B*")],
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
    err(&st.run("svc/cpu.sh", &[]), "cpu:model", "different models");
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
    skipped_by(
        "svc/clock.sh",
        t.path(),
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
