//! Command line of `kubectl-combo`, in the library so that the reference
//! test (`operator/tests/docs/`) reads the same flags the plugin parses;
//! and the parsers of its values that clap does not know.

use std::path::PathBuf;

use chrono::DateTime;
use clap::{Parser, Subcommand, ValueEnum};
use combo_api::{Category, RunId};

/// The binary's name, as its one-line errors start.
pub const BIN: &str = "kubectl-combo";

/// kubectl plugin for kube-combo: read summaries and errlogs, trigger runs.
#[derive(Parser, Debug)]
#[command(name = "kubectl-combo", version)]
pub struct Args {
    /// Namespace (default: the current context's).
    #[arg(short, long, global = true)]
    pub namespace: Option<String>,
    /// The kubeconfig file to use (default: $KUBECONFIG, else
    /// ~/.kube/config); kubectl does not pass its own to a plugin.
    #[arg(long, global = true, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use (default: its current context).
    #[arg(long, global = true, value_name = "NAME")]
    pub context: Option<String>,
    /// On an error, print every cause and where it came from, not one line.
    #[arg(long, global = true)]
    pub debug: bool,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// What `-o` prints instead of the table: the same answer as one
/// document, with the field names of docs/reference.md.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// One JSON document.
    Json,
    /// One YAML document.
    Yaml,
}

/// The shells `kubectl combo completion` writes a script for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Shell {
    /// bash (with the bash-completion package).
    Bash,
    /// zsh.
    Zsh,
}

/// The plugin's commands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Table of the Debugger's summary: NODE, RUN, CATEGORY, ITEM, ERROR.
    Summary {
        /// The Debugger.
        debugger: String,
        /// Show healthy items too.
        #[arg(long)]
        all: bool,
        /// Print the summary as json or yaml instead of the table.
        #[arg(short, long, value_enum)]
        output: Option<Output>,
    },
    /// Each node's verdicts of its failing items over its last 20 runs,
    /// from its DebuggerReport: NODE, ITEM, LAST-RUNS, FAILING, FLIPS.
    History {
        /// The Debugger.
        debugger: String,
        /// Only this node.
        #[arg(long)]
        node: Option<String>,
        /// One item's verdict run by run instead: `<category>/<item>`, or an
        /// item's name in any category.
        #[arg(long)]
        item: Option<String>,
        /// Print the histories as json or yaml instead of the table.
        #[arg(short, long, value_enum)]
        output: Option<Output>,
    },
    /// Run the inspection now on every node, keeping spec.runAt: sets the
    /// annotation kubecombo.io/run-now to the current time.
    Run {
        /// The Debugger.
        debugger: String,
        /// Wait until every node of the Debugger reported the run, then say
        /// how many items failed (exit status 1 when some did, 5 when the
        /// Debugger selects no node).
        #[arg(long)]
        wait: bool,
        /// With --wait: give up after this long (exit status 4): seconds
        /// (600) or a duration as kubectl takes it (90s, 10m, 1h30m).
        #[arg(long, default_value = "600", value_parser = parse_seconds, requires = "wait")]
        timeout: u64,
    },
    /// Print an errlog of one node and category, through `kubectl exec`.
    Errlog {
        /// The Debugger.
        debugger: String,
        /// Node whose pod to read.
        #[arg(long)]
        node: String,
        /// Category (disk, net, mem, svc, custom).
        #[arg(long)]
        category: Category,
        /// Run id (20261122T060000Z) or RFC 3339 time. Default: the newest
        /// errlog written for the node and category, whichever run it is of
        /// (an earlier one when the newest run passed); stderr names its run.
        #[arg(long, value_parser = parse_run)]
        run: Option<RunId>,
    },
    /// Paths of the Debugger's pingers, prober node to target, with loss and
    /// RTT of the last 5 minutes: failing and lossy ones first.
    Mesh {
        /// The Debugger.
        debugger: String,
        /// Show every path, not only failing and lossy ones.
        #[arg(long)]
        all: bool,
        /// Also write a self-contained HTML heat map to this file.
        #[arg(long, value_name = "FILE")]
        html: Option<std::path::PathBuf>,
        /// Print the paths as json or yaml instead of the table.
        #[arg(short, long, value_enum)]
        output: Option<Output>,
    },
    /// List Debuggers with their last run and failures.
    Status {
        /// Across all namespaces.
        #[arg(short = 'A', long)]
        all_namespaces: bool,
        /// Print the list as json or yaml instead of the table.
        #[arg(short, long, value_enum)]
        output: Option<Output>,
    },
    /// Print the shell completion script for bash or zsh: source it, or
    /// install it where the shell loads completions from.
    Completion {
        /// The shell.
        #[arg(value_enum)]
        shell: Shell,
    },
    /// The words that may follow ARGS, for the shells' completion and for
    /// kubectl's plugin completion (the `kubectl_complete-combo` file):
    /// one per line, then `:<directive>` as kubectl reads it.
    #[command(name = "__complete", hide = true)]
    Complete {
        /// The words after `kubectl combo`, the last the one being completed.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        words: Vec<String>,
    },
}

