//! Peer lists: which peers each workload pod's pinger probes, chosen here
//! and applied to the pod as the annotation `kubecombo.io/peers`
//! (docs/operator.md, "Peer lists").
//!
//! One watch of the pods labelled with a Debugger feeds a [`Mesh`] per
//! Debugger whose Pinger has `peers: true` and a `maxPeers` from 1 to
//! [`LIST_MAX`](combo_api::peers::LIST_MAX). A pod coming, going, turning
//! Ready or not rewrites the lists of about `maxPeers` pods; each pinger
//! reads only its own pod's list. Writes are server-side applies of that
//! one annotation (field manager `combo-operator/peers`), at most
//! [`WRITES_PER_TICK`](super::peer_writes::WRITES_PER_TICK) per [`TICK`](super::peer_writes::TICK), the newest list of a pod winning over
//! one still waiting.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::IpAddr;
use std::sync::Arc;

use combo_api::{keys, peers, Debugger, Pinger};
use k8s_openapi::api::core::v1::{Pod, PodStatus};
use kube::runtime::watcher::Event;
use kube::ResourceExt;

use crate::pinger::mesh::Mesh;

/// A Debugger: namespace and name.
pub type Key = (String, String);

/// What the operator knows of one pod of a Debugger.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    /// Its UID: a list is applied to this pod only, never to a new one of
    /// the same name.
    pub uid: String,
    /// Its addresses when it can be probed (Running, Ready, with an IP),
    /// each of `status.podIPs` once in their order; empty when it cannot.
    pub addrs: Vec<IpAddr>,
    /// Its annotation as last seen or written ("" when absent).
    pub current: String,
    /// The node it runs on ("" while unscheduled).
    pub node: String,
    /// Its node annotation as last seen or written ("" when absent).
    pub current_nodes: String,
    listing: u64,
}

/// One Debugger's pods, its mesh while it has lists, and the pods whose
/// list may need writing.
#[derive(Debug, Default)]
struct Group {
    pods: BTreeMap<String, Seen>,
    mesh: Option<Mesh>,
    dirty: BTreeSet<String>,
}

/// A list to apply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Write {
    /// The Debugger.
    pub key: Key,
    /// Pod name.
    pub pod: String,
    /// Pod UID, a precondition of the write.
    pub uid: String,
    /// The annotation value.
    pub value: String,
    /// The value of the node annotation beside it.
    pub nodes: String,
}

/// Every Debugger's pods and lists. Pure.
#[derive(Debug, Default)]
pub struct Groups {
    groups: HashMap<Key, Group>,
    /// Counts (re)lists of the watch; pods not seen in the latest are gone.
    listing: u64,
}

/// The Debugger and the pod's entry, or None for a pod that is no prober
/// (no Debugger label, no name, terminating).
pub fn seen(pod: &Pod) -> Option<(Key, String, Option<Seen>)> {
    let debugger = pod.labels().get(keys::LABEL_DEBUGGER)?.clone();
    let key = (pod.namespace()?, debugger);
    let name = pod.metadata.name.clone()?;
    if pod.metadata.deletion_timestamp.is_some() {
        return Some((key, name, None));
    }
    let status = pod.status.as_ref();
    let ready = crate::core::status::pod_ready(pod);
    let running = status.and_then(|s| s.phase.as_deref()) == Some("Running");
    let probed = status.filter(|_| ready && running);
    let addrs = probed.map(addresses).unwrap_or_default();
    let annotation = |key: &str| pod.annotations().get(key).cloned().unwrap_or_default();
    Some((
        key,
        name,
        Some(Seen {
            uid: pod.uid().unwrap_or_default(),
            addrs,
            current: annotation(keys::ANNOTATION_PEERS),
            node: pod
                .spec
                .as_ref()
                .and_then(|s| s.node_name.clone())
                .unwrap_or_default(),
            current_nodes: annotation(keys::ANNOTATION_PEER_NODES),
            listing: 0,
        }),
    ))
}

/// Every address of a pod, as the pinger reads them too.
fn addresses(status: &PodStatus) -> Vec<IpAddr> {
    peers::pod_addresses(
        status.pod_ips.iter().flatten().map(|p| p.ip.as_str()),
        status.pod_ip.as_deref(),
    )
}

impl Groups {
    /// Takes in one watch event.
    pub fn observe(&mut self, event: Event<Pod>) {
        match event {
            Event::Init => self.listing += 1,
            Event::InitApply(pod) | Event::Apply(pod) => self.apply(&pod),
            Event::Delete(pod) => {
                if let Some((key, name, _)) = seen(&pod) {
                    self.set(key, &name, None);
                }
            }
            Event::InitDone => self.forget_unlisted(),
        }
    }

    fn apply(&mut self, pod: &Pod) {
        if let Some((key, name, entry)) = seen(pod) {
            self.set(key, &name, entry);
        }
    }

