//! The values added for the community charts' conventions, each reaching
//! its object: images, the operator's environment and arguments, RBAC,
//! monitoring overrides, the dashboard, Debuggers and Pingers, Chart.yaml
//! and the NOTES.

use super::*;

/// `helm template` with the values file `values` (YAML), the objects.
fn template_values(helm: &Path, name: &str, values: &str) -> Vec<Value> {
    let dir = tempdir(name);
    let file = dir.join("values.yaml");
    std::fs::write(&file, values).expect("writing a values file");
    let objects = template(helm, &["-f", file.to_str().expect("UTF-8")]);
    let _ = std::fs::remove_dir_all(&dir);
    objects
}

fn env_value<'a>(container: &'a Value, name: &str) -> Option<&'a str> {
    container["env"]
        .as_sequence()?
        .iter()
        .find(|e| e["name"] == name)
        .map(|e| str_at(e, &["value"]))
}

#[test]
fn an_image_is_its_repository_and_tag_or_its_digest_which_wins() {
    let Some(helm) = helm::binary("image values") else {
        return;
    };
    let digest = format!("sha256:{}", "ab".repeat(32));
    let objects = template_values(
        &helm,
        "images",
        &format!(
            "image:\n  operator: {{repository: reg.example:5000/kc/operator, tag: \"1.2.3\"}}\n  \
             runner: {{repository: reg.example:5000/kc/runner, tag: \"1.2.3\", digest: \"{digest}\"}}\n  \
             pinger: {{tag: \"2.0.0\"}}\n"
        ),
    );
    let c = &find(&objects, "Deployment", "combo-operator")["spec"]["template"]["spec"]
        ["containers"][0];
    assert_eq!(str_at(c, &["image"]), "reg.example:5000/kc/operator:1.2.3");
    assert_eq!(
        env_value(c, "COMBO_RUNNER_IMAGE"),
        Some(format!("reg.example:5000/kc/runner@{digest}").as_str()),
        "the digest wins over the tag"
    );
    // A key left out keeps its default: the pinger's repository.
    assert_eq!(
        env_value(c, "COMBO_PINGER_IMAGE"),
        Some("kube-combo/pinger:2.0.0")
    );
}

#[test]
fn extra_env_args_strategy_labels_and_rbac_reach_the_operator() {
    let Some(helm) = helm::binary("operator values") else {
        return;
    };
    let objects = template_values(
        &helm,
        "operator",
        r"
extraEnv: [{name: RUST_LOG, value: debug}, {name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}]
extraArgs: [--leader-elect-lease=kc-b, --image-pull-secrets=regcred]
updateStrategy: {type: Recreate}
serviceAccount: {labels: {team: infra}}
",
    );
    let d = find(&objects, "Deployment", "combo-operator");
    let c = &d["spec"]["template"]["spec"]["containers"][0];
    let yaml = |s: &str| -> Value { serde_yaml::from_str(s).expect("YAML") };
    // After the chart's own, in the order given.
    assert_eq!(
        c["args"],
        yaml("[--leader-elect, '--metrics-addr=0.0.0.0:8080', --leader-elect-lease=kc-b, --image-pull-secrets=regcred]")
    );
    let env = c["env"].as_sequence().expect("env");
    let names: Vec<&str> = env.iter().map(|e| str_at(e, &["name"])).collect();
    assert_eq!(
        names,
        [
            "COMBO_RUNNER_IMAGE",
            "COMBO_PINGER_IMAGE",
            "POD_NAME",
            "POD_NAMESPACE",
            "RUST_LOG",
            "NODE"
        ]
    );
    assert_eq!(env_value(c, "RUST_LOG"), Some("debug"));
    assert_eq!(
        env[5]["valueFrom"],
        yaml("{fieldRef: {fieldPath: spec.nodeName}}")
    );
    assert_eq!(d["spec"]["strategy"], yaml("{type: Recreate}"));
    let sa = find(&objects, "ServiceAccount", "combo-operator");
    assert_eq!(sa["metadata"]["labels"]["team"], "infra");
    assert_eq!(
        sa["metadata"]["labels"]["app.kubernetes.io/name"], "kube-combo",
        "the chart's labels stay"
    );
    // The defaults: no strategy, nothing after the chart's own.
    let d = find(&template(&helm, &[]), "Deployment", "combo-operator").clone();
    assert!(d["spec"].get("strategy").is_none(), "a strategy by default");
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"][0]["env"]
            .as_sequence()
            .map(Vec::len),
        Some(4)
    );

    // rbac.create: false makes no Role, ClusterRole or binding, and keeps the rest.
    let objects = template(&helm, &["--set", "rbac.create=false"]);
    let rbac: Vec<String> = objects
        .iter()
        .filter(|o| str_at(o, &["apiVersion"]).starts_with("rbac.authorization.k8s.io/"))
        .map(kind_name)
        .collect();
    assert!(rbac.is_empty(), "rbac.create=false renders {rbac:?}");
    find(&objects, "Deployment", "combo-operator");
    find(&objects, "ServiceAccount", "combo-operator");
}

