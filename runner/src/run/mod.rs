//! One inspection run: discover the scripts, run them with bounded
//! parallelism, and turn their outcomes into items.

use std::path::PathBuf;
use std::time::Duration;

use chrono::{DateTime, Utc};
use combo_api::summary::{untaken_message, OUTPUT_ITEM};
use combo_api::{Category, ItemResult, RunId};
use futures::StreamExt;

pub mod discover;
pub mod errlog;
pub mod exec;
pub mod output;
pub mod reaper;
pub mod report;
pub mod runlog;
pub mod scripts_hash;
pub mod state;
pub mod stdout;

use discover::Script;
use exec::{Exit, Outcome};
use output::Line;
use state::StateRoot;
use stdout::{self as script_stdout, MAX_ITEMS};

/// What a run needs to know.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// Root of the scripts (`/scripts`).
    pub scripts: PathBuf,
    /// Categories to run.
    pub categories: Vec<Category>,
    /// Time limit of one script.
    pub timeout: Duration,
    /// Most scripts running at once.
    pub parallel: usize,
    /// `NODE_NAME` given to scripts.
    pub node: String,
    /// `HOST_ROOT` given to scripts.
    pub host_root: String,
    /// Where the scripts' state lives, if anywhere (docs/runner.md,
    /// "State between runs").
    pub state: Option<StateRoot>,
    /// `COMBO_RUNNER` given to scripts: the running runner binary.
    pub runner_exe: Option<PathBuf>,
}

impl RunConfig {
    /// The running binary, for `COMBO_RUNNER`.
    pub fn current_exe() -> Option<PathBuf> {
        std::env::current_exe()
            .inspect_err(
                |e| tracing::warn!(error = %e, "cannot tell scripts where the runner binary is"),
            )
            .ok()
    }
}

/// One script and what came of it.
#[derive(Clone, Debug)]
pub struct ScriptRun {
    /// The script.
    pub script: Script,
    /// How it ran.
    pub outcome: Outcome,
    /// The items it produced, prefixed, in order.
    pub items: Vec<(String, ItemResult)>,
}

impl ScriptRun {
    /// The items of this script that failed.
    pub fn failed(&self) -> impl Iterator<Item = (&str, &str)> {
        self.items
            .iter()
            .filter_map(|(i, r)| r.err.as_deref().map(|e| (i.as_str(), e)))
    }
}

/// The outcome of a whole run.
#[derive(Clone, Debug)]
pub struct Report {
    /// The run.
    pub run_id: RunId,
    /// When the run started: its scheduled time, or later when the
    /// runner was not there at that time (docs/runner.md, "Run now").
    pub started_at: DateTime<Utc>,
    /// When the last script ended.
    pub finished_at: DateTime<Utc>,
    /// Every script, sorted by category and path.
    pub scripts: Vec<ScriptRun>,
    /// The hash of the scripts the run executed (see
    /// [`crate::run::scripts_hash`]).
    pub scripts_hash: String,
}

