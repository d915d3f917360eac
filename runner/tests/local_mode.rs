//! `combo-runner --once` against scripts made by each test (docs/runner.md, "Local mode").

mod support;

use support::{alive, err_of, once_as, once_table, once_yaml, runner, stop_mid_run, Tree};

fn has_item(y: &serde_yaml::Value, cat: &str, item: &str) -> bool {
    y[cat].get(item).is_some()
}

#[test]
fn ok_and_err_items_land_in_the_summary_and_the_exit_code_is_one() {
    let t = Tree::new("items");
    t.script(
        "disk/usage.sh",
        "echo 'ok sda1'; echo 'err sdb1 disk full (97% used)'",
    )
    .script("net/links.sh", "echo 'ok eth0'");
    let (code, y, _) = once_yaml(t.path(), &[]);
    assert_eq!(code, 1);
    assert!(y["runAt"].as_str().unwrap().ends_with('Z'));
    assert!(y["finishedAt"].as_str().is_some());
    assert_eq!(
        y["disk"]["sda1"],
        serde_yaml::Value::Mapping(Default::default())
    );
    assert_eq!(err_of(&y, "disk", "sdb1"), Some("disk full (97% used)"));
    assert!(has_item(&y, "net", "eth0"));
}

#[test]
fn a_healthy_run_exits_zero_and_writes_no_errlog() {
    let t = Tree::new("healthy");
    t.script("mem/a.sh", "echo 'ok available'");
    let (code, y, _) = once_yaml(t.path(), &[]);
    assert_eq!(code, 0);
    assert!(has_item(&y, "mem", "available"));
    assert!(t.list("mem/errlog").is_empty());
}

