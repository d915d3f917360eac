//! `combo-operator`: parse the command line, then print the CRDs or run.

use std::io::IsTerminal;
use std::process::ExitCode;

use anyhow::Context as _;

use combo_operator::cli::{self, Cli, Command};
use combo_operator::{controller, crdgen};

const BIN: &str = "combo-operator";

#[tokio::main]
async fn main() -> ExitCode {
    let cli: Cli = combo_api::cli::parse_args(BIN, combo_api::version!());
    let result = match cli.command {
        Some(Command::Crd { out: None }) => {
            print!("{}", crdgen::all_yaml());
            Ok(())
        }
        Some(Command::Crd { out: Some(dir) }) => {
            crdgen::write(&dir).with_context(|| format!("writing the CRDs into {}", dir.display()))
        }
        None => {
            tracing_subscriber::fmt()
                .with_ansi(std::io::stderr().is_terminal())
                .with_writer(std::io::stderr)
                .with_env_filter(
                    tracing_subscriber::EnvFilter::try_from_default_env()
                        .unwrap_or_else(|_| "info".into()),
                )
                .init();
            controller::run(cli.run).await.map_err(anyhow::Error::from)
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => cli::report(BIN, &e),
    }
}
