//! What a test run killed before its guards could drop left behind:
//! network namespaces and directories named `<prefix><pid>-…` after the
//! test process that made them. A later run removes those whose process is
//! gone, and never one of a process still running.

use std::path::Path;

/// The name a test process gives what it makes: `<prefix><its pid>-<tail>`.
pub fn own_name(prefix: &str, tail: &str) -> String {
    format!("{prefix}{}-{tail}", std::process::id())
}

/// Whether `name` is `<prefix><pid>-…` of a process that no longer runs.
/// A name of another shape, or of a running process, is not.
pub fn orphaned(name: &str, prefix: &str) -> bool {
    let Some(rest) = name.strip_prefix(prefix) else {
        return false;
    };
    let Some((pid, _)) = rest.split_once('-') else {
        return false;
    };
    match pid.parse::<u32>() {
        Ok(pid) if pid > 0 => !Path::new(&format!("/proc/{pid}")).exists(),
        _ => false,
    }
}

/// The entries of `dir` named `<prefix><pid>-…` of processes gone.
pub fn orphans_in(dir: &Path, prefix: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|name| orphaned(name, prefix))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_names_of_gone_processes_are_orphans() {
        let mine = own_name("kct-", "0");
        assert!(!orphaned(&mine, "kct-"), "this process runs");
        // Above the kernel's pid_max (4194304 at most): no such process.
        assert!(orphaned("kct-4194305-0", "kct-"));
        assert!(!orphaned("kct-4194305-0", "other-"));
        assert!(!orphaned("kct-abc-0", "kct-"));
        assert!(!orphaned("kct-4194305", "kct-"));
        assert!(!orphaned("kct-0-1", "kct-"));
    }

    #[test]
    fn a_directory_lists_the_orphans_under_a_prefix() {
        let dir = std::env::temp_dir().join(own_name("kct-orphans-", "dir"));
        std::fs::create_dir_all(&dir).unwrap();
        for name in ["kct-4194305-a", &own_name("kct-", "b"), "else-4194305-c"] {
            std::fs::create_dir_all(dir.join(name)).unwrap();
        }
        let found = orphans_in(&dir, "kct-");
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(found, ["kct-4194305-a"]);
        assert!(orphans_in(&dir, "kct-").is_empty(), "a missing directory");
    }
}
