//! `combo-pinger`: persistent ICMP, TCP, UDP and DNS probing.

use std::io::IsTerminal;

fn main() {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,hickory=warn,kube=warn".into()),
        )
        .init();
    let args: combo_pinger::cli::Args =
        combo_api::cli::parse_args("combo-pinger", combo_api::version!());
    // One thread: the probes are I/O-bound, and a reply is timestamped by the
    // same thread that waits in epoll, without a cross-thread wake-up.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!(
                "{}",
                combo_api::cli::error_line("combo-pinger: tokio runtime", &e)
            );
            std::process::exit(combo_pinger::ExitCode::Usage as i32);
        }
    };
    let code = runtime.block_on(combo_pinger::run(args));
    std::process::exit(code as i32);
}
