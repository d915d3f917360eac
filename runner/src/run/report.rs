//! Turning a run into the node summary (docs/runner.md, "Reports: the summary ConfigMap") and printing it.

use std::collections::BTreeMap;

use chrono::SecondsFormat;
use combo_api::{ItemResult, NodeSummary};

use crate::run::Report;

/// Output formats of local mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// One row per item.
    Table,
    /// The summary value as YAML.
    Yaml,
    /// The summary value as JSON.
    Json,
}

/// The summary of a run. Items reported by several scripts of one category
/// merge: a failure wins over a skip and a skip over ok, and the first
/// result of the winning kind is kept. `failedItems` is set when failures
/// are not all listed (`err` lines past a script's item limit).
pub fn summary(report: &Report) -> NodeSummary {
    let mut categories: BTreeMap<String, BTreeMap<String, ItemResult>> = BTreeMap::new();
    for run in &report.scripts {
        let items = categories
            .entry(run.script.category.to_string())
            .or_default();
        for (item, r) in &run.items {
            match items.get(item) {
                Some(old) if old.verdict() >= r.verdict() => {}
                _ => {
                    items.insert(item.clone(), r.clone());
                }
            }
        }
    }
    let run_at = report.run_id.rfc3339();
    // Only a start after the scheduled second is written: a punctual run's
    // value keeps the summary's usual shape (docs/runner.md).
    let started_at = Some(report.started_at.to_rfc3339_opts(SecondsFormat::Secs, true))
        .filter(|s| *s != run_at)
        .unwrap_or_default();
    let mut summary = NodeSummary {
        run_at,
        started_at,
        finished_at: report
            .finished_at
            .to_rfc3339_opts(SecondsFormat::Secs, true),
        scripts: report.scripts_hash.clone(),
        categories,
        ..NodeSummary::default()
    };
    // Err lines a script printed past the item limit are failures that are
    // not listed (docs/runner.md, "Scripts"): the value says how many.
    let failed = summary.failed_count();
    if failed > summary.failed().count() {
        summary.failed_items = Some(failed as u32);
    }
    summary
}

/// The script that reported each failed item of a run, by category and
/// item: the report's cut keeps one failure of every script before a second
/// of any (docs/runner.md, "Reports: the summary ConfigMap").
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sources(BTreeMap<(String, String), String>);

impl Sources {
    /// The sources of `report`'s failed items. An item that several
    /// scripts of a category failed comes from the first of them, whose
    /// message the summary keeps.
    pub fn of(report: &Report) -> Sources {
        let mut m = BTreeMap::new();
        for run in &report.scripts {
            for (item, _) in run.failed() {
                m.entry((run.script.category.to_string(), item.to_string()))
                    .or_insert_with(|| run.script.path.to_string_lossy().into_owned());
            }
        }
        Sources(m)
    }

    /// The script that reported `item` of `category` failed, if known.
    pub fn get(&self, category: &str, item: &str) -> Option<&str> {
        self.0
            .get(&(category.to_string(), item.to_string()))
            .map(String::as_str)
    }
}

/// Renders `summary` in `format`.
pub fn render(summary: &NodeSummary, format: Format) -> String {
    match format {
        Format::Table => table(summary),
        Format::Yaml => summary.to_yaml(),
        Format::Json => {
            let mut s = serde_json::to_string_pretty(summary)
                .expect("a summary is always representable as JSON");
            s.push('\n');
            s
        }
    }
}

