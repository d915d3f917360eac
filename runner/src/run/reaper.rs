//! Processes a script leaves behind outside its process group
//! (docs/runner.md, "Scripts"): a child started with `setsid`, or one that
//! made a group of its own, escapes the SIGKILL of the script's group. The
//! runner makes itself the reaper of its descendants' orphans, so that such
//! a process is re-parented to the runner when the script exits (instead of
//! to the node's init), and then kills it.
//!
//! Only the runner's direct children that are not scripts still running
//! are killed: every script is spawned through [`spawn`], which records its
//! pid under the same lock the sweep holds.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use nix::sys::signal::{kill, killpg, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::{getpid, Pid};
use tokio::process::{Child, Command};

/// Set once this process reaps orphans (or is PID 1, which does anyway).
static REAPER: AtomicBool = AtomicBool::new(false);
/// Pids of the scripts running now.
static RUNNING: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

/// Makes this process the reaper of its descendants' orphans
/// (`PR_SET_CHILD_SUBREAPER`). Without it, or when it fails, escaped
/// processes go to init as before and are not swept (unless the runner is
/// PID 1, as in a pod without `hostPID`).
pub fn adopt_orphans() -> nix::Result<()> {
    nix::sys::prctl::set_child_subreaper(true)?;
    REAPER.store(true, Ordering::SeqCst);
    Ok(())
}

fn active() -> bool {
    REAPER.load(Ordering::SeqCst) || getpid().as_raw() == 1
}

/// Spawns `cmd` and records it as a running script.
pub fn spawn(cmd: &mut Command) -> std::io::Result<Child> {
    let mut running = RUNNING.lock().expect("running lock");
    let child = cmd.spawn()?;
    if let Some(pid) = child.id() {
        running.insert(pid as i32);
    }
    Ok(child)
}

/// Forgets a script that has ended.
pub fn finished(pid: Option<u32>) {
    if let Some(pid) = pid {
        RUNNING.lock().expect("running lock").remove(&(pid as i32));
    }
}

/// Kills, with SIGKILL, the process group of every script running, and
/// then, for at most about 200 ms, every live child of this runner: the
/// processes those scripts started outside their group, re-parented here
/// as their parents die. Returns how many scripts were running. Nothing is
/// reaped: it is for a runner about to exit.
pub fn stop_all() -> usize {
    let running: Vec<i32> = RUNNING
        .lock()
        .expect("running lock")
        .iter()
        .copied()
        .collect();
    for &pid in &running {
        let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
    }
    if active() {
        let me = getpid().as_raw();
        for _ in 0..20 {
            let live: Vec<i32> = children_of(me).into_iter().filter(|p| alive(*p)).collect();
            if live.is_empty() {
                break;
            }
            for pid in live {
                let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
                let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    running.len()
}

/// Whether `pid` exists and is not a zombie.
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(") ")?.1.chars().next())
        .is_some_and(|state| state != 'Z' && state != 'X')
}

/// The parent pid in the text of `/proc/<pid>/stat`. Pure.
pub fn parent_of(stat: &str) -> Option<i32> {
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
    let (_, rest) = stat.rsplit_once(") ")?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// Direct children of `parent`: what the kernel lists in
/// `/proc/<parent>/task/<tid>/children` for each of its threads (a child
/// is listed under the thread that forked it or adopted it), a few reads
/// however many processes the node has. A kernel without those files
/// (`CONFIG_PROC_CHILDREN` unset) gets the scan of every `/proc/<pid>/stat`.
fn children_of(parent: i32) -> Vec<i32> {
    children_from_tasks(parent).unwrap_or_else(|| children_by_scan(parent))
}

/// [`children_of`] from the threads' `children` files; `None` when the
/// kernel has none.
fn children_from_tasks(parent: i32) -> Option<Vec<i32>> {
    // The kernel has the files when the main thread has one.
    if !std::path::Path::new(&format!("/proc/{parent}/task/{parent}/children")).exists() {
        return None;
    }
    let mut children = BTreeSet::new();
    for task in std::fs::read_dir(format!("/proc/{parent}/task"))
        .ok()?
        .flatten()
    {
        // A thread that ended since the listing has no file any more.
        if let Ok(text) = std::fs::read_to_string(task.path().join("children")) {
            children.extend(
                text.split_whitespace()
                    .filter_map(|p| p.parse::<i32>().ok()),
            );
        }
    }
    Some(children.into_iter().collect())
}

/// [`children_of`] by reading the parent of every process in /proc.
fn children_by_scan(parent: i32) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| parent_of(&s))
                == Some(parent)
        })
        .collect()
}

