//! What the runner may do on a real node: without `enableSys` it is an
//! unprivileged process of its own container, within its cpu and memory;
//! with it, scripts see the node through `/host` and hostPID.

use anyhow::{Context as _, Result};
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;

use crate::helpers::{in_runner, start, Started};

/// `text`'s words, each separated from the next by one space.
fn words(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Fails unless, for each (script, answer, what) of `checks`, `sh -c
/// script` in the runner of `pod` prints the words of `answer`.
fn assert_answers(ns: &str, node: &str, pod: &str, checks: &[(&str, &str, &str)]) -> Result<()> {
    for (script, answer, what) in checks {
        let out = in_runner(ns, pod, script)?;
        assert_eq!(words(&out), *answer, "{node}: {what}: {out}");
    }
    Ok(())
}

/// The pod as the kubelet runs it: no host namespace, no host mount, no
/// privileged container.
fn assert_unprivileged_spec(node: &str, pod: &Pod) -> Result<()> {
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
    Ok(())
}

/// The runner itself (PID 1): no CAP_SYS_ADMIN, user 65532, no
/// capability, and the errlog directories of its image are its own.
fn assert_unprivileged_runner(ns: &str, node: &str, pod: &str) -> Result<()> {
    let caps = in_runner(ns, pod, "grep CapEff /proc/self/status")?;
    let eff = u64::from_str_radix(caps.split_whitespace().nth(1).context("CapEff")?, 16)?;
    const CAP_SYS_ADMIN: u64 = 1 << 21;
    assert_eq!(
        eff & CAP_SYS_ADMIN,
        0,
        "{node}: the runner has no CAP_SYS_ADMIN ({caps})"
    );
    let status = in_runner(ns, pod, "grep -E '^(Uid|CapEff):' /proc/1/status")?;
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
    assert_answers(ns, node, pod, &[(
        "for d in /scripts/disk/errlog /scripts/net/errlog /scripts/mem/errlog /scripts/svc/errlog /scripts/errlog; do test -w $d && echo yes || echo \"no $d\"; done",
        "yes yes yes yes yes",
        "errlog directories writable by the runner",
    )])
}

#[tokio::test(flavor = "multi_thread")]
async fn without_enable_sys_the_runner_is_unprivileged_with_its_own_processes_and_limits(
) -> Result<()> {
    let test = "without_enable_sys_the_runner_is_unprivileged_with_its_own_processes_and_limits";
    let Some(Started { ns, pods, .. }) =
        start(test, "real-nosys", "x", "plain", false, None).await?
    else {
        return Ok(());
    };
    let ns = ns.name.as_str();
    let memory_limit = (128u64 << 20).to_string();
    for (node, pod) in pods {
        assert_unprivileged_spec(&node, &pod)?;
        let pod = pod.name_any();
        assert_unprivileged_runner(ns, &node, &pod)?;
        let init = in_runner(ns, &pod, "tr '\\0' ' ' </proc/1/cmdline")?;
        assert!(
            init.contains("combo-runner"),
            "{node}: PID 1 is the runner itself, not the host's init: {init}"
        );
        let svc = in_runner(ns, &pod, "sh /scripts/svc/systemd.sh")?;
        assert!(
            svc.contains("PID 1 of / is combo-runner"),
            "{node}: without enableSys the svc check sees only the container: {svc}"
        );
        assert_answers(ns, &node, &pod, &[
            (
                "test -e /host/etc && echo present || echo absent",
                "absent",
                "no host root without enableSys",
            ),
            (
                "nsenter --target 1 --mount -- true 2>/dev/null && echo entered || echo refused",
                "refused",
                "no way into other namespaces without enableSys",
            ),
            // requests = limits = 100m / 128Mi, in the container's cgroup (v1).
            (
                "cat /sys/fs/cgroup/memory/memory.limit_in_bytes",
                &memory_limit,
                "memory limit",
            ),
            (
                "cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/cpu/cpu.shares",
                "10000 102",
                "cpu limit and request",
            ),
        ])?;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn with_enable_sys_scripts_see_the_node_through_host_and_host_pid() -> Result<()> {
    let test = "with_enable_sys_scripts_see_the_node_through_host_and_host_pid";
    let Some(Started { ns, pods, .. }) = start(test, "real-sys", "x", "sys", true, None).await?
    else {
        return Ok(());
    };
    let ns = ns.name.as_str();
    let machine_id = std::fs::read_to_string("/etc/os-release")?;
    let host_init = std::fs::read_to_string("/proc/1/comm")?.trim().to_string();
    let host_name = std::fs::read_to_string("/proc/sys/kernel/hostname")?;
    for (node, pod) in pods {
        let pod = pod.name_any();
        let seen = in_runner(ns, &pod, "cat /host/etc/os-release")?;
        assert_eq!(
            seen, machine_id,
            "{node}: /host is the node's root filesystem"
        );
        // With enableSys the runner is root in a privileged container.
        let uid = in_runner(ns, &pod, "id -u")?;
        assert_eq!(uid.trim(), "0", "{node}: the privileged runner is root");
        let init = in_runner(ns, &pod, "tr '\\0' ' ' </proc/1/cmdline")?;
        assert!(
            !init.contains("combo-runner"),
            "{node}: with hostPID, PID 1 is the host's: {init}"
        );
        let ps = in_runner(ns, &pod, "ls /proc | grep -c '^[0-9]'")?;
        assert!(
            ps.trim().parse::<u32>()? > 20,
            "{node}: the host's processes are visible ({ps})"
        );
        assert_answers(ns, &node, &pod, &[
            (
                "for t in smartctl dmidecode arping; do command -v $t >/dev/null && echo $t || echo no-$t; done",
                "smartctl dmidecode arping",
                "the tools the checks name are in the runner image (docs/checks.md)",
            ),
            (
                "test -d \"/host/var/lib/kube-combo/$POD_NAMESPACE/$DEBUGGER_NAME/$DEBUGGER_UID/state\" && echo on-node || echo missing",
                "on-node",
                "the state root is the Debugger's directory on the node",
            ),
        ])?;
        // The svc check reaches the host: it reads the host's PID 1 through
        // /host and enters a host process's namespaces the way it calls
        // systemctl there. This machine's PID 1 is not systemd, so the
        // check reports that and no item, as documented in
        // docs/runner.md, "Default scripts (`scripts/`)";
        // and it refuses nsenter even to the machine's root, so the entry
        // is tried on the node's kubelet, a host process seen through
        // hostPID.
        let svc = in_runner(ns, &pod, "sh /scripts/svc/systemd.sh")?;
        assert!(
            svc.contains(&format!("PID 1 of /host is {host_init}")),
            "{node}: the svc check reads the host's PID 1 ({host_init}): {svc}"
        );
        let entered = in_runner(
            ns,
            &pod,
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
