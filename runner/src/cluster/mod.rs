//! In-cluster mode: follow this pod's Debugger, run at its `runAt` times,
//! and publish this node's result.

use std::future::Future;
use std::process::ExitCode;
use std::time::Duration;

use chrono::{DateTime, Utc};
use combo_api::{keys, Debugger, NodeSummary, RunAt, RunId};
use futures::StreamExt;
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, Client, ResourceExt};
use tokio::sync::watch;

pub mod identity;
pub mod publish;
pub mod schedule;
pub mod writer;

use crate::cli::Args;
use crate::run::errlog::{self, Layout};
use crate::run::state::{self, StateRoot};
use crate::run::{self, report, RunConfig};
use crate::shutdown::{self, Stop};
use identity::{Error, Identity};
use publish::{Kept, Pending, Publisher};
use schedule::{Decision, History};

/// Runs until `stop` resolves, then exits with the signal's status;
/// returns 2 when the pod's environment is incomplete.
pub async fn run(args: Args, stop: impl Future<Output = Stop>) -> ExitCode {
    let result = async {
        let id = Identity::from_env()?;
        let client = Client::try_default().await.map_err(Error::Client)?;
        Ok::<_, Error>((id, client))
    }
    .await;
    match result {
        Ok((id, client)) => shutdown::exit(serve(args, id, client, stop).await),
        Err(e) => {
            // Said once, plainly, to whoever started it outside a pod.
            eprintln!(
                "{}; for one run on this machine use --once",
                combo_api::cli::error_line("combo-runner", &e)
            );
            ExitCode::from(crate::local::EXIT_SETUP)
        }
    }
}

/// Follows the Debugger and runs at its schedule until `stop` resolves.
///
/// Then the run in progress, if any, is dropped where it stands (`stop`
/// has killed its scripts): no errlog and no report of it is written. A
/// result of an earlier run still waiting to be written gets one attempt
/// of at most [`writer::FLUSH_LIMIT`]. Returns what stopped it.
pub async fn serve(
    args: Args,
    id: Identity,
    client: Client,
    stop: impl Future<Output = Stop>,
) -> Stop {
    let spec_rx = watch_debugger(client.clone(), &id);
    let publisher = Publisher::new(
        client,
        id.namespace.clone(),
        id.node.clone(),
        id.pod.clone(),
    );
    let writer = writer::spawn_writer(publisher.clone());
    let scheduler = Scheduler {
        args,
        id,
        publisher,
        writer: writer.clone(),
        spec_rx,
    };
    let mut stop = std::pin::pin!(stop);
    let stopped = tokio::select! {
        s = &mut stop => s,
        // It ends only if the Debugger's watch does; wait for the signal.
        _ = scheduler.run() => stop.await,
    };
    writer.flush(writer::FLUSH_LIMIT).await;
    stopped
}

/// The latest Debugger, kept current by a watch on just that object.
fn watch_debugger(client: Client, id: &Identity) -> watch::Receiver<Option<Debugger>> {
    let api: Api<Debugger> = Api::namespaced(client, &id.namespace);
    let cfg = watcher::Config::default().fields(&format!("metadata.name={}", id.debugger));
    let (tx, rx) = watch::channel(None);
    tokio::spawn(async move {
        let mut events = watcher(api, cfg).default_backoff().boxed();
        while let Some(ev) = events.next().await {
            match ev {
                Ok(watcher::Event::Apply(d) | watcher::Event::InitApply(d)) => {
                    tx.send_replace(Some(d));
                }
                Ok(watcher::Event::Delete(_)) => {
                    tx.send_replace(None);
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "watching the Debugger failed; retrying"),
            }
        }
    });
    rx
}

struct Scheduler {
    args: Args,
    id: Identity,
    publisher: Publisher,
    writer: writer::Writer,
    spec_rx: watch::Receiver<Option<Debugger>>,
}

/// What was said in the log already, so that status updates of the
/// Debugger do not repeat it.
#[derive(Default)]
struct Said {
    /// The runAt last reported idle.
    idle: Option<String>,
    /// The runAt last reported invalid.
    bad_run_at: Option<String>,
    /// The run-now value last reported invalid.
    bad_run_now: Option<String>,
}

