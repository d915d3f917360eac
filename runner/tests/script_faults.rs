//! Scripts that misbehave, run by `combo-runner --once` (docs/runner.md,
//! "Scripts"): each is bounded, reported, and leaves nothing running. Each
//! test records its faults under `faults` before it asserts
//! (docs/testing.md, "Suite report").

mod support;

use combo_testkit::suite::Case;
use support::{alive, err_of, once_yaml, Tree};

fn pid_in(t: &Tree, rel: &str) -> u32 {
    t.read(rel)
        .trim()
        .parse()
        .unwrap_or_else(|e| panic!("{rel}: {e}"))
}

#[test]
fn children_that_leave_the_script_group_are_killed_when_it_ends() {
    let case = Case::new(
        "faults",
        "runner: script children escaping its group (setsid, double fork)",
        2,
    );
    let t = Tree::new("escape");
    let dir = t.path().display().to_string();
    t.script(
        "svc/escape.sh",
        &format!(
            // A new session of its own, and a double fork into one.
            "setsid sleep 300 & echo $! > {dir}/setsid.pid\n\
             setsid sh -c 'sleep 301 & echo $! > {dir}/double.pid' &\n\
             sleep 0.2\n\
             echo 'ok escaped'"
        ),
    );
    let (code, y, out) = once_yaml(t.path(), &[]);
    let reported = code == 0 && y["svc"].get("escaped").is_some();
    let survivors: Vec<(&str, u32)> = ["setsid.pid", "double.pid"]
        .into_iter()
        .map(|rel| (rel, pid_in(&t, rel)))
        .filter(|(_, pid)| alive(*pid))
        .collect();
    let handled = if reported { 2 - survivors.len() } else { 0 };
    case.done(handled as u64, 0);
    assert_eq!(code, 0, "{}", String::from_utf8_lossy(&out.stderr));
    assert!(y["svc"].get("escaped").is_some());
    assert!(survivors.is_empty(), "outlived their script: {survivors:?}");
}

#[test]
fn a_hanging_script_is_killed_at_the_timeout_with_its_escaped_children() {
    let case = Case::new(
        "faults",
        "runner: a script hanging past its timeout with an escaped child",
        1,
    );
    let t = Tree::new("hang");
    let dir = t.path().display().to_string();
    t.script(
        "disk/hang.sh",
        &format!("setsid sleep 302 & echo $! > {dir}/child.pid\nexec sleep 303"),
    )
    .script("disk/quick.sh", "echo 'ok quick'");
    let started = std::time::Instant::now();
    let (code, y, _) = once_yaml(t.path(), &["--timeout", "2"]);
    let took = started.elapsed();
    let child_alive = alive(pid_in(&t, "child.pid"));
    let handled = took < std::time::Duration::from_secs(30)
        && code == 1
        && err_of(&y, "disk", "hang") == Some("timeout after 2s")
        && y["disk"].get("quick").is_some()
        && !child_alive;
    case.done(u64::from(handled), 0);
    assert!(
        took < std::time::Duration::from_secs(30),
        "the run ended soon after the timeout: {took:?}"
    );
    assert_eq!(code, 1);
    assert_eq!(err_of(&y, "disk", "hang"), Some("timeout after 2s"));
    assert!(y["disk"].get("quick").is_some(), "the other script ran");
    assert!(!child_alive, "the escaped child was killed");
}

#[test]
fn megabytes_without_a_newline_are_cut_and_the_run_stays_small() {
    let case = Case::new("faults", "runner: 50 MB of output without a newline", 1);
    let t = Tree::new("flood");
    t.script(
        "mem/flood.sh",
        "head -c 50000000 /dev/zero | tr '\\0' x\necho\necho 'err flood after the flood'\nexit 1",
    );
    let (code, y, _) = once_yaml(t.path(), &[]);
    let logs = t.list("mem/errlog");
    let size = logs.first().map_or(u64::MAX, |log| {
        std::fs::metadata(t.join(&format!("mem/errlog/{log}"))).map_or(u64::MAX, |m| m.len())
    });
    // The largest child of this test process: the runner, or head or tr.
    let usage = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)
        .expect("getrusage");
    let max_rss_kib = usage.max_rss();
    let handled = code == 1
        && err_of(&y, "mem", "flood") == Some("after the flood")
        && logs.len() == 1
        && size < 256 * 1024
        && max_rss_kib < 64 * 1024;
    case.done(u64::from(handled), 0);
    assert_eq!(code, 1);
    assert_eq!(
        err_of(&y, "mem", "flood"),
        Some("after the flood"),
        "an item after 50 MB of one line still counts"
    );
    assert_eq!(logs.len(), 1, "{logs:?}");
    assert!(
        size < 256 * 1024,
        "the errlog keeps the first 64 KiB: {size} bytes"
    );
    assert!(
        max_rss_kib < 64 * 1024,
        "the runner read 50 MB in bounded memory: max RSS {max_rss_kib} KiB"
    );
}

#[test]
fn a_script_killed_by_a_signal_is_reported_with_the_signal() {
    let case = Case::new("faults", "runner: scripts ended by SIGSEGV and SIGKILL", 2);
    let t = Tree::new("signal");
    t.script("net/segv.sh", "kill -SEGV $$")
        .script("net/killed.sh", "echo oops >&2; kill -KILL $$");
    let (code, y, _) = once_yaml(t.path(), &[]);
    let handled = [("segv", "exit 139"), ("killed", "exit 137: oops")]
        .into_iter()
        .filter(|(item, err)| code == 1 && err_of(&y, "net", item) == Some(*err))
        .count();
    case.done(handled as u64, 0);
    assert_eq!(code, 1);
    assert_eq!(err_of(&y, "net", "segv"), Some("exit 139"));
    assert_eq!(err_of(&y, "net", "killed"), Some("exit 137: oops"));
}

#[test]
fn a_script_that_reports_an_err_and_then_hangs_also_gets_its_timeout_item() {
    let case = Case::new(
        "faults",
        "runner: a script hanging past its timeout after an err line",
        1,
    );
    let t = Tree::new("err-then-hang");
    t.script("disk/stuck.sh", "echo 'err x boom'\nexec sleep 300");
    let (code, y, _) = once_yaml(t.path(), &["--timeout", "1"]);
    let handled = code == 1
        && err_of(&y, "disk", "x") == Some("boom")
        && err_of(&y, "disk", "stuck") == Some("timeout after 1s");
    case.done(u64::from(handled), 0);
    assert_eq!(code, 1);
    assert_eq!(
        err_of(&y, "disk", "x"),
        Some("boom"),
        "the printed err stays"
    );
    assert_eq!(
        err_of(&y, "disk", "stuck"),
        Some("timeout after 1s"),
        "the check did not finish: {y:?}"
    );
}
