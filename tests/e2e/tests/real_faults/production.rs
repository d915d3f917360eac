//! A production-like real node: after the node sample's pods are running,
//! the first real node gets what a busy node has (busy.rs); the next run
//! gives no `err` and names the items the busy state touches ok. Then it
//! gets real faults (a disk mounted and filled after the pods started,
//! kernel lines of each class the kernel-log checks name), and the next run
//! names each fault on its node and gives no `err` for anything else.

use std::collections::BTreeSet;

use anyhow::{bail, Context as _, Result};
use combo_api::report::report_name;
use combo_api::{DebuggerReport, NodeSummary};
use combo_e2e::*;
use combo_testkit::suite::Case;
use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use kube::{Api, Client};

use crate::busy::{
    container_cpu_seconds, CpuSampler, OomKilledPod, Sleepers, Storage, StubResolver,
    HARMLESS_KMSG, STUB,
};
use crate::host::{LoopFs, FAULT_MOUNT};
use crate::links::DefaultRoutes;
use crate::{pods_ready, run, verdict, Run, CLUSTER_DNS};

const AREA: &str = "production node";
/// What a busy node has: processes, container root filesystems, pod volumes.
const PROCESSES: usize = 3000;
const OVERLAYS: usize = 200;
const POD_VOLUMES: usize = 50;

/// Kernel faults of each class, in the kernel's own words: (category, item
/// named, line). The kernel log is the machine's, so both real nodes name
/// them.
pub const FAULT_KMSG: [(&str, &str, &str); 15] = [
    ("svc", "hung-tasks", "INFO: task kc-busy:4242 blocked for more than 120 seconds."),
    ("svc", "soft-lockups", "watchdog: BUG: soft lockup - CPU#1 stuck for 22s! [kc-busy:4242]"),
    ("svc", "rcu-stalls", "rcu: INFO: rcu_sched self-detected stall on CPU"),
    ("svc", "hardware-errors", "mce: [Hardware Error]: CPU 0: Machine Check: 0 Bank 5: be00000000800400"),
    ("svc", "oops", "BUG: kernel NULL pointer dereference, address: 0000000000000008"),
    // Uncorrected: one corrected error is within mem/ecc.sh's tolerance.
    // Its page is not the memory failure's below, which would otherwise be
    // this error's (one fault, one item). Red only where the runner reads
    // no EDAC counters under /host: where it does, every EDAC error is
    // mem/ecc.sh's ecc:<mc> alone, and no kernel line turns this item red.
    (
        "mem",
        "memory-errors",
        "EDAC MC0: 1 UE memory read error on CPU_SrcID#0_Ha#0_Chan#0_DIMM#0 (channel:0 slot:0 page:0x54321 offset:0x0 grain:32 - area:DRAM err_code:0001:0090 socket:0 ha:0 channel_mask:1 rank:0)",
    ),
    ("mem", "memory-failure", "Memory failure: 0x12345: recovery action for dirty LRU page: Recovered"),
    ("net", "tx-timeout:eth9", "NETDEV WATCHDOG: eth9 (ixgbe): transmit queue 3 timed out"),
    ("net", "unregister-netdevice", "unregister_netdevice: waiting for kcb9 to become free. Usage count = 1"),
    ("net", "conntrack-full", "nf_conntrack: nf_conntrack: table full, dropping packet"),
    ("net", "neighbour-table-full", "neighbour: arp_cache: neighbor table overflow!"),
    ("disk", "io:nvme9n1", "nvme9n1: I/O Cmd(0x2) @ LBA 123, 8 blocks, I/O Error (sct 0x2 / sc 0x81)"),
    ("disk", "io:dm-9", "Buffer I/O error on dev dm-9, logical block 0, async page read"),
    ("disk", "fs:dm-8", "XFS (dm-8): Log I/O Error Detected. Shutting down filesystem"),
    ("disk", "fs:sdk1", "EXT4-fs error (device sdk1): ext4_find_entry:1455: inode #2: comm kc-busy: reading directory lblock 0"),
];

/// Beside the suite report: this test's line of it.
const NOTE_FILE: &str = "suite-production-node.txt";

