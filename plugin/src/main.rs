//! `kubectl-combo`: the `kubectl combo` plugin (docs/reference.md,
//! "`kubectl-combo`").

use std::process::ExitCode;

use anyhow::Result;
use kubectl_combo::cli::{Args, Command, BIN};
use kubectl_combo::cluster::Target;
use kubectl_combo::errors::{self, Exit};
use kubectl_combo::{complete, errlog, history, mesh, run_now, status, summary};

#[tokio::main]
async fn main() -> ExitCode {
    let args: Args = combo_api::cli::parse_args(BIN, combo_api::version!());
    let debug = args.debug;
    match dispatch(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // One line, whatever RUST_BACKTRACE says: a user of kubectl
            // reads a message, not a trace; --debug shows the whole chain.
            let quiet = e.downcast_ref::<Exit>().is_some_and(|x| x.said.is_empty());
            if quiet {
                // The answer on stdout said it all (items failed).
            } else if debug {
                eprintln!("{BIN}: {e:?}");
            } else {
                eprintln!("{}", combo_api::cli::error_line(BIN, e.as_ref()));
            }
            ExitCode::from(errors::exit_status(&e))
        }
    }
}

async fn dispatch(args: Args) -> Result<()> {
    let target = Target {
        kubeconfig: args.kubeconfig.clone(),
        context: args.context.clone(),
    };
    // Neither needs a cluster; completion asks one for names if it can.
    match args.command {
        Command::Completion { shell } => {
            print!("{}", complete::script(shell));
            return Ok(());
        }
        Command::Complete { words } => {
            let client = target.client().await.ok();
            let ns = args.namespace.clone();
            print!("{}", complete::answer(client, ns, &words).await);
            return Ok(());
        }
        _ => {}
    }
    let client = target.client().await?;
    let ns = args
        .namespace
        .clone()
        .unwrap_or_else(|| client.default_namespace().to_string());
    match args.command {
        Command::Summary {
            debugger,
            all,
            output,
        } => summary::run(client, &ns, &debugger, all, output).await,
        Command::History {
            debugger,
            node,
            item,
            output,
        } => {
            let (node, item) = (node.as_deref(), item.as_deref());
            history::run(client, &ns, &debugger, node, item, output).await
        }
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
        } => errlog::run(client, &target, &ns, &debugger, &node, category, run).await,
        Command::Mesh {
            debugger,
            all,
            html,
            output,
        } => mesh::run(client, &ns, &debugger, all, html, output).await,
        Command::Status {
            all_namespaces,
            output,
        } => status::run(client, &ns, all_namespaces, output).await,
        Command::Completion { .. } | Command::Complete { .. } => Ok(()),
    }
}
