//! Errlogs (docs/runner.md, "Errlogs"): `<scripts>/<category>/errlog/<run id>.log` holds what
//! failed in one run; only the newest files are kept.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use combo_api::{Category, RunId};

use crate::run::discover::ERRLOG_DIR;
use crate::run::{Report, ScriptRun};

/// Why an errlog could not be written.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Writing the file or its directory failed.
    #[error("cannot write errlog {path}")]
    Write {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: std::io::Error,
    },
}

/// Result of this module.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Where the errlogs of each category go.
#[derive(Clone, Debug)]
pub enum Layout {
    /// `<root>/<category>/errlog/`, next to the scripts. When that directory
    /// cannot be made (the ConfigMap at `<root>/custom` is read-only), the
    /// category's errlogs go to `<root>/errlog/<category>/` instead.
    BesideScripts(PathBuf),
    /// `<dir>/<category>/` (local mode's `--errlog-dir`).
    Under(PathBuf),
}

impl Layout {
    /// The preferred errlog directory of `category`.
    pub fn dir(&self, category: Category) -> PathBuf {
        match self {
            Layout::BesideScripts(root) => root.join(category.as_str()).join(ERRLOG_DIR),
            Layout::Under(dir) => dir.join(category.as_str()),
        }
    }

    fn fallback(&self, category: Category) -> Option<PathBuf> {
        match self {
            Layout::BesideScripts(root) => Some(root.join(ERRLOG_DIR).join(category.as_str())),
            Layout::Under(_) => None,
        }
    }
}

/// File name of a run's errlog.
pub fn file_name(run_id: RunId) -> String {
    format!("{run_id}.log")
}

/// Writes the errlog of every category with a failure in `report`, then
/// keeps only the newest `retention` errlogs of that category. Returns the
/// files written.
pub fn write(layout: &Layout, report: &Report, retention: usize) -> Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    let mut categories: Vec<Category> = report.scripts.iter().map(|s| s.script.category).collect();
    categories.dedup();
    for category in categories {
        let failed: Vec<&ScriptRun> = report
            .scripts
            .iter()
            .filter(|s| s.script.category == category && s.failed().next().is_some())
            .collect();
        if failed.is_empty() {
            continue;
        }
        let text = render(report.run_id, category, &failed);
        let name = file_name(report.run_id);
        let dir = layout.dir(category);
        let path = match write_file(&dir, &name, &text) {
            Ok(p) => p,
            Err(first) => match layout.fallback(category) {
                Some(alt) => write_file(&alt, &name, &text).map_err(|_| first)?,
                None => return Err(first),
            },
        };
        if let Some(dir) = path.parent() {
            prune(dir, &name, retention);
        }
        written.push(path);
    }
    Ok(written)
}

/// Writes `dir/name` whole or not at all: the text goes to a hidden file
/// first, renamed into place once complete, so a runner stopped while
/// writing leaves no partial errlog (a name that starts with `.` is never
/// taken for one).
fn write_file(dir: &Path, name: &str, text: &str) -> Result<PathBuf> {
    let path = dir.join(name);
    let partial = dir.join(format!(".{name}.partial"));
    std::fs::create_dir_all(dir)
        .and_then(|_| std::fs::write(&partial, text))
        .and_then(|_| std::fs::rename(&partial, &path))
        .map_err(|source| Error::Write {
            path: path.clone(),
            source,
        })?;
    Ok(path)
}