/// The node sample's Debugger name.
const NAME: &str = "node-check";

/// containerd's id of the runner container of `pod`.
fn runner_container_id(pod: &Pod) -> Result<String> {
    let id = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.name == "runner"))
        .and_then(|c| c.container_id.as_deref())
        .context("the runner container has no id yet")?;
    Ok(id.rsplit("://").next().unwrap_or(id).to_string())
}

/// The faults each node must name: (node, category, item).
fn expected(nodes: &[String]) -> BTreeSet<(String, String, String)> {
    let mut want = BTreeSet::new();
    let first = &nodes[0];
    for item in [FAULT_MOUNT.to_string(), format!("inodes:{FAULT_MOUNT}")] {
        want.insert((first.clone(), "disk".to_string(), item));
    }
    for node in nodes {
        // The super block's ro flag shows in the machine's mount table.
        want.insert((node.clone(), "disk".into(), format!("ro:{FAULT_MOUNT}")));
        for (category, item, _) in fault_kmsg() {
            want.insert((node.clone(), category.into(), item.into()));
        }
    }
    want
}

/// Whether this machine's memory controllers have EDAC counters, which the
/// runners read under /host (the real nodes share the machine's /sys).
fn machine_has_edac_counters() -> bool {
    std::path::Path::new("/sys/devices/system/edac/mc/mc0/ce_count").exists()
}

/// The lines of [`FAULT_KMSG`] this machine's checks can name: where the
/// memory controllers have EDAC counters, an EDAC line is mem/ecc.sh's
/// from the counters, which a written line does not move, so the
/// `memory-errors` line is left out, and the suite report says so.
fn fault_kmsg() -> Vec<(&'static str, &'static str, &'static str)> {
    FAULT_KMSG
        .into_iter()
        .filter(|(_, item, _)| !(*item == "memory-errors" && machine_has_edac_counters()))
        .collect()
}

/// The items the first node must show ok although its busy state touches
/// them: its resolvers (the stub on loopback and resolved's upstream, each
/// over UDP and TCP) and its OOM kills (a container at its own limit only).
fn must_be_ok() -> Vec<(&'static str, String)> {
    let mut items = Vec::new();
    for server in [STUB, CLUSTER_DNS] {
        for transport in ["udp", "tcp"] {
            items.push(("net", format!("dns:{server}/{transport}")));
        }
    }
    items.push(("mem", "oom-kills".to_string()));
    items
}

/// The items of [`must_be_ok`] that are not ok in `report`, node `first`'s
/// DebuggerReport of the run. The report lists every item of a node of
/// this size (docs/runner.md, "Reports: the summary ConfigMap"), so an
/// item it lacks was not checked, folded into "(N healthy items omitted)"
/// or not: only the summary ConfigMap's value folds.
fn not_ok(first: &str, report: &NodeSummary) -> Vec<String> {
    let mut not_ok = Vec::new();
    for (category, item) in must_be_ok() {
        let v = verdict(report, category, &item);
        println!("{AREA}: {first} {category}/{item}: {v}");
        if v == "absent" {
            let folded = report
                .categories
                .get(category)
                .is_some_and(|c| c.keys().any(|k| k.ends_with("items omitted)")));
            let how = if folded { ", folded in the report" } else { "" };
            not_ok.push(format!(
                "{first} {category}/{item}: absent from its report{how}, not checked"
            ));
        } else if v != "ok" {
            not_ok.push(format!("{first} {category}/{item}: {v}, not ok"));
        }
    }
    not_ok
}

/// Node `node`'s DebuggerReport of the run `run` shows for it, as a
/// summary value: the whole result, not the ConfigMap's shortened value.
async fn report_of(c: &Client, ns: &str, node: &str, run: &Run) -> Result<NodeSummary> {
    let run_at = &run
        .get(node)
        .context("the node is not in the summary")?
        .run_at;
    let reports: Api<DebuggerReport> = Api::namespaced(c.clone(), ns);
    let r = reports
        .get(&report_name(NAME, node))
        .await
        .with_context(|| format!("the report of {node}"))?;
    if &r.spec.run_at != run_at {
        bail!("{node}'s report is of run {}, not {run_at}", r.spec.run_at);
    }
    Ok(r.spec.summary())
}

