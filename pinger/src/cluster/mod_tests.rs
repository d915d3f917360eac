use super::pod_watch::follows_pods;
use super::*;
use crate::metrics::tests::scrape;
use crate::round::{evaluate, Outcome};
use combo_api::pinger::Host;

/// Probing as `run` builds it, with Events sent to a stand-in API
/// server that never answers.
fn probing(me: &Me) -> Probing {
    let (client, _) = combo_testkit::stand_in::StandIn::scripted(Vec::new());
    let knobs = Knobs::from(&PingerSpec::default());
    let (report_tx, _) = mpsc::unbounded_channel();
    let metrics = Arc::new(Metrics::default());
    Probing {
        engine: Engine::new(settings(&knobs), report_tx, seed(&me.pod), None)
            .with_metrics(metrics.clone()),
        knobs,
        metrics,
        gate: Gate::new(Policy::default()),
        publisher: Publisher::new(client, "ops", &me.pod),
        last_invalid: Vec::new(),
    }
}

/// A round of `target`: one reply, or none.
fn round(target: &Target, passed: bool) -> Report {
    let outcomes = if passed {
        vec![Outcome::Ok(Duration::from_millis(1))]
    } else {
        vec![Outcome::Timeout]
    };
    let limits = Knobs::from(&PingerSpec::default()).limits;
    Report {
        target: target.clone(),
        label: Arc::new(target.label()),
        round: 1,
        started: std::time::SystemTime::UNIX_EPOCH,
        stats: evaluate(&outcomes, limits),
        outcomes,
        limits,
    }
}

