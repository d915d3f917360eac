use super::*;
use combo_api::{DebuggerSpec, PingerSpec};
use k8s_openapi::api::core::v1::Container;

fn images() -> Images {
    Images {
        runner: "reg/combo-runner:v1".into(),
        pinger: "reg/combo-pinger:v1".into(),
    }
}

fn debugger(spec: DebuggerSpec) -> Debugger {
    let mut d = Debugger::new("node-check", spec);
    d.metadata.namespace = Some("ops".into());
    d.metadata.uid = Some("uid-1".into());
    d
}

fn pinger(image: &str) -> Pinger {
    Pinger::new(
        "mesh",
        PingerSpec {
            image: image.into(),
            ..PingerSpec::default()
        },
    )
}

fn ds(w: Workload) -> DaemonSet {
    match w {
        Workload::DaemonSet(d) => *d,
        Workload::Pod(_) => panic!("expected a DaemonSet"),
    }
}

fn pod(w: Workload) -> Pod {
    match w {
        Workload::Pod(p) => *p,
        Workload::DaemonSet(_) => panic!("expected a Pod"),
    }
}

fn env_of(c: &Container) -> BTreeMap<String, String> {
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
    let d = ds(workload(
        &debugger(DebuggerSpec::default()),
        None,
        &images(),
        None,
    ));
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
    let p = pod(workload(
        &debugger(DebuggerSpec {
            workload_type: WorkloadType::Pod,
            node_name: "node-2".into(),
            ..DebuggerSpec::default()
        }),
        None,
        &images(),
        None,
    ));
    assert_eq!(p.metadata.name.as_deref(), Some("node-check"));
    assert_eq!(
        p.metadata.labels.as_ref().unwrap()[keys::LABEL_INSTANCE],
        "node-check"
    );
    let spec = p.spec.unwrap();
    assert_eq!(spec.restart_policy.as_deref(), Some("Never"));
    assert_eq!(spec.node_name.as_deref(), Some("node-2"));
}

#[test]
fn runner_env_comes_from_the_downward_api_and_the_spec() {
    let d = ds(workload(
        &debugger(DebuggerSpec::default()),
        None,
        &images(),
        None,
    ));
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
    let spec = DebuggerSpec {
        enable_pinger: true,
        pinger: "mesh".into(),
        ..DebuggerSpec::default()
    };
    let render = |p: &Pinger| {
        ds(workload(&debugger(spec.clone()), Some(p), &images(), None))
            .spec
            .unwrap()
            .template
            .spec
            .unwrap()
    };
    let pod = render(&pinger(""));
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
    let host = ds(workload(
        &debugger(DebuggerSpec {
            host_network: true,
            ..spec.clone()
        }),
        Some(&pinger("")),
        &images(),
        None,
    ))
    .spec
    .unwrap()
    .template
    .spec
    .unwrap();
    assert!(host.security_context.is_none());
    let sc = host.containers[1].security_context.clone().unwrap();
    assert_eq!((sc.run_as_non_root, sc.run_as_user), (None, None));
    let caps = sc.capabilities.unwrap();
    assert_eq!(caps.add, Some(vec!["NET_RAW".to_string()]));
    assert_eq!(caps.drop, Some(vec!["ALL".to_string()]));
    assert_eq!(env_of(c)["PINGER_NAME"], "mesh");
    assert_eq!(env_of(&pod.containers[0])["PINGER_NAME"], "mesh");
    let custom = render(&pinger("my/pinger:2"));
    assert_eq!(custom.containers[1].image.as_deref(), Some("my/pinger:2"));
}

#[test]
fn pinger_targets_do_not_change_the_rendered_workload() {
    let dbg = debugger(DebuggerSpec {
        enable_pinger: true,
        pinger: "mesh".into(),
        ..DebuggerSpec::default()
    });
    let a = pinger("");
    let mut b = pinger("");
    b.spec.ping = vec!["10.0.0.1".into()];
    b.spec.interval_seconds = 60;
    b.spec.metrics_port = 9999;
    let wa = workload(&dbg, Some(&a), &images(), None);
    let wb = workload(&dbg, Some(&b), &images(), None);
    assert_eq!(wa, wb);
    let c = pinger("other:1");
    assert_ne!(wa.hash(), workload(&dbg, Some(&c), &images(), None).hash());
}

