use super::*;
use combo_testkit::stand_in::{Answer, StandIn};
use serde_json::json;

fn columns() -> Value {
    json!([{"name": "Name"}, {"name": "Ready"}, {"name": "Status"}, {"name": "IP"}])
}

/// The next update, or None when none comes within a minute (of paused
/// time).
async fn next_any(rx: &mut mpsc::Receiver<Update>) -> Option<Update> {
    tokio::time::timeout(Duration::from_secs(60), rx.recv())
        .await
        .ok()
        .flatten()
}

/// The next update other than the nodes of peers.
async fn next(rx: &mut mpsc::Receiver<Update>) -> Option<Update> {
    loop {
        match next_any(rx).await {
            Some(Update::PeerNodes(_) | Update::PeerNode(..)) => continue,
            other => return other,
        }
    }
}

#[tokio::test(start_paused = true)]
async fn each_peer_comes_with_its_node() {
    let defs = json!([{"name": "Name"}, {"name": "Ready"}, {"name": "Status"},
        {"name": "IP"}, {"name": "Node"}]);
    let list = json!({
        "kind": "Table", "metadata": {"resourceVersion": "5"},
        "columnDefinitions": defs,
        "rows": [
            {"cells": ["a", "1/1", "Running", "10.0.0.1", "node-a"]},
            {"cells": ["p", "1/1", "Pending", "", "<none>"]}
        ]
    });
    let added = json!({"type": "ADDED", "object": {"kind": "Table",
        "metadata": {"resourceVersion": "6"}, "columnDefinitions": defs,
        "rows": [{"cells": ["b", "1/1", "Running", "10.0.0.2", "node-b"]}]}});
    let (client, _) = StandIn::scripted(vec![
        Answer::ok(list.to_string()),
        Answer::ok(added.to_string()),
    ]);
    let (tx, mut rx) = mpsc::channel(16);
    let task = tokio::spawn(peers(client, "ops".into(), "x=y".into(), Include::None, tx));
    let mut got = Vec::new();
    for _ in 0..4 {
        got.push(format!("{:?}", next_any(&mut rx).await));
    }
    assert_eq!(
        got,
        [
            r#"Some(Peers({"a": [10.0.0.1]}))"#,
            r#"Some(PeerNodes({"a": "node-a"}))"#,
            r#"Some(PeerNode("b", "node-b"))"#,
            r#"Some(Peer("b", [10.0.0.2]))"#,
        ]
    );
    task.abort();
}

#[tokio::test(start_paused = true)]
async fn malformed_rows_and_events_are_skipped_and_good_ones_kept() {
    let list = json!({
        "kind": "Table",
        "metadata": {"resourceVersion": "5"},
        "columnDefinitions": columns(),
        "rows": [
            {"cells": ["a", "1/1", "Running", "10.0.0.1"]},
            {"cells": ["b", "1/1", "Running", "not-an-ip"]},
            {"cells": ["c", 1, true, null]},
            {"cells": ["", "1/1", "Running", "10.0.0.3"]},
            {"cells": ["d"]},
            {"cells": "x"},
            "a string row",
            {"cells": ["e", "x/y", "Running", "10.0.0.5"]},
            {"cells": ["g", "0/0", "Running", "10.0.0.7"]},
            {"cells": ["h\n$(touch /tmp/x)", "1/1", "Running", "10.0.0.8"]}
        ]
    });
    let good = json!({"type": "ADDED", "object": {
            "kind": "Table", "metadata": {"resourceVersion": "6"},
            "rows": [{"cells": ["f", "1/1", "Running", "10.0.0.6"]}]}});
    let watch = [
        "not json at all".to_string(),
        json!({"type": "ADDED", "object": {"rows": "nope"}}).to_string(),
        json!({"type": "MODIFIED", "object": 42}).to_string(),
        json!({"type": "SOMETHING", "object": {}}).to_string(),
        json!({"object": {"rows": []}}).to_string(),
        good.to_string(),
    ]
    .join("\n");
    let mut bytes = watch.into_bytes();
    // A line that is not UTF-8.
    bytes.extend_from_slice(b"\n\xff\xfe{\n");
    let (client, seen) = StandIn::scripted(vec![Answer::ok(list.to_string()), Answer::ok(bytes)]);
    let (tx, mut rx) = mpsc::channel(16);
    let task = tokio::spawn(peers(
        client,
        "ops".into(),
        "kubecombo.io/debugger=d".into(),
        Include::None,
        tx,
    ));

    let Some(Update::Peers(all)) = next(&mut rx).await else {
        panic!("no peer list");
    };
    // Only the well-formed, running and ready rows with an address; a
    // name with shell characters is only ever a map key.
    assert_eq!(
        all.into_iter()
            .map(|(n, ips)| format!("{n}={ips:?}"))
            .collect::<Vec<_>>(),
        ["a=[10.0.0.1]", "h\n$(touch /tmp/x)=[10.0.0.8]"]
    );
    match next(&mut rx).await {
        Some(Update::Peer(name, ips)) => {
            assert_eq!(
                (name.as_str(), format!("{ips:?}").as_str()),
                ("f", "[10.0.0.6]")
            )
        }
        other => panic!("expected peer f, got {other:?}"),
    }
    // After the broken stream: listed again (the script has no more
    // answers, so that request stays open), nothing more sent.
    assert!(next(&mut rx).await.is_none());
    assert!(!task.is_finished(), "the watch keeps going");
    let seen = seen.uris();
    assert!(seen.len() >= 3, "{seen:?}");
    assert!(
        seen[1].contains("watch=1") && seen[1].contains("resourceVersion=5"),
        "{seen:?}"
    );
    task.abort();
}

