//! The kube-combo operator: reconciles Debuggers (and the Pingers they use)
//! into Pods and DaemonSets.
//!
//! The modules below are grouped by concern, the Debugger pipeline first,
//! in the order its steps run (docs/operator.md, "The pipeline"):
//! [`fetch`] -> [`validate`] -> [`converge`] ([`render`], [`rbac`],
//! [`apply`]) -> [`plan`] -> [`write`](mod@write), run in order by [`reconcile`].
//! Then the controller that feeds it, the Pingers, serving and leadership,
//! and the tools.

// The Debugger pipeline, one module per step, in the order they run.
// reconcile: runs the steps below for one Debugger, logs every outcome.
pub mod reconcile;
// fetch: the Debugger, its Pinger and owned objects, from the watches.
pub mod fetch;
// validate: a valid Debugger (runAt parsed), or why not.
pub mod validate;
// converge: workload RBAC and workload, applied when the spec-hash differs;
// render (with containers and node_data) is pure, apply and summary_write write;
// summary_plan: the summary whatever the verdict.
pub mod apply;
pub mod containers;
pub mod converge;
pub mod node_data;
pub mod rbac;
pub mod render;
pub mod summary_plan;
pub mod summary_write;
// plan: status, condition Ready, Events, summary ConfigMap, next look.
pub mod plan;
// write: the plan's writes, paced and coalesced.
pub mod write;
// Node marks: conditions and taints on the Debugger's nodes and the runs
// they missed, decided pure (missed, node_marks, taints, marks_status).
pub mod marks_status;
pub mod missed;
pub mod node_marks;
pub mod node_state;
pub mod taints;
// ... and written: the step (marks), the node watch and writes, the
// finalizer that takes them off.
pub mod finalizer;
pub mod marks;
pub mod node_watch;
pub mod node_write;

// What the plan is computed from: status and Events, the summary
// aggregated from the DebuggerReports, why the pods wait or are refused; and the results
// per category and node that the metrics show.
pub mod aggregate;
pub mod events;
pub mod refusals;
pub mod reports;
pub mod results;
pub mod status;
pub mod waiting;

// The controller and its watches: what wakes a reconcile, what the
// watches saw, and what is kept between reconciles.
pub mod cache;
pub mod coalesce;
pub mod context;
pub mod controller;
pub mod pace;
pub mod readiness;
pub mod recent;
pub mod records;
pub mod retry;
pub mod triggers;
pub mod watches;

// Pingers: their status, and each workload pod's peers.
pub mod mesh;
pub mod peer_lists;
pub mod pinger_status;

// Serving and leadership.
pub mod http;
pub mod leader;
pub mod metrics;
pub mod result_metrics;

// Tools: the command line, the CRD generator.
pub mod cli;
pub mod crdgen;
