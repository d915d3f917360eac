//! `kubectl combo` (docs/reference.md, "`kubectl-combo`"): the command line and
//! the pure parts — tables and choices. The binary `kubectl-combo` does the
//! I/O.

pub mod cli;
pub mod errors;
pub mod mesh;
pub mod mesh_gather;
pub mod mesh_html;
pub mod run_now;
pub mod scripts;
pub mod truth;

use std::collections::BTreeMap;

use chrono::DateTime;
use combo_api::{Category, Debugger, NodeSummary, RunId};
use kube::ResourceExt;

/// Formats rows as left-aligned columns separated by three spaces, like kubectl.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    combo_api::table::table(header, rows, 3)
}

/// The run id of a summary's `runAt`, or the value itself if it is not a time.
pub fn run_id_of(run_at: &str) -> String {
    DateTime::parse_from_rfc3339(run_at)
        .map(|t| RunId::at(t.to_utc()).to_string())
        .unwrap_or_else(|_| run_at.to_string())
}

/// Rows NODE, RUN, CATEGORY, ITEM, ERROR of a summary ConfigMap's data:
/// failed items only unless `all`. With `all` every row also has the
/// node's scripts hash after RUN ([`SUMMARY_ALL_HEADER`]), and a node
/// without any item gets a row `(no items)`, so each node's hash shows.
/// Values that do not parse are shown as one row with the parse error.
pub fn summary_rows(data: &BTreeMap<String, String>, all: bool) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for (node, value) in data {
        let first = rows.len();
        let parsed = NodeSummary::from_yaml(value);
        node_rows(&mut rows, node, &parsed, all);
        if all {
            let scripts = parsed.as_ref().map(scripts::shown);
            let scripts = scripts.unwrap_or_else(|_| "-".into());
            if rows.len() == first {
                let run = parsed.as_ref().map(|s| run_id_of(&s.run_at));
                let run = run.unwrap_or_else(|_| "-".into());
                rows.push(vec![
                    node.clone(),
                    run,
                    "-".into(),
                    "(no items)".into(),
                    "-".into(),
                ]);
            }
            for row in &mut rows[first..] {
                row.insert(2, scripts.clone());
            }
        }
    }
    rows
}

/// The rows of one node's value, as [`summary_rows`] without the scripts.
fn node_rows(
    rows: &mut Vec<Vec<String>>,
    node: &str,
    parsed: &Result<NodeSummary, serde_yaml::Error>,
    all: bool,
) {
    let summary = match parsed {
        Ok(s) => s,
        Err(e) => {
            rows.push(vec![
                node.to_string(),
                "-".into(),
                "-".into(),
                "-".into(),
                format!("unreadable summary: {e}"),
            ]);
            return;
        }
    };
    let run = run_id_of(&summary.run_at);
    for (category, items) in &summary.categories {
        for (item, result) in items {
            if result.err.is_none() && !all {
                continue;
            }
            let error = match (&result.err, result.skip_reason()) {
                (Some(e), _) => e.clone(),
                (None, Some(why)) => format!("(skipped: {why})"),
                (None, None) => "-".into(),
            };
            rows.push(vec![
                node.to_string(),
                run.clone(),
                category.clone(),
                item.clone(),
                error,
            ]);
        }
    }
    // A value shortened to fit a large cluster's ConfigMap counts what
    // it leaves out and names the DebuggerReport that has it all.
    let listed = summary.failed().count() as u32;
    if let Some(more) = summary
        .failed_items
        .map(|n| n.saturating_sub(listed))
        .filter(|n| *n > 0)
    {
        let whole = match &summary.report {
            Some(r) => format!("kubectl get dbgr {r} -o yaml"),
            None => "see the node's DebuggerReport".into(),
        };
        rows.push(vec![
            node.to_string(),
            run.clone(),
            "-".into(),
            format!("({more} more failed)"),
            whole,
        ]);
    }
    if let (true, Some(n)) = (all, summary.healthy_items) {
        rows.push(vec![
            node.to_string(),
            run.clone(),
            "-".into(),
            format!("({n} healthy)"),
            "-".into(),
        ]);
    }
}

/// Skipped items over every node of a summary: listed ones, or the count
/// of a shortened value, whichever is larger.
pub fn skipped_count(data: &BTreeMap<String, String>) -> u32 {
    data.values()
        .filter_map(|v| NodeSummary::from_yaml(v).ok())
        .map(|s| {
            let listed = s.skipped().count() as u32;
            s.skipped_items.unwrap_or(0).max(listed)
        })
        .sum()
}

/// Header of [`summary_rows`].
pub const SUMMARY_HEADER: [&str; 5] = ["NODE", "RUN", "CATEGORY", "ITEM", "ERROR"];

/// Header of [`summary_rows`] with `all`: the node's scripts hash after RUN.
pub const SUMMARY_ALL_HEADER: [&str; 6] = ["NODE", "RUN", "SCRIPTS", "CATEGORY", "ITEM", "ERROR"];

