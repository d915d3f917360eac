//! One inspection run: discover the scripts, run them with bounded
//! parallelism, and turn their outcomes into items.

use std::path::PathBuf;
use std::time::Duration;

use chrono::{DateTime, Utc};
use combo_api::{Category, ItemResult, RunId};
use futures::StreamExt;

use crate::discover::{self, Script};
use crate::exec::{self, Exit, Outcome};
use crate::output::Line;
use crate::state::{self, StateRoot};

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
    /// When the last script ended.
    pub finished_at: DateTime<Utc>,
    /// Every script, sorted by category and path.
    pub scripts: Vec<ScriptRun>,
}

/// Runs every script of `cfg.categories` for `run_id`. Scripts are read from
/// disk now, so edits since the last run count.
pub async fn inspect(cfg: &RunConfig, run_id: RunId) -> discover::Result<Report> {
    let scripts = discover::discover(&cfg.scripts, &cfg.categories)?;
    let previous = cfg.state.as_ref().and_then(StateRoot::previous_run);
    tracing::info!(run_id = %run_id, scripts = scripts.len(), "run started");
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
        finished_at: Utc::now(),
        scripts: runs,
    })
}

/// The items a script produced (docs/runner.md, "Scripts"): its
/// `ok`/`err`/`skip` lines, plus an item named after the script with `timeout after <N>s`
/// when it timed out, or with `exit <code>: <last stderr line>` when it
/// failed without any `err` line.
pub fn items_of(script: &Script, outcome: &Outcome) -> Vec<(String, ItemResult)> {
    let mut items: Vec<(String, ItemResult)> = Vec::new();
    let mut put = |item: String, r: ItemResult| match items.iter_mut().find(|(i, _)| *i == item) {
        // A failure is never hidden by a later skip or ok of the same item,
        // nor a skip by a later ok.
        Some((_, old)) if r.verdict() > old.verdict() => *old = r,
        Some(_) => {}
        None => items.push((item, r)),
    };
    let mut reported_err = false;
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
            crate::output::printable_message(&outcome.last_stderr_line)
        )),
        Exit::Spawn(e) => Some(format!("exit 126: {e}")),
    };
    if let Some(msg) = msg {
        let msg = msg.trim_end_matches([':', ' ']).to_string();
        put(script.name.clone(), ItemResult::err(msg));
    }
    items
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::Capture;

    fn script(prefix: &str) -> Script {
        Script {
            category: Category::Disk,
            path: "/scripts/disk/usage.sh".into(),
            name: "usage".into(),
            item_prefix: prefix.into(),
        }
    }

    fn outcome(exit: Exit, lines: Vec<Line>, stderr: &str) -> Outcome {
        Outcome {
            exit,
            duration: Duration::from_millis(5),
            lines,
            stdout: Capture::default(),
            stderr: Capture::default(),
            last_stderr_line: stderr.into(),
        }
    }

    fn ok(i: &str) -> Line {
        Line::Ok { item: i.into() }
    }

    fn err(i: &str, m: &str) -> Line {
        Line::Err {
            item: i.into(),
            message: m.into(),
        }
    }

    #[test]
    fn reported_items_are_kept_in_order_with_their_prefix() {
        let o = outcome(Exit::Code(0), vec![ok("sda"), err("sdb", "full")], "");
        assert_eq!(
            items_of(&script("smart/"), &o),
            vec![
                ("smart/sda".into(), ItemResult::ok()),
                ("smart/sdb".into(), ItemResult::err("full")),
            ]
        );
    }

    #[test]
    fn a_non_zero_exit_without_err_line_becomes_the_script_item() {
        let o = outcome(Exit::Code(2), vec![ok("sda")], "df: cannot read table");
        assert_eq!(
            items_of(&script(""), &o),
            vec![
                ("sda".into(), ItemResult::ok()),
                (
                    "usage".into(),
                    ItemResult::err("exit 2: df: cannot read table")
                ),
            ]
        );
        let silent = outcome(Exit::Code(1), vec![], "");
        assert_eq!(
            items_of(&script(""), &silent),
            vec![("usage".into(), ItemResult::err("exit 1"))]
        );
    }

    #[test]
    fn a_non_zero_exit_with_an_err_line_adds_nothing() {
        let o = outcome(Exit::Code(1), vec![err("sdb", "full")], "boom");
        assert_eq!(
            items_of(&script(""), &o),
            vec![("sdb".into(), ItemResult::err("full"))]
        );
    }

    #[test]
    fn a_timeout_names_the_limit() {
        let o = outcome(Exit::Timeout(7), vec![ok("a")], "");
        assert_eq!(
            items_of(&script(""), &o)[1],
            ("usage".into(), ItemResult::err("timeout after 7s"))
        );
    }

    #[test]
    fn a_timeout_adds_the_script_item_even_after_err_lines() {
        let o = outcome(Exit::Timeout(1), vec![err("x", "boom")], "");
        assert_eq!(
            items_of(&script(""), &o),
            vec![
                ("x".into(), ItemResult::err("boom")),
                ("usage".into(), ItemResult::err("timeout after 1s")),
            ]
        );
    }

    fn skip(i: &str, r: &str) -> Line {
        Line::Skip {
            item: i.into(),
            reason: r.into(),
        }
    }

    #[test]
    fn skipped_items_are_kept_and_a_skip_is_not_an_err_line() {
        let o = outcome(
            Exit::Code(0),
            vec![skip("sda", "no smartctl"), ok("sdb")],
            "",
        );
        assert_eq!(
            items_of(&script("smart/"), &o),
            vec![
                ("smart/sda".into(), ItemResult::skip("no smartctl")),
                ("smart/sdb".into(), ItemResult::ok()),
            ]
        );
        // Only an err line says why a script failed: a skip does not.
        let failed = outcome(Exit::Code(3), vec![skip("sda", "no smartctl")], "boom");
        assert_eq!(
            items_of(&script(""), &failed)[1],
            ("usage".into(), ItemResult::err("exit 3: boom"))
        );
    }

    #[test]
    fn an_item_keeps_its_worst_result_failed_then_skipped_then_healthy() {
        let o = outcome(
            Exit::Code(0),
            vec![
                ok("a"),
                skip("a", "first skip"),
                ok("a"),
                skip("a", "second skip"),
                skip("b", "no tool"),
                err("b", "broken"),
                skip("b", "no tool"),
            ],
            "",
        );
        assert_eq!(
            items_of(&script(""), &o),
            vec![
                ("a".into(), ItemResult::skip("first skip")),
                ("b".into(), ItemResult::err("broken")),
            ]
        );
    }

    #[test]
    fn an_item_that_failed_stays_failed_when_reported_ok_later() {
        let o = outcome(
            Exit::Code(0),
            vec![err("a", "first"), ok("a"), err("a", "second")],
            "",
        );
        assert_eq!(
            items_of(&script(""), &o),
            vec![("a".into(), ItemResult::err("first"))]
        );
    }
}
