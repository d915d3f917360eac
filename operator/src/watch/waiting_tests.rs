use super::*;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ContainerState, ContainerStateWaiting, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

const PULL_ERROR: &str = "rpc error: code = Unknown desc = failed to pull and unpack image \"172.31.0.1:5001/kube-combo/runner:dev\": 401 Unauthorized";

/// Pod `name` of Debugger `dbg` in `ops`, its runner waiting for `reason`
/// (running when `None`).
fn pod(dbg: &str, name: &str, reason: Option<(&str, &str)>) -> Pod {
    let mut p = Pod::default();
    p.metadata.name = Some(name.into());
    p.metadata.namespace = Some("ops".into());
    p.metadata.labels = Some([(keys::LABEL_DEBUGGER.to_string(), dbg.to_string())].into());
    let state = reason.map(|(r, m)| ContainerState {
        waiting: Some(ContainerStateWaiting {
            reason: Some(r.into()),
            message: Some(m.into()),
        }),
        ..ContainerState::default()
    });
    p.status = Some(PodStatus {
        container_statuses: Some(vec![ContainerStatus {
            name: "runner".into(),
            state,
            ..ContainerStatus::default()
        }]),
        ..PodStatus::default()
    });
    p
}

fn key(dbg: &str) -> Key {
    ("ops".into(), dbg.into())
}

fn taken(waits: &Waits) -> BTreeSet<Key> {
    std::mem::take(&mut waits.inner.lock().unwrap().changed)
}

#[test]
fn a_container_on_its_way_does_not_wait_and_a_pull_failure_does() {
    assert_eq!(wait_of(&pod("d", "p", None)), None);
    assert_eq!(
        wait_of(&pod("d", "p", Some(("ContainerCreating", "")))),
        None
    );
    let w = wait_of(&pod("d", "p", Some(("ErrImagePull", PULL_ERROR)))).unwrap();
    assert_eq!(
        (w.container.as_str(), w.reason.as_str()),
        ("runner", "ErrImagePull")
    );
    let long = format!("{}{PULL_ERROR}", "é".repeat(400));
    let kept = wait_of(&pod("d", "p", Some(("ErrImagePull", &long)))).unwrap();
    assert!(kept.message.len() <= MESSAGE_MAX, "{}", kept.message.len());
    assert!(kept.message.starts_with("éé"), "the start is kept");
    assert!(kept.message.contains(" ... "));
    assert!(
        kept.message.ends_with("401 Unauthorized"),
        "the cause at the end is kept"
    );
}

#[test]
fn the_message_names_the_reasons_and_keeps_the_pull_error_through_the_back_off() {
    let waits = Waits::default();
    let image = "Back-off pulling image \"172.31.0.1:5001/kube-combo/runner:dev\"";
    waits.observe(&Event::Apply(pod(
        "d",
        "d-a",
        Some(("ErrImagePull", PULL_ERROR)),
    )));
    waits.observe(&Event::Apply(pod(
        "d",
        "d-b",
        Some(("ErrImagePull", PULL_ERROR)),
    )));
    waits.observe(&Event::Apply(pod(
        "d",
        "d-a",
        Some(("ImagePullBackOff", image)),
    )));
    assert_eq!(
        waits.describe("ops", "d").unwrap(),
        format!("pods waiting: ErrImagePull on 1 pod, ImagePullBackOff on 1 pod; pod d-b, container runner: ErrImagePull: {PULL_ERROR}")
    );
    waits.observe(&Event::Apply(pod(
        "d",
        "d-b",
        Some(("ImagePullBackOff", image)),
    )));
    assert_eq!(
        waits.describe("ops", "d").unwrap(),
        format!("pods waiting: ImagePullBackOff on 2 pods; pod d-a, container runner: ImagePullBackOff: {image} (after ErrImagePull: {PULL_ERROR})")
    );
    // Back to ErrImagePull and off again: the newest error is kept.
    waits.observe(&Event::Apply(pod(
        "d",
        "d-a",
        Some(("ErrImagePull", "not found")),
    )));
    waits.observe(&Event::Apply(pod(
        "d",
        "d-a",
        Some(("ImagePullBackOff", image)),
    )));
    assert!(waits
        .describe("ops", "d")
        .unwrap()
        .ends_with("(after ErrImagePull: not found)"));
    assert_eq!(waits.describe("ops", "other"), None);
}

