//! Watch health: whether each of the operator's watches works. A watch that
//! cannot list or keeps failing (a CRD missing after an upgrade, RBAC taken
//! away) is logged with the kind and the API server's answer, counted in
//! `combo_operator_watch_errors_total`, and fails `/readyz` until it lists
//! again (docs/operator.md, "Metrics and health"). The watches retry by
//! themselves with backoff; nothing here stops them.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::core::by_kind::ByKind;
use kube::runtime::watcher;

/// The counter of watch errors by kind (`combo_operator_watch_errors_total`,
/// registered with the operator's metrics).
pub type WatchErrors = ByKind;

/// While a watch keeps failing, its error is logged again this often.
pub const LOG_EVERY: Duration = Duration::from_secs(60);

/// The state of every watch, by the kind it watches. Clones share it.
#[derive(Clone)]
pub struct Watches {
    state: Arc<Mutex<BTreeMap<&'static str, Failing>>>,
    errors: WatchErrors,
}

/// A watch that is failing: since when, its last error, when it was logged.
#[derive(Clone, Debug)]
struct Failing {
    since: Instant,
    error: String,
    logged: Instant,
}

/// What the caller logs after an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Log {
    /// The watch has just started failing, or has failed for another
    /// [`LOG_EVERY`]: an error line.
    Error,
    /// A repeat, logged at debug level only.
    Quiet,
}

impl Watches {
    /// Watch health that counts errors in `errors`.
    pub fn new(errors: WatchErrors) -> Self {
        Watches {
            state: Default::default(),
            errors,
        }
    }

    /// Records an error of the watch of `kind` at `now`. Pure but for the
    /// counter.
    pub fn failed(&self, kind: &'static str, error: String, now: Instant) -> Log {
        self.errors.inc(kind);
        let mut s = self.state.lock().expect("watches lock");
        match s.get_mut(kind) {
            Some(f) => {
                f.error = error;
                if now.duration_since(f.logged) >= LOG_EVERY {
                    f.logged = now;
                    Log::Error
                } else {
                    Log::Quiet
                }
            }
            None => {
                s.insert(
                    kind,
                    Failing {
                        since: now,
                        error,
                        logged: now,
                    },
                );
                Log::Error
            }
        }
    }

    /// Records that the watch of `kind` delivered an event; the time it had
    /// been failing, if it was.
    pub fn delivered(&self, kind: &'static str, now: Instant) -> Option<Duration> {
        let mut s = self.state.lock().expect("watches lock");
        s.remove(kind).map(|f| now.duration_since(f.since))
    }

    /// The failing watches, `kind: error` each; empty when all work.
    pub fn failing(&self) -> Vec<String> {
        let s = self.state.lock().expect("watches lock");
        s.iter().map(|(k, f)| format!("{k}: {}", f.error)).collect()
    }

    /// Passes every item of a watch of `kind` through, recording it: an
    /// error as [`Watches::failed`] (and logged), an event as
    /// [`Watches::delivered`].
    pub fn observe<K>(&self, kind: &'static str, item: &Result<watcher::Event<K>, watcher::Error>) {
        let now = Instant::now();
        match item {
            Err(e) => {
                let error = answer(e);
                match self.failed(kind, error.clone(), now) {
                    Log::Error => tracing::error!(
                        kind,
                        error = %error,
                        "watch failing: reconciles wait for it; retrying with backoff"
                    ),
                    Log::Quiet => tracing::debug!(kind, error = %error, "watch failing"),
                }
            }
            Ok(_) => {
                if let Some(after) = self.delivered(kind, now) {
                    tracing::info!(kind, after_s = after.as_secs(), "watch recovered");
                }
            }
        }
    }
}

/// A watch error as one line with the API server's answer, when there is one.
fn answer(e: &watcher::Error) -> String {
    let api = match e {
        watcher::Error::InitialListFailed(k)
        | watcher::Error::WatchStartFailed(k)
        | watcher::Error::WatchFailed(k) => Some(k),
        _ => None,
    };
    match api {
        Some(kube::Error::Api(s)) => format!("{e}: {} ({})", s.message, s.code),
        Some(other) => format!("{e}: {other}"),
        None => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_watch_is_logged_once_a_minute_and_listed_until_it_delivers() {
        let errors = WatchErrors::default();
        let w = Watches::new(errors.clone());
        let t0 = Instant::now();
        assert!(w.failing().is_empty());
        assert_eq!(w.failed("DebuggerReport", "404".into(), t0), Log::Error);
        assert_eq!(
            w.failed(
                "DebuggerReport",
                "404 again".into(),
                t0 + Duration::from_secs(5)
            ),
            Log::Quiet
        );
        assert_eq!(w.failing(), ["DebuggerReport: 404 again"]);
        assert_eq!(
            w.failed("DebuggerReport", "404".into(), t0 + LOG_EVERY),
            Log::Error
        );
        assert_eq!(errors.get("DebuggerReport"), 3);
        assert_eq!(
            w.delivered("DebuggerReport", t0 + Duration::from_secs(90)),
            Some(Duration::from_secs(90))
        );
        assert!(w.failing().is_empty());
        assert_eq!(w.delivered("DebuggerReport", t0), None, "not failing");
    }

    #[test]
    fn the_api_servers_answer_is_in_the_error() {
        let status = kube::core::Status::failure(
            "the server could not find the requested resource",
            "NotFound",
        )
        .with_code(404)
        .boxed();
        let e = watcher::Error::InitialListFailed(kube::Error::Api(status));
        let line = answer(&e);
        assert!(
            line.contains("could not find the requested resource") && line.contains("404"),
            "{line}"
        );
    }
}
