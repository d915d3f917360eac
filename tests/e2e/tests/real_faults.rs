//! The fault matrix on real nodes: each fault is injected into this machine or into one real
//! node's namespaces, the next inspection names it with the right item on
//! the right node, and once it is removed the next one is green again.
//! Then the node sample inspects the healthy nodes five times without an
//! `err`. Skipped, with a message, on a cluster without real nodes.
//! What each fault is and how it is made: docs/testing.md, "Fault matrix on real nodes".
//!
//! Every fault is undone by a guard when it drops, so a failing run leaves
//! no mount, interface, cgroup, rule or process behind.

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context as _, Result};
use combo_api::NodeSummary;
use combo_e2e::*;
use combo_testkit::suite::Case;
use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use kube::{Api, Client};

const WAIT: Duration = Duration::from_secs(240);
/// The filesystem the disk faults fill, mounted on the machine and inside
/// the first real node's mount namespace.
const FAULT_MOUNT: &str = "/mnt/kc-fault";
const FAULT_IMAGE: &str = "/tmp/kc-fault-disk.img";
/// The cgroup (v1 memory controller) the OOM kill happens in.
const OOM_CGROUP: &str = "/sys/fs/cgroup/memory/kc-fault-oom";
/// The cluster's DNS server (tests/e2e/realnodes.sh) and the SERVFAIL
/// server's port on the first real node's address.
const CLUSTER_DNS: &str = "172.31.0.1";
const SERVFAIL_PORT: u16 = 5353;
const AREA: &str = "fault matrix";