#[test]
fn run_at_and_script_settings_do_not_change_the_hash() {
    let a = debugger(DebuggerSpec::default());
    let b = debugger(DebuggerSpec {
        run_at: "@hourly".into(),
        script_timeout_seconds: 5,
        errlog_retention: 3,
        ..DebuggerSpec::default()
    });
    assert_eq!(
        workload(&a, None, &images(), None).hash(),
        workload(&b, None, &images(), None).hash()
    );
}

#[test]
fn cpu_and_memory_are_request_equals_limit_on_every_container() {
    let d = debugger(DebuggerSpec {
        cpu: "250m".into(),
        memory: "64Mi".into(),
        enable_pinger: true,
        pinger: "mesh".into(),
        ..DebuggerSpec::default()
    });
    let pod = ds(workload(&d, Some(&pinger("")), &images(), None))
        .spec
        .unwrap()
        .template
        .spec
        .unwrap();
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
    let d = debugger(DebuggerSpec {
        qos_bandwidth: "100".into(),
        subnet: "ovn-default".into(),
        ..DebuggerSpec::default()
    });
    let tpl = ds(workload(&d, None, &images(), None))
        .spec
        .unwrap()
        .template;
    let a = tpl.metadata.unwrap().annotations.unwrap();
    assert_eq!(a[keys::ANNOTATION_INGRESS_RATE], "100");
    assert_eq!(a[keys::ANNOTATION_EGRESS_RATE], "100");
    assert_eq!(a[keys::ANNOTATION_LOGICAL_SWITCH], "ovn-default");
    let bare = ds(workload(
        &debugger(DebuggerSpec::default()),
        None,
        &images(),
        None,
    ));
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
fn a_new_service_account_changes_the_pod_template_of_both_types() {
    let d = debugger(DebuggerSpec::default());
    let before = workload(&d, None, &images(), Some("sa-1"));
    let after = workload(&d, None, &images(), Some("sa-2"));
    assert_ne!(before.hash(), after.hash(), "the pods are replaced");
    let tpl = ds(after).spec.unwrap().template;
    assert_eq!(
        tpl.metadata.unwrap().annotations.unwrap()[keys::ANNOTATION_ACCOUNT_UID],
        "sa-2"
    );
    let p = debugger(DebuggerSpec {
        workload_type: WorkloadType::Pod,
        node_name: "node-2".into(),
        ..DebuggerSpec::default()
    });
    let one = pod(workload(&p, None, &images(), Some("sa-1")));
    assert_eq!(
        one.metadata.annotations.unwrap()[keys::ANNOTATION_ACCOUNT_UID],
        "sa-1"
    );
    assert_ne!(
        workload(&p, None, &images(), Some("sa-1")).hash(),
        workload(&p, None, &images(), Some("sa-2")).hash()
    );
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
        let d = debugger(DebuggerSpec {
            workload_type: wt,
            selector: [("kubernetes.io/os".to_string(), "linux".to_string())].into(),
            tolerations: vec![tol.clone()],
            affinity: Some(aff.clone()),
            ..DebuggerSpec::default()
        });
        let spec = pod_spec(&d, None, &images());
        assert_eq!(spec.node_selector.unwrap()["kubernetes.io/os"], "linux");
        assert_eq!(spec.tolerations, Some(vec![tol.clone()]));
        assert_eq!(spec.affinity, Some(aff.clone()));
    }
}

#[test]
fn host_network_uses_cluster_first_with_host_net_dns() {
    let d = debugger(DebuggerSpec {
        host_network: true,
        ..DebuggerSpec::default()
    });
    let spec = pod_spec(&d, None, &images());
    assert_eq!(spec.host_network, Some(true));
    assert_eq!(spec.dns_policy.as_deref(), Some("ClusterFirstWithHostNet"));
}