#[test]
fn scripts_get_node_run_category_and_host_root_in_their_environment() {
    let t = Tree::new("env");
    t.script(
        "svc/env.sh",
        "echo \"err env $NODE_NAME|$RUN_ID|$CATEGORY|$HOST_ROOT\"",
    );
    let out = once_as(
        "json",
        t.path(),
        &["--host-root", "/host"],
        &[("NODE_NAME", "node-7")],
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let msg = v["svc"]["env"]["err"].as_str().unwrap().to_string();
    let run_id = msg.split('|').nth(1).unwrap();
    assert!(msg.starts_with("node-7|"), "{msg}");
    assert!(msg.ends_with("|svc|/host"), "{msg}");
    assert_eq!(run_id.len(), "20261122T060000Z".len());
    assert_eq!(v["runAt"].as_str().unwrap().replace(['-', ':'], ""), run_id);
}

#[test]
fn a_non_zero_exit_without_err_line_becomes_an_item_named_after_the_script() {
    let t = Tree::new("exit");
    t.script(
        "disk/broken.sh",
        "echo 'ok sda'; echo 'first' >&2; echo 'df: no table' >&2; exit 4",
    );
    let (code, y, _) = once_yaml(t.path(), &[]);
    assert_eq!(code, 1);
    assert!(has_item(&y, "disk", "sda"));
    assert_eq!(err_of(&y, "disk", "broken"), Some("exit 4: df: no table"));
    assert_eq!(t.list("disk/errlog").len(), 1);
    let log = t.errlog("disk");
    assert!(log.contains("disk/broken.sh"), "{log}");
    assert!(
        log.contains("item: broken\nerr: exit 4: df: no table"),
        "{log}"
    );
    assert!(log.contains("exit code: 4"), "{log}");
    assert!(log.contains("duration: "), "{log}");
    assert!(
        log.contains("--- stderr (") && log.contains("first\ndf: no table"),
        "{log}"
    );
}

#[test]
fn a_timeout_kills_the_script_with_its_forked_child_and_the_others_finish() {
    let t = Tree::new("timeout");
    let pidfile = t.join("child.pid");
    t.script(
        "net/hang.sh",
        &format!(
            "sleep 300 &\necho $! > {}\necho 'ok before-hang'\nsleep 300",
            pidfile.display()
        ),
    )
    .script("net/quick.sh", "echo 'ok eth0'");
    let (code, y, _) = once_yaml(t.path(), &["--timeout", "1"]);
    assert_eq!(code, 1);
    assert_eq!(err_of(&y, "net", "hang"), Some("timeout after 1s"));
    assert!(has_item(&y, "net", "before-hang"));
    assert!(
        has_item(&y, "net", "eth0"),
        "the quick script is not stalled"
    );
    let child: u32 = t
        .read("child.pid")
        .trim()
        .parse()
        .expect("the script forked a child");
    assert!(!alive(child), "forked child {child} survived the timeout");
    let log = t.errlog("net");
    assert!(
        log.contains("exit code: killed after timeout of 1s"),
        "{log}"
    );
}

#[test]
fn huge_output_is_capped_in_the_errlog_and_items_after_it_still_count() {
    let t = Tree::new("huge");
    t.script(
        "mem/flood.sh",
        "head -c 300000 /dev/zero | tr '\\0' 'x'; echo; head -c 200000 /dev/zero | tr '\\0' 'y' >&2; echo 'err late found after the flood'",
    );
    let (code, y, _) = once_yaml(t.path(), &[]);
    assert_eq!(code, 1);
    assert_eq!(err_of(&y, "mem", "late"), Some("found after the flood"));
    let log = t.errlog("mem");
    assert!(
        log.contains("[output capped at 65536 of 300032 bytes]"),
        "stdout cap"
    );
    assert!(
        log.contains("[output capped at 65536 of 200000 bytes]"),
        "stderr cap"
    );
    assert!(
        log.len() < 2 * 65536 + 4096,
        "errlog is {} bytes",
        log.len()
    );
}

#[test]
fn non_executable_and_non_regular_files_are_not_scripts() {
    let t = Tree::new("ignored");
    t.script("disk/real.sh", "echo 'ok real'")
        .file(
            "disk/readme.sh",
            "#!/bin/sh\necho 'err readme should not run'\n",
            0o644,
        )
        .script("disk/subdir.sh/inner.sh", "echo 'err inner should not run'")
        .script("disk/.hidden.sh", "echo 'err hidden should not run'")
        .script("disk/errlog/old.sh", "echo 'err errlog should not run'")
        .symlink("disk/link-to-dir.sh", "subdir.sh");
    let fifo = t.join("disk/pipe.sh");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    std::fs::set_permissions(&fifo, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let (code, y, _) = once_yaml(t.path(), &[]);
    assert_eq!(code, 0, "{y:?}");
    let items: Vec<_> = y["disk"].as_mapping().unwrap().keys().collect();
    assert_eq!(items, vec!["real"]);
}

#[test]
fn garbage_lines_are_plain_output() {
    let t = Tree::new("garbage");
    t.script(
        "svc/noisy.sh",
        "printf '\\001\\002binary\\n'; echo 'okay thing'; echo 'error: nope'; echo 'OK x'; echo 'err'; echo '  ok spaced  '",
    );
    let (code, y, _) = once_yaml(t.path(), &[]);
    assert_eq!(code, 0);
    let items: Vec<_> = y["svc"].as_mapping().unwrap().keys().collect();
    assert_eq!(items, vec!["spaced"]);
}

/// Each script marks its start, sleeps 2 s, then reports how many had
/// started: with five at once every one sees all five.
fn overlap_scripts(t: &Tree) {
    for i in 0..5 {
        t.script(
            &format!("disk/s{i}.sh"),
            &format!(
                "touch {dir}/started.{i}\nsleep 2\nn=$(ls {dir} | grep -c '^started')\n\
                 if [ \"$n\" -eq 5 ]; then echo 'ok overlap{i}'; else echo \"err overlap{i} saw $n\"; fi",
                dir = t.join("marks").display()
            ),
        );
    }
    std::fs::create_dir_all(t.join("marks")).unwrap();
}

#[test]
fn five_scripts_of_a_category_run_at_the_same_time() {
    let t = Tree::new("parallel");
    overlap_scripts(&t);
    let (code, y, _) = once_yaml(t.path(), &[]);
    assert_eq!(code, 0, "{y:?}");
    assert_eq!(y["disk"].as_mapping().unwrap().len(), 5);
}

#[test]
fn the_parallel_flag_bounds_how_many_scripts_run_at_once() {
    let t = Tree::new("serial");
    overlap_scripts(&t);
    let (code, y, _) = once_yaml(t.path(), &["--parallel", "1", "--timeout", "30"]);
    assert_eq!(code, 1);
    assert_eq!(err_of(&y, "disk", "overlap0"), Some("saw 1"));
    assert!(has_item(&y, "disk", "overlap4"));
}

#[test]
fn usage_and_setup_errors_exit_two() {
    let t = Tree::new("usage");
    t.script("disk/a.sh", "echo 'ok a'");
    let dir = t.path().to_str().unwrap();
    let unknown = runner(
        &["--once", "--scripts", dir, "--categories", "disk,cpu"],
        &[],
    );
    assert_eq!(unknown.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("unknown category \"cpu\""));
    let missing = runner(&["--once", "--scripts", "/nonexistent/scripts"], &[]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("/nonexistent/scripts"));
    let bad_output = runner(&["--once", "--scripts", dir, "--output", "xml"], &[]);
    assert_eq!(bad_output.status.code(), Some(2));
}

#[test]
fn only_the_chosen_categories_run() {
    let t = Tree::new("categories");
    t.script("disk/a.sh", "echo 'ok a'")
        .script("net/b.sh", "echo 'err b down'");
    let (code, y, _) = once_yaml(t.path(), &["--categories", "disk"]);
    assert_eq!(code, 0);
    assert!(has_item(&y, "disk", "a"));
    assert!(y.get("net").is_none());
}

#[test]
fn the_errlog_dir_flag_moves_errlogs_and_retention_keeps_the_newest() {
    let t = Tree::new("errlogdir");
    t.script("scripts/disk/a.sh", "echo 'err a broken'")
        .file("logs/disk/20200101T000000Z.log", "old", 0o644)
        .file("logs/disk/20200102T000000Z.log", "older but newer", 0o644)
        .file("logs/disk/keep-me.txt", "not an errlog", 0o644);
    let logs = t.join("logs");
    let (code, _, _) = once_yaml(
        &t.join("scripts"),
        &[
            "--errlog-dir",
            logs.to_str().unwrap(),
            "--errlog-retention",
            "2",
        ],
    );
    assert_eq!(code, 1);
    let files = t.list("logs/disk");
    assert_eq!(files.len(), 3, "{files:?}");
    assert_eq!(files[0], "20200102T000000Z.log");
    assert!(files[1].starts_with("20") && files[1] != files[0]);
    assert_eq!(files[2], "keep-me.txt");
    assert!(t.list("scripts/disk/errlog").is_empty());
}

#[test]
fn configmap_keys_run_in_their_category_with_an_item_prefix() {
    let t = Tree::new("configmap");
    // The layout of a ConfigMap volume: keys are links into a ..data dir.
    t.script(
        "custom/..2026_11_22/disk.smart.sh",
        "echo 'err sda reallocated sectors'",
    )
    .script("custom/..2026_11_22/hello.sh", "echo 'ok hello'")
    .symlink("custom/..data", "..2026_11_22")
    .symlink("custom/disk.smart.sh", "..data/disk.smart.sh")
    .symlink("custom/hello.sh", "..data/hello.sh");
    let (code, y, _) = once_yaml(t.path(), &[]);
    assert_eq!(code, 1);
    assert_eq!(err_of(&y, "disk", "smart/sda"), Some("reallocated sectors"));
    assert!(has_item(&y, "custom", "hello"));
    assert_eq!(y["custom"].as_mapping().unwrap().len(), 1);
}

#[test]
fn the_table_shows_one_row_per_item_and_the_failure_count() {
    let t = Tree::new("table");
    t.script("disk/a.sh", "echo 'ok sda1'; echo 'err sdb1 disk full'");
    let out = once_table(t.path());
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "CATEGORY  ITEM  STATUS  MESSAGE");
    assert_eq!(lines[1], "disk      sda1  ok");
    assert_eq!(lines[2], "disk      sdb1  FAIL    disk full");
    assert!(text.contains(": 2 items, 1 failed"), "{text}");
    assert!(text.contains("errlog: "), "{text}");
    assert_eq!(out.status.code(), Some(1));
}

fn runner_stderr(args: &[&str], env: &[(&str, &str)]) -> (i32, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_combo-runner"))
        .args(args)
        .env_remove("RUST_BACKTRACE")
        .envs(env.iter().copied())
        .output()
        .expect("combo-runner runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn usage_and_setup_errors_are_one_line_naming_the_binary() {
    for (args, starts) in [
        (
            &["--once", "--bogus"][..],
            "combo-runner: unexpected argument '--bogus' found",
        ),
        (
            &["--once", "--categories", "cpu"][..],
            "combo-runner: invalid value 'cpu' for '--categories <LIST>'",
        ),
        (
            &["--once", "--scripts", "/nonexistent/scripts"][..],
            "combo-runner: ",
        ),
    ] {
        let (code, stderr) = runner_stderr(args, &[]);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with(starts), "{args:?}: {stderr}");
    }
}

#[test]
fn in_cluster_mode_outside_a_pod_is_one_line_and_exit_two() {
    let (code, stderr) = runner_stderr(&[], &[("NODE_NAME", "")]);
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("combo-runner: environment variable NODE_NAME is not set"),
        "{stderr}"
    );
}

#[test]
fn sigterm_or_sigint_mid_run_stops_the_runner_and_its_scripts_and_writes_nothing() {
    use nix::sys::signal::Signal;
    for (signal, code) in [(Signal::SIGTERM, 143), (Signal::SIGINT, 130)] {
        let t = Tree::new("stop");
        let (took, status) = stop_mid_run(&t, signal);
        assert!(
            took < std::time::Duration::from_secs(2),
            "{signal}: exited {took:?} after the signal"
        );
        assert_eq!(status, Some(code), "{signal}: exit status");
        for rel in ["script.pid", "child.pid"] {
            let pid: u32 = t.read(rel).trim().parse().unwrap();
            assert!(!alive(pid), "{signal}: {rel} {pid} outlived the runner");
        }
        assert_eq!(
            t.list("disk/errlog"),
            Vec::<String>::new(),
            "{signal}: no errlog, whole or partial, of the interrupted run"
        );
    }
}
