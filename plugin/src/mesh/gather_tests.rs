use std::collections::BTreeMap;

use combo_testkit::stand_in::{Answer, StandIn};
use serde_json::json;

use super::*;

fn probers(n: usize) -> Vec<Prober> {
    (0..n)
        .map(|i| Prober {
            pod: format!("ds-{i}"),
            node: format!("node-{i}"),
            ips: vec![format!("10.1.{}.{}", i / 250, i % 250)],
        })
        .collect()
}

fn summary() -> Answer {
    Answer::Json(
        200,
        json!({"windowSeconds": 300, "targets": [
            {"kind": "icmp", "target": "10.1.0.1", "sent": 60, "lost": 0, "rttAvgMs": 0.4, "up": true}]}),
    )
}

#[tokio::test(start_paused = true)]
async fn a_thousand_pingers_are_asked_once_each_at_most_32_at_a_time() {
    let (client, stand_in) =
        StandIn::answering(|_| Answer::After(Duration::from_millis(100), Box::new(summary())));
    let probers = probers(1000);
    let started = tokio::time::Instant::now();
    let answers = gather(&client, "ops", 8080, &probers, LIMITS).await;
    let took = started.elapsed();
    assert_eq!(answers.len(), 1000);
    assert!(answers.iter().all(|(_, a)| a.is_ok()));
    let requests = stand_in.requests();
    assert_eq!(requests.len(), 1000, "one GET per pinger");
    assert_eq!(
        requests[7].uri,
        format!("/api/v1/namespaces/ops/pods/{}:8080/proxy/recent", {
            let pod = requests[7].uri.split('/').nth(6).unwrap();
            pod.trim_end_matches(":8080").to_string()
        })
    );
    let mut waves: BTreeMap<Duration, usize> = BTreeMap::new();
    for r in &requests {
        assert_eq!(r.method, "GET");
        *waves.entry(r.at).or_default() += 1;
    }
    assert_eq!(waves.values().max(), Some(&32), "in flight at once");
    assert_eq!(waves.len(), 32, "1,000 at 32 a wave");
    // 32 waves of 100 ms: the time a real API server's proxy takes sets
    // the pace, and 8 s caps it.
    assert_eq!(took, Duration::from_millis(3200));
}

#[tokio::test(start_paused = true)]
async fn silent_and_refusing_pingers_are_named_and_the_whole_stops_at_the_deadline() {
    let (client, _stand_in) = StandIn::answering(|r| {
        let pod = r.path().split('/').nth(6).unwrap_or_default().to_string();
        match pod.as_str() {
            "ds-1:8080" => Answer::Never,
            "ds-2:8080" => Answer::status(503, "error trying to reach service: connection refused"),
            "ds-3:8080" => Answer::ok("# HELP not json"),
            _ => Answer::After(Duration::from_millis(500), Box::new(summary())),
        }
    });
    let limits = Limits {
        in_flight: 2,
        per_pod: Duration::from_secs(3),
        overall: Duration::from_secs(4),
    };
    let started = tokio::time::Instant::now();
    let answers: BTreeMap<usize, Result<Recent, String>> =
        gather(&client, "ops", 8080, &probers(40), limits)
            .await
            .into_iter()
            .collect();
    assert_eq!(
        started.elapsed(),
        Duration::from_secs(4),
        "the deadline holds"
    );
    assert_eq!(answers.len(), 40, "every pinger has an answer or a reason");
    assert!(answers[&0].is_ok());
    assert_eq!(answers[&1].as_ref().unwrap_err(), "no answer within 3 s");
    assert!(answers[&2]
        .as_ref()
        .unwrap_err()
        .contains("connection refused (503)"));
    assert!(answers[&3]
        .as_ref()
        .unwrap_err()
        .starts_with("not a pinger summary"));
    assert_eq!(
        answers[&39].as_ref().unwrap_err(),
        "not asked or not answered within 4 s"
    );
}
