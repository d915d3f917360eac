//! Types shared by every kube-combo binary.
//!
//! The operator, the runner, the pinger and the kubectl plugin all import these
//! definitions; nothing here does I/O, except [`cli`], which prints the
//! one-line error of a failed command line and exits, [`http`], the metrics
//! and health server, and [`signal`], which waits for SIGTERM or SIGINT.
//! The tests' kits live in `combo-testkit` (tests/kit), which no binary
//! depends on.

pub mod cli;
pub mod debugger;
pub mod gzip;
pub mod hash;
pub mod history;
pub mod http;
pub mod keys;
pub mod peers;
pub mod pinger;
pub mod recent;
pub mod report;
pub mod retry;
pub mod runat;
mod schema;
pub mod settings;
pub mod signal;
pub mod summary;
pub mod table;

pub use debugger::{Category, Debugger, DebuggerSpec, DebuggerStatus, ScriptSet, WorkloadType};
pub use pinger::{Pinger, PingerSpec, PingerStatus};
pub use report::{DebuggerReport, DebuggerReportSpec};
pub use runat::{RunAt, RunId};
pub use summary::{ItemResult, NodeSummary};