/// Whether `value` is news to `said`: then it is remembered.
fn first_time(said: &mut Option<String>, value: &str) -> bool {
    let new = said.as_deref() != Some(value);
    if new {
        *said = Some(value.to_string());
    }
    new
}

/// What to do for `dbg` at `now`: what its `runAt` asks for, with its
/// run-now request folded in (docs/runner.md, "Run now"). `seen` is the
/// runAt value and when it was first seen (for cron catch-up). A value that
/// does not parse is logged once and asks for nothing.
fn decision(
    dbg: &Debugger,
    now: DateTime<Utc>,
    seen: &mut Option<(String, DateTime<Utc>)>,
    history: History,
    said: &mut Said,
) -> Decision {
    let spec = &dbg.spec;
    let since = match &*seen {
        Some((text, t)) if *text == spec.run_at => *t,
        _ => {
            *seen = Some((spec.run_at.clone(), now));
            now
        }
    };
    let scheduled = match RunAt::parse(&spec.run_at) {
        Ok(run_at) => schedule::decide(&run_at, spec.workload_type, now, since, history),
        Err(e) => {
            if first_time(&mut said.bad_run_at, &spec.run_at) {
                tracing::warn!(error = %e, "invalid runAt; waiting for a change");
            }
            Decision::Idle
        }
    };
    let asked = dbg
        .annotations()
        .get(keys::ANNOTATION_RUN_NOW)
        .and_then(|v| match combo_api::runat::parse_run_now(v) {
            Ok(id) => Some(id),
            Err(e) => {
                if first_time(&mut said.bad_run_now, v) {
                    tracing::warn!(annotation = keys::ANNOTATION_RUN_NOW, error = %e,
                        "invalid run-now request; ignored");
                }
                None
            }
        });
    schedule::with_run_now(scheduled, asked, now, history)
}

impl Scheduler {
    async fn run(mut self) {
        // What the node ran and its verdicts: from its report, then memory.
        let mut kept = Kept::default();
        // (runAt text, when first seen) for cron catch-up.
        let mut seen: Option<(String, DateTime<Utc>)> = None;
        let mut said = Said::default();
        // Whether this node's report has been read back since the start.
        let mut read_back = false;
        // Whether earlier Debuggers' directories on the node were looked for.
        let mut tidied = false;
        loop {
            let Some(dbg) = self.spec_rx.borrow_and_update().clone() else {
                tracing::info!(debugger = %self.id.debugger, "waiting for the Debugger");
                if self.spec_rx.changed().await.is_err() {
                    return;
                }
                continue;
            };
            if !tidied {
                tidied = tidy_node_data(&self.args, &dbg);
            }
            if !read_back {
                kept = self.read_kept().await;
                read_back = true;
            }
            match decision(&dbg, Utc::now(), &mut seen, kept.ran, &mut said) {
                Decision::Run(run_id) => {
                    said.idle = None;
                    kept.ran.completed = Some(run_id);
                    kept.ran.ran_since_start = true;
                    self.run_once(&dbg, run_id, &mut kept).await;
                }
                Decision::RunNow(run_id) => {
                    said.idle = None;
                    tracing::info!(run_id = %run_id, "run-now request");
                    kept.ran.run_now = Some(run_id);
                    kept.ran.ran_since_start = true;
                    self.run_once(&dbg, run_id, &mut kept).await;
                }
                Decision::Wait(at) => {
                    let pause = (at - Utc::now()).to_std().unwrap_or(Duration::ZERO);
                    tracing::debug!(next = %at, "waiting for the next run");
                    tokio::select! {
                        _ = tokio::time::sleep(pause) => {}
                        r = self.spec_rx.changed() => if r.is_err() { return },
                    }
                }
                Decision::Idle => {
                    let run_at = dbg.spec.run_at.as_str();
                    if first_time(&mut said.idle, run_at) {
                        tracing::info!(run_at = %run_at, "nothing scheduled; waiting for a change");
                    }
                    if self.spec_rx.changed().await.is_err() {
                        return;
                    }
                }
            }
        }
    }

