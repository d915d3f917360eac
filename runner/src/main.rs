//! `combo-runner`: runs node inspection scripts and reports a per-node summary.

use std::io::IsTerminal;
use std::process::ExitCode;

use combo_runner::cli::{Args, Command};
use combo_runner::shutdown::Signals;
use combo_runner::{cluster, local};
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() -> ExitCode {
    let args: Args = combo_api::cli::parse_args("combo-runner", combo_api::version!());
    let default_level = if args.once || args.command.is_some() {
        "warn"
    } else {
        "info"
    };
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_level)),
        )
        .init();
    if let Some(Command::Dns(dns)) = args.command {
        return combo_runner::checks::dns::run(dns, &args.host_root).await;
    }
    if let Some(Command::ProbeSocket(probe)) = args.command {
        return combo_runner::checks::probe::run(probe).await;
    }
    let signals = match Signals::install() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{}", combo_api::cli::error_line("combo-runner", &e));
            return ExitCode::from(local::EXIT_SETUP);
        }
    };
    if let Err(e) = combo_runner::run::reaper::adopt_orphans() {
        tracing::warn!(error = %e, "cannot adopt the orphans of scripts: processes they start outside their group are not killed");
    }
    if args.once {
        local::run_once(args, signals.stopped()).await
    } else {
        cluster::run(args, signals.stopped()).await
    }
}