/// Runs every script of `cfg.categories` for `run_id`. Scripts are read from
/// disk now, so edits since the last run count.
pub async fn inspect(cfg: &RunConfig, run_id: RunId) -> discover::Result<Report> {
    let started_at = Utc::now();
    let scripts = discover::discover(&cfg.scripts, &cfg.categories)?;
    let scripts_hash = crate::run::scripts_hash::scripts_hash(&cfg.scripts, &scripts);
    let previous = cfg.state.as_ref().and_then(StateRoot::previous_run);
    tracing::info!(run_id = %run_id, scripts = scripts.len(), scripts_hash = %scripts_hash,
        "run started");
    let mut runs: Vec<ScriptRun> = futures::stream::iter(scripts)
        .map(|script| async move {
            let state_dir = cfg.state.as_ref().and_then(|root| {
                root.prepare(&script)
                    .inspect_err(|e| {
                        tracing::warn!(error = %e, script = %script.path.display(),
                            "cannot create the script's state directory; it runs without one")
                    })
                    .ok()
            });
            let text = |p: Option<&PathBuf>| p.map(|p| p.to_string_lossy().into_owned());
            // Each is set, empty when unknown, so that a value the runner
            // itself inherited never reaches a script.
            let env = [
                ("NODE_NAME", cfg.node.clone()),
                ("RUN_ID", run_id.to_string()),
                ("CATEGORY", script.category.to_string()),
                ("HOST_ROOT", cfg.host_root.clone()),
                ("STATE_DIR", text(state_dir.as_ref()).unwrap_or_default()),
                (
                    "COMBO_RUNNER",
                    text(cfg.runner_exe.as_ref()).unwrap_or_default(),
                ),
                (
                    "PREVIOUS_RUN_ID",
                    previous.map(|r| r.to_string()).unwrap_or_default(),
                ),
            ];
            let outcome = exec::run(&script.path, &env, cfg.timeout).await;
            let mut items = items_of(&script, &outcome);
            if let Some(dir) = state_dir {
                let over = tokio::task::spawn_blocking(move || state::enforce_limit(&dir))
                    .await
                    .unwrap_or_else(|e| Some(format!("state directory check failed: {e}")));
                if let Some(msg) = over {
                    items.push((format!("{}/state", script.name), ItemResult::err(msg)));
                }
            }
            tracing::debug!(script = %script.path.display(), exit = ?outcome.exit,
                duration_ms = outcome.duration.as_millis() as u64, "script finished");
            ScriptRun {
                script,
                outcome,
                items,
            }
        })
        .buffer_unordered(cfg.parallel.max(1))
        .collect()
        .await;
    runs.sort_by(|a, b| {
        (a.script.category, &a.script.path).cmp(&(b.script.category, &b.script.path))
    });
    if let Some(root) = &cfg.state {
        if let Err(e) = root.record_run(run_id) {
            tracing::warn!(error = %e, root = %root.path().display(),
                "cannot record the run in the state root; the next run gets no PREVIOUS_RUN_ID");
        }
    }
    Ok(Report {
        run_id,
        started_at,
        finished_at: Utc::now(),
        scripts: runs,
        scripts_hash,
    })
}

/// The items a script produced (docs/runner.md, "Scripts"): its
/// `ok`/`err`/`skip` lines, plus an item named after the script with `timeout after <N>s`
/// when it timed out, or with `exit <code>: <last stderr line>` when it
/// failed without any `err` line, plus the item `<script>/output` when
/// some of its stdout was not taken: item lines past [`MAX_ITEMS`]
/// (failed when an `err` line is among them, else skipped), or, when it
/// printed no item line at all, lines not in the script format (failed).
pub fn items_of(script: &Script, outcome: &Outcome) -> Vec<(String, ItemResult)> {
    let mut items: Vec<(String, ItemResult)> = Vec::new();
    let mut put = |item: String, r: ItemResult| match items.iter_mut().find(|(i, _)| *i == item) {
        // A failure is never hidden by a later skip or ok of the same item,
        // nor a skip by a later ok.
        Some((_, old)) if r.verdict() > old.verdict() => *old = r,
        Some(_) => {}
        None => items.push((item, r)),
    };
    let untaken = &outcome.untaken;
    let mut reported_err = untaken.err > 0;
    for line in &outcome.lines {
        match line {
            Line::Ok { item } => put(script.item(item), ItemResult::ok()),
            Line::Err { item, message } => {
                reported_err = true;
                put(script.item(item), ItemResult::err(message.clone()));
            }
            Line::Skip { item, reason } => put(script.item(item), ItemResult::skip(reason.clone())),
            Line::Plain => {}
        }
    }
    let msg = match &outcome.exit {
        Exit::Code(0) => None,
        // The err lines it printed before it hung do not say that the
        // check never finished: a timeout is always an item of its own.
        Exit::Timeout(n) => Some(format!("timeout after {n}s")),
        _ if reported_err => None,
        Exit::Code(c) => Some(format!(
            "exit {c}: {}",
            crate::run::output::printable_message(&outcome.last_stderr_line)
        )),
        Exit::Spawn(e) => Some(format!("exit 126: {e}")),
    };
    if let Some(msg) = msg {
        let msg = msg.trim_end_matches([':', ' ']).to_string();
        put(script.name.clone(), ItemResult::err(msg));
    }
    let output_item = format!("{}/{OUTPUT_ITEM}", script.name);
    if untaken.past_limit() > 0 {
        let msg = untaken_message(untaken.err, untaken.skip, untaken.ok, MAX_ITEMS);
        // Lines that were all ok or skip do not fail the node, but their
        // count must show: a skip says what could not be listed.
        let r = if untaken.err > 0 {
            ItemResult::err(msg)
        } else {
            ItemResult::skip(msg)
        };
        put(output_item, r);
    } else if untaken.plain > 0 && outcome.lines.is_empty() {
        // Printing only other output is not a check that found nothing: it
        // is a check that reports in a form the runner cannot read.
        put(
            output_item,
            ItemResult::err(script_stdout::not_in_format_message(untaken)),
        );
    }
    items
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
