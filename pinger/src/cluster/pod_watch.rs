//! Following the Debugger's pods for peers: the pod watch runs only while
//! the spec in force needs it (docs/pinger.md, "Peer discovery").

use combo_api::keys;
use combo_api::PingerSpec;
use kube::Client;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::table::Include;
use super::table_watch;
use super::watch::Update;
use super::State;

/// The table watch of the Debugger's pods, while the spec in force needs it
/// (docs/pinger.md, "Peer discovery"). Its updates have their own channel,
/// so that stopping it drops those not yet taken in with it.
pub(super) struct PodWatch {
    pub(super) task: JoinHandle<()>,
    pub(super) rows: mpsc::Receiver<Update>,
}

impl PodWatch {
    /// Follows the pods of `debugger` in `namespace`, their rows carrying
    /// what `include` says.
    pub(super) fn start(
        client: &Client,
        namespace: &str,
        debugger: &str,
        include: Include,
    ) -> PodWatch {
        let (tx, rows) = mpsc::channel(256);
        let task = tokio::spawn(table_watch::peers(
            client.clone(),
            namespace.to_string(),
            keys::debugger_selector(debugger),
            include,
            tx,
        ));
        PodWatch { task, rows }
    }
}

impl Drop for PodWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The next update of the pod watch; never while there is none.
pub(super) async fn next_row(watch: &mut Option<PodWatch>) -> Update {
    if let Some(w) = watch {
        if let Some(update) = w.rows.recv().await {
            return update;
        }
    }
    std::future::pending().await
}

/// Whether the pinger follows its Debugger's pods itself: with peers on
/// and a `maxPeers` the operator writes no lists for. Pure.
pub(super) fn follows_pods(spec: &PingerSpec, debugger: bool) -> bool {
    debugger && spec.peers && !combo_api::peers::listed(spec.peers, spec.max_peers)
}

/// Starts the pod watch when the spec in force needs it and it does not
/// run, with `start(debugger)`; stops it, and forgets its peers, when it
/// runs and is not needed.
pub(super) fn switch_pod_watch(
    watch: &mut Option<PodWatch>,
    state: &mut State,
    debugger: Option<&str>,
    start: impl FnOnce(&str) -> PodWatch,
) {
    let needed = follows_pods(&state.spec_in_force(), debugger.is_some());
    match (debugger, watch.is_some(), needed) {
        (Some(debugger), false, true) => {
            tracing::info!(%debugger, "following the Debugger's pods for peers");
            *watch = Some(start(debugger));
        }
        (_, true, false) => {
            tracing::info!("no longer following the Debugger's pods");
            *watch = None;
            state.peers.clear();
            state.peer_nodes.clear();
        }
        _ => {}
    }
}
