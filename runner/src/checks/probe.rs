//! `combo-runner probe-socket`: whether a daemon answers on a unix socket,
//! for scripts (docs/runner.md, "Socket probe (`combo-runner probe-socket`)").
//! A socket file outlives the daemon that made it: a
//! containerd that died leaves its socket behind, and only a connection
//! tells the two apart (the kernel refuses one to a socket nobody listens
//! on).

use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use tokio::net::UnixStream;

/// The longest path a `sockaddr_un` holds (108 bytes with the NUL); a
/// longer one is reached from its directory.
const SUN_PATH_MAX: usize = 107;

/// Connects to a unix stream socket; exits 0 when a listener accepted the
/// connection, else prints why on stdout and exits 1.
#[derive(clap::Args, Debug, Clone)]
pub struct ProbeSocketArgs {
    /// The socket's path.
    #[arg(value_name = "PATH")]
    pub path: PathBuf,

    /// Time limit of the connection, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 3000,
          value_parser = clap::value_parser!(u64).range(1..=60000))]
    pub timeout_ms: u64,
}

/// What a connection attempt found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A listener accepted: the daemon is alive.
    Accepted,
    /// Nothing at the path.
    Missing,
    /// A file that is no socket.
    NotSocket,
    /// The kernel refused: nobody listens (a stale socket).
    Refused,
    /// The listener's queue is full: it does not accept.
    Busy,
    /// No permission to connect.
    Denied,
    /// No answer within the limit.
    TimedOut(Duration),
    /// Any other failure, with the system's words.
    Other(String),
}

impl Outcome {
    /// The outcome of a failed `connect(2)`.
    pub fn of_error(e: &io::Error) -> Outcome {
        match e.kind() {
            io::ErrorKind::ConnectionRefused => Outcome::Refused,
            io::ErrorKind::NotFound => Outcome::Missing,
            io::ErrorKind::PermissionDenied => Outcome::Denied,
            io::ErrorKind::WouldBlock => Outcome::Busy,
            _ => Outcome::Other(e.to_string()),
        }
    }

    /// Whether the daemon answered.
    pub fn alive(&self) -> bool {
        *self == Outcome::Accepted
    }

    /// The line a script puts in its item's message.
    pub fn describe(&self) -> String {
        match self {
            Outcome::Accepted => "accepts connections".into(),
            Outcome::Missing => "no such file".into(),
            Outcome::NotSocket => "not a socket".into(),
            Outcome::Refused => {
                "connection refused: nothing listens on it (a stale socket left by a daemon that is gone)"
                    .into()
            }
            Outcome::Busy => {
                "its listen queue is full: the daemon does not accept connections (hung?)".into()
            }
            Outcome::Denied => "permission denied to connect".into(),
            Outcome::TimedOut(d) => format!(
                "no connection within {} ms: the daemon does not accept (hung?)",
                d.as_millis()
            ),
            Outcome::Other(e) => format!("cannot connect: {e}"),
        }
    }
}

/// Connects to the socket at `path` within `limit`.
pub async fn probe(path: &Path, limit: Duration) -> Outcome {
    use std::os::unix::fs::FileTypeExt;
    match std::fs::metadata(path) {
        Err(e) => return Outcome::of_error(&e),
        Ok(m) if !m.file_type().is_socket() => return Outcome::NotSocket,
        Ok(_) => {}
    }
    let target = match reachable(path) {
        Ok(t) => t,
        Err(e) => return Outcome::Other(e.to_string()),
    };
    match tokio::time::timeout(limit, UnixStream::connect(&target)).await {
        Err(_) => Outcome::TimedOut(limit),
        Ok(Err(e)) => Outcome::of_error(&e),
        Ok(Ok(_)) => Outcome::Accepted,
    }
}

/// `path` as `connect(2)` can take it: a path too long for `sun_path` is
/// reached from its directory (this one-shot process changes directory).
fn reachable(path: &Path) -> io::Result<PathBuf> {
    if path.as_os_str().len() <= SUN_PATH_MAX {
        return Ok(path.to_path_buf());
    }
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Ok(path.to_path_buf());
    };
    std::env::set_current_dir(dir)?;
    Ok(PathBuf::from(name))
}

/// Runs `combo-runner probe-socket`: prints the outcome, exits 0 when the
/// daemon answered, 1 otherwise.
pub async fn run(args: ProbeSocketArgs) -> ExitCode {
    let outcome = probe(&args.path, Duration::from_millis(args.timeout_ms)).await;
    println!("{}", outcome.describe());
    if outcome.alive() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixListener;

    fn scratch(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("probe-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[tokio::test]
    async fn a_listening_socket_is_alive_and_a_stale_one_is_refused() {
        let d = scratch("live");
        let sock = d.join("d.sock");
        let l = UnixListener::bind(&sock).unwrap();
        assert_eq!(
            probe(&sock, Duration::from_secs(2)).await,
            Outcome::Accepted
        );
        // The socket file stays when the listener is gone.
        drop(l);
        assert!(sock.exists());
        let stale = probe(&sock, Duration::from_secs(2)).await;
        assert_eq!(stale, Outcome::Refused);
        assert!(stale.describe().contains("stale socket"));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[tokio::test]
    async fn a_missing_path_and_a_plain_file_are_told_apart() {
        let d = scratch("files");
        let missing = probe(&d.join("none.sock"), Duration::from_secs(1)).await;
        assert_eq!(missing, Outcome::Missing);
        std::fs::write(d.join("plain"), "").unwrap();
        assert_eq!(
            probe(&d.join("plain"), Duration::from_secs(1)).await,
            Outcome::NotSocket
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn connect_errors_map_to_outcomes() {
        let refused = io::Error::from_raw_os_error(nix::libc::ECONNREFUSED);
        assert_eq!(Outcome::of_error(&refused), Outcome::Refused);
        let again = io::Error::from_raw_os_error(nix::libc::EAGAIN);
        assert_eq!(Outcome::of_error(&again), Outcome::Busy);
        let denied = io::Error::from_raw_os_error(nix::libc::EACCES);
        assert_eq!(Outcome::of_error(&denied), Outcome::Denied);
    }
}
