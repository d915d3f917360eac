//! What a user sees when `combo-operator` fails: one line on stderr naming
//! the binary, and the documented exit status.

use std::process::Command;

/// Runs a binary of this crate without RUST_BACKTRACE; (status, stdout, stderr).
fn run(bin: &str, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
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

fn assert_one_line(stderr: &str, starts: &str) {
    assert_eq!(stderr.lines().count(), 1, "not one line:\n{stderr}");
    assert!(stderr.starts_with(starts), "{stderr}");
    assert!(!stderr.contains("Caused by"), "{stderr}");
    assert!(!stderr.contains("Backtrace"), "{stderr}");
}

const OPERATOR: &str = env!("CARGO_BIN_EXE_combo-operator");

/// No kubeconfig and no in-cluster configuration.
const NO_CLUSTER: [(&str, &str); 2] = [
    ("KUBECONFIG", "/nonexistent/kubeconfig"),
    ("KUBERNETES_SERVICE_HOST", ""),
];

#[test]
fn an_unknown_operator_flag_is_one_line_and_exit_two() {
    let (code, _, stderr) = run(OPERATOR, &["--bogus"], &[]);
    assert_eq!(code, 2);
    assert_one_line(
        &stderr,
        "combo-operator: unexpected argument '--bogus' found",
    );
    assert!(stderr.contains("combo-operator --help"), "{stderr}");
}

#[test]
fn a_bad_operator_flag_value_is_one_line_and_exit_two() {
    let (code, _, stderr) = run(OPERATOR, &["--metrics-addr", "nowhere"], &[]);
    assert_eq!(code, 2);
    assert_one_line(&stderr, "combo-operator: invalid value 'nowhere'");
}

#[test]
fn crd_into_a_missing_directory_is_one_line_naming_it_and_exit_one() {
    let (code, _, stderr) = run(OPERATOR, &["crd", "--out", "/nonexistent/crds"], &[]);
    assert_eq!(code, 1);
    assert_one_line(
        &stderr,
        "combo-operator: writing the CRDs into /nonexistent/crds: ",
    );
}

#[test]
fn the_operator_without_a_cluster_is_one_line_and_exit_one() {
    let mut env = NO_CLUSTER.to_vec();
    env.push(("RUST_LOG", "off"));
    let (code, _, stderr) = run(OPERATOR, &["--metrics-addr", "127.0.0.1:0"], &env);
    assert_eq!(code, 1, "{stderr}");
    assert_one_line(&stderr, "combo-operator: ");
}

#[test]
fn rust_backtrace_brings_back_the_full_error() {
    let (code, _, stderr) = run(
        OPERATOR,
        &["crd", "--out", "/nonexistent/crds"],
        &[("RUST_BACKTRACE", "1")],
    );
    assert_eq!(code, 1);
    assert!(stderr.lines().count() > 1, "{stderr}");
}
