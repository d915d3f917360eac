//! The controller: watches Debuggers, the Pingers they use and the objects
//! they own, and runs the pipeline fetch -> validate -> render -> apply ->
//! status for each Debugger.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use combo_api::keys;
use combo_api::{Debugger, DebuggerReport, DebuggerStatus, Pinger};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, ServiceAccount};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::core::PartialObjectMeta;
use kube::runtime::controller::{Action, Config as ControllerConfig, Controller};
use kube::runtime::events::Event;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{predicates, reflector, watcher, WatchStreamExt};
use kube::{Api, Client, Resource, ResourceExt};
use tracing::{info, instrument, warn};

use crate::cache::{self, Caches, Slim};
use crate::cli::RunArgs;
use crate::context::Context;
use crate::fetch::{self, Observed};
use crate::http::{self, Health};
use crate::leader::{self, Elector};
use crate::metrics::Metrics;
use crate::pinger_status::{self, PingerContext};
use crate::readiness::Readiness;
use crate::render::{self, Images};
use crate::status::{self, PodCounts};
use crate::validate::{self, validate, Invalid};
use crate::{aggregate, apply, events, rbac, reports};

/// Errors of a reconcile.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The spec is invalid; the Debugger waits for a change.
    #[error("invalid spec: {0}")]
    Invalid(#[from] Invalid),
    /// Writing failed (transient).
    #[error(transparent)]
    Apply(#[from] apply::Error),
    /// Writing the status failed (transient).
    #[error("writing status")]
    Status(#[source] kube::Error),
}

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

impl Error {
    /// Label of the `reconcile_errors` metric.
    pub fn kind(&self) -> &'static str {
        match self {
            Error::Invalid(i) => match i {
                Invalid::InvalidSpec(_) => "invalid_spec",
                Invalid::PingerNotFound(_) => "pinger_not_found",
                Invalid::WorkloadRefused(_) => "workload_refused",
            },
            Error::Apply(_) => "apply",
            Error::Status(_) => "status",
        }
    }
}

/// Runs the operator until SIGTERM/SIGINT. With `--leader-elect`, a
/// replica that loses the Lease stops its controller and stands by for the
/// Lease again, in the same process (docs/operator.md, "Leader election").
pub async fn run(args: RunArgs) -> Result<(), RunError> {
    let client = Client::try_default().await.map_err(RunError::Connect)?;
    let metrics = Arc::new(Metrics::default());
    let health = Arc::new(Health {
        metrics: metrics.clone(),
        ready: false.into(),
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
                _ = shutdown_signal() => return Ok(()),
            }
        }
        // Dropping this future (the Lease lost) stops everything the
        // controller runs: no write after leadership is gone.
        let controller = controller(client.clone(), &args, metrics.clone(), identity.clone());
        tokio::select! {
            () = controller => {
                info!("controller stopped");
                if let Some(e) = &elector {
                    e.release().await;
                }
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

async fn shutdown_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("SIGTERM handler");
    tokio::select! {
        _ = term.recv() => {},
        _ = tokio::signal::ctrl_c() => {},
    }
}

/// Builds and runs the controller until a shutdown signal.
async fn controller(client: Client, args: &RunArgs, metrics: Arc<Metrics>, identity: String) {
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
    let debuggers = watcher(api::<Debugger>(&client, ns), watcher::Config::default())
        .default_backoff()
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
    let caches = Caches::new(ds_store, pod_store, pinger_store, role_store);
    let recent = caches.recent_daemonsets.clone();
    let daemonsets = cached_watch(
        api::<DaemonSet>(&client, ns),
        owned.clone(),
        ds_writer,
        caches.listed[0].clone(),
        move |e| recent.observe(e),
    );
    let recent = caches.recent_pods.clone();
    let pods = cached_watch(
        api::<Pod>(&client, ns),
        direct_pods,
        pod_writer,
        caches.listed[1].clone(),
        move |e| recent.observe(e),
    );
    let (summaries, recent) = (caches.summaries.clone(), caches.recent_summaries.clone());
    let config_maps = watcher(api::<ConfigMap>(&client, ns), owned.clone())
        .default_backoff()
        .inspect_ok(move |e| {
            summaries.observe(e);
            recent.observe(e);
        })
        .touched_objects();
    let reports = caches.reports.clone();
    let report_events = watcher(
        api::<DebuggerReport>(&client, ns),
        watcher::Config::default(),
    )
    .default_backoff()
    .inspect_ok(move |e| reports.observe(e))
    .touched_objects();
    let pinger_events = cached_watch(
        api::<Pinger>(&client, ns),
        watcher::Config::default(),
        pinger_writer,
        caches.listed[2].clone(),
        |_| (),
    );
    let recent = caches.recent_roles.clone();
    let role_events = cached_watch(
        api::<Role>(&client, ns),
        owned.clone(),
        role_writer,
        caches.listed[3].clone(),
        move |e| recent.observe(e),
    );
    // The workload ServiceAccounts and RoleBindings: names only (metadata
    // watches), so that one deleted by hand is written again.
    let names = caches.accounts.clone();
    let account_events = watcher(
        api::<PartialObjectMeta<ServiceAccount>>(&client, ns),
        owned.clone(),
    )
    .default_backoff()
    .inspect_ok(move |e| names.observe(e))
    .touched_objects();
    let names = caches.bindings.clone();
    let binding_events = watcher(
        api::<PartialObjectMeta<RoleBinding>>(&client, ns),
        owned.clone(),
    )
    .default_backoff()
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
        .owns_stream(config_maps)
        .owns_stream(role_events)
        .owns_stream(account_events)
        .owns_stream(binding_events)
        .watches_stream(report_events, |r| reports::debugger_of(&r))
        .watches_stream(pinger_events, move |pinger| {
            users_of(&users_store.state(), &pinger)
        })
        .shutdown_on_signal()
        .run(reconcile, error_policy, ctx)
        .for_each(|res| async move {
            if let Err(e) = res {
                tracing::debug!(error = %e, "reconcile stream");
            }
        });
    tokio::select! {
        _ = async { futures::join!(debuggers, pingers) } => {}
        () = retire => {}
    }
    for (reference, event) in held.pace.drain() {
        if let Err(e) = held.recorder.publish(&event, &reference).await {
            warn!(error = %e, reason = %event.reason, "publishing a held event failed");
        }
    }
}

/// A watch of `api` that keeps its objects, slimmed, in `writer`'s store,
/// marks `listed` once it has listed, passes every event to `also`, and
/// yields the objects it touched (reconcile triggers).
fn cached_watch<K>(
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
    watcher(api, config)
        .default_backoff()
        .modify(cache::slim)
        .reflect(writer)
        .inspect_ok(move |e| {
            listed.observe(e);
            also(e);
        })
        .touched_objects()
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

/// One reconcile of one Debugger; every outcome is logged here.
#[instrument(skip(dbg, ctx), fields(namespace = %dbg.namespace().unwrap_or_default(), name = %dbg.name_any()))]
pub async fn reconcile(dbg: Arc<Debugger>, ctx: Arc<Context>) -> Result<Action, Error> {
    let started = Instant::now();
    let result = pipeline(&dbg, &ctx).await;
    ctx.metrics.reconciled(started.elapsed().as_secs_f64());
    match &result {
        Ok(action) => {
            ctx.failures
                .lock()
                .expect("failures lock")
                .remove(&ObjectRef::from_obj(dbg.as_ref()));
            tracing::debug!(?action, "reconciled");
        }
        Err(Error::Invalid(i)) => info!(reason = i.reason(), message = %i, "invalid spec"),
        Err(e) => warn!(error = %e, source = ?std::error::Error::source(e), "reconcile failed"),
    }
    result
}

async fn pipeline(dbg: &Debugger, ctx: &Arc<Context>) -> Result<Action, Error> {
    if dbg.metadata.deletion_timestamp.is_some() {
        // The garbage collector removes what it owns; recreating a workload
        // now would only race it.
        return Ok(Action::await_change());
    }
    let observed = fetch::observe(&ctx.caches, dbg).await;
    let mut verdict = validate(&dbg.spec, observed.pinger.as_ref());
    let (mut action, mut news, mut summary) = (None, Vec::new(), None);
    // A refused workload write: reported like an invalid spec, then
    // returned so that `error_policy` retries it with backoff.
    let mut refused = None;
    if verdict.is_ok() {
        match converge(dbg, ctx, &observed).await {
            Ok(done) => {
                action = done.action;
                news.extend(done.event);
                summary = done.summary;
            }
            Err(apply::Error::NotOwned { kind, name }) => {
                verdict = Err(Invalid::InvalidSpec(format!(
                    "{kind} {name:?} already exists and is not owned by this Debugger"
                )))
            }
            Err(e) => {
                let failures = ctx
                    .failures
                    .lock()
                    .expect("failures lock")
                    .get(&ObjectRef::from_obj(dbg))
                    .copied()
                    .unwrap_or(0);
                let reported = match &e {
                    apply::Error::Write { kind, name, source } => {
                        validate::refusal(kind, name, source, failures)
                    }
                    apply::Error::NotOwned { .. } => None,
                };
                match reported {
                    Some(r) => {
                        verdict = Err(r);
                        refused = Some(e);
                    }
                    None => return Err(e.into()),
                }
            }
        }
    }
    let counts = workload_counts(dbg, &observed);
    let runs = aggregate::run_summary(observed.reports.values().map(|r| r.as_ref()));
    let now = Utc::now();
    // Only this operator writes the status, so the one it wrote last is the
    // current one even when the cached Debugger does not show it yet.
    let uid = dbg.metadata.uid.clone().unwrap_or_default();
    let written = ctx.written.lock().expect("written lock").get(&uid).cloned();
    let with_written;
    let current = match written {
        Some(w) if dbg.status.as_ref() != Some(&w) => {
            with_written = Debugger {
                status: Some(w),
                ..dbg.clone()
            };
            &with_written
        }
        _ => dbg,
    };
    let new = status::compute(current, verdict.as_ref().err(), counts, &runs, now);
    let changed = status::changed(current, &new);
    if let Err(invalid) = &verdict {
        news.splice(0..0, ctx.pace.take(&uid));
        if newly_reported(current.status.as_ref(), &new) {
            news.push(events::for_invalid(invalid));
        }
    } else if changed || !news.is_empty() || summary.is_some() || ctx.pace.holds(&uid) {
        // A valid Debugger's summary ConfigMap, status and Events wait
        // while workloads are being written (see `pace`).
        match ctx.pace.hold(&uid, &dbg.object_ref(&()), news) {
            // Sooner than any requeue `converge` asks for, which the next
            // reconcile asks for again.
            Ok(wait) => return Ok(Action::requeue(wait)),
            Err(due) => news = due,
        }
    }
    for event in news {
        events::publish(&ctx.recorder, dbg, event).await;
    }
    // Status and summary: at most one write each per `coalesce::WINDOW`;
    // what has to wait is written by a requeue.
    let mut wait: Option<Duration> = None;
    let mut hold = |d: Duration| wait = Some(wait.map_or(d, |w| w.min(d)));
    // An invalid spec's status goes out at once: its Event is published
    // above, once per generation and message, and a held status would
    // publish it again. Such writes are bounded by spec changes anyway.
    let coalesced = verdict.is_ok();
    if changed {
        match ctx
            .status_writes
            .wait(&uid, Instant::now())
            .filter(|_| coalesced)
        {
            Some(d) => hold(d),
            None => {
                write_status(ctx, dbg, &new).await?;
                ctx.status_writes.wrote(&uid, Instant::now());
                remember_written(ctx, uid.clone(), new.clone());
            }
        }
    }
    if let Some((summary, take_over)) = summary {
        match ctx.summary_writes.wait(&uid, Instant::now()) {
            Some(d) => hold(d),
            None => {
                // Last: should it fail, the Events above are out and the
                // retry only writes the ConfigMap.
                ctx.summary_writes.wrote(&uid, Instant::now());
                apply::summary(
                    &ctx.client,
                    &ctx.metrics,
                    &ctx.caches,
                    dbg,
                    &summary,
                    take_over,
                )
                .await?;
            }
        }
    }
    if let Some(last) = &new.last_run_at {
        prune_departed(ctx, dbg, &uid, last, &observed).await;
    }
    if let Some(e) = refused {
        return Err(e.into());
    }
    verdict?;
    if let Some(w) = wait {
        return Ok(Action::requeue(w));
    }
    Ok(
        action.unwrap_or_else(|| match status::next_run_at(&dbg.spec.run_at, now) {
            // Refresh nextRunAt once the scheduled time has passed.
            Some(next) => Action::requeue(
                (next - now)
                    .to_std()
                    .unwrap_or_default()
                    .saturating_add(Duration::from_secs(1)),
            ),
            None => Action::await_change(),
        }),
    )
}

/// At a new run (the newest `runAt` of the reports changed since this
/// process last looked), deletes the reports of nodes that run no pod of
/// the Debugger any more and did not report that run; the next summary
/// leaves their keys out. The first look after a start only records the
/// run, so a restarted operator does not list every Debugger's pods.
async fn prune_departed(ctx: &Context, dbg: &Debugger, uid: &str, last: &str, observed: &Observed) {
    let previous = remember_run(ctx, uid, last);
    if previous.is_none() || previous.as_deref() == Some(last) {
        return;
    }
    let candidates: Vec<&aggregate::NodeReport> = observed
        .reports
        .values()
        .map(|r| r.as_ref())
        .filter(|r| r.spec.run_at.as_str() != last)
        .collect();
    if candidates.is_empty() {
        return;
    }
    let ns = dbg.namespace().unwrap_or_default();
    let nodes = match reports::nodes_with_pods(&ctx.client, &ns, &dbg.name_any()).await {
        Ok(n) => n,
        Err(e) => {
            warn!(error = %e, "listing the Debugger's pods failed; reports of departed nodes stay until the next run");
            return;
        }
    };
    let gone = aggregate::departed(candidates, last, &nodes);
    for name in &gone {
        ctx.metrics.write("DebuggerReport");
        match reports::delete(&ctx.client, &ns, name).await {
            Ok(()) => info!(report = %name, "removed the report of a node that left"),
            Err(e) => warn!(report = %name, error = %e, "removing a report failed"),
        }
    }
    ctx.caches.reports.forget(&ns, &dbg.name_any(), &gone);
}

/// What `converge` did and left to do.
struct Converged {
    /// A requeue when a replaced Pod has to be recreated.
    action: Option<Action>,
    /// The Event of a workload change.
    event: Option<Event>,
    /// The summary ConfigMap, when it has to be written (after the pause
    /// `pace` asks for), and whether it has to be taken over first.
    summary: Option<(ConfigMap, bool)>,
}

/// Applies the workload RBAC and the workload, and tells whether the
/// summary ConfigMap has to be written.
async fn converge(
    dbg: &Debugger,
    ctx: &Arc<Context>,
    observed: &Observed,
) -> Result<Converged, apply::Error> {
    let (data, level) = aggregate::summary_data(&observed.reports);
    if level != aggregate::Level::Full {
        tracing::debug!(
            ?level,
            nodes = observed.reports.len(),
            "summary values shortened to fit"
        );
    }
    let summary = render::summary_config_map(dbg, data);
    // Checked first: a summary name taken by another owner is an invalid
    // spec, and then no workload is written.
    let summary_due = apply::summary_due(dbg, &summary, observed.summary.as_ref())?;
    let take_over = observed
        .summary
        .as_ref()
        .is_some_and(|s| s.foreign_managers);
    let account_uid = rbac::ensure(&ctx.client, &ctx.metrics, &ctx.caches, dbg).await?;
    let desired = render::workload(
        dbg,
        observed.pinger.as_ref(),
        &ctx.images,
        account_uid.as_deref(),
    );
    let change = apply::workload(
        &ctx.client,
        &ctx.metrics,
        &ctx.caches,
        dbg,
        &desired,
        observed,
    )
    .await?;
    if change != apply::Change::Unchanged {
        ctx.pace.wrote();
    }
    let event = events::for_change(change, desired.kind(), &dbg.name_any());
    if event.is_some() {
        info!(?change, kind = desired.kind(), "workload written");
    }
    Ok(Converged {
        action: matches!(change, apply::Change::Replacing | apply::Change::Waiting)
            .then(|| Action::requeue(Duration::from_secs(1))),
        event,
        summary: summary_due.then_some((summary, take_over)),
    })
}

/// Counts of the workload that matches the spec's type, else of whichever exists.
fn workload_counts(dbg: &Debugger, observed: &Observed) -> Option<PodCounts> {
    let ds = observed
        .daemonset
        .as_ref()
        .filter(|d| apply::controlled_by(&d.metadata, dbg))
        .map(status::daemonset_counts);
    let pod = observed
        .pod
        .as_ref()
        .filter(|p| {
            apply::controlled_by(&p.metadata, dbg) && p.metadata.deletion_timestamp.is_none()
        })
        .map(status::pod_counts);
    match dbg.spec.workload_type {
        combo_api::WorkloadType::Daemonset => ds.or(pod),
        combo_api::WorkloadType::Pod => pod.or(ds),
    }
}

/// Whether the Ready condition in `new` is news: a new generation or a
/// different reason or message than the status already carries. Pure.
pub fn newly_reported(old: Option<&DebuggerStatus>, new: &DebuggerStatus) -> bool {
    let Some(old) = old else { return true };
    let ready = |s: &DebuggerStatus| {
        status::ready_of(&s.conditions).map(|c| (c.reason.clone(), c.message.clone()))
    };
    old.observed_generation != new.observed_generation || ready(old) != ready(new)
}

/// Records the status written for `uid` (a per-Debugger record, see
/// [`remember`]).
fn remember_written(ctx: &Context, uid: String, status: DebuggerStatus) {
    let mut written = ctx.written.lock().expect("written lock");
    remember(&mut written, uid, status, &ctx.debuggers, uid_of);
}

/// Records `last` as the newest run seen for `uid` and returns the one
/// seen before (a per-Debugger record, see [`remember`]).
fn remember_run(ctx: &Context, uid: &str, last: &str) -> Option<String> {
    let mut runs = ctx.runs_seen.lock().expect("runs lock");
    remember(
        &mut runs,
        uid.to_string(),
        last.to_string(),
        &ctx.debuggers,
        uid_of,
    )
}

fn uid_of(dbg: &Debugger) -> Option<String> {
    dbg.metadata.uid.clone()
}

/// Puts `value` under `key` in a record kept per Debugger and returns the
/// value it replaces. A Debugger deleted meanwhile is never reconciled
/// again, so nothing else removes its entry: once the record holds more
/// than [`over_bound`] of the Debuggers `debuggers` shows, the entries of
/// those that are gone (by `key_of`) are dropped. Each record is pruned on
/// its own insertions, so none depends on another being written.
fn remember<K, V>(
    map: &mut HashMap<K, V>,
    key: K,
    value: V,
    debuggers: &Store<Debugger>,
    key_of: impl Fn(&Debugger) -> Option<K>,
) -> Option<V>
where
    K: Eq + std::hash::Hash,
{
    let previous = map.insert(key, value);
    let known = debuggers.state();
    if map.len() > over_bound(known.len()) {
        let live: HashSet<K> = known.iter().filter_map(|d| key_of(d)).collect();
        retain_live(map, &live);
    }
    previous
}

async fn write_status(ctx: &Context, dbg: &Debugger, new: &DebuggerStatus) -> Result<(), Error> {
    apply::status(&ctx.client, &ctx.metrics, dbg, new, "DebuggerStatus")
        .await
        .map_err(Error::Status)
}

/// Invalid specs wait for a change; transient errors back off exponentially
/// (1 s doubling to 5 min) per Debugger.
pub fn error_policy(dbg: Arc<Debugger>, err: &Error, ctx: Arc<Context>) -> Action {
    ctx.metrics.error(err.kind());
    if let Error::Invalid(_) = err {
        return Action::await_change();
    }
    let key = ObjectRef::from_obj(dbg.as_ref());
    let mut failures = ctx.failures.lock().expect("failures lock");
    let n = failures.get(&key).copied().unwrap_or(0).saturating_add(1);
    // A success removes the count; a Debugger deleted while failing has
    // none, so `remember` drops the counts of Debuggers that are gone.
    remember(&mut failures, key, n, &ctx.debuggers, |d| {
        Some(ObjectRef::from_obj(d))
    });
    Action::requeue(backoff(n))
}

/// Size past which a per-Debugger record is pruned of Debuggers that are
/// gone: twice the live ones, plus some slack. Pure.
pub fn over_bound(live: usize) -> usize {
    2 * live + 16
}

/// Keeps only the entries of `map` whose key is in `live`. Pure.
pub fn retain_live<K: Eq + std::hash::Hash, V>(map: &mut HashMap<K, V>, live: &HashSet<K>) {
    map.retain(|k, _| live.contains(k));
}

/// Delay after the `n`th consecutive failure. Pure.
pub fn backoff(n: u32) -> Duration {
    combo_api::retry::doubling(Duration::from_secs(1), Duration::from_secs(300), n)
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

    #[test]
    fn records_of_debuggers_that_are_gone_are_pruned_past_the_bound() {
        let live: std::collections::HashSet<String> =
            ["a", "b"].into_iter().map(String::from).collect();
        let mut failures: std::collections::HashMap<String, u32> = (0..over_bound(2) + 1)
            .map(|i| (format!("gone-{i}"), 3))
            .chain([("a".to_string(), 1)])
            .collect();
        assert!(failures.len() > over_bound(live.len()));
        retain_live(&mut failures, &live);
        assert_eq!(
            failures.into_iter().collect::<Vec<_>>(),
            [("a".to_string(), 1)]
        );
        assert_eq!(over_bound(0), 16);
        assert_eq!(over_bound(10_000), 20_016);
    }

    #[test]
    fn a_record_is_pruned_on_its_own_insertions_and_keeps_the_live_entry() {
        let (store, mut writer) = reflector::store::<Debugger>();
        let mut live = Debugger::clone(&dbg("ops", "live", ""));
        live.metadata.uid = Some("uid-live".into());
        writer.apply_watcher_event(&watcher::Event::Apply(live));
        let mut runs: HashMap<String, String> = HashMap::new();
        let first = remember(&mut runs, "uid-live".into(), "run-1".into(), &store, uid_of);
        assert_eq!(first, None);
        // 100 Debuggers seen once each and deleted since: only insertions
        // into this record itself keep it bounded.
        for i in 0..100 {
            remember(
                &mut runs,
                format!("uid-gone-{i}"),
                "run-1".into(),
                &store,
                uid_of,
            );
            assert!(runs.len() <= over_bound(1), "{} runs kept", runs.len());
        }
        assert!(runs.len() < 100);
        let again = remember(&mut runs, "uid-live".into(), "run-2".into(), &store, uid_of);
        assert_eq!(again.as_deref(), Some("run-1"), "the live entry was kept");
    }

    #[test]
    fn backoff_doubles_and_is_capped() {
        assert_eq!(backoff(1), Duration::from_secs(1));
        assert_eq!(backoff(2), Duration::from_secs(2));
        assert_eq!(backoff(5), Duration::from_secs(16));
        assert_eq!(backoff(40), Duration::from_secs(300));
    }

    #[test]
    fn an_invalid_spec_is_reported_once_per_generation_and_message() {
        let invalid = Invalid::InvalidSpec("bad".into());
        let d = dbg("ops", "a", "");
        let first = status::compute(&d, Some(&invalid), None, &Default::default(), Utc::now());
        assert!(newly_reported(None, &first));
        assert!(!newly_reported(Some(&first), &first));
        let other = Invalid::InvalidSpec("worse".into());
        let second = status::compute(&d, Some(&other), None, &Default::default(), Utc::now());
        assert!(newly_reported(Some(&first), &second));
    }
}
