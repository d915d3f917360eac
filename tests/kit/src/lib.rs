//! The kits of kube-combo's tests (docs/testing.md#the-layers): [`stand_in`],
//! the stand-in API server of the in-process tests, [`suite`], with which
//! the tests record the suite report, [`netplan`], the test cluster's
//! network plan that the node simulator and the end-to-end tests share,
//! [`chromium`], which shows a page in a headless browser, [`helm`], the
//! chart tests' `helm`, [`leftovers`], what a killed test run left
//! behind, [`binary`], a project binary run as a user runs it, and
//! [`fixtures`], the Debuggers and Pingers of the operator's tests and
//! benches.
//!
//! Only tests depend on this crate, as a dev-dependency; no binary does.

pub mod binary;
pub mod busy;
pub mod chromium;
pub mod fixtures;
pub mod helm;
pub mod leftovers;
pub mod netplan;
pub mod stand_in;
pub mod suite;
