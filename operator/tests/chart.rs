//! The Helm chart `deploy/helm/kube-combo`, rendered by `helm` itself
//! (docs/testing.md, "Helm"): with its default values it makes the objects
//! of the kustomize install `deploy/kube-combo.yaml`, its schema refuses a
//! bad value by name, its monitoring objects are those of
//! `config/prometheus/`, and each value reaches its object.
//!
//! Without `helm` each test skips with one line, unless COMBO_REQUIRE_HELM=1
//! (`tests/run-all.sh`), then it fails.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use combo_testkit::helm;
use serde::Deserialize as _;
use serde_yaml::{Mapping, Value};

/// The release namespace of every render.
const NS: &str = "kube-combo-system";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the operator crate sits in the repository")
        .to_path_buf()
}

fn chart() -> PathBuf {
    repo().join("deploy/helm/kube-combo")
}

fn run(helm: &Path, args: &[&str]) -> Output {
    Command::new(helm)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("running {} {args:?}: {e}", helm.display()))
}

/// Every document of a multi-document YAML stream, empty ones left out.
fn documents(yaml: &str) -> Vec<Value> {
    serde_yaml::Deserializer::from_str(yaml)
        .map(|d| Value::deserialize(d).expect("a YAML document"))
        .filter(|v| !v.is_null())
        .collect()
}

/// `helm template kube-combo <chart> -n kube-combo-system --include-crds ARGS`.
fn template(helm: &Path, args: &[&str]) -> Vec<Value> {
    let chart = chart();
    let mut all = vec![
        "template",
        "kube-combo",
        chart.to_str().expect("a UTF-8 path"),
        "-n",
        NS,
        "--include-crds",
    ];
    all.extend(args);
    let out = run(helm, &all);
    assert!(
        out.status.success(),
        "helm {all:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    documents(&String::from_utf8_lossy(&out.stdout))
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    at(v, path).as_str().unwrap_or("")
}

fn at<'a>(v: &'a Value, path: &[&str]) -> &'a Value {
    path.iter().fold(v, |v, k| v.get(k).unwrap_or(&Value::Null))
}

fn kind_name(v: &Value) -> String {
    format!(
        "{}/{}",
        str_at(v, &["kind"]),
        str_at(v, &["metadata", "name"])
    )
}

fn find<'a>(objects: &'a [Value], kind: &str, name: &str) -> &'a Value {
    objects
        .iter()
        .find(|o| str_at(o, &["kind"]) == kind && str_at(o, &["metadata", "name"]) == name)
        .unwrap_or_else(|| {
            let all: Vec<String> = objects.iter().map(kind_name).collect();
            panic!("no {kind}/{name} among {all:?}")
        })
}

fn mapping_mut<'a>(v: &'a mut Value, path: &[&str]) -> Option<&'a mut Mapping> {
    path.iter()
        .try_fold(v, |v, k| v.get_mut(k))
        .and_then(Value::as_mapping_mut)
}

/// `0.0` as `0`: kustomize writes the CRDs' whole floats as integers, and
/// the API server reads both as the same number.
fn whole_numbers(v: &mut Value) {
    match v {
        Value::Number(n) => {
            if let Some(f) = n.as_f64().filter(|f| f.fract() == 0.0 && n.is_f64()) {
                #[allow(clippy::cast_possible_truncation, reason = "a whole number")]
                let i = f as i64;
                *v = Value::Number(i.into());
            }
        }
        Value::Sequence(s) => s.iter_mut().for_each(whole_numbers),
        Value::Mapping(m) => m.values_mut().for_each(whole_numbers),
        _ => {}
    }
}

