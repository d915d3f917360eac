//! Running one script: its own process group, a capped capture of stdout and
//! stderr, and a timeout that kills the whole group (docs/runner.md, "Scripts").

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;
use tokio::task::JoinHandle;

use crate::run::output::Line;
use crate::run::stdout::{Collector, Untaken};

/// Most bytes of stdout and of stderr kept for the errlog (docs/runner.md, "Errlogs": 64 KiB).
pub const CAPTURE_LIMIT: usize = 64 * 1024;
/// How long output is still read after the script is gone: a grandchild that
/// left the process group may hold the pipes open forever.
const DRAIN_GRACE: Duration = Duration::from_secs(1);
/// How long a spawn that fails with "Text file busy" is retried. The error is
/// transient: a file just written is briefly held open for writing by any
/// process forked in that moment, until that process calls exec.
const BUSY_RETRY: Duration = Duration::from_secs(2);

/// How a script ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Exit {
    /// It exited with this code (128 + n when killed by signal n).
    Code(i32),
    /// It ran past the timeout of this many seconds and its group was killed.
    Timeout(u64),
    /// It could not be started.
    Spawn(String),
}

impl Exit {
    /// Whether the script ended well.
    pub fn success(&self) -> bool {
        *self == Exit::Code(0)
    }

    /// The errlog's "exit code" field.
    pub fn describe(&self) -> String {
        match self {
            Exit::Code(c) => c.to_string(),
            Exit::Timeout(n) => format!("killed after timeout of {n}s"),
            Exit::Spawn(e) => format!("not started: {e}"),
        }
    }
}

/// A capped capture of one output stream.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Capture {
    /// The first [`CAPTURE_LIMIT`] bytes.
    pub bytes: Vec<u8>,
    /// Bytes the stream carried in all.
    pub total: usize,
}

impl Capture {
    fn push(&mut self, chunk: &[u8]) {
        self.total += chunk.len();
        let room = CAPTURE_LIMIT.saturating_sub(self.bytes.len());
        self.bytes
            .extend_from_slice(&chunk[..chunk.len().min(room)]);
    }

    /// The kept bytes as text, with a note when some were dropped.
    pub fn text(&self) -> String {
        let mut s = String::from_utf8_lossy(&self.bytes).into_owned();
        if self.total > self.bytes.len() {
            s.push_str(&format!(
                "\n[output capped at {} of {} bytes]\n",
                self.bytes.len(),
                self.total
            ));
        }
        s
    }
}

/// Everything a finished script left behind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// How it ended.
    pub exit: Exit,
    /// Wall time from start to end.
    pub duration: Duration,
    /// The `ok`/`err`/`skip` lines it printed, in order, up to
    /// [`crate::run::stdout::MAX_ITEMS`].
    pub lines: Vec<Line>,
    /// What it printed on stdout that was not taken as an item.
    pub untaken: Untaken,
    /// Its stdout, capped.
    pub stdout: Capture,
    /// Its stderr, capped.
    pub stderr: Capture,
    /// The last non-empty stderr line.
    pub last_stderr_line: String,
}