/// The items ok in `before` and skipped or absent in `after`, on any node:
/// checks that the busy state took away.
fn lost(before: &Run, after: &Run) -> Vec<String> {
    let mut lost = Vec::new();
    for (node, s) in before {
        for (category, items) in &s.categories {
            for item in items.keys() {
                if item.ends_with("items omitted)") || verdict(s, category, item) != "ok" {
                    continue;
                }
                let now = after
                    .get(node)
                    .map_or("absent".to_string(), |a| verdict(a, category, item));
                if now == "absent" || now.starts_with("skip") {
                    lost.push(format!(
                        "{node} {category}/{item}: ok before, {now} on the busy node"
                    ));
                }
            }
        }
    }
    lost
}

/// How far below the check's limit the machine's own busy share may be for
/// an `err cpu:usage` to be excused: the check's window ends a moment
/// before the sampler's.
const CPU_EXCUSE_MARGIN: f64 = 5.0;

/// For an `err` of `cpu:usage` ("CPUs N% busy on average over the Ts
/// since the previous run (limit L%)"), the busy share this machine's CPUs
/// had over those T seconds, when it was within [`CPU_EXCUSE_MARGIN`] of
/// the limit L: the real nodes share this machine, so the item then tells
/// the truth. Every excuse is counted and printed in the suite report.
fn machine_was_busy(cpu: &CpuSampler, item: &str, msg: &str) -> Option<f64> {
    if item != "cpu:usage" {
        return None;
    }
    let seconds: u64 = msg
        .split("over the ")
        .nth(1)?
        .split('s')
        .next()?
        .parse()
        .ok()?;
    let limit: f64 = msg
        .split("(limit ")
        .nth(1)?
        .split('%')
        .next()?
        .parse()
        .ok()?;
    cpu.busy_percent_over(seconds)
        .filter(|busy| *busy >= limit - CPU_EXCUSE_MARGIN)
}

/// What [`judge`] found.
#[derive(Default)]
struct Judged {
    named: u64,
    missed: Vec<String>,
    false_red: Vec<String>,
    /// Red items that told the truth about this machine (the real nodes
    /// share it), with why.
    excused: Vec<String>,
}

/// Faults named, and every `err` that is not one of them or an item of
/// container or pod storage (a false red), with what each node said; an
/// item of [`must_be_ok`] that is red, skipped or absent in the first
/// node's `report` is missed.
fn judge(
    want: &BTreeSet<(String, String, String)>,
    first: &str,
    report: &NodeSummary,
    red: &Run,
    cpu: &CpuSampler,
) -> Judged {
    let mut j = Judged {
        missed: not_ok(first, report),
        ..Judged::default()
    };
    for (node, category, item) in want {
        let v = verdict(&red[node], category, item);
        println!("{AREA}: {node} {category}/{item}: {v}");
        if v.starts_with("err") {
            j.named += 1;
        } else {
            j.missed.push(format!("{node} {category}/{item}: {v}"));
        }
    }
    let false_red = &mut j.false_red;
    for (node, s) in red {
        for (category, item, msg) in s.failed() {
            let key = (node.clone(), category.to_string(), item.to_string());
            if want.contains(&key) {
                continue;
            }
            if let Some(busy) = machine_was_busy(cpu, item, msg) {
                j.excused.push(format!(
                    "{node} {category}/{item} (this machine {busy:.0}% busy over its window)"
                ));
                continue;
            }
            false_red.push(format!("{node} {category}/{item}: {msg}"));
        }
        for item in s.categories.get("disk").into_iter().flat_map(|c| c.keys()) {
            if item.contains("/var/lib/kubelet/") || item.contains("/run/containerd/") {
                false_red.push(format!(
                    "{node} disk/{item}: container or pod storage checked"
                ));
            }
        }
    }
    j
}

