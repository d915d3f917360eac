//! Finding the scripts of a run (docs/runner.md, "Scripts").
//!
//! Every executable regular file in `<root>/<category>/` is a script. In
//! `<root>/custom/` (the user's ConfigMap) a file `<category>.<name>` belongs
//! to that category with items prefixed `<name>/`; any other file runs in
//! `custom`. `errlog/` and names starting with `.` (the ConfigMap volume's
//! `..data` links) are never scripts. The tree is read again at every run.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use combo_api::Category;

use crate::run::output::script_item;

/// Directory inside a category that holds its errlogs.
pub const ERRLOG_DIR: &str = "errlog";

/// Why the scripts could not be listed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The scripts root is missing or unreadable.
    #[error("scripts directory {path} is not readable")]
    Root {
        /// The scripts root.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: std::io::Error,
    },
}

/// Result of this module.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// One script to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Script {
    /// Category the script reports into.
    pub category: Category,
    /// Full path of the file.
    pub path: PathBuf,
    /// Item of a failure without an `err` line: the file name without extension.
    pub name: String,
    /// Prefix of the items it reports (`smart/` for `custom/disk.smart.sh`).
    pub item_prefix: String,
}

impl Script {
    /// The item name a reported item gets in the summary.
    pub fn item(&self, item: &str) -> String {
        format!("{}{item}", self.item_prefix)
    }
}

/// Where a file found in directory `dir` runs: its category, failure item
/// name and item prefix, or `None` when the name is never a script.
pub fn classify(dir: Category, file_name: &str) -> Option<(Category, String, String)> {
    if file_name.starts_with('.') || file_name == ERRLOG_DIR {
        return None;
    }
    if dir == Category::Custom {
        if let Some((cat, rest)) = file_name.split_once('.') {
            if let Ok(c) = cat.parse::<Category>() {
                if c != Category::Custom && !rest.is_empty() {
                    let name = script_item(rest);
                    return Some((c, name.clone(), format!("{name}/")));
                }
            }
        }
    }
    Some((dir, script_item(file_name), String::new()))
}

/// The scripts under `root` for `categories`, sorted by category then path.
/// A missing category directory has no scripts; a missing root is an error.
pub fn discover(root: &Path, categories: &[Category]) -> Result<Vec<Script>> {
    std::fs::read_dir(root).map_err(|source| Error::Root {
        path: root.to_path_buf(),
        source,
    })?;
    let mut scripts = Vec::new();
    for dir in Category::all() {
        let Ok(entries) = std::fs::read_dir(root.join(dir.as_str())) else {
            continue;
        };
        for entry in entries.flatten() {
            let file_name = entry.file_name().to_string_lossy().into_owned();
            let Some((category, name, item_prefix)) = classify(dir, &file_name) else {
                continue;
            };
            if !categories.contains(&category) || !is_executable_file(&entry.path()) {
                continue;
            }
            scripts.push(Script {
                category,
                path: entry.path(),
                name,
                item_prefix,
            });
        }
    }
    scripts.sort_by(|a, b| (a.category, &a.path).cmp(&(b.category, &b.path)));
    Ok(scripts)
}

/// A regular file (after following links, as ConfigMap keys are links) with
/// an execute bit.
fn is_executable_file(path: &Path) -> bool {
    std::fs::metadata(path)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdir::TestDir;

    #[test]
    fn configmap_keys_with_a_category_prefix_join_that_category() {
        assert_eq!(
            classify(Category::Custom, "disk.smart.sh"),
            Some((Category::Disk, "smart".into(), "smart/".into()))
        );
        assert_eq!(
            classify(Category::Custom, "hello.sh"),
            Some((Category::Custom, "hello".into(), String::new()))
        );
        assert_eq!(
            classify(Category::Custom, "custom.x.sh"),
            Some((Category::Custom, "custom.x".into(), String::new()))
        );
        assert_eq!(
            classify(Category::Disk, "net.sh"),
            Some((Category::Disk, "net".into(), String::new()))
        );
    }

    #[test]
    fn dot_files_and_errlog_are_never_scripts() {
        assert_eq!(classify(Category::Custom, "..data"), None);
        assert_eq!(classify(Category::Custom, "..2026_11_22"), None);
        assert_eq!(classify(Category::Disk, ".hidden.sh"), None);
        assert_eq!(classify(Category::Disk, "errlog"), None);
    }

    #[test]
    fn only_executable_regular_files_of_the_chosen_categories_are_found() {
        let d = TestDir::new("discover");
        d.script("disk/usage.sh", "exit 0");
        d.script("disk/inodes.sh", "exit 0");
        d.file("disk/README", "not a script", 0o644);
        d.mkdir("disk/errlog");
        d.mkdir("disk/subdir.sh");
        d.script("net/links.sh", "exit 0");
        d.script("custom/..2026/disk.smart.sh", "exit 0");
        d.symlink("custom/..data", "..2026");
        d.symlink("custom/disk.smart.sh", "..data/disk.smart.sh");
        d.symlink("custom/dangling.sh", "..data/none.sh");
        d.script("custom/hello.sh", "exit 0");

        let found = discover(d.path(), &[Category::Disk, Category::Custom]).unwrap();
        let names: Vec<_> = found
            .iter()
            .map(|s| {
                let rel = s.path.strip_prefix(d.path()).unwrap();
                format!(
                    "{} {} {}{}",
                    s.category,
                    rel.display(),
                    s.item_prefix,
                    s.name
                )
            })
            .collect();
        assert_eq!(
            names,
            vec![
                "disk custom/disk.smart.sh smart/smart",
                "disk disk/inodes.sh inodes",
                "disk disk/usage.sh usage",
                "custom custom/hello.sh hello",
            ]
        );
    }

    #[test]
    fn a_missing_root_is_an_error_and_a_missing_category_is_empty() {
        let d = TestDir::new("discover-missing");
        assert!(discover(&d.path().join("nope"), &Category::all()).is_err());
        assert_eq!(discover(d.path(), &Category::all()).unwrap(), vec![]);
    }
}
