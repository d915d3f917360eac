//! The clock the targets' rounds and probes wait on: one timer for the
//! process, set for the earliest tick some target waits for, instead of one
//! timer per target (docs/pinger.md, "Rounds, loss and RTT").
//!
//! With one timer per target, every round of every target inserted a timer
//! into tokio's wheel and moved it between the wheel's levels before it
//! fired; each of those steps touches the target's task, which by then has
//! left the CPU's caches. Here a target waiting for a tick adds its waker to
//! that tick's list while its task is running, and the clock's one task
//! wakes the whole list when the tick comes.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};

use tokio::sync::Notify;
use tokio::time::Instant;

/// The wakers waiting for each instant, earliest first.
#[derive(Default)]
pub struct Ticks {
    waiting: Mutex<Waiting>,
    /// An instant earlier than every other was added.
    sooner: Notify,
}

#[derive(Default)]
struct Waiting {
    at: BTreeMap<Instant, Vec<(u64, Waker)>>,
    next_id: u64,
}

impl Ticks {
    fn lock(&self) -> std::sync::MutexGuard<'_, Waiting> {
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Completes at `at` (a tick, as `on_tick` gives), once [`Ticks::run`]
    /// runs.
    pub fn sleep_until(&self, at: Instant) -> Sleep<'_> {
        Sleep {
            ticks: self,
            at,
            id: None,
        }
    }

    /// Wakes the waiters of each instant when it comes; runs until dropped.
    pub async fn run(&self) {
        loop {
            let first = self.lock().at.keys().next().copied();
            let Some(first) = first else {
                self.sooner.notified().await;
                continue;
            };
            tokio::select! {
                () = tokio::time::sleep_until(first) => {}
                () = self.sooner.notified() => continue,
            }
            for (_, waker) in self.due(Instant::now()) {
                waker.wake();
            }
        }
    }

    /// Takes the waiters of every instant up to `now`.
    fn due(&self, now: Instant) -> Vec<(u64, Waker)> {
        let mut w = self.lock();
        let later = match now.checked_add(std::time::Duration::from_nanos(1)) {
            Some(after) => w.at.split_off(&after),
            None => BTreeMap::new(),
        };
        let due = std::mem::replace(&mut w.at, later);
        due.into_values().flatten().collect()
    }

    fn add(&self, at: Instant, waker: Waker) -> u64 {
        let mut w = self.lock();
        let id = w.next_id;
        w.next_id += 1;
        let sooner = w.at.keys().next().is_none_or(|first| at < *first);
        w.at.entry(at).or_default().push((id, waker));
        drop(w);
        if sooner {
            self.sooner.notify_one();
        }
        id
    }

    fn remove(&self, at: Instant, id: u64) {
        let mut w = self.lock();
        if let Some(list) = w.at.get_mut(&at) {
            list.retain(|(i, _)| *i != id);
            if list.is_empty() {
                w.at.remove(&at);
            }
        }
    }

    /// How many waiters are registered (for tests).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().at.values().map(Vec::len).sum()
    }
}

/// The future of [`Ticks::sleep_until`].
pub struct Sleep<'a> {
    ticks: &'a Ticks,
    at: Instant,
    /// Its entry in the clock's list, once registered.
    id: Option<u64>,
}

impl Future for Sleep<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if Instant::now() >= self.at {
            return Poll::Ready(());
        }
        // A task's waker stays the same while it runs, so one registration
        // serves every poll until the instant.
        if self.id.is_none() {
            let id = self.ticks.add(self.at, cx.waker().clone());
            self.id = Some(id);
        }
        Poll::Pending
    }
}

impl Drop for Sleep<'_> {
    fn drop(&mut self) {
        // Dropped before its instant (the target was removed): its waker
        // goes now rather than when the instant comes. Past its instant the
        // clock has taken it already.
        if let Some(id) = self.id {
            if Instant::now() < self.at {
                self.ticks.remove(self.at, id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn waiters_wake_at_their_instant_in_order() {
        let ticks = Arc::new(Ticks::default());
        let clock = tokio::spawn({
            let ticks = ticks.clone();
            async move { ticks.run().await }
        });
        let t0 = Instant::now();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        for ms in [30u64, 10, 20, 10] {
            let (ticks, tx) = (ticks.clone(), tx.clone());
            tokio::spawn(async move {
                ticks.sleep_until(t0 + Duration::from_millis(ms)).await;
                tx.send((ms, t0.elapsed())).unwrap();
            });
        }
        drop(tx);
        let mut woke = Vec::new();
        while let Some(w) = rx.recv().await {
            woke.push(w);
        }
        let ms = |n| Duration::from_millis(n);
        assert_eq!(
            woke,
            [(10, ms(10)), (10, ms(10)), (20, ms(20)), (30, ms(30))]
        );
        assert_eq!(ticks.len(), 0);
        clock.abort();
    }

    #[tokio::test(start_paused = true)]
    async fn a_sleep_dropped_before_its_instant_leaves_no_waiter() {
        let ticks = Arc::new(Ticks::default());
        let waiter = tokio::spawn({
            let ticks = ticks.clone();
            async move {
                ticks
                    .sleep_until(Instant::now() + Duration::from_secs(3600))
                    .await;
            }
        });
        tokio::task::yield_now().await;
        assert_eq!(ticks.len(), 1, "registered while it waits");
        waiter.abort();
        let _ = waiter.await;
        assert_eq!(ticks.len(), 0, "gone with its task");
    }

    #[tokio::test(start_paused = true)]
    async fn an_earlier_instant_added_later_is_not_missed() {
        let ticks = Arc::new(Ticks::default());
        let clock = tokio::spawn({
            let ticks = ticks.clone();
            async move { ticks.run().await }
        });
        let t0 = Instant::now();
        let late = tokio::spawn({
            let ticks = ticks.clone();
            async move { ticks.sleep_until(t0 + Duration::from_secs(60)).await }
        });
        tokio::task::yield_now().await;
        ticks.sleep_until(t0 + Duration::from_millis(10)).await;
        assert_eq!(t0.elapsed(), Duration::from_millis(10));
        assert!(!late.is_finished());
        late.await.unwrap();
        assert_eq!(t0.elapsed(), Duration::from_secs(60));
        clock.abort();
    }
}
