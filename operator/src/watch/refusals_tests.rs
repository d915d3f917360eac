use super::*;
use chrono::TimeZone;
use k8s_openapi::api::apps::v1::DaemonSetStatus;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

fn at(second: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 28, 1, 0, second).unwrap()
}

/// The DaemonSet controller's `FailedCreate` Event on DaemonSet `name`,
/// last seen at `second`.
fn failed_create(name: &str, message: &str, second: u32) -> Event {
    let mut e = Event {
        involved_object: ObjectReference {
            kind: Some("DaemonSet".into()),
            name: Some(name.into()),
            namespace: Some("ops".into()),
            ..ObjectReference::default()
        },
        reason: Some(FAILED_CREATE.into()),
        message: Some(message.into()),
        last_timestamp: Some(Time(
            k8s_openapi::jiff::Timestamp::from_second(at(second).timestamp()).unwrap(),
        )),
        ..Event::default()
    };
    e.metadata.namespace = Some("ops".into());
    e.metadata.name = Some(format!("{name}.{second}"));
    e
}

/// DaemonSet `name` with `created` of `desired` pods.
fn daemonset(name: &str, desired: i32, created: i32) -> DaemonSet {
    let mut ds = DaemonSet::default();
    ds.metadata.name = Some(name.into());
    ds.metadata.namespace = Some("ops".into());
    ds.metadata.generation = Some(1);
    ds.status = Some(DaemonSetStatus {
        desired_number_scheduled: desired,
        current_number_scheduled: created,
        observed_generation: Some(1),
        ..DaemonSetStatus::default()
    });
    ds
}

const QUOTA: &str = "Error creating: pods \"d-x1\" is forbidden: exceeded quota: no-pods";

#[test]
fn a_refusal_counts_while_its_daemonset_misses_pods() {
    let r = Refusals::default();
    r.observe_daemonset(&watcher::Event::Apply(daemonset("d", 2, 0)), at(1));
    assert_eq!(r.describe("ops", "d"), None, "no Event yet");
    r.observe_event(&watcher::Event::Apply(failed_create("d", QUOTA, 2)));
    assert_eq!(r.describe("ops", "d").as_deref(), Some(QUOTA));
    assert_eq!(r.describe("ops", "other"), None);
    assert_eq!(r.describe("elsewhere", "d"), None);
    // The cause goes: the pods are created.
    r.observe_daemonset(&watcher::Event::Apply(daemonset("d", 2, 2)), at(30));
    assert_eq!(r.describe("ops", "d"), None);
    // A node joins and its pod is on its way: the old refusal says
    // nothing of it.
    r.observe_daemonset(&watcher::Event::Apply(daemonset("d", 3, 2)), at(40));
    assert_eq!(r.describe("ops", "d"), None);
    // A new refusal after that does.
    r.observe_event(&watcher::Event::Apply(failed_create("d", "newer", 45)));
    assert_eq!(r.describe("ops", "d").as_deref(), Some("newer"));
    // An older repeat arriving late does not replace it.
    r.observe_event(&watcher::Event::Apply(failed_create("d", QUOTA, 3)));
    assert_eq!(r.describe("ops", "d").as_deref(), Some("newer"));
    // The DaemonSet goes, and its refusal with it.
    r.observe_daemonset(&watcher::Event::Delete(daemonset("d", 3, 2)), at(50));
    assert_eq!(r.describe("ops", "d"), None);
}

