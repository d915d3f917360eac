//! Validate: what the CRD schema cannot check (docs/operator.md, "Validation, status and Events"). Pure.

use combo_api::{DebuggerSpec, Pinger, RunAt, WorkloadType};

/// Why a Debugger cannot be reconciled. An invalid spec waits for a spec
/// change; a refused workload is retried with backoff.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Invalid {
    /// The spec contradicts itself or holds an unparsable value.
    #[error("{0}")]
    InvalidSpec(String),
    /// `enablePinger` names a Pinger that does not exist.
    #[error("{0}")]
    PingerNotFound(String),
    /// The API server, or an admission policy or quota behind it, refused
    /// to write the workload or its RBAC; the message is the API server's.
    #[error("{0}")]
    WorkloadRefused(String),
}

impl Invalid {
    /// The condition and Event reason (docs/reference.md, "Debugger" and "Events").
    pub fn reason(&self) -> &'static str {
        match self {
            Invalid::InvalidSpec(_) => "InvalidSpec",
            Invalid::PingerNotFound(_) => "PingerNotFound",
            Invalid::WorkloadRefused(_) => "WorkloadRefused",
        }
    }
}

/// Whether a failed write of `kind` `name` is reported on the Debugger as
/// `WorkloadRefused`, after `failures` consecutive failed reconciles
/// before this one (docs/operator.md, "Refused workloads"): an answer
/// that the same request gets again (a 4xx other than 409 and 429) at
/// once; any other answer of the API server (a 5xx, such as a missing
/// ServiceAccount token) once it has failed a retry too. Conflicts,
/// throttling on the first try and unanswered requests are not reported:
/// they are retried. Pure.
pub fn refusal(kind: &str, name: &str, source: &kube::Error, failures: u32) -> Option<Invalid> {
    let kube::Error::Api(status) = source else {
        return None;
    };
    let persistent = combo_api::retry::is_permanent(source)
        || (status.code != 409 && status.code != 429 && failures >= 1);
    persistent.then(|| {
        Invalid::WorkloadRefused(format!(
            "the API server refused {kind} {name}: {} ({})",
            status.message, status.code
        ))
    })
}

/// Checks `spec`. `pinger` is the Pinger it names, looked up only when
/// `enablePinger` is set and `pinger` is not empty.
pub fn validate(spec: &DebuggerSpec, pinger: Option<&Pinger>) -> Result<(), Invalid> {
    let mut problems = Vec::new();
    if spec.workload_type == WorkloadType::Daemonset && !spec.node_name.is_empty() {
        problems.push("nodeName is only allowed with workloadType pod".to_string());
    }
    if spec.enable_pinger && spec.pinger.is_empty() {
        problems.push("enablePinger needs the name of a Pinger in pinger".to_string());
    }
    if spec.enable_config_map && spec.config_map.is_empty() {
        problems.push("enableConfigMap needs the name of a ConfigMap in configMap".to_string());
    }
    if spec.enable_config_map && !spec.config_map.is_empty() && !is_dns_subdomain(&spec.config_map)
    {
        problems.push(format!(
            "configMap {:?} is not a valid name",
            spec.config_map
        ));
    }
    if !spec.summary_config_map.is_empty() && !is_dns_subdomain(&spec.summary_config_map) {
        problems.push(format!(
            "summaryConfigMap {:?} is not a valid name",
            spec.summary_config_map
        ));
    }
    if let Err(e) = RunAt::parse(&spec.run_at) {
        problems.push(e.to_string());
    }
    if !problems.is_empty() {
        return Err(Invalid::InvalidSpec(problems.join("; ")));
    }
    if spec.enable_pinger && pinger.is_none() {
        return Err(Invalid::PingerNotFound(format!(
            "Pinger {:?} not found in the Debugger's namespace",
            spec.pinger
        )));
    }
    Ok(())
}

