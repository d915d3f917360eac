use super::*;
use combo_api::Pinger;
use combo_testkit::fixtures::{debugger, pinger};
use k8s_openapi::api::core::v1::Container;

/// The operator's images: runner and pinger tagged v1, no pull secret.
pub(crate) fn images() -> Images {
    Images {
        runner: "reg/combo-runner:v1".into(),
        pinger: "reg/combo-pinger:v1".into(),
        pull_secrets: Vec::new(),
    }
}

/// What validation makes of `dbg` with `pinger` and the operator's
/// `images`.
pub(crate) fn valid(dbg: &Debugger, pinger: Option<&Pinger>, images: &Images) -> Valid {
    let run_at = combo_api::RunAt::parse(&dbg.spec.run_at).expect("a valid runAt");
    Valid::of(dbg, run_at, pinger, images)
}

/// `dbg`'s workload as the reconcile renders it.
pub(crate) fn rendered(
    dbg: &Debugger,
    pinger: Option<&Pinger>,
    images: &Images,
    account_uid: Option<&str>,
) -> Workload {
    workload(dbg, &valid(dbg, pinger, images), account_uid)
}

/// `dbg`'s pod spec as the reconcile renders it.
pub(crate) fn rendered_pod_spec(
    dbg: &Debugger,
    pinger: Option<&Pinger>,
    images: &Images,
) -> PodSpec {
    pod_spec(dbg, &valid(dbg, pinger, images).images)
}

/// `dbg`'s workload with no Pinger, the operator's images and no
/// ServiceAccount uid.
pub(super) fn rendered_alone(dbg: &Debugger) -> Workload {
    rendered(dbg, None, &images(), None)
}

/// The pod spec of `dbg`'s DaemonSet, with Pinger `mesh` of `ops`.
pub(super) fn daemonset_pod_with_mesh(dbg: &Debugger) -> PodSpec {
    let mesh = pinger("ops", "mesh").build();
    let w = rendered(dbg, Some(&mesh), &images(), None);
    ds(w).spec.unwrap().template.spec.unwrap()
}

/// The DaemonSet `w` is; panics on a Pod.
pub(super) fn ds(w: Workload) -> DaemonSet {
    match w {
        Workload::DaemonSet(d) => *d,
        Workload::Pod(_) => panic!("expected a DaemonSet"),
    }
}

/// The Pod `w` is; panics on a DaemonSet.
fn pod(w: Workload) -> Pod {
    match w {
        Workload::Pod(p) => *p,
        Workload::DaemonSet(_) => panic!("expected a Pod"),
    }
}

pub(crate) fn env_of(c: &Container) -> BTreeMap<String, String> {
    c.env
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|e| {
            let v = e
                .value
                .or_else(|| Some(format!("field:{}", e.value_from?.field_ref?.field_path)))
                .unwrap_or_default();
            (e.name, v)
        })
        .collect()
}

#[test]
fn default_spec_renders_a_daemonset_named_after_the_debugger() {
    let d = ds(rendered_alone(&debugger("ops", "node-check").build()));
    assert_eq!(d.metadata.name.as_deref(), Some("node-check"));
    assert_eq!(d.metadata.namespace.as_deref(), Some("ops"));
    let owner = &d.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.controller),
        ("Debugger", Some(true))
    );
    let spec = d.spec.unwrap();
    assert_eq!(
        spec.selector.match_labels,
        Some(keys::workload_labels("node-check"))
    );
    let tpl_labels = spec.template.metadata.unwrap().labels.unwrap();
    assert_eq!(tpl_labels[keys::LABEL_DEBUGGER], "node-check");
    assert_eq!(tpl_labels[keys::LABEL_NAME], "kube-combo");
    let ru = spec.update_strategy.unwrap().rolling_update.unwrap();
    assert_eq!(ru.max_unavailable, Some(IntOrString::String("100%".into())));
    let pod = spec.template.spec.unwrap();
    assert_eq!(pod.restart_policy.as_deref(), Some("Always"));
    assert_eq!(
        pod.service_account_name.as_deref(),
        Some("kube-combo-workload.node-check")
    );
    assert_eq!(pod.containers.len(), 1);
    assert_eq!(pod.containers[0].name, "runner");
    assert_eq!(
        pod.containers[0].image.as_deref(),
        Some("reg/combo-runner:v1")
    );
    assert!(pod.containers[0].command.is_none() && pod.containers[0].args.is_none());
    assert!(pod.host_network.is_none() && pod.host_pid.is_none());
    // One volume: the scripts' state, an emptyDir with a size bound.
    let volumes = pod.volumes.clone().unwrap();
    assert_eq!(volumes.len(), 1, "{volumes:?}");
    let state = volumes[0].empty_dir.as_ref().expect("an emptyDir");
    assert_eq!(
        state.size_limit.as_ref().map(|q| q.0.as_str()),
        Some("16Mi")
    );
    let mounts = pod.containers[0].volume_mounts.clone().unwrap();
    assert_eq!(mounts[0].mount_path, "/var/lib/combo-runner/state");
    assert_eq!(mounts[0].read_only, None, "the runner writes it");
}

