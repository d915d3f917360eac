//! What the nodes report: the DebuggerReports kept per Debugger and node
//! ([`store`], [`aggregate`]), the results per category ([`results`]), the
//! newest run across nodes ([`runs`]) and the runs nodes missed
//! ([`missed`]).

pub mod aggregate;
pub mod missed;
pub mod results;
pub mod runs;
pub mod store;
