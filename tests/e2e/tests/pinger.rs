//! End-to-end tests of the pinger on the real control plane: a Debugger with
//! a Pinger on every simulated node; the pinger pods ping each other and a
//! target, report loss injected in one node's namespace as `PingFailed`
//! Events and then `ProbeRecovered`, follow Pinger edits without restarting,
//! and serve metrics.

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

use anyhow::{Context as _, Result};
use combo_api::keys;
use combo_e2e::fixtures::{DebuggerBuilder, PingerBuilder};
use combo_e2e::{
    apply_yaml, client, events, install_operator, namespace, node_netns, nodes, project_binary,
    running_and_ready, scrape, wait_for, NftTable,
};
use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use kube::{Api, Client, ResourceExt};

const WAIT: Duration = Duration::from_secs(180);
const METRICS_PORT: u16 = 9465;

fn pinger_yaml(ping: &[&str]) -> String {
    PingerBuilder::new("mesh")
        .metrics(METRICS_PORT)
        .rounds(1, 500, 3)
        .ping(ping)
        .peers(true)
        .max_loss(0)
        .yaml()
}

fn debugger() -> String {
    DebuggerBuilder::new("mesh-check").pinger("mesh").yaml()
}

/// The running, ready pods of the Debugger, by node.
async fn pods_by_node(client: &Client, ns: &str) -> Result<BTreeMap<String, Pod>> {
    let pods = Api::<Pod>::namespaced(client.clone(), ns)
        .list(&ListParams::default().labels(&keys::debugger_selector("mesh-check")))
        .await?;
    Ok(pods
        .into_iter()
        .filter(running_and_ready)
        .filter_map(|p| Some((p.spec.as_ref()?.node_name.clone()?, p)))
        .collect())
}

/// The value of the sample line that starts with `series`.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(series))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

async fn pod_events(client: &Client, ns: &str, pod: &str) -> Result<Vec<(String, String)>> {
    let fields = format!("involvedObject.name={pod}");
    Ok(events(client, ns, &fields)
        .await?
        .into_iter()
        .map(|e| (e.reason.unwrap_or_default(), e.message.unwrap_or_default()))
        .collect())
}

/// Drops `percent` % of the echo requests forwarded through a node's
/// namespace, at random; the table goes when the guard is dropped.
fn random_echo_drop(node: &str, table: &str, percent: u32) -> Result<NftTable> {
    NftTable::load(
        &node_netns(node),
        table,
        &format!(
            "chain lossy {{ type filter hook forward priority 0; icmp type echo-request numgen random mod 100 < {percent} drop; }}"
        ),
    )
}

