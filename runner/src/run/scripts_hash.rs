//! Which scripts a run used (docs/runner.md, "Which scripts a run used"):
//! a short hash over the scripts the run executes and the library they
//! source, taken when the run starts, so nodes can be compared.
//!
//! Each file counts by its path under the scripts root as the run reaches
//! it (`custom/disk.smart.sh`, not the ConfigMap volume's `..data` or
//! timestamped directory it links to) and by its content. The hash is
//! FNV-1a (64 bit) over every file's length-prefixed path and content,
//! sorted by path, through the SplitMix64 finaliser; its first 12 hex
//! digits name the set. It tells versions apart; it is no integrity check.

use std::path::Path;

use combo_api::hash::{fnv1a, fnv1a_more, mix64};

use crate::run::discover::Script;

/// Hex digits of the hash a report carries.
pub const DIGITS: usize = 12;

/// Directory under the scripts root whose files the scripts source.
pub const LIB_DIR: &str = "lib";

/// The hash of `scripts` (found under `root`) and of the regular files
/// directly in `<root>/lib/` (names starting with `.` left out), as
/// [`DIGITS`] lowercase hex digits. A file that cannot be read counts by
/// its path and the error's kind, so it still changes the hash.
pub fn scripts_hash(root: &Path, scripts: &[Script]) -> String {
    let mut files: Vec<(String, Vec<u8>)> = scripts
        .iter()
        .map(|s| (relative(root, &s.path), content(&s.path)))
        .collect();
    files.extend(lib_files(root));
    hash_files(files)
}

/// The hash of `(path, content)` pairs, in any order.
pub fn hash_files(mut files: Vec<(String, Vec<u8>)>) -> String {
    files.sort();
    files.dedup_by(|a, b| a.0 == b.0);
    let h = files
        .iter()
        .fold(fnv1a(&[b"combo-scripts/1"]), |h, (p, c)| {
            fnv1a_more(
                h,
                &[
                    &(p.len() as u64).to_le_bytes(),
                    p.as_bytes(),
                    &(c.len() as u64).to_le_bytes(),
                    c,
                ],
            )
        });
    let mut hex = format!("{:016x}", mix64(h));
    hex.truncate(DIGITS);
    hex
}

/// `path` relative to `root`, `/`-separated as found.
fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

/// The bytes of `path` (links followed), or a marker naming why they
/// could not be read.
fn content(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| format!("\0unreadable: {:?}", e.kind()).into_bytes())
}

/// The regular files directly in `<root>/lib/`, with their content.
fn lib_files(root: &Path) -> Vec<(String, Vec<u8>)> {
    let Ok(entries) = std::fs::read_dir(root.join(LIB_DIR)) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .filter(|e| std::fs::metadata(e.path()).is_ok_and(|m| m.is_file()))
        .map(|e| (relative(root, &e.path()), content(&e.path())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::discover::discover;
    use crate::testdir::TestDir;
    use combo_api::Category;

    fn hash_of(d: &TestDir) -> String {
        let scripts = discover(d.path(), &Category::all()).unwrap();
        scripts_hash(d.path(), &scripts)
    }

    /// An image's scripts and library, and a ConfigMap volume as the
    /// kubelet lays it out: keys linking through `..data` to a timestamped
    /// directory.
    fn tree(tag: &str, stamp: &str, custom: &[(&str, &str)]) -> TestDir {
        let d = TestDir::new(tag);
        d.script("disk/usage.sh", "echo ok usage");
        d.script("net/links.sh", "echo ok links");
        d.file("lib/common.sh", "x=1\n", 0o644);
        d.mkdir(&format!("custom/{stamp}"));
        for (key, body) in custom {
            d.script(&format!("custom/{stamp}/{key}"), body);
            d.symlink(&format!("custom/{key}"), &format!("..data/{key}"));
        }
        d.symlink("custom/..data", stamp);
        d
    }

    #[test]
    fn the_hash_is_12_hex_digits_and_stable() {
        let d = tree("hash-stable", "..2026_01", &[("hello.sh", "echo ok hi")]);
        let h = hash_of(&d);
        assert_eq!(h.len(), DIGITS);
        assert!(h
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert_eq!(hash_of(&d), h, "same files, same hash");
        // Fixed values: the hash never changes between builds or releases.
        assert_eq!(hash_files(vec![]), "e6534a169900");
        assert_eq!(
            hash_files(vec![("disk/usage.sh".into(), b"echo ok".to_vec())]),
            "4b57aab744ed"
        );
    }

    #[test]
    fn the_configmap_volume_internals_do_not_count() {
        let a = tree("hash-vol-a", "..2026_01_01", &[("hello.sh", "echo ok hi")]);
        let b = tree("hash-vol-b", "..2027_12_31", &[("hello.sh", "echo ok hi")]);
        assert_eq!(hash_of(&a), hash_of(&b), "another timestamped directory");
        // Another tree holding the same files as plain files.
        let c = TestDir::new("hash-vol-c");
        c.script("disk/usage.sh", "echo ok usage");
        c.script("net/links.sh", "echo ok links");
        c.file("lib/common.sh", "x=1\n", 0o644);
        c.script("custom/hello.sh", "echo ok hi");
        assert_eq!(hash_of(&a), hash_of(&c), "links or files, the same scripts");
    }

    #[test]
    fn content_names_and_deleted_scripts_change_the_hash() {
        let base = tree("hash-base", "..1", &[("hello.sh", "echo ok hi")]);
        let h = hash_of(&base);
        let edited = tree("hash-edit", "..1", &[("hello.sh", "echo ok bye")]);
        assert_ne!(hash_of(&edited), h, "a script's content");
        let renamed = tree("hash-rename", "..1", &[("hi.sh", "echo ok hi")]);
        assert_ne!(hash_of(&renamed), h, "a script's name");
        let deleted = tree("hash-deleted", "..1", &[]);
        assert_ne!(hash_of(&deleted), h, "a deleted script");
        let added = tree(
            "hash-added",
            "..1",
            &[("hello.sh", "echo ok hi"), ("disk.smart.sh", "echo ok sda")],
        );
        assert_ne!(hash_of(&added), h, "an added script");
        base.file("lib/common.sh", "x=2\n", 0o644);
        assert_ne!(hash_of(&base), h, "the library the scripts source");
    }

    #[test]
    fn files_the_run_does_not_execute_do_not_count() {
        let d = tree("hash-ignored", "..1", &[("hello.sh", "echo ok hi")]);
        let h = hash_of(&d);
        d.file("disk/README", "not a script", 0o644);
        d.mkdir("disk/errlog");
        d.file("disk/errlog/20261122T060000Z.log", "log", 0o644);
        d.file("lib/.hidden", "x", 0o644);
        assert_eq!(hash_of(&d), h);
    }

    #[test]
    fn path_and_content_boundaries_are_unambiguous() {
        let one = hash_files(vec![("a".into(), b"bc".to_vec())]);
        let other = hash_files(vec![("ab".into(), b"c".to_vec())]);
        assert_ne!(one, other);
        let two = hash_files(vec![
            ("a".into(), b"x".to_vec()),
            ("b".into(), b"y".to_vec()),
        ]);
        assert_eq!(
            two,
            hash_files(vec![
                ("b".into(), b"y".to_vec()),
                ("a".into(), b"x".to_vec())
            ]),
            "order of the files does not count"
        );
    }
}
