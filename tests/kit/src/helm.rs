//! The `helm` binary of the chart's tests (docs/testing.md, "Helm"):
//! `KUBE_COMBO_HELM`, else the one `tests/deps.sh` puts in the cache
//! (`${KUBE_COMBO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kube-combo}/helm/helm`),
//! else `helm` on PATH.
//!
//! Without one a test skips with one line saying so, unless [`REQUIRE`] is
//! set (`tests/run-all.sh` sets it after `tests/deps.sh` installed helm),
//! then it fails.

use std::path::PathBuf;

/// Set to `1`, a missing `helm` fails the test instead of skipping it.
pub const REQUIRE: &str = "COMBO_REQUIRE_HELM";

/// Where `tests/deps.sh` installs helm.
fn cached() -> Option<PathBuf> {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let cache = env("KUBE_COMBO_CACHE").or_else(|| {
        env("XDG_CACHE_HOME")
            .or_else(|| env("HOME").map(|h| h.join(".cache")))
            .map(|c| c.join("kube-combo"))
    })?;
    Some(cache.join("helm/helm"))
}

/// The `helm` binary; `None` after a skip line naming `test` when there is
/// none. Panics when there is none and [`REQUIRE`] is `1`.
pub fn binary(test: &str) -> Option<PathBuf> {
    let on_path = || {
        std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join("helm"))
                .find(|p| p.is_file())
        })
    };
    let found = std::env::var_os("KUBE_COMBO_HELM")
        .map(PathBuf::from)
        .or_else(|| cached().filter(|p| p.is_file()))
        .or_else(on_path);
    if found.is_none() {
        let why = "no helm in the cache or on PATH (tests/deps.sh installs it)";
        if std::env::var(REQUIRE).as_deref() == Ok("1") {
            panic!("{test}: {why}, and {REQUIRE}=1 requires it");
        }
        eprintln!("skipping {test}: {why}");
    }
    found
}
