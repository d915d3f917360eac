//! The scripts' state (docs/runner.md, "State between runs"): a directory
//! per script that persists across runs, so a check can count what
//! happened since the node's previous run, and the id of that run.
//!
//! The root holds `<directory>/<file name>/` per script (the directory the
//! script is found in: its category, or `custom` for a ConfigMap key) and
//! the file [`LAST_RUN_FILE`]. A script's directory is bounded to
//! [`STATE_LIMIT`] bytes: one that grew past it is emptied after the run
//! and the script gets an err item saying so. With enableSys the root is
//! on the node, in the Debugger's directory of its uid
//! ([`remove_other_uids`] clears those of earlier uids).

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

use combo_api::RunId;

use crate::run::discover::Script;

/// The state root in a pod. With enableSys the operator mounts the
/// Debugger's directory on the node here, so the state outlives the pod;
/// otherwise an emptyDir, so it lives as long as the pod, across restarts
/// of its runner container.
pub const POD_STATE_ROOT: &str = "/var/lib/combo-runner/state";

/// The state root of local mode run as root.
pub const SYSTEM_STATE_ROOT: &str = "/var/lib/combo-runner/state";

/// File in the state root holding the id of the last completed run.
pub const LAST_RUN_FILE: &str = "last-run-id";

/// Most bytes a script's state directory may hold after a run: enough for
/// counters of thousands of interfaces or devices, little enough that the
/// state of every script on a node stays a few MiB.
pub const STATE_LIMIT: u64 = 1024 * 1024;

/// Least bytes one entry of a state directory counts for, so that many
/// empty files (each an inode and a directory entry) are bounded too.
const ENTRY_MIN: u64 = 512;

/// The state root of local mode when `--state-dir` is not given: as root
/// [`SYSTEM_STATE_ROOT`], else `$XDG_STATE_HOME/combo-runner`, where
/// `XDG_STATE_HOME` defaults to `$HOME/.local/state`; `None` when neither
/// variable is set for a user other than root.
pub fn local_default(euid_is_root: bool, var: impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    if euid_is_root {
        return Some(PathBuf::from(SYSTEM_STATE_ROOT));
    }
    let set = |k: &str| var(k).filter(|v| v.starts_with('/'));
    set("XDG_STATE_HOME")
        .map(PathBuf::from)
        .or_else(|| set("HOME").map(|h| Path::new(&h).join(".local/state")))
        .map(|base| base.join("combo-runner"))
}

/// The state root of one run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StateRoot(PathBuf);

impl StateRoot {
    /// The root at `path`, made absolute (scripts get it in `STATE_DIR`
    /// whatever their working directory); it is created when first used.
    pub fn new(path: impl Into<PathBuf>) -> StateRoot {
        let path = path.into();
        StateRoot(std::path::absolute(&path).unwrap_or(path))
    }

    /// The root's path.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// The state directory of `script`: `<root>/<directory>/<file name>`.
    pub fn dir_of(&self, script: &Script) -> PathBuf {
        let parent = script
            .path
            .parent()
            .and_then(Path::file_name)
            .unwrap_or_else(|| script.category.as_str().as_ref());
        let file = script
            .path
            .file_name()
            .unwrap_or_else(|| script.name.as_ref());
        self.0.join(parent).join(file)
    }

    /// Creates the state directory of `script` (and the root), private to
    /// the runner's user, and returns it.
    pub fn prepare(&self, script: &Script) -> std::io::Result<PathBuf> {
        let dir = self.dir_of(script);
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)?;
        Ok(dir)
    }

    /// The id of the last run completed with this root, if any.
    pub fn previous_run(&self) -> Option<RunId> {
        let text = std::fs::read_to_string(self.0.join(LAST_RUN_FILE)).ok()?;
        text.trim().parse().ok()
    }

    /// Records `run` as the last completed run: written under a hidden name
    /// and renamed into place, so a reader never sees half of it.
    pub fn record_run(&self, run: RunId) -> std::io::Result<()> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.0)?;
        // Named after the process: two local runs may share a root.
        let tmp = self
            .0
            .join(format!(".{LAST_RUN_FILE}.{}.tmp", std::process::id()));
        let mut f = std::fs::File::create(&tmp)?;
        writeln!(f, "{run}")?;
        f.sync_all()?;
        std::fs::rename(&tmp, self.0.join(LAST_RUN_FILE))
    }
}

/// What a state directory was found to hold after a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Size {
    /// At most [`STATE_LIMIT`] bytes, as counted.
    Within(u64),
    /// More than the limit (counting stopped once past it).
    Over,
}