#[test]
fn prometheus_rule_overrides_and_the_grafana_dashboard() {
    let Some(helm) = helm::binary("rules and dashboard") else {
        return;
    };
    let objects = template_values(
        &helm,
        "rules",
        r#"
prometheusRule:
  enabled: true
  disabled: {ComboPingerProbeLoss: true, ComboDebuggerStopped: true}
  additionalRules:
    - alert: MyComboAlert
      expr: combo_pinger_target_up == 0
      for: 1m
      labels: {severity: info}
grafanaDashboard: {enabled: true, annotations: {grafana_folder: kube-combo}}
"#,
    );
    let rule = find(&objects, "PrometheusRule", "kube-combo-alerts");
    let alerts = |groups: &Value| -> Vec<String> {
        groups
            .as_sequence()
            .into_iter()
            .flatten()
            .flat_map(|g| g["rules"].as_sequence().cloned().unwrap_or_default())
            .map(|r| str_at(&r, &["alert"]).to_string())
            .collect()
    };
    let shipped = alerts(&read_yaml("config/prometheus/rules.yaml")["groups"]);
    assert!(
        shipped.contains(&"ComboOperatorDown".to_string()),
        "{shipped:?}"
    );
    let mut want: Vec<String> = shipped
        .into_iter()
        .filter(|a| a != "ComboPingerProbeLoss" && a != "ComboDebuggerStopped")
        .collect();
    want.push("MyComboAlert".into());
    assert_eq!(alerts(&rule["spec"]["groups"]), want);
    let groups = rule["spec"]["groups"].as_sequence().expect("groups");
    let last = groups.last().expect("a group");
    assert_eq!(str_at(last, &["name"]), "kube-combo-additional");
    assert_eq!(last["rules"][0]["labels"]["severity"], "info");
    // Every shipped alert has its runbook in troubleshooting.md.
    let troubleshooting = std::fs::read_to_string(repo().join("docs/troubleshooting.md"))
        .expect("troubleshooting.md");
    let anchors: Vec<String> = troubleshooting
        .lines()
        .filter_map(|l| l.strip_prefix("## "))
        .map(|h| {
            h.to_lowercase()
                .chars()
                .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-')
                .map(|c| if c == ' ' { '-' } else { c })
                .collect()
        })
        .collect();
    for g in read_yaml("config/prometheus/rules.yaml")["groups"]
        .as_sequence()
        .expect("groups")
    {
        for r in g["rules"].as_sequence().expect("rules") {
            let url = str_at(r, &["annotations", "runbook_url"]);
            let anchor = url
                .split_once("/docs/troubleshooting.md#")
                .map(|(_, a)| a.to_string());
            assert!(
                anchor.as_ref().is_some_and(|a| anchors.contains(a)),
                "{}: runbook_url {url:?} is no section of troubleshooting.md ({anchors:?})",
                str_at(r, &["alert"])
            );
        }
    }

    let cm = find(&objects, "ConfigMap", "kube-combo-grafana-dashboard");
    assert_eq!(cm["metadata"]["labels"]["grafana_dashboard"], "1");
    assert_eq!(
        cm["metadata"]["annotations"]["grafana_folder"],
        "kube-combo"
    );
    let json: serde_json::Value =
        serde_json::from_str(str_at(cm, &["data", "kube-combo-pinger.json"]))
            .expect("the ConfigMap's dashboard is JSON");
    let file: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("deploy/grafana/kube-combo-pinger.json"))
            .expect("the dashboard"),
    )
    .expect("the dashboard is JSON");
    assert_eq!(json, file, "the ConfigMap holds deploy/grafana's dashboard");
    assert!(
        !template(&helm, &[])
            .iter()
            .any(|o| str_at(o, &["kind"]) == "ConfigMap"),
        "a dashboard ConfigMap by default"
    );
}

