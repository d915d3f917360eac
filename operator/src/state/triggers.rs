//! Triggers: the watches that fill the caches a Debugger's reconcile reads
//! and tell which Debuggers to reconcile when something changes: its
//! workload, its summary and scripts ConfigMaps, its reports, the Pinger it
//! uses, its workload RBAC (docs/operator.md, "What triggers a reconcile").
//! Each records its health in [`Watches`].

use std::sync::Arc;

use combo_api::keys;
use combo_api::{Debugger, DebuggerReport, Pinger};
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Pod, ServiceAccount};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::core::PartialObjectMeta;
use kube::runtime::controller::{Config as ControllerConfig, Controller};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{predicates, reflector, watcher, WatchStreamExt};
use kube::{Api, Client, Resource, ResourceExt};

use crate::metrics::registry::Metrics;
use crate::reports::store;
use crate::state::cache::{self, Caches, Slim};
use crate::watch::health::Watches;
use crate::watch::readiness::Readiness;

/// A watch's stream of the objects it touched.
type Touched<K> = BoxStream<'static, Result<K, watcher::Error>>;

/// The watches of what Debuggers own or use, each filling its cache.
pub struct Triggers {
    daemonsets: Touched<DaemonSet>,
    pods: Touched<Pod>,
    config_maps: Touched<PartialObjectMeta<ConfigMap>>,
    /// What the ConfigMap watch has seen, to tell a deletion apart.
    config_map_cache: cache::ConfigMaps,
    reports: Touched<DebuggerReport>,
    pingers: Touched<Pinger>,
    roles: Touched<Role>,
    accounts: Touched<PartialObjectMeta<ServiceAccount>>,
    bindings: Touched<PartialObjectMeta<RoleBinding>>,
    refused_pods: Touched<Event>,
}

/// `K` in `ns`, or in every namespace.
pub fn api<K>(client: &Client, ns: &Option<String>) -> Api<K>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
{
    match ns {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    }
}

/// The Debugger controller over the Debuggers of `ns`: only spec changes (a
/// new generation) and run-now requests trigger a Debugger, since its
/// status is written by the reconcile and reacting to that write would
/// only read everything again to find nothing to do. Its store lists every Debugger; a Debugger gone
/// from it loses its result metrics.
pub fn debuggers(
    client: &Client,
    ns: &Option<String>,
    watches: &Watches,
    metrics: &Arc<Metrics>,
) -> (Controller<Debugger>, Store<Debugger>) {
    let (store, writer) = reflector::store();
    let metrics = metrics.clone();
    let health = watches.clone();
    let stream = watcher(api::<Debugger>(client, ns), watcher::Config::default())
        .default_backoff()
        .inspect(move |e| health.observe("Debugger", e))
        .modify(cache::slim)
        .reflect(writer)
        .inspect(move |e| {
            if let Ok(e) = e {
                metrics.results().observe(e);
            }
        })
        .applied_objects()
        .predicate_filter(generation_or_run_now, Default::default());
    let controller = Controller::for_stream(stream, store.clone())
        .with_config(ControllerConfig::default().concurrency(32));
    (controller, store)
}

/// What triggers a Debugger: its generation and its run-now request, which
/// the operator answers (docs/operator.md, "Run-now requests").
pub fn generation_or_run_now(dbg: &Debugger) -> Option<u64> {
    let generation = predicates::generation(dbg)?;
    let asked = dbg.annotations().get(keys::ANNOTATION_RUN_NOW);
    let asked = asked.map_or("", String::as_str);
    Some(combo_api::hash::fnv1a(&[
        &generation.to_le_bytes(),
        asked.as_bytes(),
    ]))
}

/// Labels of what the operator made for Debuggers.
fn owned() -> watcher::Config {
    watcher::Config::default().labels(&format!("{}={}", keys::LABEL_NAME, keys::LABEL_NAME_VALUE))
}