/// The size of the tree under `dir`, counted as the sum over every entry
/// below it (file, directory, link; links are not followed) of its length
/// in bytes, each counting at least `ENTRY_MIN`. Counting stops once
/// past `limit`, so a tree of millions of files costs little.
pub fn measure(dir: &Path, limit: u64) -> std::io::Result<Size> {
    let mut total: u64 = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d)? {
            let entry = entry?;
            let meta = entry.path().symlink_metadata()?;
            total += meta.size().max(ENTRY_MIN);
            if total > limit {
                return Ok(Size::Over);
            }
            if meta.is_dir() {
                stack.push(entry.path());
            }
        }
    }
    Ok(Size::Within(total))
}

/// Removes everything inside `dir`, leaving `dir` itself; links are
/// removed, never followed.
pub fn empty(dir: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.symlink_metadata()?.is_dir() {
            std::fs::remove_dir_all(&path)?;
        } else {
            std::fs::remove_file(&path)?;
        }
    }
    Ok(())
}

/// Enforces [`STATE_LIMIT`] on the state directory `dir` after its script
/// ran: returns the err message of the item `<script>/state` when the
/// directory was over the bound (and is now emptied) or could not be
/// checked, else `None`.
pub fn enforce_limit(dir: &Path) -> Option<String> {
    match measure(dir, STATE_LIMIT) {
        Ok(Size::Within(_)) => None,
        Ok(Size::Over) => Some(match empty(dir) {
            Ok(()) => format!(
                "state directory {} was over the bound of {} bytes and was reset; the next run starts from no state",
                dir.display(),
                STATE_LIMIT
            ),
            Err(e) => format!(
                "state directory {} is over the bound of {} bytes and could not be reset: {e}",
                dir.display(),
                STATE_LIMIT
            ),
        }),
        Err(e) => Some(format!(
            "state directory {} could not be measured: {e}",
            dir.display()
        )),
    }
}

