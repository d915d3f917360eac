//! The kube-combo operator: reconciles Debuggers (and the Pingers they use)
//! into Pods and DaemonSets.
//!
//! One module per step of the reconcile pipeline, for a Debugger:
//! [`fetch`] -> [`validate`] -> [`render`] -> [`apply`] -> [`status`],
//! run in order by [`reconcile`]; [`retry`] decides what a failed reconcile
//! does next, [`records`] bounds what is kept per Debugger between
//! reconciles, and [`controller`] wires the watches, the [`cache`] and
//! [`recent`] writes to the reconcile. Around it: [`rbac`] (the workload
//! ServiceAccount per namespace), [`events`], [`metrics`], [`http`],
//! [`leader`] and [`crdgen`]. [`peer_lists`] (with [`mesh`]) chooses each
//! workload pod's peers. [`plugin`] is the `kubectl combo` plugin.

pub mod aggregate;
pub mod apply;
pub mod cache;
pub mod cli;
pub mod coalesce;
pub mod containers;
pub mod context;
pub mod controller;
pub mod converge;
pub mod crdgen;
pub mod events;
pub mod fetch;
pub mod http;
pub mod leader;
pub mod mesh;
pub mod metrics;
pub mod pace;
pub mod peer_lists;
pub mod pinger_status;
pub mod plan;
pub mod plugin;
pub mod rbac;
pub mod readiness;
pub mod recent;
pub mod reconcile;
pub mod records;
pub mod render;
pub mod reports;
pub mod retry;
pub mod status;
pub mod summary_write;
pub mod triggers;
pub mod validate;
pub mod watches;
pub mod write;
