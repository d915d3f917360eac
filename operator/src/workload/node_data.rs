//! The node directory of a Debugger with enableSys: its runners' script
//! state and errlogs live on the node, not in the pod, so a new pod (an
//! image upgrade, a spec edit, a node reboot) keeps the counters'
//! baselines, the kernel log position and the errlogs of its predecessor
//! (docs/runner.md, "Where state and errlogs live").
//!
//! On the node: `/var/lib/kube-combo/<namespace>/<debugger>/<uid>/`, with
//! `state/` and `errlog/<category>/`. The Debugger's uid keys it, so a
//! Debugger deleted and created again under the same name starts afresh;
//! the runner removes the directories of earlier uids it finds beside its
//! own. Without enableSys the pod may hold no hostPath (PodSecurity
//! baseline forbids it), so state stays in an emptyDir and errlogs in the
//! container. Pure, like [`crate::workload::render`].

use combo_api::{Category, Debugger};
use k8s_openapi::api::core::v1::{EnvVar, HostPathVolumeSource, Volume, VolumeMount};

use crate::workload::mounts::STATE_MOUNT;

/// The node directory under which every Debugger's directory is.
pub const NODE_DATA_ROOT: &str = "/var/lib/kube-combo";
/// Where the runner sees its Debugger's node directory
/// (`<root>/<namespace>/<debugger>`), to remove earlier uids' directories.
pub const NODE_DATA_MOUNT: &str = "/var/lib/combo-runner/node";
/// Environment variable of the runner naming [`NODE_DATA_MOUNT`] when its
/// pod keeps state and errlogs on the node.
pub const ENV_NODE_DATA: &str = "COMBO_NODE_DATA";
pub(crate) const VOLUME_NODE_DATA: &str = "node-data";

/// The Debugger's directory on the node and its uid, when its pods keep
/// state and errlogs there: with enableSys, once the Debugger has a uid.
pub fn node_dir(dbg: &Debugger) -> Option<(String, &str)> {
    if !dbg.spec.enable_sys {
        return None;
    }
    let uid = dbg.metadata.uid.as_deref().filter(|u| !u.is_empty())?;
    let name = dbg.metadata.name.as_deref()?;
    let namespace = dbg.metadata.namespace.as_deref().unwrap_or("default");
    Some((format!("{NODE_DATA_ROOT}/{namespace}/{name}"), uid))
}

/// The hostPath volume of [`node_dir`], made by the kubelet when missing.
pub fn volume(dbg: &Debugger) -> Option<Volume> {
    let (path, _) = node_dir(dbg)?;
    Some(Volume {
        name: VOLUME_NODE_DATA.into(),
        host_path: Some(HostPathVolumeSource {
            path,
            type_: Some("DirectoryOrCreate".into()),
        }),
        ..Volume::default()
    })
}

/// The runner's mounts of [`node_dir`]: the whole directory at
/// [`NODE_DATA_MOUNT`], `<uid>/state` at the state root, and
/// `<uid>/errlog/<category>` at each category's errlog directory and its
/// fallback (`/scripts/errlog/<category>`), so the errlog paths stay the
/// ones `kubectl combo errlog` reads. A ConfigMap at `/scripts/custom` is
/// read-only, so `custom` gets only the fallback there.
pub fn mounts(dbg: &Debugger) -> Option<Vec<VolumeMount>> {
    let (_, uid) = node_dir(dbg)?;
    let at = |path: String, sub: String| VolumeMount {
        name: VOLUME_NODE_DATA.into(),
        mount_path: path,
        sub_path: (!sub.is_empty()).then_some(sub),
        ..VolumeMount::default()
    };
    let mut m = vec![
        at(NODE_DATA_MOUNT.into(), String::new()),
        at(STATE_MOUNT.into(), format!("{uid}/state")),
        at("/scripts/errlog".into(), format!("{uid}/errlog")),
    ];
    for c in Category::all() {
        if c == Category::Custom && dbg.spec.enable_config_map {
            continue;
        }
        m.push(at(
            format!("/scripts/{c}/errlog", c = c.as_str()),
            format!("{uid}/errlog/{c}", c = c.as_str()),
        ));
    }
    Some(m)
}

/// The runner's environment for [`node_dir`]: [`ENV_NODE_DATA`] and the
/// uid whose directory it keeps.
pub fn env(dbg: &Debugger) -> Vec<EnvVar> {
    let Some((_, uid)) = node_dir(dbg) else {
        return Vec::new();
    };
    [
        (ENV_NODE_DATA, NODE_DATA_MOUNT),
        (combo_api::keys::env::DEBUGGER_UID, uid),
    ]
    .into_iter()
    .map(|(name, value)| EnvVar {
        name: name.into(),
        value: Some(value.into()),
        ..EnvVar::default()
    })
    .collect()
}

#[cfg(test)]
#[path = "node_data_tests.rs"]
mod tests;