/// Accepts a run id (`20261122T060000Z`) or an RFC 3339 time; the error
/// says which forms are taken, or what is wrong with a time.
pub fn parse_run(s: &str) -> Result<RunId, String> {
    if let Ok(id) = s.parse::<RunId>() {
        return Ok(id);
    }
    if let Some(why) = combo_api::runat::time_problem(s) {
        return Err(format!("{s:?} is not a valid RFC 3339 time: {why}"));
    }
    DateTime::parse_from_rfc3339(s.trim())
        .map(|t| RunId::at(t.to_utc()))
        .map_err(|_| {
            format!(
                "{s:?} is neither a run id like 20261122T060000Z nor an RFC 3339 time like 2026-11-22T06:00:00Z"
            )
        })
}

/// Whole seconds of `s`: a number of seconds (`600`) or a duration of
/// hours, minutes and seconds as kubectl takes it (`90s`, `10m`, `1h30m`).
pub fn parse_seconds(s: &str) -> Result<u64, String> {
    let bad = || format!("{s:?} is not a number of seconds nor a duration like 90s, 10m or 1h30m");
    let s = s.trim();
    if let Ok(n) = s.parse::<u64>() {
        return Ok(n);
    }
    let (mut total, mut digits, mut units) = (0u64, String::new(), String::new());
    for c in s.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let per = match c {
            'h' => 3600,
            'm' => 60,
            's' => 1,
            _ => return Err(bad()),
        };
        let n: u64 = digits.parse().map_err(|_| bad())?;
        total = n
            .checked_mul(per)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(bad)?;
        digits.clear();
        units.push(c);
    }
    if !digits.is_empty() || units.is_empty() || !is_in_order(&units) {
        return Err(bad());
    }
    Ok(total)
}

