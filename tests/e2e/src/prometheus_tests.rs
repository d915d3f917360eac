use super::*;

const MONITOR: &str = "apiVersion: monitoring.coreos.com/v1
kind: PodMonitor
metadata: {name: mon}
spec:
  namespaceSelector: {any: true}
  selector:
    matchLabels: {app.kubernetes.io/name: kube-combo}
  podMetricsEndpoints:
    - path: /m
      interval: 30s
      relabelings:
        - sourceLabels: [__meta_kubernetes_pod_ip]
          regex: ([0-9.]+)
          replacement: $1:8080
          targetLabel: __address__
";

#[test]
fn the_scrape_job_keeps_the_selected_pods_labels_them_and_ends_with_the_monitors_relabelings() {
    let job = scrape_job(MONITOR, Path::new("/sd.json"), "2s").unwrap();
    assert_eq!(job["metrics_path"], "/m");
    assert_eq!(job["scrape_interval"], "2s");
    assert_eq!(job["file_sd_configs"][0]["files"][0], "/sd.json");
    let relabel = job["relabel_configs"].as_sequence().unwrap();
    assert_eq!(relabel[0]["action"], "keep");
    assert_eq!(
        relabel[0]["source_labels"][0],
        "__meta_kubernetes_pod_label_app_kubernetes_io_name"
    );
    assert_eq!(relabel[0]["regex"], "(kube-combo);true");
    let targets: Vec<&str> = relabel
        .iter()
        .filter_map(|r| r["target_label"].as_str())
        .collect();
    assert_eq!(
        targets,
        ["namespace", "container", "pod", "job", "__address__"]
    );
    let last = relabel.last().unwrap();
    assert_eq!(last["source_labels"][0], "__meta_kubernetes_pod_ip");
    assert_eq!(last["replacement"], "$1:8080");
    assert!(last.get("targetLabel").is_none());
}

#[test]
fn a_selector_with_match_expressions_is_refused_rather_than_widened() {
    let monitor = MONITOR.replace(
        "matchLabels: {app.kubernetes.io/name: kube-combo}",
        "matchExpressions: [{key: a, operator: Exists}]",
    );
    assert!(scrape_job(&monitor, Path::new("/sd.json"), "2s").is_err());
}

#[test]
fn shortened_rules_keep_their_expressions_and_change_only_for() {
    let shipped = "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: |\n          up == 0\n        for: 15m\n        annotations: {summary: \"{{ $labels.pod }}\"}\n      - record: r\n        expr: sum(up)\n";
    let short: Value = serde_yaml::from_str(&with_for(shipped, "5s").unwrap()).unwrap();
    let orig: Value = serde_yaml::from_str(shipped).unwrap();
    let rules = &short["groups"][0]["rules"];
    assert_eq!(rules[0]["for"], "5s");
    assert_eq!(rules[0]["expr"], orig["groups"][0]["rules"][0]["expr"]);
    assert_eq!(rules[0]["annotations"]["summary"], "{{ $labels.pod }}");
    assert!(rules[1].get("for").is_none());
    assert_eq!(rules[1], orig["groups"][0]["rules"][1]);
}

#[test]
fn alerts_and_scalars_are_read_from_the_http_api_answers() {
    let alerts = parse_alerts(
        r#"{"status":"success","data":{"alerts":[{"labels":{"alertname":"A","target":"1.2.3.4"},"annotations":{},"state":"firing","activeAt":"x","value":"0e+00"}]}}"#,
    )
    .unwrap();
    assert_eq!(alerts.len(), 1);
    assert_eq!(alerts[0].label("alertname"), "A");
    assert_eq!(alerts[0].label("missing"), "");
    assert_eq!(alerts[0].state, "firing");
    let scalar = r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1.5,"7"]}]}}"#;
    assert_eq!(parse_scalar(scalar).unwrap(), Some(7.0));
    let empty = r#"{"status":"success","data":{"resultType":"vector","result":[]}}"#;
    assert_eq!(parse_scalar(empty).unwrap(), None);
    let vector = r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{"pod":"a"},"value":[1,"0"]},{"metric":{"pod":"b"},"value":[1,"1"]},{"metric":{},"value":[1,"1"]}]}}"#;
    assert_eq!(
        parse_label_values(vector, "pod").unwrap(),
        BTreeSet::from(["a".to_string(), "b".to_string()])
    );
}

#[test]
fn a_monitor_with_honor_labels_keeps_the_targets_own_labels_and_no_alert_is_an_empty_list() {
    let plain = monitor_job(MONITOR, "2s").unwrap();
    assert_eq!(plain["honor_labels"], false);
    let honoring = MONITOR.replace("interval: 30s", "interval: 30s\n      honorLabels: true");
    let job = monitor_job(&honoring, "2s").unwrap();
    assert_eq!(job["honor_labels"], true);
    assert!(job.get("file_sd_configs").is_none());
    // vmalert's answer when nothing is pending or firing.
    let none = r#"{"status":"success","data":{"alerts":null}}"#;
    assert_eq!(parse_alerts(none).unwrap(), Vec::<Alert>::new());
}
