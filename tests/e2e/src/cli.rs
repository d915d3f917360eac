//! Running `kubectl`, and the project's plugin (`kubectl combo`), against
//! the test cluster.

use std::path::Path;
use std::process::{Command, Output};

use anyhow::{bail, Context as _, Result};

use crate::{kubeconfig, project_binary};

/// Runs `kubectl` against the test cluster.
pub fn kubectl(args: &[&str]) -> Output {
    Command::new("kubectl")
        .env("KUBECONFIG", kubeconfig())
        .args(args)
        .output()
        .expect("kubectl runs")
}

/// Runs `kubectl` and returns its stdout, failing with its stderr.
pub fn kubectl_ok(args: &[&str]) -> Result<String> {
    let out = kubectl(args);
    if !out.status.success() {
        bail!(
            "kubectl {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Applies YAML text into namespace `ns` with `kubectl apply -f`.
pub fn apply_yaml(ns: &str, yaml: &str) -> Result<()> {
    let path = std::env::temp_dir().join(format!(
        "kc-apply-{ns}-{:x}.yaml",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)?
            .as_nanos()
    ));
    std::fs::write(&path, yaml)?;
    let applied = kubectl_ok(&["apply", "-n", ns, "-f", path.to_str().context("path")?]);
    let _ = std::fs::remove_file(&path);
    applied.map(drop)
}

/// Runs `kubectl` with the project's plugin (`kubectl combo`) on its PATH.
pub fn kubectl_combo(args: &[&str]) -> Output {
    let plugin_dir = project_binary("kubectl-combo")
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let path = std::env::var("PATH").unwrap_or_default();
    Command::new("kubectl")
        .env("KUBECONFIG", kubeconfig())
        .env("PATH", format!("{}:{path}", plugin_dir.display()))
        .arg("combo")
        .args(args)
        .output()
        .expect("kubectl runs")
}
