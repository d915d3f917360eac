//! Waiting pods: why the pods of a Debugger that are not Ready wait
//! (`ErrImagePull`, `ImagePullBackOff`, `CreateContainerConfigError`, ...),
//! as the kubelet reports it in their container statuses, for the message
//! of `Ready=False` (docs/operator.md#waiting-pods).
//!
//! Fed by the watch of the Debuggers' pods that [`crate::pinger::peer_lists`]
//! keeps, so it costs no watch of its own. It holds one entry per pod
//! that waits, with its message cut to [`MESSAGE_MAX`] bytes; a pod that
//! runs, is deleted or is missing from a re-list is dropped. When the
//! reasons a Debugger's pods wait on change, the Debugger is reconciled
//! (a pod going from `ContainerCreating` to `ErrImagePull` changes nothing
//! the Debugger's workload status shows).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use combo_api::{keys, Debugger};
use futures::Stream;
use k8s_openapi::api::core::v1::{ContainerStatus, Pod};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher::Event;
use kube::ResourceExt;
use tokio::sync::Notify;

/// A Debugger: namespace and name.
pub type Key = (String, String);

/// The longest kubelet message kept per pod, in bytes: a pull error of
/// containerd names the image twice before the registry's answer
/// (`... failed with status code [manifests dev]: 401 Unauthorized`), in
/// about 260 bytes.
pub const MESSAGE_MAX: usize = 512;
/// What a longer message keeps of its start; its end, where the cause
/// is, fills the rest.
const MESSAGE_HEAD: usize = 160;
/// The most reasons a status message lists.
pub const REASONS_MAX: usize = 4;

/// Waiting reasons of a container that is on its way, not stuck.
const ON_ITS_WAY: [&str; 2] = ["ContainerCreating", "PodInitializing"];

/// Why one pod waits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wait {
    /// The container that waits (the first one, init containers first).
    pub container: String,
    /// The kubelet's reason, e.g. `ImagePullBackOff`.
    pub reason: String,
    /// The kubelet's message, cut to [`MESSAGE_MAX`].
    pub message: String,
    /// While backing off: the reason and message of the failure it backs
    /// off from (`ErrImagePull` and the registry's answer), when it was
    /// seen.
    pub cause: Option<(String, String)>,
}

/// The wait of `pod`, if a container of it waits for a reason other than
/// being on its way. Pure.
pub fn wait_of(pod: &Pod) -> Option<Wait> {
    let status = pod.status.as_ref()?;
    let containers = status
        .init_container_statuses
        .iter()
        .flatten()
        .chain(status.container_statuses.iter().flatten());
    containers.filter_map(waiting).next()
}

fn waiting(c: &ContainerStatus) -> Option<Wait> {
    let w = c.state.as_ref()?.waiting.as_ref()?;
    let reason = w
        .reason
        .clone()
        .filter(|r| !ON_ITS_WAY.contains(&r.as_str()))?;
    Some(Wait {
        container: c.name.clone(),
        reason,
        message: cut(w.message.as_deref().unwrap_or_default()),
        cause: None,
    })
}

/// `s` cut to at most [`MESSAGE_MAX`] bytes, at character boundaries: its
/// first `MESSAGE_HEAD` (160) bytes (what failed), ` ... `, and its end (why).
pub fn cut(s: &str) -> String {
    const GAP: &str = " ... ";
    if s.len() <= MESSAGE_MAX {
        return s.to_string();
    }
    let mut head = MESSAGE_HEAD;
    while !s.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = s.len() - (MESSAGE_MAX - MESSAGE_HEAD - GAP.len());
    while !s.is_char_boundary(tail) {
        tail += 1;
    }
    format!("{}{GAP}{}", &s[..head], &s[tail..])
}

/// Whether a reason is the kubelet backing off from an earlier failure.
fn backing_off(reason: &str) -> bool {
    reason.ends_with("BackOff")
}

/// `new`, keeping from `old` (the same container's previous wait) the
/// failure it backs off from.
fn with_cause(mut new: Wait, old: Option<&Wait>) -> Wait {
    if backing_off(&new.reason) {
        new.cause = old.filter(|o| o.container == new.container).and_then(|o| {
            if backing_off(&o.reason) {
                o.cause.clone()
            } else {
                Some((o.reason.clone(), o.message.clone()))
            }
        });
    }
    new
}

/// What the pods of one Debugger wait on, for the `Ready` condition's
/// message: the reasons, most pods first, at most [`REASONS_MAX`], and
/// one pod's container and message (a pod that does not back off first,
/// else one whose cause is known). `None` when no pod waits. Pure.
pub fn describe(pods: &BTreeMap<String, Wait>) -> Option<String> {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for w in pods.values() {
        *counts.entry(w.reason.as_str()).or_default() += 1;
    }
    let mut reasons: Vec<(&str, usize)> = counts.into_iter().collect();
    reasons.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let mut listed: Vec<String> = reasons
        .iter()
        .take(REASONS_MAX)
        .map(|(r, n)| format!("{r} on {n} {}", if *n == 1 { "pod" } else { "pods" }))
        .collect();
    if reasons.len() > REASONS_MAX {
        listed.push(format!("{} more reasons", reasons.len() - REASONS_MAX));
    }
    let (pod, w) = pods
        .iter()
        .find(|(_, w)| !backing_off(&w.reason))
        .or_else(|| pods.iter().find(|(_, w)| w.cause.is_some()))
        .or_else(|| pods.iter().next())?;
    let why = match &w.cause {
        Some((reason, message)) => {
            format!("{}: {} (after {reason}: {message})", w.reason, w.message)
        }
        None => format!("{}: {}", w.reason, w.message),
    };
    Some(format!(
        "pods waiting: {}; pod {pod}, container {}: {why}",
        listed.join(", "),
        w.container
    ))
}

