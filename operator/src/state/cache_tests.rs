use super::*;
use crate::core::spec_hash::spec_hash_of;
use crate::state::own_writes::tests::cm;
use combo_testkit::fixtures::{debugger, pinger};

type Account = k8s_openapi::api::core::v1::ServiceAccount;

fn account(name: &str) -> Account {
    Account {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("ops".into()),
            ..ObjectMeta::default()
        },
        ..Default::default()
    }
}

#[test]
fn names_follow_the_watch_and_shrink_with_deletions_and_relists() {
    let n = Names::default();
    n.observe(&watcher::Event::<Account>::Init);
    n.observe(&watcher::Event::InitApply(account("a")));
    n.observe(&watcher::Event::InitApply(account("b")));
    assert!(!n.contains("ops", "a"), "not before the list is done");
    n.observe(&watcher::Event::<Account>::InitDone);
    assert!(n.contains("ops", "a") && n.contains("ops", "b"));
    n.observe(&watcher::Event::Delete(account("a")));
    assert!(!n.contains("ops", "a"), "deleted by hand");
    n.note("ops", "a", Some("u2".into()));
    assert!(n.contains("ops", "a"), "written again");
    n.observe(&watcher::Event::Apply(account("c")));
    assert_eq!(n.len(), 3);
    // A re-list keeps only what it lists: "b" went while the watch was
    // down, and a name noted but never listed goes too.
    n.observe(&watcher::Event::<Account>::Init);
    n.observe(&watcher::Event::InitApply(account("c")));
    n.observe(&watcher::Event::<Account>::InitDone);
    assert!(n.contains("ops", "c"));
    assert_eq!(n.len(), 1);
}

#[test]
fn config_maps_follow_the_watch_and_a_relist_drops_what_is_gone() {
    let s = ConfigMaps::default();
    let node = "runAt: \"2026-11-22T06:00:00Z\"\ndisk:\n  sdb1:\n    err: full\n";
    s.observe(&watcher::Event::<ConfigMap>::Init);
    s.observe(&watcher::Event::InitApply(cm("a", "h", &[("n1", node)])));
    s.observe(&watcher::Event::InitApply(cm("b", "h", &[])));
    assert_eq!(s.get("ops", "a"), None, "not visible before the list ends");
    s.observe(&watcher::Event::<ConfigMap>::InitDone);
    let a = s.get("ops", "a").unwrap();
    assert_eq!(spec_hash_of(&a.metadata), Some("h"));
    assert!(!a.foreign_managers);
    s.observe(&watcher::Event::Delete(cm("b", "h", &[])));
    assert_eq!(s.get("ops", "b"), None);
    s.observe(&watcher::Event::Apply(cm("b", "h", &[])));
    s.observe(&watcher::Event::<ConfigMap>::Init);
    s.observe(&watcher::Event::InitApply(cm("b", "h2", &[])));
    s.observe(&watcher::Event::<ConfigMap>::InitDone);
    assert_eq!(s.get("ops", "a"), None, "gone while the watch was down");
    assert_eq!(
        spec_hash_of(&s.get("ops", "b").unwrap().metadata),
        Some("h2")
    );
}

#[test]
fn a_summary_written_by_runners_or_by_hand_is_marked_for_takeover() {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
    let entry = |manager: &str, operation: &str| ManagedFieldsEntry {
        manager: Some(manager.into()),
        operation: Some(operation.into()),
        ..Default::default()
    };
    let mut c = cm("a", "h", &[]);
    c.metadata.managed_fields = Some(vec![entry("combo-operator", "Apply")]);
    assert!(!Summary::of(&c).foreign_managers);
    assert_eq!(Summary::of(&c).metadata.managed_fields, None, "not kept");
    c.metadata.managed_fields = Some(vec![
        entry("combo-operator", "Apply"),
        entry("combo-runner/node-1", "Apply"),
    ]);
    assert!(Summary::of(&c).foreign_managers);
    c.metadata.managed_fields = Some(vec![entry("kubectl-create", "Update")]);
    assert!(Summary::of(&c).foreign_managers);
}

