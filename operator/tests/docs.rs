//! Keeps the documentation true where a machine can check it (the rules are
//! explained in docs/testing.md, "The documentation test"):
//!
//! * every long flag (with its default and environment variable) and every
//!   subcommand of `combo-operator`, `combo-runner`, `combo-pinger` and
//!   `kubectl-combo` has a row in its section of docs/reference.md;
//! * every field of the committed CRDs in config/crd/ has a row in its kind's
//!   section of docs/reference.md with the description `kubectl explain`
//!   shows and the schema's default, and every printer column and short name
//!   is named there;
//! * every command of a shell block in README.md is run by the quickstart or
//!   a test script, or the block is marked as not run, with the reason.

use std::path::{Path, PathBuf};

use clap::CommandFactory;
use serde_yaml::Value;

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

/// The first line of `lines` that mentions `` `--<long> `` as a whole flag.
fn flag_row<'a>(lines: &[&'a str], long: &str) -> Option<&'a str> {
    let needle = format!("`--{long}");
    lines.iter().copied().find(|l| {
        l.match_indices(&needle).any(|(i, _)| {
            l[i + needle.len()..]
                .chars()
                .next()
                .is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '-'))
        })
    })
}

/// One long flag of a command line.
struct Flag {
    command: String,
    long: String,
    env: Option<String>,
    defaults: Vec<String>,
}

fn collect_flags(cmd: &clap::Command, path: &str, flags: &mut Vec<Flag>, subs: &mut Vec<String>) {
    for arg in cmd.get_arguments() {
        let Some(long) = arg.get_long() else { continue };
        if arg.is_hide_set() {
            continue;
        }
        flags.push(Flag {
            command: path.to_string(),
            long: long.to_string(),
            env: arg.get_env().map(|e| e.to_string_lossy().into_owned()),
            defaults: arg
                .get_default_values()
                .iter()
                .map(|v| v.to_string_lossy().into_owned())
                .collect(),
        });
    }
    for sub in cmd.get_subcommands() {
        let sub_path = format!("{path} {}", sub.get_name());
        subs.push(sub_path.clone());
        collect_flags(sub, &sub_path, flags, subs);
    }
}

#[test]
fn every_flag_and_subcommand_of_every_binary_is_in_the_reference() {
    let reference = read("docs/reference.md");
    // (binary, how the docs write the command, its command line)
    let binaries = [
        (
            "combo-operator",
            "combo-operator",
            combo_operator::cli::Cli::command(),
        ),
        (
            "combo-runner",
            "combo-runner",
            combo_runner::cli::Args::command(),
        ),
        (
            "combo-pinger",
            "combo-pinger",
            combo_pinger::cli::Args::command(),
        ),
        (
            "kubectl-combo",
            "kubectl combo",
            combo_operator::plugin::cli::Args::command(),
        ),
    ];
    let mut missing = Vec::new();
    for (bin, written, cmd) in binaries {
        let heading = format!("`{bin}`");
        let Some(lines) = section(&reference, 3, |t| t.contains(&heading)) else {
            missing.push(format!(
                "no section for {bin}: add a heading `### ... {heading} ...` to docs/reference.md"
            ));
            continue;
        };
        let (mut flags, mut subs) = (Vec::new(), Vec::new());
        collect_flags(&cmd, written, &mut flags, &mut subs);
        assert!(
            !flags.is_empty(),
            "{bin} has no flags: the test reads the wrong command"
        );
        for sub in subs {
            if !lines.iter().any(|l| l.contains(&format!("`{sub}"))) {
                missing.push(format!("{bin}: subcommand `{sub}` is not in its section"));
            }
        }
        for flag in flags {
            let Some(row) = flag_row(&lines, &flag.long) else {
                missing.push(format!(
                    "{bin}: flag `--{}` (of `{}`) has no row in its section",
                    flag.long, flag.command
                ));
                continue;
            };
            if let Some(env) = &flag.env {
                if !row.contains(&format!("`{env}`")) {
                    missing.push(format!(
                        "{bin}: the row of `--{}` does not name its environment variable `{env}`",
                        flag.long
                    ));
                }
            }
            for default in &flag.defaults {
                if !row.contains(&format!("`{default}`")) {
                    missing.push(format!(
                        "{bin}: the row of `--{}` does not give its default `{default}`",
                        flag.long
                    ));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/reference.md is missing:\n  {}",
        missing.join("\n  ")
    );
}

/// One property of a CRD schema.
struct Field {
    path: String,
    description: Option<String>,
    default: Option<String>,
}

/// How the reference writes a schema default: scalars as they are, lists in
/// YAML flow style (`[disk, net]`), maps as `{}` or `{k: v}`.
fn render_default(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        Value::Sequence(items) => {
            let items: Vec<String> = items.iter().map(render_default).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Mapping(m) => {
            let items: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{}: {}", render_default(k), render_default(v)))
                .collect();
            format!("{{{}}}", items.join(", "))
        }
        Value::Tagged(t) => render_default(&t.value),
    }
}

fn collect_fields(schema: &Value, path: &str, out: &mut Vec<Field>) {
    if let Some(props) = schema.get("properties").and_then(Value::as_mapping) {
        for (name, sub) in props {
            let name = name.as_str().expect("property names are strings");
            let p = if path.is_empty() {
                name.to_string()
            } else {
                format!("{path}.{name}")
            };
            out.push(Field {
                path: p.clone(),
                description: sub
                    .get("description")
                    .and_then(Value::as_str)
                    .map(|d| d.split_whitespace().collect::<Vec<_>>().join(" ")),
                default: sub.get("default").map(render_default),
            });
            collect_fields(sub, &p, out);
        }
    }
    if let Some(items) = schema.get("items") {
        collect_fields(items, &format!("{path}[]"), out);
    }
}

/// The rows of the reference's field tables: `| `path` | ... |`.
fn field_row<'a>(lines: &[&'a str], path: &str) -> Option<&'a str> {
    let start = format!("| `{path}` |");
    lines.iter().copied().find(|l| l.starts_with(&start))
}