/// Runs `bash -c script`, failing with its stderr.
fn sh(script: &str) -> Result<String> {
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
fn recorded_pid(name: &str) -> Result<u32> {
    let file = cluster_dir().join("pids").join(format!("{name}.pid"));
    let text = std::fs::read_to_string(&file).with_context(|| file.display().to_string())?;
    Ok(text.trim().parse()?)
}

/// `nsenter` into the mount namespace of real node `i` (its containerd's).
fn in_node_mounts(i: usize, script: &str) -> Result<String> {
    let pid = recorded_pid(&format!("containerd-real-{i}"))?;
    sh(&format!(
        "nsenter --mount=/proc/{pid}/ns/mnt -- bash -c '{script}'"
    ))
}

/// A small ext4 filesystem on a loop device, mounted at [`FAULT_MOUNT`] on
/// the machine (whose mount table the runners read: hostPID shows the
/// machine's PID 1) and in the first node's mount namespace (whose root the
/// runner mounts at /host, so only that node's `df` sees it).
struct LoopFs {
    device: String,
}

impl LoopFs {
    fn make() -> Result<LoopFs> {
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

    fn fill(&self) -> Result<()> {
        // The space file's inode first, then the other inodes (while there is
        // room for their directory entries), then the space.
        sh(&format!(
            "cd {FAULT_MOUNT} && touch fill && for i in $(seq 1 400); do touch f$i 2>/dev/null || break; done; \
             dd if=/dev/zero of=fill bs=64k 2>/dev/null; sync; true"
        ))?;
        sh(&format!("mount -o remount,ro {FAULT_MOUNT}"))?;
        Ok(())
    }

    fn empty(&self) -> Result<()> {
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

/// Two veth pairs in the first node's network namespace: `kcf0` (its link
/// goes down when its peer does) and `kcm0` (its MTU is changed).
struct Links {
    netns: String,
}

impl Links {
    fn make(netns: &str) -> Result<Links> {
        let links = Links {
            netns: netns.to_string(),
        };
        for (a, b) in [("kcf0", "kcf1"), ("kcm0", "kcm1")] {
            sh(&format!(
                "ip -n {netns} link add {a} type veth peer name {b} && \
                 ip -n {netns} link set {a} up && ip -n {netns} link set {b} up"
            ))?;
        }
        Ok(links)
    }

    fn break_them(&self) -> Result<()> {
        let ns = &self.netns;
        sh(&format!(
            "ip -n {ns} link set kcf1 down && ip -n {ns} link set kcm0 mtu 1400"
        ))?;
        Ok(())
    }

    fn mend(&self) -> Result<()> {
        let ns = &self.netns;
        sh(&format!(
            "ip -n {ns} link set kcf1 up && ip -n {ns} link set kcm0 mtu 1500"
        ))?;
        Ok(())
    }
}

impl Drop for Links {
    fn drop(&mut self) {
        let _ = sh(&format!(
            "ip -n {0} link del kcf0; ip -n {0} link del kcm0",
            self.netns
        ));
    }
}

/// A DNS server in a node's network namespace that answers every query,
/// over UDP and TCP, with SERVFAIL; killed when dropped.
struct ServfailServer(Child);

const SERVFAIL_PY: &str = r#"
import socket, sys, threading
addr = (sys.argv[1], int(sys.argv[2]))
def answer(q):
    i = 12
    while i < len(q) and q[i]:
        i += q[i] + 1
    return q[:2] + bytes([0x80 | (q[2] & 0x79), 0x82]) + q[4:6] + bytes(6) + q[12:i + 5]
def tcp():
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(addr); s.listen(16)
    while True:
        c, _ = s.accept()
        try:
            n = int.from_bytes(c.recv(2), 'big'); q = b''
            while len(q) < n:
                q += c.recv(n - len(q))
            a = answer(q); c.sendall(len(a).to_bytes(2, 'big') + a)
        except Exception:
            pass
        c.close()
threading.Thread(target=tcp, daemon=True).start()
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(addr)
while True:
    q, peer = u.recvfrom(4096)
    u.sendto(answer(q), peer)
"#;

impl ServfailServer {
    fn start(netns: &str, ip: &str) -> Result<ServfailServer> {
        let child = Command::new("ip")
            .args(["netns", "exec", netns, "python3", "-c", SERVFAIL_PY, ip])
            .arg(SERVFAIL_PORT.to_string())
            .stdin(Stdio::null())
            .spawn()?;
        Ok(ServfailServer(child))
    }
}

impl Drop for ServfailServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A memory cgroup (v1) with a 32 MiB limit; removed when dropped.
struct OomCgroup;

impl OomCgroup {
    fn kill_one() -> Result<OomCgroup> {
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

/// Kernel log lines of the shared kernel (both real nodes read it).
const KMSG_LINES: [(&str, &str, &str); 6] = [
    (
        "disk",
        "io:loop99",
        "blk_update_request: I/O error, dev loop99, sector 2048 op 0x0:(READ) flags 0x0",
    ),
    (
        "disk",
        "fs:loop99",
        "EXT4-fs error (device loop99): ext4_find_entry:1455: inode #2: comm kc-fault: reading directory lblock 0",
    ),
    (
        "svc",
        "hung-tasks",
        "INFO: task kc-fault:4242 blocked for more than 120 seconds.",
    ),
    (
        "svc",
        "soft-lockups",
        "watchdog: BUG: soft lockup - CPU#0 stuck for 23s! [kc-fault:4242]",
    ),
    (
        "svc",
        "oops",
        "Oops: 0000 [#1] SMP NOPTI (written by the kube-combo fault matrix)",
    ),
    (
        "net",
        "unregister-netdevice",
        "unregister_netdevice: waiting for kcf9 to become free. Usage count = 1",
    ),
];

/// The ConfigMap script that runs the default MTU check on the node's
/// uplink and the test's `kcm0` (veths are not physical interfaces, which
/// the check compares by default).
const MTU_WRAPPER: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: fault-scripts
data:
  mtu.sh: |
    #!/bin/sh
    NET_MTU_IFACES="eth0 kcm0" exec /scripts/net/mtu.sh
"#;

const DEBUGGER: &str = r#"apiVersion: kubecombo.io/v1
kind: Debugger
metadata:
  name: faults
spec:
  workloadType: daemonset
  cpu: 200m
  memory: 256Mi
  enableSys: true
  hostNetwork: true
  enablePinger: false
  enableConfigMap: true
  configMap: fault-scripts
  categories: [disk, net, mem, svc, custom]
  scriptTimeoutSeconds: 60
"#;

/// Waits until one Running and Ready pod of Debugger `name` is on every real node.
async fn pods_ready(c: &Client, ns: &str, name: &str) -> Result<()> {
    let api: Api<Pod> = Api::namespaced(c.clone(), ns);
    let lp = ListParams::default().labels(&format!("kubecombo.io/debugger={name}"));
    let want = real_nodes();
    wait_for(WAIT, "a Ready pod on every real node", || async {
        let pods = api.list(&lp).await?;
        Ok(want.iter().all(|n| {
            pods.items.iter().any(|p| {
                p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(n.as_str())
                    && running_and_ready(p)
            })
        }))
    })
    .await
}

/// A run now, and every node's summary of it.
async fn run(c: &Client, ns: &str, name: &str) -> Result<BTreeMap<String, NodeSummary>> {
    // runAt is to the second: two runs in one second would be one.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let run_at = combo_api::RunId::now().rfc3339();
    set_run_at(c, ns, name, &run_at).await?;
    wait_run_within(c, ns, &format!("{name}-summary"), &run_at, WAIT).await
}

/// `ok`, `err: <message>`, `skip: <reason>` or `absent` for one item.
fn verdict(s: &NodeSummary, category: &str, item: &str) -> String {
    match s.categories.get(category).and_then(|c| c.get(item)) {
        None => "absent".into(),
        Some(r) if r.is_healthy() => "ok".into(),
        Some(r) => match (&r.err, r.skip_reason()) {
            (Some(e), _) => format!("err: {e}"),
            (None, Some(why)) => format!("skip: {why}"),
            (None, None) => "unknown".into(),
        },
    }
}

/// One row of the matrix: a fault, the item that must name it and the
/// nodes that must (the others must stay green for that item).
struct Row {
    fault: &'static str,
    category: &'static str,
    item: String,
    /// The item named on the fault run, when it differs (a kernel-log
    /// item is `io-errors` when green and `io:<device>` when red).
    red_item: Option<String>,
    on: Vec<String>,
}

impl Row {
    fn green_item(&self) -> &str {
        &self.item
    }
    fn red_item(&self) -> &str {
        self.red_item.as_deref().unwrap_or(&self.item)
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn each_fault_is_named_on_its_node_and_cleared_by_the_next_run() -> Result<()> {
    if !real_cluster_or_skip("each_fault_is_named_on_its_node_and_cleared_by_the_next_run") {
        return Ok(());
    }
    install_from_registry();
    let nodes = real_nodes();
    let (one, all) = (vec![nodes[0].clone()], nodes.clone());
    let netns = real_node_netns(&nodes[0]);
    let node_ip = "172.31.0.101";
    let mp = FAULT_MOUNT;

    // What must exist before the pods start: the runner's /host is a copy
    // of the node's mounts taken when its container starts.
    let disk = LoopFs::make()?;
    let links = Links::make(&netns)?;
    let _servfail = ServfailServer::start(&netns, node_ip)?;

    let ns = namespace("real-faults").await;
    let c = client().await;
    apply_yaml(&ns.name, MTU_WRAPPER)?;
    apply_yaml(&ns.name, DEBUGGER)?;
    pods_ready(&c, &ns.name, "faults").await?;

    let row = |fault, category, item: &str, red: Option<&str>, on: &Vec<String>| Row {
        fault,
        category,
        item: item.to_string(),
        red_item: red.map(str::to_string),
        on: on.clone(),
    };
    let mut rows = vec![
        row("filesystem full", "disk", mp, None, &one),
        row("out of inodes", "disk", &format!("inodes:{mp}"), None, &one),
        // The super block's ro flag shows in the machine's mount table,
        // which both nodes' runners read.
        row("read-only remount", "disk", &format!("ro:{mp}"), None, &all),
        row("OOM kill", "mem", "oom-kills", None, &all),
        row("link down", "net", "kcf0", None, &one),
        row("MTU differing", "custom", "mtu:kcm0", None, &one),
    ];
    for transport in ["udp", "tcp"] {
        rows.push(Row {
            fault: "resolver SERVFAIL",
            category: "net",
            item: format!("dns:{CLUSTER_DNS}/{transport}"),
            red_item: None,
            on: one.clone(),
        });
    }
    for (category, item, _) in KMSG_LINES {
        let green = match item {
            i if i.starts_with("io:") => "io-errors",
            i if i.starts_with("fs:") => "fs-errors",
            i => i,
        };
        rows.push(row("kernel log line", category, green, Some(item), &all));
    }
    let case_detected = Case::new(AREA, "detected", rows.len() as u64);
    let case_cleared = Case::new(AREA, "cleared", rows.len() as u64);

    // A first run records the baselines (counters, kernel log position).
    run(&c, &ns.name, "faults").await?;
    let green = run(&c, &ns.name, "faults").await?;

    disk.fill()?;
    links.break_them()?;
    let dns_rule = NftTable::load(
        &netns,
        "kc_fault_dns",
        &format!(
            "chain out {{ type nat hook output priority -100; \
             ip daddr {CLUSTER_DNS} udp dport 53 dnat ip to {node_ip}:{SERVFAIL_PORT}; \
             ip daddr {CLUSTER_DNS} tcp dport 53 dnat ip to {node_ip}:{SERVFAIL_PORT}; }}"
        ),
    )?;
    let oom = OomCgroup::kill_one()?;
    for (_, _, line) in KMSG_LINES {
        std::fs::write("/dev/kmsg", format!("<3>{line}\n"))?;
    }
    let red = run(&c, &ns.name, "faults").await?;

    disk.empty()?;
    links.mend()?;
    drop(dns_rule);
    drop(oom);
    let cleared = run(&c, &ns.name, "faults").await?;

    // The matrix: per row and node, the verdicts of the three runs.
    let mut detected = 0u64;
    let mut mended = 0u64;
    let mut problems = Vec::new();
    for r in &rows {
        let mut found = true;
        let mut gone = true;
        for node in &nodes {
            let before = verdict(&green[node], r.category, r.green_item());
            let during_red = verdict(&red[node], r.category, r.red_item());
            let during_green = verdict(&red[node], r.category, r.green_item());
            let after = verdict(&cleared[node], r.category, r.green_item());
            let faulty = r.on.contains(node);
            println!(
                "{:<20} {:<34} {node}: before {before} | fault {} | after {after}",
                r.fault,
                r.red_item(),
                if faulty { &during_red } else { &during_green },
            );
            // A per-node item may exist on the faulty node only (its
            // interfaces): elsewhere it must not be red.
            let fine = |v: &str| v == "ok" || (!faulty && v == "absent");
            if !fine(&before) {
                found = false;
                problems.push(format!("{node} {}: not green before: {before}", r.item));
            }
            if faulty && !during_red.starts_with("err") {
                found = false;
                problems.push(format!("{node} {}: not named: {during_red}", r.red_item()));
            }
            if !faulty && !fine(&during_green) {
                found = false;
                problems.push(format!(
                    "{node} {}: red on the healthy node: {during_green}",
                    r.item
                ));
            }
            // A kernel-log fault named by device must be gone, not repeated.
            let stale = r.red_item() != r.green_item()
                && verdict(&cleared[node], r.category, r.red_item()) != "absent";
            if !fine(&after) || stale {
                gone = false;
                problems.push(format!("{node} {}: not green after: {after}", r.item));
            }
        }
        detected += u64::from(found);
        mended += u64::from(found && gone);
    }
    case_detected.done(detected, 0);
    case_cleared.done(mended, 0);
    println!(
        "fault matrix: detected {detected} of {n}, cleared {mended} of {n}",
        n = rows.len()
    );
    assert!(problems.is_empty(), "fault matrix: {problems:#?}");
    drop(ns);
    Ok(())
}

const HEALTHY_RUNS: u64 = 5;

#[tokio::test(flavor = "multi_thread")]
async fn the_node_sample_finds_no_err_on_healthy_real_nodes_in_five_runs() -> Result<()> {
    if !real_cluster_or_skip("the_node_sample_finds_no_err_on_healthy_real_nodes_in_five_runs") {
        return Ok(());
    }
    install_from_registry();
    let ns = namespace("real-healthy").await;
    let c = client().await;
    let samples = repo_root().join("config/samples");
    for file in ["pinger.yaml", "debugger_daemonset.yaml"] {
        apply_yaml(&ns.name, &std::fs::read_to_string(samples.join(file))?)?;
    }
    let name = "node-check";
    pods_ready(&c, &ns.name, name).await?;
    let case = Case::new(AREA, "healthy runs", HEALTHY_RUNS);
    let mut red_runs = 0u64;
    let mut reds = Vec::new();
    for k in 1..=HEALTHY_RUNS {
        let summary = run(&c, &ns.name, name).await?;
        let mut red = false;
        for (node, s) in &summary {
            for (cat, item, msg) in s.failed() {
                red = true;
                reds.push(format!("run {k} {node} {cat}/{item}: {msg}"));
            }
        }
        red_runs += u64::from(red);
    }
    case.done(HEALTHY_RUNS - red_runs, 0);
    println!("red on healthy nodes {red_runs} in {HEALTHY_RUNS} runs");
    assert!(reds.is_empty(), "err items on healthy nodes: {reds:#?}");
    Ok(())
}
