//! What a failed reconcile does next: an invalid spec waits for a change,
//! a transient error requeues with backoff, so one bad Debugger never holds
//! up the others.

use std::sync::Arc;
use std::time::Duration;

use combo_api::Debugger;
use kube::runtime::controller::Action;

use crate::debugger::error::Error;
use crate::state::context::Context;

/// Invalid specs wait for a change (or for a held write of their summary
/// or status); transient errors back off exponentially (1 s doubling to
/// 5 min) per Debugger.
pub fn error_policy(dbg: Arc<Debugger>, err: &Error, ctx: Arc<Context>) -> Action {
    ctx.metrics.error(err.kind());
    if let Error::Invalid(_, then) = err {
        return then.clone();
    }
    Action::requeue(backoff(ctx.records.count_failure(&dbg)))
}

/// Delay after the `n`th consecutive failure. Pure.
pub fn backoff(n: u32) -> Duration {
    combo_api::retry::doubling(Duration::from_secs(1), Duration::from_secs(300), n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_is_capped() {
        assert_eq!(backoff(1), Duration::from_secs(1));
        assert_eq!(backoff(2), Duration::from_secs(2));
        assert_eq!(backoff(5), Duration::from_secs(16));
        assert_eq!(backoff(40), Duration::from_secs(300));
    }
}
