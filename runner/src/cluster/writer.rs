//! Getting this node's report written: each result waits its spread offset,
//! then is applied through [`Publisher`] until it lands or is refused for
//! good, in the background, with the newest result replacing one still
//! waiting.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use combo_api::retry::is_permanent;
use tokio::sync::mpsc;

use crate::cluster::publish::{
    attempt_timeout, retry_pause, spread_delay, spread_window, Pending, Publisher,
};

/// How a write ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Written {
    /// The report landed after this many attempts.
    Landed(u32),
    /// The API server refused it for good (see [`is_permanent`]) at this
    /// attempt: logged and recorded as a `ReportRejected` Event, not retried.
    Rejected(u32),
}

/// Writes `pending` as a runner does: waits this node's spread offset, then
/// applies until the write lands, giving each attempt [`attempt_timeout`]
/// and pausing [`retry_pause`] after each failure. Before each attempt
/// `newer` may hand over a newer result, which replaces the one being
/// written. A refusal that retrying cannot fix ends the write.
pub async fn write(
    publisher: &Publisher,
    mut pending: Pending,
    mut newer: impl FnMut() -> Option<Pending>,
) -> Written {
    let window = spread_window(pending.nodes);
    tokio::time::sleep(spread_delay(&publisher.node, window)).await;
    let mut attempt = 0;
    loop {
        attempt += 1;
        while let Some(n) = newer() {
            pending = n;
        }
        let limit = attempt_timeout(attempt);
        let run_at = pending.summary.run_at.clone();
        let error = match apply_within(publisher, &pending, limit).await {
            Ok(Ok(())) => {
                tracing::info!(debugger = %pending.owner.name, %run_at, attempt, "report written");
                return Written::Landed(attempt);
            }
            Ok(Err(e)) if is_permanent(&e) => {
                tracing::error!(debugger = %pending.owner.name, %run_at, error = %e, attempt,
                    "report refused; not retried");
                publisher.record_rejected(&run_at, &e).await;
                return Written::Rejected(attempt);
            }
            Ok(Err(e)) => e.to_string(),
            Err(_) => format!("no answer within {limit:?}: the API server is busy"),
        };
        let pause = retry_pause(&publisher.node, &run_at, attempt);
        tracing::warn!(debugger = %pending.owner.name, %error, attempt,
            retry_in_ms = pause.as_millis() as u64, "report write failed");
        tokio::time::sleep(pause).await;
    }
}

/// One attempt to apply `pending`, given at most `limit`; `Err` when the
/// API server did not answer in time.
async fn apply_within(
    publisher: &Publisher,
    pending: &Pending,
    limit: Duration,
) -> Result<Result<(), kube::Error>, tokio::time::error::Elapsed> {
    tokio::time::timeout(
        limit,
        publisher.apply(
            &pending.owner,
            &pending.summary,
            &pending.sources,
            &pending.history,
        ),
    )
    .await
}

/// How long a stopping runner tries to write a result still pending: one
/// attempt, without the spread offset, so the runner still exits within
/// 2 s of SIGTERM (docs/runner.md, "Stopping").
pub const FLUSH_LIMIT: Duration = Duration::from_secs(1);

/// The background writer has ended (its runtime is shutting down).
#[derive(Debug, thiserror::Error)]
#[error("the report writer has ended")]
pub struct WriterGone;

/// The background writer of this node's reports (see [`spawn_writer`]).
#[derive(Clone)]
pub struct Writer {
    publisher: Publisher,
    tx: mpsc::UnboundedSender<(u64, Pending)>,
    /// The newest result handed over and not yet landed or refused, with
    /// its sequence number.
    unlanded: Arc<Mutex<Option<(u64, Pending)>>>,
    sent: Arc<AtomicU64>,
}

impl Writer {
    /// Hands `pending` to the writer.
    pub fn send(&self, pending: Pending) -> Result<(), WriterGone> {
        let seq = self.sent.fetch_add(1, Ordering::SeqCst) + 1;
        *self.unlanded.lock().expect("unlanded lock") = Some((seq, pending.clone()));
        self.tx.send((seq, pending)).map_err(|_| WriterGone)
    }

    /// For a runner that stops: makes one attempt, of at most `limit`, to
    /// write the newest result that has not landed yet, at once. Returns
    /// whether one was pending and landed.
    pub async fn flush(&self, limit: Duration) -> bool {
        let Some((_, pending)) = self.unlanded.lock().expect("unlanded lock").take() else {
            return false;
        };
        let run_at = pending.summary.run_at.clone();
        match apply_within(&self.publisher, &pending, limit).await {
            Ok(Ok(())) => {
                tracing::info!(%run_at, "report written before stopping");
                true
            }
            Ok(Err(e)) => {
                tracing::warn!(%run_at, error = %e, "report not written before stopping");
                false
            }
            Err(_) => {
                tracing::warn!(%run_at, "report not written before stopping: no answer within {limit:?}");
                false
            }
        }
    }
}

/// Writes reports in the background with [`write()`], so each lands in the
/// end; a newer result replaces one still waiting, so a slow API server
/// delays a result but never loses the latest one.
pub fn spawn_writer(publisher: Publisher) -> Writer {
    let (tx, mut rx) = mpsc::unbounded_channel::<(u64, Pending)>();
    let writer = Writer {
        publisher: publisher.clone(),
        tx,
        unlanded: Arc::default(),
        sent: Arc::default(),
    };
    let unlanded = writer.unlanded.clone();
    tokio::spawn(async move {
        while let Some((mut seq, pending)) = rx.recv().await {
            write(&publisher, pending, || {
                let (s, newer) = rx.try_recv().ok()?;
                seq = s;
                Some(newer)
            })
            .await;
            let mut slot = unlanded.lock().expect("unlanded lock");
            if slot.as_ref().is_some_and(|(s, _)| *s <= seq) {
                *slot = None;
            }
        }
    });
    writer
}