#[test]
fn debuggers_and_pingers_of_the_values_are_rendered_as_their_objects() {
    let Some(helm) = helm::binary("debuggers and pingers") else {
        return;
    };
    let objects = template_values(
        &helm,
        "workloads",
        r#"
pingers:
  - {name: mesh, spec: {peers: true, maxPeers: 20}}
debuggers:
  - name: node-check
    namespace: ops
    labels: {team: infra}
    spec: {workloadType: daemonset, enablePinger: true, pinger: mesh, runAt: "0 */6 * * *", categories: [disk, net]}
"#,
    );
    let yaml = |s: &str| -> Value { serde_yaml::from_str(s).expect("YAML") };
    let d = find(&objects, "Debugger", "node-check");
    assert_eq!(str_at(d, &["apiVersion"]), "kubecombo.io/v1");
    assert_eq!(str_at(d, &["metadata", "namespace"]), "ops");
    assert_eq!(d["metadata"]["labels"]["team"], "infra");
    assert_eq!(
        d["metadata"]["labels"]["app.kubernetes.io/instance"],
        "kube-combo"
    );
    assert_eq!(
        d["spec"],
        yaml(
            r#"{workloadType: daemonset, enablePinger: true, pinger: mesh, runAt: "0 */6 * * *", categories: [disk, net]}"#
        )
    );
    let p = find(&objects, "Pinger", "mesh");
    assert_eq!(
        str_at(p, &["metadata", "namespace"]),
        NS,
        "the release namespace"
    );
    assert_eq!(p["spec"], yaml("{peers: true, maxPeers: 20}"));
    // Each is an object of its CRD in crds/.
    for o in [d, p] {
        let kind = str_at(o, &["kind"]);
        assert!(
            objects
                .iter()
                .any(|c| str_at(c, &["kind"]) == "CustomResourceDefinition"
                    && c["spec"]["names"]["kind"] == kind
                    && c["spec"]["group"] == "kubecombo.io"),
            "no CRD of {kind}"
        );
    }
    assert!(
        !template(&helm, &[])
            .iter()
            .any(|o| matches!(str_at(o, &["kind"]), "Debugger" | "Pinger")),
        "a Debugger or Pinger by default"
    );
}

#[test]
fn the_chart_says_where_it_comes_from_and_its_notes_where_the_plugin_and_docs_are() {
    let Some(helm) = helm::binary("Chart.yaml and NOTES") else {
        return;
    };
    let chart = read_yaml("deploy/helm/kube-combo/Chart.yaml");
    for key in ["kubeVersion", "home", "sources", "keywords", "maintainers"] {
        assert!(
            !chart[key].is_null() && chart[key] != Value::Sequence(vec![]),
            "Chart.yaml has no {key}"
        );
    }
    let app = str_at(&chart, &["appVersion"]);
    assert!(
        !app.starts_with('v') && app.split('.').count() == 3,
        "appVersion {app:?} is not the release's form (1.2.3)"
    );
    let home = str_at(&chart, &["home"]);
    let dir = self::chart();
    let out = run(
        &helm,
        &[
            "install",
            "kube-combo",
            dir.to_str().expect("a UTF-8 path"),
            "-n",
            NS,
            "--dry-run=client",
            "--set",
            "watchNamespace=team-a",
        ],
    );
    let notes = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for want in [
        "kubectl krew install --manifest=combo.yaml",
        "kubectl-combo-linux-amd64.tar.gz",
        "kubectl label namespace team-a",
        "kubectl apply -n team-a -f samples/debugger_daemonset.yaml",
        &format!("{home}/tree/main/docs"),
    ] {
        assert!(notes.contains(want), "NOTES without {want:?}:\n{notes}");
    }
}
