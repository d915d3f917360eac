use super::*;

fn access() -> ApiAccess {
    ApiAccess {
        server: "https://10.0.0.1:6443".into(),
        ca_file: "/ca.crt".into(),
        token_file: "/token".into(),
    }
}

#[test]
fn the_operator_job_discovers_pods_of_its_namespace_as_the_service_account() {
    let monitor = include_str!("../../../config/prometheus/operator_podmonitor.yaml");
    let job = kubernetes_job(monitor, &access(), "2s").unwrap();
    assert_eq!(job["job_name"], "podMonitor/kube-combo-operator/0");
    assert_eq!(
        job["honor_labels"], true,
        "the Debuggers' namespace and node labels stay"
    );
    assert!(job.get("file_sd_configs").is_none());
    let sd = &job["kubernetes_sd_configs"][0];
    assert_eq!(sd["role"], "pod");
    assert_eq!(sd["api_server"], "https://10.0.0.1:6443");
    assert_eq!(sd["bearer_token_file"], "/token");
    assert_eq!(sd["tls_config"]["ca_file"], "/ca.crt");
    assert_eq!(sd["namespaces"]["names"][0], "kube-combo-system");
    let relabel = job["relabel_configs"].as_sequence().unwrap();
    let keeps: Vec<&str> = relabel
        .iter()
        .filter(|r| r["action"] == "keep")
        .filter_map(|r| r["regex"].as_str())
        .collect();
    assert_eq!(keeps, ["(kube-combo);true", "(operator);true", "metrics"]);
}

#[test]
fn a_monitor_of_any_namespace_discovers_every_namespace() {
    let monitor = include_str!("../../../config/prometheus/podmonitor.yaml");
    let job = kubernetes_job(monitor, &access(), "2s").unwrap();
    assert!(job["kubernetes_sd_configs"][0].get("namespaces").is_none());
    assert_eq!(job["honor_labels"], false);
}
