use clap::CommandFactory;

use super::{read, section};

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

/// (binary, how the docs write the command, its command line)
fn binaries() -> [(&'static str, &'static str, clap::Command); 4] {
    [
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
            kubectl_combo::cli::Args::command(),
        ),
    ]
}

#[test]
fn every_flag_and_subcommand_of_every_binary_is_in_the_reference() {
    let reference = read("docs/reference.md");
    let binaries = binaries();
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

/// The long flags (`--x`) named in a table's first cell.
fn flags_named(cell: &str) -> Vec<String> {
    let mut out = Vec::new();
    for span in cell.split('`').skip(1).step_by(2) {
        for (i, _) in span.match_indices("--") {
            let name: String = span[i + 2..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            if !name.is_empty() && (i == 0 || span[..i].ends_with(' ')) {
                out.push(name);
            }
        }
    }
    out
}

#[test]
fn every_flag_and_subcommand_the_reference_names_exists() {
    let reference = read("docs/reference.md");
    let mut unknown = Vec::new();
    for (bin, written, cmd) in binaries() {
        let heading = format!("`{bin}`");
        let lines = section(&reference, 3, |t| t.contains(&heading))
            .unwrap_or_else(|| panic!("no section for {bin} in docs/reference.md"));
        let (mut flags, mut subs) = (Vec::new(), Vec::new());
        collect_flags(&cmd, written, &mut flags, &mut subs);
        let rows: Vec<&str> = lines
            .iter()
            .copied()
            .filter(|l| l.starts_with("| `"))
            .collect();
        assert!(!rows.is_empty(), "{bin}: its section has no rows");
        for row in rows {
            let first = super::cells(row).remove(0);
            for long in flags_named(&first) {
                if !flags.iter().any(|f| f.long == long) {
                    unknown.push(format!("{bin}: the row `--{long}` names no flag of {bin}"));
                }
            }
            for span in first.split('`').skip(1).step_by(2) {
                let Some(rest) = span.strip_prefix(&format!("{written} ")) else {
                    continue;
                };
                let words: Vec<&str> = rest
                    .split_whitespace()
                    .take_while(|w| !w.starts_with(['<', '-', '[']))
                    .collect();
                let sub = format!("{written} {}", words.join(" "));
                if !subs.contains(&sub) {
                    unknown.push(format!(
                        "{bin}: the row `{sub}` names no subcommand of {bin}"
                    ));
                }
            }
        }
    }
    super::assert_none(
        "docs/reference.md names what the command lines do not have",
        unknown,
    );
}

#[test]
fn flags_named_reads_long_flags_only() {
    assert_eq!(
        flags_named("`-n`, `--namespace NS` (`--x-y` too) `a--b`"),
        ["namespace", "x-y"]
    );
}