/// Units `h`, `m`, `s` each at most once, in that order.
fn is_in_order(units: &str) -> bool {
    let rank = |c| "hms".find(c);
    units
        .chars()
        .map(rank)
        .collect::<Option<Vec<_>>>()
        .is_some_and(|r| r.windows(2).all(|w| w[0] < w[1]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Args, clap::Error> {
        Args::try_parse_from(std::iter::once("kubectl-combo").chain(args.iter().copied()))
    }

    #[test]
    fn a_timeout_without_wait_is_refused_and_with_it_taken() {
        let err = parse(&["run", "d", "--timeout", "5"]).unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::MissingRequiredArgument);
        let line = combo_api::cli::usage_line(BIN, &err);
        assert!(line.contains("--wait"), "{line}");
        let Command::Run { wait, timeout, .. } = parse(&["run", "d", "--wait", "--timeout", "90s"])
            .unwrap()
            .command
        else {
            panic!("run")
        };
        assert!(wait);
        assert_eq!(timeout, 90);
        // The default alone is no flag given.
        assert!(parse(&["run", "d"]).is_ok());
    }

    #[test]
    fn kubectls_flags_are_taken_before_or_after_the_command() {
        for args in [
            &[
                "--context",
                "prod",
                "--kubeconfig",
                "/k",
                "-n",
                "ops",
                "status",
            ][..],
            &[
                "status",
                "--context",
                "prod",
                "--kubeconfig",
                "/k",
                "--namespace",
                "ops",
            ],
        ] {
            let a = parse(args).unwrap();
            assert_eq!(a.context.as_deref(), Some("prod"), "{args:?}");
            assert_eq!(a.kubeconfig.as_deref(), Some(std::path::Path::new("/k")));
            assert_eq!(a.namespace.as_deref(), Some("ops"));
        }
        let a = parse(&["status", "-A", "-o", "json"]).unwrap();
        assert!(matches!(
            a.command,
            Command::Status {
                all_namespaces: true,
                output: Some(Output::Json)
            }
        ));
        // -A lists; a command about one Debugger does not take it.
        assert!(parse(&["summary", "d", "-A"]).is_err());
        assert!(parse(&["summary", "d", "-o", "yaml"]).is_ok());
        assert!(parse(&["mesh", "d", "-o", "json"]).is_ok());
        let a = parse(&[
            "history",
            "d",
            "--item",
            "disk/sdb1",
            "--node",
            "n",
            "-o",
            "yaml",
        ]);
        assert!(matches!(
            a.unwrap().command,
            Command::History { node: Some(n), item: Some(i), output: Some(Output::Yaml), .. }
                if n == "n" && i == "disk/sdb1"
        ));
        let err = parse(&["summary", "d", "-o", "wide"]).unwrap_err();
        assert!(err.to_string().contains("json, yaml"), "{err}");
        assert!(
            parse(&["run", "d", "-o", "json"]).is_err(),
            "run prints no document"
        );
    }

    #[test]
    fn completion_is_for_bash_or_zsh() {
        assert!(matches!(
            parse(&["completion", "zsh"]).unwrap().command,
            Command::Completion { shell: Shell::Zsh }
        ));
        assert!(parse(&["completion", "fish"]).is_err());
        let Command::Complete { words } = parse(&["__complete", "summary", "--a"]).unwrap().command
        else {
            panic!("__complete")
        };
        assert_eq!(words, ["summary", "--a"]);
    }

    #[test]
    fn a_timeout_is_seconds_or_a_kubectl_duration() {
        for (arg, secs) in [
            ("600", 600),
            ("90s", 90),
            ("10m", 600),
            ("1h30m", 5400),
            ("1m5s", 65),
        ] {
            assert_eq!(parse_seconds(arg), Ok(secs), "{arg}");
        }
        for bad in ["", "s", "10x", "1.5m", "30s1m", "1m1m", "10m5", "-5"] {
            let err = parse_seconds(bad).expect_err(bad);
            assert!(err.contains("duration like 90s"), "{bad}: {err}");
        }
    }

    #[test]
    fn runs_are_given_as_run_ids_or_rfc3339_times() {
        let a = parse_run("20261122T060000Z").unwrap();
        let b = parse_run("2026-11-22T06:00:00Z").unwrap();
        assert_eq!(a, b);
        assert_eq!(
            parse_run("garbage").unwrap_err(),
            "\"garbage\" is neither a run id like 20261122T060000Z nor an RFC 3339 time like 2026-11-22T06:00:00Z"
        );
        assert_eq!(
            parse_run("2026-11-22T06:00:00").unwrap_err(),
            "\"2026-11-22T06:00:00\" is not a valid RFC 3339 time: it has no time zone; end it with Z for UTC or an offset such as +01:00"
        );
    }
}