/// Header of [`status_rows`].
pub const STATUS_HEADER: [&str; 11] = [
    "NAMESPACE",
    "NAME",
    "TYPE",
    "READY",
    "LAST-RUN",
    "NEXT-RUN",
    "COMPLETED",
    "FAILED",
    "SKIPPED",
    "SCRIPTS",
    "CONDITION",
];

/// One row per Debugger: its last run and failures.
pub fn status_rows(debuggers: &[Debugger]) -> Vec<Vec<String>> {
    let mut rows: Vec<Vec<String>> = debuggers
        .iter()
        .map(|d| {
            let s = d.status.clone().unwrap_or_default();
            let scripts = scripts::status_cell(&s);
            let condition = s
                .conditions
                .iter()
                .find(|c| c.type_ == "Ready")
                .map(|c| format!("Ready={} ({})", c.status, c.reason))
                .unwrap_or_else(|| "-".into());
            vec![
                d.namespace().unwrap_or_default(),
                d.name_any(),
                serde_json::to_value(d.spec.workload_type)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
                format!("{}/{}", s.ready_pods, s.desired_pods),
                s.last_run_at.unwrap_or_else(|| "-".into()),
                s.next_run_at.unwrap_or_else(|| "-".into()),
                s.completed_nodes.to_string(),
                s.failed_items.to_string(),
                s.skipped_items.to_string(),
                scripts,
                condition,
            ]
        })
        .collect();
    rows.sort();
    rows
}

/// Directories that may hold a category's errlogs inside the runner
/// container, in the order to look: `/scripts/<category>/errlog`, then
/// `/scripts/errlog/<category>`, where the runner writes when the first
/// cannot be written (always for `custom`: the ConfigMap mount is
/// read-only).
pub fn errlog_dirs(category: Category) -> [String; 2] {
    [
        format!("/scripts/{category}/errlog"),
        format!("/scripts/errlog/{category}"),
    ]
}

/// Path of run `run`'s errlog in `dir`.
pub fn errlog_path(dir: &str, run: &RunId) -> String {
    format!("{dir}/{run}.log")
}

/// The newest errlog in an `ls -t` listing of paths (newest written
/// first, over both errlog directories): its run and its directory. Run ids
/// name scheduled times, not the order runs happened in (a past timestamp
/// set after a cron run runs last), so the order is the files'.
pub fn newest_errlog(listing_newest_first: &str) -> Option<(RunId, String)> {
    listing_newest_first.lines().find_map(|path| {
        let (dir, file) = path.trim().rsplit_once('/')?;
        let run = file.strip_suffix(".log")?.parse::<RunId>().ok()?;
        Some((run, dir.to_string()))
    })
}