/// Spawns `cmd`, retrying while the executable is busy being written.
async fn spawn(cmd: &mut Command) -> std::io::Result<tokio::process::Child> {
    let give_up = Instant::now() + BUSY_RETRY;
    loop {
        match crate::run::reaper::spawn(cmd) {
            Err(e) if e.raw_os_error() == Some(nix::libc::ETXTBSY) && Instant::now() < give_up => {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            r => return r,
        }
    }
}

/// Runs `path` with `env` added to the runner's environment, in a process
/// group of its own, killing the whole group after `timeout`. When the script
/// ends, whatever it left running in its group is killed too, and so is
/// what it left outside its group (see [`crate::run::reaper`]).
pub async fn run(path: &Path, env: &[(&str, String)], timeout: Duration) -> Outcome {
    let start = Instant::now();
    let mut cmd = Command::new(path);
    cmd.envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = match spawn(&mut cmd).await {
        Ok(c) => c,
        Err(e) => {
            let why = if has_crlf_shebang(path) {
                CRLF.to_string()
            } else {
                e.to_string()
            };
            return Outcome {
                exit: Exit::Spawn(why.clone()),
                duration: start.elapsed(),
                lines: vec![],
                untaken: Untaken::default(),
                stdout: Capture::default(),
                stderr: Capture::default(),
                last_stderr_line: why,
            };
        }
    };
    let pgid = child.id().map(|id| Pid::from_raw(id as i32));
    let stdout = child.stdout.take().map(|s| tokio::spawn(read_stdout(s)));
    let stderr = child.stderr.take().map(|s| tokio::spawn(read_capped(s)));

    let exit = tokio::select! {
        status = child.wait() => match status {
            Ok(s) => Exit::Code(exit_code(s)),
            Err(e) => Exit::Spawn(e.to_string()),
        },
        _ = tokio::time::sleep(timeout) => {
            kill_group(pgid);
            let _ = child.wait().await;
            Exit::Timeout(timeout.as_secs())
        }
    };
    kill_group(pgid);
    crate::run::reaper::finished(pgid.map(|p| p.as_raw() as u32));
    crate::run::reaper::sweep().await;
    let duration = start.elapsed();

    let (lines, untaken, stdout) = join_reader(stdout).await.unwrap_or_default();
    let stderr = join_reader(stderr).await.unwrap_or_default();
    let mut last_stderr_line = String::from_utf8_lossy(&stderr.bytes)
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .unwrap_or_default()
        .to_string();
    // `#!/usr/bin/env sh\r` starts env, which finds no `sh\r` (127) or
    // cannot run it (126).
    if matches!(exit, Exit::Code(126 | 127)) && has_crlf_shebang(path) {
        last_stderr_line = CRLF.to_string();
    }
    Outcome {
        exit,
        duration,
        lines,
        untaken,
        stdout,
        stderr,
        last_stderr_line,
    }
}

/// What a script whose `#!` line ends in a carriage return is reported
/// with: the kernel looks for an interpreter called `/bin/sh\r`, and says
/// only "No such file or directory".
pub const CRLF: &str = "script has CRLF (Windows) line endings; convert it with dos2unix";

/// Whether the file's first line is a `#!` line ending in `\r\n`.
fn has_crlf_shebang(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 512];
    let Ok(n) = std::fs::File::open(path).and_then(|mut f| f.read(&mut head)) else {
        return false;
    };
    let head = &head[..n];
    head.starts_with(b"#!")
        && head
            .iter()
            .position(|&b| b == b'\n')
            .is_some_and(|end| end > 0 && head[end - 1] == b'\r')
}

fn kill_group(pgid: Option<Pid>) {
    if let Some(pgid) = pgid {
        // ESRCH (nothing left in the group) is the usual case.
        let _ = killpg(pgid, Signal::SIGKILL);
    }
}

fn exit_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(-1)
}

async fn join_reader<T: Default>(handle: Option<JoinHandle<T>>) -> Option<T> {
    let mut handle = handle?;
    match tokio::time::timeout(DRAIN_GRACE, &mut handle).await {
        Ok(r) => r.ok(),
        Err(_) => {
            handle.abort();
            None
        }
    }
}

async fn read_capped(mut r: impl AsyncRead + Unpin) -> Capture {
    let mut cap = Capture::default();
    let mut buf = vec![0u8; 16 * 1024];
    while let Ok(n) = r.read(&mut buf).await {
        if n == 0 {
            break;
        }
        cap.push(&buf[..n]);
    }
    cap
}

