//! What the steps hand each other, with no I/O: the validated Debugger
//! ([`validate`]), the status and its conditions ([`status`]), the Events
//! ([`events`]), what an apply did ([`change`]), the spec hash
//! ([`spec_hash`]), the default images ([`images`]), the marks on nodes
//! ([`node_marks`]), the answer to a run-now request ([`run_now`]) and the
//! counters by kind ([`by_kind`]).

pub mod by_kind;
pub mod change;
pub mod events;
pub mod images;
pub mod node_marks;
pub mod run_now;
pub mod spec_hash;
pub mod status;
pub mod validate;