/// An object as both installs must agree on it: without the labels (the
/// chart adds Helm's), the cluster-wide names without the chart's
/// `-<release namespace>` suffix, without the container's
/// `imagePullPolicy: IfNotPresent` (what Kubernetes defaults a tagged image
/// to), and with whole numbers as integers.
fn comparable(mut v: Value) -> Value {
    whole_numbers(&mut v);
    let suffix = format!("-{NS}");
    for path in [&["metadata"][..], &["spec", "template", "metadata"]] {
        if let Some(m) = mapping_mut(&mut v, path) {
            m.remove("labels");
        }
    }
    for path in [&["metadata"][..], &["roleRef"]] {
        if let Some(m) = mapping_mut(&mut v, path) {
            if let Some(Value::String(name)) = m.get_mut("name") {
                if let Some(short) = name.strip_suffix(&suffix) {
                    *name = short.to_string();
                }
            }
        }
    }
    if let Some(Value::Sequence(containers)) =
        mapping_mut(&mut v, &["spec", "template", "spec"]).and_then(|m| m.get_mut("containers"))
    {
        for c in containers.iter_mut().filter_map(Value::as_mapping_mut) {
            if c.get("imagePullPolicy").and_then(Value::as_str) == Some("IfNotPresent") {
                c.remove("imagePullPolicy");
            }
        }
    }
    v
}

#[test]
fn the_chart_with_default_values_makes_the_objects_of_the_kustomize_install() {
    let Some(helm) = helm::binary("chart vs kustomize") else {
        return;
    };
    let manifest = documents(
        &std::fs::read_to_string(repo().join("deploy/kube-combo.yaml"))
            .expect("reading deploy/kube-combo.yaml"),
    );
    let rendered = template(&helm, &[]);
    // The namespace is Helm's (`--create-namespace`), not the chart's.
    let expected: Vec<Value> = manifest
        .into_iter()
        .filter(|o| str_at(o, &["kind"]) != "Namespace")
        .map(comparable)
        .collect();
    let got: Vec<Value> = rendered.iter().cloned().map(comparable).collect();
    let mut problems = Vec::new();
    for want in &expected {
        let name = kind_name(want);
        match got.iter().find(|g| kind_name(g) == name) {
            None => problems.push(format!("{name}: not rendered by the chart")),
            Some(g) if g != want => problems.push(format!(
                "{name} differs:\nkustomize: {}\nhelm: {}",
                serde_yaml::to_string(want).unwrap_or_default(),
                serde_yaml::to_string(g).unwrap_or_default()
            )),
            Some(_) => {}
        }
    }
    for g in &got {
        if !expected.iter().any(|w| kind_name(w) == kind_name(g)) {
            problems.push(format!("{}: rendered by the chart only", kind_name(g)));
        }
    }
    assert!(expected.len() >= 10, "only {} objects read", expected.len());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The chart's labels add to the kustomize install's.
    for o in &rendered {
        let labels = at(o, &["metadata", "labels"]);
        if str_at(o, &["kind"]) == "CustomResourceDefinition" {
            continue;
        }
        for key in [
            "app.kubernetes.io/name",
            "app.kubernetes.io/instance",
            "app.kubernetes.io/version",
            "app.kubernetes.io/managed-by",
            "helm.sh/chart",
        ] {
            assert!(
                labels.get(key).is_some(),
                "{} has no label {key}",
                kind_name(o)
            );
        }
    }
}

