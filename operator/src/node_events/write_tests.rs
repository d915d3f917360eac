use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use combo_testkit::stand_in::{Answer, Request, StandIn};
use serde_json::Value;

use super::*;
use crate::node_events::queue::tests::event;
use crate::node_events::queue::Queue;
use crate::node_events::{BURST, WRITES_PER_SECOND};

const EVENTS: &str = "/api/v1/namespaces/default/events";

/// A stand-in that keeps Events as the API server does, for creates and
/// merge patches, answering `fail` for the names it gives a status.
fn api_server(fail: impl Fn(&Request) -> Option<u16> + Send + Sync + 'static) -> (Client, StandIn) {
    let kept: Mutex<BTreeMap<String, Value>> = Mutex::default();
    StandIn::answering(move |r| {
        if let Some(code) = fail(r) {
            return Answer::status(code, "Failed");
        }
        let mut kept = kept.lock().unwrap();
        match r.method.as_str() {
            "POST" => {
                let sent: Value = serde_json::from_str(&r.body).unwrap();
                let name = sent["metadata"]["name"].as_str().unwrap().to_string();
                if kept.contains_key(&name) {
                    return Answer::status(409, "AlreadyExists");
                }
                kept.insert(name, sent.clone());
                Answer::Json(201, sent)
            }
            "PATCH" => {
                let name = r.path().rsplit('/').next().unwrap();
                let Some(e) = kept.get_mut(name) else {
                    return Answer::status(404, "NotFound");
                };
                let patch: Value = serde_json::from_str(&r.body).unwrap();
                for (k, v) in patch.as_object().unwrap() {
                    e[k] = v.clone();
                }
                Answer::Json(200, e.clone())
            }
            _ => Answer::status(405, "MethodNotAllowed"),
        }
    })
}

/// Runs the writer over `events` until the stand-in has `requests`.
async fn write_all(
    stand_in: &StandIn,
    client: Client,
    events: Vec<NodeEvent>,
    requests: usize,
) -> Arc<Metrics> {
    let metrics = Arc::new(Metrics::default());
    let outbox = Outbox::new(Queue::default());
    outbox.push_all(events);
    let writer = tokio::spawn(run(client, outbox.clone(), metrics.clone()));
    while stand_in.count() < requests {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Nothing more comes.
    tokio::time::sleep(Duration::from_secs(60)).await;
    writer.abort();
    metrics
}

#[tokio::test(start_paused = true)]
async fn writes_keep_to_the_burst_then_the_rate() {
    let (client, stand_in) = api_server(|_| None);
    let events = (0..200).map(|i| event(&format!("e{i}"), 1, true)).collect();
    let metrics = write_all(&stand_in, client, events, 200).await;
    let seen = stand_in.requests();
    assert_eq!(seen.len(), 200, "one create each");
    assert!(seen.iter().all(|r| r.line() == format!("POST {EVENTS}")));
    let burst = BURST as usize;
    assert!(
        seen[..burst]
            .iter()
            .all(|r| r.at < Duration::from_millis(1)),
        "the burst goes at once"
    );
    let step = Duration::from_secs(1) / WRITES_PER_SECOND;
    for (i, r) in seen.iter().enumerate().skip(burst) {
        let due = step * (i + 1 - burst) as u32;
        assert!(
            r.at + Duration::from_millis(1) >= due,
            "write {i} at {:?}, before {due:?}",
            r.at
        );
    }
    // 150 past the burst at 10 a second: 15 s.
    assert!(
        seen[199].at <= Duration::from_millis(15_010),
        "{:?}",
        seen[199].at
    );
    assert_eq!(metrics.node_event_writes(EventWrite::Created), 200);
}

#[tokio::test(start_paused = true)]
async fn an_event_there_is_patched_and_one_gone_is_created() {
    let (client, stand_in) = api_server(|_| None);
    // The same Event created twice (a restart), then a repeat of a streak
    // whose Event is gone.
    let events = vec![event("a", 1, true), event("gone", 4, false)];
    let pre = event("a", 1, true);
    Api::<Event>::namespaced(client.clone(), NAMESPACE)
        .create(&PostParams::default(), &pre.object())
        .await
        .unwrap();
    let metrics = write_all(&stand_in, client, events, 5).await;
    assert_eq!(
        stand_in.lines(1),
        [
            format!("POST {EVENTS}"),
            format!("PATCH {EVENTS}/a"),
            format!("PATCH {EVENTS}/gone"),
            format!("POST {EVENTS}"),
        ]
    );
    let created: Value =
        serde_json::from_str(&stand_in.last_body(&format!("POST {EVENTS}")).unwrap()).unwrap();
    assert_eq!(created["metadata"]["name"], "gone");
    assert_eq!(created["count"], 4);
    assert_eq!(created["involvedObject"]["kind"], "Node");
    let patch = stand_in.last_body(&format!("PATCH {EVENTS}/a")).unwrap();
    assert!(patch.contains("\"count\":1"), "{patch}");
    assert!(stand_in.uris()[2].contains("fieldManager=combo-operator"));
    assert_eq!(metrics.node_event_writes(EventWrite::Patched), 1);
    assert_eq!(metrics.node_event_writes(EventWrite::Created), 1);
}

#[tokio::test(start_paused = true)]
async fn a_write_answered_later_is_tried_again_and_one_refused_is_dropped() {
    let tries = Mutex::new(0);
    let (client, stand_in) = api_server(move |r| {
        if r.body.contains("\"refused\"") {
            return Some(403);
        }
        let mut tries = tries.lock().unwrap();
        *tries += 1;
        (r.body.contains("\"busy\"") && *tries <= 1).then_some(500)
    });
    let events = vec![event("busy", 1, true), event("refused", 1, true)];
    let metrics = write_all(&stand_in, client, events, 3).await;
    assert_eq!(stand_in.count(), 3, "{:?}", stand_in.uris());
    let bodies: Vec<bool> = stand_in
        .requests()
        .iter()
        .map(|r| r.body.contains("\"busy\""))
        .collect();
    assert_eq!(
        bodies,
        [true, false, true],
        "the 500 again, after the others"
    );
    assert_eq!(metrics.node_event_writes(EventWrite::Failed), 2);
    assert_eq!(metrics.node_event_writes(EventWrite::Created), 1);
}
