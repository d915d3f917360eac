use super::*;
use combo_testkit::fixtures::{debugger, DebuggerBuilder};

fn images() -> Images {
    Images {
        runner: "reg/combo-runner:v1".into(),
        pinger: "reg/combo-pinger:v1".into(),
        pull_secrets: Vec::new(),
    }
}

/// The value of the runner's `name` variable in the pod of the Debugger
/// `dbg` builds, and the pod's hostNetwork.
fn runner_env(dbg: DebuggerBuilder, name: &str) -> (Option<String>, Option<bool>) {
    let dbg = dbg.build();
    let pod = crate::workload::render::tests::rendered_pod_spec(&dbg, None, &images());
    let value = pod.containers[0]
        .env
        .iter()
        .flatten()
        .find(|e| e.name == name)
        .and_then(|e| e.value.clone());
    (value, pod.host_network)
}

#[test]
fn the_runner_is_told_its_pod_has_host_network() {
    let dbg = debugger("ops", "node-check").host_network(true);
    assert_eq!(
        runner_env(dbg, "COMBO_HOST_NETWORK"),
        (Some("true".into()), Some(true))
    );
}

#[test]
fn the_runner_is_told_its_pod_has_its_own_network_namespace() {
    // With enableSys too: the host's PID 1 is visible, but the pod is not in
    // its network namespace.
    for enable_sys in [false, true] {
        let dbg = debugger("ops", "node-check")
            .host_network(false)
            .enable_sys(enable_sys);
        assert_eq!(
            runner_env(dbg, ENV_HOST_NETWORK),
            (Some("false".into()), None),
            "enableSys {enable_sys}"
        );
    }
}

#[test]
fn only_the_runner_gets_the_host_network_variable() {
    let dbg = debugger("ops", "node-check")
        .host_network(true)
        .pinger("mesh")
        .build();
    let pinger = pinger_container(&dbg, &images());
    assert!(
        pinger
            .env
            .iter()
            .flatten()
            .all(|e| e.name != ENV_HOST_NETWORK),
        "{:?}",
        pinger.env
    );
}

#[test]
fn check_settings_reach_the_runner_as_environment_variables_and_not_the_pinger() {
    let dbg = debugger("ops", "node-check")
        .check_setting("DISK_USAGE_MAX_PERCENT", "85")
        .check_setting("DISK_IGNORE_MOUNTS", "/mnt/scratch*")
        .pinger("mesh");
    assert_eq!(
        runner_env(dbg.clone(), "DISK_USAGE_MAX_PERCENT")
            .0
            .as_deref(),
        Some("85")
    );
    assert_eq!(
        runner_env(dbg.clone(), "DISK_IGNORE_MOUNTS").0.as_deref(),
        Some("/mnt/scratch*")
    );
    let pinger = pinger_container(&dbg.build(), &images());
    assert!(
        pinger
            .env
            .iter()
            .flatten()
            .all(|e| e.name != "DISK_USAGE_MAX_PERCENT"),
        "the pinger reads no check setting"
    );
}