/// Empty caches and the watches that fill them. (The controller keeps
/// polling them while all its reconciles run, so reconciles can wait for
/// the caches.)
pub fn watch(client: &Client, ns: &Option<String>, watches: &Watches) -> (Caches, Triggers) {
    let (caches, stored) = stored(client, ns, watches);
    // Every ConfigMap, metadata only: a summary name the user's own
    // ConfigMap already holds is refused, and a scripts ConfigMap that
    // comes or goes changes its Debuggers' status
    // (docs/operator.md, "What the operator writes").
    let (summaries, recent) = (caches.config_maps.clone(), caches.recent_summaries.clone());
    let config_maps = observed_watch(
        (watches, "ConfigMap"),
        api::<PartialObjectMeta<ConfigMap>>(client, ns),
        watcher::Config::default(),
        move |e| {
            summaries.observe(e);
            recent.observe(e);
        },
    );
    let index = caches.reports.clone();
    let reports = observed_watch(
        (watches, "DebuggerReport"),
        api::<DebuggerReport>(client, ns),
        watcher::Config::default(),
        move |e| index.observe(e),
    );
    // The workload ServiceAccounts and RoleBindings: names only (metadata
    // watches), so that one deleted by hand is written again.
    let names = caches.accounts.clone();
    let accounts = observed_watch(
        (watches, "ServiceAccount"),
        api::<PartialObjectMeta<ServiceAccount>>(client, ns),
        owned(),
        move |e| names.observe(e),
    );
    let names = caches.bindings.clone();
    let bindings = observed_watch(
        (watches, "RoleBinding"),
        api::<PartialObjectMeta<RoleBinding>>(client, ns),
        owned(),
        move |e| names.observe(e),
    );
    // The DaemonSet controller's failed pod creations, and nothing else
    // (docs/operator.md, "Refused workloads").
    let refusals = caches.refusals.clone();
    let refused_pods = observed_watch(
        (watches, "Event"),
        api::<Event>(client, ns),
        watcher::Config::default().fields(&crate::watch::refusals::field_selector()),
        move |e| refusals.observe_event(e),
    );
    let (daemonsets, pods, pingers, roles) = stored;
    let triggers = Triggers {
        daemonsets,
        pods,
        config_maps,
        config_map_cache: caches.config_maps.clone(),
        reports,
        pingers,
        roles,
        accounts,
        bindings,
        refused_pods,
    };
    (caches, triggers)
}

/// The watches that keep whole objects in the caches' stores: the
/// DaemonSets and Pods the operator made, the Pingers, the workload Roles.
#[allow(
    clippy::type_complexity,
    reason = "four watches, one per kind, handed on in order"
)]
fn stored(
    client: &Client,
    ns: &Option<String>,
    watches: &Watches,
) -> (
    Caches,
    (
        Touched<DaemonSet>,
        Touched<Pod>,
        Touched<Pinger>,
        Touched<Role>,
    ),
) {
    // Pods a Debugger created itself; the pods of its DaemonSet carry the
    // DaemonSet controller's pod-template-generation label and are left out.
    let direct_pods = watcher::Config::default().labels(&format!(
        "{}={},!pod-template-generation",
        keys::LABEL_NAME,
        keys::LABEL_NAME_VALUE
    ));
    let (ds_store, ds_writer) = reflector::store();
    let (pod_store, pod_writer) = reflector::store();
    let (pinger_store, pinger_writer) = reflector::store();
    let (role_store, role_writer) = reflector::store();
    let caches = Caches::new(ds_store, pod_store, pinger_store, role_store);
    let (recent, refusals) = (caches.recent_daemonsets.clone(), caches.refusals.clone());
    let daemonsets = cached_watch(
        (watches, "DaemonSet"),
        api::<DaemonSet>(client, ns),
        owned(),
        ds_writer,
        caches.listed.daemonsets.clone(),
        move |e| {
            recent.observe(e);
            refusals.observe_daemonset(e, chrono::Utc::now());
        },
    );
    let recent = caches.recent_pods.clone();
    let pods = cached_watch(
        (watches, "Pod"),
        api::<Pod>(client, ns),
        direct_pods,
        pod_writer,
        caches.listed.pods.clone(),
        move |e| recent.observe(e),
    );
    let pingers = cached_watch(
        (watches, "Pinger"),
        api::<Pinger>(client, ns),
        watcher::Config::default(),
        pinger_writer,
        caches.listed.pingers.clone(),
        |_| (),
    );
    let recent = caches.recent_roles.clone();
    let roles = cached_watch(
        (watches, "Role"),
        api::<Role>(client, ns),
        owned(),
        role_writer,
        caches.listed.roles.clone(),
        move |e| recent.observe(e),
    );
    (caches, (daemonsets, pods, pingers, roles))
}

