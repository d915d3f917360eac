//! What a watch has listed: whether it has listed once ([`Readiness`]),
//! which the caches wait for before they answer, and the map of what it
//! listed and saw since ([`Index`]), which the ConfigMap, name and report
//! caches keep.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard};

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

/// One object's change, as an [`Index`] files it.
pub enum Change<'a, O> {
    /// Added, modified or listed.
    Apply(&'a O),
    /// Deleted.
    Delete(&'a O),
}

/// A map kept by a watch: applies and deletions change it at once; a
/// (re)list is gathered aside and replaces it when the list ends, so what
/// went while the watch was down goes, and nothing of the first list shows
/// before it is complete. Clones share it.
pub struct Index<K, V> {
    maps: Arc<Mutex<Maps<K, V>>>,
    ready: Readiness,
}

struct Maps<K, V> {
    live: HashMap<K, V>,
    /// Filled while the watch (re)lists; replaces `live` when it is done.
    listing: Option<HashMap<K, V>>,
}

impl<K, V> Default for Index<K, V> {
    fn default() -> Self {
        Index {
            maps: Arc::new(Mutex::new(Maps {
                live: HashMap::new(),
                listing: None,
            })),
            ready: Readiness::default(),
        }
    }
}

impl<K, V> Clone for Index<K, V> {
    fn clone(&self) -> Self {
        Index {
            maps: self.maps.clone(),
            ready: self.ready.clone(),
        }
    }
}

impl<K: Eq + Hash, V> Index<K, V> {
    fn lock(&self) -> MutexGuard<'_, Maps<K, V>> {
        self.maps.lock().expect("index lock")
    }

    /// Applies one watch event; `file` puts each object's change into the
    /// map (the one kept, or the one a list gathers).
    pub fn observe_with<O>(
        &self,
        event: &watcher::Event<O>,
        mut file: impl FnMut(&mut HashMap<K, V>, Change<'_, O>),
    ) {
        {
            let mut guard = self.lock();
            let maps = &mut *guard;
            match event {
                watcher::Event::Apply(o) => file(&mut maps.live, Change::Apply(o)),
                watcher::Event::Delete(o) => file(&mut maps.live, Change::Delete(o)),
                watcher::Event::Init => maps.listing = Some(HashMap::new()),
                watcher::Event::InitApply(o) => file(
                    maps.listing.get_or_insert_with(HashMap::new),
                    Change::Apply(o),
                ),
                watcher::Event::InitDone => {
                    if let Some(listed) = maps.listing.take() {
                        maps.live = listed;
                    }
                }
            }
        }
        self.ready.observe(event);
    }

    /// Applies one watch event, one entry per object: an apply keeps
    /// `value(o)` under `key(o)`, a deletion removes `key(o)`.
    pub fn observe<O>(
        &self,
        event: &watcher::Event<O>,
        key: impl Fn(&O) -> K,
        value: impl Fn(&O) -> V,
    ) {
        self.observe_with(event, |map, change| match change {
            Change::Apply(o) => {
                map.insert(key(o), value(o));
            }
            Change::Delete(o) => {
                map.remove(&key(o));
            }
        });
    }

    /// The value kept under `key`.
    pub fn get<Q>(&self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Eq + Hash + ?Sized,
        V: Clone,
    {
        self.lock().live.get(key).cloned()
    }

    /// Keeps `value` under `key` now, before the watch shows it (the next
    /// list drops it unless it lists it).
    pub fn insert(&self, key: K, value: V) {
        self.lock().live.insert(key, value);
    }

    /// Changes the value kept under `key`, if there is one.
    pub fn update<Q>(&self, key: &Q, change: impl FnOnce(&mut V))
    where
        K: Borrow<Q>,
        Q: Eq + Hash + ?Sized,
    {
        if let Some(v) = self.lock().live.get_mut(key) {
            change(v);
        }
    }

    /// `f` of every entry kept, where it gives something.
    pub fn filter_map<T>(&self, mut f: impl FnMut(&K, &V) -> Option<T>) -> Vec<T> {
        self.lock()
            .live
            .iter()
            .filter_map(|(k, v)| f(k, v))
            .collect()
    }

    /// How many entries are kept.
    pub fn len(&self) -> usize {
        self.lock().live.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the watch has listed once.
    pub fn ready(&self) -> &Readiness {
        &self.ready
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

    fn cm(name: &str, data: &str) -> ConfigMap {
        ConfigMap {
            metadata: kube::api::ObjectMeta {
                name: Some(name.into()),
                ..Default::default()
            },
            data: Some([("k".to_string(), data.to_string())].into()),
            ..Default::default()
        }
    }

    /// An index of ConfigMaps by name, keeping their value of `k`.
    fn feed(index: &Index<String, String>, event: watcher::Event<ConfigMap>) {
        index.observe(
            &event,
            |c| c.metadata.name.clone().unwrap_or_default(),
            |c| {
                c.data
                    .as_ref()
                    .and_then(|d| d.get("k").cloned())
                    .unwrap_or_default()
            },
        );
    }

    #[tokio::test]
    async fn nothing_of_the_first_list_shows_before_it_ends() {
        let index = Index::default();
        feed(&index, watcher::Event::Init);
        feed(&index, watcher::Event::InitApply(cm("a", "1")));
        assert_eq!(index.get("a"), None);
        assert!(index.is_empty());
        let waiter = tokio::spawn({
            let ready = index.ready().clone();
            async move { ready.wait().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished(), "ready before the list ended");
        feed(&index, watcher::Event::InitDone);
        tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("ready once listed")
            .unwrap();
        assert_eq!(index.get("a").as_deref(), Some("1"));
    }

    #[test]
    fn applies_and_deletes_change_the_index_at_once() {
        let index = Index::default();
        feed(&index, watcher::Event::Init);
        feed(&index, watcher::Event::InitDone);
        feed(&index, watcher::Event::Apply(cm("a", "1")));
        feed(&index, watcher::Event::Apply(cm("b", "1")));
        feed(&index, watcher::Event::Apply(cm("a", "2")));
        assert_eq!(index.get("a").as_deref(), Some("2"), "the newest kept");
        feed(&index, watcher::Event::Delete(cm("b", "1")));
        assert_eq!(index.get("b"), None);
        assert_eq!(index.len(), 1);
        index.update("a", |v| v.push('!'));
        index.update("b", |v| v.push('!'));
        assert_eq!(index.get("a").as_deref(), Some("2!"));
        assert_eq!(index.get("b"), None, "an update adds nothing");
    }

    #[test]
    fn a_relist_replaces_the_index_and_drops_what_is_gone() {
        let index = Index::default();
        let clone = index.clone();
        feed(&index, watcher::Event::Init);
        feed(&index, watcher::Event::InitApply(cm("a", "1")));
        feed(&index, watcher::Event::InitApply(cm("b", "1")));
        feed(&index, watcher::Event::InitDone);
        index.insert("noted".into(), "0".into());
        assert_eq!(clone.len(), 3, "clones share it");
        feed(&index, watcher::Event::Init);
        feed(&index, watcher::Event::InitApply(cm("b", "2")));
        assert_eq!(
            index.get("a").as_deref(),
            Some("1"),
            "the old list serves until the new one ends"
        );
        feed(&index, watcher::Event::InitDone);
        assert_eq!(index.get("a"), None, "gone while the watch was down");
        assert_eq!(index.get("noted"), None, "noted but never listed");
        assert_eq!(index.get("b").as_deref(), Some("2"));
        assert_eq!(clone.len(), 1);
    }
}
