//! Label, annotation, container and field-manager names (docs/reference.md, "Names").
//!
//! Every binary uses these constants; no label string is spelled twice.

/// API group of the custom resources.
pub const GROUP: &str = "kubecombo.io";
/// API version of the custom resources.
pub const VERSION: &str = "v1";

/// `app.kubernetes.io/name` label key.
pub const LABEL_NAME: &str = "app.kubernetes.io/name";
/// Value of [`LABEL_NAME`] on every workload pod.
pub const LABEL_NAME_VALUE: &str = "kube-combo";
/// `app.kubernetes.io/instance` label key; the value is the Debugger's name.
pub const LABEL_INSTANCE: &str = "app.kubernetes.io/instance";
/// Label naming the Debugger a workload pod belongs to; peers are found by it.
pub const LABEL_DEBUGGER: &str = "kubecombo.io/debugger";

/// Label on a DebuggerReport naming its node (shortened with a hash when
/// the node name is longer than a label value may be).
pub const LABEL_NODE: &str = "kubecombo.io/node";

/// kube-ovn annotation: ingress rate limit in Mbit/s.
pub const ANNOTATION_INGRESS_RATE: &str = "ovn.kubernetes.io/ingress_rate";
/// kube-ovn annotation: egress rate limit in Mbit/s.
pub const ANNOTATION_EGRESS_RATE: &str = "ovn.kubernetes.io/egress_rate";
/// kube-ovn annotation: the logical switch (subnet) of the pod.
pub const ANNOTATION_LOGICAL_SWITCH: &str = "ovn.kubernetes.io/logical_switch";

/// Annotation on the workload's pods: the UID of the ServiceAccount they run
/// as, so that pods holding a deleted account's token are replaced when the
/// operator writes the account again.
pub const ANNOTATION_ACCOUNT_UID: &str = "kubecombo.io/service-account-uid";

/// Annotation the operator applies to each workload pod whose pinger
/// probes a bounded number of peers: the addresses of the peers chosen for
/// it (docs/pinger.md, "Peers"). Its pinger reads it from the watch of its
/// own pod, so no pinger follows every pod of its Debugger.
pub const ANNOTATION_PEERS: &str = "kubecombo.io/peers";

/// Annotation written beside [`ANNOTATION_PEERS`]: the node of each listed
/// address, `address=node` (docs/pinger.md, "Metrics"), so the pinger
/// labels a peer's series with its node. A separate annotation, so a
/// pinger that reads only the addresses keeps reading them.
pub const ANNOTATION_PEER_NODES: &str = "kubecombo.io/peer-nodes";

/// Annotation on a Debugger asking each of its nodes for one run besides
/// those of `runAt`, which it leaves as it is (docs/runner.md, "Run now"):
/// an RFC 3339 time, the run's id; at once if it has passed. A node runs
/// each value once. `kubectl combo run` sets it to the current time.
pub const ANNOTATION_RUN_NOW: &str = "kubecombo.io/run-now";

/// Annotation on a DebuggerReport: the last [`ANNOTATION_RUN_NOW`] value its
/// node ran (the run's RFC 3339 time), kept in every later report, so that
/// a restarted runner does not run it again.
pub const ANNOTATION_RUN_NOW_DONE: &str = "kubecombo.io/run-now-done";

/// Annotation on a DebuggerReport: the last run of the Debugger's `runAt`
/// its node completed (RFC 3339), kept in every later report; it differs
/// from `spec.runAt` after a run-now run.
pub const ANNOTATION_SCHEDULED_RUN: &str = "kubecombo.io/scheduled-run";

/// Field manager of `kubectl combo`'s writes (the run-now annotation). Not
/// `kubectl…`: Flux takes over the fields of managers whose name starts
/// with `kubectl` and removes what Git does not hold (docs/runner.md,
/// "Run now").
pub const FIELD_MANAGER_PLUGIN: &str = "combo-plugin";

/// Server-side apply field manager of the operator's peer lists: separate
/// from [`FIELD_MANAGER_OPERATOR`], which owns the whole of the pods a
/// `Pod`-type Debugger creates, so that applying a list never touches them.
pub const FIELD_MANAGER_PEERS: &str = "combo-operator/peers";

/// Name of the runner container in workload pods.
pub const CONTAINER_RUNNER: &str = "runner";
/// Name of the pinger container in workload pods.
pub const CONTAINER_PINGER: &str = "pinger";

/// Server-side apply field manager of the operator.
pub const FIELD_MANAGER_OPERATOR: &str = "combo-operator";

/// Server-side apply field manager of the runner on `node`: each node writes
/// only its own DebuggerReport.
pub fn field_manager_runner(node: &str) -> String {
    format!("combo-runner/{node}")
}

/// Binary names (docs/reference.md, "Names"); also the last path segment of the default images.
pub const BIN_OPERATOR: &str = "combo-operator";
/// Pinger binary name.
pub const BIN_PINGER: &str = "combo-pinger";
/// Runner binary name.
pub const BIN_RUNNER: &str = "combo-runner";

