//! Keeps the documentation true where a machine can check it, both ways:
//! what the code has is in docs/reference.md, and what docs/reference.md
//! names exists. The rules are explained in
//! docs/testing.md, "The documentation test":
//!
//! * every long flag (with its default and environment variable) and every
//!   subcommand of `combo-operator`, `combo-runner`, `combo-pinger` and
//!   `kubectl-combo` has a row in its section, and every flag and
//!   subcommand a row names exists (`cli`);
//! * every field of the committed CRDs in config/crd/ has a row in its kind's
//!   section with the schema's default, and the row's description cell is
//!   exactly the description `kubectl explain` shows (the CRD's, whitespace
//!   folded), nothing added and nothing made up, empty when the CRD has none,
//!   also on a row of a Kubernetes type; every printer column and short name
//!   is named there, and every row names a field (`crds`);
//! * every metric the operator and the pinger serve has a row with its labels
//!   and the values of its `kind` and `result` labels, and every row names a
//!   served metric, label and value (`metrics`);
//! * every label and annotation key, Event reason, condition type and reason
//!   and Helm value has its row, and every row names one (`names`);
//! * every command of a shell block in README.md is run by the quickstart or
//!   a test script, or the block is marked as not run, with the reason
//!   (`readme`);
//! * every docs heading the code cites exists (`citations`);
//! * no table row of README.md or docs/ is over 300 characters, and the
//!   user pages (all but contributing.md, testing.md and benchmarks.md)
//!   name no source file and no test (`pages`);
//! * what the pages state in prose is so: every count of items and of
//!   scripts is the real one, every list of reserved `checkSettings` names
//!   is `combo_api::settings`'s whole list, the list of `InvalidSpec`
//!   causes names every spec field the validation checks and every kind of
//!   object whose name it finds taken, and the names given to the Helm
//!   install are those the chart's templates render (`statements`).

use std::path::{Path, PathBuf};

mod citations;
mod cli;
mod crds;
mod metrics;
mod names;
mod pages;
mod readme;
mod samples;
mod source;
mod statements;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the operator crate sits in the repository")
        .to_path_buf()
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(repo().join(rel)).unwrap_or_else(|e| panic!("reading {rel}: {e}"))
}

/// The lines of the section whose heading (`level` `#`s) satisfies `title`,
/// up to the next heading of the same or a higher level.
fn section(doc: &str, level: usize, title: impl Fn(&str) -> bool) -> Option<Vec<&str>> {
    let marks = "#".repeat(level);
    let is_heading_up_to_level = |l: &str| {
        let hashes = l.chars().take_while(|c| *c == '#').count();
        hashes >= 1 && hashes <= level && l[hashes..].starts_with(' ')
    };
    let mut lines = doc.lines();
    lines.find(|l| {
        l.strip_prefix(&marks)
            .and_then(|rest| rest.strip_prefix(' '))
            .is_some_and(&title)
    })?;
    Some(lines.take_while(|l| !is_heading_up_to_level(l)).collect())
}

/// The section of docs/reference.md titled exactly `title` at `level`.
fn reference_section(reference: &str, level: usize, title: &str) -> Vec<String> {
    section(reference, level, |t| t == title)
        .unwrap_or_else(|| {
            panic!(
                "docs/reference.md has no heading `{} {title}`",
                "#".repeat(level)
            )
        })
        .into_iter()
        .map(String::from)
        .collect()
}

/// The Markdown tables in `lines`: each its header's cells and its body
/// rows' cells (trimmed, `\|` kept as written).
fn tables(lines: &[impl AsRef<str>]) -> Vec<(Vec<String>, Vec<Vec<String>>)> {
    let mut out: Vec<(Vec<String>, Vec<Vec<String>>)> = Vec::new();
    let mut in_table = false;
    for line in lines.iter().map(AsRef::as_ref) {
        let line = line.trim();
        if !line.starts_with('|') {
            in_table = false;
            continue;
        }
        let cells = cells(line);
        if !in_table {
            in_table = true;
            out.push((cells, Vec::new()));
        } else if !cells.iter().all(|c| c.chars().all(|ch| "-: ".contains(ch))) {
            out.last_mut().expect("a table").1.push(cells);
        }
    }
    out
}

/// The body rows of the tables in `lines` whose header's first cell is
/// `first`.
fn table_rows(lines: &[impl AsRef<str>], first: &str) -> Vec<Vec<String>> {
    tables(lines)
        .into_iter()
        .filter(|(header, _)| header.first().is_some_and(|c| c == first))
        .flat_map(|(_, rows)| rows)
        .collect()
}

/// The cells of one table line; `\|` does not split.
fn cells(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
    let mut out = vec![String::new()];
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                out.last_mut().expect("one cell").push_str("\\|");
                chars.next();
            }
            '|' => out.push(String::new()),
            c => out.last_mut().expect("one cell").push(c),
        }
    }
    out.iter().map(|c| c.trim().to_string()).collect()
}

/// The `` `code` `` spans of `text` outside parentheses: the names a cell
/// gives, not the examples of its notes.
fn named(text: &str) -> Vec<String> {
    let (mut out, mut depth, mut code) = (Vec::new(), 0usize, None::<String>);
    for c in text.chars() {
        match (&mut code, c) {
            (Some(span), '`') => {
                if depth == 0 {
                    out.push(std::mem::take(span));
                }
                code = None;
            }
            (Some(span), c) => span.push(c),
            (None, '`') => code = Some(String::new()),
            (None, '(') => depth += 1,
            (None, ')') => depth = depth.saturating_sub(1),
            (None, _) => {}
        }
    }
    out
}

/// Panics with every line of `problems`, if any.
fn assert_none(what: &str, problems: Vec<String>) {
    assert!(problems.is_empty(), "{what}:\n  {}", problems.join("\n  "));
}

#[test]
fn the_table_readers_take_names_and_leave_notes() {
    let md = [
        "| reason | type |",
        "|---|---|",
        "| `A`, `B` (`not-this`) | x \\| y |",
        "",
        "| other |",
        "|---|",
        "| `C` |",
    ];
    let rows = table_rows(&md, "reason");
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0][1], "x \\| y");
    assert_eq!(named(&rows[0][0]), ["A", "B"]);
    assert_eq!(table_rows(&md, "other")[0][0], "`C`");
}
