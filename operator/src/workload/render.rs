//! Render: a Debugger (and the image of its Pinger) becomes a DaemonSet or a
//! Pod, plus the skeleton of its summary ConfigMap. Pure: no I/O, so every
//! spec field is unit-tested here.

use std::collections::BTreeMap;

use combo_api::keys;
use combo_api::{Debugger, WorkloadType};
use k8s_openapi::api::apps::v1::{
    DaemonSet, DaemonSetSpec, DaemonSetUpdateStrategy, RollingUpdateDaemonSet,
};
use k8s_openapi::api::core::v1::{
    ConfigMapVolumeSource, EmptyDirVolumeSource, HostPathVolumeSource, LocalObjectReference, Pod,
    PodSecurityContext, PodSpec, PodTemplateSpec, Sysctl, Volume,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::core::images::Images;
use crate::core::spec_hash::{spec_hash_of, stamped};
use crate::core::validate::Valid;
use crate::workload::containers::{pinger_container, runner};
use crate::workload::mounts::{
    PINGER_USER, PING_GROUP_RANGE, STATE_SIZE_LIMIT, VOLUME_CUSTOM_SCRIPTS, VOLUME_HOST_ROOT,
    VOLUME_STATE,
};

/// The workload of a Debugger, as it should be.
#[derive(Clone, Debug, PartialEq)]
pub enum Workload {
    /// `workloadType: daemonset`.
    DaemonSet(Box<DaemonSet>),
    /// `workloadType: pod`.
    Pod(Box<Pod>),
}

impl Workload {
    /// The kind, for messages and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            Workload::DaemonSet(_) => "DaemonSet",
            Workload::Pod(_) => "Pod",
        }
    }

    /// The hash stamped on the object.
    pub fn hash(&self) -> Option<&str> {
        let meta = match self {
            Workload::DaemonSet(d) => &d.metadata,
            Workload::Pod(p) => &p.metadata,
        };
        spec_hash_of(meta)
    }
}

/// Renders the workload of `dbg`, `valid` as validation made it (its
/// name, owner, kind and images; the pinger container applies target
/// changes live, so only the Pinger's image matters here). `account_uid`
/// is the UID of the pods' ServiceAccount, when known: a new account (one
/// deleted by hand and written again) changes the pod template, so pods
/// holding the old account's token are replaced.
pub fn workload(dbg: &Debugger, valid: &Valid, account_uid: Option<&str>) -> Workload {
    let name = &valid.name;
    let meta = |annotations: BTreeMap<String, String>| ObjectMeta {
        name: Some(name.clone()),
        namespace: Some(valid.namespace.clone()),
        labels: Some(keys::workload_labels(name)),
        annotations: (!annotations.is_empty()).then_some(annotations),
        owner_references: valid.owner.clone().map(|o| vec![o]),
        ..ObjectMeta::default()
    };
    let spec = pod_spec(dbg, &valid.images);
    match valid.workload {
        WorkloadType::Daemonset => {
            let ds = DaemonSet {
                metadata: meta(BTreeMap::new()),
                spec: Some(DaemonSetSpec {
                    selector: LabelSelector {
                        match_labels: Some(keys::workload_labels(name)),
                        ..LabelSelector::default()
                    },
                    template: PodTemplateSpec {
                        metadata: Some(ObjectMeta {
                            labels: Some(keys::workload_labels(name)),
                            annotations: pod_annotations(dbg, account_uid),
                            ..ObjectMeta::default()
                        }),
                        spec: Some(spec),
                    },
                    update_strategy: Some(DaemonSetUpdateStrategy {
                        type_: Some("RollingUpdate".into()),
                        rolling_update: Some(RollingUpdateDaemonSet {
                            max_unavailable: Some(IntOrString::String("100%".into())),
                            ..RollingUpdateDaemonSet::default()
                        }),
                    }),
                    ..DaemonSetSpec::default()
                }),
                status: None,
            };
            Workload::DaemonSet(Box::new(stamped(ds, |d| &mut d.metadata)))
        }
        WorkloadType::Pod => {
            let pod = Pod {
                metadata: meta(pod_annotations(dbg, account_uid).unwrap_or_default()),
                spec: Some(spec),
                status: None,
            };
            Workload::Pod(Box::new(stamped(pod, |p| &mut p.metadata)))
        }
    }
}

