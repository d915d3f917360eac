use super::*;
use chrono::{DateTime, Utc};

/// An Event of node-1 as the queue and the writer's tests take it.
pub(crate) fn event(name: &str, count: u32, new: bool) -> NodeEvent {
    let at = DateTime::<Utc>::UNIX_EPOCH;
    NodeEvent {
        name: name.into(),
        node: "node-1".into(),
        reason: "DiskProblem",
        warning: true,
        message: "ops/node-check: disk//var: full".into(),
        count,
        first: at,
        last: at,
        new,
    }
}

#[test]
fn a_newer_state_replaces_the_waiting_one_in_its_place_and_stays_a_create() {
    let mut q = Queue::default();
    q.push(event("a", 1, true));
    q.push(event("b", 1, true));
    q.push(event("a", 2, false));
    assert_eq!(q.len(), 2);
    let a = q.pop().unwrap();
    assert_eq!((a.name.as_str(), a.count, a.new), ("a", 2, true));
    assert_eq!(q.pop().unwrap().name, "b");
    assert!(q.pop().is_none());
}

#[test]
fn past_its_bound_the_oldest_go_and_are_counted() {
    let mut q = Queue::with_max(3);
    let dropped: usize = (0..5)
        .map(|i| q.push(event(&format!("e{i}"), 1, true)))
        .sum();
    assert_eq!((dropped, q.len()), (2, 3));
    assert_eq!(q.pop().unwrap().name, "e2", "e0 and e1 went");
    assert_eq!(
        q.push(event("e3", 2, false)),
        0,
        "a waiting one takes no room"
    );
}

#[test]
fn a_failed_write_waits_again_unless_a_newer_state_came() {
    let mut q = Queue::default();
    q.push(event("a", 2, false));
    q.retry(event("a", 1, false));
    assert_eq!(q.pop().unwrap().count, 2, "the newer state stays");
    q.push(event("b", 1, true));
    q.retry(event("a", 1, false));
    assert_eq!(q.pop().unwrap().name, "b", "at the back");
    assert_eq!(q.pop().unwrap().name, "a");
}

#[test]
fn the_bucket_gives_its_burst_at_once_then_its_rate() {
    let start = Instant::now();
    let mut b = Bucket::with(10, 50, start);
    assert!((0..50).all(|_| b.take(start).is_ok()));
    let wait = b.take(start).unwrap_err();
    assert_eq!(wait, Duration::from_millis(100));
    assert!(b.take(start + wait).is_ok());
    assert!(b.take(start + wait).is_err());
    // A quiet minute fills it up to its burst, no more.
    let later = start + Duration::from_secs(60);
    assert_eq!((0..60).filter(|_| b.take(later).is_ok()).count(), 50);
}

#[tokio::test]
async fn the_outbox_wakes_its_reader_when_an_event_comes() {
    let outbox = Outbox::default();
    let reader = tokio::spawn({
        let outbox = outbox.clone();
        async move {
            outbox.ready().await;
            outbox.pop().map(|e| e.name)
        }
    });
    tokio::task::yield_now().await;
    assert_eq!(outbox.push_all([event("a", 1, true)]), 0);
    let got = tokio::time::timeout(Duration::from_secs(5), reader).await;
    assert_eq!(got.unwrap().unwrap().as_deref(), Some("a"));
    assert!(outbox.is_empty());
}
