use super::*;
use crate::workload::render::tests::{images, valid};
use combo_testkit::fixtures::debugger;
use k8s_openapi::api::apps::v1::DaemonSetStatus;

/// The workload RBAC of `dbg`, as the reconcile renders it.
fn rendered(dbg: &Debugger) -> WorkloadRbac {
    render(&valid(dbg, None, &images()))
}

fn rules(r: &WorkloadRbac) -> Vec<String> {
    r.role
        .rules
        .clone()
        .unwrap()
        .into_iter()
        .map(|p| {
            format!(
                "{} [{}] {}",
                p.resources.unwrap().join(","),
                p.resource_names.unwrap_or_default().join(","),
                p.verbs.join(",")
            )
        })
        .collect()
}

#[test]
fn each_debugger_has_its_own_set_owned_by_it() {
    let d = debugger("ops", "a").build();
    let r = rendered(&d);
    assert_eq!(r, rendered(&d));
    assert_ne!(r.hash, rendered(&debugger("ops", "b").build()).hash);
    for meta in [
        &r.service_account.metadata,
        &r.role.metadata,
        &r.binding.metadata,
    ] {
        assert_eq!(meta.name.as_deref(), Some("kube-combo-workload.a"));
        let owner = &meta.owner_references.as_ref().unwrap()[0];
        assert_eq!((owner.name.as_str(), owner.controller), ("a", Some(true)));
        assert_eq!(spec_hash_of(meta), Some(r.hash.as_str()));
    }
    let subject = &r.binding.subjects.as_ref().unwrap()[0];
    assert_eq!(
        (subject.name.as_str(), subject.namespace.as_deref()),
        ("kube-combo-workload.a", Some("ops"))
    );
    assert_eq!(r.binding.role_ref.name, "kube-combo-workload.a");
}

#[test]
fn the_role_names_its_debugger_and_pinger_and_grants_nothing_on_configmaps() {
    let with = rendered(&debugger("ops", "a").pinger("p").build());
    assert_eq!(
        rules(&with),
        [
            "debuggers [a] get,list,watch",
            "pingers [p] get,list,watch",
            "pods [] get,list,watch",
            "debuggerreports [] get,create,patch",
            "events [] create,patch",
        ]
    );
    // Without a Pinger no rule on Pingers at all: a rule without names
    // would grant every one.
    let without = rendered(&debugger("ops", "a").build());
    assert_eq!(
        rules(&without),
        [
            "debuggers [a] get,list,watch",
            "pods [] get,list,watch",
            "debuggerreports [] get,create,patch",
            "events [] create,patch",
        ]
    );
    assert_ne!(with.hash, without.hash, "a Pinger change rewrites the Role");
    assert!(rules(&with).iter().all(|r| !r.contains("configmaps")));
}

fn role(ns: &str, name: &str, owned: bool) -> Arc<Role> {
    let mut r = Role::default();
    r.metadata.namespace = Some(ns.into());
    r.metadata.name = Some(name.into());
    if owned {
        r.metadata.owner_references = debugger(ns, "x")
            .build()
            .controller_owner_ref(&())
            .map(|o| vec![o]);
    }
    Arc::new(r)
}

fn daemonset(
    ns: &str,
    generation: i64,
    observed: i64,
    updated: i32,
    desired: i32,
) -> Arc<DaemonSet> {
    let mut d = DaemonSet::default();
    d.metadata.namespace = Some(ns.into());
    d.metadata.generation = Some(generation);
    d.status = Some(DaemonSetStatus {
        observed_generation: Some(observed),
        updated_number_scheduled: Some(updated),
        desired_number_scheduled: desired,
        ..DaemonSetStatus::default()
    });
    Arc::new(d)
}

#[test]
fn the_shared_set_of_a_namespace_goes_once_no_pod_can_use_it() {
    let legacy = role("ops", "kube-combo-workload", false);
    let roles = vec![
        legacy.clone(),
        role("ops", "kube-combo-workload.a", true),
        role("dev", "kube-combo-workload", false),
    ];
    assert_eq!(legacy_namespaces(&roles), ["ops", "dev"]);
    assert!(
        legacy_namespaces(&[role("ops", "kube-combo-workload", true)]).is_empty(),
        "a Role of that name with an owner is not the shared one"
    );
    let a = Arc::new(debugger("ops", "a").build());
    let b = Arc::new(debugger("ops", "b").build());
    let only_a = vec![a.clone()];
    let done = vec![daemonset("ops", 2, 2, 3, 3)];
    assert!(legacy_unused("ops", &only_a, &roles, &done));
    assert!(
        !legacy_unused("ops", &[a, b], &roles, &done),
        "b has no Role of its own yet"
    );
    assert!(
        !legacy_unused("ops", &only_a, &roles, &[daemonset("ops", 2, 2, 1, 3)]),
        "two old pods left"
    );
    assert!(
        !legacy_unused("ops", &only_a, &roles, &[daemonset("ops", 3, 2, 3, 3)]),
        "the new template is not seen yet"
    );
    assert!(
        legacy_unused("ops", &only_a, &roles, &[daemonset("dev", 3, 2, 0, 3)]),
        "another namespace's DaemonSet does not count"
    );
}
