//! Watches of the Pinger and of the Debugger's pods. They retry with backoff
//! for as long as the process runs: an unreachable API server is logged, never
//! fatal.

use std::collections::BTreeMap;
use std::net::IpAddr;

use combo_api::{Pinger, PingerSpec};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::runtime::watcher::{self, watcher, Event};
use kube::runtime::WatchStreamExt;
use kube::{Api, ResourceExt};
use tokio::sync::mpsc;

use super::peers::peer_ip;

/// A change seen by a watch.
#[derive(Debug)]
pub enum Update {
    /// The Pinger's spec (None: the Pinger is gone).
    Spec(Option<Box<PingerSpec>>),
    /// The complete peer set after a (re)list.
    Peers(BTreeMap<String, IpAddr>),
    /// One pod changed: its peer address, or None when it is no peer now.
    Peer(String, Option<IpAddr>),
    /// The pinger's own pod UID, for Event references.
    SelfUid(String),
}

/// Follows one Pinger by name.
pub async fn pinger(api: Api<Pinger>, name: String, tx: mpsc::Sender<Update>) {
    let cfg = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let mut stream = watcher(api, cfg).default_backoff().boxed();
    let mut seen = false;
    while let Some(event) = stream.next().await {
        let update = match event {
            Ok(Event::Init) => {
                seen = false;
                continue;
            }
            Ok(Event::Apply(p)) | Ok(Event::InitApply(p)) => {
                seen = true;
                Update::Spec(Some(Box::new(p.spec)))
            }
            Ok(Event::InitDone) if !seen => Update::Spec(None),
            Ok(Event::InitDone) => continue,
            Ok(Event::Delete(_)) => Update::Spec(None),
            Err(e) => {
                tracing::warn!(error = %e, pinger = %name, "watching the Pinger failed; retrying");
                continue;
            }
        };
        if tx.send(update).await.is_err() {
            return;
        }
    }
}

/// Follows the pods of a Debugger (selector `kubecombo.io/debugger=<name>`).
pub async fn pods(api: Api<Pod>, selector: String, me: String, tx: mpsc::Sender<Update>) {
    let cfg = watcher::Config::default().labels(&selector);
    let mut stream = watcher(api, cfg).default_backoff().boxed();
    let mut listing = BTreeMap::new();
    while let Some(event) = stream.next().await {
        let update = match event {
            Ok(Event::Init) => {
                listing.clear();
                continue;
            }
            Ok(Event::InitApply(pod)) => {
                if let Some(uid) = own_uid(&pod, &me) {
                    let _ = tx.send(Update::SelfUid(uid)).await;
                }
                if let Some(ip) = peer_ip(&pod) {
                    listing.insert(pod.name_any(), ip);
                }
                continue;
            }
            Ok(Event::InitDone) => Update::Peers(std::mem::take(&mut listing)),
            Ok(Event::Apply(pod)) => {
                if let Some(uid) = own_uid(&pod, &me) {
                    let _ = tx.send(Update::SelfUid(uid)).await;
                }
                Update::Peer(pod.name_any(), peer_ip(&pod))
            }
            Ok(Event::Delete(pod)) => Update::Peer(pod.name_any(), None),
            Err(e) => {
                tracing::warn!(error = %e, selector = %selector, "watching peer pods failed; retrying");
                continue;
            }
        };
        if tx.send(update).await.is_err() {
            return;
        }
    }
}

fn own_uid(pod: &Pod, me: &str) -> Option<String> {
    (pod.name_any() == me).then(|| pod.uid()).flatten()
}
