//! The schema as strict as the operator: wrong values generated from it
//! refused by path, the right values of `ci/` rendered, the Kubernetes
//! types those of the CRDs and of k8s-openapi.

use super::*;

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
        // A number: helm's server-side apply is refused with "expected string".
        ("resources: {limits: {cpu: 1}}", "/resources/limits/cpu"),
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

/// A Kubernetes type's own schema, from k8s-openapi (the API server's
/// OpenAPI definitions).
fn openapi<T: schemars::JsonSchema>() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(T)).expect("a schema is JSON")
}

/// `s` with its `$ref` resolved: `#/definitions/` of the chart's schema or
/// `#/$defs/` of k8s-openapi's.
fn followed<'a>(root: &'a serde_json::Value, s: &'a serde_json::Value) -> &'a serde_json::Value {
    match s["$ref"].as_str() {
        Some(r) if r.starts_with("#/definitions/") => {
            followed(root, &root["definitions"][&r["#/definitions/".len()..]])
        }
        Some(r) if r.starts_with("#/$defs/") => {
            followed(root, &root["$defs"][&r["#/$defs/".len()..]])
        }
        _ => s,
    }
}

/// The JSON types `s` allows, `null` left out (k8s-openapi marks every
/// optional field nullable; the chart leaves such a field out instead).
fn types(s: &serde_json::Value) -> Vec<String> {
    let mut t: Vec<String> = match &s["type"] {
        serde_json::Value::String(t) => vec![t.clone()],
        serde_json::Value::Array(a) => a
            .iter()
            .filter_map(|t| t.as_str().map(String::from))
            .collect(),
        _ => Vec::new(),
    };
    t.retain(|t| t != "null");
    t
}

/// Where the chart's schema `ours` (in `our_root`) and Kubernetes' `theirs`
/// (in `their_root`) differ in shape: a field one has and the other lacks,
/// or another JSON type. Constraints the chart adds (patterns, bounds,
/// enums) are not differences.
fn differences(
    (our_root, ours): (&serde_json::Value, &serde_json::Value),
    (their_root, theirs): (&serde_json::Value, &serde_json::Value),
    path: &str,
    out: &mut Vec<String>,
) {
    let ours = followed(our_root, ours);
    let theirs = followed(their_root, theirs);
    let (ot, tt) = (types(ours), types(theirs));
    if !ot.is_empty() && !tt.is_empty() && ot != tt {
        out.push(format!("{path}: the chart says {ot:?}, Kubernetes {tt:?}"));
        return;
    }
    let empty = serde_json::Map::new();
    let op = ours["properties"].as_object().unwrap_or(&empty);
    let tp = theirs["properties"].as_object().unwrap_or(&empty);
    for (k, v) in op {
        match tp.get(k) {
            Some(t) => differences((our_root, v), (their_root, t), &format!("{path}.{k}"), out),
            None => out.push(format!("{path}.{k}: not a field of the Kubernetes type")),
        }
    }
    for k in tp.keys().filter(|k| !op.contains_key(*k)) {
        out.push(format!(
            "{path}.{k}: a field of the Kubernetes type the chart refuses"
        ));
    }
    for key in ["items", "additionalProperties"] {
        if ours[key].is_object() && theirs[key].is_object() {
            differences(
                (our_root, &ours[key]),
                (their_root, &theirs[key]),
                &format!("{path}[]"),
                out,
            );
        }
    }
}

#[test]
fn the_schema_s_kubernetes_types_have_the_fields_and_types_of_k8s_openapi_s() {
    use k8s_openapi::api::apps::v1::DeploymentStrategy;
    use k8s_openapi::api::core::v1::{
        EnvVar, PodSecurityContext, ResourceRequirements, SecurityContext,
    };
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(chart().join("values.schema.json")).expect("the schema"),
    )
    .expect("the schema is JSON");
    let types = [
        ("ResourceRequirements", openapi::<ResourceRequirements>()),
        ("PodSecurityContext", openapi::<PodSecurityContext>()),
        ("SecurityContext", openapi::<SecurityContext>()),
        ("EnvVar", openapi::<EnvVar>()),
        ("DeploymentStrategy", openapi::<DeploymentStrategy>()),
    ];
    let mut found = Vec::new();
    for (name, theirs) in &types {
        differences(
            (&schema, &schema["definitions"][name]),
            (theirs, theirs),
            name,
            &mut found,
        );
    }
    assert!(found.is_empty(), "{} differences: {found:#?}", found.len());
}
