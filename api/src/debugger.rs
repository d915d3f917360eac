//! The `Debugger` custom resource (docs/reference.md, "Debugger").

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Affinity, LocalObjectReference, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};

use crate::schema;

/// A Debugger runs the inspection runner (and optionally the pinger) as a Pod
/// or a DaemonSet, and collects a per-node summary into a ConfigMap.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "kubecombo.io",
    version = "v1",
    kind = "Debugger",
    doc = "A Debugger inspects nodes: it runs the check scripts (disk, net, mem, svc and your own) on the nodes it selects, as one Pod or a DaemonSet, once or on a schedule, and collects each node's results into a summary ConfigMap and its status. Optionally it runs a pinger next to them.",
    namespaced,
    shortname = "dbg",
    status = "DebuggerStatus",
    printcolumn = r#"{"name":"TYPE","type":"string","jsonPath":".spec.workloadType"}"#,
    printcolumn = r#"{"name":"PINGER","type":"string","jsonPath":".spec.pinger"}"#,
    printcolumn = r#"{"name":"CONDITION","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"REASON","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].reason"}"#,
    printcolumn = r#"{"name":"READY","type":"string","jsonPath":".status.ready"}"#,
    printcolumn = r#"{"name":"LAST-RUN","type":"string","jsonPath":".status.lastRunAt"}"#,
    printcolumn = r#"{"name":"FAILED","type":"integer","jsonPath":".status.failedItems"}"#,
    printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct DebuggerSpec {
    /// Kind of workload: `pod` (one Pod, restartPolicy Never) or `daemonset`
    /// (one pod per selected node).
    #[serde(default)]
    pub workload_type: WorkloadType,

    /// Runner image; empty means the operator's `--runner-image`.
    #[serde(default)]
    pub image: String,

    /// Secrets of the Debugger's namespace with the credentials to pull the
    /// runner and pinger images, as in a pod's `imagePullSecrets`; empty
    /// means the operator's `--image-pull-secrets`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub image_pull_secrets: Vec<LocalObjectReference>,

    /// CPU of each container, request = limit.
    #[serde(default = "default_cpu")]
    #[schemars(schema_with = "schema::quantity")]
    pub cpu: String,

    /// Memory of each container, request = limit.
    #[serde(default = "default_memory")]
    #[schemars(schema_with = "schema::quantity")]
    pub memory: String,

    /// Bandwidth limit in Mbit/s, set as the kube-ovn annotations
    /// `ovn.kubernetes.io/ingress_rate` and `egress_rate`. Empty: no limit.
    #[serde(default)]
    #[schemars(schema_with = "qos_schema")]
    pub qos_bandwidth: String,

    /// kube-ovn logical switch, set as annotation `ovn.kubernetes.io/logical_switch`.
    #[serde(default)]
    pub subnet: String,

    /// Run the pods in the node's network namespace.
    #[serde(default)]
    pub host_network: bool,

    /// nodeSelector of the pods (both workload types).
    #[serde(default)]
    pub selector: BTreeMap<String, String>,

    /// Tolerations of the pods (both workload types).
    #[serde(default)]
    pub tolerations: Vec<Toleration>,

    /// Affinity of the pods (both workload types).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,

    /// Node to run the Pod on; only with workloadType `pod`.
    #[serde(default)]
    pub node_name: String,

    /// PriorityClass of the pods (both workload types), such as
    /// `system-node-critical`; empty: the cluster's default priority.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub priority_class_name: String,

    /// Add the pinger container, following the Pinger named in `pinger`.
    #[serde(default)]
    pub enable_pinger: bool,

    /// Name of a Pinger in the same namespace; required when enablePinger.
    #[serde(default)]
    pub pinger: String,

    /// Mount the ConfigMap named in `configMap` at `/scripts/custom`.
    #[serde(default)]
    pub enable_config_map: bool,

    /// ConfigMap of user scripts; required when enableConfigMap. A key
    /// `<category>.<name>` runs in that category, any other key in `custom`.
    #[serde(default)]
    pub config_map: String,

    /// Give the runner host access: privileged, hostPID, and the host root
    /// filesystem read-only at `/host`.
    #[serde(default)]
    pub enable_sys: bool,

    /// When to run the inspection: an RFC 3339 time (one run; set a new time to
    /// run again) or a cron expression in UTC. Empty: a DaemonSet stays idle, a
    /// Pod runs once at start.
    #[serde(default)]
    pub run_at: String,

    /// Categories to run; default all.
    #[serde(default = "Category::all")]
    pub categories: Vec<Category>,

    /// Time limit of one script in seconds; its whole process group is killed after it.
    #[serde(default = "default_script_timeout")]
    #[schemars(schema_with = "script_timeout_schema")]
    pub script_timeout_seconds: u32,

    /// Number of errlog files kept per category.
    #[serde(default = "default_errlog_retention")]
    #[schemars(schema_with = "errlog_retention_schema")]
    pub errlog_retention: u32,

    /// Name of the summary ConfigMap; empty means `<name>-summary`.
    #[serde(default)]
    pub summary_config_map: String,

    /// Set a condition per category on each node the Debugger runs on:
    /// True when an item of the category failed, False when none did,
    /// Unknown when the node missed a run.
    #[serde(default)]
    pub node_conditions: bool,

    /// Categories whose failure taints the node (NoSchedule), removed when
    /// it recovers; at most maxTaintedPercent of the nodes at once.
    #[serde(default)]
    pub taints: Vec<Category>,

    /// Most nodes of the Debugger that its taints may cover at once, in
    /// percent of its nodes, rounded down.
    #[serde(default = "default_max_tainted_percent")]
    #[schemars(schema_with = "max_tainted_percent_schema")]
    pub max_tainted_percent: u32,

    /// Consecutive failed runs that turn a category's node condition True
    /// and set its taint; before them the condition is False, reason
    /// BelowFailureThreshold.
    #[serde(default = "default_threshold")]
    #[schemars(schema_with = "threshold_schema")]
    pub failure_threshold: u32,

    /// Consecutive runs without a failed item that turn a failing
    /// category's node condition False and remove its taint; until then it
    /// stays True, reason Recovering.
    #[serde(default = "default_threshold")]
    #[schemars(schema_with = "threshold_schema")]
    pub success_threshold: u32,

    /// Settings of the default checks (docs/checks.md), as text, given to
    /// the scripts as environment variables; each value must be of its
    /// setting's kind.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "schema::check_settings")]
    pub check_settings: BTreeMap<String, String>,
}

