//! Sending an Event on a Debugger or a Pinger through kube's recorder (the
//! Events themselves are made in [`crate::core::events`], without I/O).

use kube::runtime::events::{Event, Recorder};
use kube::Resource;

/// Publishes `event` on `obj` (a Debugger or a Pinger); a failure is
/// logged, never fatal.
pub async fn publish<K: Resource<DynamicType = ()>>(recorder: &Recorder, obj: &K, event: Event) {
    let reference = obj.object_ref(&());
    if let Err(e) = recorder.publish(&event, &reference).await {
        tracing::warn!(error = %e, reason = %event.reason, "publishing event failed");
    }
}
