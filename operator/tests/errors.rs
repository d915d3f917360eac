//! What a user sees when `combo-operator` fails: one line on stderr naming
//! the binary, and the documented exit status.

use combo_testkit::binary::{assert_one_line, run, NO_CLUSTER};

const OPERATOR: &str = env!("CARGO_BIN_EXE_combo-operator");

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