impl Triggers {
    /// `controller` (over the Debuggers of `store`) driven by these
    /// watches as well: owned objects requeue their owner, a ConfigMap the
    /// Debuggers that name it, a report its Debugger, a Pinger the
    /// Debuggers that use it.
    pub fn drive(
        self,
        controller: Controller<Debugger>,
        store: &Store<Debugger>,
    ) -> Controller<Debugger> {
        let (referrers, users) = (store.clone(), store.clone());
        let config_maps = self.config_map_cache;
        controller
            .owns_stream(self.daemonsets)
            .owns_stream(self.pods)
            .watches_stream(self.config_maps, move |cm| {
                // The cache has applied this event already: a ConfigMap it
                // no longer holds was just deleted.
                let gone = config_maps
                    .get(&cm.namespace().unwrap_or_default(), &cm.name_any())
                    .is_none();
                config_map_users(&referrers.state(), &cm, gone)
            })
            .owns_stream(self.roles)
            .owns_stream(self.accounts)
            .owns_stream(self.bindings)
            .watches_stream(self.reports, |r| store::debugger_of(&r))
            .watches_stream(self.pingers, move |pinger| {
                users_of(&users.state(), &pinger)
            })
            // A DaemonSet is named after its Debugger.
            .watches_stream(self.refused_pods, |e| {
                let object = e.involved_object;
                Some(ObjectRef::new(&object.name?).within(&object.namespace?))
            })
    }
}