#[tokio::test(flavor = "multi_thread")]
async fn a_busy_node_names_each_fault_and_nothing_else() -> Result<()> {
    if !real_cluster_or_skip("a_busy_node_names_each_fault_and_nothing_else") {
        return Ok(());
    }
    install_from_registry();
    let nodes = real_nodes();
    // A node of a real cluster has a default route (the sample has
    // hostNetwork, so the item is the node's), and so have the real nodes
    // here; one without gets one for the test's duration (links.rs).
    let spaces: Vec<String> = nodes.iter().map(|n| real_node_netns(n)).collect();
    let _default_routes = DefaultRoutes::ensure(&spaces)?;
    let ns = namespace("real-busy").await;
    let c = client().await;
    let samples = repo_root().join("config/samples");
    let sample = samples.join("debugger_daemonset_mesh.yaml");
    apply_yaml(&ns.name, &std::fs::read_to_string(sample)?)?;
    pods_ready(&c, &ns.name, NAME).await?;
    let pods: Api<Pod> = Api::namespaced(c.clone(), &ns.name);
    let lp = ListParams::default().labels(&format!("kubecombo.io/debugger={NAME}"));
    let listed = pods.list(&lp).await?.items;
    let on_first =
        |p: &&Pod| p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(&nodes[0]);
    let runner_pod = listed
        .iter()
        .find(on_first)
        .context("no pod on the first node")?;
    let runner_id = runner_container_id(runner_pod)?;
    let image = runner_pod
        .spec
        .as_ref()
        .and_then(|s| s.containers.iter().find(|c| c.name == "runner"))
        .and_then(|c| c.image.clone())
        .context("the runner container has no image")?;

    let cpu_sampler = CpuSampler::start();
    // Baselines (counters, the kernel log's position), then a healthy run.
    run(&c, &ns.name, NAME).await?;
    let healthy = run(&c, &ns.name, NAME).await?;

    // What a busy node has, all of it made after the pods started.
    let _sleepers = Sleepers::start(PROCESSES)?;
    let _storage = Storage::make(OVERLAYS, POD_VOLUMES)?;
    let _oom = OomKilledPod::run(&c, &ns.name, &nodes[0], &image).await?;
    let _resolver = StubResolver::start(&spaces[0], CLUSTER_DNS)?;
    for line in HARMLESS_KMSG {
        std::fs::write("/dev/kmsg", format!("<3>{line}\n"))?;
    }
    // Pressure from starting the processes settles before the run.
    tokio::time::sleep(std::time::Duration::from_secs(15)).await;

    // The busy node alone: no err anywhere, and what it touches named ok.
    let busy = run(&c, &ns.name, NAME).await?;
    let busy_report = report_of(&c, &ns.name, &nodes[0], &busy).await?;
    let on_busy = judge(
        &BTreeSet::new(),
        &nodes[0],
        &busy_report,
        &busy,
        &cpu_sampler,
    );
    let lost = lost(&healthy, &busy);
    let busy_not_ok = &on_busy.missed;
    Case::new(AREA, "busy node items named ok", must_be_ok().len() as u64)
        .done((must_be_ok().len() - busy_not_ok.len()) as u64, 0);
    Case::new(AREA, "busy node items kept", 1).done(u64::from(lost.is_empty()), lost.len() as u64);
    assert!(busy_not_ok.is_empty(), "on the busy node: {busy_not_ok:#?}");
    assert!(
        on_busy.false_red.is_empty(),
        "false red on the busy node: {:#?}",
        on_busy.false_red
    );
    assert!(lost.is_empty(), "checks the busy node took away: {lost:#?}");

    // Real faults: a disk attached after the pods started and filled, and
    // the kernel's fault lines.
    let disk = LoopFs::make()?;
    disk.fill()?;
    for (_, _, line) in fault_kmsg() {
        std::fs::write("/dev/kmsg", format!("<3>{line}\n"))?;
    }

    let cpu_before = container_cpu_seconds(&runner_id)?;
    let red = run(&c, &ns.name, NAME).await?;
    let cpu = container_cpu_seconds(&runner_id)? - cpu_before;
    let runner_pod_name = runner_pod
        .metadata
        .name
        .clone()
        .context("the runner pod has no name")?;
    let costs = script_costs(&ns.name, &runner_pod_name)?;
    let costliest = costs
        .iter()
        .take(3)
        .map(|(c, s)| format!("{s} {c:.2} s"))
        .collect::<Vec<_>>()
        .join(", ");

    let want = expected(&nodes);
    let red_report = report_of(&c, &ns.name, &nodes[0], &red).await?;
    let j = judge(&want, &nodes[0], &red_report, &red, &cpu_sampler);
    Case::new(AREA, "faults named", want.len() as u64).done(j.named, 0);
    Case::new(AREA, "runs without a false red", 1).done(u64::from(j.false_red.is_empty()), 0);
    let excused: Vec<&String> = on_busy.excused.iter().chain(&j.excused).collect();
    let line = format!(
        "production node: faults named {} of {}{}, false red {}, excused {}{}, lost {}, CPU {cpu:.1} s (the first node's runner container, the whole run; costliest scripts, each alone: {costliest})",
        j.named,
        want.len(),
        if fault_kmsg().len() < FAULT_KMSG.len() {
            " (the EDAC line left out: this machine's EDAC counters answer for memory errors)"
        } else {
            ""
        },
        j.false_red.len() + on_busy.false_red.len(),
        excused.len(),
        joined(&excused),
        lost.len(),
    );
    println!("{line}");
    // The suite report prints it as it is (tests/suite-report.sh).
    std::fs::write(
        suite_report_path().with_file_name(NOTE_FILE),
        format!("{line}\n"),
    )?;
    assert!(
        j.missed.is_empty(),
        "faults not named, or items not ok: {:#?}",
        j.missed
    );
    assert!(j.false_red.is_empty(), "false red: {:#?}", j.false_red);
    drop(disk);
    drop(ns);
    Ok(())
}

