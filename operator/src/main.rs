//! `combo-operator`: parse the command line, then print the CRDs or run.

use std::io::IsTerminal;

use clap::Parser;
use combo_operator::cli::{Cli, Command};
use combo_operator::{controller, crdgen};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Crd { out: None }) => print!("{}", crdgen::all_yaml()),
        Some(Command::Crd { out: Some(dir) }) => crdgen::write(&dir)?,
        None => {
            tracing_subscriber::fmt()
                .with_ansi(std::io::stderr().is_terminal())
                .with_writer(std::io::stderr)
                .with_env_filter(
                    tracing_subscriber::EnvFilter::try_from_default_env()
                        .unwrap_or_else(|_| "info".into()),
                )
                .init();
            controller::run(cli.run).await?;
        }
    }
    Ok(())
}