#[test]
fn every_crd_field_is_in_the_reference_as_kubectl_explain_shows_it() {
    let reference = read("docs/reference.md");
    let mut crds: Vec<PathBuf> = std::fs::read_dir(repo().join("config/crd"))
        .expect("config/crd")
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    crds.sort();
    assert!(crds.len() >= 2, "the CRDs are not in config/crd: {crds:?}");
    let mut missing = Vec::new();
    let mut checked = 0;
    for file in crds {
        let crd: Value = serde_yaml::from_str(&std::fs::read_to_string(&file).expect("CRD file"))
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let kind = crd["spec"]["names"]["kind"].as_str().expect("CRD kind");
        let Some(lines) = section(&reference, 2, |t| {
            t == kind || t.starts_with(&format!("{kind} "))
        }) else {
            missing.push(format!("no section `## {kind}` for {}", file.display()));
            continue;
        };
        for short in crd["spec"]["names"]["shortNames"]
            .as_sequence()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if !lines.iter().any(|l| l.contains(&format!("`{short}`"))) {
                missing.push(format!("{kind}: short name `{short}` is not named"));
            }
        }
        for version in crd["spec"]["versions"].as_sequence().expect("versions") {
            for col in version["additionalPrinterColumns"]
                .as_sequence()
                .into_iter()
                .flatten()
            {
                let name = col["name"].as_str().expect("column name");
                if !lines.iter().any(|l| l.contains(&format!("`{name}`"))) {
                    missing.push(format!("{kind}: printer column `{name}` is not named"));
                }
            }
            let mut fields = Vec::new();
            collect_fields(&version["schema"]["openAPIV3Schema"], "", &mut fields);
            // Fields under a row marked "Kubernetes type" are that type's own
            // (documented by Kubernetes) and need no rows of their own.
            let mut upstream: Vec<String> = Vec::new();
            for field in fields {
                if upstream.iter().any(|u| {
                    field.path.starts_with(&format!("{u}."))
                        || field.path.starts_with(&format!("{u}[]"))
                }) {
                    continue;
                }
                checked += 1;
                let Some(row) = field_row(&lines, &field.path) else {
                    missing.push(format!(
                        "{kind}: field `{}` has no row `| `{}` | ...` (description: {:?}, default: {:?})",
                        field.path, field.path, field.description, field.default
                    ));
                    continue;
                };
                if row.contains("Kubernetes type") {
                    upstream.push(field.path.clone());
                    continue;
                }
                if let Some(d) = &field.description {
                    let escaped = d.replace('|', "\\|");
                    if !row.contains(&escaped) {
                        missing.push(format!(
                            "{kind}: the row of `{}` lacks the description kubectl explain shows: {escaped:?}",
                            field.path
                        ));
                    }
                }
                if let Some(d) = &field.default {
                    if !row.contains(&format!("`{d}`")) {
                        missing.push(format!(
                            "{kind}: the row of `{}` lacks its default `{d}`",
                            field.path
                        ));
                    }
                }
            }
        }
    }
    assert!(
        checked > 20,
        "only {checked} fields read: the schema walk is broken"
    );
    assert!(
        missing.is_empty(),
        "docs/reference.md is missing:\n  {}",
        missing.join("\n  ")
    );
}