#[test]
fn enable_sys_makes_only_the_runner_privileged_with_the_host_root_read_only() {
    let d = debugger(DebuggerSpec {
        enable_sys: true,
        enable_pinger: true,
        pinger: "mesh".into(),
        ..DebuggerSpec::default()
    });
    let spec = pod_spec(&d, Some(&pinger("")), &images());
    assert_eq!(spec.host_pid, Some(true));
    let runner = &spec.containers[0];
    assert_eq!(
        runner.security_context.as_ref().unwrap().privileged,
        Some(true)
    );
    let mount = &runner.volume_mounts.as_ref().unwrap()[1];
    assert_eq!(
        (mount.mount_path.as_str(), mount.read_only),
        ("/host", Some(true))
    );
    assert_eq!(env_of(runner)["HOST_ROOT"], "/host");
    let vol = &spec.volumes.unwrap()[1];
    assert_eq!(vol.host_path.as_ref().unwrap().path, "/");
    let pinger = &spec.containers[1];
    assert_eq!(
        pinger.security_context.as_ref().unwrap().privileged,
        Some(false)
    );
    assert!(pinger.volume_mounts.is_none());
}

#[test]
fn without_enable_sys_the_runner_of_the_operators_image_is_non_root_without_capabilities() {
    let runner_sc = |spec: DebuggerSpec| {
        pod_spec(&debugger(spec), None, &images()).containers[0]
            .security_context
            .clone()
            .unwrap()
    };
    let sc = runner_sc(DebuggerSpec::default());
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
    let own = runner_sc(DebuggerSpec {
        image: "my/runner:1".into(),
        ..DebuggerSpec::default()
    });
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
    let sys = runner_sc(DebuggerSpec {
        enable_sys: true,
        ..DebuggerSpec::default()
    });
    assert_eq!((sys.privileged, sys.run_as_user), (Some(true), None));
}

#[test]
fn enable_config_map_mounts_the_scripts_executable_and_read_only() {
    let d = debugger(DebuggerSpec {
        enable_config_map: true,
        config_map: "my-scripts".into(),
        ..DebuggerSpec::default()
    });
    let spec = pod_spec(&d, None, &images());
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
    let d = debugger(DebuggerSpec {
        image: "mine/runner:7".into(),
        ..DebuggerSpec::default()
    });
    assert_eq!(
        pod_spec(&d, None, &images()).containers[0].image.as_deref(),
        Some("mine/runner:7")
    );
}

#[test]
fn summary_config_map_is_owned_and_its_hash_covers_the_data() {
    let data = |v: &str| BTreeMap::from([("node-1".to_string(), v.to_string())]);
    let cm = summary_config_map(&debugger(DebuggerSpec::default()), data("runAt: a\n"));
    assert_eq!(cm.metadata.name.as_deref(), Some("node-check-summary"));
    assert_eq!(cm.data.as_ref().unwrap()["node-1"], "runAt: a\n");
    assert_eq!(
        cm.metadata.owner_references.clone().unwrap()[0].controller,
        Some(true)
    );
    let other = summary_config_map(&debugger(DebuggerSpec::default()), data("runAt: b\n"));
    assert_ne!(spec_hash_of(&cm.metadata), spec_hash_of(&other.metadata));
    let named = summary_config_map(
        &debugger(DebuggerSpec {
            summary_config_map: "results".into(),
            ..DebuggerSpec::default()
        }),
        BTreeMap::new(),
    );
    assert_eq!(named.metadata.name.as_deref(), Some("results"));
}

#[test]
fn spec_hash_changes_with_the_rendered_spec_and_only_with_it() {
    let a = workload(&debugger(DebuggerSpec::default()), None, &images(), None);
    let b = workload(&debugger(DebuggerSpec::default()), None, &images(), None);
    assert_eq!(a.hash(), b.hash());
    assert_eq!(a.hash().map(str::len), Some(16));
    let c = workload(
        &debugger(DebuggerSpec {
            cpu: "200m".into(),
            ..DebuggerSpec::default()
        }),
        None,
        &images(),
        None,
    );
    assert_ne!(a.hash(), c.hash());
}