/// Environment variables the operator gives to workload containers.
pub mod env {
    /// The pod's own name (downward API).
    pub const POD_NAME: &str = "POD_NAME";
    /// The pod's namespace (downward API).
    pub const POD_NAMESPACE: &str = "POD_NAMESPACE";
    /// The node the pod runs on (downward API).
    pub const NODE_NAME: &str = "NODE_NAME";
    /// The pod's IP (downward API).
    pub const POD_IP: &str = "POD_IP";
    /// All of the pod's IPs, comma-separated: two on a dual-stack pod
    /// (downward API `status.podIPs`).
    pub const POD_IPS: &str = "POD_IPS";
    /// The Debugger that owns the pod.
    pub const DEBUGGER_NAME: &str = "DEBUGGER_NAME";
    /// The uid of that Debugger, given to a runner that keeps its state on
    /// the node (enableSys): it keeps the directory of this uid and
    /// removes those of earlier Debuggers of the same name.
    pub const DEBUGGER_UID: &str = "DEBUGGER_UID";
    /// The Pinger the pod's pinger container follows.
    pub const PINGER_NAME: &str = "PINGER_NAME";
}

/// Labels every workload pod of `debugger` carries.
pub fn workload_labels(debugger: &str) -> std::collections::BTreeMap<String, String> {
    [
        (LABEL_NAME, LABEL_NAME_VALUE),
        (LABEL_INSTANCE, debugger),
        (LABEL_DEBUGGER, debugger),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// Name of the ServiceAccount, Role and RoleBinding of `debugger`'s pods:
/// `kube-combo-workload.<debugger>`, shortened with a hash as report names
/// are when longer than 253 characters.
pub fn workload_account(debugger: &str) -> String {
    crate::report::shortened(
        &format!("{WORKLOAD_ACCOUNT_PREFIX}.{debugger}"),
        crate::report::MAX_NAME,
    )
}

/// Start of every workload ServiceAccount's name; alone, the name of the
/// one ServiceAccount per namespace that earlier versions used.
pub const WORKLOAD_ACCOUNT_PREFIX: &str = "kube-combo-workload";

/// Start of every node condition type and taint key the operator writes
/// (docs/operator.md#condition-types-and-taint-keys).
pub const NODE_MARK_PREFIX: &str = "kubecombo.io/";

/// Longest name part of a qualified name (after the `/`).
const MAX_QUALIFIED_NAME: usize = 63;

/// Type of the node condition, and key of the taint, of `debugger` in
/// `namespace` for `category`: `kubecombo.io/<namespace>.<debugger>.<category>`,
/// its name part shortened with a hash as report names are when longer
/// than 63 characters. A namespace and a category hold no dot, so two
/// Debuggers never share one.
pub fn node_mark_name(namespace: &str, debugger: &str, category: crate::Category) -> String {
    let part = format!("{namespace}.{debugger}.{category}");
    format!(
        "{NODE_MARK_PREFIX}{}",
        crate::report::shortened(&part, MAX_QUALIFIED_NAME)
    )
}

/// Finalizer of a Debugger whose conditions or taints may be on nodes:
/// removed once the operator has taken them off.
pub const FINALIZER_NODE_MARKS: &str = "kubecombo.io/node-marks";

/// Label selector string matching the pods of `debugger`.
pub fn debugger_selector(debugger: &str) -> String {
    format!("{LABEL_DEBUGGER}={debugger}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workload_labels_name_the_debugger_three_ways() {
        let labels = workload_labels("node-check");
        assert_eq!(labels.len(), 3);
        assert_eq!(labels[LABEL_NAME], "kube-combo");
        assert_eq!(labels[LABEL_INSTANCE], "node-check");
        assert_eq!(labels[LABEL_DEBUGGER], "node-check");
        assert_eq!(debugger_selector("x"), "kubecombo.io/debugger=x");
        assert_eq!(field_manager_runner("node-1"), "combo-runner/node-1");
    }

    #[test]
    fn node_marks_are_qualified_names_one_per_debugger_and_category() {
        use crate::Category;
        assert_eq!(
            node_mark_name("ops", "node-check", Category::Disk),
            "kubecombo.io/ops.node-check.disk"
        );
        // A dotted Debugger name does not make two Debuggers' names meet.
        assert_ne!(
            node_mark_name("ops", "a.disk", Category::Net),
            node_mark_name("ops", "a", Category::Disk)
        );
        let long = node_mark_name(&"n".repeat(63), &"d".repeat(63), Category::Custom);
        let part = long.strip_prefix(NODE_MARK_PREFIX).unwrap();
        assert_eq!(part.len(), 63, "{part}");
        assert!(part.chars().last().unwrap().is_ascii_alphanumeric());
        assert_ne!(
            long,
            node_mark_name(&"n".repeat(63), &"d".repeat(63), Category::Disk),
            "the hash keeps categories apart"
        );
    }

    #[test]
    fn a_workload_account_is_named_after_its_debugger_and_fits_a_name() {
        assert_eq!(workload_account("d"), "kube-combo-workload.d");
        let long = "a".repeat(253);
        let (x, y) = (workload_account(&long), workload_account(&"b".repeat(253)));
        assert_eq!(x.len(), 253);
        assert!(x.starts_with("kube-combo-workload.aaa"), "{x}");
        assert_ne!(x, y);
    }
}