#[test]
fn pod_workload_runs_once_on_the_named_node() {
    let p = pod(rendered_alone(
        &debugger("ops", "node-check")
            .workload_type(WorkloadType::Pod)
            .node_name("node-2")
            .build(),
    ));
    assert_eq!(p.metadata.name.as_deref(), Some("node-check"));
    assert_eq!(
        p.metadata.labels.as_ref().unwrap()[keys::LABEL_INSTANCE],
        "node-check"
    );
    let spec = p.spec.unwrap();
    assert_eq!(spec.restart_policy.as_deref(), Some("Never"));
    // Through the scheduler: a pod bound to a node that does not exist
    // could not be deleted without force.
    assert_eq!(spec.node_name, None);
    let terms = spec
        .affinity
        .and_then(|a| a.node_affinity)
        .and_then(|n| n.required_during_scheduling_ignored_during_execution)
        .map(|r| r.node_selector_terms)
        .unwrap();
    assert_eq!(
        serde_json::to_value(&terms).unwrap(),
        serde_json::json!([{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["node-2"]}
        ]}])
    );
}

#[test]
fn runner_env_comes_from_the_downward_api_and_the_spec() {
    let d = ds(rendered_alone(&debugger("ops", "node-check").build()));
    let env = env_of(&d.spec.unwrap().template.spec.unwrap().containers[0]);
    assert_eq!(env["POD_NAME"], "field:metadata.name");
    assert_eq!(env["POD_NAMESPACE"], "field:metadata.namespace");
    assert_eq!(env["NODE_NAME"], "field:spec.nodeName");
    assert_eq!(env["POD_IP"], "field:status.podIP");
    assert_eq!(env["POD_IPS"], "field:status.podIPs");
    assert_eq!(env["DEBUGGER_NAME"], "node-check");
    assert_eq!(env["HOST_ROOT"], "/");
    assert!(!env.contains_key("PINGER_NAME"));
}

#[test]
fn enable_pinger_adds_a_net_raw_only_pinger_container_with_its_image() {
    let dbg = debugger("ops", "node-check").pinger("mesh");
    let render = |p: &Pinger| {
        ds(rendered(&dbg.clone().build(), Some(p), &images(), None))
            .spec
            .unwrap()
            .template
            .spec
            .unwrap()
    };
    let pod = render(&pinger("ops", "mesh").build());
    assert_eq!(pod.containers.len(), 2);
    let c = &pod.containers[1];
    assert_eq!(c.name, "pinger");
    assert_eq!(c.image.as_deref(), Some("reg/combo-pinger:v1"));
    // In the pod's own network namespace: non-root, no capability, and
    // the pod's ping_group_range covers its group.
    let sc = c.security_context.clone().unwrap();
    assert_eq!(
        (sc.run_as_non_root, sc.run_as_user, sc.run_as_group),
        (Some(true), Some(65532), Some(65532))
    );
    let caps = sc.capabilities.unwrap();
    assert_eq!(caps.add, None);
    assert_eq!(caps.drop, Some(vec!["ALL".to_string()]));
    let sysctls = pod.security_context.clone().unwrap().sysctls.unwrap();
    assert_eq!(
        (sysctls[0].name.as_str(), sysctls[0].value.as_str()),
        ("net.ipv4.ping_group_range", "65532 65532")
    );
    // With hostNetwork no pod sysctl may be set: root with NET_RAW only.
    let host = daemonset_pod_with_mesh(&dbg.clone().host_network(true).build());
    assert!(host.security_context.is_none());
    let sc = host.containers[1].security_context.clone().unwrap();
    assert_eq!((sc.run_as_non_root, sc.run_as_user), (None, None));
    let caps = sc.capabilities.unwrap();
    assert_eq!(caps.add, Some(vec!["NET_RAW".to_string()]));
    assert_eq!(caps.drop, Some(vec!["ALL".to_string()]));
    assert_eq!(env_of(c)["PINGER_NAME"], "mesh");
    assert_eq!(env_of(&pod.containers[0])["PINGER_NAME"], "mesh");
    let custom = render(&pinger("ops", "mesh").image("my/pinger:2").build());
    assert_eq!(custom.containers[1].image.as_deref(), Some("my/pinger:2"));
}