fn pod_annotations(dbg: &Debugger, account_uid: Option<&str>) -> Option<BTreeMap<String, String>> {
    let mut a = BTreeMap::new();
    if let Some(uid) = account_uid {
        a.insert(keys::ANNOTATION_ACCOUNT_UID.into(), uid.into());
    }
    let spec = &dbg.spec;
    if !spec.qos_bandwidth.is_empty() {
        a.insert(
            keys::ANNOTATION_INGRESS_RATE.into(),
            spec.qos_bandwidth.clone(),
        );
        a.insert(
            keys::ANNOTATION_EGRESS_RATE.into(),
            spec.qos_bandwidth.clone(),
        );
    }
    if !spec.subnet.is_empty() {
        a.insert(keys::ANNOTATION_LOGICAL_SWITCH.into(), spec.subnet.clone());
    }
    (!a.is_empty()).then_some(a)
}

/// The pod spec shared by both workload types; `images` as validation
/// resolved them.
pub fn pod_spec(dbg: &Debugger, images: &Images) -> PodSpec {
    let spec = &dbg.spec;
    let is_pod = spec.workload_type == WorkloadType::Pod;
    let mut containers = vec![runner(dbg, images)];
    if spec.enable_pinger {
        containers.push(pinger_container(dbg, images));
    }
    // State on the node with enableSys (crate::workload::node_data), else in an
    // emptyDir.
    let mut volumes = vec![
        crate::workload::node_data::volume(dbg).unwrap_or_else(|| Volume {
            name: VOLUME_STATE.into(),
            empty_dir: Some(EmptyDirVolumeSource {
                size_limit: Some(Quantity(STATE_SIZE_LIMIT.into())),
                ..EmptyDirVolumeSource::default()
            }),
            ..Volume::default()
        }),
    ];
    if spec.enable_sys {
        volumes.push(Volume {
            name: VOLUME_HOST_ROOT.into(),
            host_path: Some(HostPathVolumeSource {
                path: "/".into(),
                type_: Some("Directory".into()),
            }),
            ..Volume::default()
        });
    }
    if spec.enable_config_map {
        volumes.push(Volume {
            name: VOLUME_CUSTOM_SCRIPTS.into(),
            config_map: Some(ConfigMapVolumeSource {
                name: spec.config_map.clone(),
                default_mode: Some(0o755),
                ..ConfigMapVolumeSource::default()
            }),
            ..Volume::default()
        });
    }
    PodSpec {
        containers,
        volumes: (!volumes.is_empty()).then_some(volumes),
        service_account_name: Some(keys::workload_account(
            dbg.metadata.name.as_deref().unwrap_or_default(),
        )),
        restart_policy: Some(if is_pod { "Never" } else { "Always" }.into()),
        host_network: spec.host_network.then_some(true),
        dns_policy: spec
            .host_network
            .then(|| "ClusterFirstWithHostNet".to_string()),
        host_pid: spec.enable_sys.then_some(true),
        security_context: (spec.enable_pinger && !spec.host_network).then(|| PodSecurityContext {
            sysctls: Some(vec![Sysctl {
                name: PING_GROUP_RANGE.into(),
                value: format!("{PINGER_USER} {PINGER_USER}"),
            }]),
            ..PodSecurityContext::default()
        }),
        node_selector: (!spec.selector.is_empty()).then(|| spec.selector.clone()),
        priority_class_name: (!spec.priority_class_name.is_empty())
            .then(|| spec.priority_class_name.clone()),
        tolerations: crate::workload::tolerations::tolerations(dbg),
        // A node named as affinity: spec.nodeName would bind the pod to a
        // name no kubelet may ever answer for, and such a pod cannot be
        // deleted without force (crate::workload::node_affinity).
        affinity: crate::workload::node_affinity::pinned(
            spec.affinity.clone(),
            if is_pod { &spec.node_name } else { "" },
        ),
        image_pull_secrets: (!images.pull_secrets.is_empty()).then(|| {
            images
                .pull_secrets
                .iter()
                .map(|name| LocalObjectReference { name: name.clone() })
                .collect()
        }),
        ..PodSpec::default()
    }
}

#[cfg(test)]
#[path = "render_tests.rs"]
pub(crate) mod tests;

#[cfg(test)]
#[path = "render_pod_tests.rs"]
mod pod_tests;
