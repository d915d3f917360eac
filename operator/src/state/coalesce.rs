//! At most one write of a kind per Debugger per [`WINDOW`]; a large
//! summary less often while reports come ([`SummaryPace`],
//! docs/operator.md#summary-writes).
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

/// Bytes of summary per second the writes of one Debugger's summary
/// ConfigMap may average while its reports keep coming: a summary of
/// 32 KiB (about 180 nodes) is written every 2 s, one of 900 KiB (5,000
/// nodes) every 56 s.
pub const SUMMARY_BYTES_PER_SECOND: usize = 16 * 1024;
/// How long no report has to change a summary before it is written
/// whatever its size: the last report of a run reaches the summary about
/// this long after it lands.
pub const QUIET: Duration = Duration::from_millis(500);

/// The shortest time between two writes of a summary of `bytes` while
/// reports keep changing it: [`WINDOW`], or longer in proportion to its
/// size ([`SUMMARY_BYTES_PER_SECOND`]). Pure.
pub fn summary_window(bytes: usize) -> Duration {
    WINDOW.max(Duration::from_secs_f64(
        bytes as f64 / SUMMARY_BYTES_PER_SECOND as f64,
    ))
}

/// When a summary of `bytes`, last written at `written` and last changed
/// by a report at `changed`, may be written at `now`: `None` for now, else
/// how long to wait. Never within [`WINDOW`] of the last write; at once
/// once no report changed it for [`QUIET`]; otherwise after
/// [`summary_window`]. So a run's summary bytes grow with the time its
/// reports take to arrive, not with their number times its size, and its
/// last report is in the summary about [`QUIET`] after it lands. Pure.
pub fn summary_wait(
    written: Option<Instant>,
    changed: Instant,
    bytes: usize,
    now: Instant,
) -> Option<Duration> {
    let since = now.saturating_duration_since(written?);
    if since < WINDOW {
        return Some(WINDOW - since);
    }
    let quiet = now.saturating_duration_since(changed);
    if quiet >= QUIET {
        return None;
    }
    let paced = summary_window(bytes);
    (since < paced).then(|| (paced - since).min(QUIET - quiet))
}

/// Per Debugger uid: when its summary was last written, and which
/// summary (by its hash) was last asked for and since when.
#[derive(Default)]
pub struct SummaryPace(Mutex<HashMap<String, SummaryRecord>>);

#[derive(Clone, Debug)]
struct SummaryRecord {
    written: Option<Instant>,
    desired: String,
    changed: Instant,
}

impl SummaryPace {
    /// How long the write of the summary `desired` (its hash) of `bytes`
    /// for `uid` has to wait at `now` (see [`summary_wait`]); a `desired`
    /// other than the one asked for before counts as a change at `now`.
    pub fn wait(&self, uid: &str, desired: &str, bytes: usize, now: Instant) -> Option<Duration> {
        let mut m = self.0.lock().expect("summary pace lock");
        if m.len() >= KEEP && !m.contains_key(uid) {
            // A record dropped costs one write earlier than paced; one
            // older than the window of the largest summary (1 MiB, 64 s)
            // holds nothing back.
            let old = summary_window(1 << 20);
            m.retain(|_, r| {
                r.written
                    .is_none_or(|w| now.saturating_duration_since(w) < old)
            });
        }
        let r = m.entry(uid.to_string()).or_insert_with(|| SummaryRecord {
            written: None,
            desired: desired.to_string(),
            changed: now,
        });
        if r.desired != desired {
            r.desired = desired.to_string();
            r.changed = now;
        }
        summary_wait(r.written, r.changed, bytes, now)
    }

    /// Records a write for `uid` at `now`.
    pub fn wrote(&self, uid: &str, now: Instant) {
        let mut m = self.0.lock().expect("summary pace lock");
        if let Some(r) = m.get_mut(uid) {
            r.written = Some(now);
        }
    }

    /// Records kept.
    pub fn len(&self) -> usize {
        self.0.lock().expect("summary pace lock").len()
    }

    /// Whether no record is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod summary_tests {
    use super::*;

    #[test]
    fn a_small_summary_is_written_every_window_and_a_large_one_in_proportion_to_its_size() {
        assert_eq!(summary_window(10_000), WINDOW);
        assert_eq!(summary_window(32 * 1024), WINDOW);
        assert_eq!(summary_window(900 * 1024), Duration::from_secs_f64(56.25));
    }

    #[test]
    fn while_reports_come_a_large_summary_waits_and_once_they_stop_it_goes_at_once() {
        let t0 = Instant::now();
        let big = 900 * 1024;
        assert_eq!(summary_wait(None, t0, big, t0), None, "never written");
        let s = Duration::from_secs;
        // Written at t0; a report changed it just now, 5 s later.
        let now = t0 + s(5);
        let wait = summary_wait(Some(t0), now, big, now).unwrap();
        assert_eq!(
            wait, QUIET,
            "looked at again once the reports may have stopped"
        );
        // Reports still coming at 50 s: the 56 s window holds.
        let now = t0 + s(50);
        assert!(summary_wait(Some(t0), now - Duration::from_millis(10), big, now).is_some());
        // At 57 s, though reports come, the window has passed.
        let now = t0 + s(57);
        assert_eq!(summary_wait(Some(t0), now, big, now), None);
        // No report for QUIET: written, however large, once WINDOW passed.
        let now = t0 + s(6);
        assert_eq!(summary_wait(Some(t0), now - QUIET, big, now), None);
        let soon = t0 + Duration::from_millis(1500);
        assert_eq!(
            summary_wait(Some(t0), t0, big, soon),
            Some(Duration::from_millis(500)),
            "never within WINDOW of the last write"
        );
    }

    #[test]
    fn a_new_summary_hash_is_a_change_and_the_same_one_is_not() {
        let p = SummaryPace::default();
        let t0 = Instant::now();
        let big = 900 * 1024;
        assert_eq!(p.wait("u", "h1", big, t0), None);
        p.wrote("u", t0);
        let t1 = t0 + Duration::from_secs(3);
        assert_eq!(p.wait("u", "h2", big, t1), Some(QUIET), "h2 came just now");
        let t2 = t1 + QUIET;
        assert_eq!(p.wait("u", "h2", big, t2), None, "h2 is quiet");
        p.wrote("u", t2);
        assert_eq!(p.len(), 1);
    }
}
