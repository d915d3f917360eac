//! Real peers over the CNI bridge: the pinger is unprivileged, and a peer
//! made unreachable by an nftables rule gives `PingFailed`, then
//! `ProbeRecovered` once the rule is gone.

use anyhow::{Context as _, Result};
use combo_e2e::{events, real_node_netns, real_nodes, wait_for, NftTable};
use k8s_openapi::api::core::v1::Pod;
use kube::{Client, ResourceExt};

use crate::helpers::{start, Started, WAIT};

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

/// Whether an Event of `reason` about `pod` names `peer`.
async fn event_names(c: &Client, ns: &str, pod: &str, reason: &str, peer: &str) -> Result<bool> {
    let fields = format!("involvedObject.name={pod},reason={reason}");
    Ok(events(c, ns, &fields)
        .await?
        .iter()
        .any(|e| e.message.as_deref().is_some_and(|m| m.contains(peer))))
}

/// The pinger container of `pod` runs as a non-root user with no
/// capability (the pod's ping_group_range lets it open ICMP sockets),
/// nothing privileged: in its spec, and in what the kernel says of the
/// running process.
fn assert_unprivileged_pinger(pod: &Pod) -> Result<()> {
    let spec = pod.spec.as_ref().context("spec")?;
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
    let name = pod.metadata.name.clone().context("name")?;
    let (uid, caps) = process_of("combo-pinger", &name)?;
    assert_eq!(uid, "65532", "the pinger process runs as 65532");
    assert_eq!(caps, "0000000000000000", "no effective capability");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_peer_dropped_by_nftables_gives_ping_failed_then_probe_recovered() -> Result<()> {
    let test = "a_peer_dropped_by_nftables_gives_ping_failed_then_probe_recovered";
    let Some(Started { ns, c, pods }) =
        start(test, "real-ping", "x", "mesh", false, Some("peers")).await?
    else {
        return Ok(());
    };
    let nodes = real_nodes();
    let (prober, target) = (&pods[&nodes[0]], &pods[&nodes[1]]);
    let target_ip = target
        .status
        .as_ref()
        .and_then(|s| s.pod_ip.clone())
        .context("peer IP")?;
    assert_unprivileged_pinger(prober)?;

    let netns = real_node_netns(&nodes[1]);
    let guard = NftTable::drop_echo_requests_to(&netns, "kc_test", &target_ip)?;
    let prober = prober.name_any();
    wait_for(WAIT, "PingFailed naming the dropped peer", || {
        event_names(&c, &ns.name, &prober, "PingFailed", &target_ip)
    })
    .await?;
    drop(guard);
    wait_for(WAIT, "ProbeRecovered for the peer", || {
        event_names(&c, &ns.name, &prober, "ProbeRecovered", &target_ip)
    })
    .await?;
    Ok(())
}
