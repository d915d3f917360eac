//! Command line of `kubectl-combo`, in the library so that the reference
//! test (`operator/tests/docs/`) reads the same flags the plugin parses.

use clap::{Parser, Subcommand};
use combo_api::{Category, RunId};

/// kubectl plugin for kube-combo: read summaries and errlogs, trigger runs.
#[derive(Parser, Debug)]
#[command(name = "kubectl-combo", version)]
pub struct Args {
    /// Namespace (default: the current context's).
    #[arg(short, long, global = true)]
    pub namespace: Option<String>,
    /// On an error, print every cause and where it came from, not one line.
    #[arg(long, global = true)]
    pub debug: bool,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The plugin's commands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Table of the Debugger's summary: NODE, RUN, CATEGORY, ITEM, ERROR.
    Summary {
        /// The Debugger.
        debugger: String,
        /// Show healthy items too.
        #[arg(long)]
        all: bool,
    },
    /// Run the inspection now on every node, keeping spec.runAt: sets the
    /// annotation kubecombo.io/run-now to the current time.
    Run {
        /// The Debugger.
        debugger: String,
        /// Wait until every node of the Debugger reported the run, then say
        /// how many items failed (exit status 1 when some did).
        #[arg(long)]
        wait: bool,
        /// With --wait: give up after this long (exit status 4): seconds
        /// (600) or a duration as kubectl takes it (90s, 10m, 1h30m).
        #[arg(long, default_value = "600", value_parser = super::parse_seconds)]
        timeout: u64,
    },
    /// Print an errlog of one node and category, through `kubectl exec`.
    Errlog {
        /// The Debugger.
        debugger: String,
        /// Node whose pod to read.
        #[arg(long)]
        node: String,
        /// Category (disk, net, mem, svc, custom).
        #[arg(long)]
        category: Category,
        /// Run id (20261122T060000Z) or RFC 3339 time. Default: the newest
        /// errlog written for the node and category, whichever run it is of
        /// (an earlier one when the newest run passed); stderr names its run.
        #[arg(long, value_parser = super::parse_run)]
        run: Option<RunId>,
    },
    /// Paths of the Debugger's pingers, prober node to target, with loss and
    /// RTT of the last 5 minutes: failing and lossy ones first.
    Mesh {
        /// The Debugger.
        debugger: String,
        /// Show every path, not only failing and lossy ones.
        #[arg(long)]
        all: bool,
        /// Also write a self-contained HTML heat map to this file.
        #[arg(long, value_name = "FILE")]
        html: Option<std::path::PathBuf>,
    },
    /// List Debuggers with their last run and failures.
    Status {
        /// Across all namespaces.
        #[arg(short = 'A', long)]
        all_namespaces: bool,
    },
}
