use super::*;
use crate::mesh::classify::classify;
use crate::mesh::net::NetItem;
use crate::mesh::paths::{paths as paths_of, tests as data, Prober};
use combo_api::recent::{Recent, RecentTarget};

#[test]
fn the_json_view_lists_failing_paths_and_faults_with_the_documented_fields() {
    let p = paths_of(&data::probers(), &data::answers());
    let faults = classify(&p);
    let silent = vec!["node-2 (pod ds-2): timed out".to_string()];
    let nets = Nets::new();
    let v = view(
        ("ops", "mesh"),
        &p,
        &faults,
        &nets,
        false,
        300,
        (3, 2),
        &silent,
    );
    assert!(!v.paths.is_empty());
    assert!(v
        .paths
        .iter()
        .all(|p| p.state == "FAIL" || p.state == "lossy"));
    let every = view(
        ("ops", "mesh"),
        &p,
        &faults,
        &nets,
        true,
        300,
        (3, 2),
        &silent,
    );
    assert!(every.paths.len() > v.paths.len());
    let json = serde_json::to_value(&v).unwrap();
    let keys = |v: &serde_json::Value| {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(
        keys(&json),
        [
            "answered",
            "asked",
            "debugger",
            "faults",
            "namespace",
            "paths",
            "silent",
            "windowSeconds"
        ]
    );
    assert_eq!(
        keys(&json["paths"][0]),
        [
            "address",
            "kind",
            "lossPercent",
            "peer",
            "prober",
            "rttAvgMs",
            "rttMaxMs",
            "sent",
            "state",
            "target"
        ]
    );
    assert_eq!(json["paths"][0]["state"], "FAIL");
    assert_eq!(json["silent"][0], "node-2 (pod ds-2): timed out");
    // node-1 cannot reach node-3: one path fault.
    assert_eq!(
        keys(&json["faults"][0]),
        ["asProber", "asTarget", "at", "fault", "kind", "net", "paths"]
    );
    assert_eq!(
        json["faults"],
        serde_json::json!([{
            "fault": "path", "at": "node-1 -> node-3", "kind": "icmp",
            "asProber": null, "asTarget": null, "net": null,
            "paths": [{"prober": "node-1", "target": "node-3 [10.0.0.3]", "kind": "icmp"}],
        }])
    );
}

/// Five single-stack nodes, node-5 dropping all its traffic; every node
/// also probes TCP 172.31.0.1:1, which is closed.
fn node_down_and_port_closed() -> Vec<Path> {
    let probers: Vec<Prober> = (1..=5)
        .map(|i| Prober {
            pod: format!("ds-{i}"),
            node: format!("node-{i}"),
            ips: vec![format!("10.0.0.{i}")],
        })
        .collect();
    let answers: Vec<(usize, Recent)> = (1..=5)
        .map(|i| {
            let mut targets: Vec<RecentTarget> = (1..=5)
                .filter(|j| *j != i)
                .map(|j| {
                    let up = i != 5 && j != 5;
                    RecentTarget {
                        kind: "icmp".into(),
                        target: format!("10.0.0.{j}"),
                        sent: 60,
                        lost: if up { 0 } else { 60 },
                        rtt_avg_ms: up.then_some(0.4),
                        rtt_max_ms: up.then_some(0.9),
                        up,
                    }
                })
                .collect();
            targets.push(RecentTarget {
                kind: "tcp".into(),
                target: "172.31.0.1:1".into(),
                sent: 60,
                lost: 60,
                up: false,
                ..RecentTarget::default()
            });
            (
                i - 1,
                Recent {
                    window_seconds: 300,
                    targets,
                },
            )
        })
        .collect();
    paths_of(&probers, &answers)
}

#[test]
fn a_node_side_fault_is_one_entry_with_what_it_loses_who_loses_it_and_its_net_items() {
    let p = node_down_and_port_closed();
    let faults = classify(&p);
    let net = Net {
        report: "mesh.node-5".into(),
        found: true,
        error: None,
        run_at: Some("2026-05-01T10:00:00Z".into()),
        checked: true,
        failed: vec![NetItem {
            item: "default-route".into(),
            err: "no default route".into(),
        }],
    };
    let nets = Nets::from([("node-5".to_string(), net)]);
    assert_eq!(
        text(&p, &faults, &nets),
        "node-side fault at node-5: 9 failing paths; as prober 5 of 5 targets fail, as target 4 of 4 probers fail\n\
         \x20 lost: 172.31.0.1:1 (tcp), node-1 (icmp), node-2 (icmp), node-3 (icmp), node-4 (icmp)\n\
         \x20 lost by: node-1, node-2, node-3, node-4\n\
         \x20 net (run 2026-05-01T10:00:00Z): default-route: no default route\n\
         target fault at 172.31.0.1:1 (tcp): 4 of 4 probers fail\n\
         \x20 lost by: node-1, node-2, node-3, node-4\n\
         \n"
    );
    let v = view(("ops", "mesh"), &p, &faults, &nets, false, 300, (5, 5), &[]);
    let json = serde_json::to_value(&v).unwrap();
    let node = &json["faults"][0];
    assert_eq!(node["fault"], "node-side");
    assert_eq!(node["at"], "node-5");
    assert_eq!(
        node["asProber"],
        serde_json::json!({"failing": 5, "probed": 5})
    );
    assert_eq!(
        node["asTarget"],
        serde_json::json!({"failing": 4, "probed": 4})
    );
    assert_eq!(node["paths"].as_array().unwrap().len(), 9);
    assert_eq!(
        node["net"],
        serde_json::json!({"report": "mesh.node-5", "found": true, "error": null,
            "runAt": "2026-05-01T10:00:00Z", "checked": true,
            "failed": [{"item": "default-route", "err": "no default route"}]})
    );
    assert_eq!(json["faults"][1]["fault"], "target");
    assert_eq!(json["faults"][1]["at"], "172.31.0.1:1");
    assert_eq!(
        json["faults"][1]["asTarget"],
        serde_json::json!({"failing": 4, "probed": 4})
    );
    assert_eq!(json["faults"].as_array().unwrap().len(), 2, "no path fault");
}

#[test]
fn a_node_without_a_report_says_no_report_and_a_healthy_mesh_prints_no_fault() {
    let p = node_down_and_port_closed();
    let faults = classify(&p);
    let reports = Ok(BTreeMap::new());
    let nets = Nets::from([(
        "node-5".to_string(),
        crate::mesh::net::net_of(&reports, "mesh", "node-5"),
    )]);
    let shown = text(&p, &faults, &nets);
    assert!(
        shown.contains(
            "\n  lost by: node-1, node-2, node-3, node-4\n  net: no report\ntarget fault"
        ),
        "{shown}"
    );
    let healthy: Vec<Path> = p
        .into_iter()
        .filter(|p| p.health != Health::Failing)
        .collect();
    assert_eq!(text(&healthy, &classify(&healthy), &Nets::new()), "");
}

#[test]
fn long_lists_name_the_first_eight_and_count_the_others() {
    let names = (1..=11).map(|i| format!("node-{i:02}"));
    assert_eq!(
        named("lost by", names).unwrap(),
        "lost by: node-01, node-02, node-03, node-04, node-05, node-06, node-07, node-08 and 3 more"
    );
    assert_eq!(
        named("lost", ["a", "a", "b"].into_iter().map(String::from)).unwrap(),
        "lost: a, b",
        "a dual-stack pair is named once"
    );
    assert_eq!(named("lost", std::iter::empty()), None);
}

#[test]
fn a_path_fault_names_the_address_only_when_one_family_fails() {
    // node-1 probes node-3 on both addresses; IPv6 fails, IPv4 too or not.
    let text_of = |v4_fails: bool| {
        let target = |ip: &str, up: bool| RecentTarget {
            kind: "icmp".into(),
            target: ip.into(),
            sent: 60,
            lost: if up { 0 } else { 60 },
            up,
            ..RecentTarget::default()
        };
        let recent = Recent {
            window_seconds: 300,
            targets: vec![target("10.0.0.3", !v4_fails), target("fd00::3", false)],
        };
        let p = paths_of(&data::probers(), &[(0, recent)]);
        text(&p, &classify(&p), &Nets::new())
    };
    assert_eq!(
        text_of(false),
        "path fault: node-1 -> node-3 [fd00::3] (icmp)\n\n"
    );
    assert_eq!(text_of(true), "path fault: node-1 -> node-3 (icmp)\n\n");
}
