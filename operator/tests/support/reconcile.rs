//! A Debugger reconciled in-process against a stand-in API server that
//! records every request, for the tests of the reconcile pipeline and of
//! what the operator keeps per Debugger.

use std::sync::Arc;

use combo_testkit::stand_in::{Answer, StandIn};
use kube::Client;
use serde_json::Value;

use super::written;

/// Every request, in order.
pub type Seen = StandIn;

/// The "method path" of the requests from the `from`th on.
pub fn requests(seen: &Seen, from: usize) -> Vec<String> {
    seen.lines(from)
}

/// What the stand-in answers a request with: `Some((code, body))` replaces
/// the default (the request's own body with a resourceVersion and uid, or
/// an empty list for a GET).
pub type Script = Arc<dyn Fn(&str, &str) -> Option<(u16, Value)> + Send + Sync>;

/// A client of a stand-in that answers as `script` says, else as
/// [`written`], and the stand-in, to read the requests back.
pub fn stand_in(script: Script) -> (Client, Seen) {
    StandIn::answering(move |r| {
        let (code, json) = script(&r.method, r.path()).unwrap_or_else(|| written(r));
        Answer::Json(code, json)
    })
}

/// The script that leaves every answer the default.
pub fn no_script() -> Script {
    Arc::new(|_, _| None)
}