/// The errlog text of one category: a section per failed script naming the
/// script, its failed items and messages, exit code, duration, and its
/// captured stdout and stderr.
pub fn render(run_id: RunId, category: Category, failed: &[&ScriptRun]) -> String {
    let mut s = format!(
        "# kube-combo errlog: run {run_id} ({}), category {category}\n",
        run_id.rfc3339()
    );
    for run in failed {
        s.push_str(&format!(
            "\n=== script: {}\nexit code: {}\nduration: {:.3}s\n",
            // One line whatever the file is named.
            crate::run::output::printable_item(&run.script.path.to_string_lossy()),
            run.outcome.exit.describe(),
            run.outcome.duration.as_secs_f64(),
        ));
        for (item, msg) in run.failed() {
            s.push_str(&format!("item: {item}\nerr: {msg}\n"));
        }
        for (name, cap) in [
            ("stdout", &run.outcome.stdout),
            ("stderr", &run.outcome.stderr),
        ] {
            s.push_str(&format!("--- {name} ({} bytes) ---\n", cap.total));
            let text = cap.text();
            s.push_str(&text);
            if !text.is_empty() && !text.ends_with('\n') {
                s.push('\n');
            }
        }
    }
    s
}

/// Keeps the `retention` newest errlogs in `dir`, by when they were
/// written, and always `written`, the file of the run just finished; other
/// files are left alone.
pub fn prune(dir: &Path, written: &str, retention: usize) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let logs: Vec<(SystemTime, String)> = entries
        .flatten()
        .filter_map(|e| {
            let modified = e.metadata().ok()?.modified().ok()?;
            Some((modified, e.file_name().to_string_lossy().into_owned()))
        })
        .collect();
    for old in to_remove(logs, written, retention) {
        if let Err(e) = std::fs::remove_file(dir.join(&old)) {
            tracing::warn!(file = %old, error = %e, "cannot remove old errlog");
        }
    }
}