/// The waits of every Debugger's pods, shared by the pod watch that fills
/// it and the reconciles that read it. Clones share it.
#[derive(Clone, Default)]
pub struct Waits {
    inner: Arc<Mutex<Inner>>,
    wake: Arc<Notify>,
}

#[derive(Default)]
struct Inner {
    /// Per Debugger, its waiting pods by name; a Debugger without any has
    /// no entry.
    pods: HashMap<Key, BTreeMap<String, Wait>>,
    /// The pods of a re-list under way, which replace `pods` when it ends.
    listing: Option<HashMap<Key, BTreeMap<String, Wait>>>,
    /// Debuggers whose reasons changed since the trigger stream last took
    /// them.
    changed: BTreeSet<Key>,
}

impl Inner {
    fn reasons(&self, key: &Key) -> BTreeSet<String> {
        self.pods
            .get(key)
            .into_iter()
            .flat_map(|p| p.values().map(|w| w.reason.clone()))
            .collect()
    }

    /// Sets (or with None removes) one pod's wait; notes its Debugger
    /// when the reasons its pods wait on change.
    fn set(&mut self, key: Key, pod: &str, wait: Option<Wait>) {
        let before = self.reasons(&key);
        let pods = self.pods.entry(key.clone()).or_default();
        match wait {
            Some(w) => {
                let w = with_cause(w, pods.get(pod));
                pods.insert(pod.to_string(), w);
            }
            None => {
                pods.remove(pod);
            }
        }
        if pods.is_empty() {
            self.pods.remove(&key);
        }
        if self.reasons(&key) != before {
            self.changed.insert(key);
        }
    }
}

/// The Debugger of a pod and the pod's name; `None` for a pod of no
/// Debugger.
fn pod_key(pod: &Pod) -> Option<(Key, String)> {
    let debugger = pod.labels().get(keys::LABEL_DEBUGGER)?.clone();
    Some(((pod.namespace()?, debugger), pod.metadata.name.clone()?))
}

/// A pod's wait, none once it is being deleted.
fn current(pod: &Pod) -> Option<Wait> {
    pod.metadata
        .deletion_timestamp
        .is_none()
        .then(|| wait_of(pod))
        .flatten()
}

impl Waits {
    /// Takes in one event of the watch of the Debuggers' pods.
    pub fn observe(&self, event: &Event<Pod>) {
        let mut inner = self.inner.lock().expect("waits lock");
        match event {
            Event::Init => inner.listing = Some(HashMap::new()),
            Event::InitApply(pod) => {
                if let Some(((key, name), wait)) = pod_key(pod).zip(current(pod)) {
                    let old = inner.pods.get(&key).and_then(|p| p.get(&name)).cloned();
                    let listing = inner.listing.get_or_insert_with(HashMap::new);
                    listing
                        .entry(key)
                        .or_default()
                        .insert(name, with_cause(wait, old.as_ref()));
                }
            }
            Event::InitDone => {
                let listed = inner.listing.take().unwrap_or_default();
                let keys: BTreeSet<Key> = inner.pods.keys().chain(listed.keys()).cloned().collect();
                let before: Vec<BTreeSet<String>> = keys.iter().map(|k| inner.reasons(k)).collect();
                inner.pods = listed;
                for (key, before) in keys.into_iter().zip(before) {
                    if inner.reasons(&key) != before {
                        inner.changed.insert(key);
                    }
                }
            }
            Event::Apply(pod) => {
                if let Some((key, name)) = pod_key(pod) {
                    inner.set(key, &name, current(pod));
                }
            }
            Event::Delete(pod) => {
                if let Some((key, name)) = pod_key(pod) {
                    inner.set(key, &name, None);
                }
            }
        }
        if !inner.changed.is_empty() {
            self.wake.notify_one();
        }
    }

    /// What the pods of Debugger `ns`/`name` wait on ([`describe`]).
    pub fn describe(&self, ns: &str, name: &str) -> Option<String> {
        let inner = self.inner.lock().expect("waits lock");
        describe(inner.pods.get(&(ns.to_string(), name.to_string()))?)
    }

    /// How many pods wait, over all Debuggers.
    pub fn len(&self) -> usize {
        let inner = self.inner.lock().expect("waits lock");
        inner.pods.values().map(BTreeMap::len).sum()
    }

    /// Whether no pod waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The Debuggers whose pods' reasons changed, as they change: a
    /// Debugger noted several times before the stream is polled comes
    /// once.
    pub fn triggers(&self) -> impl Stream<Item = ObjectRef<Debugger>> + Send + 'static {
        let waits = self.clone();
        let batches = futures::stream::unfold(waits, |waits| async move {
            loop {
                let changed = std::mem::take(&mut waits.inner.lock().expect("waits lock").changed);
                if !changed.is_empty() {
                    let refs: Vec<ObjectRef<Debugger>> = changed
                        .into_iter()
                        .map(|(ns, name)| ObjectRef::new(&name).within(&ns))
                        .collect();
                    return Some((futures::stream::iter(refs), waits));
                }
                waits.wake.notified().await;
            }
        });
        futures::StreamExt::flatten(batches)
    }
}

#[cfg(test)]
#[path = "waiting_tests.rs"]
mod tests;
