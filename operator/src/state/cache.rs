//! Caches: what a reconcile reads, kept by the watches that also trigger
//! reconciles, so a reconcile sends the API server no read at all. What the
//! operator wrote itself stands in for what a watch shows until the watch
//! catches up (see [`crate::state::own_writes`]).

use std::collections::BTreeSet;
use std::sync::Arc;

use combo_api::{Debugger, Pinger};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::api::rbac::v1::Role;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use kube::Resource;

use combo_api::keys::FIELD_MANAGER_OPERATOR;

use crate::reports::store::Reports;
use crate::state::own_writes::{key_of, Key, Recent};
use crate::watch::readiness::{Change, Index, Readiness};

/// kubectl's annotation with the last applied configuration.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// A summary ConfigMap reduced to what the operator reads: its metadata
/// (owner, spec hash). Its data can be large (one value per node), so it
/// is not kept.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    /// The ConfigMap's metadata, without managedFields.
    pub metadata: ObjectMeta,
    /// Whether a field manager other than the operator's apply owns part of
    /// it (runners of an earlier version wrote their own keys, or it was
    /// made by hand): the next write takes every key over.
    pub foreign_managers: bool,
}

impl Summary {
    /// Reduces `cm`. Pure.
    pub fn of(cm: &ConfigMap) -> Self {
        Self::of_meta(&cm.metadata)
    }

    /// Reduces a ConfigMap's metadata (all a metadata watch sends). Pure.
    pub fn of_meta(meta: &ObjectMeta) -> Self {
        let mut metadata = meta.clone();
        let foreign_managers = metadata.managed_fields.iter().flatten().any(|m| {
            m.manager.as_deref() != Some(FIELD_MANAGER_OPERATOR)
                || m.operation.as_deref() != Some("Apply")
        });
        metadata.managed_fields = None;
        Summary {
            metadata,
            foreign_managers,
        }
    }
}

/// The ConfigMaps the watch has seen, reduced to their metadata: the
/// summaries the operator writes, the scripts ConfigMaps Debuggers mount,
/// and every other, so that a name a Debugger would write is known to be
/// taken (docs/operator.md, "What the operator writes").
#[derive(Clone, Default)]
pub struct ConfigMaps {
    by_name: Index<Key, Summary>,
    /// The names of the ConfigMaps each controller (by UID) controls: the
    /// summaries a Debugger wrote, under its current summary name and any
    /// former one.
    by_controller: Index<String, BTreeSet<String>>,
}

/// The UID of the controller of `meta`, if it has one.
fn controller_uid(meta: &ObjectMeta) -> Option<&str> {
    meta.owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
        .map(|o| o.uid.as_str())
}

impl ConfigMaps {
    /// Applies one watch event (of whole ConfigMaps or of their metadata).
    pub fn observe<K: Resource>(&self, event: &watcher::Event<K>) {
        self.by_name.observe(
            event,
            |cm| key_of(cm.meta()),
            |cm| Summary::of_meta(cm.meta()),
        );
        self.by_controller.observe_with(event, |map, change| {
            let (cm, applied) = match change {
                Change::Apply(cm) => (cm, true),
                Change::Delete(cm) => (cm, false),
            };
            let (Some(uid), Some(name)) = (controller_uid(cm.meta()), cm.meta().name.as_ref())
            else {
                return;
            };
            if applied {
                map.entry(uid.to_string()).or_default().insert(name.clone());
            } else if let Some(names) = map.get_mut(uid) {
                names.remove(name);
                if names.is_empty() {
                    map.remove(uid);
                }
            }
        });
    }

    /// The ConfigMap `name` in `ns`, reduced, if the watch has seen it.
    pub fn get(&self, ns: &str, name: &str) -> Option<Summary> {
        self.by_name.get(&(ns.to_string(), name.to_string()))
    }

    /// The ConfigMaps of `ns` whose controller has UID `uid`, as far as
    /// the watch has seen (each checked against what it holds now).
    pub fn controlled_by(&self, ns: &str, uid: &str) -> Vec<Summary> {
        let names = self.by_controller.get(uid).unwrap_or_default();
        names
            .iter()
            .filter_map(|name| self.get(ns, name))
            .filter(|s| controller_uid(&s.metadata) == Some(uid))
            .collect()
    }

    /// Whether the watch has listed once.
    pub fn ready(&self) -> &Readiness {
        self.by_name.ready()
    }
}

/// The names and UIDs of the objects of one kind the watch has seen (the
/// workload ServiceAccounts and RoleBindings, whose content the operator
/// never reads): whether one of them is in place, and which one. It holds
/// what exists, so it shrinks with every deletion and with every re-list.
/// Clones share it.
#[derive(Clone, Default)]
pub struct Names(Index<Key, Option<String>>);

impl Names {
    /// Applies one watch event.
    pub fn observe<K: Resource>(&self, event: &watcher::Event<K>) {
        self.0
            .observe(event, |o| key_of(o.meta()), |o| o.meta().uid.clone());
    }

    /// Notes `ns`/`name` (with its UID, if the write returned one) as
    /// written just now, before the watch shows it.
    pub fn note(&self, ns: &str, name: &str, uid: Option<String>) {
        self.0.insert((ns.to_string(), name.to_string()), uid);
    }

    /// Whether `ns`/`name` exists, as far as the watch and the operator's
    /// own writes tell.
    pub fn contains(&self, ns: &str, name: &str) -> bool {
        self.get(ns, name).is_some()
    }