/// `: a, b` for a non-empty list, nothing for an empty one.
fn joined(items: &[&String]) -> String {
    if items.is_empty() {
        String::new()
    } else {
        format!(
            ": {}",
            items
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

/// Every default script run once more, alone, in the runner container of
/// `pod` on the busy node, on a copy of the state the runner keeps for it
/// (so counters and the kernel log are judged since the run before, as in
/// a run): (CPU seconds of the script and all it started, script),
/// costliest first. The shell's `times` gives its children's CPU so far,
/// read just before and just after each script.
fn script_costs(ns: &str, pod: &str) -> Result<Vec<(f64, String)>> {
    let out = kubectl_ok(&[
        "exec",
        "-n",
        ns,
        pod,
        "-c",
        "runner",
        "--",
        "sh",
        "-c",
        "for s in /scripts/*/*.sh; do case $s in */lib/*) continue ;; esac; \
         d=$(mktemp -d); r=${s#/scripts/}; cp -R \"/var/lib/combo-runner/state/$r/.\" \"$d\" 2>/dev/null; \
         echo \"script $r\"; times; STATE_DIR=$d \"$s\" >/dev/null 2>&1; times; rm -rf \"$d\"; done",
    ])?;
    // Per script: "script <name>", then `times` twice: the shell's own
    // user and system time, then its children's, each "XmY.ZZZs".
    let seconds = |t: &str| -> f64 {
        let (m, s) = t.trim_end_matches('s').split_once('m').unwrap_or(("0", t));
        m.parse::<f64>().unwrap_or(0.0) * 60.0 + s.parse::<f64>().unwrap_or(0.0)
    };
    let children = |line: &str| -> f64 { line.split_whitespace().map(seconds).sum() };
    let lines: Vec<&str> = out.lines().collect();
    let mut costs = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(name) = line.strip_prefix("script ") else {
            continue;
        };
        let (Some(before), Some(after)) = (lines.get(i + 2), lines.get(i + 4)) else {
            bail!("`times` printed no children's time after {name}: {out}");
        };
        costs.push((children(after) - children(before), name.to_string()));
    }
    costs.sort_by(|a, b| b.0.total_cmp(&a.0));
    Ok(costs)
}
