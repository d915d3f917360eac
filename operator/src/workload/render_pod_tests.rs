//! The pod spec rendered from a Debugger's settings: resources, kube-ovn
//! annotations, scheduling, host network, privileges and mounts, the
//! runner's image.

use super::tests::{
    daemonset_pod_with_mesh, ds, env_of, images, rendered_alone, rendered_pod_spec,
};
use super::*;
use combo_testkit::fixtures::{debugger, pinger, DebuggerBuilder};

#[test]
fn cpu_and_memory_are_request_equals_limit_on_every_container() {
    let d = debugger("ops", "node-check")
        .cpu("250m")
        .memory("64Mi")
        .pinger("mesh")
        .build();
    let pod = daemonset_pod_with_mesh(&d);
    for c in &pod.containers {
        let r = c.resources.clone().unwrap();
        assert_eq!(r.requests, r.limits);
        let req = r.requests.unwrap();
        assert_eq!(req["cpu"].0, "250m");
        assert_eq!(req["memory"].0, "64Mi");
    }
}

#[test]
fn qos_bandwidth_and_subnet_become_kube_ovn_annotations() {
    let d = debugger("ops", "node-check")
        .qos_bandwidth("100")
        .subnet("ovn-default")
        .build();
    let tpl = ds(rendered_alone(&d)).spec.unwrap().template;
    let a = tpl.metadata.unwrap().annotations.unwrap();
    assert_eq!(a[keys::ANNOTATION_INGRESS_RATE], "100");
    assert_eq!(a[keys::ANNOTATION_EGRESS_RATE], "100");
    assert_eq!(a[keys::ANNOTATION_LOGICAL_SWITCH], "ovn-default");
    let bare = ds(rendered_alone(&debugger("ops", "node-check").build()));
    assert!(bare
        .spec
        .unwrap()
        .template
        .metadata
        .unwrap()
        .annotations
        .is_none());
}

#[test]
fn scheduling_fields_reach_the_pod_spec_of_both_types() {
    let tol: k8s_openapi::api::core::v1::Toleration =
        serde_json::from_value(serde_json::json!({"operator": "Exists"})).unwrap();
    let aff: k8s_openapi::api::core::v1::Affinity = serde_json::from_value(serde_json::json!({
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}
    }))
    .unwrap();
    for wt in [WorkloadType::Daemonset, WorkloadType::Pod] {
        let d = debugger("ops", "node-check")
            .workload_type(wt)
            .selector("kubernetes.io/os", "linux")
            .tolerations(vec![tol.clone()])
            .affinity(aff.clone())
            .spec_with(|s| s.priority_class_name = "system-node-critical".into())
            .build();
        let spec = rendered_pod_spec(&d, None, &images());
        assert_eq!(spec.node_selector.unwrap()["kubernetes.io/os"], "linux");
        assert_eq!(spec.tolerations, Some(vec![tol.clone()]));
        assert_eq!(spec.affinity, Some(aff.clone()));
        assert_eq!(
            spec.priority_class_name.as_deref(),
            Some("system-node-critical")
        );
    }
    let plain = rendered_pod_spec(&debugger("ops", "node-check").build(), None, &images());
    assert_eq!(
        plain.priority_class_name, None,
        "no field: no priority class"
    );
}

#[test]
fn a_pod_debuggers_node_is_required_in_every_term_of_its_own_affinity() {
    let aff: k8s_openapi::api::core::v1::Affinity = serde_json::from_value(serde_json::json!({
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
            {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["node-9"]}]}]}},
        "podAntiAffinity": {}
    }))
    .unwrap();
    let d = debugger("ops", "node-check")
        .workload_type(WorkloadType::Pod)
        .node_name("node-2")
        .affinity(aff)
        .build();
    let spec = rendered_pod_spec(&d, None, &images());
    assert_eq!(spec.node_name, None);
    let pin = serde_json::json!({"key": "metadata.name", "operator": "In", "values": ["node-2"]});
    assert_eq!(
        serde_json::to_value(spec.affinity.unwrap()).unwrap(),
        serde_json::json!({
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}],
                 "matchFields": [pin]},
                {"matchFields": [
                    {"key": "metadata.name", "operator": "NotIn", "values": ["node-9"]}, pin]}]}},
            "podAntiAffinity": {}
        })
    );
}