#[test]
fn many_reasons_are_listed_up_to_the_bound() {
    let pods: BTreeMap<String, Wait> = (0..6)
        .map(|i| {
            (
                format!("p{i}"),
                Wait {
                    container: "runner".into(),
                    reason: format!("Reason{i}"),
                    message: "m".into(),
                    cause: None,
                },
            )
        })
        .collect();
    let m = describe(&pods).unwrap();
    assert!(m.starts_with("pods waiting: Reason0 on 1 pod, Reason1 on 1 pod, Reason2 on 1 pod, Reason3 on 1 pod, 2 more reasons; pod p0"), "{m}");
}

#[test]
fn a_pod_that_runs_is_deleted_or_is_not_listed_again_is_forgotten() {
    let waits = Waits::default();
    let failing = |name: &str| pod("d", name, Some(("ErrImagePull", PULL_ERROR)));
    for name in ["d-a", "d-b", "d-c"] {
        waits.observe(&Event::Apply(failing(name)));
    }
    assert_eq!(waits.len(), 3);
    waits.observe(&Event::Apply(pod("d", "d-a", None)));
    waits.observe(&Event::Delete(failing("d-b")));
    let mut terminating = failing("d-c");
    terminating.metadata.deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
    waits.observe(&Event::Apply(terminating));
    assert!(waits.is_empty());
    assert!(
        waits.inner.lock().unwrap().pods.is_empty(),
        "no Debugger entry is left"
    );

    waits.observe(&Event::Apply(failing("d-a")));
    waits.observe(&Event::Apply(pod(
        "e",
        "e-a",
        Some(("ErrImagePull", PULL_ERROR)),
    )));
    waits.observe(&Event::Init);
    waits.observe(&Event::InitApply(failing("d-a")));
    assert_eq!(
        waits.len(),
        2,
        "a re-list replaces the pods when it is done"
    );
    waits.observe(&Event::InitDone);
    assert_eq!(waits.len(), 1);
    assert_eq!(waits.describe("ops", "e"), None);
}

#[test]
fn a_debugger_is_noted_when_the_reasons_of_its_pods_change_only() {
    let waits = Waits::default();
    waits.observe(&Event::Apply(pod(
        "d",
        "d-a",
        Some(("ErrImagePull", PULL_ERROR)),
    )));
    assert_eq!(taken(&waits), [key("d")].into());
    // Another pod with the same reason, a new message: nothing to show anew.
    waits.observe(&Event::Apply(pod(
        "d",
        "d-b",
        Some(("ErrImagePull", "other")),
    )));
    waits.observe(&Event::Apply(pod(
        "d",
        "d-a",
        Some(("ErrImagePull", "other")),
    )));
    assert!(taken(&waits).is_empty());
    waits.observe(&Event::Apply(pod("d", "d-a", None)));
    assert!(
        taken(&waits).is_empty(),
        "d-b still waits for the same reason"
    );
    waits.observe(&Event::Apply(pod("d", "d-b", None)));
    assert_eq!(taken(&waits), [key("d")].into());
    // A re-list that finds a new wait notes its Debugger too.
    waits.observe(&Event::Init);
    waits.observe(&Event::InitApply(pod(
        "e",
        "e-a",
        Some(("CrashLoopBackOff", "")),
    )));
    waits.observe(&Event::InitDone);
    assert_eq!(taken(&waits), [key("e")].into());
}

#[tokio::test]
async fn the_trigger_stream_yields_each_noted_debugger_once() {
    let waits = Waits::default();
    let mut triggers = Box::pin(waits.triggers());
    waits.observe(&Event::Apply(pod(
        "d",
        "d-a",
        Some(("ErrImagePull", PULL_ERROR)),
    )));
    waits.observe(&Event::Apply(pod(
        "d",
        "d-a",
        Some(("ImagePullBackOff", "")),
    )));
    waits.observe(&Event::Apply(pod(
        "e",
        "e-a",
        Some(("ErrImagePull", PULL_ERROR)),
    )));
    let first = triggers.next().await.unwrap();
    let second = triggers.next().await.unwrap();
    assert_eq!([first.name.as_str(), second.name.as_str()], ["d", "e"]);
    assert!(
        futures::poll!(triggers.next()).is_pending(),
        "nothing more until a change"
    );
    waits.observe(&Event::Apply(pod("d", "d-a", None)));
    assert_eq!(triggers.next().await.unwrap().name, "d");
}
