//! Scripts that misbehave, run by `combo-runner --once` (docs/runner.md,
//! "Scripts"): each is bounded, reported, and leaves nothing running.

mod support;

use support::{alive, once_yaml, Tree};

fn err_of<'a>(y: &'a serde_yaml::Value, cat: &str, item: &str) -> Option<&'a str> {
    y[cat][item]["err"].as_str()
}

fn pid_in(t: &Tree, rel: &str) -> u32 {
    t.read(rel)
        .trim()
        .parse()
        .unwrap_or_else(|e| panic!("{rel}: {e}"))
}

#[test]
fn children_that_leave_the_script_group_are_killed_when_it_ends() {
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
    assert_eq!(code, 0, "{}", String::from_utf8_lossy(&out.stderr));
    assert!(y["svc"].get("escaped").is_some());
    for rel in ["setsid.pid", "double.pid"] {
        let pid = pid_in(&t, rel);
        assert!(!alive(pid), "{rel}: process {pid} outlived its script");
    }
}

#[test]
fn a_hanging_script_is_killed_at_the_timeout_with_its_escaped_children() {
    let t = Tree::new("hang");
    let dir = t.path().display().to_string();
    t.script(
        "disk/hang.sh",
        &format!("setsid sleep 302 & echo $! > {dir}/child.pid\nexec sleep 303"),
    )
    .script("disk/quick.sh", "echo 'ok quick'");
    let started = std::time::Instant::now();
    let (code, y, _) = once_yaml(t.path(), &["--timeout", "2"]);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "the run ended soon after the timeout"
    );
    assert_eq!(code, 1);
    assert_eq!(err_of(&y, "disk", "hang"), Some("timeout after 2s"));
    assert!(y["disk"].get("quick").is_some(), "the other script ran");
    assert!(
        !alive(pid_in(&t, "child.pid")),
        "the escaped child was killed"
    );
}

#[test]
fn megabytes_without_a_newline_are_cut_and_the_run_stays_small() {
    let t = Tree::new("flood");
    t.script(
        "mem/flood.sh",
        "head -c 50000000 /dev/zero | tr '\\0' x\necho\necho 'err flood after the flood'\nexit 1",
    );
    let (code, y, _) = once_yaml(t.path(), &[]);
    assert_eq!(code, 1);
    assert_eq!(
        err_of(&y, "mem", "flood"),
        Some("after the flood"),
        "an item after 50 MB of one line still counts"
    );
    let logs = t.list("mem/errlog");
    assert_eq!(logs.len(), 1, "{logs:?}");
    let size = std::fs::metadata(t.join(&format!("mem/errlog/{}", logs[0])))
        .unwrap()
        .len();
    assert!(
        size < 256 * 1024,
        "the errlog keeps the first 64 KiB: {size} bytes"
    );
    // The largest child of this test process: the runner, or head or tr.
    let usage = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)
        .expect("getrusage");
    let max_rss_kib = usage.max_rss();
    assert!(
        max_rss_kib < 64 * 1024,
        "the runner read 50 MB in bounded memory: max RSS {max_rss_kib} KiB"
    );
}

#[test]
fn a_script_killed_by_a_signal_is_reported_with_the_signal() {
    let t = Tree::new("signal");
    t.script("net/segv.sh", "kill -SEGV $$")
        .script("net/killed.sh", "echo oops >&2; kill -KILL $$");
    let (code, y, _) = once_yaml(t.path(), &[]);
    assert_eq!(code, 1);
    assert_eq!(err_of(&y, "net", "segv"), Some("exit 139"));
    assert_eq!(err_of(&y, "net", "killed"), Some("exit 137: oops"));
}