/// A watch of `api` (objects of `kind`, its health kept in `watches`)
/// whose events go to `observe` and which yields the objects it touched.
fn observed_watch<K>(
    (watches, kind): (&Watches, &'static str),
    api: Api<K>,
    config: watcher::Config,
    observe: impl Fn(&watcher::Event<K>) + Send + 'static,
) -> Touched<K>
where
    K: Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + 'static,
{
    let health = watches.clone();
    watcher(api, config)
        .default_backoff()
        .inspect(move |e| health.observe(kind, e))
        .inspect_ok(observe)
        .touched_objects()
        .boxed()
}

/// A watch of `api` (objects of `kind`, its health kept in `watches`) that
/// keeps its objects, slimmed, in `writer`'s store,
/// marks `listed` once it has listed, passes every event to `also`, and
/// yields the objects it touched (reconcile triggers).
fn cached_watch<K>(
    (watches, kind): (&Watches, &'static str),
    api: Api<K>,
    config: watcher::Config,
    writer: reflector::store::Writer<K>,
    listed: Readiness,
    also: impl Fn(&watcher::Event<K>) + Send + 'static,
) -> Touched<K>
where
    K: Resource<DynamicType = ()>
        + Slim
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let health = watches.clone();
    watcher(api, config)
        .default_backoff()
        .inspect(move |e| health.observe(kind, e))
        .modify(cache::slim)
        .reflect(writer)
        .inspect_ok(move |e| {
            listed.observe(e);
            also(e);
        })
        .touched_objects()
        .boxed()
}

/// The Debuggers a ConfigMap matters to: its controller, when a Debugger
/// owns it (a summary), else those that name it as their scripts or
/// summary ConfigMap. A Debugger's summary that is `gone` (deleted) also
/// matters to the others that name it as their summary: they waited for
/// the name, and take it now
/// (docs/operator.md, "What the operator writes"). Only a deletion looks through the Debuggers, so the summary
/// writes of a run cost no scan. Pure.
pub fn config_map_users(
    debuggers: &[Arc<Debugger>],
    cm: &PartialObjectMeta<ConfigMap>,
    gone: bool,
) -> Vec<ObjectRef<Debugger>> {
    let ns = cm.namespace();
    let owner = cm.owner_references().iter().find(|o| {
        o.controller == Some(true)
            && o.kind == "Debugger"
            && o.api_version.split('/').next() == Some(keys::GROUP)
    });
    let name = cm.name_any();
    let naming = |summary_only: bool| {
        debuggers
            .iter()
            .filter(|d| d.namespace() == ns)
            .filter(move |d| {
                (!summary_only && d.spec.enable_config_map && d.spec.config_map == name)
                    || d.spec.summary_name(&d.name_any()) == name
            })
            .map(|d| ObjectRef::from_obj(d.as_ref()))
    };
    match owner {
        Some(o) => {
            let owner = ObjectRef::new(&o.name).within(ns.as_deref().unwrap_or_default());
            let mut users = vec![owner.clone()];
            if gone {
                users.extend(naming(true).filter(|d| *d != owner));
            }
            users
        }
        None => naming(false).collect(),
    }
}

/// The Debuggers that use `pinger`. Pure.
pub fn users_of(debuggers: &[Arc<Debugger>], pinger: &Pinger) -> Vec<ObjectRef<Debugger>> {
    debuggers
        .iter()
        .filter(|d| {
            d.spec.enable_pinger
                && d.spec.pinger == pinger.name_any()
                && d.namespace() == pinger.namespace()
        })
        .map(|d| ObjectRef::from_obj(d.as_ref()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use combo_testkit::fixtures::{debugger, pinger};

    fn summary(ns: &str, name: &str, owner: Option<&Debugger>) -> PartialObjectMeta<ConfigMap> {
        let mut cm = PartialObjectMeta::<ConfigMap>::default();
        cm.metadata.name = Some(name.into());
        cm.metadata.namespace = Some(ns.into());
        cm.metadata.owner_references = owner.map(|o| {
            let mut o = o.clone();
            o.metadata.uid = Some("uid".into());
            vec![o.controller_owner_ref(&()).expect("a named Debugger")]
        });
        cm
    }

    #[test]
    fn a_deleted_summary_wakes_the_debuggers_that_wait_for_its_name() {
        let named = |ns: &str, name: &str, summary: &str| {
            Arc::new(debugger(ns, name).summary_config_map(summary).build())
        };
        let all = vec![
            named("ops", "first", "shared"),
            named("ops", "second", "shared"),
            named("dev", "third", "shared"),
            named("ops", "other", "mine"),
        ];
        let cm = summary("ops", "shared", Some(&all[0]));
        let names = |gone| -> Vec<String> {
            config_map_users(&all, &cm, gone)
                .into_iter()
                .map(|r| r.name)
                .collect()
        };
        assert_eq!(names(false), ["first"], "a write wakes its owner only");
        assert_eq!(
            names(true),
            ["first", "second"],
            "a deletion also wakes the one waiting for the name"
        );
        let by_hand = summary("ops", "shared", None);
        let users: Vec<String> = config_map_users(&all, &by_hand, false)
            .into_iter()
            .map(|r| r.name)
            .collect();
        assert_eq!(users, ["first", "second"]);
    }

    #[test]
    fn a_pinger_change_requeues_only_the_debuggers_that_use_it() {
        let all = vec![
            Arc::new(debugger("ops", "a").pinger("mesh").build()),
            Arc::new(debugger("ops", "b").pinger("other").build()),
            Arc::new(debugger("dev", "c").pinger("mesh").build()),
            Arc::new(debugger("ops", "d").build()),
        ];
        let p = pinger("ops", "mesh").build();
        let users: Vec<String> = users_of(&all, &p).into_iter().map(|r| r.name).collect();
        assert_eq!(users, ["a"]);
    }
}
