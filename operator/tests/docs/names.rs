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
        "operator/src/validate.rs",
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
        "operator/src/validate.rs",
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

/// Every key path of the chart's values: `image.operator`, `resources`,
/// `resources.requests`, `resources.requests.cpu`, ...
fn value_paths(v: &Value, prefix: &str, out: &mut Vec<(String, Value)>) {
    let Some(map) = v.as_mapping() else { return };
    for (k, sub) in map {
        let key = k.as_str().expect("value keys are strings");
        let path = if prefix.is_empty() {
            key.to_string()
        } else {
            format!("{prefix}.{key}")
        };
        out.push((path.clone(), sub.clone()));
        value_paths(sub, &path, out);
    }
}

#[test]
fn every_helm_value_has_its_row_with_its_default_and_every_row_a_value() {
    let values: Value = serde_yaml::from_str(&read("deploy/helm/kube-combo/values.yaml"))
        .expect("values.yaml parses");
    let mut paths = Vec::new();
    value_paths(&values, "", &mut paths);
    let reference = read("docs/reference.md");
    let lines = reference_section(&reference, 2, "Helm values");
    let rows = table_rows(&lines, "value");
    let mut problems = Vec::new();
    // A map with keys is documented by the rows of its keys, or by a row of
    // its own that covers them all.
    let leaves = paths
        .iter()
        .filter(|(_, v)| v.as_mapping().is_none_or(|m| m.is_empty()));
    for (path, value) in leaves {
        let covering = rows.iter().find(|r| {
            named(&r[0])
                .iter()
                .any(|n| n == path || path.starts_with(&format!("{n}.")))
        });
        let Some(row) = covering else {
            problems.push(format!("value `{path}` has no row"));
            continue;
        };
        let scalar = match value {
            // An empty string is written as YAML writes it.
            Value::String(s) if s.is_empty() => Some("`\"\"`".to_string()),
            Value::String(s) => Some(format!("`{s}`")),
            Value::Bool(b) => Some(format!("`{b}`")),
            Value::Number(n) => Some(format!("`{n}`")),
            _ => None,
        };
        if let Some(default) = scalar.filter(|_| named(&row[0]).len() == 1) {
            if !row[1].contains(&default) {
                problems.push(format!(
                    "the row of `{path}` does not give its default {default}"
                ));
            }
        }
    }
    for name in rows.iter().flat_map(|r| named(&r[0])) {
        if !paths.iter().any(|(p, _)| *p == name) {
            problems.push(format!("the row `{name}` names no value of the chart"));
        }
    }
    assert!(paths.len() > 8, "only {} values read", paths.len());
    assert_none("docs/reference.md, \"Helm values\"", problems);
}