/// A shell command in README.md, without its trailing comment.
fn command_of(line: &str) -> Option<String> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let code = match line.find(" # ") {
        Some(i) => &line[..i],
        None => line,
    };
    Some(code.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// The shell blocks of a Markdown text that are meant to be run: the fences
/// tagged `sh`, `bash` or `shell`, except those right after a line
/// `<!-- not run: <reason> -->`. Errors name a marker without a reason.
fn runnable_blocks(md: &str) -> (Vec<Vec<String>>, Vec<String>) {
    let (mut blocks, mut errors) = (Vec::new(), Vec::new());
    let mut previous = "";
    let mut lines = md.lines();
    while let Some(line) = lines.next() {
        let Some(info) = line.trim_start().strip_prefix("```") else {
            if !line.trim().is_empty() {
                previous = line.trim();
            }
            continue;
        };
        let body: Vec<&str> = lines
            .by_ref()
            .take_while(|l| !l.trim_start().starts_with("```"))
            .collect();
        let shell = matches!(
            info.split_whitespace().next(),
            Some("sh" | "bash" | "shell")
        );
        if let Some(reason) = previous.strip_prefix("<!-- not run:") {
            if reason.trim_end_matches("-->").trim().is_empty() {
                errors.push(format!("the marker {previous:?} gives no reason"));
            }
        } else if shell {
            blocks.push(body.iter().filter_map(|l| command_of(l)).collect());
        }
        previous = "";
    }
    (blocks, errors)
}

/// Every `*.sh` file under `dir`.
fn shell_scripts(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable directory") {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            shell_scripts(&path, out);
        } else if path.extension().is_some_and(|x| x == "sh") {
            out.push(path);
        }
    }
}

/// True when `script_line` runs `command`: the same words, followed by
/// nothing or only by redirection and pipes of its output.
fn runs(script_line: &str, command: &str) -> bool {
    let line = script_line.split_whitespace().collect::<Vec<_>>().join(" ");
    line.strip_prefix(command).is_some_and(|rest| {
        rest.is_empty()
            || [" 2>", " >", " |", " &&", " ||", ";"]
                .iter()
                .any(|p| rest.starts_with(p))
    })
}

#[test]
fn every_readme_shell_command_is_run_by_the_quickstart_or_a_test() {
    let readme = read("README.md");
    let (blocks, mut missing) = runnable_blocks(&readme);
    assert!(
        !blocks.is_empty(),
        "README.md has no shell block: the parser is broken"
    );
    let entry_points = ["bash deploy/quickstart.sh", "bash tests/run-all.sh"];
    assert_eq!(
        blocks[0], entry_points,
        "README.md must start with the two commands for a fresh machine"
    );
    let mut scripts = vec![repo().join("deploy/quickstart.sh")];
    shell_scripts(&repo().join("tests"), &mut scripts);
    let corpus: Vec<String> = scripts
        .iter()
        .map(|p| std::fs::read_to_string(p).expect("script"))
        .collect();
    for command in blocks.iter().flatten() {
        if entry_points.contains(&command.as_str()) {
            continue;
        }
        let run = corpus.iter().any(|s| s.lines().any(|l| runs(l, command)));
        if !run {
            missing.push(format!(
                "`{command}` is run by neither deploy/quickstart.sh nor a tests/**/*.sh script; \
                 run it there, or put `<!-- not run: <reason> -->` on the line before its block"
            ));
        }
    }
    assert!(missing.is_empty(), "README.md:\n  {}", missing.join("\n  "));
}

#[test]
fn the_readme_rules_catch_what_they_should() {
    let (blocks, errors) = runnable_blocks(
        "x\n```sh\nfoo --a   # comment\n# only a comment\n```\n<!-- not run: needs exec -->\n```sh\nbar\n```\n<!-- not run: -->\n```sh\nbaz\n```\n```yaml\nk: v\n```\n",
    );
    assert_eq!(blocks, vec![vec!["foo --a".to_string()]]);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(runs("foo --a 2>&1 | grep -v x", "foo --a"));
    assert!(runs("  foo   --a", "foo --a"));
    assert!(!runs("foo --a -n other", "foo --a"));
    assert!(!runs("foo --ab", "foo --a"));
}

/// Every `.rs` file of the repository outside `target/`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable directory") {
        let path = entry.expect("directory entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            if name != "target" && !name.starts_with('.') {
                rust_files(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

/// The `(page, heading)` pairs cited as `docs/<page>.md, "<heading>"`.
fn citations(text: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for (i, _) in text.match_indices("docs/") {
        let rest = &text[i..];
        let Some(md) = rest.find(".md, \"") else {
            continue;
        };
        let page = &rest[..md + 3];
        if page.contains(|c: char| c.is_whitespace() || c == '<') {
            continue;
        }
        let quoted = &rest[md + 6..];
        if let Some(end) = quoted.find('"') {
            found.push((page.to_string(), quoted[..end].to_string()));
        }
    }
    found
}

#[test]
fn every_docs_heading_cited_in_the_code_exists() {
    let mut files = Vec::new();
    rust_files(&repo(), &mut files);
    let mut missing = Vec::new();
    let mut cited = 0;
    for file in files {
        let text = std::fs::read_to_string(&file).expect("source file");
        for (page, heading) in citations(&text) {
            cited += 1;
            let Ok(doc) = std::fs::read_to_string(repo().join(&page)) else {
                missing.push(format!(
                    "{}: cites {page}, which does not exist",
                    file.display()
                ));
                continue;
            };
            let exists = doc.lines().any(|l| {
                l.starts_with('#') && l.trim_start_matches('#').trim_start().starts_with(&heading)
            });
            if !exists {
                missing.push(format!(
                    "{}: cites {page}, \"{heading}\", which has no such heading",
                    file.display()
                ));
            }
        }
    }
    assert!(
        cited > 10,
        "only {cited} citations found: the scan is broken"
    );
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}