#[tokio::test(start_paused = true)]
async fn the_list_is_read_in_pages_and_the_watch_starts_from_the_last() {
    let page = |rows: Value, cont: &str, version: &str| {
        Answer::ok(
            json!({"kind": "Table", "columnDefinitions": columns(), "rows": rows,
                    "metadata": {"continue": cont, "resourceVersion": version}})
            .to_string(),
        )
    };
    let (client, seen) = StandIn::scripted(vec![
        page(
            json!([{"cells": ["a", "1/1", "Running", "10.0.0.1"]}]),
            "t/1",
            "7",
        ),
        page(
            json!([{"cells": ["b", "1/1", "Running", "10.0.0.2"]}]),
            "",
            "7",
        ),
    ]);
    let (tx, mut rx) = mpsc::channel(16);
    let task = tokio::spawn(peers(client, "ops".into(), "x=y".into(), Include::None, tx));
    let Some(Update::Peers(all)) = next(&mut rx).await else {
        panic!("no peer list");
    };
    assert_eq!(all.keys().collect::<Vec<_>>(), ["a", "b"]);
    let seen = seen.uris();
    assert!(
        seen[0].contains("limit=500") && !seen[0].contains("continue"),
        "{seen:?}"
    );
    assert!(seen[1].contains("continue=t%2F1"), "{seen:?}");
    assert!(
        seen[2].contains("watch=1") && seen[2].contains("resourceVersion=7"),
        "{seen:?}"
    );
    task.abort();
}

#[tokio::test(start_paused = true)]
async fn a_list_that_is_not_a_pod_table_is_retried_with_backoff() {
    let good = json!({
        "kind": "Table", "metadata": {"resourceVersion": "9"},
        "columnDefinitions": columns(),
        "rows": [{"cells": ["a", "1/1", "Running", "10.0.0.1"]}]
    });
    let (client, seen) = StandIn::scripted(vec![
        Answer::ok("[1, 2, 3]"),
        Answer::ok(json!({"kind": "Table", "columnDefinitions": [{"name": "Name"}]}).to_string()),
        Answer::ok(json!({"kind": "Table", "columnDefinitions": columns()}).to_string()),
        Answer::ok("{"),
        Answer::ok(good.to_string()),
    ]);
    let (tx, mut rx) = mpsc::channel(16);
    let start = tokio::time::Instant::now();
    let task = tokio::spawn(peers(client, "ops".into(), "x=y".into(), Include::None, tx));
    let Some(Update::Peers(all)) = next(&mut rx).await else {
        panic!("no peer list after the bad ones");
    };
    assert_eq!(all.len(), 1);
    // Four failures: 0.5 + 1 + 2 + 4 s of backoff.
    assert_eq!(start.elapsed(), Duration::from_millis(7500));
    assert_eq!(seen.count(), 5 + 1, "the watch follows");
    task.abort();
}

/// A stand-in whose first six lists fail (31.5 s of backoff, the next
/// pause at the 30 s cap), then lists peer `a` and answers the watch
/// with a broken line after `serving`, then lists again.
fn six_failures_then_a_watch_that_breaks_after(serving: Duration) -> (Client, StandIn) {
    let good = json!({
        "kind": "Table", "metadata": {"resourceVersion": "9"},
        "columnDefinitions": columns(),
        "rows": [{"cells": ["a", "1/1", "Running", "10.0.0.1"]}]
    })
    .to_string();
    let mut script: Vec<Answer> = (0..6).map(|_| Answer::ok("[]")).collect();
    script.push(Answer::ok(good.clone()));
    script.push(Answer::After(serving, Box::new(Answer::ok(*b"\xff\n"))));
    script.push(Answer::ok(good));
    StandIn::scripted(script)
}

/// The pause between the broken watch and the list after it.
async fn pause_after_the_broken_watch(serving: Duration) -> Duration {
    let (client, seen) = six_failures_then_a_watch_that_breaks_after(serving);
    let (tx, mut rx) = mpsc::channel(16);
    let task = tokio::spawn(peers(client, "ops".into(), "x=y".into(), Include::None, tx));
    assert!(matches!(next(&mut rx).await, Some(Update::Peers(_))));
    assert!(matches!(
        next_any(&mut rx).await,
        Some(Update::PeerNodes(_))
    ));
    let listed = tokio::time::Instant::now();
    let again = tokio::time::timeout(serving + Duration::from_secs(60), rx.recv()).await;
    assert!(
        matches!(again, Ok(Some(Update::Peers(_)))),
        "listed again after the broken watch"
    );
    let pause = listed.elapsed() - serving;
    assert_eq!(seen.count(), 6 + 3 + 1, "the watch follows");
    task.abort();
    pause
}

