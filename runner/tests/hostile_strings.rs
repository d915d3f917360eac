//! Hostile strings through `combo-runner --once` (docs/runner.md,
//! "Scripts"): bytes that are not UTF-8, shell metacharacters, control
//! characters and overlong lines in script output, in script file names and
//! in the node name. Nothing reaches a shell, nothing crashes, and every
//! item stays one line of the table, the errlog and the summary. Each test
//! records its inputs in the suite report under `bad input` before it
//! asserts.

mod support;

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

use combo_api::report::{node_label_value, report_name};
use combo_testkit::suite::Case;
use support::{err_of, parse_yaml, Tree};

/// What a shell would create if any of these strings reached one.
const MARKER: &str = "pwned";

/// Runs `combo-runner --once` over `tree` with the tree as working
/// directory, so a relative `touch` a shell ran would land in it.
fn once(tree: &Tree, output: &str, env: &[(&str, &str)]) -> Output {
    let state = Tree::new("hostile-state");
    Command::new(env!("CARGO_BIN_EXE_combo-runner"))
        .args(["--once", "--output", output, "--scripts"])
        .arg(tree.path())
        .arg("--state-dir")
        .arg(state.path())
        .current_dir(tree.path())
        .envs(env.iter().copied())
        .env_remove("RUST_LOG")
        .output()
        .expect("combo-runner starts")
}

/// Every path under `dir` whose file name starts with [`MARKER`].
fn markers(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if entry.file_name().as_bytes().starts_with(MARKER.as_bytes()) {
            found.push(path.display().to_string());
        }
        if path.is_dir() && !path.is_symlink() {
            found.extend(markers(&path));
        }
    }
    found
}