/// The shell command that lists the errlogs of `dirs`, newest written
/// first, as paths; a directory that does not exist lists nothing.
pub fn errlog_listing_command(dirs: &[String]) -> Vec<String> {
    let mut cmd = vec![
        "sh".to_string(),
        "-c".to_string(),
        r#"for d in "$@"; do set -- "$@" "$d"/*.log; shift; done; ls -t -- "$@" 2>/dev/null; true"#
            .to_string(),
        "sh".to_string(),
    ];
    cmd.extend(dirs.iter().cloned());
    cmd
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
    use combo_api::{DebuggerSpec, DebuggerStatus};

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

    fn data() -> BTreeMap<String, String> {
        [
            (
                "node-1".to_string(),
                "runAt: \"2026-11-22T06:00:00Z\"\ndisk:\n  sdb1: {err: \"disk full\"}\n  sdb2: {}\n"
                    .to_string(),
            ),
            (
                "node-2".to_string(),
                "runAt: \"2026-11-22T06:00:00Z\"\nnet:\n  eth0: {}\n".to_string(),
            ),
        ]
        .into()
    }

    #[test]
    fn summary_shows_failed_items_only_unless_all() {
        let failed = summary_rows(&data(), false);
        assert_eq!(
            failed,
            vec![vec![
                "node-1".to_string(),
                "20261122T060000Z".into(),
                "disk".into(),
                "sdb1".into(),
                "disk full".into()
            ]]
        );
        let all = summary_rows(&data(), true);
        assert_eq!(all.len(), 3);
        assert!(all.iter().any(|r| r[0] == "node-2" && r[5] == "-"));
    }

    #[test]
    fn all_shows_each_nodes_scripts_hash_even_without_items() {
        let data = BTreeMap::from([
            (
                "node-1".to_string(),
                "runAt: \"2026-11-22T06:00:00Z\"\nscripts: 0a1b2c3d4e5f\ndisk:\n  sdb1: {err: full}\n  sdb2: {}\n".to_string(),
            ),
            (
                "node-2".to_string(),
                "runAt: \"2026-11-22T06:00:00Z\"\nscripts: 5f4e3d2c1b0a\n".to_string(),
            ),
            (
                "node-3".to_string(),
                "runAt: \"2026-11-22T06:00:00Z\"\nnet:\n  eth0: {}\n".to_string(),
            ),
        ]);
        let all = summary_rows(&data, true);
        let shown: Vec<String> = all.iter().map(|r| r[..4].join(" ")).collect();
        assert_eq!(
            shown,
            [
                "node-1 20261122T060000Z 0a1b2c3d4e5f disk",
                "node-1 20261122T060000Z 0a1b2c3d4e5f disk",
                "node-2 20261122T060000Z 5f4e3d2c1b0a -",
                "node-3 20261122T060000Z - net",
            ]
        );
        assert_eq!(all[2][4], "(no items)");
        let out = table(&SUMMARY_ALL_HEADER, &all);
        assert!(
            out.starts_with("NODE     RUN                SCRIPTS        CATEGORY"),
            "{out}"
        );
        let failed = summary_rows(&data, false);
        assert_eq!(failed.len(), 1);
        assert_eq!(
            failed[0].len(),
            SUMMARY_HEADER.len(),
            "no SCRIPTS without --all"
        );
    }

    #[test]
    fn a_shortened_value_counts_what_it_leaves_out_and_names_the_report() {
        let data = BTreeMap::from([
            (
                "node-1".to_string(),
                "runAt: \"2026-11-22T06:00:00Z\"\nhealthyItems: 9\nfailedItems: 5\nreport: dbg.node-1\ndisk:\n  sdb1: {err: full}\n".to_string(),
            ),
            (
                "node-2".to_string(),
                "runAt: \"2026-11-22T06:00:00Z\"\nhealthyItems: 12\n".to_string(),
            ),
        ]);
        let failed = summary_rows(&data, false);
        assert_eq!(failed.len(), 2, "{failed:?}");
        assert_eq!(failed[0][3], "sdb1");
        assert_eq!(failed[1][3], "(4 more failed)");
        assert_eq!(failed[1][4], "kubectl get dbgr dbg.node-1 -o yaml");
        let all = summary_rows(&data, true);
        assert!(all
            .iter()
            .any(|r| r[0] == "node-2" && r[4] == "(12 healthy)"));
    }

    #[test]
    fn skipped_items_are_listed_with_all_and_counted_apart() {
        let data = BTreeMap::from([(
            "node-1".to_string(),
            "runAt: \"2026-11-22T06:00:00Z\"\ndisk:\n  smart: {skip: \"no smartctl in the image\"}\n  sda: {}\n"
                .to_string(),
        )]);
        assert!(
            summary_rows(&data, false).is_empty(),
            "a skip is no failure"
        );
        let all = summary_rows(&data, true);
        assert!(
            all.iter()
                .any(|r| r[4] == "smart" && r[5] == "(skipped: no smartctl in the image)"),
            "{all:?}"
        );
        assert_eq!(skipped_count(&data), 1);
        assert_eq!(skipped_count(&self::tests::data()), 0);
    }

    #[test]
    fn table_aligns_columns_under_the_header() {
        let out = table(&SUMMARY_HEADER, &summary_rows(&data(), false));
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(lines[0].starts_with("NODE     RUN"), "{out}");
        assert_eq!(lines[0].find("CATEGORY"), lines[1].find("disk"));
    }

    #[test]
    fn status_lists_each_debugger_with_its_last_run_and_failures() {
        let mut d = Debugger::new("node-check", DebuggerSpec::default());
        d.metadata.namespace = Some("ops".into());
        d.status = Some(DebuggerStatus {
            desired_pods: 3,
            ready_pods: 2,
            last_run_at: Some("2026-11-22T06:00:00Z".into()),
            failed_items: 4,
            completed_nodes: 3,
            ..DebuggerStatus::default()
        });
        let rows = status_rows(&[d]);
        assert_eq!(rows[0].len(), STATUS_HEADER.len());
        assert_eq!(rows[0][9], "-", "no report told its scripts");
        assert_eq!(
            rows[0][..8],
            [
                "ops",
                "node-check",
                "daemonset",
                "2/3",
                "2026-11-22T06:00:00Z",
                "-",
                "3",
                "4"
            ]
        );
    }

    #[test]
    fn newest_errlog_is_the_first_run_in_a_listing_by_time_over_both_directories() {
        // `ls -t` over both directories: the past timestamp ran last.
        let listing = "/scripts/disk/errlog/README\n/scripts/disk/errlog/20250601T000000Z.log\n\
                       /scripts/errlog/disk/20261122T060000Z.log\n/scripts/disk/errlog/20261121T180000Z.log\n";
        assert_eq!(
            newest_errlog(listing)
                .map(|(r, d)| format!("{d} {r}"))
                .as_deref(),
            Some("/scripts/disk/errlog 20250601T000000Z")
        );
        let fallback = "/scripts/errlog/custom/20261122T060000Z.log\n";
        assert_eq!(
            newest_errlog(fallback)
                .map(|(r, d)| format!("{d} {r}"))
                .as_deref(),
            Some("/scripts/errlog/custom 20261122T060000Z")
        );
        assert_eq!(newest_errlog(""), None);
        let (run, dir) = newest_errlog(listing).unwrap();
        assert_eq!(
            errlog_path(&dir, &run),
            "/scripts/disk/errlog/20250601T000000Z.log"
        );
    }

    #[test]
    fn custom_errlogs_are_also_looked_for_where_the_runner_falls_back() {
        assert_eq!(
            errlog_dirs(Category::Custom),
            ["/scripts/custom/errlog", "/scripts/errlog/custom"]
        );
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
