//! Queue: the Events on Nodes waiting to be written, one entry per Event
//! name, oldest first and at most [`MAX_QUEUED`], and the token bucket
//! that paces their writes (docs/operator.md, "Events on the Node").
//! [`Queue`] and [`Bucket`] are pure, the clock passed in; [`Outbox`]
//! shares a queue between the report watch and the writer.
//!
//! A newer state of an Event replaces the one waiting, in its place: a
//! streak that fails run after run while the writer is behind costs one
//! write, of its latest count.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::node_events::decide::NodeEvent;
use crate::node_events::{BURST, MAX_QUEUED, WRITES_PER_SECOND};

/// Events waiting, by name, in the order they first came.
#[derive(Debug)]
pub struct Queue {
    order: VecDeque<String>,
    waiting: HashMap<String, NodeEvent>,
    max: usize,
}

impl Default for Queue {
    fn default() -> Self {
        Queue::with_max(MAX_QUEUED)
    }
}

impl Queue {
    /// A queue of at most `max` Events.
    pub fn with_max(max: usize) -> Self {
        Queue {
            order: VecDeque::new(),
            waiting: HashMap::new(),
            max,
        }
    }

    /// Queues `e`, replacing a waiting state of the same Event (still a
    /// create if either was); returns how many of the oldest were dropped
    /// to make room.
    pub fn push(&mut self, mut e: NodeEvent) -> usize {
        if let Some(before) = self.waiting.get_mut(&e.name) {
            e.new |= before.new;
            *before = e;
            return 0;
        }
        let mut dropped = 0;
        while self.order.len() >= self.max.max(1) {
            if let Some(oldest) = self.order.pop_front() {
                self.waiting.remove(&oldest);
                dropped += 1;
            }
        }
        self.order.push_back(e.name.clone());
        self.waiting.insert(e.name.clone(), e);
        dropped
    }

    /// Queues `e` again after a failed write, unless a newer state of it
    /// is waiting; returns how many were dropped to make room.
    pub fn retry(&mut self, e: NodeEvent) -> usize {
        if self.waiting.contains_key(&e.name) {
            return 0;
        }
        self.push(e)
    }

    /// The oldest Event waiting, taken out.
    pub fn pop(&mut self) -> Option<NodeEvent> {
        let name = self.order.pop_front()?;
        self.waiting.remove(&name)
    }

    /// How many Events wait.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// Whether none does.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }
}

/// A token bucket: [`BURST`] writes at once, then [`WRITES_PER_SECOND`].
#[derive(Clone, Debug)]
pub struct Bucket {
    tokens: f64,
    at: Instant,
    rate: f64,
    burst: f64,
}

impl Bucket {
    /// A full bucket at `now`, of the writer's rate and burst.
    pub fn new(now: Instant) -> Self {
        Bucket::with(WRITES_PER_SECOND, BURST, now)
    }

    /// A full bucket at `now` of `burst` tokens, refilled at `rate` a
    /// second.
    pub fn with(rate: u32, burst: u32, now: Instant) -> Self {
        Bucket {
            tokens: f64::from(burst.max(1)),
            at: now,
            rate: f64::from(rate.max(1)),
            burst: f64::from(burst.max(1)),
        }
    }

    /// Takes a token at `now`, or says how long until there is one.
    pub fn take(&mut self, now: Instant) -> Result<(), Duration> {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.rate).min(self.burst);
        self.at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            return Ok(());
        }
        Err(Duration::from_secs_f64((1.0 - self.tokens) / self.rate))
    }
}

/// A queue shared by the report watch, which fills it, and the writer,
/// which empties it. Clones share it.
#[derive(Clone, Debug, Default)]
pub struct Outbox(Arc<(Mutex<Queue>, Notify)>);

impl Outbox {
    /// An outbox around `queue`.
    pub fn new(queue: Queue) -> Self {
        Outbox(Arc::new((Mutex::new(queue), Notify::new())))
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.0 .0.lock().expect("outbox lock")
    }

    /// Queues `events` (see [`Queue::push`]); returns how many were dropped.
    pub fn push_all(&self, events: impl IntoIterator<Item = NodeEvent>) -> usize {
        let mut queue = self.queue();
        let mut dropped = 0;
        let mut pushed = false;
        for e in events {
            dropped += queue.push(e);
            pushed = true;
        }
        drop(queue);
        if pushed {
            self.0 .1.notify_one();
        }
        dropped
    }

    /// Queues `e` again (see [`Queue::retry`]); returns how many were dropped.
    pub fn retry(&self, e: NodeEvent) -> usize {
        let dropped = self.queue().retry(e);
        self.0 .1.notify_one();
        dropped
    }

    /// Waits until an Event waits.
    pub async fn ready(&self) {
        loop {
            let notified = self.0 .1.notified();
            if !self.queue().is_empty() {
                return;
            }
            notified.await;
        }
    }

    /// The oldest Event waiting, taken out.
    pub fn pop(&self) -> Option<NodeEvent> {
        self.queue().pop()
    }

    /// How many Events wait.
    pub fn len(&self) -> usize {
        self.queue().len()
    }

    /// Whether none does.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
#[path = "queue_tests.rs"]
pub(crate) mod tests;
