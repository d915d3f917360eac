//! What a Debugger's reconcile can fail with, and the label each failure
//! counts under.

use kube::runtime::controller::Action;

use crate::core::validate::Invalid;
use crate::{marks::step, workload::apply};

/// Errors of a reconcile.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The spec is invalid; the Debugger waits for a change, or looks
    /// again when a coalesced write of its summary or status is held
    /// (the action, `await_change` when nothing is).
    #[error("invalid spec: {0}")]
    Invalid(Invalid, Action),
    /// Writing failed (transient).
    #[error(transparent)]
    Apply(#[from] apply::Error),
    /// Writing the status failed (transient).
    #[error("writing status")]
    Status(#[source] kube::Error),
    /// Writing node conditions, taints or the finalizer failed (transient).
    #[error("writing node marks")]
    Marks(#[from] step::Error),
}

impl Error {
    /// Label of the `reconcile_errors` metric.
    pub fn kind(&self) -> &'static str {
        match self {
            Error::Invalid(i, _) => match i {
                Invalid::InvalidSpec(_) => "invalid_spec",
                Invalid::PingerNotFound(_) => "pinger_not_found",
                Invalid::ConfigMapNotFound(_) => "config_map_not_found",
                Invalid::WorkloadRefused(_) => "workload_refused",
            },
            Error::Apply(_) => "apply",
            Error::Status(_) => "status",
            Error::Marks(_) => "node_marks",
        }
    }
}
