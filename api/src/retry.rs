//! Which API errors retrying cannot fix.

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