/// A store as a watch fills it: `listed` listed, then `deleted` gone.
fn store_after<K>(listed: &[K], deleted: &K, relisted: &[K]) -> Vec<String>
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    let (store, mut writer) = kube::runtime::reflector::store::<K>();
    writer.apply_watcher_event(&watcher::Event::Init);
    for o in listed {
        writer.apply_watcher_event(&watcher::Event::InitApply(o.clone()));
    }
    writer.apply_watcher_event(&watcher::Event::InitDone);
    writer.apply_watcher_event(&watcher::Event::Delete(deleted.clone()));
    let after_delete = store.state().len();
    assert_eq!(after_delete, listed.len() - 1, "a deletion shrinks it");
    writer.apply_watcher_event(&watcher::Event::Init);
    for o in relisted {
        writer.apply_watcher_event(&watcher::Event::InitApply(o.clone()));
    }
    writer.apply_watcher_event(&watcher::Event::InitDone);
    let mut names: Vec<String> = store
        .state()
        .iter()
        .map(|o| o.meta().name.clone().unwrap_or_default())
        .collect();
    names.sort();
    names
}

#[test]
fn the_object_stores_hold_only_what_exists() {
    // The stores the reconciles read (and the Debugger store) hold what
    // the watch last showed: a deletion or a re-list drops the rest.
    fn check<K>(new: impl Fn(&str) -> K)
    where
        K: Resource<DynamicType = ()> + Clone + 'static,
    {
        let all: Vec<K> = ["a", "b", "c"]
            .into_iter()
            .map(|name| {
                let mut o = new(name);
                o.meta_mut().namespace = Some("ops".into());
                o
            })
            .collect();
        let left = store_after(&all, &all[0], &all[2..]);
        assert_eq!(left, ["c"], "{}", K::kind(&()));
    }
    fn meta(name: &str) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        }
    }
    check(|n| DaemonSet {
        metadata: meta(n),
        ..Default::default()
    });
    check(|n| Pod {
        metadata: meta(n),
        ..Default::default()
    });
    check(|n| Role {
        metadata: meta(n),
        ..Default::default()
    });
    check(|n| pinger("ops", n).build());
    check(|n| debugger("ops", n).build());
}

/// ConfigMap `name` in `ops`, controlled by UID `uid` if given.
fn controlled_cm(name: &str, uid: Option<&str>) -> ConfigMap {
    let mut c = cm(name, "h", &[]);
    c.metadata.uid = Some(format!("uid-of-{name}"));
    c.metadata.owner_references = uid.map(|u| {
        vec![
            k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
                api_version: "kubecombo.io/v1".into(),
                kind: "Debugger".into(),
                name: "d".into(),
                uid: u.into(),
                controller: Some(true),
                ..Default::default()
            },
        ]
    });
    c
}

#[test]
fn config_maps_are_found_by_their_controller_as_the_watch_shows_them() {
    let c = ConfigMaps::default();
    let names = |uid: &str| -> Vec<String> {
        c.controlled_by("ops", uid)
            .into_iter()
            .filter_map(|s| s.metadata.name)
            .collect()
    };
    c.observe(&watcher::Event::<ConfigMap>::Init);
    c.observe(&watcher::Event::InitApply(controlled_cm("a", Some("u1"))));
    c.observe(&watcher::Event::InitApply(controlled_cm("b", Some("u1"))));
    c.observe(&watcher::Event::InitApply(controlled_cm("user", None)));
    c.observe(&watcher::Event::<ConfigMap>::InitDone);
    assert_eq!(names("u1"), ["a", "b"]);
    c.observe(&watcher::Event::Delete(controlled_cm("a", Some("u1"))));
    assert_eq!(names("u1"), ["b"]);
    // Its controller changed: it is not u1's any more.
    c.observe(&watcher::Event::Apply(controlled_cm("b", Some("u2"))));
    assert_eq!(names("u1"), Vec::<String>::new());
    assert_eq!(names("u2"), ["b"]);
    // A re-list keeps only what it lists.
    c.observe(&watcher::Event::<ConfigMap>::Init);
    c.observe(&watcher::Event::<ConfigMap>::InitDone);
    assert!(names("u2").is_empty());
}
