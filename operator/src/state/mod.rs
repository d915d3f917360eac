//! What outlives one reconcile: the [`context`] every reconcile shares, the
//! caches the watches fill ([`cache`], [`nodes`], fed by [`triggers`]),
//! the writes just sent ([`own_writes`]), pacing and coalescing of writes
//! ([`pace`], [`coalesce`]), per-Debugger records ([`records`]) and
//! what one reconcile observed ([`observed`]).

pub mod cache;
pub mod coalesce;
pub mod context;
pub mod nodes;
pub mod observed;
pub mod own_writes;
pub mod pace;
pub mod records;
pub mod triggers;
