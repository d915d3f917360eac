//! Types shared by every kube-combo binary.
//!
//! The operator, the runner, the pinger and the kubectl plugin all import these
//! definitions; nothing here does I/O, except [`cli`], which prints the
//! one-line error of a failed command line and exits, [`http`], the metrics
//! and health server, [`signal`], which waits for SIGTERM or SIGINT,
//! [`suite`], with which the tests record the suite report, and
//! `stand_in`, the stand-in API server of the other crates' tests (with
//! the `stand-in` feature only).

pub mod cli;
pub mod debugger;
pub mod hash;
pub mod http;
pub mod keys;
pub mod peers;
pub mod pinger;
pub mod report;
pub mod retry;
pub mod runat;
mod schema;
pub mod signal;
#[cfg(feature = "stand-in")]
pub mod stand_in;
pub mod suite;
pub mod summary;
pub mod table;

pub use debugger::{Category, Debugger, DebuggerSpec, DebuggerStatus, WorkloadType};
pub use pinger::{Pinger, PingerSpec, PingerStatus};
pub use report::{DebuggerReport, DebuggerReportSpec};
pub use runat::{RunAt, RunId};
pub use summary::{ItemResult, NodeSummary};
