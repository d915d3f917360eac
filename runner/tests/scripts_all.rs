//! The default scripts as a whole: shellcheck on every script, every script
//! twice against this machine, and the runner keeping each script's state so
//! that a problem is reported once.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use support::scripts::{default_scripts, klog_append, run_full, scripts_dir, state, up};
use support::Tree;

/// Copies the default scripts `rels` (and lib/common.sh) into `t`/scripts.
fn copy_scripts(t: &Tree, rels: &[&str]) -> PathBuf {
    for rel in rels.iter().chain(&["lib/common.sh"]) {
        let text = std::fs::read_to_string(scripts_dir().join(rel)).unwrap();
        t.file(&format!("scripts/{rel}"), &text, 0o755);
    }
    t.join("scripts")
}

#[test]
fn every_script_is_shellcheck_clean() {
    let mut files: Vec<PathBuf> = vec![scripts_dir().join("lib/common.sh")];
    for cat in ["disk", "net", "mem", "svc"] {
        for e in std::fs::read_dir(scripts_dir().join(cat))
            .unwrap()
            .flatten()
        {
            if e.path().extension().is_some_and(|x| x == "sh") {
                files.push(e.path());
            }
        }
    }
    assert!(files.len() >= 10, "{files:?}");
    let out = Command::new("shellcheck")
        .arg("-x")
        .args(&files)
        .output()
        .expect("shellcheck installed");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn every_script_runs_against_this_machine() {
    // Nameservers come from a loopback-only file: tests reach no other address.
    let t = Tree::new("real");
    t.file("resolv.conf", "nameserver 127.0.0.1\n", 0o644);
    let conf = t.join("resolv.conf");
    let root = Path::new("/");
    let mut seen = 0;
    let mut skipped_items = 0;
    let mut failed = Vec::new();
    // Twice: the first run records the baselines, the second judges.
    for round in 0..2 {
        for rel in default_scripts() {
            let st = state(&t, &rel.replace('/', "_"));
            let env = [
                ("NET_RESOLV_CONF", conf.to_str().unwrap()),
                ("STATE_DIR", st.as_str()),
            ];
            let (items, s) = run_full(&rel, root, &env);
            for (item, e) in &items {
                assert!(
                    !item.is_empty() && e.as_deref() != Some(""),
                    "{rel}: {item} {e:?}"
                );
                // What the machine's load decides (other jobs share it) may be red.
                let load = ["cpu:", "psi:", "busy:", "await:"]
                    .iter()
                    .any(|p| item.starts_with(p));
                if round == 1 && e.is_some() && !load {
                    failed.push(format!("{rel}: {item}: {e:?}"));
                }
            }
            for (item, why) in &s {
                assert!(
                    !item.is_empty() && !why.is_empty(),
                    "{rel}: skip {item} {why:?}"
                );
            }
            if round == 1 {
                seen += items.len();
                skipped_items += s.len();
            }
        }
    }
    assert!(seen >= 8, "the real machine yields items ({seen})");
    assert!(
        skipped_items > 0,
        "some checks need what this machine lacks"
    );
    assert!(failed.is_empty(), "this machine is healthy: {failed:#?}");
}

#[test]
fn the_runner_keeps_each_script_state_so_problems_are_reported_once() {
    let t = Tree::new("once-state");
    let scripts = copy_scripts(&t, &["svc/kernlog.sh", "net/counters.sh", "mem/oom.sh"]);
    let h = Tree::new("once-host");
    let host = h.path().to_str().unwrap();
    up(&h, "eth0", &[("rx_errors", 400), ("rx_packets", 1000)]);
    h.file("proc/vmstat", "oom_kill 9\n", 0o644);
    klog_append(
        &t,
        &[
            "booted",
            "INFO: task a:1 blocked for more than 120 seconds.",
        ],
    );
    let log = t.join("kmsg");
    let state_dir = t.join("state");
    let once = || {
        let out = support::once_as(
            "yaml",
            &scripts,
            &["--state-dir", state_dir.to_str().unwrap()],
            &[
                ("HOST_ROOT", host),
                ("KERNEL_LOG_FILE", log.to_str().unwrap()),
            ],
        );
        (out.status.code(), support::parse_yaml(&out))
    };
    // First run: every counting check records its baseline and skips.
    let (code, y) = once();
    assert_eq!(code, Some(0), "skips do not fail the run: {y:?}");
    for (cat, item) in [
        ("svc", "hung-tasks"),
        ("svc", "oops"),
        ("net", "errors:eth0"),
        ("net", "drops:eth0"),
        ("mem", "oom-kills"),
    ] {
        assert_eq!(
            y[cat][item]["skip"].as_str(),
            Some("baseline recorded; counting from the next run"),
            "{cat}/{item}: {y:?}"
        );
    }
    // Faults between two runs: reported by the next run only.
    klog_append(&t, &["INFO: task b:2 blocked for more than 120 seconds."]);
    up(&h, "eth0", &[("rx_errors", 450), ("rx_packets", 2000)]);
    h.file("proc/vmstat", "oom_kill 10\n", 0o644);
    let (code, y) = once();
    assert_eq!(code, Some(1), "{y:?}");
    let e = |cat: &str, item: &str| y[cat][item]["err"].as_str().unwrap_or_default().to_string();
    assert!(
        e("svc", "hung-tasks").contains(
            "1 hung task line(s) in the kernel log since the previous run, last: INFO: task b:2"
        ),
        "{y:?}"
    );
    assert!(
        e("net", "errors:eth0").contains("50 rx/tx errors since the previous run"),
        "{y:?}"
    );
    assert!(
        e("mem", "oom-kills").contains("1 OOM kill(s) since the previous run"),
        "{y:?}"
    );
    assert_eq!(
        y["svc"]["oops"],
        serde_yaml::Value::Mapping(Default::default())
    );
    let (code, y) = once();
    assert_eq!(code, Some(0), "nothing new since the previous run: {y:?}");
}
