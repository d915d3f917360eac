//! The kube-combo operator: reconciles Debuggers (and the Pingers they use)
//! into Pods and DaemonSets.
//!
//! Each folder owns one concern; a folder uses only those listed after it
//! (docs/contributing.md, "Where things are"):
//!
//! * the binary's parts at the top: [`controller`] (the watches and the
//!   controller), [`http`] (probes and metrics), [`leader`], [`cli`],
//!   [`crdgen`];
//! * [`debugger`]: the pipeline that reconciles one Debugger;
//! * [`marks`]: node conditions and taints;
//! * [`pinger`]: Pingers, peers and the mesh;
//! * [`summary`]: the summary ConfigMap;
//! * [`node_events`]: Events on the Node of the items that fail and recover;
//! * [`workload`]: what a Debugger becomes (Pod or DaemonSet, RBAC);
//! * [`edge`]: how every writer's requests and Events go out;
//! * [`state`]: what outlives a reconcile (context, caches, pacing);
//! * [`metrics`]: the operator's and the results' metrics;
//! * [`reports`]: what the nodes report;
//! * [`watch`]: what the cluster shows, read only;
//! * [`core`]: what the steps hand each other.

pub mod cli;
pub mod controller;
pub mod crdgen;
pub mod http;
pub mod leader;

pub mod debugger;
pub mod marks;
pub mod node_events;
pub mod pinger;
pub mod summary;
pub mod workload;

pub mod edge;
pub mod state;

pub mod metrics;
pub mod reports;
pub mod watch;

pub mod core;
