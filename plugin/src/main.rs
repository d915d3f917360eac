//! `kubectl-combo`: the `kubectl combo` plugin (docs/reference.md,
//! "`kubectl-combo`").

use std::process::ExitCode;

use anyhow::{Context as _, Result};
use kube::Client;
use kubectl_combo::cli::{Args, Command, BIN};
use kubectl_combo::{errlog, errors, mesh, run_now, status, summary};

#[tokio::main]
async fn main() -> ExitCode {
    let args: Args = combo_api::cli::parse_args(BIN, combo_api::version!());
    let debug = args.debug;
    match dispatch(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // One line, whatever RUST_BACKTRACE says: a user of kubectl
            // reads a message, not a trace; --debug shows the whole chain.
            if debug {
                eprintln!("{BIN}: {e:?}");
            } else {
                eprintln!("{}", combo_api::cli::error_line(BIN, e.as_ref()));
            }
            ExitCode::from(errors::exit_status(&e))
        }
    }
}

async fn dispatch(args: Args) -> Result<()> {
    let client = Client::try_default()
        .await
        .context("no usable kubeconfig")?;
    let ns = args
        .namespace
        .clone()
        .unwrap_or_else(|| client.default_namespace().to_string());
    match args.command {
        Command::Summary { debugger, all } => summary::run(client, &ns, &debugger, all).await,
        Command::Run {
            debugger,
            wait,
            timeout,
        } => run_now::run(client, &ns, &debugger, wait.then_some(timeout)).await,
        Command::Errlog {
            debugger,
            node,
            category,
            run,
        } => errlog::run(client, &ns, &debugger, &node, category, run).await,
        Command::Mesh {
            debugger,
            all,
            html,
        } => mesh::run(client, &ns, &debugger, all, html).await,
        Command::Status { all_namespaces } => status::run(client, &ns, all_namespaces).await,
    }
}
