//! The suite report of the tests (docs/testing.md, "Suite report"): each
//! test that tries faults or bad input records its case as one
//! tab-separated line `area tried handled lost case`, and
//! `tests/suite-report.sh` sums them per area.
//!
//! Only tests call this module: the end-to-end, runner and pinger tests
//! all record.

use std::io::Write as _;
use std::path::{Path, PathBuf};

/// File of the suite report: `COMBO_SUITE_REPORT`, or
/// `target/suite-report.tsv` under the workspace root.
pub fn suite_report_path() -> PathBuf {
    if let Some(p) = std::env::var_os("COMBO_SUITE_REPORT") {
        return PathBuf::from(p);
    }
    // `cargo test` sets CARGO_MANIFEST_DIR for the test binaries it runs;
    // a binary started otherwise falls back to where this crate was built.
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    workspace_root(&manifest)
        .unwrap_or(manifest)
        .join("target/suite-report.tsv")
}

/// The nearest directory at or above `start` whose `Cargo.toml` declares
/// a `[workspace]`.
fn workspace_root(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .find(|dir| {
            std::fs::read_to_string(dir.join("Cargo.toml"))
                .is_ok_and(|toml| toml.lines().any(|l| l.trim() == "[workspace]"))
        })
        .map(Path::to_path_buf)
}

/// Records one case of the suite report under `area` (for example
/// `faults`, `bad input`): how many inputs or faults were `tried`, how many
/// were `handled` (survived, rejected with a clear message, reported
/// right) and how many reports or keys were `lost`. Record before asserting,
/// so that a failing case still counts as tried and not handled (or use a
/// [`Case`]). `tests/run-all.sh` prints one line per area at the end.
pub fn record(area: &str, case: &str, tried: u64, handled: u64, lost: u64) {
    append(
        &suite_report_path(),
        &line(area, case, tried, handled, lost),
    );
}

/// The report line of one case; tabs and newlines in the names become
/// spaces so that the line keeps its five fields.
fn line(area: &str, case: &str, tried: u64, handled: u64, lost: u64) -> String {
    let clean = |s: &str| s.replace(['\t', '\n', '\r'], " ");
    format!(
        "{}\t{tried}\t{handled}\t{lost}\t{}\n",
        clean(area),
        clean(case)
    )
}

fn append(path: &Path, line: &str) {
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    // One write of one short line in append mode: lines of tests running
    // in parallel do not interleave.
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(line.as_bytes()));
    if let Err(e) = written {
        eprintln!("suite report {}: {e}", path.display());
    }
}

/// One case of the suite report, opened before its faults are tried.
/// [`Case::done`] records how many were handled; a case dropped without
/// it (its test panicked first, in a helper or a check) records all of
/// them as tried and none handled.
#[must_use = "a case records when done or dropped"]
pub struct Case {
    path: PathBuf,
    area: String,
    name: String,
    tried: u64,
    recorded: bool,
}

impl Case {
    /// A case of `tried` faults or inputs under `area`.
    pub fn new(area: &str, name: &str, tried: u64) -> Case {
        Case::at(suite_report_path(), area, name, tried)
    }

    fn at(path: PathBuf, area: &str, name: &str, tried: u64) -> Case {
        Case {
            path,
            area: area.to_string(),
            name: name.to_string(),
            tried,
            recorded: false,
        }
    }

    /// Records the case: `handled` of its faults were handled, `lost`
    /// reports or keys were lost.
    pub fn done(mut self, handled: u64, lost: u64) {
        self.write(handled, lost);
    }

    fn write(&mut self, handled: u64, lost: u64) {
        self.recorded = true;
        append(
            &self.path,
            &line(&self.area, &self.name, self.tried, handled, lost),
        );
    }
}

impl Drop for Case {
    fn drop(&mut self) {
        if !self.recorded {
            self.write(0, 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch directory for one test, removed at the end.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(tag: &str) -> Scratch {
            let p =
                std::env::temp_dir().join(format!("combo-api-suite-{tag}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&p);
            std::fs::create_dir_all(&p).unwrap();
            Scratch(p)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn a_line_keeps_five_fields_whatever_the_names_hold() {
        assert_eq!(
            line("bad\tinput", "a\nb\r\tc", 3, 2, 1),
            "bad input\t3\t2\t1\ta b  c\n"
        );
    }

    #[test]
    fn the_report_lies_under_the_workspace_root_of_the_crate() {
        let root = workspace_root(Path::new(env!("CARGO_MANIFEST_DIR"))).unwrap();
        let toml = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
        assert!(toml.contains("members"), "{}", root.display());
        assert_ne!(root, Path::new(env!("CARGO_MANIFEST_DIR")));
    }

    #[test]
    fn a_case_done_records_its_counts_and_a_dropped_one_counts_as_not_handled() {
        let dir = Scratch::new("case");
        let file = dir.0.join("sub/report.tsv");
        Case::at(file.clone(), "faults", "handled", 2).done(2, 0);
        {
            let _failed = Case::at(file.clone(), "faults", "panicked", 3);
        }
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "faults\t2\t2\t0\thandled\nfaults\t3\t0\t0\tpanicked\n"
        );
    }
}
