//! The controller: runs [`reconcile`] for each Debugger, driven by the
//! watches of [`triggers`], with [`retry`] deciding what a failed one does
//! next, and the Pinger status controller. Beside them, for as long as
//! they run, [`peer_lists`](crate::pinger::peer_lists). Around it: leader election,
//! the health server and the stop on a signal.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use combo_api::Pinger;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::runtime::controller::Controller;
use kube::runtime::watcher;
use kube::Client;
use tracing::{info, warn};

use crate::cli::RunArgs;
use crate::core::images::Images;
use crate::http::{self, Health};
use crate::leader::{self, Elector};
use crate::metrics::registry::Metrics;
use crate::pinger::status::{self, PingerContext};
use crate::state::context::Context;
use crate::watch::health::Watches;
use crate::{debugger::reconcile, debugger::retry, state::nodes, state::triggers, workload::rbac};

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
    let watches = Watches::new(metrics.watch_errors());
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

/// The controller of the Pingers' status, until a shutdown signal.
fn pinger_statuses(
    client: &Client,
    ns: &Option<String>,
    ctx: &Context,
) -> impl std::future::Future<Output = ()> {
    let context = Arc::new(PingerContext {
        client: client.clone(),
        recorder: ctx.recorder.clone(),
        metrics: ctx.metrics.clone(),
    });
    Controller::new(
        triggers::api::<Pinger>(client, ns),
        watcher::Config::default(),
    )
    .shutdown_on_signal()
    .run(status::reconcile, status::error_policy, context)
    .for_each(|res| async move {
        if let Err(e) = res {
            tracing::debug!(error = %e, "pinger status stream");
        }
    })
}

/// Builds and runs the controller until a shutdown signal.
async fn controller(
    client: Client,
    args: &RunArgs,
    metrics: Arc<Metrics>,
    watches: Watches,
    identity: String,
) {
    let ns = &args.namespace;
    let (main, store) = triggers::debuggers(&client, ns, &watches, &metrics);
    let (caches, triggers) = triggers::watch(&client, ns, &watches);
    // Driven here too: only the leader writes Events on Nodes.
    let node_events = crate::node_events::start(client.clone(), &caches.reports, metrics.clone());
    let peer_lists = crate::pinger::peer_writes::run(
        client.clone(),
        triggers::api::<Pod>(&client, ns),
        store.clone(),
        caches.pingers.clone(),
        caches.waiting.clone(),
        metrics.clone(),
    );
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
        pull_secrets: args.image_pull_secrets.clone(),
    };
    let main = triggers
        .drive(main, &store)
        .reconcile_on(caches.waiting.triggers());
    let mut ctx = Context::new(
        client.clone(),
        images,
        metrics,
        Some(identity),
        store,
        caches,
    );
    ctx.taints_allowed = !args.no_taints;
    let ctx = Arc::new(ctx);
    // Idle until a Debugger asks for node conditions or taints.
    let nodes = nodes::run(client.clone(), ctx.nodes.clone(), watches.clone());
    let pingers = pinger_statuses(&client, ns, &ctx);
    let held = ctx.clone();
    let debuggers = main
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
        () = nodes => {}
        () = node_events => {}
    }
    // Another replica reports the results from now on.
    held.metrics.results().clear();
    for (reference, event) in held.pace.drain() {
        if let Err(e) = held.recorder.publish(&event, &reference).await {
            warn!(error = %e, reason = %event.reason, "publishing a held event failed");
        }
    }
}
