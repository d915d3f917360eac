//! Retrying: which API errors retrying cannot fix, and the one backoff of
//! the operator and the runner.

use std::time::Duration;

/// The pause before retry `attempt` (from 1): `first`, doubled for each
/// attempt after the first, at most `max`. Callers add their own spread
/// (the runner's per-node jitter). Pure.
pub fn doubling(first: Duration, max: Duration, attempt: u32) -> Duration {
    first
        .saturating_mul(1 << attempt.clamp(1, 16).saturating_sub(1))
        .min(max)
}

/// Whether `e` is an answer that the same request will get again: a 4xx
/// other than 409 (conflict) and 429 (too many requests), or etcd's
/// "request is too large" (which the API server returns as a 500). Such a
/// write is logged and reported once, not retried forever.
pub fn is_permanent(e: &kube::Error) -> bool {
    match e {
        kube::Error::Api(s) => {
            let code = s.code;
            ((400..500).contains(&code) && code != 409 && code != 429)
                || s.message.contains("request is too large")
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(code: u16, message: &str) -> kube::Error {
        kube::Error::Api(
            kube::core::Status::failure(message, "")
                .with_code(code)
                .boxed(),
        )
    }

    #[test]
    fn the_backoff_doubles_from_the_first_pause_to_the_cap() {
        let (first, max) = (Duration::from_secs(1), Duration::from_secs(300));
        let pauses: Vec<u64> = (0..=10)
            .map(|n| doubling(first, max, n).as_secs())
            .collect();
        assert_eq!(pauses, [1, 1, 2, 4, 8, 16, 32, 64, 128, 256, 300]);
        assert_eq!(doubling(first, max, u32::MAX), max);
    }

    #[test]
    fn refusals_are_permanent_and_conflicts_throttling_and_outages_are_not() {
        for code in [400, 403, 404, 413, 422] {
            assert!(is_permanent(&api(code, "no")), "{code}");
        }
        for code in [409, 429, 500, 503, 504] {
            assert!(!is_permanent(&api(code, "busy")), "{code}");
        }
        assert!(is_permanent(&api(500, "etcdserver: request is too large")));
    }
}
