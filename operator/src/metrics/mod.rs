//! The operator's metrics: its own ([`registry`]) and each Debugger's
//! results per category and node ([`results`]).

pub mod registry;
pub mod results;
