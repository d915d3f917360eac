//! kube-combo as a user runs it: its own container images, pulled from a
//! registry by real kubelets with containerd (`cluster.sh up --nodes 0
//! --real 2`), installed with `kubectl apply -k` of an overlay of
//! `config/default`, driven through `kubectl combo`, `kubectl exec` and
//! `kubectl logs`. Skipped, with a message, on a cluster without real nodes.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{bail, Context as _, Result};
use combo_api::{Category, NodeSummary};
use combo_e2e::fixtures::{ConfigMapBuilder, DebuggerBuilder, PingerBuilder};
use combo_e2e::*;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Pod};
use kube::{Api, Client, ResourceExt};

const WAIT: Duration = Duration::from_secs(180);

fn scripts_configmap(message: &str) -> String {
    ConfigMapBuilder::new("scripts")
        .entry(
            "planned.sh",
            &format!(
                "#!/bin/sh\necho \"ok reached-$NODE_NAME\"\necho \"err planned {message} on $NODE_NAME\"\n"
            ),
        )
        .yaml()
}

fn debugger_yaml(name: &str, enable_sys: bool, pinger: Option<&str>) -> String {
    let d = DebuggerBuilder::new(name)
        .cpu("100m")
        .memory("128Mi")
        .enable_sys(enable_sys)
        .scripts("scripts")
        .categories(&[
            Category::Disk,
            Category::Net,
            Category::Mem,
            Category::Svc,
            Category::Custom,
        ])
        .script_timeout(30);
    match pinger {
        Some(p) => d.pinger(p),
        None => d,
    }
    .yaml()
}

fn pinger_yaml(name: &str) -> String {
    PingerBuilder::new(name)
        .rounds(1, 500, 1)
        .ping(&[])
        .peers(true)
        .gateway(false)
        .yaml()
}

/// `kubectl combo run` and the run it asked for (its run-now annotation).
fn combo_run(ns: &str, name: &str) -> Result<String> {
    let out = kubectl_combo(&["run", name, "-n", ns]);
    if !out.status.success() {
        bail!(
            "kubectl combo run: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    kubectl_ok(&[
        "get",
        "dbg",
        name,
        "-n",
        ns,
        "-o",
        "jsonpath={.metadata.annotations.kubecombo\\.io/run-now}",
    ])
}

/// Waits until every real node's key of the summary ConfigMap records `run_at`.
async fn wait_summary(
    c: &Client,
    ns: &str,
    name: &str,
    run_at: &str,
) -> Result<BTreeMap<String, NodeSummary>> {
    let api: Api<ConfigMap> = Api::namespaced(c.clone(), ns);
    let cm = format!("{name}-summary");
    let read = || async {
        let data = api
            .get_opt(&cm)
            .await?
            .and_then(|c| c.data)
            .unwrap_or_default();
        let mut out = BTreeMap::new();
        for (node, value) in data {
            out.insert(node, NodeSummary::from_yaml(&value)?);
        }
        anyhow::Ok(out)
    };
    let want = real_nodes();
    wait_for(
        WAIT,
        &format!("every real node's summary of {run_at}"),
        || async {
            let s = read().await?;
            Ok(want
                .iter()
                .all(|n| s.get(n).is_some_and(|v| v.run_at == run_at)))
        },
    )
    .await?;
    read().await
}

fn exec(ns: &str, pod: &str, container: &str, script: &str) -> Result<String> {
    kubectl_ok(&[
        "exec", "-n", ns, pod, "-c", container, "--", "sh", "-c", script,
    ])
}

