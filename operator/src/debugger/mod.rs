//! The Debugger pipeline, one module per step in the order they run:
//! [`observe`] -> [`validate`](crate::core::validate) -> [`converge`] ->
//! [`decide`] -> [`write`](mod@write), run by [`reconcile`]; [`retry`] says what
//! a failed reconcile waits for. The only folder that runs the others.

pub mod converge;
pub mod decide;
pub mod error;
pub mod observe;
pub mod reconcile;
pub mod retry;
pub mod write;
