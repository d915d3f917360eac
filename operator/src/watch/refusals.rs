//! Refused pods: why the DaemonSet controller cannot create a Debugger's
//! pods (a ResourceQuota, Pod Security admission, a webhook), as its
//! `FailedCreate` Events on the DaemonSet say, for the message of
//! `Ready=False WorkloadRefused` (docs/operator.md, "Refused workloads").
//!
//! Fed by two watches: the `FailedCreate` Events of DaemonSets (a field
//! selector, so the API server sends nothing else), and the operator's
//! own DaemonSets, which say whether pods are missing. A refusal counts
//! while its DaemonSet misses pods and it is newer than the last time that
//! DaemonSet had every pod: an Event that outlives its cause (Events last
//! an hour) says nothing once the pods were created.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::Event;
use kube::runtime::watcher;
use kube::ResourceExt;

/// A DaemonSet (and so its Debugger): namespace and name.
type Key = (String, String);

/// The Event reason of the DaemonSet controller's failed pod creations.
pub const FAILED_CREATE: &str = "FailedCreate";

/// The field selector of the Events watch: only the DaemonSet
/// controller's failed creations.
pub fn field_selector() -> String {
    format!("involvedObject.kind=DaemonSet,reason={FAILED_CREATE}")
}

/// The refusals of every Debugger's DaemonSet, shared by the watches that
/// fill it and the reconciles that read it. Clones share it.
#[derive(Clone, Default)]
pub struct Refusals {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Default)]
struct Inner {
    /// The newest refusal per DaemonSet: its message and when it was seen.
    refused: HashMap<Key, (String, DateTime<Utc>)>,
    /// Per DaemonSet of the operator's: what its status last showed.
    daemonsets: HashMap<Key, Pods>,
    /// The refusals of a re-list of Events under way.
    listing: Option<HashMap<Key, (String, DateTime<Utc>)>>,
}

/// What a DaemonSet's status shows of its pods.
#[derive(Clone, Copy, Debug, Default)]
struct Pods {
    /// Its controller wants more pods than it has created.
    missing: bool,
    /// When it was last seen with every pod created.
    complete_at: Option<DateTime<Utc>>,
}

/// The DaemonSet an Event is about and its refusal, if it is a
/// `FailedCreate` of a DaemonSet.
fn refusal_of(event: &Event) -> Option<(Key, (String, DateTime<Utc>))> {
    let object = &event.involved_object;
    if object.kind.as_deref() != Some("DaemonSet") || event.reason.as_deref() != Some(FAILED_CREATE)
    {
        return None;
    }
    let ns = object.namespace.clone().or_else(|| event.namespace())?;
    let at = event
        .last_timestamp
        .as_ref()
        .map(|t| t.0)
        .or(event.event_time.as_ref().map(|t| t.0))
        .or(event.metadata.creation_timestamp.as_ref().map(|t| t.0))?;
    let at = DateTime::from_timestamp(at.as_second(), 0)?;
    // Cut as a pod's wait is: its start names the pod, its end the policy.
    let message = crate::watch::waiting::cut(event.message.as_deref().unwrap_or_default());
    Some(((ns, object.name.clone()?), (message, at)))
}

/// Whether a DaemonSet misses pods: its controller wants more than it has
/// created, or has not finished a sync of its spec (a controller whose
/// pod creations fail returns before it writes the status, which stays
/// at `0/0` for a new DaemonSet).
fn missing_pods(ds: &DaemonSet) -> bool {
    let Some(s) = ds.status.as_ref() else {
        return true;
    };
    let synced = matches!(
        (ds.metadata.generation, s.observed_generation),
        (Some(generation), Some(observed)) if observed >= generation
    );
    !synced || s.current_number_scheduled < s.desired_number_scheduled
}

fn ds_key(ds: &DaemonSet) -> Option<Key> {
    Some((ds.namespace()?, ds.metadata.name.clone()?))
}

impl Inner {
    fn refuse(&mut self, key: Key, refusal: (String, DateTime<Utc>)) {
        let newer = self
            .refused
            .get(&key)
            .is_none_or(|(_, at)| *at <= refusal.1);
        if newer {
            self.refused.insert(key, refusal);
        }
    }

    fn daemonset(&mut self, ds: &DaemonSet, now: DateTime<Utc>) {
        let Some(key) = ds_key(ds) else { return };
        let pods = self.daemonsets.entry(key).or_default();
        pods.missing = missing_pods(ds);
        if !pods.missing {
            pods.complete_at = Some(now);
        }
    }
}

impl Refusals {
    /// Takes in one event of the watch of `FailedCreate` Events.
    pub fn observe_event(&self, event: &watcher::Event<Event>) {
        let mut inner = self.inner.lock().expect("refusals lock");
        match event {
            watcher::Event::Init => inner.listing = Some(HashMap::new()),
            watcher::Event::InitApply(e) => {
                if let Some((key, refusal)) = refusal_of(e) {
                    let listing = inner.listing.get_or_insert_with(HashMap::new);
                    listing.insert(key, refusal);
                }
            }
            watcher::Event::InitDone => {
                inner.refused = inner.listing.take().unwrap_or_default();
            }
            watcher::Event::Apply(e) => {
                if let Some((key, refusal)) = refusal_of(e) {
                    inner.refuse(key, refusal);
                }
            }
            // An Event expires an hour after its last repeat; the refusal
            // it told of is over or repeated in a newer one.
            watcher::Event::Delete(e) => {
                if let Some((key, (_, at))) = refusal_of(e) {
                    if inner.refused.get(&key).is_some_and(|(_, held)| *held <= at) {
                        inner.refused.remove(&key);
                    }
                }
            }
        }
    }

    /// Takes in one event of the watch of the operator's DaemonSets, seen
    /// at `now`.
    pub fn observe_daemonset(&self, event: &watcher::Event<DaemonSet>, now: DateTime<Utc>) {
        let mut inner = self.inner.lock().expect("refusals lock");
        match event {
            watcher::Event::Init | watcher::Event::InitDone => {}
            watcher::Event::InitApply(ds) | watcher::Event::Apply(ds) => inner.daemonset(ds, now),
            watcher::Event::Delete(ds) => {
                if let Some(key) = ds_key(ds) {
                    inner.daemonsets.remove(&key);
                    inner.refused.remove(&key);
                }
            }
        }
    }

    /// Why the pods of DaemonSet `ns`/`name` are refused, if it misses
    /// pods and the newest refusal came after it last had them all.
    pub fn describe(&self, ns: &str, name: &str) -> Option<String> {
        let inner = self.inner.lock().expect("refusals lock");
        let key = (ns.to_string(), name.to_string());
        let (message, at) = inner.refused.get(&key)?;
        let pods = inner.daemonsets.get(&key)?;
        (pods.missing && pods.complete_at.is_none_or(|c| *at > c)).then(|| message.clone())
    }
}

#[cfg(test)]
#[path = "refusals_tests.rs"]
mod tests;
