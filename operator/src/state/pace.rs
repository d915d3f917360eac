//! Workloads first; summary ConfigMaps, statuses and Events after.
//!
//! When many Debuggers arrive at once, every other write sent while
//! workloads are still being created competes with those creates (and with
//! the client creating the Debuggers) for the API server. So a reconcile
//! that would write a summary ConfigMap or a status, or publish an Event,
//! while the operator wrote a workload less than [`QUIET`] ago keeps its
//! Events and asks to run again a little later, until workload writes
//! pause or it has waited [`MAX_DEFER`]. A lone Debugger's summary
//! ConfigMap and status follow its workload by about [`QUIET`]. No runner
//! needs the ConfigMap that soon, as its pod has yet to start; a runner
//! write that comes first anyway is refused and retried with backoff.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::Event;

/// How long workload writes have to pause before statuses are written.
pub const QUIET: Duration = Duration::from_millis(150);
/// The longest a Debugger's summary ConfigMap, status and Events wait.
pub const MAX_DEFER: Duration = Duration::from_secs(10);
/// A waiting entry older than this belongs to a Debugger that is gone.
const FORGET: Duration = Duration::from_secs(60);

/// The pacing state shared by all reconciles.
#[derive(Default)]
pub struct Pace {
    last_write: Mutex<Option<Instant>>,
    waiting: Mutex<HashMap<String, Waiting>>,
}

struct Waiting {
    since: Instant,
    reference: ObjectReference,
    events: Vec<Event>,
}

/// How long a status write that could go out at `now` waits: `None` to go
/// now. `last_write` is the operator's last workload write, `since` when
/// this Debugger started waiting. The first wait is until writes would
/// have paused for [`QUIET`]; a Debugger that is still waiting after that
/// waits as long as it has waited so far (fewer reconciles in a long
/// burst), never past [`MAX_DEFER`]. Pure.
pub fn wait_for(
    last_write: Option<Instant>,
    since: Option<Instant>,
    now: Instant,
) -> Option<Duration> {
    let quiet_in = QUIET.checked_sub(now.saturating_duration_since(last_write?))?;
    if quiet_in.is_zero() {
        return None;
    }
    let waited = since.map_or(Duration::ZERO, |s| now.saturating_duration_since(s));
    let left = MAX_DEFER.checked_sub(waited).filter(|d| !d.is_zero())?;
    Some(quiet_in.max(waited).min(left))
}

impl Pace {
    /// Records that a workload was just written.
    pub fn wrote(&self) {
        *self.last_write.lock().expect("pace lock") = Some(Instant::now());
    }

    /// Keeps `events` for Debugger `uid` (at `reference`) and returns how
    /// long to wait when its status and Events should wait; otherwise gives
    /// `events` back with any kept earlier, oldest first.
    pub fn hold(
        &self,
        uid: &str,
        reference: &ObjectReference,
        events: Vec<Event>,
    ) -> Result<Duration, Vec<Event>> {
        self.hold_at(uid, reference, events, Instant::now())
    }

    /// [`Pace::hold`] at `now`. Entries waiting longer than a minute belong
    /// to Debuggers that are gone, and are forgotten here: the record is
    /// bounded by the Debuggers that wait.
    fn hold_at(
        &self,
        uid: &str,
        reference: &ObjectReference,
        events: Vec<Event>,
        now: Instant,
    ) -> Result<Duration, Vec<Event>> {
        let last = *self.last_write.lock().expect("pace lock");
        let mut waiting = self.waiting.lock().expect("pace lock");
        waiting.retain(|_, w| now.saturating_duration_since(w.since) < FORGET);
        match wait_for(last, waiting.get(uid).map(|w| w.since), now) {
            Some(wait) => {
                waiting
                    .entry(uid.to_string())
                    .or_insert_with(|| Waiting {
                        since: now,
                        reference: reference.clone(),
                        events: Vec::new(),
                    })
                    .events
                    .extend(events);
                Ok(wait)
            }
            None => {
                let mut all = waiting.remove(uid).map(|w| w.events).unwrap_or_default();
                all.extend(events);
                Err(all)
            }
        }
    }

    /// Whether Debugger `uid` has Events held: its next reconcile hands
    /// them out once writes pause, even when it has nothing new.
    pub fn holds(&self, uid: &str) -> bool {
        self.waiting.lock().expect("pace lock").contains_key(uid)
    }

    /// The Events held for Debugger `uid`, oldest first, handed out now
    /// (its spec turned invalid, and its status goes out at once).
    pub fn take(&self, uid: &str) -> Vec<Event> {
        let mut waiting = self.waiting.lock().expect("pace lock");
        waiting.remove(uid).map(|w| w.events).unwrap_or_default()
    }