/// Largest `failureThreshold` and `successThreshold`: the runs a node's
/// history keeps, so that a streak that long can be counted.
pub const MAX_THRESHOLD: u32 = crate::history::HISTORY_RUNS as u32;

/// Observed state of a Debugger.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DebuggerStatus {
    /// The generation of the spec this status describes.
    #[serde(default)]
    pub observed_generation: i64,
    /// Conditions; `Ready` is always present.
    #[serde(default)]
    pub conditions: Vec<Condition>,
    /// Pods the workload should have.
    #[serde(default)]
    pub desired_pods: i32,
    /// Pods of the workload that are Ready.
    #[serde(default)]
    pub ready_pods: i32,
    /// `readyPods/desiredPods`, for `kubectl get`.
    #[serde(default)]
    pub ready: String,
    /// Scheduled time of the newest run the nodes reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_run_at: Option<String>,
    /// Next scheduled run, when runAt has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_run_at: Option<String>,
    /// Nodes whose DebuggerReport is of the run lastRunAt.
    #[serde(default)]
    pub completed_nodes: i32,
    /// Items with an error over all nodes for lastRunAt.
    #[serde(default)]
    pub failed_items: i32,
    /// Items not checked (the check needs what the pod lacks) over all
    /// nodes for lastRunAt.
    #[serde(default)]
    pub skipped_items: i32,
    /// The script sets (by scripts hash) the nodes ran for lastRunAt, most
    /// nodes first, at most 5; more than one means nodes ran different
    /// scripts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub script_sets: Vec<ScriptSet>,
}

/// Most script sets a Debugger's status lists.
pub const MAX_SCRIPT_SETS: usize = 5;

/// Nodes of one run that ran the same scripts.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScriptSet {
    /// The scripts hash their reports carry.
    pub scripts: String,
    /// How many nodes ran it.
    pub nodes: i32,
}

/// Workload kind of a Debugger.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum WorkloadType {
    /// One Pod, restartPolicy Never.
    Pod,
    /// One pod per selected node.
    #[default]
    Daemonset,
}

