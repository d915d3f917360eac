//! A scratch directory for unit tests, removed when dropped.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// A fresh directory under the system temp dir.
pub struct TestDir(PathBuf);

impl TestDir {
    /// Makes `<tmp>/combo-runner-<tag>-<pid>-<n>`.
    pub fn new(tag: &str) -> TestDir {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("combo-runner-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TestDir(p)
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Writes `rel` with `content` and `mode`, making parents.
    pub fn file(&self, rel: &str, content: &str, mode: u32) {
        let p = self.0.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, content).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    /// Writes an executable `sh` script with `body`.
    pub fn script(&self, rel: &str, body: &str) {
        self.file(rel, &format!("#!/bin/sh\n{body}\n"), 0o755);
    }

    /// Makes a directory.
    pub fn mkdir(&self, rel: &str) {
        std::fs::create_dir_all(self.0.join(rel)).unwrap();
    }

    /// Makes a symlink `rel` pointing at `target`.
    pub fn symlink(&self, rel: &str, target: &str) {
        std::os::unix::fs::symlink(target, self.0.join(rel)).unwrap();
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