    /// `Some(uid)` when `ns`/`name` exists (the UID, if known), else `None`.
    pub fn get(&self, ns: &str, name: &str) -> Option<Option<String>> {
        self.0.get(&(ns.to_string(), name.to_string()))
    }

    /// How many names are kept.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether the watch has listed once.
    pub fn ready(&self) -> &Readiness {
        self.0.ready()
    }
}

/// Whether the watches that keep whole objects (in a [`Store`]) have
/// listed once.
#[derive(Clone, Default)]
pub struct Listed {
    /// The DaemonSet watch.
    pub daemonsets: Readiness,
    /// The Pod watch.
    pub pods: Readiness,
    /// The Pinger watch.
    pub pingers: Readiness,
    /// The Role watch.
    pub roles: Readiness,
}

/// Every cache a reconcile reads.
pub struct Caches {
    /// DaemonSets labelled as kube-combo's, without managedFields.
    pub daemonsets: Store<DaemonSet>,
    /// Pods created directly by Debuggers (not by their DaemonSets).
    pub pods: Store<Pod>,
    /// Pingers.
    pub pingers: Store<Pinger>,
    /// The workload Roles (see [`crate::workload::rbac`]), metadata only.
    pub roles: Store<Role>,
    /// Every ConfigMap (summaries, scripts, the users' own), metadata only.
    pub config_maps: ConfigMaps,
    /// DebuggerReports by Debugger.
    pub reports: Reports,
    /// DaemonSets written, until the watch shows them.
    pub recent_daemonsets: Recent<Arc<DaemonSet>>,
    /// Pods written, until the watch shows them.
    pub recent_pods: Recent<Arc<Pod>>,
    /// Summary ConfigMaps written, until the watch shows them.
    pub recent_summaries: Recent<Summary>,
    /// Workload Roles written, until the watch shows them.
    pub recent_roles: Recent<Arc<Role>>,
    /// The workload ServiceAccounts that exist, by name.
    pub accounts: Names,
    /// The workload RoleBindings that exist, by name.
    pub bindings: Names,
    /// Whether the DaemonSet, Pod, Pinger and Role watches have listed once.
    pub listed: Listed,
    /// Why the Debuggers' pods wait, from the watch of their pods.
    pub waiting: crate::watch::waiting::Waits,
    /// Why their DaemonSets' pods are refused, from the DaemonSet
    /// controller's Events.
    pub refusals: crate::watch::refusals::Refusals,
}

impl Caches {
    /// Caches around the given stores.
    /// Empty caches around the given stores; the watches fill them, set
    /// `listed` and feed deletions to the `recent_*` records.
    pub fn new(
        daemonsets: Store<DaemonSet>,
        pods: Store<Pod>,
        pingers: Store<Pinger>,
        roles: Store<Role>,
    ) -> Self {
        Caches {
            daemonsets,
            pods,
            pingers,
            roles,
            config_maps: Default::default(),
            reports: Default::default(),
            recent_daemonsets: Default::default(),
            recent_pods: Default::default(),
            recent_summaries: Default::default(),
            recent_roles: Default::default(),
            accounts: Default::default(),
            bindings: Default::default(),
            listed: Default::default(),
            waiting: Default::default(),
            refusals: Default::default(),
        }
    }

    /// Waits until every watch has listed once. Reading before that would
    /// take an object that exists for a missing one.
    pub async fn wait_until_ready(&self) {
        futures::join!(
            self.listed.daemonsets.wait(),
            self.listed.pods.wait(),
            self.listed.pingers.wait(),
            self.listed.roles.wait(),
            self.config_maps.ready().wait(),
            self.reports.ready().wait(),
            self.accounts.ready().wait(),
            self.bindings.ready().wait(),
        );
    }
}

/// Looks `name` up in `store` within `ns`.
pub fn lookup<K>(store: &Store<K>, ns: &str, name: &str) -> Option<Arc<K>>
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    store.get(&ObjectRef::new(name).within(ns))
}

/// What a cached object keeps: only what reconciles read, since the caches
/// hold an object per Debugger.
pub trait Slim {
    /// Drops the rest.
    fn slim(&mut self);
}

impl Slim for DaemonSet {
    /// Metadata (owner, spec hash) and status (pod counts); no spec and no
    /// managedFields, which are most of its size.
    fn slim(&mut self) {
        self.metadata.managed_fields = None;
        self.spec = None;
    }
}

impl Slim for Pod {
    /// Metadata (owner, spec hash, deletion) and status (phase, readiness).
    fn slim(&mut self) {
        self.metadata.managed_fields = None;
        self.spec = None;
    }
}

impl Slim for Role {
    /// Metadata (owner, spec hash) without managedFields; the rules are
    /// rendered, and the hash stands for them.
    fn slim(&mut self) {
        self.metadata.managed_fields = None;
        self.rules = None;
    }
}

impl Slim for Debugger {
    /// Everything but managedFields and kubectl's copy of the last applied
    /// configuration (as large as the spec again).
    fn slim(&mut self) {
        self.metadata.managed_fields = None;
        if let Some(a) = self.metadata.annotations.as_mut() {
            a.remove(LAST_APPLIED);
        }
    }
}

impl Slim for Pinger {
    /// Everything but managedFields: the spec is rendered into the workload.
    fn slim(&mut self) {
        self.metadata.managed_fields = None;
    }
}

/// [`Slim::slim`] as a function, for `WatchStreamExt::modify`.
pub fn slim<K: Slim>(obj: &mut K) {
    obj.slim();
}

#[cfg(test)]
#[path = "cache_tests.rs"]
mod tests;