    /// Every Event still held, with the Debugger it is about; for shutdown,
    /// so that none is lost when the operator stops.
    pub fn drain(&self) -> Vec<(ObjectReference, Event)> {
        let mut waiting = self.waiting.lock().expect("pace lock");
        waiting
            .drain()
            .flat_map(|(_, w)| {
                let reference = w.reference;
                w.events.into_iter().map(move |e| (reference.clone(), e))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::runtime::events::EventType;

    #[test]
    fn a_debugger_waiting_a_minute_is_forgotten_at_the_next_hold() {
        let pace = Pace::default();
        let start = Instant::now();
        pace.wrote();
        let r = ObjectReference::default();
        assert!(pace.hold_at("gone", &r, vec![event("A")], start).is_ok());
        assert!(pace.holds("gone"));
        // Another Debugger waits a minute later: the first one's entry goes.
        let later = start + FORGET + Duration::from_secs(1);
        *pace.last_write.lock().unwrap() = Some(later);
        assert!(pace.hold_at("live", &r, vec![event("B")], later).is_ok());
        assert!(!pace.holds("gone") && pace.holds("live"));
        assert_eq!(pace.waiting.lock().unwrap().len(), 1);
    }

    fn event(reason: &str) -> Event {
        Event {
            type_: EventType::Normal,
            reason: reason.into(),
            note: None,
            action: "Reconcile".into(),
            secondary: None,
        }
    }

    #[test]
    fn statuses_wait_for_a_pause_in_workload_writes() {
        let now = Instant::now() + Duration::from_secs(100);
        assert_eq!(wait_for(None, None, now), None, "nothing written yet");
        assert_eq!(
            wait_for(Some(now - Duration::from_millis(50)), None, now),
            Some(Duration::from_millis(100))
        );
        assert_eq!(wait_for(Some(now - QUIET), None, now), None);
        assert_eq!(
            wait_for(Some(now - Duration::from_secs(5)), None, now),
            None
        );
    }

    #[test]
    fn a_long_burst_doubles_the_wait() {
        let now = Instant::now() + Duration::from_secs(100);
        let busy = Some(now);
        let since = Some(now - Duration::from_millis(600));
        assert_eq!(wait_for(busy, since, now), Some(Duration::from_millis(600)));
    }

    #[test]
    fn no_status_waits_longer_than_max_defer() {
        let now = Instant::now() + Duration::from_secs(100);
        let busy = Some(now);
        assert_eq!(wait_for(busy, Some(now - MAX_DEFER), now), None);
        assert_eq!(
            wait_for(busy, Some(now - MAX_DEFER + Duration::from_millis(20)), now),
            Some(Duration::from_millis(20))
        );
    }

    #[test]
    fn held_events_come_back_in_order_once_writes_pause() {
        let pace = Pace::default();
        let at = ObjectReference::default();
        let reasons = |e: Vec<Event>| e.into_iter().map(|e| e.reason).collect::<Vec<_>>();
        let hold = |uid: &str, e: Vec<Event>| pace.hold(uid, &at, e);
        assert_eq!(reasons(hold("u", vec![event("A")]).unwrap_err()), ["A"]);
        pace.wrote();
        assert!(hold("u", vec![event("A")]).is_ok());
        assert!(hold("u", vec![event("B")]).is_ok());
        assert!(hold("other", vec![]).is_ok());
        *pace.last_write.lock().unwrap() = Some(Instant::now() - QUIET);
        assert_eq!(
            reasons(hold("u", vec![event("C")]).unwrap_err()),
            ["A", "B", "C"]
        );
        assert!(hold("u", vec![]).unwrap_err().is_empty(), "handed out once");
        pace.wrote();
        assert!(hold("u", vec![event("D")]).is_ok());
        assert_eq!(reasons(pace.take("u")), ["D"]);
        assert!(pace.take("u").is_empty());
    }

    #[test]
    fn held_events_are_handed_out_at_shutdown() {
        let pace = Pace::default();
        pace.wrote();
        let at = |name: &str| ObjectReference {
            name: Some(name.into()),
            ..ObjectReference::default()
        };
        assert!(pace.hold("u1", &at("a"), vec![event("A")]).is_ok());
        assert!(pace.hold("u2", &at("b"), vec![event("B")]).is_ok());
        let mut held: Vec<(Option<String>, String)> = pace
            .drain()
            .into_iter()
            .map(|(r, e)| (r.name, e.reason))
            .collect();
        held.sort();
        assert_eq!(
            held,
            [
                (Some("a".into()), "A".into()),
                (Some("b".into()), "B".into())
            ]
        );
        assert!(pace.drain().is_empty());
    }
}
