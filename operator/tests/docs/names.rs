//! Label and annotation keys, Event reasons, condition types and reasons,
//! and Helm values: each from its single source in the code or the chart,
//! against its table in docs/reference.md.

use std::collections::BTreeSet;

use serde_yaml::Value;

use super::source::{match_arms, product_code, str_consts};
use super::{assert_none, named, read, reference_section, table_rows, tables};

/// Checks both ways that the names of `code` are the names `documented`.
fn both_ways(what: &str, code: &BTreeSet<String>, documented: &BTreeSet<String>) {
    assert!(code.len() >= 3, "only {code:?} found in the code as {what}");
    let mut problems: Vec<String> = code
        .difference(documented)
        .map(|n| format!("{what} `{n}` is in the code and has no row in docs/reference.md"))
        .collect();
    problems.extend(documented.difference(code).map(|n| {
        format!("docs/reference.md has a row for {what} `{n}`, which the code does not have")
    }));
    assert_none(what, problems);
}

fn names_in_first_cells(rows: Vec<Vec<String>>) -> BTreeSet<String> {
    rows.iter().flat_map(|r| named(&r[0])).collect()
}

#[test]
fn every_label_and_annotation_key_has_its_row_and_every_row_a_key() {
    let mut code = product_code("api/src");
    code.extend(product_code("operator/src"));
    let keys: BTreeSet<String> = str_consts(&code, &["LABEL_", "ANNOTATION_"])
        .into_iter()
        .filter(|(name, _)| !name.ends_with("_VALUE"))
        .map(|(_, value)| value)
        .collect();
    let reference = read("docs/reference.md");
    let lines = reference_section(&reference, 3, "Labels and annotations");
    both_ways(
        "label or annotation",
        &keys,
        &names_in_first_cells(table_rows(&lines, "key")),
    );
}

/// The reasons of the Events the operator, the runner and the pinger
/// record, from their constants and `reason` functions.
fn event_reasons() -> BTreeSet<String> {
    let operator = product_code("operator/src");
    let mut reasons: Vec<String> =
        str_consts(&operator, &["WORKLOAD_", "EVENT_", "CONDITION_TAINT_LIMIT"])
            .into_iter()
            .map(|(_, v)| v)
            .collect();
    reasons.extend(match_arms(
        "operator/src/core/validate.rs",
        "pub fn reason(&self) -> &'static str {",
    ));
    reasons.extend(
        str_consts(&product_code("runner/src"), &["REASON_"])
            .into_iter()
            .chain(str_consts(&product_code("pinger/src"), &["REASON_"]))
            .map(|(_, v)| v),
    );
    reasons.extend(match_arms(
        "pinger/src/targets.rs",
        "pub fn failure_reason(self) -> &'static str {",
    ));
    reasons.into_iter().collect()
}

#[test]
fn every_event_reason_has_its_row_and_every_row_a_reason() {
    let reference = read("docs/reference.md");
    let lines = reference_section(&reference, 2, "Events");
    both_ways(
        "Event reason",
        &event_reasons(),
        &names_in_first_cells(table_rows(&lines, "reason")),
    );
}

#[test]
fn every_condition_type_and_reason_has_its_row_and_every_row_one() {
    let operator = product_code("operator/src");
    let mut code: BTreeSet<String> = str_consts(&operator, &["REASON_", "CONDITION_"])
        .into_iter()
        .map(|(_, v)| v)
        .collect();
    code.extend(match_arms(
        "operator/src/core/validate.rs",
        "pub fn reason(&self) -> &'static str {",
    ));
    let reference = read("docs/reference.md");
    let mut documented = BTreeSet::new();
    for kind in ["Debugger", "Pinger"] {
        let lines = reference_section(&reference, 2, kind);
        for (header, rows) in tables(&lines) {
            if !matches!(header[0].as_str(), "type" | "status") {
                continue;
            }
            for (i, column) in header.iter().enumerate() {
                if column == "type" || column == "reason" {
                    documented.extend(rows.iter().flat_map(|r| named(&r[i])));
                }
            }
        }
    }
    both_ways("condition type or reason", &code, &documented);
}

