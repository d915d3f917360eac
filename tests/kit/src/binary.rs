//! Running a project binary as a user would, for the tests of what it
//! prints when it fails: one line on stderr naming the binary.

use std::process::Command;

/// No kubeconfig and no in-cluster configuration.
pub const NO_CLUSTER: [(&str, &str); 2] = [
    ("KUBECONFIG", "/nonexistent/kubeconfig"),
    ("KUBERNETES_SERVICE_HOST", ""),
];

/// Runs `bin` with `args` and `env`, without RUST_BACKTRACE: its exit
/// status, stdout and stderr.
pub fn run(bin: &str, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let out = Command::new(bin)
        .args(args)
        .env_remove("RUST_BACKTRACE")
        .envs(env.iter().copied())
        .output()
        .expect("the binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Asserts that `stderr` is one line starting with `starts`, with no error
/// chain or backtrace.
pub fn assert_one_line(stderr: &str, starts: &str) {
    assert_eq!(stderr.lines().count(), 1, "not one line:\n{stderr}");
    assert!(stderr.starts_with(starts), "{stderr}");
    assert!(!stderr.contains("Caused by"), "{stderr}");
    assert!(!stderr.contains("Backtrace"), "{stderr}");
}
