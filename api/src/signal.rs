//! Stopping on SIGTERM or SIGINT, the same in every binary (docs/operator.md
//! and docs/runner.md, "Stopping"; docs/pinger.md): which of the two came,
//! and never a panic when a handler cannot be installed.

use tokio::signal::unix::{signal, Signal, SignalKind};

/// The signal that asked the process to stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// SIGTERM: the kubelet deleting the pod, or `kill`.
    Term,
    /// SIGINT: Ctrl-C.
    Interrupt,
}

impl Stop {
    /// The exit status: `128 + n` for signal n, as a shell reports a
    /// process the signal ended, so that an interrupted run is told from a
    /// healthy (0) or a failed (1) one.
    pub fn exit_code(self) -> u8 {
        match self {
            Stop::Term => 128 + 15,
            Stop::Interrupt => 128 + 2,
        }
    }

    /// The signal's name.
    pub fn name(self) -> &'static str {
        match self {
            Stop::Term => "SIGTERM",
            Stop::Interrupt => "SIGINT",
        }
    }
}

/// The handlers of SIGTERM and SIGINT. Once installed, neither signal ends
/// the process by itself: it is told through [`Signals::recv`]. (Without a
/// handler, a process that is PID 1 of its container ignores SIGTERM, since
/// the kernel sends PID 1 no signal it has no handler for.)
pub struct Signals {
    term: Option<Signal>,
    interrupt: Option<Signal>,
}

impl Signals {
    /// Installs both handlers. One that cannot be installed is logged and
    /// the other one serves alone.
    pub fn install() -> Signals {
        let handler = |kind: SignalKind, stop: Stop| match signal(kind) {
            Ok(s) => Some(s),
            Err(e) => {
                tracing::error!(signal = stop.name(), error = %e, "cannot handle the signal; stopping on the other one only");
                None
            }
        };
        Signals {
            term: handler(SignalKind::terminate(), Stop::Term),
            interrupt: handler(SignalKind::interrupt(), Stop::Interrupt),
        }
    }

    /// Whether a handler is installed at all: without one, [`Signals::recv`]
    /// never completes.
    pub fn listening(&self) -> bool {
        self.term.is_some() || self.interrupt.is_some()
    }

    /// Waits for the next SIGTERM or SIGINT.
    pub async fn recv(&mut self) -> Stop {
        tokio::select! {
            Some(()) = next(&mut self.term) => Stop::Term,
            Some(()) = next(&mut self.interrupt) => Stop::Interrupt,
            else => std::future::pending().await,
        }
    }
}

/// The next delivery of `signal`; `None` at once when it has no handler.
async fn next(signal: &mut Option<Signal>) -> Option<()> {
    signal.as_mut()?.recv().await
}

/// Completes at the first SIGTERM or SIGINT after it is first polled, with
/// the one that came.
pub async fn shutdown() -> Stop {
    Signals::install().recv().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Sends `signal` to this test process.
    fn raise(signal: &str) {
        let status = std::process::Command::new("kill")
            .args(["-s", signal, &std::process::id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success());
    }

    #[tokio::test]
    async fn each_signal_is_told_apart_and_none_ends_the_process() {
        let mut signals = Signals::install();
        assert!(signals.listening());
        for (name, stop) in [("INT", Stop::Interrupt), ("TERM", Stop::Term)] {
            raise(name);
            let got = tokio::time::timeout(Duration::from_secs(10), signals.recv())
                .await
                .expect("the signal arrives");
            assert_eq!(got, stop);
            assert_eq!(got.name(), format!("SIG{name}"));
        }
    }

    #[test]
    fn the_exit_status_of_a_stop_is_128_plus_the_signal_number() {
        assert_eq!(Stop::Term.exit_code(), 143);
        assert_eq!(Stop::Interrupt.exit_code(), 130);
    }
}
