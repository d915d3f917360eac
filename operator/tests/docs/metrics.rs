//! The metrics of docs/reference.md, "Metrics", against what the operator
//! and the pinger serve: names and label names from their own registries
//! (every family given a series), label values from their sources.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use combo_pinger::round::{evaluate, Outcome, Thresholds};
use combo_pinger::targets::{Kind, Target};
use combo_testkit::fixtures::debugger;

use super::source::{is_literal, literal_args, match_arms, product_code};
use super::{assert_none, named, read, reference_section, table_rows};

/// Metric name (as the reference writes it: counters with `_total`) ->
/// its label names, from one text exposition.
fn served(text: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut metrics: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for described in text.lines().filter_map(|l| l.strip_prefix("# TYPE ")) {
        let (name, kind) = described.split_once(' ').expect("# TYPE name kind");
        let name = if kind == "counter" {
            format!("{name}_total")
        } else {
            name.to_string()
        };
        metrics.insert(name, BTreeSet::new());
    }
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some((series, rest)) = line.split_once('{') else {
            continue;
        };
        let base = ["_bucket", "_sum", "_count", "_created"]
            .iter()
            .find_map(|s| series.strip_suffix(s))
            .filter(|b| metrics.contains_key(*b))
            .unwrap_or(series);
        let labels = rest.split('}').next().unwrap_or("");
        let names = labels
            .split(',')
            .filter_map(|kv| kv.split_once('=').map(|(k, _)| k.to_string()))
            .filter(|k| k != "le");
        metrics
            .get_mut(base)
            .unwrap_or_else(|| panic!("series {series} of no described metric"))
            .extend(names);
    }
    metrics
}

/// The operator's exposition with a series in every family.
fn operator_text() -> String {
    let m = combo_operator::metrics::registry::Metrics::default();
    m.reconciled(0.01);
    m.error("apply");
    m.write("Pod");
    m.watch_errors().inc("Pod");
    m.peer_list_written();
    let mut results = combo_operator::reports::results::Results::default();
    let disk = results.categories.entry("disk").or_default();
    disk.failing.insert("node-1".into(), 1);
    disk.failed_items = 1;
    results.node_runs.push(chrono::Utc::now());
    let dbg = debugger("ops", "d").build();
    let schedule = combo_api::RunAt::parse("0 * * * *").ok();
    m.results().set(&dbg, results, schedule, chrono::Utc::now());
    m.encode()
}

/// The pinger's exposition with every probe result.
fn pinger_text() -> String {
    let m = combo_pinger::metrics::Metrics::default();
    let target = Target {
        kind: Kind::Tcp,
        host: combo_api::pinger::Host::Ip("::1".parse().expect("an address")),
        port: Some(22),
    };
    let outcomes = vec![
        Outcome::Ok(std::time::Duration::from_millis(1)),
        Outcome::Timeout,
        Outcome::Refused,
        Outcome::Error("x".into()),
    ];
    let limits = Thresholds::default();
    // A peer's series carry its node.
    m.set_peer_nodes(
        [(
            "::1".parse().expect("an address"),
            Arc::new("node-a".to_string()),
        )]
        .into(),
    );
    let label = Arc::new(target.label());
    let mut series = m.series(&target, label.clone());
    m.record(
        &mut series,
        &combo_pinger::round::Report {
            label,
            target,
            round: 1,
            started: std::time::SystemTime::UNIX_EPOCH,
            stats: evaluate(&outcomes, limits),
            outcomes,
            limits,
        },
    );
    m.encode()
}

