use std::path::PathBuf;

use serde_yaml::Value;

use super::{read, repo, section};

/// One property of a CRD schema.
struct Field {
    path: String,
    description: Option<String>,
    default: Option<String>,
}

/// How the reference writes a schema default: scalars as they are, lists in
/// YAML flow style (`[disk, net]`), maps as `{}` or `{k: v}`.
fn render_default(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        Value::Sequence(items) => {
            let items: Vec<String> = items.iter().map(render_default).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Mapping(m) => {
            let items: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{}: {}", render_default(k), render_default(v)))
                .collect();
            format!("{{{}}}", items.join(", "))
        }
        Value::Tagged(t) => render_default(&t.value),
    }
}

fn collect_fields(schema: &Value, path: &str, out: &mut Vec<Field>) {
    if let Some(props) = schema.get("properties").and_then(Value::as_mapping) {
        for (name, sub) in props {
            let name = name.as_str().expect("property names are strings");
            let p = if path.is_empty() {
                name.to_string()
            } else {
                format!("{path}.{name}")
            };
            out.push(Field {
                path: p.clone(),
                description: sub
                    .get("description")
                    .and_then(Value::as_str)
                    .map(|d| d.split_whitespace().collect::<Vec<_>>().join(" ")),
                default: sub.get("default").map(render_default),
            });
            collect_fields(sub, &p, out);
        }
    }
    if let Some(items) = schema.get("items") {
        collect_fields(items, &format!("{path}[]"), out);
    }
}

/// One body row of a field table of the reference (a table whose header
/// starts with `field`): the field's path, the row's cells joined, its
/// description cell (the column whose header starts with `description`)
/// and its default cell (the column headed `default`).
struct FieldRow {
    path: String,
    line: String,
    description: String,
    default: String,
}

/// The field rows of a kind's section.
fn field_rows(lines: &[&str]) -> Vec<FieldRow> {
    let mut out = Vec::new();
    for (header, rows) in super::tables(lines) {
        if header.first().is_none_or(|c| c != "field") {
            continue;
        }
        let column = header
            .iter()
            .position(|c| c.starts_with("description"))
            .unwrap_or_else(|| panic!("a field table without a description column: {header:?}"));
        // A table of fields without defaults (a report's) has no such
        // column: each of its rows then gives none.
        let default = header.iter().position(|c| c == "default");
        for cells in rows {
            let path = cells[0].trim_matches('`').to_string();
            let line = cells.join(" | ");
            out.push(FieldRow {
                path,
                line,
                description: cells.get(column).cloned().unwrap_or_default(),
                default: default
                    .and_then(|d| cells.get(d).cloned())
                    .unwrap_or_default(),
            });
        }
    }
    out
}

/// What is wrong with `cell`, the reference's description of `path`,
/// given the CRD's description of it (whitespace folded): the cell must be
/// exactly the CRD's description, with `|` written `\|`, and empty when the
/// CRD has none. The column is headed "description (`kubectl explain`)",
/// so nothing else may stand there, not even after the CRD's words: the
/// reference's own notes go in its "example and notes" column.
fn description_problem(path: &str, cell: &str, crd: Option<&str>) -> Option<String> {
    let want = crd.unwrap_or("").replace('|', "\\|");
    (cell != want).then(|| match crd {
        None => format!(
            "the row of `{path}` gives the description {cell:?}, but the CRD has none (notes go in the last column)"
        ),
        Some(_) if cell.starts_with(&want) => format!(
            "the row of `{path}` adds {:?} to the description kubectl explain shows: move it to the notes column, or into the field's doc comment in api/src",
            cell[want.len()..].trim()
        ),
        Some(_) => format!(
            "the row of `{path}` gives the description {cell:?}; kubectl explain shows {want:?}"
        ),
    })
}

/// The committed CRD files.
fn crd_files() -> Vec<PathBuf> {
    let mut crds: Vec<PathBuf> = std::fs::read_dir(repo().join("config/crd"))
        .expect("config/crd")
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    crds.sort();
    assert!(crds.len() >= 3, "the CRDs are not in config/crd: {crds:?}");
    crds
}