    /// What this node's report keeps, what it ran and its item verdicts;
    /// retried while the API server does not answer, then nothing.
    async fn read_kept(&self) -> Kept {
        for attempt in 1..=8 {
            match self.publisher.read_kept(&self.id.debugger).await {
                Ok(kept) => return kept,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read this node's report");
                    let pause = combo_api::retry::doubling(
                        Duration::from_millis(200),
                        Duration::from_secs(5),
                        attempt,
                    );
                    tokio::time::sleep(pause).await;
                }
            }
        }
        Kept::default()
    }

    /// Runs `run_id` and sends its report, with `kept.ran` (what this node
    /// has run with it) and the verdicts after it, which `kept` keeps.
    async fn run_once(&self, dbg: &Debugger, run_id: RunId, kept: &mut Kept) {
        let spec = &dbg.spec;
        let cfg = RunConfig {
            scripts: self.args.scripts.clone(),
            categories: spec.categories.clone(),
            timeout: Duration::from_secs(spec.script_timeout_seconds.max(1) as u64),
            parallel: self.args.parallel as usize,
            node: self.id.node.clone(),
            host_root: self.args.host_root.clone(),
            state: Some(StateRoot::new(
                self.args
                    .state_dir
                    .clone()
                    .unwrap_or_else(|| state::POD_STATE_ROOT.into()),
            )),
            runner_exe: RunConfig::current_exe(),
        };
        let delay_ms = (Utc::now() - run_id.0).num_milliseconds();
        tracing::info!(run_id = %run_id, delay_ms, "run due");
        let report = run::inspect(&cfg, run_id).await;
        reap_orphans();
        let report = match report {
            Ok(r) => r,
            Err(e) => {
                tracing::error!(error = %e, run_id = %run_id, "run failed to start");
                return;
            }
        };
        let layout = Layout::BesideScripts(self.args.scripts.clone());
        if let Err(e) = errlog::write(&layout, &report, spec.errlog_retention as usize) {
            tracing::warn!(error = %e, "cannot write errlog");
        }
        // Whole: the report counts every failure and is cut to fit when written.
        let summary: NodeSummary = report::summary(&report);
        let failed = summary.failed_count();
        crate::run::runlog::log(run_id, &summary, report.scripts.len());
        // From the whole result, so items the report folds keep their verdicts;
        // kept even if the write fails: a newer result that replaces an unwritten
        // one still counts this run (docs/reference.md, "DebuggerReport history").
        kept.verdicts = kept.verdicts.next(&summary);
        let Some(owner) = publish::Owner::of(dbg) else {
            tracing::error!("the Debugger has no uid; the result is not reported");
            return;
        };
        let _ = self.writer.send(Pending {
            owner,
            summary: summary.clone(),
            sources: report::Sources::of(&report),
            nodes: dbg
                .status
                .as_ref()
                .map_or(0, |s| s.desired_pods.max(0) as u32),
            history: kept.clone(),
        });
        if failed > 0 {
            let publisher = self.publisher.clone();
            tokio::spawn(async move { publisher.record_failures(&summary).await });
        }
    }
}

/// Removes what earlier Debuggers of this name left in its directory on
/// the node (`--node-data`), once `dbg` shows that this runner's uid
/// (`--debugger-uid`) is the current one: a runner of a deleted Debugger,
/// still running, sees another uid and removes nothing. Returns whether
/// that is settled (nothing to do, or done).
fn tidy_node_data(args: &Args, dbg: &Debugger) -> bool {
    let (Some(dir), Some(uid)) = (&args.node_data, &args.debugger_uid) else {
        return true;
    };
    if dbg.uid().as_deref() != Some(uid.as_str()) {
        return false;
    }
    let removed = state::remove_other_uids(dir, uid);
    if !removed.is_empty() {
        tracing::info!(dir = %dir.display(), removed = ?removed,
            "removed the state and errlogs of earlier Debuggers of this name");
    }
    true
}

/// Reaps exited processes that were reparented to this runner. A runner that
/// is PID 1 of its container (no hostPID) inherits the children of scripts
/// whose process group was killed; between runs no child of its own is
/// running, so every exited child it finds is such an orphan.
fn reap_orphans() {
    use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
    use nix::unistd::Pid;
    if std::process::id() != 1 {
        return;
    }
    while let Ok(status) = waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
        if status == WaitStatus::StillAlive {
            break;
        }
    }
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "run_now_tests.rs"]
mod run_now_tests;

#[cfg(test)]
#[path = "history_tests.rs"]
mod history_tests;
