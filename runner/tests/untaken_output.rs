//! Every stdout line of a script is accounted for (docs/runner.md,
//! "Scripts"): item lines past the limit are counted into one item per
//! script, an overlong line is cut and its item kept, and a script that
//! prints only lines not in the script format fails with an item that
//! quotes them. Checked on the local output and errlog, and on the
//! DebuggerReport the runner would write.

mod support;

use std::time::Duration;

use combo_api::report::MAX_REPORT_RESULT_BYTES;
use combo_api::summary::{CUT_MARKER, SHORTEST_MESSAGE};
use combo_api::{Category, NodeSummary, RunId};
use combo_runner::cluster::publish::{apply_body, Owner};
use combo_runner::cluster::schedule::History;
use combo_runner::run::report::{self, Sources};
use combo_runner::run::{self, RunConfig};
use support::{err_of, once_as, once_yaml, parse_yaml, Tree};

/// A script printing `n` lines `<kind> line-<i> ...` (`i` from 1), then `last`.
fn flood(kind: &str, n: u32, last: &str) -> String {
    format!(
        "i=1\nwhile [ $i -le {n} ]; do echo \"{kind} line-$i something broke on real-node-1 at $i\"; i=$((i+1)); done\n{last}"
    )
}

#[test]
fn an_err_line_after_19999_ok_lines_is_counted_and_fails_the_run() {
    let t = Tree::new("untaken-late-err");
    t.script(
        "disk/big.sh",
        &flood("ok", 19_999, "echo 'err line-20000 disk on fire'"),
    );
    let (code, y, out) = once_yaml(t.path(), &[]);
    assert_eq!(code, 1, "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        err_of(&y, "disk", "big/output"),
        Some("1 err, 0 skip and 18999 ok lines past the limit of 1000 item lines were not taken")
    );
    let items = y["disk"].as_mapping().unwrap();
    assert_eq!(items.len(), 1001, "1000 items taken and the output item");
    assert!(
        t.errlog("disk")
            .contains("item: big/output\nerr: 1 err, 0 skip and 18999 ok lines"),
        "the errlog names it"
    );
}