/// The values the code gives each `kind`/`result` label, where it names
/// them in one place: (metric, label) -> values.
fn code_values() -> BTreeMap<(&'static str, &'static str), Vec<String>> {
    let operator = product_code("operator/src");
    let mut errors = match_arms(
        "operator/src/debugger/error.rs",
        "pub fn kind(&self) -> &'static str {",
    );
    errors.extend(literal_args(&operator, "error"));
    assert!(
        errors.len() >= 5,
        "reconcile error kinds not found: {errors:?}"
    );
    let pinger_kinds = [Kind::Icmp, Kind::Tcp, Kind::Udp, Kind::Dns];
    let results = [
        Outcome::Ok(Default::default()),
        Outcome::Timeout,
        Outcome::Refused,
        Outcome::Error(String::new()),
    ];
    BTreeMap::from([
        (("combo_operator_reconcile_errors_total", "kind"), errors),
        (
            ("combo_operator_api_writes_total", "kind"),
            literal_args(&operator, "write"),
        ),
        (
            ("combo_pinger_probes_total", "kind"),
            pinger_kinds.iter().map(|k| k.as_str().into()).collect(),
        ),
        (
            ("combo_pinger_probes_total", "result"),
            results.iter().map(|o| o.label().into()).collect(),
        ),
    ])
}

/// One row of a metrics table: name, label names, label -> values.
struct Row {
    metric: String,
    labels: Vec<String>,
    values: BTreeMap<String, Vec<String>>,
}

fn rows() -> Vec<Row> {
    let reference = read("docs/reference.md");
    let lines = reference_section(&reference, 2, "Metrics");
    let rows: Vec<Row> = table_rows(&lines, "metric")
        .into_iter()
        .map(|cells| Row {
            metric: cells[0].trim_matches('`').to_string(),
            labels: named(&cells[2]),
            values: cells[3]
                .split(';')
                .filter_map(|group| {
                    let mut names = named(group);
                    (!names.is_empty()).then(|| (names.remove(0), names))
                })
                .collect(),
        })
        .collect();
    assert!(rows.len() > 10, "only {} metric rows read", rows.len());
    rows
}

#[test]
fn every_metric_served_and_its_labels_have_their_row() {
    let rows = rows();
    let mut missing = Vec::new();
    for (metric, labels) in served(&operator_text())
        .into_iter()
        .chain(served(&pinger_text()))
    {
        let Some(row) = rows.iter().find(|r| r.metric == metric) else {
            missing.push(format!("metric `{metric}` has no row `| `{metric}` | ...`"));
            continue;
        };
        for label in labels.iter().filter(|l| !row.labels.contains(l)) {
            missing.push(format!(
                "the row of `{metric}` does not name its label `{label}`"
            ));
        }
    }
    for ((metric, label), values) in code_values() {
        let row = rows.iter().find(|r| r.metric == metric);
        let documented = row.and_then(|r| r.values.get(label));
        for value in values {
            if !documented.is_some_and(|d| d.contains(&value)) {
                missing.push(format!(
                    "the row of `{metric}` does not list `{value}` among the values of `{label}`"
                ));
            }
        }
    }
    assert_none("docs/reference.md is missing", missing);
}

#[test]
fn every_metric_row_names_a_served_metric_label_and_value() {
    let mut served = served(&operator_text());
    served.extend(self::served(&pinger_text()));
    let operator = product_code("operator/src");
    let pinger = product_code("pinger/src");
    let mut unknown = Vec::new();
    for row in rows() {
        let Some(labels) = served.get(&row.metric) else {
            unknown.push(format!("the row `{}` names no metric served", row.metric));
            continue;
        };
        for label in row.labels.iter().filter(|l| !labels.contains(*l)) {
            unknown.push(format!(
                "the row `{}` names a label `{label}` it does not have",
                row.metric
            ));
        }
        let code = if row.metric.starts_with("combo_pinger_") {
            &pinger
        } else {
            &operator
        };
        for (label, values) in &row.values {
            if !labels.contains(label) {
                unknown.push(format!(
                    "the row `{}` gives values of `{label}`, no label of it",
                    row.metric
                ));
            }
            for value in values.iter().filter(|v| !is_literal(code, v)) {
                unknown.push(format!(
                    "the row `{}` lists `{label}` value `{value}`, which the code never writes",
                    row.metric
                ));
            }
        }
    }
    assert_none("docs/reference.md names what is not served", unknown);
}
