//! The summary ConfigMap of a Debugger: what it should hold ([`plan`]) and
//! its paced write ([`write`](mod@write)).

pub mod plan;
pub mod render;
pub mod write;
