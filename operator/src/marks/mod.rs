//! Node conditions and taints: the marks a Debugger's results put on its
//! nodes. Decided pure ([`plan`], [`debounce`], [`taints`], [`state`],
//! [`status`]), run by [`step`], written by [`write`](mod@write), taken
//! off by [`finalizer`].

pub mod debounce;
pub mod finalizer;
pub mod plan;
pub mod state;
pub mod status;
pub mod step;
pub mod taints;
pub mod write;
