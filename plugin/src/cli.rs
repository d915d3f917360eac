//! Command line of `kubectl-combo`, in the library so that the reference
//! test (`operator/tests/docs/`) reads the same flags the plugin parses;
//! and the parsers of its values that clap does not know.

use chrono::DateTime;
use clap::{Parser, Subcommand};
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
    /// On an error, print every cause and where it came from, not one line.
    #[arg(long, global = true)]
    pub debug: bool,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
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
    },
    /// Run the inspection now on every node, keeping spec.runAt: sets the
    /// annotation kubecombo.io/run-now to the current time.
    Run {
        /// The Debugger.
        debugger: String,
        /// Wait until every node of the Debugger reported the run, then say
        /// how many items failed (exit status 1 when some did).
        #[arg(long)]
        wait: bool,
        /// With --wait: give up after this long (exit status 4): seconds
        /// (600) or a duration as kubectl takes it (90s, 10m, 1h30m).
        #[arg(long, default_value = "600", value_parser = parse_seconds)]
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
    },
    /// List Debuggers with their last run and failures.
    Status {
        /// Across all namespaces.
        #[arg(short = 'A', long)]
        all_namespaces: bool,
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