#[test]
fn twenty_thousand_err_lines_count_as_twenty_thousand_failures() {
    let t = Tree::new("untaken-errs");
    t.script("disk/errs.sh", &flood("err", 20_000, ""));
    let (code, y, _) = once_yaml(t.path(), &[]);
    assert_eq!(code, 1);
    assert_eq!(
        y["failedItems"].as_u64(),
        Some(20_000),
        "{:?}",
        y["failedItems"]
    );
    assert!(err_of(&y, "disk", "errs/output")
        .unwrap()
        .starts_with("19000 err, 0 skip and 0 ok lines past the limit"));
    let table = once_as("table", t.path(), &[], &[]);
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(
        text.contains(": 20000 items, 20000 failed, 0 skipped"),
        "{}",
        text.lines().rev().take(3).collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn ok_and_skip_lines_past_the_limit_are_counted_in_a_skipped_item() {
    let t = Tree::new("untaken-ok");
    t.script(
        "net/many.sh",
        &flood("ok", 1500, "echo 'skip extra no tool'"),
    );
    let (code, y, _) = once_yaml(t.path(), &[]);
    assert_eq!(code, 0, "ok lines past the limit do not fail the node");
    assert_eq!(
        y["net"]["many/output"]["skip"].as_str(),
        Some("0 err, 1 skip and 500 ok lines past the limit of 1000 item lines were not taken")
    );
    assert!(y.get("failedItems").is_none());
}

#[test]
fn an_err_line_of_10000_characters_is_cut_and_its_item_kept() {
    let t = Tree::new("untaken-long");
    let long = "x".repeat(10_000);
    t.script("disk/long.sh", &format!("echo 'err huge {long}'"))
        .script("disk/other.sh", "echo 'err small disk full'");
    let (code, y, _) = once_yaml(t.path(), &[]);
    assert_eq!(code, 1);
    let want = format!("{}{CUT_MARKER}", "x".repeat(8 * 1024 - "err huge ".len()));
    assert_eq!(err_of(&y, "disk", "huge"), Some(want.as_str()));
    assert_eq!(err_of(&y, "disk", "small"), Some("disk full"));
    assert!(t.errlog("disk").contains("item: huge\nerr: xxxx"));
}

#[test]
fn a_script_printing_only_other_lines_fails_with_them_quoted_and_in_the_errlog() {
    let t = Tree::new("untaken-plain");
    t.script(
        "svc/broken.sh",
        "echo 'ERROR: disk on fire'\necho 'second line'\necho\necho 'WARN: third'",
    )
    .script("svc/chatty.sh", "echo 'checking...'\necho 'ok fine'");
    let (code, y, _) = once_yaml(t.path(), &[]);
    assert_eq!(code, 1);
    assert_eq!(
        err_of(&y, "svc", "broken/output"),
        Some("output not in the script format: 3 lines, the first: \"ERROR: disk on fire\"")
    );
    assert!(
        y["svc"].get("chatty/output").is_none(),
        "plain output beside items stays plain output: {:?}",
        y["svc"]
    );
    let log = t.errlog("svc");
    assert!(log.contains("item: broken/output\nerr: output not in the script format"));
    assert!(log.contains("ERROR: disk on fire\nsecond line"), "{log}");
}

/// Runs the scripts of `t` in `categories` as the runner in a pod does.
async fn inspect(t: &Tree, categories: &[Category]) -> run::Report {
    let cfg = RunConfig {
        scripts: t.path().to_path_buf(),
        categories: categories.to_vec(),
        timeout: Duration::from_secs(60),
        parallel: 2,
        node: "node-1".into(),
        host_root: "/".into(),
        state: None,
        runner_exe: None,
    };
    let at = chrono::DateTime::parse_from_rfc3339("2026-11-22T06:00:00Z")
        .unwrap()
        .to_utc();
    run::inspect(&cfg, RunId::at(at)).await.expect("the run")
}

/// The DebuggerReport spec the runner writes for `report`.
fn report_spec(report: &run::Report) -> serde_json::Value {
    let owner = Owner {
        name: "dbg".into(),
        uid: "uid-1".into(),
    };
    let summary: NodeSummary = report::summary(report);
    let sources = Sources::of(report);
    apply_body(
        "ops",
        "node-1",
        &owner,
        &summary,
        &sources,
        &History::default(),
    )["spec"]
        .clone()
}

#[tokio::test]
async fn the_report_counts_every_err_line_and_keeps_the_output_item() {
    let t = Tree::new("untaken-report");
    t.script("disk/errs.sh", &flood("err", 20_000, "")).script(
        "mem/late.sh",
        &flood("ok", 19_999, "echo 'err line-20000 on fire'"),
    );
    let report = inspect(&t, &[Category::Disk, Category::Mem]).await;
    let spec = report_spec(&report);
    assert_eq!(spec["failedItems"], 20_001, "{}", spec["failedItems"]);
    assert!(spec["categories"]["disk"]["errs/output"]["err"]
        .as_str()
        .unwrap()
        .starts_with("19000 err"));
    assert!(spec["categories"]["mem"]["late/output"]["err"]
        .as_str()
        .unwrap()
        .starts_with("1 err, "));
    let yaml = serde_yaml::to_string(&spec["categories"]).unwrap();
    assert!(yaml.len() <= MAX_REPORT_RESULT_BYTES, "{}", yaml.len());
}

#[tokio::test]
async fn other_failures_keep_their_whole_message_beside_a_large_script() {
    let t = Tree::new("untaken-room");
    // Three scripts of 1,000 healthy items each are more than a report
    // holds (MAX_REPORT_RESULT_BYTES), so the healthy items fold.
    t.script("disk/big.sh", &flood("ok", 1001, ""));
    for k in 1..3 {
        let more =
            format!("i=1\nwhile [ $i -le 1000 ]; do echo \"ok more{k}-$i\"; i=$((i+1)); done\n");
        t.script(&format!("disk/big{k}.sh"), &more);
    }
    let msg = "something broke on real-node-1: /dev/sdb1 is 97% full, 1.2 GiB left of 40 GiB";
    for i in 0..7 {
        t.script(
            &format!("disk/fail{i}.sh"),
            &format!("echo 'err fail-{i} {msg}'"),
        );
    }
    let report = inspect(&t, &[Category::Disk]).await;
    let spec = report_spec(&report);
    let disk = spec["categories"]["disk"].as_object().unwrap();
    assert!(
        disk.contains_key("(3000 healthy items omitted)"),
        "{:?}",
        disk.keys().collect::<Vec<_>>()
    );
    for i in 0..7 {
        assert_eq!(
            disk[&format!("fail-{i}")]["err"],
            msg,
            "the room the healthy items left holds the whole message"
        );
    }
    assert_eq!(spec["failedItems"], 7);
    assert_eq!(
        disk["big/output"]["skip"]
            .as_str()
            .map(|s| s.len() > SHORTEST_MESSAGE),
        Some(true)
    );
}

#[test]
fn the_yaml_output_parses_back_as_a_summary() {
    let t = Tree::new("untaken-parse");
    t.script("disk/errs.sh", &flood("err", 1200, ""));
    let out = once_as("yaml", t.path(), &[], &[]);
    let y = parse_yaml(&out);
    let s: NodeSummary = serde_yaml::from_value(y).unwrap();
    assert_eq!(s.failed_items, Some(1200));
    assert_eq!(s.failed_count(), 1200);
}
