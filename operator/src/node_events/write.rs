//! Write: the one task that sends the Events on Nodes, oldest first,
//! each request within the token bucket
//! (docs/operator.md, "Events on the Node").
//!
//! A new Event is created, and patched when it is there already (an
//! operator that restarted writes again what it wrote before); a streak's
//! next run patches it, and creates it when it is gone (Events expire, an
//! hour after their last write by default). A write the API server did
//! not answer, or answered 429 or 5xx, waits at the back of the queue to
//! be tried again; one it refused (another 4xx) is dropped.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Event;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use tokio::time::Instant;
use tracing::warn;

use combo_api::keys::FIELD_MANAGER_OPERATOR;

use crate::metrics::registry::{EventWrite, Metrics};
use crate::node_events::decide::NodeEvent;
use crate::node_events::queue::{Bucket, Outbox};
use crate::node_events::NAMESPACE;

/// Sends the Events of `outbox` through `client` until dropped (the
/// controller stops with leadership), counting them in `metrics`.
pub async fn run(client: Client, outbox: Outbox, metrics: Arc<Metrics>) {
    let api: Api<Event> = Api::namespaced(client, NAMESPACE);
    let mut bucket = Bucket::new(Instant::now());
    loop {
        outbox.ready().await;
        token(&mut bucket).await;
        // Taken only now: a newer state that came while the bucket was
        // empty is the one sent.
        let Some(e) = outbox.pop() else { continue };
        let result = send(&api, &e, &mut bucket).await;
        metrics.node_event_written(result.written());
        if result == Sent::Again {
            let dropped = outbox.retry(e);
            metrics.node_events_dropped(dropped as u64);
        }
    }
}

/// How one Event's write ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sent {
    Created,
    Patched,
    /// Refused for good: dropped.
    Refused,
    /// Not answered, or answered "later": to be tried again.
    Again,
}

impl Sent {
    fn written(self) -> EventWrite {
        match self {
            Sent::Created => EventWrite::Created,
            Sent::Patched => EventWrite::Patched,
            Sent::Refused | Sent::Again => EventWrite::Failed,
        }
    }
}

/// Waits for a token of `bucket`.
async fn token(bucket: &mut Bucket) {
    while let Err(wait) = bucket.take(Instant::now()) {
        tokio::time::sleep(wait).await;
    }
}

/// Writes `e`: a create or a patch as it asks, then the other if the
/// Event is there (409) or gone (404), each request with its token.
async fn send(api: &Api<Event>, e: &NodeEvent, bucket: &mut Bucket) -> Sent {
    let first = if e.new {
        create(api, e).await
    } else {
        patch(api, e).await
    };
    let fallback = matches!((e.new, first), (true, Err(409)) | (false, Err(404)));
    let outcome = if fallback {
        token(bucket).await;
        if e.new {
            patch(api, e).await
        } else {
            create(api, e).await
        }
    } else {
        first
    };
    match outcome {
        Ok(sent) => sent,
        Err(code) => {
            let again = code == 0 || code == 429 || code >= 500;
            warn!(
                event = %e.name,
                node = %e.node,
                reason = e.reason,
                code,
                retried = again,
                "writing an Event on a Node failed"
            );
            if again {
                Sent::Again
            } else {
                Sent::Refused
            }
        }
    }
}

/// The status code of a failed request; 0 when none came.
fn code(err: kube::Error) -> u16 {
    match err {
        kube::Error::Api(s) => s.code,
        _ => 0,
    }
}

async fn create(api: &Api<Event>, e: &NodeEvent) -> Result<Sent, u16> {
    let pp = PostParams {
        field_manager: Some(FIELD_MANAGER_OPERATOR.into()),
        ..PostParams::default()
    };
    match api.create(&pp, &e.object()).await {
        Ok(_) => Ok(Sent::Created),
        Err(err) => Err(code(err)),
    }
}

async fn patch(api: &Api<Event>, e: &NodeEvent) -> Result<Sent, u16> {
    let pp = PatchParams {
        field_manager: Some(FIELD_MANAGER_OPERATOR.into()),
        ..PatchParams::default()
    };
    match api.patch(&e.name, &pp, &Patch::Merge(e.patch())).await {
        Ok(_) => Ok(Sent::Patched),
        Err(err) => Err(code(err)),
    }
}

#[cfg(test)]
#[path = "write_tests.rs"]
mod tests;