/// Kills and reaps every direct child that is not a running script, until
/// none is left (a killed orphan's own children are re-parented here in
/// turn). Returns how many were killed.
pub async fn sweep() -> usize {
    if !active() {
        return 0;
    }
    let me = getpid().as_raw();
    let mut killed = 0;
    // Bounded: a process forking faster than it is killed cannot hold the
    // runner here.
    for _ in 0..50 {
        let orphans: Vec<i32> = {
            let running = RUNNING.lock().expect("running lock");
            let orphans: Vec<i32> = children_of(me)
                .into_iter()
                .filter(|p| !running.contains(p))
                .collect();
            for &pid in &orphans {
                // Its group too, should it lead one of its own.
                let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
                let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
            }
            orphans
        };
        if orphans.is_empty() {
            break;
        }
        for pid in orphans {
            if reap(pid).await {
                killed += 1;
            }
        }
    }
    if killed > 0 {
        tracing::warn!(
            killed,
            "killed processes that scripts left running outside their process group"
        );
    }
    killed
}

/// Waits (up to a second) for a killed child to end, so that no zombie is
/// left. Only this pid is waited for: the scripts' own handles stay intact.
async fn reap(pid: i32) -> bool {
    for _ in 0..100 {
        match waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) => tokio::time::sleep(Duration::from_millis(10)).await,
            Ok(_) => return true,
            // Not our child any more, or already reaped.
            Err(_) => return false,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::exec::{self, Exit};
    use crate::testdir::TestDir;

    fn running(pid: i32) -> bool {
        RUNNING.lock().unwrap().contains(&pid)
    }

    #[test]
    fn the_threads_children_files_list_what_the_scan_finds() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let me = getpid().as_raw();
        let fast = children_from_tasks(me).expect("this kernel lists children per thread");
        assert!(fast.contains(&pid), "{pid} not in {fast:?}");
        assert!(children_by_scan(me).contains(&pid));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(!children_of(me).contains(&pid));
    }

    // Other tests of this process run scripts at the same time, so the set
    // is checked for these scripts' pids rather than for being empty.
    #[tokio::test]
    async fn a_script_is_running_until_it_ends_or_times_out_and_no_longer() {
        let d = TestDir::new("reaper-running");
        d.script("done.sh", "echo $$");
        let o = exec::run(&d.path().join("done.sh"), &[], Duration::from_secs(30)).await;
        assert_eq!(o.exit, Exit::Code(0));
        let pid: i32 = o.stdout.text().trim().parse().unwrap();
        assert!(!running(pid), "{pid} still listed after it exited");

        let pidfile = d.path().join("slow.pid");
        d.script(
            "slow.sh",
            &format!(
                "echo $$ > {}.new; mv {0}.new {0}; sleep 300",
                pidfile.display()
            ),
        );
        let slow = tokio::spawn({
            let path = d.path().join("slow.sh");
            async move { exec::run(&path, &[], Duration::from_secs(2)).await }
        });
        let mut pid = None;
        for _ in 0..500 {
            pid = std::fs::read_to_string(&pidfile)
                .ok()
                .and_then(|s| s.trim().parse::<i32>().ok());
            if pid.is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let pid = pid.expect("the slow script started");
        assert!(running(pid), "{pid} listed while it runs");
        let o = slow.await.unwrap();
        assert_eq!(o.exit, Exit::Timeout(2));
        assert!(!running(pid), "{pid} still listed after its timeout");
    }

    #[test]
    fn the_parent_is_read_past_a_command_name_with_spaces_and_parentheses() {
        assert_eq!(parent_of("42 (sleep) S 7 42 42 0 -1"), Some(7));
        assert_eq!(parent_of("43 (a) b (c)) R 1 43 43 0"), Some(1));
        assert_eq!(parent_of("garbage"), None);
    }
}
