use super::*;
use combo_testkit::fixtures::{debugger, pinger, PingerBuilder};
use k8s_openapi::api::core::v1::{PodCondition, PodIP, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

fn pod(name: &str, ip: Option<&str>, ready: bool) -> Pod {
    let mut p = Pod::default();
    p.metadata.name = Some(name.into());
    p.metadata.namespace = Some("ops".into());
    p.metadata.uid = Some(format!("uid-{name}"));
    p.metadata.labels = Some([(keys::LABEL_DEBUGGER.to_string(), "mesh".to_string())].into());
    p.spec = Some(k8s_openapi::api::core::v1::PodSpec {
        node_name: Some(format!("node-{name}")),
        ..Default::default()
    });
    p.status = Some(PodStatus {
        phase: Some("Running".into()),
        pod_ip: ip.map(String::from),
        conditions: Some(vec![PodCondition {
            type_: "Ready".into(),
            status: if ready { "True" } else { "False" }.into(),
            ..PodCondition::default()
        }]),
        ..PodStatus::default()
    });
    p
}

/// Pod `p<i>`, Running and Ready at 10.0.0.<i>.
fn ready(i: u8) -> Pod {
    pod(&format!("p{i}"), Some(&format!("10.0.0.{i}")), true)
}

/// Pod `name` with `status.podIPs` `ips` (and `podIP` the first of them),
/// Running and Ready.
fn with_ips(name: &str, ips: &[&str]) -> Pod {
    let mut p = pod(name, ips.first().copied(), true);
    let status = p.status.as_mut().unwrap();
    status.pod_ips = Some(ips.iter().map(|ip| PodIP { ip: ip.to_string() }).collect());
    p
}

fn addrs(ips: &[&str]) -> Vec<IpAddr> {
    ips.iter().map(|ip| ip.parse().unwrap()).collect()
}

/// The pods known, over all Debuggers.
fn pod_count(g: &Groups) -> usize {
    g.groups.values().map(|g| g.pods.len()).sum()
}

/// The annotations a pod carries once `w` landed.
fn carried(w: &Write) -> std::collections::BTreeMap<String, String> {
    [
        (keys::ANNOTATION_PEERS.to_string(), w.value.clone()),
        (keys::ANNOTATION_PEER_NODES.to_string(), w.nodes.clone()),
    ]
    .into()
}

fn write_all(g: &mut Groups) -> Vec<Write> {
    let batch = g.due(usize::MAX);
    for w in &batch {
        g.written(w, true);
    }
    batch
}

#[test]
fn a_pod_is_a_candidate_only_running_ready_with_an_address_and_not_terminating() {
    let (_, _, s) = seen(&pod("a", Some("10.0.0.1"), true)).unwrap();
    assert_eq!(s.unwrap().addrs, addrs(&["10.0.0.1"]));
    let (_, _, s) = seen(&pod("a", Some("10.0.0.1"), false)).unwrap();
    assert!(s.unwrap().addrs.is_empty());
    let (_, _, s) = seen(&pod("a", None, true)).unwrap();
    assert!(s.unwrap().addrs.is_empty());
    let mut pending = pod("a", Some("10.0.0.1"), true);
    pending.status.as_mut().unwrap().phase = Some("Pending".into());
    assert!(seen(&pending).unwrap().2.unwrap().addrs.is_empty());
    let mut leaving = pod("a", Some("10.0.0.1"), true);
    leaving.metadata.deletion_timestamp = Some(Time(Timestamp::UNIX_EPOCH));
    assert_eq!(seen(&leaving).unwrap().2, None);
    let mut stray = pod("a", Some("10.0.0.1"), true);
    stray.metadata.labels = None;
    assert!(seen(&stray).is_none());
}

#[test]
fn every_pod_ip_is_an_address_once_in_order_and_pod_ip_when_there_are_none() {
    let entry = |p: &Pod| seen(p).unwrap().2.unwrap().addrs;
    let dual = with_ips("a", &["10.0.0.1", "fd00::1"]);
    assert_eq!(entry(&dual), addrs(&["10.0.0.1", "fd00::1"]));
    let v6_first = with_ips("a", &["fd00::1", "10.0.0.1"]);
    assert_eq!(entry(&v6_first), addrs(&["fd00::1", "10.0.0.1"]));
    // podIPs empty (or absent): podIP.
    let mut empty = with_ips("a", &[]);
    empty.status.as_mut().unwrap().pod_ip = Some("10.0.0.2".into());
    assert_eq!(entry(&empty), addrs(&["10.0.0.2"]));
    // Entries that are no address are skipped, repeats kept once; podIPs
    // wins over a podIP it does not hold.
    let mut odd = with_ips(
        "a",
        &["fd00::1", "bogus", "fd00:0::1", "10.0.0.300", "10.0.0.3"],
    );
    odd.status.as_mut().unwrap().pod_ip = Some("10.0.0.9".into());
    assert_eq!(entry(&odd), addrs(&["fd00::1", "10.0.0.3"]));
    let mut bad = with_ips("a", &["bogus"]);
    bad.status.as_mut().unwrap().pod_ip = Some("also-bogus".into());
    assert!(entry(&bad).is_empty());
    // Not Ready: no address, however many it has.
    let mut unready = with_ips("a", &["10.0.0.1", "fd00::1"]);
    unready.status.as_mut().unwrap().conditions = None;
    assert!(entry(&unready).is_empty());
}

#[test]
fn a_dual_stack_pod_is_listed_with_both_addresses_and_a_second_one_touches_only_its_probers() {
    let v6 = |i: u8| format!("fd00::{i:x}");
    let mut g = Groups::default();
    for i in 1..=20u8 {
        g.observe(Event::Apply(ready(i)));
    }
    g.observe(Event::Apply(with_ips("dual", &["10.0.0.99", "fd00::63"])));
    g.bound_all(|_| Some((3, 0)));
    let first = write_all(&mut g);
    assert_eq!(first.len(), 21);
    let has = |w: &Write, ip: &str| w.value.split(',').any(|a| a == ip);
    let holders: Vec<&Write> = first.iter().filter(|w| has(w, "10.0.0.99")).collect();
    assert!(!holders.is_empty());
    assert!(first
        .iter()
        .all(|w| has(w, "10.0.0.99") == has(w, "fd00::63")));
    for w in &first {
        let mut p = match w.pod.as_str() {
            "dual" => with_ips("dual", &["10.0.0.99", "fd00::63"]),
            n => ready(n[1..].parse().unwrap()),
        };
        p.metadata.annotations = Some(carried(w));
        g.observe(Event::Apply(p));
    }
    assert!(write_all(&mut g).is_empty());
    // p5 turns dual-stack: the lists that hold p5, and only those, are
    // written again, with both of its addresses.
    let p5_holders: BTreeSet<&str> = first
        .iter()
        .filter(|w| has(w, "10.0.0.5"))
        .map(|w| w.pod.as_str())
        .collect();
    let own = first.iter().find(|w| w.pod == "p5").unwrap();
    let mut p5 = with_ips("p5", &["10.0.0.5", &v6(5)]);
    p5.metadata.annotations = Some(carried(own));
    g.observe(Event::Apply(p5));
    let second = write_all(&mut g);
    let rewritten: BTreeSet<&str> = second.iter().map(|w| w.pod.as_str()).collect();
    assert_eq!(rewritten, p5_holders);
    assert!(second
        .iter()
        .all(|w| has(w, "10.0.0.5") && has(w, "fd00::5")));
    assert!(second
        .iter()
        .all(|w| w.nodes.contains("10.0.0.5=node-p5") && w.nodes.contains("fd00::5=node-p5")));
}

#[test]
fn lists_are_written_once_and_only_where_they_change() {
    let mut g = Groups::default();
    g.observe(Event::Init);
    for i in 1..=30u8 {
        g.observe(Event::InitApply(ready(i)));
    }
    g.observe(Event::InitDone);
    // No bound yet (the Pinger not known): nothing to write.
    assert!(write_all(&mut g).is_empty());
    g.bound_all(|_| Some((3, 0)));
    let first = write_all(&mut g);
    assert_eq!(first.len(), 30);
    assert!(first.iter().all(|w| w.value.split(',').count() == 3));
    // Each listed address with the node of its pod.
    for w in &first {
        let nodes = combo_api::peers::parse_nodes(&w.nodes);
        let (ips, _) = combo_api::peers::parse(&w.value);
        assert_eq!(nodes.keys().copied().collect::<Vec<_>>(), ips, "{w:?}");
        assert!(nodes.iter().all(|(ip, node)| match ip {
            IpAddr::V4(v4) => *node == format!("node-p{}", v4.octets()[3]),
            IpAddr::V6(_) => false,
        }));
    }
    assert!(first
        .iter()
        .all(|w| !w.value.contains(&format!("10.0.0.{},", &w.pod[1..]))));
    // The watch brings the written annotations back: nothing more.
    for w in &first {
        let mut p = pod(&w.pod, Some(&format!("10.0.0.{}", &w.pod[1..])), true);
        p.metadata.annotations = Some(carried(w));
        g.observe(Event::Apply(p));
    }
    assert!(write_all(&mut g).is_empty());
    // One pod turning unready rewrites only the lists that held it.
    let holders = first
        .iter()
        .filter(|w| w.value.split(',').any(|ip| ip == "10.0.0.7"))
        .count();
    let mut unready = pod("p7", Some("10.0.0.7"), false);
    let own = first.iter().find(|w| w.pod == "p7").unwrap();
    unready.metadata.annotations = Some(carried(own));
    g.observe(Event::Apply(unready));
    let second = write_all(&mut g);
    assert_eq!(second.len(), holders, "{second:?}");
    assert!(second
        .iter()
        .all(|w| !w.value.contains("10.0.0.7,") && !w.value.ends_with("10.0.0.7")));
    // The Pinger turning lists off clears every list once.
    g.bound_all(|_| None);
    let cleared = write_all(&mut g);
    assert_eq!(cleared.len(), 30);
    assert!(cleared.iter().all(|w| w.value.is_empty()));
    assert!(write_all(&mut g).is_empty());
}

#[test]
fn a_failed_write_waits_for_the_next_round_and_a_replaced_pod_is_not_written() {
    let mut g = Groups::default();
    g.observe(Event::Apply(pod("a", Some("10.0.0.1"), true)));
    g.observe(Event::Apply(pod("b", Some("10.0.0.2"), true)));
    g.bound_all(|_| Some((2, 0)));
    let batch = g.due(usize::MAX);
    assert_eq!(batch.len(), 2);
    g.written(&batch[0], false);
    g.written(&batch[1], true);
    let again = g.due(usize::MAX);
    assert_eq!(again, vec![batch[0].clone()]);
    // A write that comes back after its pod was replaced changes nothing.
    let mut newer = pod(&again[0].pod, Some("10.0.0.9"), true);
    newer.metadata.uid = Some("uid-new".into());
    g.observe(Event::Apply(newer));
    g.written(&again[0], true);
    assert_eq!(pod_count(&g), 2);
    // The new pod gets its list; its peer's list follows its address.
    let redo = g.due(usize::MAX);
    assert_eq!(redo.len(), 2, "{redo:?}");
    assert_eq!(redo[0].uid, "uid-new");
    assert_eq!(redo[1].value, "10.0.0.9");
}

#[test]
fn at_most_the_limit_is_due_per_round_and_the_rest_waits() {
    let mut g = Groups::default();
    for i in 1..=10u8 {
        g.observe(Event::Apply(ready(i)));
    }
    g.bound_all(|_| Some((2, 0)));
    let a = g.due(4);
    assert_eq!(a.len(), 4);
    let b = g.due(100);
    assert_eq!(b.len(), 6);
    assert!(a.iter().all(|w| !b.iter().any(|x| x.pod == w.pod)));
}

#[test]
fn pods_missing_from_a_relist_leave_their_probers_lists() {
    let mut g = Groups::default();
    for i in 1..=4u8 {
        g.observe(Event::Apply(ready(i)));
    }
    g.bound_all(|_| Some((5, 0)));
    write_all(&mut g);
    g.observe(Event::Init);
    for i in 1..=3u8 {
        g.observe(Event::InitApply(ready(i)));
    }
    g.observe(Event::InitDone);
    let after = write_all(&mut g);
    assert_eq!(after.len(), 3, "{after:?}");
    assert!(after.iter().all(|w| !w.value.contains("10.0.0.4")));
    assert_eq!(pod_count(&g), 3);
    g.observe(Event::Delete(pod("p1", None, false)));
    assert_eq!(pod_count(&g), 2);
}

#[test]
fn the_bound_follows_the_debuggers_pinger() {
    let mut d = debugger("ops", "mesh").pinger("p").build();
    let found = |p: PingerBuilder| {
        let p = Arc::new(p.build());
        move |_: &str| Some(p.clone())
    };
    assert_eq!(bound(Some(&d), found(pinger("ops", "p"))), Some((20, 3)));
    let bounded = pinger("ops", "p").max_peers(5).min_probers(7);
    assert_eq!(bound(Some(&d), found(bounded)), Some((5, 7)));
    let unbounded = pinger("ops", "p").max_peers(0);
    assert_eq!(bound(Some(&d), found(unbounded)), None);
    let no_peers = pinger("ops", "p").peers(false);
    assert_eq!(bound(Some(&d), found(no_peers)), None);
    assert_eq!(bound(Some(&d), |_: &str| None), None);
    assert_eq!(bound(None, found(pinger("ops", "p"))), None);
    d.spec.enable_pinger = false;
    assert_eq!(bound(Some(&d), found(pinger("ops", "p"))), None);
}
