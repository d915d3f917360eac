//! The names a workload's pod spec and its containers share: volumes,
//! mount paths, environment variables, users.

/// Where the host root filesystem is mounted with enableSys.
pub const HOST_ROOT_MOUNT: &str = "/host";

/// Where the user's scripts ConfigMap is mounted.
pub const CUSTOM_SCRIPTS_MOUNT: &str = "/scripts/custom";

/// `HOST_ROOT` environment variable of the runner.
pub const ENV_HOST_ROOT: &str = "HOST_ROOT";

/// Environment variable of the runner saying whether its pod has
/// hostNetwork (`true` or `false`): the scripts' only sure way to know they
/// are in the node's network namespace, since a node's PID 1 need not be in
/// it (docs/checks.md#what-the-pod-sees).
pub const ENV_HOST_NETWORK: &str = "COMBO_HOST_NETWORK";

pub(crate) const VOLUME_HOST_ROOT: &str = "host-root";

pub(crate) const VOLUME_CUSTOM_SCRIPTS: &str = "custom-scripts";

pub(crate) const VOLUME_STATE: &str = "state";

/// Where the runner keeps what its scripts carry from one run to the next
/// (docs/runner.md, "State between runs"): with enableSys the Debugger's
/// directory on the node ([`crate::workload::node_data`]), which outlives its pods;
/// else an emptyDir, which survives a restart of the container, not a new
/// pod.
pub const STATE_MOUNT: &str = "/var/lib/combo-runner/state";

/// The bound of that emptyDir: 16 scripts' state at the runner's 1 MiB
/// per script.
pub const STATE_SIZE_LIMIT: &str = "16Mi";

/// The user and group the pinger runs as in a pod of its own network
/// namespace (distroless' `nonroot`).
pub const PINGER_USER: i64 = 65532;

/// The user and group the runner of kube-combo's image runs as without
/// enableSys; the image's errlog directories belong to it.
pub const RUNNER_USER: i64 = 65532;

/// The pod sysctl that lets [`PINGER_USER`]'s group open unprivileged ICMP
/// sockets in the pod's network namespace (a safe sysctl since Kubernetes
/// 1.18).
pub const PING_GROUP_RANGE: &str = "net.ipv4.ping_group_range";
