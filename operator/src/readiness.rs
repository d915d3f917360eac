//! Whether a watch has listed once: the caches and the reports index wait
//! for it before they answer.

use kube::runtime::watcher;
use tokio::sync::watch;

/// Whether a watch has listed once. Any number of tasks may wait for it.
/// (kube's `Store::wait_until_ready` wakes only the task that polled it
/// last, so concurrent reconciles waiting on it could wait forever.)
#[derive(Clone, Debug)]
pub struct Readiness(watch::Sender<bool>);

impl Default for Readiness {
    fn default() -> Self {
        Readiness(watch::Sender::new(false))
    }
}

impl Readiness {
    /// Marks the watch as listed when `event` ends a list.
    pub fn observe<K>(&self, event: &watcher::Event<K>) {
        if matches!(event, watcher::Event::InitDone) {
            self.0.send_replace(true);
        }
    }

    /// Waits until the watch has listed once.
    pub async fn wait(&self) {
        let mut rx = self.0.subscribe();
        // The sender lives as long as self.
        let _ = rx.wait_for(|ready| *ready).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use std::time::Duration;

    #[tokio::test]
    async fn every_task_waiting_for_a_watch_wakes_when_it_has_listed() {
        let ready = Readiness::default();
        let waiters: Vec<_> = (0..8)
            .map(|_| {
                let r = ready.clone();
                tokio::spawn(async move { r.wait().await })
            })
            .collect();
        tokio::task::yield_now().await;
        ready.observe::<ConfigMap>(&watcher::Event::Init);
        ready.observe::<ConfigMap>(&watcher::Event::InitDone);
        for w in waiters {
            tokio::time::timeout(Duration::from_secs(5), w)
                .await
                .expect("every waiter wakes")
                .unwrap();
        }
        ready.wait().await;
    }
}