/// One row per item, failures marked `FAIL` with their message, skipped
/// items `SKIP` with their reason, and a closing count line.
pub fn table(summary: &NodeSummary) -> String {
    let mut rows = Vec::new();
    let mut total = 0;
    for (cat, items) in &summary.categories {
        for (item, r) in items {
            total += 1;
            let (status, msg) = match (&r.err, r.skip_reason()) {
                (Some(e), _) => ("FAIL", e.as_str()),
                (None, Some(reason)) => ("SKIP", reason),
                (None, None) => ("ok", ""),
            };
            let msg = msg.replace(['\n', '\r'], " ");
            rows.push(vec![cat.clone(), item.clone(), status.to_string(), msg]);
        }
    }
    let mut out = combo_api::table::table(&["CATEGORY", "ITEM", "STATUS", "MESSAGE"], &rows, 2);
    // Err lines a script printed past the item limit count each.
    let failed = summary.failed_count();
    let total = total + failed - summary.failed().count();
    let skipped = summary.skipped().count();
    out.push_str(&format!(
        "\nrun {}: {total} items, {failed} failed, {skipped} skipped\n",
        summary.run_at
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    use combo_api::{Category, RunId};

    use crate::run::discover::Script;
    use crate::run::exec::{Capture, Exit, Outcome};
    use crate::run::ScriptRun;

    fn run(cat: Category, path: &str, items: Vec<(&str, ItemResult)>) -> ScriptRun {
        ScriptRun {
            script: Script {
                category: cat,
                path: path.into(),
                name: "x".into(),
                item_prefix: String::new(),
            },
            outcome: Outcome {
                exit: Exit::Code(0),
                duration: Duration::ZERO,
                lines: vec![],
                untaken: Default::default(),
                stdout: Capture::default(),
                stderr: Capture::default(),
                last_stderr_line: String::new(),
            },
            items: items.into_iter().map(|(i, r)| (i.to_string(), r)).collect(),
        }
    }

    fn report() -> Report {
        let t = chrono::DateTime::parse_from_rfc3339("2026-11-22T06:00:00Z")
            .unwrap()
            .to_utc();
        Report {
            run_id: RunId::at(t),
            started_at: t + chrono::Duration::seconds(3),
            finished_at: t + chrono::Duration::seconds(7),
            scripts_hash: "0a1b2c3d4e5f".into(),
            scripts: vec![
                run(
                    Category::Disk,
                    "/s/disk/a.sh",
                    vec![("sdb1", ItemResult::err("disk full (97% used)"))],
                ),
                run(
                    Category::Disk,
                    "/s/disk/b.sh",
                    vec![("sdb1", ItemResult::ok()), ("sdb2", ItemResult::ok())],
                ),
                run(
                    Category::Net,
                    "/s/net/a.sh",
                    vec![
                        ("eth0", ItemResult::ok()),
                        ("eth2", ItemResult::err("link down")),
                    ],
                ),
            ],
        }
    }

    #[test]
    fn the_summary_yaml_has_the_spec_shape() {
        let yaml = summary(&report()).to_yaml();
        assert_eq!(
            yaml,
            "runAt: 2026-11-22T06:00:00Z\nstartedAt: 2026-11-22T06:00:03Z\nfinishedAt: 2026-11-22T06:00:07Z\n\
             scripts: 0a1b2c3d4e5f\n\
             disk:\n  sdb1:\n    err: disk full (97% used)\n  sdb2: {}\n\
             net:\n  eth0: {}\n  eth2:\n    err: link down\n"
        );
    }

    #[test]
    fn a_run_that_started_on_time_has_no_started_at() {
        let mut on_time = report();
        on_time.started_at = on_time.run_id.0 + chrono::Duration::milliseconds(400);
        let s = summary(&on_time);
        assert_eq!(s.started_at, "");
        assert!(!s.to_yaml().contains("startedAt"));
    }

    #[test]
    fn json_carries_the_same_structure() {
        let json = render(&summary(&report()), Format::Json);
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["runAt"], "2026-11-22T06:00:00Z");
        assert_eq!(v["net"]["eth2"]["err"], "link down");
        assert_eq!(v["net"]["eth0"], serde_json::json!({}));
    }

    #[test]
    fn each_failed_item_comes_from_the_first_script_that_failed_it() {
        let mut r = report();
        r.scripts.push(run(
            Category::Disk,
            "/s/disk/c.sh",
            vec![("sdb1", ItemResult::err("later"))],
        ));
        let sources = Sources::of(&r);
        assert_eq!(sources.get("disk", "sdb1"), Some("/s/disk/a.sh"));
        assert_eq!(sources.get("net", "eth2"), Some("/s/net/a.sh"));
        assert_eq!(sources.get("disk", "sdb2"), None, "healthy");
    }

    #[test]
    fn the_table_has_one_aligned_row_per_item_and_a_count() {
        let t = table(&summary(&report()));
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "CATEGORY  ITEM  STATUS  MESSAGE");
        assert_eq!(lines[1], "disk      sdb1  FAIL    disk full (97% used)");
        assert_eq!(lines[2], "disk      sdb2  ok");
        assert_eq!(lines[4], "net       eth2  FAIL    link down");
        assert_eq!(
            lines[6],
            "run 2026-11-22T06:00:00Z: 4 items, 2 failed, 0 skipped"
        );
    }

    #[test]
    fn skipped_items_show_as_skip_with_their_reason_and_are_counted_apart() {
        let mut r = report();
        r.scripts.push(run(
            Category::Mem,
            "/s/mem/oom.sh",
            vec![("oom-kills", ItemResult::skip("baseline recorded"))],
        ));
        let s = summary(&r);
        let t = table(&s);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[3], "mem       oom-kills  SKIP    baseline recorded");
        assert_eq!(
            lines.last().unwrap(),
            &"run 2026-11-22T06:00:00Z: 5 items, 2 failed, 1 skipped"
        );
        assert!(s
            .to_yaml()
            .contains("mem:\n  oom-kills:\n    skip: baseline recorded\n"));
        let json: serde_json::Value = serde_json::from_str(&render(&s, Format::Json)).unwrap();
        assert_eq!(json["mem"]["oom-kills"]["skip"], "baseline recorded");
        assert_eq!(
            Sources::of(&r).get("mem", "oom-kills"),
            None,
            "not a failure"
        );
    }

    #[test]
    fn across_scripts_a_failure_beats_a_skip_and_a_skip_beats_ok() {
        let mut r = report();
        r.scripts.push(run(
            Category::Disk,
            "/s/disk/c.sh",
            vec![
                ("sdb1", ItemResult::skip("no tool")),
                ("sdb2", ItemResult::skip("no tool")),
            ],
        ));
        r.scripts.push(run(
            Category::Disk,
            "/s/disk/d.sh",
            vec![("sdb2", ItemResult::ok())],
        ));
        let disk = &summary(&r).categories["disk"];
        assert_eq!(disk["sdb1"], ItemResult::err("disk full (97% used)"));
        assert_eq!(disk["sdb2"], ItemResult::skip("no tool"));
    }
}