/// Which of `logs` (modification time, file name) to delete so that
/// `written` and the newest others, `retention` files in all, remain.
///
/// Newest by time, not by name: a run id names the scheduled time, and a
/// `runAt` set to an earlier timestamp runs after later ones, so the file
/// just written may have the smallest name. Equal times fall back to the
/// name.
pub fn to_remove(logs: Vec<(SystemTime, String)>, written: &str, retention: usize) -> Vec<String> {
    let mut older: Vec<(SystemTime, String)> = logs
        .into_iter()
        .filter(|(_, n)| {
            n != written
                && n.strip_suffix(".log")
                    .is_some_and(|id| id.parse::<RunId>().is_ok())
        })
        .collect();
    older.sort();
    let keep_from = older.len().saturating_sub(retention.saturating_sub(1));
    older.truncate(keep_from);
    older.into_iter().map(|(_, n)| n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(secs)
    }

    #[test]
    fn retention_removes_the_oldest_errlogs_and_nothing_else() {
        let logs = vec![
            (at(300), "20261122T060000Z.log".to_string()),
            (at(100), "20251231T235959Z.log".to_string()),
            (at(200), "20261122T000000Z.log".to_string()),
            (at(50), "notes.txt".to_string()),
            (at(60), "garbage.log".to_string()),
        ];
        let written = "20261122T060000Z.log";
        assert_eq!(
            to_remove(logs.clone(), written, 2),
            vec!["20251231T235959Z.log".to_string()]
        );
        assert_eq!(to_remove(logs.clone(), written, 10), Vec::<String>::new());
        assert_eq!(
            to_remove(logs, written, 0).len(),
            2,
            "never the one written"
        );
    }

    #[test]
    fn retention_goes_by_when_a_run_happened_not_by_its_name() {
        // Two ad-hoc runs in November, then runAt set back to June: the
        // June file is the newest though its name sorts first.
        let logs = vec![
            (at(100), "20261125T180000Z.log".to_string()),
            (at(200), "20261125T180100Z.log".to_string()),
            (at(300), "20250601T000000Z.log".to_string()),
        ];
        assert_eq!(
            to_remove(logs.clone(), "20250601T000000Z.log", 2),
            vec!["20261125T180000Z.log".to_string()]
        );
        // Equal times: the name decides, and the file written stays.
        let same = vec![
            (at(100), "20261125T180000Z.log".to_string()),
            (at(100), "20261125T180100Z.log".to_string()),
            (at(100), "20250601T000000Z.log".to_string()),
        ];
        assert_eq!(
            to_remove(same, "20250601T000000Z.log", 2),
            vec!["20261125T180000Z.log".to_string()]
        );
    }

    #[test]
    fn an_errlog_of_an_earlier_run_id_written_last_is_kept() {
        let d = crate::testdir::TestDir::new("errlog-retention");
        let layout = Layout::BesideScripts(d.path().to_path_buf());
        let now = SystemTime::now();
        for (name, age) in [("20261125T180000Z.log", 120), ("20261125T180100Z.log", 60)] {
            d.file(&format!("disk/errlog/{name}"), "old", 0o644);
            std::fs::File::options()
                .write(true)
                .open(d.path().join("disk/errlog").join(name))
                .unwrap()
                .set_modified(now - std::time::Duration::from_secs(age))
                .unwrap();
        }
        let mut r = report(Category::Disk, true);
        r.run_id = RunId::at(
            chrono::DateTime::parse_from_rfc3339("2025-06-01T00:00:00Z")
                .unwrap()
                .to_utc(),
        );
        let written = write(&layout, &r, 2).unwrap();
        assert_eq!(
            written,
            vec![d.path().join("disk/errlog/20250601T000000Z.log")]
        );
        let mut left: Vec<String> = std::fs::read_dir(d.path().join("disk/errlog"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["20250601T000000Z.log", "20261125T180100Z.log"]);
    }

    fn report(category: Category, failed: bool) -> Report {
        use crate::run::discover::Script;
        use crate::run::exec::{Capture, Exit, Outcome};
        let t = chrono::DateTime::parse_from_rfc3339("2026-11-22T06:00:00Z")
            .unwrap()
            .to_utc();
        let item = if failed {
            ItemResult::err("broken")
        } else {
            ItemResult::ok()
        };
        Report {
            run_id: RunId::at(t),
            started_at: t,
            finished_at: t,
            scripts_hash: String::new(),
            scripts: vec![ScriptRun {
                script: Script {
                    category,
                    path: "/scripts/custom/x.sh".into(),
                    name: "x".into(),
                    item_prefix: String::new(),
                },
                outcome: Outcome {
                    exit: Exit::Code(0),
                    duration: std::time::Duration::from_millis(12),
                    lines: vec![],
                    untaken: Default::default(),
                    stdout: Capture::default(),
                    stderr: Capture::default(),
                    last_stderr_line: String::new(),
                },
                items: vec![("a".into(), item)],
            }],
        }
    }

    use combo_api::ItemResult;

    #[test]
    fn a_category_whose_directory_is_not_writable_logs_under_the_errlog_fallback() {
        let d = crate::testdir::TestDir::new("errlog-fallback");
        // As a read-only ConfigMap mount would, refuse the errlog directory.
        d.file("custom/errlog", "not a directory", 0o444);
        let layout = Layout::BesideScripts(d.path().to_path_buf());
        let written = write(&layout, &report(Category::Custom, true), 10).unwrap();
        assert_eq!(
            written,
            vec![d.path().join("errlog/custom/20261122T060000Z.log")]
        );
        let text = std::fs::read_to_string(&written[0]).unwrap();
        assert!(text.contains("item: a\nerr: broken\n"), "{text}");
        assert!(text.contains("duration: 0.012s"), "{text}");
    }

    #[test]
    fn a_run_without_failures_writes_no_errlog() {
        let d = crate::testdir::TestDir::new("errlog-none");
        let layout = Layout::BesideScripts(d.path().to_path_buf());
        assert!(write(&layout, &report(Category::Disk, false), 10)
            .unwrap()
            .is_empty());
        assert!(!d.path().join("disk").exists());
    }

    #[test]
    fn layouts_follow_the_spec_paths() {
        let l = Layout::BesideScripts("/scripts".into());
        assert_eq!(l.dir(Category::Disk), Path::new("/scripts/disk/errlog"));
        assert_eq!(
            l.fallback(Category::Custom).unwrap(),
            Path::new("/scripts/errlog/custom")
        );
        let u = Layout::Under("/tmp/e".into());
        assert_eq!(u.dir(Category::Net), Path::new("/tmp/e/net"));
    }
}