/// Follows a peer set of 127.0.0.2 and 127.0.0.3, then the change
/// `leave` that takes 127.0.0.3 away, and checks the scrapes before and
/// after.
async fn a_peer_leaves(spec: PingerSpec, known: Vec<Update>, leave: Update) {
    let me = Me::new("me", None, Some("127.0.0.1"));
    let mut probing = probing(&me);
    let mut state = State::default();
    state.apply(Update::Spec(Some(Box::new(spec))));
    for update in known {
        state.apply(update);
    }
    probing.follow(&state, &me, "p");
    let probed = [2, 3].map(|i| Target::icmp(Host::Ip(IpAddr::from([127, 0, 0, i]))));
    let chosen = peers::desired(&state.spec_in_force(), state.known(), &me, &[]).targets;
    assert_eq!(
        chosen,
        BTreeSet::from(probed.clone()),
        "the own address is no peer"
    );
    // The rounds as the engine records and reports them.
    let mut recorder = crate::metrics::tests::Recorder::default();
    for t in &probed {
        for passed in [true, false] {
            recorder.record(&probing.metrics, &round(t, passed));
            probing.on_report(&round(t, passed));
        }
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let server = metrics::serve(addr, probing.metrics.clone()).await.unwrap();
    let before = scrape(addr).await;
    assert!(before.contains(r#"target="127.0.0.3""#), "{before}");

    state.apply(leave);
    probing.follow(&state, &me, "p");
    let after = scrape(addr).await;
    server.abort();
    assert!(!after.contains("127.0.0.3"), "{after}");
    assert_eq!(
        after.matches(r#"target="127.0.0.2""#).count(),
        before.matches(r#"target="127.0.0.2""#).count(),
        "the peer that stays keeps its series: {after}"
    );
}

/// Rounds an hour apart: the test is over before any probe is due.
fn hourly(max_peers: u32) -> PingerSpec {
    PingerSpec {
        peers: true,
        gateway: false,
        max_peers,
        interval_seconds: 3600,
        ..PingerSpec::default()
    }
}

#[tokio::test]
async fn a_peer_that_leaves_takes_all_its_metric_series_with_it() {
    // Listed: the operator writes the list without it.
    a_peer_leaves(
        hourly(20),
        vec![Update::Listed(Some("127.0.0.3,127.0.0.1,127.0.0.2".into()))],
        Update::Listed(Some("127.0.0.2".into())),
    )
    .await;
    // All peers: the pod watch reports its pod gone.
    a_peer_leaves(
        hourly(0),
        vec![Update::Peers(Pods::from([
            ("a".to_string(), vec![IpAddr::from([127, 0, 0, 2])]),
            ("b".to_string(), vec![IpAddr::from([127, 0, 0, 3])]),
            ("me".to_string(), vec![IpAddr::from([127, 0, 0, 1])]),
        ]))],
        Update::Peer("b".into(), Vec::new()),
    )
    .await;
}

#[test]
fn a_peer_list_is_parsed_once_per_value_and_its_bad_entries_named() {
    let mut state = State::default();
    assert!(state.take_list(None).is_empty());
    assert_eq!(state.listed, None);
    let value = "10.0.0.2,peer-3,10.0.0.1".to_string();
    assert_eq!(state.take_list(Some(value.clone())), ["peer-3"]);
    let want: Vec<IpAddr> = vec![[10, 0, 0, 1].into(), [10, 0, 0, 2].into()];
    assert_eq!(state.listed.as_deref(), Some(&want[..]));
    // The same value again (another change of the pod): not named again.
    assert!(state.take_list(Some(value.clone())).is_empty());
    assert_eq!(state.listed.as_deref(), Some(&want[..]));
    // An empty list is a list: no peers, not "no list".
    assert!(state.take_list(Some(String::new())).is_empty());
    assert_eq!(state.listed.as_deref(), Some(&[][..]));
    assert_eq!(state.take_list(Some(value)), ["peer-3"]);
    state.apply(Update::Listed(None));
    assert_eq!(state.listed, None);
}

#[test]
fn the_pods_are_followed_only_for_all_peers_or_more_than_a_list_holds() {
    let spec = |peers, max_peers| PingerSpec {
        peers,
        max_peers,
        ..PingerSpec::default()
    };
    let max = combo_api::peers::LIST_MAX;
    assert!(follows_pods(&spec(true, 0), true));
    assert!(follows_pods(&spec(true, max + 1), true));
    assert!(!follows_pods(&spec(true, 1), true));
    assert!(!follows_pods(&spec(true, 20), true));
    assert!(!follows_pods(&spec(true, max), true));
    assert!(!follows_pods(&spec(false, 0), true));
    assert!(!follows_pods(&spec(true, 0), false));
    // While the Pinger is unknown: no peers, nothing to follow.
    assert!(!follows_pods(&State::default().spec_in_force(), true));
}

#[tokio::test]
async fn the_pod_watch_starts_and_stops_with_the_spec_and_takes_its_peers_along() {
    let mut state = State::default();
    let mut watch: Option<PodWatch> = None;
    let mut started = Vec::new();
    let mut switch = |state: &mut State, watch: &mut Option<PodWatch>, debugger| {
        switch_pod_watch(watch, state, debugger, |d| {
            started.push(d.to_string());
            let (_, rows) = mpsc::channel(1);
            PodWatch {
                task: tokio::spawn(std::future::pending()),
                rows,
            }
        });
    };
    let set = |state: &mut State, max_peers| {
        state.apply(Update::Spec(Some(Box::new(PingerSpec {
            max_peers,
            ..PingerSpec::default()
        }))));
    };
    switch(&mut state, &mut watch, Some("d"));
    assert!(watch.is_none(), "started before the Pinger is known");
    set(&mut state, 20);
    switch(&mut state, &mut watch, Some("d"));
    assert!(watch.is_none(), "started for a listed maxPeers");

    set(&mut state, 0);
    switch(&mut state, &mut watch, Some("d"));
    let task = watch
        .as_ref()
        .expect("started for maxPeers 0")
        .task
        .abort_handle();
    state.apply(Update::Peer("a".into(), vec![[10, 0, 0, 1].into()]));
    // A change that still needs it keeps the same task.
    set(&mut state, combo_api::peers::LIST_MAX + 1);
    switch(&mut state, &mut watch, Some("d"));
    assert_eq!(watch.as_ref().map(|w| w.task.id()), Some(task.id()));

    set(&mut state, 20);
    switch(&mut state, &mut watch, Some("d"));
    assert!(watch.is_none());
    assert!(
        state.peers.is_empty(),
        "the pods' peers outlived their watch"
    );
    tokio::task::yield_now().await;
    assert!(task.is_finished(), "the stopped watch still runs");

    set(&mut state, 0);
    switch(&mut state, &mut watch, None);
    assert!(watch.is_none(), "started without a Debugger");
    assert_eq!(started, ["d"]);
}

#[test]
fn peer_addresses_are_named_by_node_from_the_list_or_the_pods() {
    let mut state = State::default();
    state.apply(Update::Listed(Some("10.0.0.2,10.0.0.3".into())));
    state.apply(Update::ListedNodes(Some("10.0.0.2=n2,10.0.0.3=n3".into())));
    let nodes = state.peer_nodes();
    assert_eq!(nodes.len(), 2);
    assert_eq!(nodes[&"10.0.0.3".parse::<IpAddr>().unwrap()].as_str(), "n3");
    state.apply(Update::ListedNodes(None));
    assert!(state.peer_nodes().is_empty());

    state.apply(Update::Peers(Pods::from([(
        "a".to_string(),
        vec!["10.0.0.1".parse().unwrap(), "fd00::1".parse().unwrap()],
    )])));
    state.apply(Update::PeerNodes(
        [("a".to_string(), "na".to_string())].into(),
    ));
    state.apply(Update::PeerNode("b".into(), "nb".into()));
    state.apply(Update::Peer("b".into(), vec!["10.0.0.2".parse().unwrap()]));
    let nodes = state.peer_nodes();
    let of = |ip: &str| nodes[&ip.parse::<IpAddr>().unwrap()].as_str().to_string();
    assert_eq!(
        (of("10.0.0.1"), of("fd00::1"), of("10.0.0.2")),
        ("na".into(), "na".into(), "nb".into())
    );
    state.apply(Update::Peer("b".into(), Vec::new()));
    assert_eq!(state.peer_nodes().len(), 2, "b left with its node");
}

#[test]
fn a_pods_phase_seed_stays_the_value_released_versions_computed() {
    // The seed places every target's rounds; a changed one moves them all.
    assert_eq!(seed("node-check-00000"), 0xb7e3_2d33_477c_7b1d);
    assert_eq!(seed(""), 0xcbf2_9ce4_8422_2325);
}
