//! `combo-operator crd`: the CustomResourceDefinitions generated from the Rust
//! types, as committed under `config/crd/`.

use combo_api::{Debugger, DebuggerReport, Pinger};
use kube::CustomResourceExt;

/// File name and YAML of each CRD, in the order `combo-operator crd` prints them.
pub fn crds() -> Vec<(&'static str, String)> {
    vec![
        ("kubecombo.io_debuggers.yaml", to_yaml(&Debugger::crd())),
        ("kubecombo.io_pingers.yaml", to_yaml(&Pinger::crd())),
        (
            "kubecombo.io_debuggerreports.yaml",
            to_yaml(&DebuggerReport::crd()),
        ),
    ]
}

/// All CRDs as one multi-document YAML stream.
pub fn all_yaml() -> String {
    crds()
        .into_iter()
        .map(|(_, y)| y)
        .collect::<Vec<_>>()
        .join("---\n")
}

/// Writes every CRD into `dir`, one file each.
pub fn write(dir: &std::path::Path) -> std::io::Result<()> {
    for (file, yaml) in crds() {
        std::fs::write(dir.join(file), yaml)?;
    }
    Ok(())
}

fn to_yaml<T: serde::Serialize>(crd: &T) -> String {
    let mut value = serde_json::to_value(crd).expect("a CRD always serialises");
    drop_empty_string_defaults(&mut value);
    serde_yaml::to_string(&value).expect("a CRD always serialises")
}

/// Removes `default: ""` from every schema node. Kubernetes 1.20 rejects an
/// empty-string default as null; leaving it out means the same thing to our
/// types, whose serde default for those fields is the empty string.
fn drop_empty_string_defaults(node: &mut serde_json::Value) {
    match node {
        serde_json::Value::Object(map) => {
            if map.get("default").is_some_and(|d| d.as_str() == Some("")) {
                map.remove("default");
            }
            map.values_mut().for_each(drop_empty_string_defaults);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(drop_empty_string_defaults),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn committed(file: &str) -> String {
        read(&format!("config/crd/{file}"))
    }

    fn read(rel: &str) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(rel);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    #[test]
    fn committed_crds_match_the_rust_types() {
        for (file, yaml) in crds() {
            assert_eq!(
                committed(file),
                yaml,
                "config/crd/{file} is stale: run `cargo run -p combo-operator -- crd --out config/crd`"
            );
        }
    }

    #[test]
    fn helm_chart_and_all_in_one_manifest_carry_the_same_crds() {
        let bundle = read("deploy/kube-combo.yaml");
        for (file, yaml) in crds() {
            assert_eq!(
                read(&format!("deploy/helm/kube-combo/crds/{file}")),
                yaml,
                "deploy/helm is stale: run deploy/render.sh"
            );
            let name = yaml.lines().find(|l| l.starts_with("  name: ")).unwrap();
            assert!(
                bundle.contains(name),
                "deploy/kube-combo.yaml lacks {name}: run deploy/render.sh"
            );
        }
    }

    #[test]
    fn crd_schemas_are_structural_for_kubernetes_1_20() {
        for (file, yaml) in crds() {
            assert!(!yaml.contains("x-kubernetes-validations"), "{file}: CEL");
            assert!(!yaml.contains("$ref"), "{file}: $ref");
            assert!(
                !yaml.contains("patternProperties"),
                "{file}: patternProperties"
            );
            assert!(!yaml.contains("anyOf: []"), "{file}");
            assert!(
                !yaml.contains("default: ''"),
                "{file}: 1.20 rejects empty defaults"
            );
            let doc: serde_json::Value = serde_yaml::from_str(&yaml).unwrap();
            let schema = &doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
            let mut untyped = Vec::new();
            untyped_nodes(schema, "", &mut untyped);
            assert!(
                untyped.is_empty(),
                "{file}: schema nodes that are not structural {untyped:?}"
            );
        }
    }

    #[test]
    fn kubectl_explain_opens_with_each_kinds_own_description() {
        for (file, yaml) in crds() {
            let doc: serde_json::Value = serde_yaml::from_str(&yaml).unwrap();
            let kind = doc["spec"]["names"]["kind"].as_str().unwrap();
            let top = doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["description"]
                .as_str()
                .unwrap_or_default();
            assert!(
                top.starts_with(&format!("A {kind} ")) && !top.contains("Auto-generated"),
                "{file}: the top-level description is {top:?}: give the kind a #[kube(doc = ...)]"
            );
        }
    }

    #[test]
    fn check_settings_name_every_setting_with_the_pattern_of_its_kind() {
        let doc: serde_json::Value = serde_yaml::from_str(&to_yaml(&Debugger::crd())).unwrap();
        let node = &doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
            ["properties"]["checkSettings"];
        assert_eq!(node["type"], "object");
        // The API server refuses additionalProperties next to properties
        // and patternProperties anywhere: other names are unknown fields.
        assert!(node.get("additionalProperties").is_none(), "{node}");
        assert!(node.get("patternProperties").is_none(), "{node}");
        let props = node["properties"].as_object().unwrap();
        assert_eq!(props.len(), combo_api::settings::SETTINGS.len());
        for s in combo_api::settings::SETTINGS {
            let p = &props[s.name];
            assert_eq!(p["type"], "string", "{}", s.name);
            assert_eq!(p["pattern"], s.kind.pattern(), "{}", s.name);
        }
        for reserved in ["HOST_ROOT", "NODE_NAME", "PATH"] {
            assert!(!props.contains_key(reserved), "{reserved}");
        }
    }

    /// Paths of schema nodes that are not structural: without a `type`
    /// (structural schemas need one everywhere except under
    /// `x-kubernetes-int-or-string` or `x-kubernetes-preserve-unknown-fields`),
    /// or with both `properties` and `additionalProperties`.
    fn untyped_nodes(node: &serde_json::Value, path: &str, out: &mut Vec<String>) {
        let Some(obj) = node.as_object() else { return };
        let exempt = obj.get("x-kubernetes-int-or-string").is_some()
            || obj.get("x-kubernetes-preserve-unknown-fields").is_some();
        if obj.get("type").is_none() && !exempt {
            out.push(path.to_string());
        }
        // 1.20 refuses both: "additionalProperties and properties are mutual exclusive".
        if obj.contains_key("properties")
            && obj.get("additionalProperties").is_some_and(|a| a != true)
        {
            out.push(format!("{path} (properties and additionalProperties)"));
        }
        if let Some(props) = obj.get("properties").and_then(|p| p.as_object()) {
            for (k, v) in props {
                untyped_nodes(v, &format!("{path}.{k}"), out);
            }
        }
        if let Some(items) = obj.get("items") {
            untyped_nodes(items, &format!("{path}[]"), out);
        }
        if let Some(extra) = obj.get("additionalProperties") {
            if extra.is_object() {
                untyped_nodes(extra, &format!("{path}{{}}"), out);
            }
        }
    }
}
