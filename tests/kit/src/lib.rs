//! The kits of kube-combo's tests (docs/testing.md#the-layers): [`stand_in`],
//! the stand-in API server of the in-process tests, and [`suite`], with
//! which the tests record the suite report.
//!
//! Only tests depend on this crate, as a dev-dependency; no binary does.

pub mod stand_in;
pub mod suite;
