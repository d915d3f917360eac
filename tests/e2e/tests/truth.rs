//! Nothing lost, nothing hidden: the operator never takes a ConfigMap it
//! did not make, every Ready condition tells the truth, a hanging script
//! leaves an item, every line a script prints is accounted for, the
//! plugin never reads "no result" as "no failure", and
//! the operator and the runner stop when asked, and
//! summary and status agree whatever the Debugger's condition, a pod
//! Debugger naming a node no node has waits unscheduled and deletes, and a
//! scripts edit shows as a new scripts hash on every node. Run against the cluster of
//! simulated nodes and again against the real nodes (tests/run-all.sh);
//! the runner's stop is timed on real nodes only (docs/testing.md,
//! "Truth tests").

#[path = "truth/helpers.rs"]
mod helpers;
#[path = "truth/local_operator.rs"]
mod local_operator;
#[path = "truth/node_name.rs"]
mod node_name;
#[path = "truth/output.rs"]
mod output;
#[path = "truth/ownership.rs"]
mod ownership;
#[path = "truth/plugin.rs"]
mod plugin;
#[path = "truth/ready.rs"]
mod ready;
#[path = "truth/runs.rs"]
mod runs;
#[path = "truth/scripts.rs"]
mod scripts;
#[path = "truth/stale.rs"]
mod stale;
#[path = "truth/stop.rs"]
mod stop;
