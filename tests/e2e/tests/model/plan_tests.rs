//! The model on its own (docs/testing.md, "Model-based test"): the
//! reasons it expects and the patches it writes.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Value};

use super::*;

fn debugger(spec: Spec) -> Action {
    Action::CreateDebugger {
        name: "d1".into(),
        spec,
    }
}

fn plain() -> Spec {
    Spec {
        workload: Workload::DaemonSet,
        nodes: Nodes::One(1),
        scripts: Ref::Off,
        pinger: Ref::Off,
        categories: Categories::Default,
        summary: None,
    }
}

#[test]
fn collisions_with_the_users_configmaps_are_invalid_specs() {
    let mut m = Model::default();
    let data = BTreeMap::from([("note".to_string(), "x".to_string())]);
    m.apply(&Action::CreateConfigMap {
        name: "d1-summary".into(),
        data,
    });
    m.apply(&debugger(plain()));
    assert_eq!(m.expected("d1"), BTreeSet::from([INVALID_SPEC]));
    // Deleted by the user: the operator may not have looked again.
    m.apply(&Action::DeleteConfigMap {
        name: "d1-summary".into(),
    });
    assert!(m.expected("d1").contains(INVALID_SPEC));
    assert!(m.expected("d1").contains(WORKLOAD_READY));
    m.apply(&Action::EditDebugger {
        name: "d1".into(),
        change: Change::Nodes(Nodes::None),
    });
    assert_eq!(m.expected("d1"), BTreeSet::from([NO_NODES_SELECTED]));

    let mut own = Model::default();
    own.apply(&debugger(Spec {
        scripts: Ref::Named("s".into()),
        summary: Some("s".into()),
        ..plain()
    }));
    assert_eq!(own.expected("d1"), BTreeSet::from([INVALID_SPEC]));
}

#[test]
fn missing_objects_give_any_of_their_reasons() {
    let mut m = Model::default();
    m.apply(&debugger(Spec {
        scripts: Ref::Named("s".into()),
        pinger: Ref::Named("p".into()),
        ..plain()
    }));
    assert_eq!(
        m.expected("d1"),
        BTreeSet::from([PINGER_NOT_FOUND, CONFIG_MAP_NOT_FOUND])
    );
    m.apply(&Action::CreatePinger {
        name: "p".into(),
        bad_dns: Some("10.1.2.3".into()),
    });
    assert_eq!(m.expected("d1"), BTreeSet::from([CONFIG_MAP_NOT_FOUND]));
    assert!(!m.runs("d1"));
}

#[test]
fn a_pinger_with_an_invalid_target_leaves_its_debugger_running_but_not_ready() {
    let mut m = Model::default();
    m.apply(&Action::CreatePinger {
        name: "p".into(),
        bad_dns: Some("10.1.2.3".into()),
    });
    m.apply(&debugger(Spec {
        pinger: Ref::Named("p".into()),
        ..plain()
    }));
    assert_eq!(m.expected("d1"), BTreeSet::from([PINGER_NOT_READY]));
    assert!(m.runs("d1"));
    m.apply(&Action::EditPinger {
        name: "p".into(),
        bad_dns: None,
    });
    assert!(m.expected("d1").contains(WORKLOAD_READY));
    assert!(m.runs("d1"));
}

#[test]
fn a_selector_patch_replaces_the_old_selector() {
    let spec = Spec {
        nodes: Nodes::One(2),
        ..plain()
    };
    assert_eq!(
        spec.json()["selector"],
        json!({"kubernetes.io/hostname": "node-2"})
    );
    assert_eq!(
        Change::Nodes(Nodes::None).patch()["selector"]["kubernetes.io/hostname"],
        Value::Null
    );
}
