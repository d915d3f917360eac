//! The shape of the pages themselves: tables stay readable, and the user
//! pages speak of what a user applies and sees, not of the source. The
//! rules are in docs/testing.md, "The documentation test".

use super::{assert_none, read, repo};

/// The longest a table row may be, in characters: a longer one is a
/// paragraph squeezed into a cell, and renders as a wall of text.
const MAX_ROW: usize = 300;

/// The pages for those who change kube-combo, which may name source files,
/// tests and internals; every other page in docs/ is a user page.
const CONTRIBUTOR_PAGES: [&str; 3] = ["contributing.md", "testing.md", "benchmarks.md"];

/// README.md and every page of docs/, as `(path, text)`, sorted by path.
pub(super) fn pages() -> Vec<(String, String)> {
    let mut names: Vec<String> = std::fs::read_dir(repo().join("docs"))
        .expect("docs/ is readable")
        .map(|e| {
            e.expect("directory entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|n| n.ends_with(".md"))
        .collect();
    names.sort();
    let mut out = vec![("README.md".to_string(), read("README.md"))];
    out.extend(names.into_iter().map(|n| {
        let path = format!("docs/{n}");
        let text = read(&path);
        (path, text)
    }));
    out
}

/// `line number: length` of each table row of `text` longer than `max`
/// characters.
fn long_rows(text: &str, max: usize) -> Vec<String> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.trim_start().starts_with('|'))
        .map(|(i, l)| (i + 1, l.chars().count()))
        .filter(|(_, n)| *n > max)
        .map(|(i, n)| format!("line {i}: {n} characters"))
        .collect()
}

/// The words of `text` that name a Rust source file (`*.rs`) or a test
/// (`*_tests`, `tests::`), each once, in order.
fn source_names(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let words = text.split(|c: char| !(c.is_alphanumeric() || "_./:-".contains(c)));
    for word in words {
        let word = word.trim_end_matches(['.', ':', '-']);
        let names_source =
            word.ends_with(".rs") && word.len() > ".rs".len() && !word.ends_with("docs.rs");
        let names_test = word.ends_with("_tests") || word.contains("tests::");
        if (names_source || names_test) && !out.iter().any(|w| w == word) {
            out.push(word.to_string());
        }
    }
    out
}

#[test]
fn no_table_row_is_longer_than_300_characters() {
    let mut problems = Vec::new();
    for (path, text) in pages() {
        problems.extend(
            long_rows(&text, MAX_ROW)
                .into_iter()
                .map(|row| format!("{path}, {row}: move the detail below the table")),
        );
    }
    assert_none("table rows over 300 characters", problems);
}

#[test]
fn user_pages_name_no_source_file_and_no_test() {
    let mut problems = Vec::new();
    let mut checked = 0;
    for (path, text) in pages() {
        if CONTRIBUTOR_PAGES
            .iter()
            .any(|p| path.ends_with(&format!("/{p}")))
        {
            continue;
        }
        checked += 1;
        problems.extend(source_names(&text).into_iter().map(|name| {
            format!(
                "{path} names `{name}`: move it to contributing.md, testing.md or benchmarks.md"
            )
        }));
    }
    assert!(
        checked >= 8,
        "only {checked} user pages found: the scan is broken"
    );
    assert_none("user pages naming the source", problems);
}

#[test]
fn the_page_readers_find_long_rows_and_source_names() {
    let row = format!("| {} |", "x".repeat(296));
    let text = format!("{row}\n| short |\n{}x\n", "y".repeat(400));
    assert_eq!(long_rows(&text, 300), Vec::<String>::new());
    assert_eq!(
        long_rows(&format!("{row}x\n"), 300),
        ["line 1: 301 characters"]
    );
    let prose = "see `operator/src/cache.rs`, tests/e2e/tests/run_now.rs and \
                 `bounded_state::tests::x`; settings_tests fail. On docs.rs, \
                 in rs. or `.rs` files, or RUST_LOG, nothing.";
    assert_eq!(
        source_names(prose),
        [
            "operator/src/cache.rs",
            "tests/e2e/tests/run_now.rs",
            "bounded_state::tests::x",
            "settings_tests"
        ]
    );
}