/// Every CRD field has its row; the row's description cell is the CRD's
/// description and nothing else ([`description_problem`]), and the row
/// gives the schema's default.
#[test]
fn every_crd_field_is_in_the_reference_as_kubectl_explain_shows_it() {
    let reference = read("docs/reference.md");
    let crds = crd_files();
    let mut missing = Vec::new();
    let mut checked = 0;
    for file in crds {
        let crd: Value = serde_yaml::from_str(&std::fs::read_to_string(&file).expect("CRD file"))
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let kind = crd["spec"]["names"]["kind"].as_str().expect("CRD kind");
        let Some(lines) = section(&reference, 2, |t| {
            t == kind || t.starts_with(&format!("{kind} "))
        }) else {
            missing.push(format!("no section `## {kind}` for {}", file.display()));
            continue;
        };
        let rows = field_rows(&lines);
        for short in crd["spec"]["names"]["shortNames"]
            .as_sequence()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if !lines.iter().any(|l| l.contains(&format!("`{short}`"))) {
                missing.push(format!("{kind}: short name `{short}` is not named"));
            }
        }
        for version in crd["spec"]["versions"].as_sequence().expect("versions") {
            for col in version["additionalPrinterColumns"]
                .as_sequence()
                .into_iter()
                .flatten()
            {
                let name = col["name"].as_str().expect("column name");
                if !lines.iter().any(|l| l.contains(&format!("`{name}`"))) {
                    missing.push(format!("{kind}: printer column `{name}` is not named"));
                }
            }
            let mut fields = Vec::new();
            collect_fields(&version["schema"]["openAPIV3Schema"], "", &mut fields);
            // Fields under a row marked "Kubernetes type" are that type's own
            // (documented by Kubernetes) and need no rows of their own.
            let mut upstream: Vec<String> = Vec::new();
            for field in fields {
                if upstream.iter().any(|u| {
                    field.path.starts_with(&format!("{u}."))
                        || field.path.starts_with(&format!("{u}[]"))
                }) {
                    continue;
                }
                checked += 1;
                let Some(row) = rows.iter().find(|r| r.path == field.path) else {
                    missing.push(format!(
                        "{kind}: field `{}` has no row `| `{}` | ...` (description: {:?}, default: {:?})",
                        field.path, field.path, field.description, field.default
                    ));
                    continue;
                };
                // A Kubernetes type's own fields need no rows, nor do the
                // settings of checkSettings (checks.md lists them, a test
                // of api/src/settings.rs holds it to the scripts); the
                // row's description is still the CRD's.
                if row.line.contains("Kubernetes type")
                    || row.line.contains("object of strings, one per setting")
                {
                    upstream.push(field.path.clone());
                }
                if let Some(p) =
                    description_problem(&field.path, &row.description, field.description.as_deref())
                {
                    missing.push(format!("{kind}: {p}"));
                }
                // The default column is the schema's default, as
                // `kubectl get -o yaml` shows a field the API server
                // filled in, or empty when the schema has none.
                let want = field.default.as_ref().map(|d| format!("`{d}`"));
                if row.default != want.clone().unwrap_or_default() {
                    missing.push(format!(
                        "{kind}: the row of `{}` gives the default {:?}; the schema's is {}",
                        field.path,
                        row.default,
                        want.map_or("none (leave the cell empty)".to_string(), |d| format!(
                            "{d:?}"
                        ))
                    ));
                }
            }
        }
    }
    assert!(
        checked > 20,
        "only {checked} fields read: the schema walk is broken"
    );
    assert!(
        missing.is_empty(),
        "docs/reference.md is missing:\n  {}",
        missing.join("\n  ")
    );
}

#[test]
fn every_field_row_of_the_reference_names_a_crd_field() {
    let reference = read("docs/reference.md");
    let mut unknown = Vec::new();
    let mut rows_read = 0;
    for file in crd_files() {
        let crd: Value = serde_yaml::from_str(&std::fs::read_to_string(&file).expect("CRD file"))
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let kind = crd["spec"]["names"]["kind"].as_str().expect("CRD kind");
        let lines = section(&reference, 2, |t| {
            t == kind || t.starts_with(&format!("{kind} "))
        })
        .unwrap_or_else(|| panic!("no section `## {kind}` in docs/reference.md"));
        let mut fields = Vec::new();
        for version in crd["spec"]["versions"].as_sequence().expect("versions") {
            collect_fields(&version["schema"]["openAPIV3Schema"], "", &mut fields);
        }
        for row in super::table_rows(&lines, "field") {
            rows_read += 1;
            let path = row[0].trim_matches('`');
            if !fields.iter().any(|f| f.path == path) {
                unknown.push(format!(
                    "{kind}: the row `{path}` names no field of the CRD"
                ));
            }
        }
    }
    assert!(
        rows_read > 20,
        "only {rows_read} field rows read: the table reader is broken"
    );
    super::assert_none(
        "docs/reference.md names fields the CRDs do not have",
        unknown,
    );
}

#[test]
fn a_description_cell_is_the_crds_description_and_nothing_else() {
    let crd = Some("Probes per target per round; 0 | 1 is odd.");
    let escaped = "Probes per target per round; 0 \\| 1 is odd.";
    assert_eq!(description_problem("spec.count", escaped, crd), None);
    // A quote the CRD lacks, words added after the CRD's, words left out,
    // and a description of a field whose CRD gives none.
    for cell in [
        "Probes per target per round; 0 \\| 1 is even.",
        "Probes per target per round; 0 \\| 1 is odd. At most 100.",
        "Probes per target per round.",
    ] {
        assert!(
            description_problem("spec.count", cell, crd).is_some(),
            "{cell:?} passed"
        );
    }
    assert!(description_problem("spec.x", "Made up.", None).is_some());
    assert_eq!(description_problem("spec.x", "", None), None);
    let rows = field_rows(&[
        "| field | type | description (`kubectl explain`) | notes |",
        "|---|---|---|---|",
        "| `spec.count` | integer | Probes. | `5` |",
    ]);
    assert_eq!(rows.len(), 1);
    assert_eq!(
        (rows[0].path.as_str(), rows[0].description.as_str()),
        ("spec.count", "Probes.")
    );
}
