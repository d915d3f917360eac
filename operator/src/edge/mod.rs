//! The operator's edge to the API server that every writer shares: the
//! server-side apply of an object or a status, deletion by uid, ownership,
//! and the sending of Events. Writers (`workload/`, `summary/`,
//! `debugger/`, `pinger/`) decide what to write; this is how it goes out.

pub mod apply;
pub mod events;