/// Removes every entry of `dir`, the Debugger's directory on the node
/// (docs/runner.md, "Where state and errlogs live"), but `keep`, the
/// current Debugger's uid: what is left there belongs to a Debugger of the
/// same name deleted earlier, whose baselines must not count for this one.
/// Returns the entries removed; one that cannot be removed is logged and
/// left.
pub fn remove_other_uids(dir: &Path, keep: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == keep {
            continue;
        }
        let path = entry.path();
        let result = match path.symlink_metadata() {
            Ok(m) if m.is_dir() => std::fs::remove_dir_all(&path),
            _ => std::fs::remove_file(&path),
        };
        match result {
            Ok(()) => removed.push(name),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "cannot remove an earlier Debugger's directory")
            }
        }
    }
    removed.sort();
    removed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdir::TestDir;
    use combo_api::Category;

    fn script(path: &str, category: Category) -> Script {
        Script {
            category,
            path: path.into(),
            name: "x".into(),
            item_prefix: String::new(),
        }
    }

    #[test]
    fn each_script_has_its_own_directory_named_after_where_it_is_found() {
        let root = StateRoot::new("/state");
        assert_eq!(
            root.dir_of(&script("/scripts/mem/oom.sh", Category::Mem)),
            PathBuf::from("/state/mem/oom.sh")
        );
        // A ConfigMap key runs in its category but keeps apart from a
        // script of the same name in that category's own directory.
        assert_eq!(
            root.dir_of(&script("/scripts/custom/disk.smart.sh", Category::Disk)),
            PathBuf::from("/state/custom/disk.smart.sh")
        );
        assert_eq!(
            root.dir_of(&script("/scripts/disk/disk.smart.sh", Category::Disk)),
            PathBuf::from("/state/disk/disk.smart.sh")
        );
    }

    #[test]
    fn a_relative_root_is_made_absolute() {
        let root = StateRoot::new("rel/state");
        assert!(root.path().is_absolute());
        assert!(root.path().ends_with("rel/state"));
    }

    #[test]
    fn a_prepared_directory_is_private_and_survives_the_next_prepare() {
        use std::os::unix::fs::PermissionsExt;
        let d = TestDir::new("state-prepare");
        let root = StateRoot::new(d.path().join("root"));
        let s = script("/scripts/net/counters.sh", Category::Net);
        let dir = root.prepare(&s).unwrap();
        std::fs::write(dir.join("baseline"), "42").unwrap();
        assert_eq!(root.prepare(&s).unwrap(), dir);
        assert_eq!(std::fs::read_to_string(dir.join("baseline")).unwrap(), "42");
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
    }

    #[test]
    fn the_last_run_is_none_at_first_then_the_one_recorded() {
        let d = TestDir::new("state-last-run");
        let root = StateRoot::new(d.path().join("root"));
        assert_eq!(root.previous_run(), None);
        let run: RunId = "20261122T060000Z".parse().unwrap();
        root.record_run(run).unwrap();
        assert_eq!(root.previous_run(), Some(run));
        let later: RunId = "20261122T070000Z".parse().unwrap();
        root.record_run(later).unwrap();
        assert_eq!(root.previous_run(), Some(later));
        std::fs::write(d.path().join("root").join(LAST_RUN_FILE), "garbage").unwrap();
        assert_eq!(root.previous_run(), None, "an unreadable id is no id");
    }

    #[test]
    fn size_counts_files_below_and_stops_past_the_limit() {
        let d = TestDir::new("state-measure");
        d.file("s/a", &"x".repeat(1000), 0o644);
        d.file("s/sub/b", &"y".repeat(2000), 0o644);
        d.file("s/sub/empty", "", 0o644);
        let Size::Within(n) = measure(&d.path().join("s"), STATE_LIMIT).unwrap() else {
            panic!("within");
        };
        // a, sub (a directory: its own length, at least 512), b, empty (512).
        assert!(
            (1000 + 2000 + 512 + 512..1000 + 2000 + 512 + 8192).contains(&n),
            "{n}"
        );
        assert_eq!(measure(&d.path().join("s"), 3000).unwrap(), Size::Over);
    }

    #[test]
    fn many_empty_files_are_over_the_bound_too() {
        let d = TestDir::new("state-many");
        for i in 0..(STATE_LIMIT / ENTRY_MIN + 1) {
            d.file(&format!("s/f{i}"), "", 0o644);
        }
        assert_eq!(
            measure(&d.path().join("s"), STATE_LIMIT).unwrap(),
            Size::Over
        );
    }

    #[test]
    fn a_directory_over_the_bound_is_emptied_and_links_out_of_it_are_not_followed() {
        let d = TestDir::new("state-enforce");
        d.file("outside/keep", "precious", 0o644);
        d.file("s/big", &"z".repeat(STATE_LIMIT as usize + 1), 0o644);
        d.file("s/sub/small", "1", 0o644);
        d.symlink("s/link", "../outside");
        let dir = d.path().join("s");
        let msg = enforce_limit(&dir).expect("over the bound");
        assert!(
            msg.contains("over the bound of 1048576 bytes and was reset"),
            "{msg}"
        );
        assert!(dir.is_dir(), "the directory itself stays");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        assert_eq!(
            std::fs::read_to_string(d.path().join("outside/keep")).unwrap(),
            "precious"
        );
        assert_eq!(enforce_limit(&dir), None, "an empty directory is within");
    }

    #[test]
    fn only_the_current_debuggers_directory_stays_on_the_node() {
        let d = TestDir::new("state-uids");
        d.file("node/uid-old/state/net/counters.sh/counters", "1", 0o644);
        d.file("node/uid-old/errlog/disk/20261122T060000Z.log", "x", 0o644);
        d.file("node/uid-now/state/last-run-id", "20261122T060000Z", 0o644);
        d.file("node/stray", "", 0o644);
        let dir = d.path().join("node");
        assert_eq!(remove_other_uids(&dir, "uid-now"), ["stray", "uid-old"]);
        let left: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(left, ["uid-now"]);
        assert!(dir.join("uid-now/state/last-run-id").is_file());
        assert!(
            remove_other_uids(&d.path().join("missing"), "uid-now").is_empty(),
            "no directory, nothing to do"
        );
    }

    #[test]
    fn local_mode_keeps_state_per_user_or_system_wide_for_root() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(
            local_default(true, env(&[("HOME", "/root")])),
            Some(PathBuf::from("/var/lib/combo-runner/state"))
        );
        assert_eq!(
            local_default(
                false,
                env(&[("XDG_STATE_HOME", "/x/state"), ("HOME", "/home/a")])
            ),
            Some(PathBuf::from("/x/state/combo-runner"))
        );
        assert_eq!(
            local_default(false, env(&[("HOME", "/home/a")])),
            Some(PathBuf::from("/home/a/.local/state/combo-runner"))
        );
        assert_eq!(
            local_default(false, env(&[("XDG_STATE_HOME", "relative")])),
            None,
            "a relative XDG_STATE_HOME is ignored, as the XDG spec says"
        );
    }
}