/// Reads all of stdout, parsing every line (not only the captured part) so
/// items after a flood of plain output still count, and counting what is
/// not taken as an item.
async fn read_stdout(mut r: impl AsyncRead + Unpin) -> (Vec<Line>, Untaken, Capture) {
    let mut cap = Capture::default();
    let mut collector = Collector::default();
    let mut buf = vec![0u8; 16 * 1024];
    while let Ok(n) = r.read(&mut buf).await {
        if n == 0 {
            break;
        }
        cap.push(&buf[..n]);
        collector.push(&buf[..n]);
    }
    let (lines, untaken) = collector.finish();
    (lines, untaken, cap)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdir::TestDir;

    #[test]
    fn capture_keeps_the_first_64_kib_and_counts_the_rest() {
        let mut c = Capture::default();
        c.push(&vec![b'a'; 60 * 1024]);
        c.push(&vec![b'b'; 10 * 1024]);
        assert_eq!(c.bytes.len(), CAPTURE_LIMIT);
        assert_eq!(c.total, 70 * 1024);
        assert!(c.text().contains("[output capped at 65536 of 71680 bytes]"));
    }

    #[tokio::test]
    async fn items_environment_and_stderr_are_collected() {
        let d = TestDir::new("exec");
        d.script(
            "s.sh",
            "echo \"ok $CATEGORY\"; echo plain; printf 'err x %s' \"$RUN_ID\"; echo oops >&2; echo last >&2; exit 3",
        );
        let env = [
            ("CATEGORY", "disk".to_string()),
            ("RUN_ID", "20261122T060000Z".to_string()),
        ];
        let o = run(&d.path().join("s.sh"), &env, Duration::from_secs(30)).await;
        assert_eq!(o.exit, Exit::Code(3));
        assert_eq!(
            o.lines,
            vec![
                Line::Ok {
                    item: "disk".into()
                },
                Line::Err {
                    item: "x".into(),
                    message: "20261122T060000Z".into()
                }
            ]
        );
        assert_eq!(o.last_stderr_line, "last");
        assert!(o.stdout.text().contains("plain"));
    }

    #[tokio::test]
    async fn items_after_more_than_64_kib_of_output_still_count() {
        let d = TestDir::new("exec-flood");
        d.script(
            "s.sh",
            "i=0; while [ $i -lt 3000 ]; do echo 'filler line of plain output, fifty bytes long'; i=$((i+1)); done; echo 'err late found it'",
        );
        let o = run(&d.path().join("s.sh"), &[], Duration::from_secs(30)).await;
        assert_eq!(o.stdout.bytes.len(), CAPTURE_LIMIT);
        assert!(o.stdout.total > CAPTURE_LIMIT);
        assert_eq!(
            o.lines,
            vec![Line::Err {
                item: "late".into(),
                message: "found it".into()
            }]
        );
    }

    #[tokio::test]
    async fn a_script_held_open_for_writing_runs_once_it_is_closed() {
        let d = TestDir::new("exec-busy");
        d.script("s.sh", "echo 'ok ran'");
        let path = d.path().join("s.sh");
        let writer = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            drop(writer);
        });
        let o = run(&path, &[], Duration::from_secs(30)).await;
        release.join().unwrap();
        assert_eq!(o.exit, Exit::Code(0));
        assert_eq!(o.lines, vec![Line::Ok { item: "ran".into() }]);
    }

    #[tokio::test]
    async fn a_child_left_running_after_the_script_exits_is_killed() {
        let d = TestDir::new("exec-leftover");
        let pidfile = d.path().join("child.pid");
        d.script(
            "s.sh",
            &format!(
                "sleep 300 &\necho $! > {}\necho 'ok done'",
                pidfile.display()
            ),
        );
        let o = run(&d.path().join("s.sh"), &[], Duration::from_secs(300)).await;
        assert_eq!(o.exit, Exit::Code(0));
        assert_eq!(
            o.lines,
            vec![Line::Ok {
                item: "done".into()
            }]
        );
        let pid = std::fs::read_to_string(&pidfile).unwrap();
        // SIGKILL lands asynchronously: give the dying child a moment.
        let mut state = None;
        for _ in 0..200 {
            let stat =
                std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).unwrap_or_default();
            state = stat.rsplit_once(") ").and_then(|(_, r)| r.chars().next());
            if matches!(state, None | Some('Z') | Some('X')) {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(
            matches!(state, None | Some('Z') | Some('X')),
            "child state {state:?}"
        );
    }

    #[tokio::test]
    async fn a_script_with_crlf_line_endings_is_named_as_such() {
        let d = TestDir::new("exec-crlf");
        d.file("sh.sh", "#!/bin/sh\r\necho ok up\r\n", 0o755);
        let o = run(&d.path().join("sh.sh"), &[], Duration::from_secs(5)).await;
        assert_eq!(o.exit, Exit::Spawn(CRLF.into()));
        assert_eq!(o.last_stderr_line, CRLF);
        d.file("env.sh", "#!/usr/bin/env sh\r\necho ok up\r\n", 0o755);
        let o = run(&d.path().join("env.sh"), &[], Duration::from_secs(5)).await;
        assert_eq!(o.exit, Exit::Code(127), "{o:?}");
        assert_eq!(o.last_stderr_line, CRLF);
        // Unix line endings, and a carriage return after the first line, are not it.
        d.file("lf.sh", "#!/bin/sh\nexit 127 # \r\n", 0o755);
        let o = run(&d.path().join("lf.sh"), &[], Duration::from_secs(5)).await;
        assert_eq!(o.exit, Exit::Code(127));
        assert_ne!(o.last_stderr_line, CRLF);
        d.file("gone.sh", "#!/bin/nonexistent\n", 0o755);
        let o = run(&d.path().join("gone.sh"), &[], Duration::from_secs(5)).await;
        assert!(
            matches!(&o.exit, Exit::Spawn(e) if e.contains("No such file")),
            "{:?}",
            o.exit
        );
    }

    #[tokio::test]
    async fn a_file_that_cannot_start_is_reported_not_panicked() {
        let d = TestDir::new("exec-spawn");
        d.file("bad", "\x7fELFgarbage", 0o755);
        let o = run(&d.path().join("bad"), &[], Duration::from_secs(5)).await;
        assert!(matches!(o.exit, Exit::Spawn(_)), "{:?}", o.exit);
        assert!(!o.exit.success());
    }
}
