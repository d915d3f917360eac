//! At most one write of a kind per Debugger per [`WINDOW`].
//!
//! A run on N nodes brings N reports within seconds, and each report
//! requeues its Debugger. Without a bound, the summary ConfigMap (up to
//! 900 KiB) and the status (sent to every runner watching its Debugger)
//! would be written about once per report. With it, a run costs O(1)
//! writes per [`WINDOW`] whatever the node count.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Shortest time between two writes of one Debugger's summary ConfigMap,
/// or of its status.
pub const WINDOW: Duration = Duration::from_secs(2);
/// Records kept before the ones older than [`WINDOW`] are dropped.
const KEEP: usize = 1024;

/// When each Debugger (by uid) was last written.
#[derive(Default)]
pub struct Coalesce(Mutex<HashMap<String, Instant>>);

/// How long a write last made at `last` keeps the next one waiting at
/// `now`: `None` to write now. Pure.
pub fn wait_for(last: Option<Instant>, now: Instant) -> Option<Duration> {
    let since = now.saturating_duration_since(last?);
    WINDOW.checked_sub(since).filter(|d| !d.is_zero())
}

impl Coalesce {
    /// How long a write for `uid` has to wait at `now` (see [`wait_for`]).
    pub fn wait(&self, uid: &str, now: Instant) -> Option<Duration> {
        wait_for(self.0.lock().expect("coalesce lock").get(uid).copied(), now)
    }

    /// Records a write for `uid` at `now`. Records older than [`WINDOW`]
    /// hold nothing back, so they are dropped once there are 1,024 (`KEEP`):
    /// the record never holds more than the Debuggers written in the last
    /// [`WINDOW`] plus 1,024.
    pub fn wrote(&self, uid: &str, now: Instant) {
        let mut m = self.0.lock().expect("coalesce lock");
        if m.len() >= KEEP {
            m.retain(|_, at| now.saturating_duration_since(*at) < WINDOW);
        }
        m.insert(uid.to_string(), now);
    }

    /// Records kept.
    pub fn len(&self) -> usize {
        self.0.lock().expect("coalesce lock").len()
    }

    /// Whether no record is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_write_within_the_window_waits_for_the_rest_of_it() {
        let t0 = Instant::now();
        assert_eq!(wait_for(None, t0), None, "never written");
        assert_eq!(wait_for(Some(t0), t0), Some(WINDOW));
        let half = t0 + WINDOW / 2;
        assert_eq!(wait_for(Some(t0), half), Some(WINDOW / 2));
        assert_eq!(wait_for(Some(t0), t0 + WINDOW), None);
        let c = Coalesce::default();
        c.wrote("a", t0);
        assert_eq!(c.wait("a", half), Some(WINDOW / 2));
        assert_eq!(c.wait("b", half), None, "per Debugger");
    }

    #[test]
    fn records_older_than_the_window_are_evicted_once_there_are_many() {
        let c = Coalesce::default();
        let t0 = Instant::now();
        for i in 0..KEEP {
            c.wrote(&format!("old-{i}"), t0);
        }
        assert_eq!(c.len(), KEEP);
        let later = t0 + WINDOW * 2;
        c.wrote("new", later);
        assert_eq!(c.len(), 1, "only the recent record stays");
        for i in 0..10 {
            c.wrote(&format!("recent-{i}"), later);
        }
        assert_eq!(c.len(), 11);
    }
}
