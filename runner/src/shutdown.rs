//! Stopping on SIGTERM or SIGINT (docs/runner.md, "Stopping"): the runner
//! kills the process groups of the scripts running, abandons the run in
//! progress without writing any of it, and exits with `128 + signal`.

use tokio::signal::unix::{signal, Signal, SignalKind};

/// Why the runner stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// SIGTERM: the kubelet deleting the pod, or `kill`.
    Term,
    /// SIGINT: Ctrl-C.
    Interrupt,
}

impl Stop {
    /// The exit status: `128 + n` for signal n, as a shell reports a
    /// process the signal ended, so that an interrupted local run is told
    /// from a healthy (0) or a failed (1) one.
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

/// The runner's handlers of SIGTERM and SIGINT.
///
/// Installed before anything else runs: without them a runner that is PID
/// 1 of its container ignores SIGTERM (the kernel sends PID 1 no signal it
/// has no handler for) and is killed only at the end of the pod's grace
/// period.
pub struct Signals {
    term: Signal,
    interrupt: Signal,
}

impl Signals {
    /// Installs the handlers.
    pub fn install() -> std::io::Result<Signals> {
        Ok(Signals {
            term: signal(SignalKind::terminate())?,
            interrupt: signal(SignalKind::interrupt())?,
        })
    }

    /// Waits for the first signal, then kills every running script's
    /// process group before it returns (see [`crate::reaper::stop_all`]).
    /// It does so without yielding, so the run in progress never takes
    /// another step once the signal is seen.
    pub async fn stopped(mut self) -> Stop {
        let stop = tokio::select! {
            _ = self.term.recv() => Stop::Term,
            _ = self.interrupt.recv() => Stop::Interrupt,
        };
        let killed = crate::reaper::stop_all();
        tracing::info!(signal = stop.name(), killed, "stopping");
        stop
    }
}

/// Ends the process with `stop`'s exit status, without waiting for tasks
/// that may still be blocked (a name lookup of the API server, a write).
pub fn exit(stop: Stop) -> ! {
    std::process::exit(i32::from(stop.exit_code()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exit_status_is_128_plus_the_signal_number() {
        assert_eq!(Stop::Term.exit_code(), 143);
        assert_eq!(Stop::Interrupt.exit_code(), 130);
    }
}