/// The chart's values as its schema defines them: the path of each leaf
/// (`image.operator`, `resources`: a Kubernetes type is one leaf) with its
/// schema, and the path of each object the chart defines, whose keys the
/// schema closes (`additionalProperties: false`).
fn schema_leaves(
    schema: &serde_json::Value,
    prefix: &str,
    leaves: &mut Vec<(String, serde_json::Value)>,
    closed: &mut Vec<String>,
) {
    let props = schema["properties"]
        .as_object()
        .expect("an object's properties");
    if schema["additionalProperties"] == serde_json::Value::Bool(false) {
        closed.push(prefix.to_string());
    }
    for (key, sub) in props {
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        if sub.get("properties").is_some() {
            schema_leaves(sub, &path, leaves, closed);
        } else {
            leaves.push((path, sub.clone()));
        }
    }
}

/// The value at `path` (`a.b`) of values.yaml.
fn value_at<'a>(values: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(values, |v, k| v.get(k))
}

/// The chart's values, its schema (deploy/helm/kube-combo/values.schema.json)
/// and its README's table agree: every value of values.yaml is in the
/// schema and every leaf of the schema has a default there; each object the
/// chart defines refuses unknown keys; every leaf has one row in the
/// README whose default (YAML in a code span) is values.yaml's and whose
/// description is the schema's, and every row names a leaf.
#[test]
fn every_helm_value_has_its_row_with_its_default_and_description_and_every_row_a_value() {
    let chart = "deploy/helm/kube-combo";
    let values: Value =
        serde_yaml::from_str(&read(&format!("{chart}/values.yaml"))).expect("values.yaml parses");
    let schema: serde_json::Value =
        serde_json::from_str(&read(&format!("{chart}/values.schema.json")))
            .expect("values.schema.json parses");
    let (mut leaves, mut closed) = (Vec::new(), Vec::new());
    schema_leaves(&schema, "", &mut leaves, &mut closed);
    let mut problems = Vec::new();

    // values.yaml against the schema, both ways.
    let mut objects = vec![(String::new(), &values)];
    while let Some((prefix, v)) = objects.pop() {
        for (k, sub) in v.as_mapping().into_iter().flatten() {
            let key = k.as_str().expect("value keys are strings");
            let path = if prefix.is_empty() {
                key.to_string()
            } else {
                format!("{prefix}.{key}")
            };
            if closed.contains(&path) {
                objects.push((path, sub));
            } else if !leaves.iter().any(|(l, _)| *l == path) {
                problems.push(format!(
                    "values.yaml has `{path}`, which values.schema.json does not define"
                ));
            }
        }
    }
    for (path, _) in &leaves {
        if value_at(&values, path).is_none() {
            problems.push(format!(
                "values.schema.json defines `{path}`, which has no default in values.yaml"
            ));
        }
    }
    for path in closed.iter().filter(|p| !p.is_empty()) {
        if value_at(&values, path).is_none_or(|v| v.as_mapping().is_none()) {
            problems.push(format!(
                "values.schema.json defines the object `{path}`, not one in values.yaml"
            ));
        }
    }
    if !closed.contains(&String::new()) {
        problems.push("values.schema.json lets unknown top-level values through".into());
    }

    // The README's table against both.
    let readme = read(&format!("{chart}/README.md"));
    let lines: Vec<&str> = readme.lines().collect();
    let rows = table_rows(&lines, "value");
    for (path, leaf) in &leaves {
        let mine: Vec<&Vec<String>> = rows
            .iter()
            .filter(|r| named(&r[0]) == [path.clone()])
            .collect();
        let [row] = mine[..] else {
            problems.push(format!(
                "value `{path}` has {} rows in {chart}/README.md, not one",
                mine.len()
            ));
            continue;
        };
        let default = named(&row[1]);
        let parsed = default
            .first()
            .and_then(|d| serde_yaml::from_str::<Value>(d).ok());
        if default.len() != 1 || parsed.as_ref() != value_at(&values, path) {
            problems.push(format!(
                "the row of `{path}` gives the default {}, values.yaml {:?}",
                row[1],
                value_at(&values, path)
            ));
        }
        let description = leaf["description"].as_str().unwrap_or("");
        if row[2] != description {
            problems.push(format!("the row of `{path}` says {:?}; values.schema.json's description is {description:?}", row[2]));
        }
    }
    for name in rows.iter().flat_map(|r| named(&r[0])) {
        if !leaves.iter().any(|(p, _)| *p == name) {
            problems.push(format!("the row `{name}` names no value of the chart"));
        }
    }
    assert!(leaves.len() > 20, "only {} values read", leaves.len());
    assert_none(&format!("{chart}/README.md, \"Values\""), problems);
}