#[test]
fn pinger_targets_do_not_change_the_rendered_workload() {
    let dbg = debugger("ops", "node-check").pinger("mesh").build();
    let a = pinger("ops", "mesh").build();
    let b = pinger("ops", "mesh")
        .ping(&["10.0.0.1"])
        .interval_seconds(60)
        .metrics_port(9999)
        .build();
    let wa = rendered(&dbg, Some(&a), &images(), None);
    let wb = rendered(&dbg, Some(&b), &images(), None);
    assert_eq!(wa, wb);
    let c = pinger("ops", "mesh").image("other:1").build();
    assert_ne!(wa.hash(), rendered(&dbg, Some(&c), &images(), None).hash());
}

#[test]
fn run_at_and_script_settings_do_not_change_the_hash() {
    let a = debugger("ops", "node-check").build();
    let b = debugger("ops", "node-check")
        .run_at("@hourly")
        .script_timeout_seconds(5)
        .errlog_retention(3)
        .build();
    assert_eq!(rendered_alone(&a).hash(), rendered_alone(&b).hash());
}

#[test]
fn a_new_service_account_changes_the_pod_template_of_both_types() {
    let d = debugger("ops", "node-check").build();
    let before = rendered(&d, None, &images(), Some("sa-1"));
    let after = rendered(&d, None, &images(), Some("sa-2"));
    assert_ne!(before.hash(), after.hash(), "the pods are replaced");
    let tpl = ds(after).spec.unwrap().template;
    assert_eq!(
        tpl.metadata.unwrap().annotations.unwrap()[keys::ANNOTATION_ACCOUNT_UID],
        "sa-2"
    );
    let p = debugger("ops", "node-check")
        .workload_type(WorkloadType::Pod)
        .node_name("node-2")
        .build();
    let one = pod(rendered(&p, None, &images(), Some("sa-1")));
    assert_eq!(
        one.metadata.annotations.unwrap()[keys::ANNOTATION_ACCOUNT_UID],
        "sa-1"
    );
    assert_ne!(
        rendered(&p, None, &images(), Some("sa-1")).hash(),
        rendered(&p, None, &images(), Some("sa-2")).hash()
    );
}

#[test]
fn spec_hash_changes_with_the_rendered_spec_and_only_with_it() {
    let a = rendered_alone(&debugger("ops", "node-check").build());
    let b = rendered_alone(&debugger("ops", "node-check").build());
    assert_eq!(a.hash(), b.hash());
    assert_eq!(a.hash().map(str::len), Some(16));
    let c = rendered_alone(&debugger("ops", "node-check").cpu("200m").build());
    assert_ne!(a.hash(), c.hash());
}

fn pull_secret_names(w: Workload) -> Option<Vec<String>> {
    let spec = match w {
        Workload::DaemonSet(d) => d.spec.and_then(|s| s.template.spec),
        Workload::Pod(p) => p.spec,
    };
    spec.and_then(|s| s.image_pull_secrets)
        .map(|l| l.into_iter().map(|r| r.name).collect())
}

fn images_pulled_with(names: &[&str]) -> Images {
    Images {
        pull_secrets: names.iter().map(|n| n.to_string()).collect(),
        ..images()
    }
}

#[test]
fn without_pull_secrets_anywhere_the_pods_have_none() {
    let w = rendered_alone(&debugger("ops", "node-check").build());
    assert_eq!(pull_secret_names(w), None);
}

#[test]
fn the_operators_pull_secrets_are_the_default_of_both_workload_types() {
    let flag = images_pulled_with(&["regcred", "mirror"]);
    let ds = rendered(&debugger("ops", "node-check").build(), None, &flag, None);
    assert_eq!(
        pull_secret_names(ds),
        Some(vec!["regcred".to_string(), "mirror".to_string()])
    );
    let single = debugger("ops", "node-check")
        .workload_type(WorkloadType::Pod)
        .build();
    let pod = rendered(&single, None, &flag, None);
    assert_eq!(
        pull_secret_names(pod),
        Some(vec!["regcred".to_string(), "mirror".to_string()])
    );
}

#[test]
fn the_debuggers_pull_secrets_win_over_the_operators() {
    let flag = images_pulled_with(&["regcred"]);
    let own = debugger("ops", "node-check")
        .image_pull_secrets(&["team-registry"])
        .build();
    let w = rendered(&own, None, &flag, None);
    assert_eq!(
        pull_secret_names(w),
        Some(vec!["team-registry".to_string()])
    );
    // Only the Debugger's own list counts: the flag's is not added to it.
    let both = rendered_alone(&own);
    assert_eq!(
        rendered(&own, None, &flag, None).hash(),
        both.hash(),
        "the flag does not change a Debugger that lists its own"
    );
}

#[test]
fn a_new_pull_secret_changes_the_pod_template() {
    let a = rendered_alone(&debugger("ops", "node-check").build());
    let b = rendered_alone(
        &debugger("ops", "node-check")
            .image_pull_secrets(&["regcred"])
            .build(),
    );
    assert_ne!(a.hash(), b.hash());
}