#[tokio::test]
async fn pinger_pods_ping_their_peers_report_injected_loss_and_follow_pinger_edits() -> Result<()> {
    install_operator();
    let ns = namespace("pinger").await;
    let client = client().await;
    let node_names = nodes();
    apply_yaml(&ns.name, &pinger_yaml(&["127.0.0.1"]))?;
    apply_yaml(&ns.name, &debugger())?;

    wait_for(WAIT, "a ready pinger pod on every node", || async {
        Ok(pods_by_node(&client, &ns.name).await?.len() == node_names.len())
    })
    .await?;
    let pods = pods_by_node(&client, &ns.name).await?;
    let peer_ips: Vec<String> = pods
        .values()
        .filter_map(|p| p.status.as_ref()?.pod_ip.clone())
        .collect();

    // Every pod pings the target and every other pod, and all of it passes.
    for (node, pod) in &pods {
        wait_for(
            WAIT,
            &format!("metrics of {node} show every peer up"),
            || async {
                let text = scrape(pod, METRICS_PORT)?;
                let own = pod.status.as_ref().and_then(|s| s.pod_ip.clone());
                Ok(sample(
                    &text,
                    r#"combo_pinger_target_up{kind="icmp",target="127.0.0.1"}"#,
                ) == Some(1.0)
                    && peer_ips
                        .iter()
                        .filter(|ip| Some(*ip) != own.as_ref())
                        .all(|ip| {
                            sample(
                                &text,
                                // A peer's series may carry its node too.
                                &format!(r#"combo_pinger_target_up{{kind="icmp",target="{ip}""#),
                            ) == Some(1.0)
                        }))
            },
        )
        .await?;
    }

    // Loss in node-1's namespace: its pod's peer rounds fail.
    let lossy_node = &node_names[0];
    let lossy_pod = pods[lossy_node].name_any();
    let rule = random_echo_drop(
        lossy_node,
        &format!("kcpe_{}", ns.name.replace('-', "_")),
        60,
    )?;
    wait_for(
        WAIT,
        "a PingFailed Event on the lossy node's pod",
        || async {
            Ok(pod_events(&client, &ns.name, &lossy_pod)
                .await?
                .iter()
                .any(|(reason, note)| reason == "PingFailed" && note.contains("loss")))
        },
    )
    .await?;
    drop(rule);
    wait_for(
        WAIT,
        "a ProbeRecovered Event on the lossy node's pod",
        || async {
            Ok(pod_events(&client, &ns.name, &lossy_pod)
                .await?
                .iter()
                .any(|(reason, _)| reason == "ProbeRecovered"))
        },
    )
    .await?;

    // A Pinger edit reaches the running pods: same pods, counters not reset.
    let first = pods.values().next().context("a pod")?;
    let before = sample(
        &scrape(first, METRICS_PORT)?,
        r#"combo_pinger_probes_total{kind="icmp",target="127.0.0.1",result="ok"}"#,
    )
    .context("probe counter")?;
    apply_yaml(&ns.name, &pinger_yaml(&["127.0.0.1", "127.0.0.2"]))?;
    wait_for(WAIT, "the new target in the metrics", || async {
        Ok(sample(
            &scrape(first, METRICS_PORT)?,
            r#"combo_pinger_target_up{kind="icmp",target="127.0.0.2"}"#,
        ) == Some(1.0))
    })
    .await?;
    // The new target can come up before the old one's next round (one per
    // second), so wait for the counter to move on rather than read it once.
    // A restarted pinger would have started again from zero.
    let went_back = std::sync::atomic::AtomicBool::new(false);
    wait_for(
        WAIT,
        "the old target's counter going on from where it was",
        || async {
            let after = sample(
                &scrape(first, METRICS_PORT)?,
                r#"combo_pinger_probes_total{kind="icmp",target="127.0.0.1",result="ok"}"#,
            )
            .context("probe counter")?;
            if after < before {
                went_back.store(true, std::sync::atomic::Ordering::SeqCst);
            }
            Ok(after > before)
        },
    )
    .await?;
    assert!(
        !went_back.load(std::sync::atomic::Ordering::SeqCst),
        "the probe counter went back: the pinger restarted"
    );
    let now = pods_by_node(&client, &ns.name).await?;
    for (node, pod) in &pods {
        assert_eq!(
            now.get(node).and_then(|p| p.uid()),
            pod.uid(),
            "pod on {node} was not replaced"
        );
    }
    Ok(())
}

/// A TCP proxy to the API server that the test can cut and restore.
struct ApiProxy {
    addr: std::net::SocketAddr,
    up: std::sync::Arc<std::sync::atomic::AtomicBool>,
    conns: std::sync::Arc<std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>>,
    accept: tokio::task::JoinHandle<()>,
}

impl ApiProxy {
    async fn start(upstream: String) -> Result<Self> {
        use std::sync::atomic::Ordering;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let up = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
        let conns = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (up2, conns2) = (up.clone(), conns.clone());
        let accept = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                if !up2.load(Ordering::SeqCst) {
                    continue; // dropped: the client sees a reset
                }
                let upstream = upstream.clone();
                let task = tokio::spawn(async move {
                    if let Ok(mut outbound) = tokio::net::TcpStream::connect(upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
                conns2.lock().unwrap().push(task);
            }
        });
        Ok(ApiProxy {
            addr,
            up,
            conns,
            accept,
        })
    }

    fn cut(&self) {
        self.up.store(false, std::sync::atomic::Ordering::SeqCst);
        for task in self.conns.lock().unwrap().drain(..) {
            task.abort();
        }
    }

    fn restore(&self) {
        self.up.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Drop for ApiProxy {
    fn drop(&mut self) {
        self.cut();
        self.accept.abort();
    }
}

/// A pinger process run on the test machine; killed on drop.
struct LocalPinger(std::process::Child);

impl Drop for LocalPinger {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn http_metrics(port: u16) -> Result<String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(s, "GET /metrics HTTP/1.1\r\nhost: localhost\r\n\r\n")?;
    let mut out = String::new();
    s.read_to_string(&mut out)?;
    Ok(out)
}

#[tokio::test]
async fn pinger_keeps_probing_while_the_api_server_is_unreachable_and_reconnects() -> Result<()> {
    // The CRDs (the local pinger needs no operator, but its Pinger does).
    install_operator();
    let ns = namespace("pinger-offline").await;
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    // A TCP target that answers until the API server is away, then fails.
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let tcp = listener.local_addr()?.to_string();
    let spec = |targets: &[&str]| {
        PingerBuilder::new("solo")
            .metrics_port(port)
            .rounds(1, 500, 1)
            .peers(false)
            .ping(targets)
            .tcp_ping(&[&tcp])
            .yaml()
    };
    apply_yaml(&ns.name, &spec(&["127.0.0.1"]))?;

    let kubeconfig = std::fs::read_to_string(combo_e2e::kubeconfig())?;
    let server = kubeconfig
        .lines()
        .find_map(|l| l.trim().strip_prefix("server: https://"))
        .context("server in kubeconfig")?
        .to_string();
    let proxy = ApiProxy::start(server.clone()).await?;
    let local_config = std::env::temp_dir().join(format!("{}-kubeconfig", ns.name));
    std::fs::write(
        &local_config,
        kubeconfig.replace(&server, &proxy.addr.to_string()),
    )?;
    let log = std::fs::File::create(std::env::temp_dir().join(format!("{}-pinger.log", ns.name)))?;
    let exe = project_binary("combo-pinger");
    let _pinger = LocalPinger(
        Command::new(&exe)
            .env("KUBECONFIG", &local_config)
            .env("PINGER_NAME", "solo")
            .env("POD_NAMESPACE", &ns.name)
            .env("POD_NAME", "solo-local")
            .env_remove("DEBUGGER_NAME")
            .stdout(std::process::Stdio::null())
            .stderr(log)
            .spawn()
            .with_context(|| exe.display().to_string())?,
    );
    let ok = r#"combo_pinger_probes_total{kind="icmp",target="127.0.0.1",result="ok"}"#;
    wait_for(
        WAIT,
        "the local pinger probing its Pinger's target",
        || async {
            Ok(http_metrics(port)
                .map(|t| sample(&t, ok).is_some())
                .unwrap_or(false))
        },
    )
    .await?;

    let tcp_up = format!(r#"combo_pinger_target_up{{kind="tcp",target="{tcp}"}}"#);
    wait_for(WAIT, "the TCP target up", || async {
        Ok(sample(&http_metrics(port)?, &tcp_up) == Some(1.0))
    })
    .await?;

    proxy.cut();
    drop(listener);
    let before = sample(&http_metrics(port)?, ok).context("counter")?;
    wait_for(
        WAIT,
        "probes going on while the API server is away",
        || async { Ok(sample(&http_metrics(port)?, ok).is_some_and(|n| n >= before + 5.0)) },
    )
    .await?;
    // The TCP target failed meanwhile: the metrics say so at once, and its
    // Warning was due (two failed rounds) while no Event could be written.
    assert_eq!(sample(&http_metrics(port)?, &tcp_up), Some(0.0));

    proxy.restore();
    // The failure seen during the outage is recorded once the API server
    // is back.
    let c = client().await;
    wait_for(
        WAIT,
        "the outage's TcpPingFailed Event after reconnecting",
        || async {
            let fields = "involvedObject.name=solo-local,reason=TcpPingFailed";
            Ok(!events(&c, &ns.name, fields).await?.is_empty())
        },
    )
    .await?;
    apply_yaml(&ns.name, &spec(&["127.0.0.1", "127.0.0.3"]))?;
    wait_for(
        WAIT,
        "the Pinger edit applied after reconnecting",
        || async {
            Ok(sample(
                &http_metrics(port)?,
                r#"combo_pinger_target_up{kind="icmp",target="127.0.0.3"}"#,
            ) == Some(1.0))
        },
    )
    .await?;
    let _ = std::fs::remove_file(local_config);
    Ok(())
}