#[test]
fn host_network_uses_cluster_first_with_host_net_dns() {
    let d = debugger("ops", "node-check").host_network(true).build();
    let spec = rendered_pod_spec(&d, None, &images());
    assert_eq!(spec.host_network, Some(true));
    assert_eq!(spec.dns_policy.as_deref(), Some("ClusterFirstWithHostNet"));
}

#[test]
fn enable_sys_makes_only_the_runner_privileged_with_the_host_root_read_only() {
    let d = debugger("ops", "node-check")
        .enable_sys(true)
        .pinger("mesh")
        .build();
    let spec = rendered_pod_spec(&d, Some(&pinger("ops", "mesh").build()), &images());
    assert_eq!(spec.host_pid, Some(true));
    let runner = &spec.containers[0];
    assert_eq!(
        runner.security_context.as_ref().unwrap().privileged,
        Some(true)
    );
    let mount = runner
        .volume_mounts
        .iter()
        .flatten()
        .find(|m| m.mount_path == "/host")
        .expect("the host root is mounted");
    assert_eq!(mount.read_only, Some(true));
    assert_eq!(env_of(runner)["HOST_ROOT"], "/host");
    let vol = spec
        .volumes
        .iter()
        .flatten()
        .find(|v| v.name == mount.name)
        .unwrap();
    assert_eq!(vol.host_path.as_ref().unwrap().path, "/");
    let pinger = &spec.containers[1];
    assert_eq!(
        pinger.security_context.as_ref().unwrap().privileged,
        Some(false)
    );
    assert!(pinger.volume_mounts.is_none());
}

#[test]
fn the_host_root_follows_mounts_the_node_makes_after_the_pod_started() {
    let d = debugger("ops", "node-check").enable_sys(true).build();
    let spec = rendered_pod_spec(&d, None, &images());
    let host = spec.containers[0]
        .volume_mounts
        .iter()
        .flatten()
        .find(|m| m.mount_path == "/host")
        .expect("the host root is mounted");
    assert_eq!(host.mount_propagation.as_deref(), Some("HostToContainer"));
    assert_eq!(host.read_only, Some(true));
}

#[test]
fn without_enable_sys_the_runner_of_the_operators_image_is_non_root_without_capabilities() {
    let runner_sc = |d: DebuggerBuilder| {
        rendered_pod_spec(&d.build(), None, &images()).containers[0]
            .security_context
            .clone()
            .unwrap()
    };
    let sc = runner_sc(debugger("ops", "node-check"));
    assert_eq!(
        (
            sc.privileged,
            sc.allow_privilege_escalation,
            sc.run_as_non_root,
            sc.run_as_user,
            sc.run_as_group
        ),
        (
            Some(false),
            Some(false),
            Some(true),
            Some(65532),
            Some(65532)
        )
    );
    let caps = sc.capabilities.unwrap();
    assert_eq!(caps.add, None);
    assert_eq!(caps.drop, Some(vec!["ALL".to_string()]));
    // An image of the Debugger's own may not let that user write its
    // errlogs: root, unprivileged.
    let own = runner_sc(debugger("ops", "node-check").image("my/runner:1"));
    assert_eq!(
        (
            own.privileged,
            own.allow_privilege_escalation,
            own.run_as_user,
            own.run_as_non_root
        ),
        (Some(false), Some(false), None, None)
    );
    // enableSys: root and privileged, whatever the image.
    let sys = runner_sc(debugger("ops", "node-check").enable_sys(true));
    assert_eq!((sys.privileged, sys.run_as_user), (Some(true), None));
}

#[test]
fn enable_config_map_mounts_the_scripts_executable_and_read_only() {
    let d = debugger("ops", "node-check")
        .config_map("my-scripts")
        .build();
    let spec = rendered_pod_spec(&d, None, &images());
    let vol = &spec.volumes.unwrap()[1];
    let cm = vol.config_map.as_ref().unwrap();
    assert_eq!(
        (cm.name.as_str(), cm.default_mode),
        ("my-scripts", Some(0o755))
    );
    let mount = &spec.containers[0].volume_mounts.as_ref().unwrap()[1];
    assert_eq!(
        (mount.mount_path.as_str(), mount.read_only),
        ("/scripts/custom", Some(true))
    );
}

#[test]
fn spec_image_overrides_the_runner_image_flag() {
    let d = debugger("ops", "node-check").image("mine/runner:7").build();
    assert_eq!(
        rendered_pod_spec(&d, None, &images()).containers[0]
            .image
            .as_deref(),
        Some("mine/runner:7")
    );
}