/// RFC 1123 subdomain, as Kubernetes requires of ConfigMap names.
fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253
        && s.split('.').all(|l| {
            !l.is_empty()
                && l.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use combo_api::PingerSpec;

    fn mesh() -> Pinger {
        Pinger::new("mesh", PingerSpec::default())
    }

    #[test]
    fn default_spec_is_valid() {
        assert_eq!(validate(&DebuggerSpec::default(), None), Ok(()));
    }

    #[test]
    fn node_name_with_daemonset_is_invalid_spec() {
        let spec = DebuggerSpec {
            node_name: "node-1".into(),
            ..DebuggerSpec::default()
        };
        let err = validate(&spec, None).unwrap_err();
        assert_eq!(err.reason(), "InvalidSpec");
        assert!(err.to_string().contains("nodeName"));
        let pod = DebuggerSpec {
            workload_type: WorkloadType::Pod,
            ..spec
        };
        assert_eq!(validate(&pod, None), Ok(()));
    }

    #[test]
    fn bad_cron_and_bad_timestamp_are_invalid_spec() {
        for run_at in ["61 * * * *", "2026-13-01T00:00:00Z", "whenever"] {
            let spec = DebuggerSpec {
                run_at: run_at.into(),
                ..DebuggerSpec::default()
            };
            let err = validate(&spec, None).unwrap_err();
            assert_eq!(err.reason(), "InvalidSpec", "{run_at}");
            assert!(err.to_string().contains("runAt"), "{err}");
        }
        for run_at in ["0 */6 * * *", "@daily", "2026-11-22T06:00:00Z"] {
            let spec = DebuggerSpec {
                run_at: run_at.into(),
                ..DebuggerSpec::default()
            };
            assert_eq!(validate(&spec, None), Ok(()), "{run_at}");
        }
    }

    #[test]
    fn missing_pinger_is_pinger_not_found_and_found_pinger_is_valid() {
        let spec = DebuggerSpec {
            enable_pinger: true,
            pinger: "mesh".into(),
            ..DebuggerSpec::default()
        };
        let err = validate(&spec, None).unwrap_err();
        assert_eq!(err.reason(), "PingerNotFound");
        assert!(err.to_string().contains("mesh"));
        assert_eq!(validate(&spec, Some(&mesh())), Ok(()));
    }

    #[test]
    fn enabled_features_need_their_names() {
        let spec = DebuggerSpec {
            enable_pinger: true,
            enable_config_map: true,
            ..DebuggerSpec::default()
        };
        let msg = validate(&spec, None).unwrap_err().to_string();
        assert!(
            msg.contains("enablePinger") && msg.contains("enableConfigMap"),
            "{msg}"
        );
    }

    fn answer(code: u16, message: &str) -> kube::Error {
        kube::Error::Api(
            kube::core::Status::failure(message, "")
                .with_code(code)
                .boxed(),
        )
    }

    #[test]
    fn a_refused_workload_is_reported_at_once_and_an_outage_once_it_persists() {
        let quota = answer(403, "exceeded quota: q");
        let refused = refusal("DaemonSet", "check", &quota, 0).expect("reported at once");
        assert_eq!(refused.reason(), "WorkloadRefused");
        let msg = refused.to_string();
        assert!(
            msg.contains("DaemonSet check")
                && msg.contains("exceeded quota: q")
                && msg.contains("403"),
            "{msg}"
        );
        let token = answer(500, "No API token found for service account");
        assert_eq!(
            refusal("Pod", "p", &token, 0),
            None,
            "a first 500 is retried"
        );
        assert!(
            refusal("Pod", "p", &token, 1).is_some(),
            "a second one is reported"
        );
        for busy in [409, 429] {
            assert_eq!(
                refusal("Pod", "p", &answer(busy, "busy"), 5),
                None,
                "{busy}"
            );
        }
        let unanswered = kube::Error::Service("connection refused".into());
        assert_eq!(refusal("Pod", "p", &unanswered, 5), None);
    }

    #[test]
    fn config_map_names_must_be_valid_kubernetes_names() {
        let spec = DebuggerSpec {
            summary_config_map: "Bad_Name".into(),
            ..DebuggerSpec::default()
        };
        assert_eq!(validate(&spec, None).unwrap_err().reason(), "InvalidSpec");
        assert!(is_dns_subdomain("my-scripts.v1"));
        assert!(!is_dns_subdomain("-x"));
    }
}