fn restart_counts(pod: &Pod) -> Vec<i32> {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .map(|cs| cs.iter().map(|c| c.restart_count).collect())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_inspection_on_real_nodes_is_read_with_kubectl_combo_exec_and_logs() -> Result<()> {
    if !real_cluster_or_skip("an_inspection_on_real_nodes_is_read_with_kubectl_combo_exec_and_logs")
    {
        return Ok(());
    }
    install_from_registry();
    let ns = namespace("real-run").await;
    let c = client().await;
    apply_yaml(&ns.name, &scripts_configmap("first"))?;
    apply_yaml(&ns.name, &pinger_yaml("mesh"))?;
    apply_yaml(&ns.name, &debugger_yaml("check", false, Some("mesh")))?;
    let pods = pods_on_every_real_node(&c, WAIT, &ns.name, "check").await?;

    let run_at = combo_run(&ns.name, "check")?;
    let summary = wait_summary(&c, &ns.name, "check", &run_at).await?;
    for (node, s) in &summary {
        let failed: Vec<_> = s.failed().collect();
        assert!(
            failed
                .iter()
                .any(|(cat, _, msg)| *cat == "custom" && msg.contains(&format!("first on {node}"))),
            "{node}: the ConfigMap script's planned failure is in the summary: {failed:?}"
        );
    }

    let table = kubectl_combo(&["summary", "check", "-n", &ns.name]);
    let table = String::from_utf8_lossy(&table.stdout);
    for node in real_nodes() {
        assert!(
            table.contains(&format!("first on {node}")),
            "summary table names {node}: {table}"
        );
    }

    // The errlog, read by the plugin through the kubelet's exec.
    let node = real_nodes()[0].clone();
    let out = kubectl_combo(&[
        "errlog",
        "check",
        "-n",
        &ns.name,
        "--node",
        &node,
        "--category",
        "custom",
    ]);
    assert!(
        out.status.success(),
        "kubectl combo errlog: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let errlog = String::from_utf8_lossy(&out.stdout);
    assert!(
        errlog.contains(&format!("first on {node}")),
        "errlog of {node}: {errlog}"
    );

    // Both containers' logs, through the kubelet.
    let pod = pods[&node].name_any();
    for container in ["runner", "pinger"] {
        let logs = kubectl_ok(&["logs", "-n", &ns.name, &pod, "-c", container])?;
        assert!(
            !logs.trim().is_empty(),
            "kubectl logs -c {container} prints the container's output"
        );
    }

    // A script edit reaches the running pods through the kubelet's volume
    // update; the next run uses it; nothing restarts.
    apply_yaml(&ns.name, &scripts_configmap("second"))?;
    let want = "planned second on";
    // Every node's kubelet refreshes its own volumes, each on its own
    // schedule: wait for all of them before the run.
    wait_for(
        WAIT,
        "the edited script in every runner's /scripts/custom",
        || async {
            for p in pods.values() {
                let script = exec(
                    &ns.name,
                    &p.name_any(),
                    "runner",
                    "cat /scripts/custom/planned.sh",
                )?;
                if !script.contains(want) {
                    return Ok(false);
                }
            }
            Ok(true)
        },
    )
    .await?;
    let run_at = combo_run(&ns.name, "check")?;
    let summary = wait_summary(&c, &ns.name, "check", &run_at).await?;
    for (node, s) in &summary {
        assert!(
            s.failed()
                .any(|(_, _, msg)| msg.contains(&format!("second on {node}"))),
            "{node}: the next run used the edited script"
        );
    }
    // A Pinger change reaches the running pingers live.
    let changes = |pod: &str| {
        pod_log(&ns.name, pod, "pinger")
            .matches("settings changed")
            .count()
    };
    let before: BTreeMap<String, usize> = pods
        .values()
        .map(|p| (p.name_any(), changes(&p.name_any())))
        .collect();
    kubectl_ok(&[
        "patch",
        "pinger",
        "mesh",
        "-n",
        &ns.name,
        "--type=merge",
        "-p",
        r#"{"spec":{"intervalSeconds":2,"timeoutMs":700}}"#,
    ])?;
    wait_for(WAIT, "every pinger applying the changed Pinger", || async {
        Ok(before.iter().all(|(pod, n)| changes(pod) > *n))
    })
    .await?;

    let api: Api<Pod> = Api::namespaced(c.clone(), &ns.name);
    for (node, pod) in pods {
        let now = api.get(&pod.name_any()).await?;
        assert_eq!(
            now.metadata.uid, pod.metadata.uid,
            "{node}: the pod was not replaced by the script edit, the run requests or the Pinger"
        );
        assert!(
            restart_counts(&now).iter().all(|r| *r == 0),
            "{node}: no container restarted ({:?})",
            restart_counts(&now)
        );
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn without_enable_sys_the_runner_is_unprivileged_with_its_own_processes_and_limits(
) -> Result<()> {
    if !real_cluster_or_skip(
        "without_enable_sys_the_runner_is_unprivileged_with_its_own_processes_and_limits",
    ) {
        return Ok(());
    }
    install_from_registry();
    let ns = namespace("real-nosys").await;
    let c = client().await;
    apply_yaml(&ns.name, &scripts_configmap("x"))?;
    apply_yaml(&ns.name, &debugger_yaml("plain", false, None))?;
    let pods = pods_on_every_real_node(&c, WAIT, &ns.name, "plain").await?;
    for (node, pod) in pods {
        // The pod as the kubelet runs it: no host namespace, no host mount,
        // no privileged container.
        let spec = pod.spec.as_ref().context("spec")?;
        assert_ne!(spec.host_pid, Some(true), "{node}: no hostPID");
        assert_ne!(spec.host_ipc, Some(true), "{node}: no hostIPC");
        assert_ne!(spec.host_network, Some(true), "{node}: no hostNetwork");
        let host_paths: Vec<_> = spec
            .volumes
            .iter()
            .flatten()
            .filter(|v| v.host_path.is_some())
            .map(|v| v.name.clone())
            .collect();
        assert!(host_paths.is_empty(), "{node}: host mounts {host_paths:?}");
        for c in &spec.containers {
            let sc = c.security_context.as_ref();
            assert_ne!(
                sc.and_then(|s| s.privileged),
                Some(true),
                "{node}: container {} privileged",
                c.name
            );
            assert_eq!(
                sc.and_then(|s| s.allow_privilege_escalation),
                Some(false),
                "{node}: container {} may escalate",
                c.name
            );
        }
        let pod = pod.name_any();
        let caps = exec(&ns.name, &pod, "runner", "grep CapEff /proc/self/status")?;
        let eff = u64::from_str_radix(caps.split_whitespace().nth(1).context("CapEff")?, 16)?;
        const CAP_SYS_ADMIN: u64 = 1 << 21;
        assert_eq!(
            eff & CAP_SYS_ADMIN,
            0,
            "{node}: the runner has no CAP_SYS_ADMIN ({caps})"
        );
        // The runner itself (PID 1): user 65532, no capability, and the
        // errlog directories of its image are its own.
        let status = exec(
            &ns.name,
            &pod,
            "runner",
            "grep -E '^(Uid|CapEff):' /proc/1/status",
        )?;
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .map(|v| v.split_whitespace().collect::<Vec<_>>().join(" "))
        };
        assert_eq!(
            field("Uid:").as_deref(),
            Some("65532 65532 65532 65532"),
            "{node}: the runner runs as 65532: {status}"
        );
        assert_eq!(
            field("CapEff:").as_deref(),
            Some("0000000000000000"),
            "{node}: the runner has no capability: {status}"
        );
        let writable = exec(
            &ns.name,
            &pod,
            "runner",
            "for d in /scripts/disk/errlog /scripts/net/errlog /scripts/mem/errlog /scripts/svc/errlog /scripts/errlog; do test -w $d && echo yes || echo \"no $d\"; done",
        )?;
        assert_eq!(
            writable.split_whitespace().collect::<Vec<_>>(),
            ["yes"; 5],
            "{node}: errlog directories writable by the runner: {writable}"
        );
        let init = exec(&ns.name, &pod, "runner", "tr '\\0' ' ' </proc/1/cmdline")?;
        assert!(
            init.contains("combo-runner"),
            "{node}: PID 1 is the runner itself, not the host's init: {init}"
        );
        let host = exec(
            &ns.name,
            &pod,
            "runner",
            "test -e /host/etc && echo present || echo absent",
        )?;
        assert_eq!(
            host.trim(),
            "absent",
            "{node}: no host root without enableSys"
        );
        let svc = exec(&ns.name, &pod, "runner", "sh /scripts/svc/systemd.sh")?;
        assert!(
            svc.contains("PID 1 of / is combo-runner"),
            "{node}: without enableSys the svc check sees only the container: {svc}"
        );
        let entered = exec(
            &ns.name,
            &pod,
            "runner",
            "nsenter --target 1 --mount -- true 2>/dev/null && echo entered || echo refused",
        )?;
        assert_eq!(
            entered.trim(),
            "refused",
            "{node}: no way into other namespaces without enableSys"
        );
        // requests = limits = 100m / 128Mi, in the container's cgroup (v1).
        let mem = exec(
            &ns.name,
            &pod,
            "runner",
            "cat /sys/fs/cgroup/memory/memory.limit_in_bytes",
        )?;
        assert_eq!(
            mem.trim(),
            (128u64 << 20).to_string(),
            "{node}: memory limit"
        );
        let quota = exec(
            &ns.name,
            &pod,
            "runner",
            "cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/cpu/cpu.shares",
        )?;
        assert_eq!(
            quota.split_whitespace().collect::<Vec<_>>(),
            ["10000", "102"],
            "{node}: cpu limit and request"
        );
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn with_enable_sys_scripts_see_the_node_through_host_and_host_pid() -> Result<()> {
    if !real_cluster_or_skip("with_enable_sys_scripts_see_the_node_through_host_and_host_pid") {
        return Ok(());
    }
    install_from_registry();
    let ns = namespace("real-sys").await;
    let c = client().await;
    apply_yaml(&ns.name, &scripts_configmap("x"))?;
    apply_yaml(&ns.name, &debugger_yaml("sys", true, None))?;
    let pods = pods_on_every_real_node(&c, WAIT, &ns.name, "sys").await?;
    let machine_id = std::fs::read_to_string("/etc/os-release")?;
    let host_init = std::fs::read_to_string("/proc/1/comm")?.trim().to_string();
    let host_name = std::fs::read_to_string("/proc/sys/kernel/hostname")?;
    for (node, pod) in pods {
        let pod = pod.name_any();
        let seen = exec(&ns.name, &pod, "runner", "cat /host/etc/os-release")?;
        assert_eq!(
            seen, machine_id,
            "{node}: /host is the node's root filesystem"
        );
        // With enableSys the runner is root in a privileged container.
        let uid = exec(&ns.name, &pod, "runner", "id -u")?;
        assert_eq!(uid.trim(), "0", "{node}: the privileged runner is root");
        let init = exec(&ns.name, &pod, "runner", "tr '\\0' ' ' </proc/1/cmdline")?;
        assert!(
            !init.contains("combo-runner"),
            "{node}: with hostPID, PID 1 is the host's: {init}"
        );
        let ps = exec(&ns.name, &pod, "runner", "ls /proc | grep -c '^[0-9]'")?;
        assert!(
            ps.trim().parse::<u32>()? > 20,
            "{node}: the host's processes are visible ({ps})"
        );
        // The svc check reaches the host: it reads the host's PID 1 through
        // /host and enters a host process's namespaces the way it calls
        // systemctl there. This machine's PID 1 is not systemd, so the
        // check reports that and no item, as documented in
        // docs/runner.md, "Default scripts (`scripts/`)";
        // and it refuses nsenter even to the machine's root, so the entry
        // is tried on the node's kubelet, a host process seen through
        // hostPID.
        let svc = exec(&ns.name, &pod, "runner", "sh /scripts/svc/systemd.sh")?;
        assert!(
            svc.contains(&format!("PID 1 of /host is {host_init}")),
            "{node}: the svc check reads the host's PID 1 ({host_init}): {svc}"
        );
        let entered = exec(
            &ns.name,
            &pod,
            "runner",
            "nsenter --target \"$(pgrep -o -x kubelet)\" --mount --uts --ipc --net --pid -- cat /proc/sys/kernel/hostname",
        )?;
        assert_eq!(
            entered.trim(),
            host_name.trim(),
            "{node}: nsenter reaches a host process's namespaces"
        );
    }
    Ok(())
}

/// The real user id and effective capabilities (`CapEff`, hex) of the
/// process running `binary` for pod `pod`, read from /proc on this machine
/// (the real nodes' containers are its processes).
fn process_of(binary: &str, pod: &str) -> Result<(String, String)> {
    for entry in std::fs::read_dir("/proc")? {
        let dir = entry?.path();
        let Ok(cmdline) = std::fs::read(dir.join("cmdline")) else {
            continue;
        };
        if !String::from_utf8_lossy(&cmdline).contains(binary) {
            continue;
        }
        let environ = std::fs::read(dir.join("environ")).unwrap_or_default();
        let wanted = format!("POD_NAME={pod}");
        if !environ.split(|b| *b == 0).any(|v| v == wanted.as_bytes()) {
            continue;
        }
        let status = std::fs::read_to_string(dir.join("status"))?;
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .map(|v| v.split_whitespace().next().unwrap_or("").to_string())
        };
        return Ok((
            field("Uid:").context("Uid")?,
            field("CapEff:").context("CapEff")?,
        ));
    }
    anyhow::bail!("no {binary} process of pod {pod}")
}

async fn events_of(c: &Client, ns: &str, pod: &str, reason: &str) -> Result<Vec<Event>> {
    events(c, ns, &format!("involvedObject.name={pod},reason={reason}")).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_peer_dropped_by_nftables_gives_ping_failed_then_probe_recovered() -> Result<()> {
    if !real_cluster_or_skip("a_peer_dropped_by_nftables_gives_ping_failed_then_probe_recovered") {
        return Ok(());
    }
    install_from_registry();
    let ns = namespace("real-ping").await;
    let c = client().await;
    apply_yaml(&ns.name, &scripts_configmap("x"))?;
    apply_yaml(&ns.name, &pinger_yaml("peers"))?;
    apply_yaml(&ns.name, &debugger_yaml("mesh", false, Some("peers")))?;
    let pods = pods_on_every_real_node(&c, WAIT, &ns.name, "mesh").await?;
    let nodes = real_nodes();
    let (prober, target) = (&pods[&nodes[0]], &pods[&nodes[1]]);
    let target_ip = target
        .status
        .as_ref()
        .and_then(|s| s.pod_ip.clone())
        .context("peer IP")?;

    // The pinger container runs as a non-root user with no capability (the
    // pod's ping_group_range lets it open ICMP sockets), nothing privileged.
    let spec = prober.spec.as_ref().context("spec")?;
    let pinger = spec
        .containers
        .iter()
        .find(|c| c.name == "pinger")
        .context("pinger container")?;
    let sc = pinger
        .security_context
        .as_ref()
        .context("pinger securityContext")?;
    assert_ne!(sc.privileged, Some(true));
    let added = sc
        .capabilities
        .as_ref()
        .and_then(|c| c.add.clone())
        .unwrap_or_default();
    assert!(added.is_empty(), "the pinger adds no capability: {added:?}");
    assert_eq!(sc.run_as_non_root, Some(true));
    // What the kernel says of the running process, not just the spec.
    let prober_name = prober.metadata.name.clone().context("name")?;
    let (uid, caps) = process_of("combo-pinger", &prober_name)?;
    assert_eq!(uid, "65532", "the pinger process runs as 65532");
    assert_eq!(caps, "0000000000000000", "no effective capability");

    let netns = real_node_netns(&nodes[1]);
    let guard = NftTable::drop_echo_requests_to(&netns, "kc_test", &target_ip)?;
    let prober_name = prober.name_any();
    wait_for(WAIT, "PingFailed naming the dropped peer", || async {
        Ok(events_of(&c, &ns.name, &prober_name, "PingFailed")
            .await?
            .iter()
            .any(|e| e.message.as_deref().is_some_and(|m| m.contains(&target_ip))))
    })
    .await?;
    drop(guard);
    wait_for(WAIT, "ProbeRecovered for the peer", || async {
        Ok(events_of(&c, &ns.name, &prober_name, "ProbeRecovered")
            .await?
            .iter()
            .any(|e| e.message.as_deref().is_some_and(|m| m.contains(&target_ip))))
    })
    .await?;
    Ok(())
}
