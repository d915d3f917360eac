//! The scheduler's one timer, set for its next wake, with a second timer one
//! tick behind it that is never awaited.
//!
//! Why the second: tokio's time driver wakes its own thread (a `write` to an
//! eventfd, and one more event for the next `epoll_wait`) whenever a timer is
//! set earlier than the driver's next wake, and once the only timer fired it
//! has none, so setting the next tick from the task the timer just woke paid
//! that system call at every tick: 450 `write`s in 5 s at 1,000 targets
//! (`strace -f`, docs/benchmarks.md, "Cutting the cost per tick"). With the
//! guard still in the wheel, set one tick after the timer, the next tick is
//! never earlier than the driver's next wake, and the driver is not woken.
//! The guard never fires first: each wake moves it on with the timer.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use tokio::time::{Instant, Sleep};

use crate::engine::TICK;

/// The timer of the scheduler's next wake and its guard.
pub(super) struct Alarm {
    timer: Pin<Box<Sleep>>,
    guard: Pin<Box<Sleep>>,
}

impl Default for Alarm {
    fn default() -> Self {
        Alarm {
            timer: Box::pin(tokio::time::sleep_until(far())),
            guard: Box::pin(tokio::time::sleep_until(far() + TICK)),
        }
    }
}

impl Alarm {
    /// Rings at `at`, or never (`None`).
    pub(super) fn set(&mut self, at: Option<Instant>) {
        let at = at.unwrap_or_else(far);
        if self.timer.deadline() != at {
            self.timer.as_mut().reset(at);
            self.guard.as_mut().reset(at + TICK);
        }
    }

    /// Completes when the alarm rings; cancel-safe.
    pub(super) fn rung(&mut self) -> impl Future<Output = ()> + '_ {
        &mut self.timer
    }
}

/// An instant no probe waits for: the timer's setting when nothing is due.
fn far() -> Instant {
    Instant::now() + Duration::from_secs(86_400 * 365)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_alarm_rings_at_its_setting_with_the_guard_a_tick_behind() {
        let mut alarm = Alarm::default();
        let at = Instant::now() + Duration::from_millis(30);
        alarm.set(Some(at));
        assert_eq!(
            (alarm.timer.deadline(), alarm.guard.deadline()),
            (at, at + TICK)
        );
        alarm.rung().await;
        assert_eq!(Instant::now(), at);
        assert!(!alarm.guard.is_elapsed(), "the guard never rings first");
        alarm.set(None);
        assert!(alarm.timer.deadline() > at + Duration::from_secs(86_000 * 365));
        assert_eq!(alarm.guard.deadline(), alarm.timer.deadline() + TICK);
    }
}
