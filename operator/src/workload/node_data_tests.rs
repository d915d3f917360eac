use super::*;
use crate::workload::render::tests::{env_of, images, rendered_pod_spec};
use combo_testkit::fixtures::{debugger, DebuggerBuilder};
use k8s_openapi::api::core::v1::PodSpec;

/// Debugger `node-check` of `ops`, uid `uid-1`, with `enableSys`.
fn sys() -> DebuggerBuilder {
    debugger("ops", "node-check").uid("uid-1").enable_sys(true)
}

/// The pod spec rendered from `dbg`, with no Pinger.
fn rendered(dbg: &Debugger) -> PodSpec {
    rendered_pod_spec(dbg, None, &images())
}

/// (mount path, subPath) of the runner's mounts of `volume`.
fn mounts_of(spec: &PodSpec, volume: &str) -> Vec<(String, Option<String>)> {
    spec.containers[0]
        .volume_mounts
        .iter()
        .flatten()
        .filter(|m| m.name == volume)
        .map(|m| (m.mount_path.clone(), m.sub_path.clone()))
        .collect()
}

#[test]
fn with_enable_sys_state_and_errlogs_live_in_the_debuggers_directory_on_the_node() {
    let spec = rendered(&sys().build());
    let vol = spec
        .volumes
        .iter()
        .flatten()
        .find(|v| v.name == VOLUME_NODE_DATA)
        .expect("the node directory is a volume");
    let hp = vol.host_path.as_ref().unwrap();
    assert_eq!(hp.path, "/var/lib/kube-combo/ops/node-check");
    assert_eq!(hp.type_.as_deref(), Some("DirectoryOrCreate"));
    assert!(
        spec.volumes.iter().flatten().all(|v| v.empty_dir.is_none()),
        "no emptyDir for the state"
    );
    let m = |p: &str, s: Option<&str>| (p.to_string(), s.map(str::to_string));
    assert_eq!(
        mounts_of(&spec, VOLUME_NODE_DATA),
        vec![
            m("/var/lib/combo-runner/node", None),
            m("/var/lib/combo-runner/state", Some("uid-1/state")),
            m("/scripts/errlog", Some("uid-1/errlog")),
            m("/scripts/disk/errlog", Some("uid-1/errlog/disk")),
            m("/scripts/net/errlog", Some("uid-1/errlog/net")),
            m("/scripts/mem/errlog", Some("uid-1/errlog/mem")),
            m("/scripts/svc/errlog", Some("uid-1/errlog/svc")),
            m("/scripts/custom/errlog", Some("uid-1/errlog/custom")),
        ]
    );
    // The runner's state root (its default) is the mount of <uid>/state.
    assert_eq!(
        crate::workload::mounts::STATE_MOUNT,
        "/var/lib/combo-runner/state"
    );
    let env = env_of(&spec.containers[0]);
    assert_eq!(env["COMBO_NODE_DATA"], "/var/lib/combo-runner/node");
    assert_eq!(env["DEBUGGER_UID"], "uid-1");
}

#[test]
fn a_scripts_config_map_keeps_custom_errlogs_in_the_fallback_on_the_node() {
    let spec = rendered(&sys().config_map("mine").build());
    let paths: Vec<String> = mounts_of(&spec, VOLUME_NODE_DATA)
        .into_iter()
        .map(|(p, _)| p)
        .collect();
    assert!(paths.contains(&"/scripts/errlog".to_string()));
    assert!(
        !paths.contains(&"/scripts/custom/errlog".to_string()),
        "nothing is mounted inside the read-only ConfigMap: {paths:?}"
    );
}

#[test]
fn a_debugger_created_again_under_the_same_name_gets_another_directory() {
    let again = debugger("ops", "node-check")
        .uid("uid-2")
        .enable_sys(true)
        .build();
    let spec = rendered(&again);
    assert!(mounts_of(&spec, VOLUME_NODE_DATA)
        .iter()
        .skip(1)
        .all(|(_, sub)| sub.as_deref().is_some_and(|s| s.starts_with("uid-2/"))));
    assert_eq!(env_of(&spec.containers[0])["DEBUGGER_UID"], "uid-2");
}

#[test]
fn without_enable_sys_or_a_uid_state_stays_in_the_pod() {
    let no_uid = debugger("ops", "node-check")
        .without_uid()
        .enable_sys(true)
        .build();
    for spec in [
        rendered(&debugger("ops", "node-check").build()),
        rendered(&no_uid),
    ] {
        assert!(mounts_of(&spec, VOLUME_NODE_DATA).is_empty());
        let state = spec
            .volumes
            .iter()
            .flatten()
            .find(|v| v.name == "state")
            .expect("the state emptyDir");
        assert!(state.empty_dir.is_some());
        let env = env_of(&spec.containers[0]);
        assert!(!env.contains_key("COMBO_NODE_DATA") && !env.contains_key("DEBUGGER_UID"));
    }
}
