//! `combo-pinger`: persistent ICMP, TCP, UDP and DNS probing, in a Kubernetes
//! pod (following a Pinger) or standalone on any Linux host.

mod cli;
mod cluster;
mod engine;
mod events;
mod gateway;
mod metrics;
mod probe;
mod round;
mod standalone;
mod targets;

use clap::Parser;

/// Exit status of the process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitCode {
    /// Every round passed.
    Passed = 0,
    /// Some round failed.
    Failed = 1,
    /// Bad flags or setup.
    Usage = 2,
}

#[tokio::main]
async fn main() {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,hickory=warn,kube=warn".into()),
        )
        .init();
    let args = cli::Args::parse();
    let code = if args.standalone() {
        standalone::run(args).await
    } else if let Some(name) = args.pinger.clone() {
        cluster::run(name, args).await
    } else {
        eprintln!("combo-pinger: give target flags (--ping, --tcp, --udp, --dns, --gateway) or a Pinger to follow (PINGER_NAME / --pinger); see --help");
        ExitCode::Usage
    };
    std::process::exit(code as i32);
}

/// Completes on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
