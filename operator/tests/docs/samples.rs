//! The samples: the node sample runs alone (no Pinger to apply first), and
//! its pinger variant is the same Debugger with the pinger, together with
//! the Pinger it names.

use combo_api::{Debugger, Pinger};
use serde::Deserialize;

use crate::repo;

fn documents(file: &str) -> Vec<serde_yaml::Value> {
    let text = std::fs::read_to_string(repo().join("config/samples").join(file))
        .unwrap_or_else(|e| panic!("{file}: {e}"));
    serde_yaml::Deserializer::from_str(&text)
        .map(|d| serde_yaml::Value::deserialize(d).unwrap_or_else(|e| panic!("{file}: {e}")))
        .collect()
}

fn of_kind<T: serde::de::DeserializeOwned>(docs: &[serde_yaml::Value], kind: &str) -> Vec<T> {
    docs.iter()
        .filter(|d| d["kind"].as_str() == Some(kind))
        .map(|d| serde_yaml::from_value(d.clone()).expect("a valid object"))
        .collect()
}

#[test]
fn the_node_sample_works_alone_and_its_mesh_variant_brings_its_pinger() {
    let alone = documents("debugger_daemonset.yaml");
    let [node]: [Debugger; 1] = of_kind(&alone, "Debugger")
        .try_into()
        .expect("one Debugger");
    assert!(
        !node.spec.enable_pinger,
        "the node sample needs no Pinger applied first"
    );
    let mesh = documents("debugger_daemonset_mesh.yaml");
    let [with_pinger]: [Debugger; 1] = of_kind(&mesh, "Debugger").try_into().expect("one Debugger");
    let pingers: Vec<Pinger> = of_kind(&mesh, "Pinger");
    assert!(with_pinger.spec.enable_pinger);
    assert!(
        pingers
            .iter()
            .any(|p| p.metadata.name.as_deref() == Some(with_pinger.spec.pinger.as_str())),
        "the Pinger it names is in the same file"
    );
    let mut same = with_pinger.spec.clone();
    same.enable_pinger = false;
    same.pinger = node.spec.pinger.clone();
    assert_eq!(
        serde_json::to_value(&same).unwrap(),
        serde_json::to_value(&node.spec).unwrap(),
        "the mesh variant is the node sample plus the pinger"
    );
    assert_eq!(with_pinger.metadata.name, node.metadata.name);
    let [pinger]: [Pinger; 1] = of_kind(&documents("pinger.yaml"), "Pinger")
        .try_into()
        .expect("one Pinger");
    assert_eq!(
        serde_json::to_value(&pingers[0].spec).unwrap(),
        serde_json::to_value(&pinger.spec).unwrap(),
        "the mesh variant's Pinger is pinger.yaml's"
    );
}