/// Inspection category: a directory under `/scripts`.
#[derive(
    Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Category {
    /// Disk usage, inodes, read-only remounts, I/O errors.
    Disk,
    /// Links, interface counters, default route, nameservers.
    Net,
    /// Available memory, swap, OOM kills.
    Mem,
    /// systemd units, kubelet and the container runtime.
    Svc,
    /// User scripts from the ConfigMap that name no other category.
    Custom,
}

impl Category {
    /// Every category, in run order.
    pub fn all() -> Vec<Category> {
        vec![
            Category::Disk,
            Category::Net,
            Category::Mem,
            Category::Svc,
            Category::Custom,
        ]
    }

    /// The directory name under `/scripts`.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Disk => "disk",
            Category::Net => "net",
            Category::Mem => "mem",
            Category::Svc => "svc",
            Category::Custom => "custom",
        }
    }
}

impl std::fmt::Display for Category {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Category {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Category::all()
            .into_iter()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| {
                format!("unknown category {s:?} (expected disk, net, mem, svc or custom)")
            })
    }
}

fn default_cpu() -> String {
    "100m".into()
}
fn default_memory() -> String {
    "128Mi".into()
}
fn default_script_timeout() -> u32 {
    60
}
fn default_errlog_retention() -> u32 {
    10
}
fn default_max_tainted_percent() -> u32 {
    10
}
fn default_threshold() -> u32 {
    1
}
fn script_timeout_schema(_: &mut SchemaGenerator) -> Schema {
    schema::int_range(1, 3600, 60)
}
fn errlog_retention_schema(_: &mut SchemaGenerator) -> Schema {
    schema::int_range(1, 1000, 10)
}
fn max_tainted_percent_schema(_: &mut SchemaGenerator) -> Schema {
    schema::int_range(0, 100, 10)
}
/// 1 to [`MAX_THRESHOLD`] runs, default 1.
fn threshold_schema(_: &mut SchemaGenerator) -> Schema {
    schema::int_range(1, MAX_THRESHOLD as i64, 1)
}
fn qos_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "string", "pattern": "^([1-9][0-9]{0,5})?$"})
}

impl DebuggerSpec {
    /// Name of the summary ConfigMap of the Debugger called `name`.
    pub fn summary_name(&self, name: &str) -> String {
        if self.summary_config_map.is_empty() {
            format!("{name}-summary")
        } else {
            self.summary_config_map.clone()
        }
    }

    /// The Pinger followed: `pinger` when `enablePinger` is on and it names
    /// one.
    pub fn followed_pinger(&self) -> Option<&str> {
        (self.enable_pinger && !self.pinger.is_empty()).then_some(self.pinger.as_str())
    }
}

impl Default for DebuggerSpec {
    fn default() -> Self {
        // Deserialising an empty object applies exactly the serde defaults the
        // API server would apply from the schema.
        serde_json::from_str("{}").expect("every field has a default")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pinger_is_followed_only_when_enabled_and_named() {
        let named = |enable_pinger: bool, pinger: &str| DebuggerSpec {
            enable_pinger,
            pinger: pinger.into(),
            ..DebuggerSpec::default()
        };
        assert_eq!(named(true, "mesh").followed_pinger(), Some("mesh"));
        assert_eq!(named(false, "mesh").followed_pinger(), None);
        assert_eq!(named(true, "").followed_pinger(), None);
    }

    #[test]
    fn empty_spec_takes_the_documented_defaults() {
        let spec = DebuggerSpec::default();
        assert_eq!(spec.workload_type, WorkloadType::Daemonset);
        assert_eq!(spec.cpu, "100m");
        assert_eq!(spec.memory, "128Mi");
        assert_eq!(spec.script_timeout_seconds, 60);
        assert_eq!(spec.errlog_retention, 10);
        assert_eq!(spec.categories, Category::all());
        assert_eq!(spec.summary_name("node-check"), "node-check-summary");
        assert!(!spec.node_conditions);
        assert!(spec.taints.is_empty());
        assert_eq!(spec.max_tainted_percent, 10);
        assert_eq!((spec.failure_threshold, spec.success_threshold), (1, 1));
        assert!(spec.check_settings.is_empty());
        assert!(spec.image_pull_secrets.is_empty());
    }

    #[test]
    fn categories_parse_from_their_names_only() {
        assert_eq!("net".parse::<Category>(), Ok(Category::Net));
        assert!("cpu"
            .parse::<Category>()
            .unwrap_err()
            .contains("unknown category"));
    }
}
