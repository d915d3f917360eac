//! What a Debugger becomes: its Pod or DaemonSet rendered ([`render`],
//! [`containers`], [`node_data`], [`mounts`], [`node_affinity`]), the RBAC its pods run
//! with ([`rbac`]) and the apply that writes them ([`apply`]).

pub mod apply;
pub mod containers;
pub mod mounts;
pub mod node_affinity;
pub mod node_data;
pub mod rbac;
pub mod render;
pub mod tolerations;
