//! What a Debugger's reconcile can fail with, and the label each failure
//! counts under.

use kube::runtime::controller::Action;

use crate::core::validate::Invalid;
use crate::edge::apply;
use crate::marks::{self, step};

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
    /// Whether the write failed only because the Debugger is going: its
    /// namespace is being deleted (the API server refuses new objects in
    /// it) or the Debugger itself is gone (its status or finalizer has
    /// nothing left to write to). Neither is a failure of the operator:
    /// the watch brings the deletion next
    /// (docs/operator.md, "Metrics and health").
    pub fn going_away(&self) -> bool {
        match self {
            Error::Apply(apply::Error::Write { source, .. }) => namespace_terminating(source),
            Error::Status(source) | Error::Marks(step::Error::Finalizer(source)) => {
                marks::write::not_found(source) || namespace_terminating(source)
            }
            _ => false,
        }
    }

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

/// Whether `e` is the API server refusing a write into a namespace being
/// deleted: a 403 with the cause `NamespaceTerminating`, or its message
/// where a server does not give the cause.
fn namespace_terminating(e: &kube::Error) -> bool {
    let kube::Error::Api(s) = e else { return false };
    let mut causes = s.details.iter().flat_map(|d| &d.causes);
    s.code == 403
        && (causes.any(|c| c.reason == "NamespaceTerminating")
            || s.message.contains("because it is being terminated"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The error of a response whose body is the Status the API server
    /// sends, with `causes` as its details' causes.
    fn api(code: u16, message: &str, causes: &[&str]) -> kube::Error {
        let causes: Vec<_> = causes
            .iter()
            .map(|r| serde_json::json!({"reason": r}))
            .collect();
        let status = serde_json::json!({
            "status": "Failure", "code": code, "message": message, "reason": "",
            "details": {"causes": causes},
        });
        kube::Error::Api(
            serde_json::from_value::<kube::core::Status>(status)
                .unwrap()
                .boxed(),
        )
    }

    fn write(source: kube::Error) -> Error {
        Error::Apply(apply::Error::Write {
            kind: "ServiceAccount",
            name: "sa".into(),
            source,
        })
    }

    #[test]
    fn a_namespace_being_deleted_or_a_debugger_gone_is_not_a_failure() {
        let terminating = "serviceaccounts \"sa\" is forbidden: unable to create new content in namespace ops because it is being terminated";
        assert!(write(api(403, terminating, &[])).going_away());
        assert!(write(api(403, "forbidden", &["NamespaceTerminating"])).going_away());
        assert!(Error::Status(api(404, "debuggers \"d\" not found", &[])).going_away());
        assert!(Error::Status(api(403, terminating, &[])).going_away());

        // The operator's own lack of rights, a missing kind and a conflict are.
        assert!(!write(api(403, "forbidden: User cannot create", &[])).going_away());
        assert!(!write(api(404, "the server could not find the resource", &[])).going_away());
        assert!(!Error::Status(api(409, "conflict", &[])).going_away());
        assert!(!Error::Status(api(500, "etcd", &[])).going_away());
    }
}
