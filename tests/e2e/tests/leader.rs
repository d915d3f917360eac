//! Two operator replicas with `--leader-elect`: exactly one writes; when
//! the leader is SIGKILLed and its pod is gone (as with its node), another
//! replica (the standby, or the pod replacing the leader's, whichever
//! checks first) takes the Lease within the Lease time plus one check,
//! and no replica writes without it. See docs/operator.md, "Leader election".
//! This scales the operator every test shares: cargo runs this binary on
//! its own.

use std::io::{Read as _, Write as _};
use std::time::{Duration, Instant};

use anyhow::{ensure, Context as _, Result};
use combo_api::keys;
use combo_e2e::fixtures::DebuggerBuilder;
use combo_e2e::{
    apply_yaml, client, install_operator, kubectl_ok, namespace, operator_pods, project_process,
    record, running_and_ready, scale_operator, wait_for, OPERATOR_NAMESPACE,
};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Pod;
use kube::{Api, Client, ResourceExt};

const WAIT: Duration = Duration::from_secs(120);
/// Lease duration (15 s) plus a standby's check interval (5 s): the latest
/// a standby may take over after the leader's last renewal.
const HANDOVER: Duration = Duration::from_secs(20);

/// The operator's API writes so far, from its `/metrics` on the pod's
/// address (the metrics server runs on standbys too).
fn writes(ip: &str) -> Result<u64> {
    let mut s = std::net::TcpStream::connect((ip, 8080))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    s.write_all(b"GET /metrics HTTP/1.0\r\nHost: operator\r\n\r\n")?;
    let mut text = String::new();
    s.read_to_string(&mut text)?;
    ensure!(
        text.starts_with("HTTP/1.") && text.contains(" 200 "),
        "metrics: {text}"
    );
    Ok(text
        .lines()
        .filter(|l| l.starts_with("combo_operator_api_writes_total"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64)
}

async fn holder(c: &Client) -> Result<String> {
    let lease = Api::<Lease>::namespaced(c.clone(), OPERATOR_NAMESPACE)
        .get("kube-combo-operator")
        .await?;
    Ok(lease
        .spec
        .and_then(|s| s.holder_identity)
        .unwrap_or_default())
}

fn ip_of(p: &Pod) -> Result<String> {
    p.status
        .as_ref()
        .and_then(|s| s.pod_ip.clone())
        .context("pod IP")
}

/// Pid of the operator process running as pod `name` (its POD_NAME).
fn pid_of(name: &str) -> Option<i32> {
    project_process(
        keys::BIN_OPERATOR,
        &[&format!("{}={name}", keys::env::POD_NAME)],
    )
}

fn debugger(name: &str) -> String {
    DebuggerBuilder::new(name)
        .selector("kubecombo.io/leader-test", "none")
        .yaml()
}

async fn daemonset(c: &Client, ns: &str, name: &str) -> Result<()> {
    wait_for(WAIT, &format!("DaemonSet {name}"), || async {
        Ok(Api::<DaemonSet>::namespaced(c.clone(), ns)
            .get_opt(name)
            .await?
            .is_some())
    })
    .await
}

/// Waits until two operator replicas are Running and Ready.
async fn two_ready(c: &Client, what: &str) -> Result<()> {
    wait_for(WAIT, what, || async {
        Ok(operator_pods(c)
            .await?
            .iter()
            .filter(|p| running_and_ready(p))
            .count()
            == 2)
    })
    .await
}

/// The handover time, and who took the Lease: "the standby" or "the
/// replacement".
async fn two_replicas_one_writer(c: &Client, ns: &str) -> Result<(Duration, &'static str)> {
    scale_operator(2)?;
    two_ready(c, "two Ready operator replicas").await?;
    let pods = operator_pods(c).await?;
    let names: Vec<String> = pods.iter().map(|p| p.name_any()).collect();
    wait_for(WAIT, "a replica holding the Lease", || async {
        Ok(names.contains(&holder(c).await?))
    })
    .await?;
    let leader = holder(c).await?;
    let (lead, standby): (Vec<&Pod>, Vec<&Pod>) = pods.iter().partition(|p| p.name_any() == leader);
    let (lead, standby) = (lead[0], standby[0]);

    apply_yaml(ns, &debugger("before"))?;
    daemonset(c, ns, "before").await?;
    ensure!(writes(&ip_of(lead)?)? > 0, "the leader wrote the workload");
    ensure!(
        writes(&ip_of(standby)?)? == 0,
        "the standby {} wrote nothing",
        standby.name_any()
    );

    let pid = pid_of(&leader).context("the leader's process")?;
    let killed = Instant::now();
    let status = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()?;
    ensure!(status.success(), "kill -KILL {pid}");
    // Its pod goes too, as with its node: restarted in place, the same
    // identity would take its own Lease straight back.
    kubectl_ok(&[
        "delete",
        "pod",
        &leader,
        "-n",
        OPERATOR_NAMESPACE,
        "--grace-period=0",
        "--force",
        "--wait=false",
    ])?;
    // The Deployment replaces the deleted pod at once; the replacement
    // (a new identity) competes for the Lease as well, so the first
    // replica to see it expired takes it: the standby, or the replacement.
    let standby_ip = ip_of(standby)?;
    let deadline = killed + WAIT;
    let taker = loop {
        let now = holder(c).await?;
        if !now.is_empty() && now != leader {
            break now;
        }
        ensure!(
            writes(&standby_ip)? == 0,
            "the standby wrote before it held the Lease"
        );
        ensure!(
            Instant::now() < deadline,
            "no replica took the Lease from the killed leader"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let handover = killed.elapsed();
    apply_yaml(ns, &debugger("after"))?;
    daemonset(c, ns, "after").await?;
    two_ready(c, "two Ready operator replicas again").await?;
    let live = operator_pods(c).await?;
    ensure!(
        live.iter().any(|p| p.name_any() == taker),
        "the Lease went to {taker:?}, which is no live replica"
    );
    for p in &live {
        let n = writes(&ip_of(p)?)?;
        if p.name_any() == taker {
            ensure!(n > 0, "the new leader {taker} writes");
        } else {
            ensure!(n == 0, "{} wrote {n} times without the Lease", p.name_any());
        }
    }
    ensure!(
        handover <= HANDOVER + Duration::from_secs(5),
        "handover took {handover:?}"
    );
    let who = if taker == standby.name_any() {
        "the standby"
    } else {
        "the replacement"
    };
    Ok((handover, who))
}

#[tokio::test(flavor = "multi_thread")]
async fn of_two_replicas_one_writes_and_another_takes_over_when_the_leader_is_killed() -> Result<()>
{
    install_operator();
    let ns = namespace("leader").await;
    let c = client().await;
    let result = two_replicas_one_writer(&c, &ns.name).await;
    let case = match &result {
        Ok((d, who)) => format!(
            "two operator replicas, leader SIGKILLed: handover to {who} after {:.1} s",
            d.as_secs_f64()
        ),
        Err(_) => "two operator replicas, leader SIGKILLed".to_string(),
    };
    eprintln!("{case}");
    record("faults", &case, 1, u64::from(result.is_ok()), 0);
    scale_operator(1)?;
    result.map(drop)
}