#[test]
fn a_daemonset_whose_controller_never_finished_a_sync_misses_pods() {
    // A new DaemonSet whose pods are refused keeps the empty status: the
    // controller returns before writing it.
    let r = Refusals::default();
    let mut fresh = daemonset("d", 0, 0);
    fresh.status = None;
    r.observe_daemonset(&watcher::Event::Apply(fresh), at(1));
    r.observe_event(&watcher::Event::Apply(failed_create("d", QUOTA, 2)));
    assert_eq!(r.describe("ops", "d").as_deref(), Some(QUOTA));
    let mut unsynced = daemonset("d", 0, 0);
    unsynced.metadata.generation = Some(2);
    r.observe_daemonset(&watcher::Event::Apply(unsynced), at(3));
    assert_eq!(r.describe("ops", "d").as_deref(), Some(QUOTA));
    r.observe_daemonset(&watcher::Event::Apply(daemonset("d", 0, 0)), at(4));
    assert_eq!(r.describe("ops", "d"), None, "synced, and it wants no pod");
}

#[test]
fn an_event_older_than_the_daemonsets_last_complete_sighting_is_stale_after_a_restart() {
    let r = Refusals::default();
    // The operator starts: the DaemonSet has every pod, an hour-old Event
    // still tells of a refusal.
    r.observe_daemonset(&watcher::Event::InitApply(daemonset("d", 2, 2)), at(50));
    r.observe_event(&watcher::Event::Init);
    r.observe_event(&watcher::Event::InitApply(failed_create("d", QUOTA, 1)));
    r.observe_event(&watcher::Event::InitDone);
    r.observe_daemonset(&watcher::Event::Apply(daemonset("d", 3, 2)), at(55));
    assert_eq!(r.describe("ops", "d"), None);
}

#[test]
fn a_relist_replaces_the_refusals_and_an_expired_event_takes_its_own_along() {
    let r = Refusals::default();
    r.observe_daemonset(&watcher::Event::Apply(daemonset("d", 2, 0)), at(1));
    r.observe_daemonset(&watcher::Event::Apply(daemonset("e", 2, 0)), at(1));
    r.observe_event(&watcher::Event::Apply(failed_create("d", QUOTA, 2)));
    r.observe_event(&watcher::Event::Apply(failed_create("e", QUOTA, 2)));
    r.observe_event(&watcher::Event::Init);
    r.observe_event(&watcher::Event::InitApply(failed_create(
        "e", "relisted", 9,
    )));
    assert_eq!(
        r.describe("ops", "d").as_deref(),
        Some(QUOTA),
        "until the re-list ends"
    );
    r.observe_event(&watcher::Event::InitDone);
    assert_eq!(r.describe("ops", "d"), None);
    assert_eq!(r.describe("ops", "e").as_deref(), Some("relisted"));
    // The expiry of an older Event leaves the newer refusal.
    r.observe_event(&watcher::Event::Delete(failed_create("e", QUOTA, 2)));
    assert_eq!(r.describe("ops", "e").as_deref(), Some("relisted"));
    r.observe_event(&watcher::Event::Delete(failed_create("e", "relisted", 9)));
    assert_eq!(r.describe("ops", "e"), None);
}

#[test]
fn only_failed_creations_of_daemonsets_count_and_long_messages_are_cut() {
    let r = Refusals::default();
    r.observe_daemonset(&watcher::Event::Apply(daemonset("d", 1, 0)), at(1));
    let mut other = failed_create("d", QUOTA, 2);
    other.reason = Some("SuccessfulCreate".into());
    r.observe_event(&watcher::Event::Apply(other));
    let mut replica_set = failed_create("d", QUOTA, 2);
    replica_set.involved_object.kind = Some("ReplicaSet".into());
    r.observe_event(&watcher::Event::Apply(replica_set));
    assert_eq!(r.describe("ops", "d"), None);
    let long = format!("Error creating: {}denied by webhook", "x".repeat(2000));
    r.observe_event(&watcher::Event::Apply(failed_create("d", &long, 3)));
    let kept = r.describe("ops", "d").unwrap();
    assert!(
        kept.len() <= crate::watch::waiting::MESSAGE_MAX,
        "{}",
        kept.len()
    );
    assert!(kept.starts_with("Error creating") && kept.ends_with("denied by webhook"));
    assert_eq!(
        field_selector(),
        "involvedObject.kind=DaemonSet,reason=FailedCreate"
    );
}
