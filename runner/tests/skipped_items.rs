//! `skip <item> <reason>` lines through the built `combo-runner --once`
//! (docs/runner.md, "Scripts" and "Local mode").

mod support;

use support::{once_as, once_table, once_yaml, Tree};

#[test]
fn a_run_with_only_skips_exits_zero_and_shows_each_reason() {
    let t = Tree::new("skip-only");
    t.script(
        "disk/smart.sh",
        "echo 'skip smart/sda smartctl is not installed'; echo 'ok sdb'",
    )
    .script(
        "mem/oom.sh",
        "echo 'skip oom-kills baseline recorded; counting from the next run'",
    );
    let (code, y, out) = once_yaml(t.path(), &[]);
    assert_eq!(code, 0, "a skip is not a failure: {out:?}");
    assert_eq!(
        y["disk"]["smart/sda"]["skip"].as_str(),
        Some("smartctl is not installed")
    );
    assert!(y["disk"]["smart/sda"].get("err").is_none());
    assert_eq!(
        y["disk"]["sdb"],
        serde_yaml::Value::Mapping(Default::default())
    );
    assert_eq!(
        y["mem"]["oom-kills"]["skip"].as_str(),
        Some("baseline recorded; counting from the next run")
    );
    assert!(t.list("disk/errlog").is_empty(), "no errlog for skips");
    assert!(t.list("mem/errlog").is_empty());
}

#[test]
fn the_table_marks_skips_and_counts_them_apart() {
    let t = Tree::new("skip-table");
    t.script(
        "net/links.sh",
        "echo 'skip eth0 no host network'; echo 'err eth1 link down'; echo 'ok eth2'",
    );
    let out = once_table(t.path());
    assert_eq!(out.status.code(), Some(1), "the err still fails the run");
    let text = String::from_utf8_lossy(&out.stdout);
    let row = |item: &str| {
        text.lines()
            .find(|l| l.split_whitespace().nth(1) == Some(item))
            .unwrap_or_else(|| panic!("no row for {item}: {text}"))
            .split_whitespace()
            .skip(2)
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(row("eth0"), "SKIP no host network");
    assert_eq!(row("eth1"), "FAIL link down");
    assert_eq!(row("eth2"), "ok");
    assert!(text.contains(": 3 items, 1 failed, 1 skipped"), "{text}");
}

#[test]
fn the_errlog_names_failed_items_only() {
    let t = Tree::new("skip-errlog");
    t.script(
        "svc/units.sh",
        "echo 'skip kubelet no systemd here'; echo 'err failed-units foo.service'",
    );
    let (code, y, _) = once_yaml(t.path(), &[]);
    assert_eq!(code, 1);
    assert_eq!(
        y["svc"]["kubelet"]["skip"].as_str(),
        Some("no systemd here")
    );
    let logs = t.list("svc/errlog");
    assert_eq!(logs.len(), 1, "{logs:?}");
    let log = t.errlog("svc");
    assert!(log.contains("item: failed-units"), "{log}");
    assert!(!log.contains("item: kubelet"), "{log}");
}

#[test]
fn json_output_carries_skip_as_a_field_of_the_item() {
    let t = Tree::new("skip-json");
    t.script("custom/probe.sh", "echo 'skip gpu no GPU on this node'");
    let out = once_as("json", t.path(), &[], &[]);
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["custom"]["gpu"],
        serde_json::json!({"skip": "no GPU on this node"})
    );
}