    /// Sets (or with None removes) one pod.
    pub fn set(&mut self, key: Key, name: &str, entry: Option<Seen>) {
        let listing = self.listing;
        let group = self.groups.entry(key.clone()).or_default();
        let touched = match entry {
            Some(mut e) => {
                e.listing = listing;
                let same_addrs = group.pods.get(name).map(|old| &old.addrs) == Some(&e.addrs);
                let addrs = e.addrs.clone();
                // A pod seen for the first time or replaced under its name,
                // or someone else's write: check its list.
                let check = group.pods.get(name).is_none_or(|old| {
                    old.current != e.current
                        || old.current_nodes != e.current_nodes
                        || old.uid != e.uid
                });
                group.pods.insert(name.to_string(), e);
                let mut touched = match (&mut group.mesh, same_addrs) {
                    (Some(mesh), false) => mesh.set(name, addrs),
                    _ => BTreeSet::new(),
                };
                if check {
                    touched.insert(name.to_string());
                }
                touched
            }
            None => {
                group.pods.remove(name);
                group.dirty.remove(name);
                match &mut group.mesh {
                    Some(mesh) => mesh.remove(name),
                    None => BTreeSet::new(),
                }
            }
        };
        group.dirty.extend(touched);
        if group.pods.is_empty() {
            self.groups.remove(&key);
        }
    }

    /// Drops the pods the latest list did not hold.
    fn forget_unlisted(&mut self) {
        let listing = self.listing;
        let gone: Vec<(Key, String)> = self
            .groups
            .iter()
            .flat_map(|(k, g)| {
                g.pods
                    .iter()
                    .filter(|(_, s)| s.listing < listing)
                    .map(move |(n, _)| (k.clone(), n.clone()))
            })
            .collect();
        for (key, name) in gone {
            self.set(key, &name, None);
        }
    }

    /// Gives each Debugger the bounds `bound_of` says, (maxPeers,
    /// minProbers) or None for no lists; changed bounds choose every list
    /// again.
    pub fn bound_all(&mut self, bound_of: impl Fn(&Key) -> Option<(usize, usize)>) {
        for (key, group) in &mut self.groups {
            let want = bound_of(key);
            if want == group.mesh.as_ref().map(Mesh::bounds) {
                continue;
            }
            group.mesh = want.map(|(max, min)| {
                let pods = group
                    .pods
                    .iter()
                    .map(|(n, s)| (n.as_str(), s.addrs.clone()));
                Mesh::with_pods(max, min, pods)
            });
            group.dirty.extend(group.pods.keys().cloned());
        }
    }

    /// Up to `limit` lists that differ from what their pods carry, taken
    /// off the waiting set. A Debugger without lists clears a list left
    /// from before.
    pub fn due(&mut self, limit: usize) -> Vec<Write> {
        let mut out = Vec::new();
        for (key, group) in &mut self.groups {
            while out.len() < limit {
                let Some(name) = group.dirty.pop_first() else {
                    break;
                };
                let Some(seen) = group.pods.get(&name) else {
                    continue;
                };
                let want = match &group.mesh {
                    Some(mesh) => mesh.list(&name).unwrap_or_default(),
                    None => String::new(),
                };
                let want_nodes = match &group.mesh {
                    Some(mesh) => peers::format_nodes(
                        mesh.peers_of(&name)
                            .into_iter()
                            .flatten()
                            .filter_map(|peer| group.pods.get(peer))
                            .flat_map(|p| p.addrs.iter().map(|ip| (*ip, p.node.as_str()))),
                    ),
                    None => String::new(),
                };
                if want != seen.current || want_nodes != seen.current_nodes {
                    out.push(Write {
                        key: key.clone(),
                        pod: name,
                        uid: seen.uid.clone(),
                        value: want,
                        nodes: want_nodes,
                    });
                }
            }
        }
        out
    }

    /// Records the outcome of a write: the pod now carries `value`, or on
    /// failure its list waits for the next round.
    pub fn written(&mut self, w: &Write, ok: bool) {
        let Some(group) = self.groups.get_mut(&w.key) else {
            return;
        };
        match group.pods.get_mut(&w.pod) {
            Some(seen) if seen.uid == w.uid => {
                if ok {
                    seen.current = w.value.clone();
                    seen.current_nodes = w.nodes.clone();
                } else {
                    group.dirty.insert(w.pod.clone());
                }
            }
            _ => {}
        }
    }
}

/// The `maxPeers` and `minProbers` of a Debugger's lists: Some when its
/// pinger is on and its Pinger asks for peers with a bound the operator
/// writes lists for.
pub fn bound(
    debugger: Option<&Debugger>,
    pinger: impl Fn(&str) -> Option<Arc<Pinger>>,
) -> Option<(usize, usize)> {
    let p = pinger(debugger?.spec.followed_pinger()?)?;
    let (max, min) = (p.spec.max_peers as usize, p.spec.min_probers as usize);
    peers::listed(p.spec.peers, p.spec.max_peers).then_some((max, min))
}

#[cfg(test)]
#[path = "peer_lists_tests.rs"]
mod tests;
