//! The controller: watches Debuggers, the Pingers they use and the objects
//! they own, fills the caches the reconciles read, and runs [`reconcile`]
//! for each Debugger, with [`retry`] deciding what a failed one does next.
//! Beside it, for as long as it runs, [`peer_lists`](crate::peer_lists).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use combo_api::keys;
use combo_api::{Debugger, DebuggerReport, Pinger};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, ServiceAccount};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::core::PartialObjectMeta;
use kube::runtime::controller::{Config as ControllerConfig, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{predicates, reflector, watcher, WatchStreamExt};
use kube::{Api, Client, Resource, ResourceExt};
use tracing::{info, warn};

use crate::cache::{self, Caches, Slim};
use crate::cli::RunArgs;
use crate::context::Context;
use crate::http::{self, Health};
use crate::leader::{self, Elector};
use crate::metrics::Metrics;
use crate::pinger_status::{self, PingerContext};
use crate::readiness::Readiness;
use crate::render::Images;
use crate::watches::Watches;
use crate::{rbac, reconcile, reports, retry};

/// Errors that stop the operator.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// No usable kubeconfig or in-cluster config.
    #[error("connecting to the API server")]
    Connect(#[source] kube::Error),
    /// `--metrics-addr` could not be served.
    #[error("serving {0}")]
    Http(std::net::SocketAddr, #[source] std::io::Error),
    /// Leader election failed or the Lease was lost.
    #[error(transparent)]
    Leader(#[from] leader::Error),
}

/// Runs the operator until SIGTERM/SIGINT. With `--leader-elect`, a
/// replica that loses the Lease stops its controller and stands by for the
/// Lease again, in the same process (docs/operator.md, "Leader election").
pub async fn run(args: RunArgs) -> Result<(), RunError> {
    let client = Client::try_default().await.map_err(RunError::Connect)?;
    let metrics = Arc::new(Metrics::default());
    let watches = Watches::new(metrics.clone());
    let health = Arc::new(Health {
        metrics: metrics.clone(),
        ready: false.into(),
        watches: watches.clone(),
    });
    let listener = tokio::spawn(http::serve(args.metrics_addr, health.clone()));
    client
        .apiserver_version()
        .await
        .map_err(RunError::Connect)?;
    health.ready.store(true, Ordering::Relaxed);

    let identity = std::env::var("POD_NAME")
        .unwrap_or_else(|_| format!("combo-operator-{}", std::process::id()));
    let elector = args.leader_elect.then(|| {
        Elector::new(
            client.clone(),
            &args.leader_elect_namespace,
            &args.leader_elect_lease,
            &identity,
        )
    });
    let mut listener = listener;
    loop {
        if let Some(e) = &elector {
            tokio::select! {
                r = e.acquire() => r?,
                _ = combo_api::signal::shutdown() => return Ok(()),
            }
        }
        // Dropping this future (the Lease lost) stops everything the
        // controller runs: no write after leadership is gone.
        let controller = controller(
            client.clone(),
            &args,
            metrics.clone(),
            watches.clone(),
            identity.clone(),
        );
        // The controller stops by itself on the signal once its reconciles
        // end; one that waits for a watch that cannot list would not, and
        // the process must still go (docs/operator.md, "Stopping").
        let overdue = async {
            combo_api::signal::shutdown().await;
            tokio::time::sleep(STOP_GRACE).await;
        };
        tokio::select! {
            () = controller => {
                info!("controller stopped");
                release(elector.as_ref()).await;
                return Ok(());
            }
            () = overdue => {
                warn!(grace_ms = STOP_GRACE.as_millis() as u64, "the controller did not stop within its grace after the signal; exiting");
                release(elector.as_ref()).await;
                return Ok(());
            }
            lost = async {
                match &elector {
                    Some(e) => e.hold().await,
                    None => std::future::pending().await,
                }
            } => {
                warn!(error = %lost, "leadership lost: the controller stopped; standing by for the Lease");
            }
            served = &mut listener => {
                if let Ok(Err(e)) = served {
                    return Err(RunError::Http(args.metrics_addr, e));
                }
                return Ok(());
            }
        }
    }
}

/// How long the controller may take to stop after SIGTERM before the
/// process exits anyway: within 2 s in all, with the Lease released.
pub const STOP_GRACE: std::time::Duration = std::time::Duration::from_millis(1200);

/// Releases the Lease, if there is one, waiting at most 500 ms for the API
/// server: a stopping replica must not hang on it.
async fn release(elector: Option<&Elector>) {
    if let Some(e) = elector {
        if tokio::time::timeout(std::time::Duration::from_millis(500), e.release())
            .await
            .is_err()
        {
            warn!("releasing the Lease took too long; it expires by itself");
        }
    }
}

/// Builds and runs the controller until a shutdown signal.
async fn controller(
    client: Client,
    args: &RunArgs,
    metrics: Arc<Metrics>,
    watches: Watches,
    identity: String,
) {
    fn api<K>(client: &Client, ns: &Option<String>) -> Api<K>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
    {
        match ns {
            Some(ns) => Api::namespaced(client.clone(), ns),
            None => Api::all(client.clone()),
        }
    }
    let ns = &args.namespace;
    let owned = watcher::Config::default().labels(&format!(
        "{}={}",
        keys::LABEL_NAME,
        keys::LABEL_NAME_VALUE
    ));
    // Pods a Debugger created itself; the pods of its DaemonSet carry the
    // DaemonSet controller's pod-template-generation label and are left out.
    let direct_pods = watcher::Config::default().labels(&format!(
        "{}={},!pod-template-generation",
        keys::LABEL_NAME,
        keys::LABEL_NAME_VALUE
    ));
    // Only spec changes (a new generation) of a Debugger trigger it: its
    // status is written here, and reacting to that write would only read
    // everything again to find nothing to do.
    let (store, writer) = reflector::store();
    let health = watches.clone();
    let debuggers = watcher(api::<Debugger>(&client, ns), watcher::Config::default())
        .default_backoff()
        .inspect(move |e| health.observe("Debugger", e))
        .modify(cache::slim)
        .reflect(writer)
        .applied_objects()
        .predicate_filter(predicates::generation, Default::default());
    let main = Controller::for_stream(debuggers, store.clone())
        .with_config(ControllerConfig::default().concurrency(32));
    // The watches of owned objects and Pingers trigger reconciles and fill
    // the caches the reconciles read. (The controller keeps polling them
    // while all its reconciles run, so reconciles can wait for the caches.)
    let (ds_store, ds_writer) = reflector::store();
    let (pod_store, pod_writer) = reflector::store();
    let (pinger_store, pinger_writer) = reflector::store();
    let (role_store, role_writer) = reflector::store();
    let peer_lists = crate::peer_lists::run(
        client.clone(),
        api::<Pod>(&client, ns),
        store.clone(),
        pinger_store.clone(),
        metrics.clone(),
    );
    let caches = Caches::new(ds_store, pod_store, pinger_store, role_store);
    let recent = caches.recent_daemonsets.clone();
    let daemonsets = cached_watch(
        (&watches, "DaemonSet"),
        api::<DaemonSet>(&client, ns),
        owned.clone(),
        ds_writer,
        caches.listed[0].clone(),
        move |e| recent.observe(e),
    );
    let recent = caches.recent_pods.clone();
    let pods = cached_watch(
        (&watches, "Pod"),
        api::<Pod>(&client, ns),
        direct_pods,
        pod_writer,
        caches.listed[1].clone(),
        move |e| recent.observe(e),
    );
    // Every ConfigMap, metadata only: a summary name the user's own
    // ConfigMap already holds is refused, and a scripts ConfigMap that
    // comes or goes changes its Debuggers' status
    // (docs/operator.md, "What the operator writes").
    let (summaries, recent) = (caches.config_maps.clone(), caches.recent_summaries.clone());
    let health = watches.clone();
    let config_maps = watcher(
        api::<PartialObjectMeta<ConfigMap>>(&client, ns),
        watcher::Config::default(),
    )
    .default_backoff()
    .inspect(move |e| health.observe("ConfigMap", e))
    .inspect_ok(move |e| {
        summaries.observe(e);
        recent.observe(e);
    })
    .touched_objects();
    let referrers_store = store.clone();
    let reports = caches.reports.clone();
    let health = watches.clone();
    let report_events = watcher(
        api::<DebuggerReport>(&client, ns),
        watcher::Config::default(),
    )
    .default_backoff()
    .inspect(move |e| health.observe("DebuggerReport", e))
    .inspect_ok(move |e| reports.observe(e))
    .touched_objects();
    let pinger_events = cached_watch(
        (&watches, "Pinger"),
        api::<Pinger>(&client, ns),
        watcher::Config::default(),
        pinger_writer,
        caches.listed[2].clone(),
        |_| (),
    );
    let recent = caches.recent_roles.clone();
    let role_events = cached_watch(
        (&watches, "Role"),
        api::<Role>(&client, ns),
        owned.clone(),
        role_writer,
        caches.listed[3].clone(),
        move |e| recent.observe(e),
    );
    // The workload ServiceAccounts and RoleBindings: names only (metadata
    // watches), so that one deleted by hand is written again.
    let names = caches.accounts.clone();
    let health = watches.clone();
    let account_events = watcher(
        api::<PartialObjectMeta<ServiceAccount>>(&client, ns),
        owned.clone(),
    )
    .default_backoff()
    .inspect(move |e| health.observe("ServiceAccount", e))
    .inspect_ok(move |e| names.observe(e))
    .touched_objects();
    let names = caches.bindings.clone();
    let health = watches.clone();
    let binding_events = watcher(
        api::<PartialObjectMeta<RoleBinding>>(&client, ns),
        owned.clone(),
    )
    .default_backoff()
    .inspect(move |e| health.observe("RoleBinding", e))
    .inspect_ok(move |e| names.observe(e))
    .touched_objects();
    let users_store = store.clone();
    // Driven here, not spawned: it stops with the controller.
    let retire = {
        let legacy = rbac::retire_legacy(
            client.clone(),
            store.clone(),
            caches.roles.clone(),
            caches.daemonsets.clone(),
        );
        async move {
            legacy.await;
            std::future::pending::<()>().await
        }
    };
    let images = Images {
        runner: args.runner_image.clone(),
        pinger: args.pinger_image.clone(),
    };
    let ctx = Arc::new(Context::new(
        client.clone(),
        images,
        metrics,
        Some(identity),
        store,
        caches,
    ));
    let pingers = Controller::new(api::<Pinger>(&client, ns), watcher::Config::default())
        .shutdown_on_signal()
        .run(
            pinger_status::reconcile,
            pinger_status::error_policy,
            Arc::new(PingerContext {
                client: client.clone(),
                recorder: ctx.recorder.clone(),
                metrics: ctx.metrics.clone(),
            }),
        )
        .for_each(|res| async move {
            if let Err(e) = res {
                tracing::debug!(error = %e, "pinger status stream");
            }
        });
    let held = ctx.clone();
    let debuggers = main
        .owns_stream(daemonsets)
        .owns_stream(pods)
        .watches_stream(config_maps, move |cm| {
            config_map_users(&referrers_store.state(), &cm)
        })
        .owns_stream(role_events)
        .owns_stream(account_events)
        .owns_stream(binding_events)
        .watches_stream(report_events, |r| reports::debugger_of(&r))
        .watches_stream(pinger_events, move |pinger| {
            users_of(&users_store.state(), &pinger)
        })
        .shutdown_on_signal()
        .run(reconcile::reconcile, retry::error_policy, ctx)
        .for_each(|res| async move {
            if let Err(e) = res {
                tracing::debug!(error = %e, "reconcile stream");
            }
        });
    tokio::select! {
        _ = async { futures::join!(debuggers, pingers) } => {}
        () = retire => {}
        () = peer_lists => {}
    }
    for (reference, event) in held.pace.drain() {
        if let Err(e) = held.recorder.publish(&event, &reference).await {
            warn!(error = %e, reason = %event.reason, "publishing a held event failed");
        }
    }
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
) -> impl futures::Stream<Item = Result<K, watcher::Error>> + Send + 'static
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
}

/// The Debuggers a ConfigMap matters to: its controller, when a Debugger
/// owns it (a summary), else those that name it as their scripts or
/// summary ConfigMap. Pure.
pub fn config_map_users(
    debuggers: &[Arc<Debugger>],
    cm: &PartialObjectMeta<ConfigMap>,
) -> Vec<ObjectRef<Debugger>> {
    let ns = cm.namespace();
    let owner = cm.owner_references().iter().find(|o| {
        o.controller == Some(true)
            && o.kind == "Debugger"
            && o.api_version.split('/').next() == Some(keys::GROUP)
    });
    if let Some(o) = owner {
        return vec![ObjectRef::new(&o.name).within(ns.as_deref().unwrap_or_default())];
    }
    let name = cm.name_any();
    debuggers
        .iter()
        .filter(|d| d.namespace() == ns)
        .filter(|d| {
            (d.spec.enable_config_map && d.spec.config_map == name)
                || d.spec.summary_name(&d.name_any()) == name
        })
        .map(|d| ObjectRef::from_obj(d.as_ref()))
        .collect()
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
    use combo_api::{DebuggerSpec, PingerSpec};

    fn dbg(ns: &str, name: &str, pinger: &str) -> Arc<Debugger> {
        let mut d = Debugger::new(
            name,
            DebuggerSpec {
                enable_pinger: !pinger.is_empty(),
                pinger: pinger.into(),
                ..DebuggerSpec::default()
            },
        );
        d.metadata.namespace = Some(ns.into());
        Arc::new(d)
    }

    #[test]
    fn a_pinger_change_requeues_only_the_debuggers_that_use_it() {
        let all = vec![
            dbg("ops", "a", "mesh"),
            dbg("ops", "b", "other"),
            dbg("dev", "c", "mesh"),
            dbg("ops", "d", ""),
        ];
        let mut p = Pinger::new("mesh", PingerSpec::default());
        p.metadata.namespace = Some("ops".into());
        let users: Vec<String> = users_of(&all, &p).into_iter().map(|r| r.name).collect();
        assert_eq!(users, ["a"]);
    }
}
