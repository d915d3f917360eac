//! The mem scripts of `scripts/mem` against fixture trees: available memory,
//! swap, OOM kills, ECC errors and memory modules.

mod support;

use support::scripts::{err, ok, run, skipped, skipped_by, skips, Stateful};
use support::Tree;

/// `/proc/meminfo` with these sizes (kB), and a `/proc/vmstat`.
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
fn oom_kills_count_the_vmstat_counter_since_the_previous_run() {
    let t = Tree::new("oom");
    meminfo(&t, 8_000_000, 4_000_000, 0, 0); // oom_kill 3 since boot
    let st = Stateful::new(&t, "oom", &[("KERNEL_LOG_FILE", "/nonexistent")]);
    skipped(
        &st.skips("mem/oom.sh", &[]),
        "oom-kills",
        "baseline recorded",
    );
    ok(&st.run("mem/oom.sh", &[]), "oom-kills");
    t.file("proc/vmstat", "nr_free_pages 100\noom_kill 5\n", 0o644);
    err(
        &st.run("mem/oom.sh", &[]),
        "oom-kills",
        "2 OOM kill(s) since the previous run",
    );
    ok(&st.run("mem/oom.sh", &[]), "oom-kills");
    t.file("proc/vmstat", "oom_kill 7\n", 0o644);
    ok(
        &st.run("mem/oom.sh", &[("MEM_OOM_KILLS_MAX", "2")]),
        "oom-kills",
    );
}

#[test]
fn ecc_errors_are_counted_since_the_previous_run() {
    let t = Tree::new("ecc");
    skipped_by("mem/ecc.sh", t.path(), "ecc", "no EDAC");
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
    let st = Stateful::new(&t, "e", &[]);
    mc(500, 1);
    skipped(&st.skips("mem/ecc.sh", &[]), "ecc:mc0", "baseline recorded");
    ok(&st.run("mem/ecc.sh", &[]), "ecc:mc0");
    mc(500, 2);
    err(
        &st.run("mem/ecc.sh", &[]),
        "ecc:mc0",
        "1 uncorrected memory error(s)",
    );
    mc(530, 2);
    err(
        &st.run("mem/ecc.sh", &[]),
        "ecc:mc0",
        "30 corrected memory errors",
    );
    mc(560, 2);
    ok(
        &st.run("mem/ecc.sh", &[("MEM_ECC_CE_MAX", "30")]),
        "ecc:mc0",
    );
}

#[test]
fn memory_modules_speed_vendor_and_size() {
    let t = Tree::new("dimm");
    meminfo(&t, 16_000_000, 8_000_000, 0, 0);
    let s = skips("mem/dimm.sh", t.path(), &[]);
    skipped(
        &s,
        "dimm:speed",
        "dmidecode is not in the runner image (Debian package dmidecode)",
    );
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
    skipped_by("mem/dimm.sh", t.path(), "dimm:vendor", "Permission denied");
}
