//! The workload's containers: the runner and, with enablePinger, the
//! pinger, with their environment, mounts, resources and security contexts.
//! Pure, like [`crate::workload::render`], which places them in the pod spec.

use std::collections::BTreeMap;

use combo_api::keys::{self, env};
use combo_api::Debugger;
use k8s_openapi::api::core::v1::{
    Capabilities, Container, EnvVar, EnvVarSource, ObjectFieldSelector, ResourceRequirements,
    SecurityContext, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::core::images::Images;

use crate::workload::mounts::{
    CUSTOM_SCRIPTS_MOUNT, ENV_HOST_NETWORK, ENV_HOST_ROOT, HOST_ROOT_MOUNT, PINGER_USER,
    RUNNER_USER, STATE_MOUNT, VOLUME_CUSTOM_SCRIPTS, VOLUME_HOST_ROOT, VOLUME_STATE,
};

/// The runner container of `dbg`, running `images.runner`.
pub(crate) fn runner(dbg: &Debugger, images: &Images) -> Container {
    let spec = &dbg.spec;
    let mut env = common_env(dbg);
    env.push(value_env(
        ENV_HOST_ROOT,
        if spec.enable_sys {
            HOST_ROOT_MOUNT
        } else {
            "/"
        },
    ));
    env.push(value_env(
        ENV_HOST_NETWORK,
        if spec.host_network { "true" } else { "false" },
    ));
    // Validated against combo_api::settings: none is one of the above.
    env.extend(spec.check_settings.iter().map(|(k, v)| value_env(k, v)));
    env.extend(crate::workload::node_data::env(dbg));
    let mut mounts = crate::workload::node_data::mounts(dbg).unwrap_or_else(|| {
        vec![VolumeMount {
            name: VOLUME_STATE.into(),
            mount_path: STATE_MOUNT.into(),
            ..VolumeMount::default()
        }]
    });
    if spec.enable_sys {
        // HostToContainer: a filesystem the node mounts after the pod
        // started (a new disk, a remount) shows under /host too, so the
        // disk checks measure it, not the directory under it.
        mounts.push(VolumeMount {
            name: VOLUME_HOST_ROOT.into(),
            mount_path: HOST_ROOT_MOUNT.into(),
            read_only: Some(true),
            mount_propagation: Some("HostToContainer".into()),
            ..VolumeMount::default()
        });
    }
    if spec.enable_config_map {
        mounts.push(VolumeMount {
            name: VOLUME_CUSTOM_SCRIPTS.into(),
            mount_path: CUSTOM_SCRIPTS_MOUNT.into(),
            read_only: Some(true),
            ..VolumeMount::default()
        });
    }
    // With enableSys the scripts act on the host as root. Without it, the
    // runner of kube-combo's own image runs as a non-root user with no
    // capability: that image makes its errlog directories writable by that
    // user. An image the Debugger names may not, so it keeps root there,
    // unprivileged and confined to its container (docs/security.md,
    // "enableSys").
    let security_context = if spec.enable_sys {
        SecurityContext {
            privileged: Some(true),
            ..SecurityContext::default()
        }
    } else if spec.image.is_empty() {
        SecurityContext {
            privileged: Some(false),
            allow_privilege_escalation: Some(false),
            run_as_non_root: Some(true),
            run_as_user: Some(RUNNER_USER),
            run_as_group: Some(RUNNER_USER),
            capabilities: Some(Capabilities {
                drop: Some(vec!["ALL".into()]),
                ..Capabilities::default()
            }),
            ..SecurityContext::default()
        }
    } else {
        SecurityContext {
            privileged: Some(false),
            allow_privilege_escalation: Some(false),
            ..SecurityContext::default()
        }
    };
    Container {
        name: keys::CONTAINER_RUNNER.into(),
        image: Some(images.runner.clone()),
        env: Some(env),
        resources: Some(resources(dbg)),
        volume_mounts: (!mounts.is_empty()).then_some(mounts),
        security_context: Some(security_context),
        ..Container::default()
    }
}

/// The pinger container of `dbg`, running `images.pinger`.
pub(crate) fn pinger_container(dbg: &Debugger, images: &Images) -> Container {
    // In its own network namespace the pinger runs as a non-root user with
    // no capability: the pod's ping_group_range lets it open unprivileged
    // ICMP sockets. With hostNetwork no pod sysctl may be set and the
    // host's range applies, so it runs as root with only NET_RAW, for a
    // raw socket when the host's range leaves it out.
    let security_context = if dbg.spec.host_network {
        SecurityContext {
            privileged: Some(false),
            allow_privilege_escalation: Some(false),
            capabilities: Some(Capabilities {
                add: Some(vec!["NET_RAW".into()]),
                drop: Some(vec!["ALL".into()]),
            }),
            ..SecurityContext::default()
        }
    } else {
        SecurityContext {
            privileged: Some(false),
            allow_privilege_escalation: Some(false),
            run_as_non_root: Some(true),
            run_as_user: Some(PINGER_USER),
            run_as_group: Some(PINGER_USER),
            capabilities: Some(Capabilities {
                drop: Some(vec!["ALL".into()]),
                ..Capabilities::default()
            }),
            ..SecurityContext::default()
        }
    };
    Container {
        name: keys::CONTAINER_PINGER.into(),
        image: Some(images.pinger.clone()),
        env: Some(common_env(dbg)),
        resources: Some(resources(dbg)),
        security_context: Some(security_context),
        ..Container::default()
    }
}

fn common_env(dbg: &Debugger) -> Vec<EnvVar> {
    let mut env = vec![
        field_env(env::POD_NAME, "metadata.name"),
        field_env(env::POD_NAMESPACE, "metadata.namespace"),
        field_env(env::NODE_NAME, "spec.nodeName"),
        field_env(env::POD_IP, "status.podIP"),
        field_env(env::POD_IPS, "status.podIPs"),
        value_env(
            env::DEBUGGER_NAME,
            dbg.metadata.name.as_deref().unwrap_or_default(),
        ),
    ];
    if dbg.spec.enable_pinger {
        env.push(value_env(env::PINGER_NAME, &dbg.spec.pinger));
    }
    env
}

fn field_env(name: &str, path: &str) -> EnvVar {
    EnvVar {
        name: name.into(),
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                field_path: path.into(),
                api_version: Some("v1".into()),
            }),
            ..EnvVarSource::default()
        }),
        ..EnvVar::default()
    }
}

fn value_env(name: &str, value: &str) -> EnvVar {
    EnvVar {
        name: name.into(),
        value: Some(value.into()),
        ..EnvVar::default()
    }
}

fn resources(dbg: &Debugger) -> ResourceRequirements {
    let amounts: BTreeMap<String, Quantity> = [
        ("cpu".to_string(), Quantity(dbg.spec.cpu.clone())),
        ("memory".to_string(), Quantity(dbg.spec.memory.clone())),
    ]
    .into();
    ResourceRequirements {
        requests: Some(amounts.clone()),
        limits: Some(amounts),
        ..ResourceRequirements::default()
    }
}

#[cfg(test)]
#[path = "containers_tests.rs"]
mod tests;
