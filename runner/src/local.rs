//! Local mode (`--once`, docs/runner.md, "Local mode"): one run on this machine, no Kubernetes.

use std::future::Future;
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use combo_api::RunId;

use crate::cli::Args;
use crate::run::errlog::{self, Layout};
use crate::run::report;
use crate::run::state::{self, StateRoot};
use crate::run::{self, RunConfig};
use crate::shutdown::{self, Stop};

/// Exit code when every item is healthy.
pub const EXIT_HEALTHY: u8 = 0;
/// Exit code when some item failed.
pub const EXIT_FAILED: u8 = 1;
/// Exit code of a usage or setup error.
pub const EXIT_SETUP: u8 = 2;

/// Runs once and prints the result; returns the process exit code. When
/// `stop` resolves first, the run is abandoned: nothing is printed or
/// written, and the process exits with the signal's status.
pub async fn run_once(args: Args, stop: impl Future<Output = Stop>) -> ExitCode {
    let cfg = RunConfig {
        scripts: args.scripts.clone(),
        categories: args.categories.clone(),
        timeout: Duration::from_secs(args.timeout),
        parallel: args.parallel as usize,
        node: node_name(),
        host_root: args.host_root.clone(),
        state: state_root(&args),
        runner_exe: RunConfig::current_exe(),
    };
    let run_id = RunId::at(chrono::Utc::now());
    let inspected = tokio::select! {
        r = run::inspect(&cfg, run_id) => r,
        stop = stop => {
            eprintln!(
                "combo-runner: stopped by {}; run {run_id} was not finished and nothing of it was written",
                stop.name()
            );
            shutdown::exit(stop)
        }
    };
    let report = match inspected {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{}", combo_api::cli::error_line("combo-runner", &e));
            return ExitCode::from(EXIT_SETUP);
        }
    };
    let layout = match &args.errlog_dir {
        Some(d) => Layout::Under(d.clone()),
        None => Layout::BesideScripts(args.scripts.clone()),
    };
    let written = errlog::write(&layout, &report, args.errlog_retention).unwrap_or_else(|e| {
        eprintln!("{}", combo_api::cli::error_line("combo-runner", &e));
        vec![]
    });
    let summary = report::summary(&report);
    let mut out = report::render(&summary, args.output);
    if args.output == report::Format::Table {
        for p in &written {
            out.push_str(&format!("errlog: {}\n", p.display()));
        }
    }
    let _ = std::io::stdout().write_all(out.as_bytes());
    if summary.failed().next().is_some() {
        ExitCode::from(EXIT_FAILED)
    } else {
        ExitCode::from(EXIT_HEALTHY)
    }
}

/// `--state-dir`, else the default of local mode; `None` (scripts run
/// without state) when there is no default for this user.
fn state_root(args: &Args) -> Option<StateRoot> {
    let root = args.state_dir.clone().or_else(|| {
        state::local_default(nix::unistd::geteuid().is_root(), |k| std::env::var(k).ok())
    });
    if root.is_none() {
        tracing::warn!(
            "no state directory (neither --state-dir, XDG_STATE_HOME nor HOME is set); scripts run without STATE_DIR"
        );
    }
    root.map(StateRoot::new)
}

/// `NODE_NAME`, or this machine's host name.
fn node_name() -> String {
    std::env::var("NODE_NAME")
        .ok()
        .filter(|n| !n.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|h| h.trim().to_string())
        })
        .unwrap_or_else(|| "localhost".to_string())
}
