//! Pingers: each workload pod's peers ([`peer_lists`]), the mesh's
//! coverage ([`mesh`]) and a Pinger's status ([`status`]).

pub mod mesh;
pub mod peer_lists;
pub mod peer_writes;
pub mod status;
