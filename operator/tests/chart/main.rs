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

mod schema;
mod values;

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
