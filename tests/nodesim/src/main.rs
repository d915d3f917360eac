//! `combo-nodesim`: the kubelet's part for the simulated nodes of the
//! end-to-end test cluster (tests/e2e/cluster.sh). Pods of the project's
//! images run as local processes from the project build (release or
//! debug), each in its own network namespace behind its node's, with their
//! volumes mounted and their ServiceAccount token as credentials.

mod env;
mod image;
mod kubelet;
mod netns;
mod nodes;
mod process;
mod status;
mod volumes;

use std::path::PathBuf;

use anyhow::{Context as _, Result};
use clap::Parser;
use kube::config::{KubeConfigOptions, Kubeconfig};

/// Simulated kubelet for kube-combo's end-to-end tests.
#[derive(Parser, Debug)]
#[command(name = "combo-nodesim", version, about)]
struct Args {
    /// Admin kubeconfig of the test cluster.
    #[arg(long)]
    kubeconfig: PathBuf,
    /// The cluster's state directory; pod logs go to `DIR/pods/<ns>/<pod>/<container>.log`.
    #[arg(long)]
    dir: PathBuf,
    /// Number of simulated nodes, node-1 .. node-N.
    #[arg(long, default_value_t = 3)]
    nodes: u32,
    /// Directory of the project's binaries (target/release or target/debug).
    #[arg(long)]
    bin_dir: PathBuf,
    /// The default inspection scripts (the runner image's /scripts).
    #[arg(long)]
    scripts: PathBuf,
    /// API server host:port as pods reach it.
    #[arg(long)]
    api_server: String,
    /// CA certificate of the API server (only checked for existence: pods get
    /// it from their ServiceAccount token secret).
    #[arg(long)]
    ca: PathBuf,
}

#[tokio::main]
async fn main() -> Result<()> {
    tracing_subscriber::fmt()
        .with_ansi(false)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,kube=warn".into()),
        )
        .init();
    let args = Args::parse();
    anyhow::ensure!(args.ca.exists(), "{} does not exist", args.ca.display());
    let kc = Kubeconfig::read_from(&args.kubeconfig)?;
    let cfg = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await?;
    let client = kube::Client::try_from(cfg)?;
    for i in 1..=args.nodes {
        nodes::register(&client, i)
            .await
            .with_context(|| format!("register node-{i}"))?;
    }
    let (host, port) = args
        .api_server
        .rsplit_once(':')
        .context("--api-server is host:port")?;
    let settings = kubelet::Settings {
        state_dir: args.dir,
        bin_dir: args.bin_dir,
        scripts: args.scripts,
        api_host: host.to_string(),
        api_port: port.to_string(),
        nodes: args.nodes,
    };
    let stop = async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("SIGTERM handler");
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    };
    kubelet::Kubelet::new(client, settings).run(stop).await
}
