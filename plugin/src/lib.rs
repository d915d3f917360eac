//! `kubectl combo` (docs/reference.md, "`kubectl-combo`"): the kubectl
//! plugin of kube-combo, one module per subcommand. Each holds the pure
//! part (tables, choices, the lines printed), tested without a cluster, and
//! the subcommand's `run`, which does the I/O; the binary parses the
//! command line and calls it.
//!
//! Of the project it needs only [`combo_api`], the types every binary
//! shares.

// The command line, the shared reads of the cluster, how a failure exits,
// `-o json|yaml`, shell completion.
pub mod cli;
pub mod cluster;
pub mod complete;
pub mod errors;
pub mod output;
// The subcommands.
pub mod errlog;
pub mod history;
pub mod mesh;
pub mod run_now;
pub mod status;
pub mod summary;
// What `summary` and `status` tell besides the table: which scripts the
// nodes ran, whether the summary is the Debugger's own and current.
pub mod scripts;
pub mod truth;

/// Formats rows as left-aligned columns separated by three spaces, like kubectl.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    combo_api::table::table(header, rows, 3)
}
