//! What the cluster shows, read only: the watches' health ([`health`]),
//! which pods are ready ([`readiness`]), why pods wait ([`waiting`]) or
//! are refused ([`refusals`]).

pub mod health;
pub mod readiness;
pub mod refusals;
pub mod waiting;
