//! The rounds that run as tasks of their own: TCP, UDP and DNS rounds, and
//! the name lookup of an ICMP target given by name. Each hands its result
//! back to the scheduler, which drops it when the slot has moved on.

use std::future::Future;
use std::net::IpAddr;
use std::sync::Arc;

use tokio::sync::mpsc;
use tokio::task::AbortHandle;
use tokio::time::Instant;

use super::Scheduler;
use crate::engine::{on_tick, probe_spacing, Settings};
use crate::probe::{self, Resolved};
use crate::round::Outcome;
use crate::targets::Target;

/// The result of a round's task.
pub(super) struct Done {
    slot: u32,
    generation: u32,
    round: u64,
    result: TaskResult,
}

pub(super) enum TaskResult {
    /// A TCP, UDP or DNS round's outcomes.
    Outcomes(Vec<Outcome>),
    /// The address of an ICMP target given by name, or the failure of
    /// every probe of the round.
    Resolved(Result<IpAddr, Outcome>),
}

/// Whose round a task runs: the slot, its generation and the round.
type Whose = (u32, u32, u64);

/// Spawns `work` and sends its result back as a [`Done`] for `whose`; the
/// scheduler drops it when the slot has moved on.
fn spawn_reporting(
    done: mpsc::UnboundedSender<Done>,
    (slot, generation, round): Whose,
    work: impl Future<Output = TaskResult> + Send + 'static,
) -> AbortHandle {
    tokio::spawn(async move {
        let result = work.await;
        let _ = done.send(Done {
            slot,
            generation,
            round,
            result,
        });
    })
    .abort_handle()
}

/// Looks up the address of an ICMP target given by name.
pub(super) fn lookup(
    target: Target,
    settings: Arc<Settings>,
    done: mpsc::UnboundedSender<Done>,
    whose: Whose,
) -> AbortHandle {
    spawn_reporting(done, whose, async move {
        TaskResult::Resolved(match probe::resolve(&target, settings.timeout).await {
            Ok(Resolved::Addr(a)) => Ok(a.ip()),
            Ok(Resolved::Name(_)) => Err(Outcome::Error("not an address".into())),
            Err(failure) => Err(failure),
        })
    })
}

/// Runs a TCP, UDP or DNS round.
pub(super) fn round(
    target: Target,
    settings: Arc<Settings>,
    done: mpsc::UnboundedSender<Done>,
    whose: Whose,
) -> AbortHandle {
    spawn_reporting(done, whose, async move {
        TaskResult::Outcomes(task_round(&target, &settings).await)
    })
}

impl Scheduler {
    pub(super) fn task_done(&mut self, d: Done) {
        let Some(slot) = self.slot(d.slot, d.generation) else {
            return;
        };
        match d.result {
            TaskResult::Outcomes(outcomes) => {
                if slot.finish_all(d.round, outcomes) {
                    self.complete(d.slot);
                }
            }
            TaskResult::Resolved(Err(failure)) => {
                let n = slot.probes.len();
                if slot.finish_all(d.round, vec![failure; n]) {
                    self.complete(d.slot);
                }
            }
            TaskResult::Resolved(Ok(ip)) => {
                if d.round == slot.report.round && slot.left > 0 {
                    slot.addr = Some(ip);
                    slot.task = None;
                    self.icmp_round(d.slot, Instant::now());
                }
            }
        }
    }
}

/// A TCP, UDP or DNS round, as a task: the probes `probe_spacing` apart,
/// concurrently.
async fn task_round(target: &Target, s: &Settings) -> Vec<Outcome> {
    let count = s.count.max(1);
    let resolved = match probe::resolve(target, s.timeout).await {
        Ok(r) => r,
        Err(failure) => return vec![failure; count as usize],
    };
    if count == 1 {
        return vec![s.probers.probe(target.kind, &resolved, s.timeout).await];
    }
    let spacing = probe_spacing(s.interval, count);
    let start = Instant::now();
    let probes = (0..count).map(|i| {
        let resolved = &resolved;
        async move {
            if i > 0 {
                tokio::time::sleep_until(on_tick(start + spacing * i)).await;
            }
            s.probers.probe(target.kind, resolved, s.timeout).await
        }
    });
    futures::future::join_all(probes).await
}