#[test]
fn the_chart_passes_helm_lint_strict() {
    let Some(helm) = helm::binary("helm lint --strict") else {
        return;
    };
    let chart = chart();
    let out = run(
        &helm,
        &["lint", "--strict", chart.to_str().expect("a UTF-8 path")],
    );
    assert!(
        out.status.success(),
        "helm lint --strict: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_value_of_the_wrong_type_or_an_unknown_name_is_refused_naming_it() {
    let Some(helm) = helm::binary("values.schema.json") else {
        return;
    };
    let dir = tempdir("schema");
    let typo = dir.join("typo.yaml");
    std::fs::write(&typo, "replcas: 2\n").expect("writing a values file");
    let nested = dir.join("nested.yaml");
    std::fs::write(&nested, "serviceAccount:\n  annotation: {a: b}\n").expect("writing");
    let chart = chart();
    let chart = chart.to_str().expect("a UTF-8 path");
    let cases: [(&[&str], &str); 5] = [
        (&["--set-string", "replicas=two"], "/replicas"),
        (&["-f", typo.to_str().expect("UTF-8")], "'replcas'"),
        (&["-f", nested.to_str().expect("UTF-8")], "'annotation'"),
        (
            &["--set", "image.pullPolicy=Sometimes"],
            "/image/pullPolicy",
        ),
        (
            &["--set", "imagePullSecrets[0]=regcred"],
            "/imagePullSecrets/0",
        ),
    ];
    for (args, named) in cases {
        let mut all = vec!["template", "kube-combo", chart];
        all.extend(args);
        let out = run(&helm, &all);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "helm {all:?} rendered");
        assert!(
            stderr.contains(named),
            "helm {all:?} does not name {named}: {stderr}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A directory of the test `name` alone (the tests of this file run at once).
fn tempdir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("combo-chart-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("making a temporary directory");
    dir
}

fn read_yaml(rel: &str) -> Value {
    let text = std::fs::read_to_string(repo().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

#[test]
fn the_chart_carries_the_alert_rules_of_config_prometheus_and_the_dashboard() {
    // deploy/render.sh copies them; the chart reads the copy as a file.
    for (copy, original) in [
        (
            "deploy/helm/kube-combo/prometheus-rules.yaml",
            "config/prometheus/rules.yaml",
        ),
        (
            "deploy/helm/kube-combo/dashboards/kube-combo-pinger.json",
            "deploy/grafana/kube-combo-pinger.json",
        ),
    ] {
        assert_eq!(
            std::fs::read_to_string(repo().join(copy)).expect(copy),
            std::fs::read_to_string(repo().join(original)).expect(original),
            "{copy} is not {original}: run deploy/render.sh"
        );
    }
}

#[test]
fn the_monitoring_toggles_render_the_objects_of_config_prometheus() {
    let Some(helm) = helm::binary("monitoring objects") else {
        return;
    };
    let off = template(&helm, &[]);
    for kind in ["PodMonitor", "PrometheusRule", "Service"] {
        assert!(
            !off.iter().any(|o| str_at(o, &["kind"]) == kind),
            "a {kind} with the default values"
        );
    }
    let on = template(
        &helm,
        &[
            "--set",
            "podMonitor.enabled=true,prometheusRule.enabled=true,service.enabled=true",
        ],
    );
    let rule = find(&on, "PrometheusRule", "kube-combo-alerts");
    let config = read_yaml("config/prometheus/prometheusrule.yaml");
    assert_eq!(rule["spec"], config["spec"], "the PrometheusRule's groups");

    let operator = find(&on, "PodMonitor", "kube-combo-operator");
    let config = read_yaml("config/prometheus/operator_podmonitor.yaml");
    assert_eq!(
        operator["spec"], config["spec"],
        "the operator's PodMonitor"
    );
    let pinger = find(&on, "PodMonitor", "kube-combo-pinger");
    let config = read_yaml("config/prometheus/podmonitor.yaml");
    assert_eq!(pinger["spec"], config["spec"], "the pinger's PodMonitor");

    let service = find(&on, "Service", "combo-operator-metrics");
    let deployment = find(&on, "Deployment", "combo-operator");
    assert_eq!(
        service["spec"]["selector"], deployment["spec"]["selector"]["matchLabels"],
        "the Service selects the operator's pods"
    );
    assert_eq!(service["spec"]["ports"][0]["targetPort"], "metrics");
}

#[test]
fn each_value_reaches_its_object() {
    let Some(helm) = helm::binary("values") else {
        return;
    };
    let dir = tempdir("values");
    let values = dir.join("values.yaml");
    std::fs::write(
        &values,
        r#"
imagePullSecrets: [{name: regcred}]
workloadImagePullSecrets: [regcred, mirror]
nameOverride: combo
fullnameOverride: kc
serviceAccount: {name: kc-sa, annotations: {team: infra}}
podAnnotations: {a: b}
podLabels: {c: d}
podSecurityContext: {runAsUser: 1000}
securityContext: {privileged: false}
priorityClassName: system-cluster-critical
affinity: {nodeAffinity: {}}
nodeSelector: {disk: ssd}
tolerations: [{operator: Exists}]
resources: {requests: {cpu: 50m}}
replicas: 2
metricsPort: 9090
watchNamespace: team-a
leaderElect: false
nodeTaints: false
podMonitor: {enabled: true, interval: 1m, labels: {release: prom}}
prometheusRule: {enabled: true, labels: {release: prom}}
service: {enabled: true, type: NodePort, port: 9999, annotations: {e: f}}
"#,
    )
    .expect("writing a values file");
    let objects = template(&helm, &["-f", values.to_str().expect("UTF-8")]);
    let _ = std::fs::remove_dir_all(&dir);

    let d = find(&objects, "Deployment", "kc");
    let pod = &d["spec"]["template"];
    let spec = &pod["spec"];
    let c = &spec["containers"][0];
    let yaml = |s: &str| -> Value { serde_yaml::from_str(s).expect("YAML") };
    assert_eq!(spec["imagePullSecrets"], yaml("[{name: regcred}]"));
    let pull = c["env"]
        .as_sequence()
        .and_then(|env| env.iter().find(|e| e["name"] == "COMBO_IMAGE_PULL_SECRETS"));
    assert_eq!(
        pull.map(|e| str_at(e, &["value"])),
        Some("regcred,mirror"),
        "workloadImagePullSecrets becomes the operator's --image-pull-secrets"
    );
    assert_eq!(str_at(spec, &["serviceAccountName"]), "kc-sa");
    assert_eq!(pod["metadata"]["annotations"]["a"], "b");
    assert_eq!(pod["metadata"]["annotations"]["prometheus.io/port"], "9090");
    assert_eq!(pod["metadata"]["labels"]["c"], "d");
    assert_eq!(pod["metadata"]["labels"]["app.kubernetes.io/name"], "combo");
    // Helm merges a map given with the default's: the keys given win.
    assert_eq!(spec["securityContext"]["runAsUser"], 1000);
    assert_eq!(spec["securityContext"]["runAsNonRoot"], true);
    assert_eq!(c["securityContext"]["privileged"], false);
    assert_eq!(
        str_at(spec, &["priorityClassName"]),
        "system-cluster-critical"
    );
    assert_eq!(spec["affinity"], yaml("{nodeAffinity: {}}"));
    assert_eq!(spec["nodeSelector"], yaml("{disk: ssd}"));
    assert_eq!(spec["tolerations"], yaml("[{operator: Exists}]"));
    assert_eq!(c["resources"]["requests"], yaml("{cpu: 50m, memory: 64Mi}"));
    assert_eq!(d["spec"]["replicas"], 2);
    assert_eq!(
        c["args"],
        yaml("[--metrics-addr=0.0.0.0:9090, --namespace=team-a, --no-taints]")
    );
    // nodeTaints: false leaves out the right to taint nodes.
    assert!(
        !objects
            .iter()
            .any(|o| str_at(o, &["metadata", "name"]).contains("node-taints")),
        "a node-taints object with nodeTaints: false"
    );
    // serviceAccount.create (true) makes the named ServiceAccount, bound.
    let sa = find(&objects, "ServiceAccount", "kc-sa");
    assert_eq!(sa["metadata"]["annotations"]["team"], "infra");
    let binding = find(&objects, "ClusterRoleBinding", &format!("kc-{NS}"));
    assert_eq!(str_at(&binding["subjects"][0], &["name"]), "kc-sa");
    let service = find(&objects, "Service", "kc-metrics");
    assert_eq!(str_at(service, &["spec", "type"]), "NodePort");
    assert_eq!(service["spec"]["ports"][0]["port"], 9999);
    assert_eq!(service["metadata"]["annotations"]["e"], "f");
    for o in objects
        .iter()
        .filter(|o| matches!(str_at(o, &["kind"]), "PodMonitor" | "PrometheusRule"))
    {
        assert_eq!(
            o["metadata"]["labels"]["release"],
            "prom",
            "{}",
            kind_name(o)
        );
    }
    let monitor = find(&objects, "PodMonitor", "kube-combo-operator");
    assert_eq!(monitor["spec"]["podMetricsEndpoints"][0]["interval"], "1m");
    assert_eq!(
        monitor["spec"]["selector"]["matchLabels"],
        d["spec"]["selector"]["matchLabels"]
    );

    // serviceAccount.create: false makes none and uses the name given.
    let objects = template(
        &helm,
        &[
            "--set",
            "serviceAccount.create=false,serviceAccount.name=ops",
        ],
    );
    assert!(!objects
        .iter()
        .any(|o| str_at(o, &["kind"]) == "ServiceAccount"));
    let d = find(&objects, "Deployment", "combo-operator");
    assert_eq!(
        str_at(&d["spec"]["template"]["spec"], &["serviceAccountName"]),
        "ops"
    );
}

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

/// A wrong value: the YAML of a values file and the path helm must name.
struct Wrong {
    values: String,
    named: String,
}

/// The schema at `s`, its `$ref` resolved in `root`'s definitions.
fn resolved<'a>(root: &'a serde_json::Value, s: &'a serde_json::Value) -> &'a serde_json::Value {
    match s["$ref"]
        .as_str()
        .and_then(|r| r.strip_prefix("#/definitions/"))
    {
        Some(name) => resolved(root, &root["definitions"][name]),
        None => s,
    }
}

/// `value` at `path` (keys; `0` is the first item of a list) as YAML.
fn values_at(path: &[String], value: Value) -> String {
    let v = path.iter().rev().fold(value, |v, k| {
        if k == "0" {
            Value::Sequence(vec![v])
        } else {
            let mut m = Mapping::new();
            m.insert(Value::String(k.clone()), v);
            Value::Mapping(m)
        }
    });
    serde_yaml::to_string(&v).expect("YAML")
}

/// Wrong values generated from the schema: for each value it defines, down
/// to `depth` levels into the Kubernetes types, one of another type, one
/// that misses its pattern or enum, and an unknown key in each closed object.
fn wrong_values(
    root: &serde_json::Value,
    s: &serde_json::Value,
    path: &mut Vec<String>,
    depth: usize,
    out: &mut Vec<Wrong>,
) {
    let s = resolved(root, s);
    let pointer = format!("'/{}'", path.join("/"));
    let mut push = |value: Value, named: String| {
        out.push(Wrong {
            values: values_at(path, value),
            named,
        });
    };
    let types: Vec<&str> = match &s["type"] {
        serde_json::Value::String(t) => vec![t.as_str()],
        serde_json::Value::Array(ts) => ts.iter().filter_map(|t| t.as_str()).collect(),
        _ => Vec::new(),
    };
    if !path.is_empty() && !types.is_empty() {
        let other = if types.contains(&"string") || types.contains(&"object") {
            Value::Sequence(vec![Value::Number(1.into())])
        } else {
            Value::String("not-a-number-or-bool".into())
        };
        if !(types.contains(&"array") && other.is_sequence()) {
            push(other, pointer.clone());
        } else {
            push(Value::String("a string".into()), pointer.clone());
        }
    }
    if s.get("pattern").is_some() || s.get("enum").is_some() {
        push(Value::String("Not_A_Name!".into()), pointer.clone());
    }
    if s.get("oneOf").is_some() && types.is_empty() {
        push(
            Value::Sequence(vec![Value::Number(1.into())]),
            pointer.clone(),
        );
        push(Value::String("1x".into()), pointer.clone());
    }
    if depth == 0 {
        return;
    }
    if let Some(props) = s["properties"].as_object() {
        if s["additionalProperties"] == serde_json::Value::Bool(false) {
            push(
                serde_yaml::from_str("{notAValue: 1}").expect("YAML"),
                "'notAValue'".into(),
            );
        }
        for (k, sub) in props {
            path.push(k.clone());
            wrong_values(root, sub, path, depth - 1, out);
            path.pop();
        }
    }
    if let Some(items) = s.get("items") {
        path.push("0".into());
        wrong_values(root, items, path, depth - 1, out);
        path.pop();
    }
    if let Some(extra) = s.get("additionalProperties").filter(|a| a.is_object()) {
        path.push("someKey".into());
        wrong_values(root, extra, path, depth - 1, out);
        path.pop();
    }
}

/// The schema is as strict as the operator: every wrong value generated from
/// it, and those of the operator's crash loops, is refused naming its path;
/// every right values file of `ci/` (which tests/e2e/helm.sh installs) lints
/// and renders.
#[test]
fn the_schema_refuses_each_wrong_value_by_name_and_takes_the_right_ones() {
    let Some(helm) = helm::binary("schema") else {
        return;
    };
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(chart().join("values.schema.json")).expect("the schema"),
    )
    .expect("the schema is JSON");
    let mut wrong = Vec::new();
    wrong_values(&schema, &schema, &mut Vec::new(), 5, &mut wrong);
    // Values that pass a loose schema and stop the operator or its pod.
    for (values, named) in [
        (
            "workloadImagePullSecrets: [Reg_Cred]",
            "/workloadImagePullSecrets/0",
        ),
        ("resources: {limits: {cpu: [1]}}", "/resources/limits/cpu"),
        (
            "resources: {requests: {memory: 64MB}}",
            "/resources/requests/memory",
        ),
        (
            "podSecurityContext: {runAsUser: root}",
            "/podSecurityContext/runAsUser",
        ),
        ("tolerations: [{effect: 5}]", "/tolerations/0/effect"),
        (
            "tolerations: [{operator: Sometimes}]",
            "/tolerations/0/operator",
        ),
        (
            "securityContext: {capabilities: {drop: all}}",
            "/securityContext/capabilities/drop",
        ),
        ("watchNamespace: Team_A", "/watchNamespace"),
        ("extraArgs: [--no-taints]", "/extraArgs/0"),
        (
            "extraArgs: ['--image-pull-secrets=Reg_Cred']",
            "/extraArgs/0",
        ),
        ("extraEnv: [{name: 'A=B', value: x}]", "/extraEnv/0/name"),
        (
            "image: {operator: {digest: 'sha256:abc'}}",
            "/image/operator/digest",
        ),
        ("debuggers: [{name: Node_Check}]", "/debuggers/0/name"),
        ("updateStrategy: {type: OnDelete}", "/updateStrategy/type"),
    ] {
        wrong.push(Wrong {
            values: format!("{values}\n"),
            named: format!("'{named}'"),
        });
    }
    let dir = tempdir("wrong");
    let chart = chart();
    let chart = chart.to_str().expect("a UTF-8 path");
    let mut problems = Vec::new();
    // Four helm processes at a time, each on every fourth value.
    let verdicts: Vec<Result<(), String>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..4)
            .map(|k| {
                let (helm, dir, wrong) = (&helm, &dir, &wrong);
                scope.spawn(move || {
                    wrong
                        .iter()
                        .enumerate()
                        .skip(k)
                        .step_by(4)
                        .map(|(i, w)| {
                            let file = dir.join(format!("wrong-{i}.yaml"));
                            std::fs::write(&file, &w.values).expect("writing a values file");
                            let file = file.to_str().expect("UTF-8");
                            let out = run(helm, &["template", "kube-combo", chart, "-f", file]);
                            let stderr = String::from_utf8_lossy(&out.stderr);
                            if out.status.success() {
                                Err(format!("rendered: {}", w.values.trim()))
                            } else if !stderr.contains(&w.named) {
                                Err(format!(
                                    "refused without naming {}: {}: {stderr}",
                                    w.named,
                                    w.values.trim()
                                ))
                            } else {
                                Ok(())
                            }
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("a helm worker"))
            .collect()
    });
    let refused = verdicts.iter().filter(|v| v.is_ok()).count();
    problems.extend(verdicts.into_iter().filter_map(Result::err));
    // helm lint --strict refuses them too (a sample: lint is slower).
    for w in wrong.iter().rev().take(5) {
        let file = dir.join("lint.yaml");
        std::fs::write(&file, &w.values).expect("writing a values file");
        let out = run(
            &helm,
            &[
                "lint",
                "--strict",
                chart,
                "-f",
                file.to_str().expect("UTF-8"),
            ],
        );
        if out.status.success() {
            problems.push(format!("helm lint --strict passes {}", w.values.trim()));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    let mut right = 0;
    let mut files: Vec<PathBuf> = std::fs::read_dir(Path::new(chart).join("ci"))
        .expect("the chart's ci/")
        .map(|e| e.expect("an entry of ci/").path())
        .collect();
    files.sort();
    for f in &files {
        let f = f.to_str().expect("UTF-8");
        for args in [
            &["lint", "--strict", chart, "-f", f][..],
            &["template", "kube-combo", chart, "-f", f],
        ] {
            let out = run(&helm, args);
            if !out.status.success() {
                problems.push(format!(
                    "helm {args:?}: {}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
        }
        right += 1;
    }
    println!(
        "schema: refused {refused} of {} wrong values, rendered {right} of {} right ones (tests/e2e/helm.sh installs them)",
        wrong.len(),
        files.len()
    );
    assert!(
        wrong.len() > 100,
        "only {} wrong values generated",
        wrong.len()
    );
    assert!(
        files.len() >= 2,
        "only {} right values files in ci/",
        files.len()
    );
    assert_none_of(problems);
}

fn assert_none_of(problems: Vec<String>) {
    assert!(
        problems.is_empty(),
        "{} problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// `s` without what the chart's schema adds to, or the CRD generator puts
/// in, a Kubernetes type's schema: descriptions, defaults, formats, list
/// and map markers, closed objects and enums.
fn bare(s: &serde_json::Value) -> serde_json::Value {
    match s {
        serde_json::Value::Object(m) => m
            .iter()
            .filter(|(k, v)| {
                let added = matches!(
                    k.as_str(),
                    "description" | "default" | "nullable" | "format" | "enum"
                ) || k.starts_with("x-kubernetes-")
                    || (k.as_str() == "additionalProperties"
                        && **v == serde_json::Value::Bool(false));
                !added
            })
            .map(|(k, v)| (k.clone(), bare(v)))
            .collect(),
        serde_json::Value::Array(a) => a.iter().map(bare).collect(),
        v => v.clone(),
    }
}

#[test]
fn the_schema_types_affinity_and_tolerations_as_the_crds_do() {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(chart().join("values.schema.json")).expect("the schema"),
    )
    .expect("the schema is JSON");
    let crd = read_yaml("deploy/helm/kube-combo/crds/kubecombo.io_debuggers.yaml");
    let spec = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
        ["properties"];
    let json = |v: &Value| -> serde_json::Value {
        serde_json::to_value(v).expect("the CRD's schema as JSON")
    };
    assert_eq!(
        bare(&schema["definitions"]["Affinity"]),
        bare(&json(&spec["affinity"])),
        "the chart's Affinity is not the Debugger CRD's (k8s-openapi's)"
    );
    assert_eq!(
        bare(&schema["definitions"]["Toleration"]),
        bare(&json(&spec["tolerations"]["items"])),
        "the chart's Toleration is not the Debugger CRD's"
    );
    // Both closed, as the API server's pruning would drop an unknown key silently.
    assert_eq!(
        schema["definitions"]["Toleration"]["additionalProperties"],
        serde_json::Value::Bool(false)
    );
}