/// Writes an executable sh script at `dir/name`, the name as raw bytes.
fn script_named(dir: &Path, name: &[u8], body: &str) {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(OsStr::from_bytes(name));
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Problems of a `--once` table: a line that is not the header, a row of
/// `category`, the blank line, the run line or an errlog line, and any
/// control character but the newlines.
fn table_problems(table: &str, category: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if table.chars().any(|c| c.is_control() && c != '\n') {
        problems.push(format!("a control character in the table: {table:?}"));
    }
    for line in table.lines() {
        let known = line.starts_with("CATEGORY ")
            || line.starts_with(&format!("{category} "))
            || line.is_empty()
            || line.starts_with("run ")
            || line.starts_with("errlog: ");
        if !known {
            problems.push(format!("a table line split from its row: {line:?}"));
        }
    }
    problems
}

/// Records `case`: no input handled when a problem concerns them all
/// (`shared`), else each input without a problem of its own.
fn record(case: Case, inputs: usize, shared: &[String], problems: &[String]) {
    let failed = problems.len() - shared.len();
    let handled = if shared.is_empty() {
        inputs - failed
    } else {
        0
    };
    case.done(handled as u64, 0);
}

/// What each line of the hostile script of
/// [`hostile_script_output_is_kept_as_text_replaced_where_needed_and_never_run`]
/// holds, its item, and the message the summary must show.
fn output_cases(long_message: &str) -> Vec<(&'static str, String, Option<String>)> {
    vec![
        (
            "bytes that are not UTF-8",
            "bad\u{FFFD}item".into(),
            Some("msg \u{FFFD}\u{FFFD} end".into()),
        ),
        (
            "command substitution, backticks and ;",
            "$(touch".into(),
            Some(format!("{MARKER}-a) `touch {MARKER}-b`;touch {MARKER}-c")),
        ),
        (
            "a carriage return and a terminal escape",
            "cr".into(),
            Some("one two [2J".into()),
        ),
        (
            "an item name of 300 bytes",
            "i".repeat(128),
            Some("cut".into()),
        ),
        (
            "a message of 7,000 bytes",
            "longmsg".into(),
            Some(long_message.to_string()),
        ),
        (
            "a line of 9,000 bytes (cut to 8 KiB, its item kept)",
            "overlong".into(),
            Some(format!(
                "{}{}",
                "o".repeat(8 * 1024 - "err overlong ".len()),
                combo_api::summary::CUT_MARKER
            )),
        ),
    ]
}

/// The script printing the lines of [`output_cases`].
fn hostile_output_script(long_message: &str) -> String {
    [
        r"printf 'err bad\377item msg \376\375 end\n'",
        &format!(r"printf '%s\n' 'err $(touch {MARKER}-a) `touch {MARKER}-b`;touch {MARKER}-c'"),
        r"printf 'err cr one\rtwo\033[2J\n'",
        &format!("echo 'err {} cut'", "i".repeat(300)),
        &format!("echo 'err longmsg {long_message}'"),
        &format!("echo 'err overlong {}'", "o".repeat(9000)),
    ]
    .join("\n")
}

/// A problem for each run that did not exit 1 (items failed).
fn exit_problems(outs: &[&Output]) -> Vec<String> {
    outs.iter()
        .filter(|o| o.status.code() != Some(1))
        .map(|o| {
            format!(
                "exit {:?}: {}",
                o.status,
                String::from_utf8_lossy(&o.stderr)
            )
        })
        .collect()
}

#[test]
fn hostile_script_output_is_kept_as_text_replaced_where_needed_and_never_run() {
    let t = Tree::new("hostile-output");
    let long_message = "m".repeat(7000);
    // (what a line holds, its item, the message the summary must show).
    let lines = output_cases(&long_message);
    t.script("svc/hostile.sh", &hostile_output_script(&long_message));
    let case = Case::new(
        "bad input",
        "runner: hostile script output (invalid UTF-8, shell metacharacters, control characters, long lines)",
        lines.len() as u64,
    );
    let yaml = once(&t, "yaml", &[]);
    let json = once(&t, "json", &[]);
    let table = once(&t, "table", &[]);
    let y = parse_yaml(&yaml);
    let j: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json output");
    let table_text = String::from_utf8_lossy(&table.stdout).into_owned();
    let log = t.errlog("svc");
    let shared = [
        table_problems(&table_text, "svc"),
        markers(t.path()),
        exit_problems(&[&yaml, &json, &table]),
    ]
    .concat();
    let mut problems = shared.clone();
    for (what, item, want) in &lines {
        let from_yaml = err_of(&y, "svc", item).map(str::to_string);
        let from_json = j["svc"][item.as_str()]["err"].as_str().map(str::to_string);
        let in_log = want
            .as_ref()
            .is_none_or(|m| log.contains(&format!("item: {item}\nerr: {m}\n")));
        if from_yaml != *want || from_json != *want || !in_log {
            problems.push(format!(
                "{what}: item {item:?} has yaml {from_yaml:?}, json {from_json:?}, in the errlog {in_log}; want {want:?}"
            ));
        }
    }
    record(case, lines.len(), &shared, &problems);
    assert!(problems.is_empty(), "{problems:#?}\ntable:\n{table_text}");
    assert_eq!(
        y["svc"].as_mapping().map(|m| m.len()),
        Some(6),
        "six items: the 9,000-byte line is cut, not dropped"
    );
}

/// The script file names of
/// [`hostile_script_file_names_run_as_they_are_and_stay_one_line`], each
/// with its item.
fn hostile_names() -> Vec<(Vec<u8>, String)> {
    vec![
        (b"a\nb.sh".to_vec(), "a\u{FFFD}b".into()),
        (b"bad\xffname.sh".to_vec(), "bad\u{FFFD}name".into()),
        (
            format!("$(touch {MARKER}-d).sh").into_bytes(),
            format!("$(touch {MARKER}-d)"),
        ),
        (
            format!("`touch {MARKER}-e`.sh").into_bytes(),
            format!("`touch {MARKER}-e`"),
        ),
        (
            format!("x;touch {MARKER}-f.sh").into_bytes(),
            format!("x;touch {MARKER}-f"),
        ),
        (b"tab\tand space.sh".to_vec(), "tab\u{FFFD}and space".into()),
    ]
}

/// Whether each line of an errlog is one of its fields, a blank line or
/// the hostile stderr line the scripts print.
fn errlog_lines_known(log: &str) -> bool {
    log.lines().all(|l| {
        l.is_empty()
            || ["# ", "=== script: ", "exit code: ", "duration: ", "item: ", "err: ", "--- "]
                .iter()
                .any(|p| l.starts_with(p))
            // The captured stderr, kept as the script wrote it.
            || l.starts_with("$(touch")
    })
}

#[test]
fn hostile_script_file_names_run_as_they_are_and_stay_one_line() {
    let t = Tree::new("hostile-names");
    let disk = t.join("disk");
    // (file name, its item); each script exits with its index + 3 and
    // prints a hostile stderr line.
    let names = hostile_names();
    for (i, (name, _)) in names.iter().enumerate() {
        script_named(
            &disk,
            name,
            &format!(
                "printf '%s\\r\\033[1m\\n' '$(touch {MARKER}-g) `x`' >&2\nexit {}",
                i + 3
            ),
        );
    }
    let case = Case::new(
        "bad input",
        "runner: script file names with newlines, invalid UTF-8 and shell metacharacters",
        names.len() as u64,
    );
    let yaml = once(&t, "yaml", &[]);
    let table = once(&t, "table", &[]);
    let y = parse_yaml(&yaml);
    let table_text = String::from_utf8_lossy(&table.stdout).into_owned();
    let log = t.errlog("disk");
    let mut shared = [table_problems(&table_text, "disk"), markers(t.path())].concat();
    if yaml.status.code() != Some(1) || table.status.code() != Some(1) {
        shared.push(format!(
            "exit {:?} and {:?}: {}",
            yaml.status,
            table.status,
            String::from_utf8_lossy(&yaml.stderr)
        ));
    }
    if !errlog_lines_known(&log) {
        shared.push(format!("an errlog line split from its field:\n{log}"));
    }
    let mut problems = shared.clone();
    for (i, (name, item)) in names.iter().enumerate() {
        let want = format!("exit {}: $(touch {MARKER}-g) `x`  [1m", i + 3);
        let got = err_of(&y, "disk", item);
        let shown = format!(
            "=== script: {}/{}\n",
            disk.display(),
            String::from_utf8_lossy(name).replace(['\n', '\t'], "\u{FFFD}")
        );
        if got != Some(want.as_str()) || !log.contains(&shown) {
            problems.push(format!(
                "{:?}: item {item:?} has {got:?}, want {want:?}; errlog names it {}",
                String::from_utf8_lossy(name),
                log.contains(&shown)
            ));
        }
    }
    record(case, names.len(), &shared, &problems);
    assert!(
        problems.is_empty(),
        "{problems:#?}\ntable:\n{table_text}\nerrlog:\n{log}"
    );
}

#[test]
fn a_node_name_with_odd_characters_reaches_scripts_verbatim_and_names_a_bounded_report() {
    let nodes = [
        format!("n1;$(touch {MARKER}-h)`touch {MARKER}-i`|x&y"),
        "Node_1 With Spaces".to_string(),
        "ノード".repeat(100),
        "a\nb".to_string(),
        ".".repeat(300),
        String::new(),
    ];
    let case = Case::new(
        "bad input",
        "runner: node names with shell metacharacters, spaces, multibyte characters, newlines",
        nodes.len() as u64,
    );
    let t = Tree::new("hostile-node");
    t.script("svc/node.sh", "echo \"err node name=$NODE_NAME\"");
    let mut problems = Vec::new();
    for node in &nodes {
        let mut node_problems = Vec::new();
        // Locally NODE_NAME is only handed to the scripts; an empty one
        // falls back to the host name, and a newline ends the err line.
        if !node.is_empty() && !node.contains('\n') {
            let y = parse_yaml(&once(&t, "yaml", &[("NODE_NAME", node)]));
            let got = err_of(&y, "svc", "node").map(str::to_string);
            if got != Some(format!("name={node}")) {
                node_problems.push(format!("the script saw {got:?}"));
            }
        }
        // In a pod the node name names the report and labels it.
        let name = report_name("node-check", node);
        let label = node_label_value(node);
        if name.len() > 253 || label.len() > 63 {
            node_problems.push(format!("report {name:?} or label {label:?} too long"));
        }
        if name != report_name("node-check", node) {
            node_problems.push("the report name is not stable".into());
        }
        if !node_problems.is_empty() {
            problems.push(format!("{node:?}: {node_problems:?}"));
        }
    }
    let long_a = format!("{}a", "ノード".repeat(100));
    let long_b = format!("{}b", "ノード".repeat(100));
    if report_name("d", &long_a) == report_name("d", &long_b) {
        problems.push("two long node names share a report".into());
    }
    problems.extend(markers(t.path()));
    let handled = nodes.len().saturating_sub(problems.len());
    case.done(handled as u64, 0);
    assert!(problems.is_empty(), "{problems:#?}");
}
