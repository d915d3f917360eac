//! Stopping on SIGTERM or SIGINT (docs/runner.md, "Stopping"): the runner
//! kills the process groups of the scripts running, abandons the run in
//! progress without writing any of it, and exits with `128 + signal`.

use combo_api::signal;

pub use signal::Stop;

/// The runner's handlers of SIGTERM and SIGINT ([`combo_api::signal`]).
///
/// Installed before anything else runs: without them a runner that is PID
/// 1 of its container ignores SIGTERM and is killed only at the end of the
/// pod's grace period.
pub struct Signals(signal::Signals);

impl Signals {
    /// Installs the handlers; fails only when neither can be installed,
    /// since the runner could then not be stopped but by SIGKILL.
    pub fn install() -> std::io::Result<Signals> {
        let signals = signal::Signals::install();
        if signals.listening() {
            Ok(Signals(signals))
        } else {
            Err(std::io::Error::other("cannot handle SIGTERM or SIGINT"))
        }
    }

    /// Waits for the first signal, then kills every running script's
    /// process group before it returns (see [`crate::run::reaper::stop_all`]).
    /// It does so without yielding, so the run in progress never takes
    /// another step once the signal is seen.
    pub async fn stopped(mut self) -> Stop {
        let stop = self.0.recv().await;
        let killed = crate::run::reaper::stop_all();
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