#[tokio::test(start_paused = true)]
async fn after_a_healthy_stretch_a_broken_watch_is_retried_after_the_first_pause() {
    let pause = pause_after_the_broken_watch(Duration::from_secs(600)).await;
    assert_eq!(pause, Duration::from_millis(500));
}

#[tokio::test(start_paused = true)]
async fn a_watch_that_breaks_right_after_its_list_keeps_the_backoff_of_the_failures() {
    let pause = pause_after_the_broken_watch(Duration::from_secs(1)).await;
    assert_eq!(pause, Duration::from_secs(30));
}

#[test]
fn earlier_failures_count_until_a_list_has_served_for_the_healthy_stretch() {
    assert_eq!(failures_before(6, None), 6);
    assert_eq!(failures_before(6, Some(Duration::from_secs(1))), 6);
    assert_eq!(failures_before(6, Some(HEALTHY)), 0);
    assert_eq!(failures_before(0, None), 0);
}

#[test]
fn selectors_are_percent_encoded_for_the_query() {
    assert_eq!(
        encode("kubecombo.io/debugger=a-b"),
        "kubecombo.io%2Fdebugger%3Da-b"
    );
}

#[test]
fn a_dual_stack_pod_asks_for_whole_pods_in_smaller_pages_and_a_single_stack_one_for_rows() {
    let of = |ips: &str| {
        let me = super::super::peers::Me::new("p", Some(ips), None);
        query("kubecombo.io/debugger=d", Include::for_pod(&me))
    };
    assert_eq!(
        of("10.0.0.1,fd00::1"),
        Query {
            params: "labelSelector=kubecombo.io%2Fdebugger%3Dd&includeObject=Object".into(),
            page: LIST_PAGE_OBJECTS,
        }
    );
    for single in ["10.0.0.1", "fd00::1", ""] {
        assert_eq!(
            of(single),
            Query {
                params: "labelSelector=kubecombo.io%2Fdebugger%3Dd&includeObject=None".into(),
                page: LIST_PAGE,
            },
            "{single:?}"
        );
    }
}

/// A row of a ready pod with its Pod included, whose addresses are `ips`
/// (the IP cell holds the first).
fn dual_row(name: &str, ready: &str, ips: &[&str]) -> Value {
    let pod_ips: Vec<Value> = ips.iter().map(|ip| json!({"ip": ip})).collect();
    json!({"cells": [name, ready, "Running", ips[0]],
        "object": {"kind": "Pod", "metadata": {"name": name},
            "status": {"podIP": ips[0], "podIPs": pod_ips}}})
}

#[tokio::test(start_paused = true)]
async fn with_whole_pods_included_each_peer_has_every_address_of_its_pod() {
    let list = json!({
        "kind": "Table", "metadata": {"resourceVersion": "5"},
        "columnDefinitions": columns(),
        "rows": [
            dual_row("a", "1/1", &["10.0.0.1", "fd00::1"]),
            dual_row("b", "0/1", &["10.0.0.2", "fd00::2"]),
        ]
    });
    let event = |kind: &str, row: Value| {
        json!({"type": kind, "object": {"kind": "Table",
            "metadata": {"resourceVersion": "6"}, "rows": [row]}})
        .to_string()
    };
    let watch = [
        event("MODIFIED", dual_row("b", "1/1", &["10.0.0.2", "fd00::2"])),
        event("DELETED", dual_row("a", "1/1", &["10.0.0.1", "fd00::1"])),
    ]
    .join("\n");
    let (client, seen) = StandIn::scripted(vec![Answer::ok(list.to_string()), Answer::ok(watch)]);
    let (tx, mut rx) = mpsc::channel(16);
    let task = tokio::spawn(peers(
        client,
        "ops".into(),
        "x=y".into(),
        Include::Object,
        tx,
    ));
    let Some(Update::Peers(all)) = next(&mut rx).await else {
        panic!("no peer list");
    };
    assert_eq!(format!("{all:?}"), r#"{"a": [10.0.0.1, fd00::1]}"#);
    let mut changes = Vec::new();
    for _ in 0..2 {
        match next(&mut rx).await {
            Some(Update::Peer(name, ips)) => changes.push(format!("{name}={ips:?}")),
            other => panic!("expected a peer change, got {other:?}"),
        }
    }
    assert_eq!(changes, ["b=[10.0.0.2, fd00::2]", "a=[]"]);
    let seen = seen.uris();
    assert!(
        seen[0].contains("includeObject=Object") && seen[0].contains("limit=100"),
        "{seen:?}"
    );
    assert!(
        seen[1].contains("includeObject=Object") && seen[1].contains("watch=1"),
        "{seen:?}"
    );
    task.abort();
}
