//! End-to-end tests of the operator on the real control plane: it is
//! installed with `kubectl apply -k config/default` (so it runs with the RBAC
//! of `config/rbac`, not as admin) and driven by `kubectl apply`.

#[path = "operator/helpers.rs"]
mod helpers;
#[path = "operator/invalid.rs"]
mod invalid;
#[path = "operator/own_check.rs"]
mod own_check;
#[path = "operator/ownership.rs"]
mod ownership;
#[path = "operator/rbac.rs"]
mod rbac;
#[path = "operator/restart.rs"]
mod restart;
#[path = "operator/workload.rs"]
mod workload;
