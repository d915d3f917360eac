//! Recent writes: a watch lags behind the operator's own writes by a few
//! milliseconds. So that a reconcile in that gap does not write the same
//! object again (and record a second `WorkloadCreated`), every object the
//! operator writes is kept as the API server returned it until the watch
//! shows that spec hash, for at most [`RECENT_TTL`]; [`crate::debugger::observe`] reads
//! it in place of what the [`crate::state::cache`] holds.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::runtime::watcher;
use kube::Resource;

use crate::core::spec_hash::spec_hash_of;

/// How long an object the operator wrote stands in for what the watch shows.
pub const RECENT_TTL: Duration = Duration::from_secs(30);

/// Namespace and name: what every cache keys an object by.
pub(crate) type Key = (String, String);

pub(crate) fn key_of(meta: &ObjectMeta) -> Key {
    (
        meta.namespace.clone().unwrap_or_default(),
        meta.name.clone().unwrap_or_default(),
    )
}

/// Objects the operator wrote, as the API server returned them. Clones
/// share the record.
pub struct Recent<T> {
    entries: Arc<Mutex<HashMap<Key, (T, Instant)>>>,
}

impl<T> Clone for Recent<T> {
    fn clone(&self) -> Self {
        Recent {
            entries: self.entries.clone(),
        }
    }
}

impl<T> Default for Recent<T> {
    fn default() -> Self {
        Recent {
            entries: Default::default(),
        }
    }
}

impl<T: Clone> Recent<T> {
    /// Keeps `obj`, written just now.
    pub fn record(&self, meta: &ObjectMeta, obj: T) {
        self.record_at(meta, obj, Instant::now());
    }

    /// Keeps `obj`, written at `now`, and forgets every record older than
    /// [`RECENT_TTL`]: the record holds what was written in the last 30 s.
    fn record_at(&self, meta: &ObjectMeta, obj: T, now: Instant) {
        let mut e = self.entries.lock().expect("recent lock");
        e.retain(|_, (_, at)| now.saturating_duration_since(*at) < RECENT_TTL);
        e.insert(key_of(meta), (obj, now));
    }

    /// What to read for `ns`/`name`: `watched` once it shows the spec hash
    /// the operator wrote (or once the record is older than [`RECENT_TTL`]),
    /// else the written object. `meta` gives an object's metadata.
    pub fn merge(
        &self,
        ns: &str,
        name: &str,
        watched: Option<T>,
        meta: impl Fn(&T) -> &ObjectMeta,
    ) -> Option<T> {
        let key = (ns.to_string(), name.to_string());
        let mut e = self.entries.lock().expect("recent lock");
        let Some((written, at)) = e.get(&key) else {
            return watched;
        };
        let caught_up = watched
            .as_ref()
            .is_some_and(|w| spec_hash_of(meta(w)) == spec_hash_of(meta(written)));
        if caught_up || at.elapsed() >= RECENT_TTL {
            e.remove(&key);
            return watched;
        }
        Some(written.clone())
    }

    /// Forgets an object the watch saw deleted: from then on the watch
    /// decides, so a workload deleted right after a write is recreated.
    pub fn observe<K: Resource>(&self, event: &watcher::Event<K>) {
        if let watcher::Event::Delete(obj) = event {
            let (ns, name) = key_of(obj.meta());
            self.forget(&ns, &name);
        }
    }

    /// Forgets `ns`/`name` (the operator deleted it).
    pub fn forget(&self, ns: &str, name: &str) {
        let mut e = self.entries.lock().expect("recent lock");
        e.remove(&(ns.to_string(), name.to_string()));
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use std::collections::BTreeMap;

    /// Summary ConfigMap `ops/<name>` annotated with spec hash `hash`, one
    /// data entry per (key, value) of `nodes`; the cache's tests use it too.
    pub(crate) fn cm(name: &str, hash: &str, nodes: &[(&str, &str)]) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ops".into()),
                annotations: Some(BTreeMap::from([(
                    crate::core::spec_hash::ANNOTATION_SPEC_HASH.to_string(),
                    hash.to_string(),
                )])),
                ..ObjectMeta::default()
            },
            data: Some(
                nodes
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            ..ConfigMap::default()
        }
    }

    #[test]
    fn records_older_than_the_ttl_are_forgotten_at_the_next_write() {
        let r: Recent<ConfigMap> = Recent::default();
        let start = Instant::now();
        for name in ["a", "b", "c"] {
            r.record_at(&cm(name, "h", &[]).metadata, cm(name, "h", &[]), start);
        }
        assert_eq!(r.entries.lock().unwrap().len(), 3);
        let later = start + RECENT_TTL + Duration::from_secs(1);
        r.record_at(&cm("d", "h", &[]).metadata, cm("d", "h", &[]), later);
        let e = r.entries.lock().unwrap();
        assert_eq!(e.keys().map(|(_, n)| n.as_str()).collect::<Vec<_>>(), ["d"]);
    }

    #[test]
    fn a_written_object_stands_in_until_the_watch_shows_its_hash() {
        let r: Recent<ConfigMap> = Recent::default();
        fn meta(c: &ConfigMap) -> &ObjectMeta {
            &c.metadata
        }
        assert_eq!(r.merge("ops", "a", None, meta), None);
        r.record(&cm("a", "new", &[]).metadata, cm("a", "new", &[]));
        let got = |w: Option<ConfigMap>| {
            r.merge("ops", "a", w, meta)
                .map(|c| spec_hash_of(&c.metadata).map(str::to_string))
        };
        assert_eq!(got(None), Some(Some("new".into())), "watch has nothing yet");
        assert_eq!(
            got(Some(cm("a", "old", &[]))),
            Some(Some("new".into())),
            "watch shows the old version"
        );
        assert_eq!(got(Some(cm("a", "new", &[]))), Some(Some("new".into())));
        assert_eq!(got(None), None, "caught up once: the watch decides again");
        r.record(&cm("a", "x", &[]).metadata, cm("a", "x", &[]));
        r.forget("ops", "a");
        assert_eq!(got(None), None);
        r.record(&cm("a", "y", &[]).metadata, cm("a", "y", &[]));
        r.clone()
            .observe(&watcher::Event::Delete(cm("a", "y", &[])));
        assert_eq!(got(None), None, "deleted: the watch decides");
    }
}
