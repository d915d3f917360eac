//! `combo-pinger`: persistent ICMP, TCP, UDP and DNS probing.

use clap::Parser;

#[tokio::main]
async fn main() {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,hickory=warn,kube=warn".into()),
        )
        .init();
    let code = combo_pinger::run(combo_pinger::cli::Args::parse()).await;
    std::process::exit(code as i32);
}
