//! Validate: what the CRD schema cannot check (docs/operator.md, "Validation, status and Events"). Pure.

use combo_api::debugger::MAX_THRESHOLD;
use combo_api::{Debugger, DebuggerSpec, Pinger, RunAt, WorkloadType};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::{Resource, ResourceExt};

use crate::core::images::Images;

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
    /// `enableConfigMap` names a ConfigMap that does not exist: the pods
    /// could not mount the scripts.
    #[error("{0}")]
    ConfigMapNotFound(String),
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
            Invalid::ConfigMapNotFound(_) => "ConfigMapNotFound",
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
            "the API server refused {kind} {name}: {} ({}){}",
            status.message,
            status.code,
            fix_for(&status.message)
        ))
    })
}

/// What to do about a refusal whose message is `message`, to append to
/// it: for Pod Security admission, the namespace's label; else nothing.
/// Pure.
pub fn fix_for(message: &str) -> &'static str {
    if message.contains("violates PodSecurity") {
        "; to let the Debugger's pods in, label its namespace pod-security.kubernetes.io/enforce=privileged, or turn enableSys and hostNetwork off"
    } else {
        ""
    }
}

/// The longest Debugger name: it is the value of the workload's
/// `kubecombo.io/debugger` and `app.kubernetes.io/instance` labels.
pub const NAME_MAX: usize = 63;

/// What a Debugger refers to, as the caches show it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Found<'a> {
    /// The Pinger it names, looked up only when `enablePinger` is set and
    /// `pinger` is not empty.
    pub pinger: Option<&'a Pinger>,
    /// Whether the scripts ConfigMap (`configMap`) exists.
    pub scripts: bool,
}

/// A Debugger whose spec passed validation, with what later steps need
/// worked out once: who it is, when it runs, what it becomes and the
/// images its pods run.
#[derive(Clone, Debug, PartialEq)]
pub struct Valid {
    /// Its name.
    pub name: String,
    /// Its namespace.
    pub namespace: String,
    /// Its uid.
    pub uid: String,
    /// The owner reference every object of it carries.
    pub owner: Option<OwnerReference>,
    /// Its `runAt`.
    pub run_at: RunAt,
    /// What it becomes: a DaemonSet or a Pod.
    pub workload: WorkloadType,
    /// The Pinger it follows, by name, when `enablePinger` names one.
    pub pinger: Option<String>,
    /// The images its pods run and the Secrets to pull them with: its own
    /// (and its Pinger's), else the operator's defaults
    /// (docs/operator.md#private-registries).
    pub images: Images,
}

impl Valid {
    /// `dbg`, valid with `run_at`; `pinger` is the Pinger it uses, if any,
    /// `defaults` the operator's images.
    pub fn of(dbg: &Debugger, run_at: RunAt, pinger: Option<&Pinger>, defaults: &Images) -> Valid {
        let spec = &dbg.spec;
        let or_default =
            |own: &str, default: &str| if own.is_empty() { default } else { own }.to_string();
        let pull_secrets = if spec.image_pull_secrets.is_empty() {
            defaults.pull_secrets.clone()
        } else {
            spec.image_pull_secrets
                .iter()
                .map(|s| s.name.clone())
                .collect()
        };
        Valid {
            name: dbg.name_any(),
            namespace: dbg.namespace().unwrap_or_default(),
            uid: dbg.metadata.uid.clone().unwrap_or_default(),
            owner: dbg.controller_owner_ref(&()),
            run_at,
            workload: spec.workload_type,
            pinger: spec.followed_pinger().map(str::to_string),
            images: Images {
                runner: or_default(&spec.image, &defaults.runner),
                pinger: or_default(
                    pinger.map(|p| p.spec.image.as_str()).unwrap_or_default(),
                    &defaults.pinger,
                ),
                pull_secrets,
            },
        }
    }
}

/// A Debugger that cannot be reconciled: why, and its `runAt` if that
/// parsed (its workload, left untouched, still runs on it).
#[derive(Clone, Debug, PartialEq)]
pub struct Rejected {
    /// Why.
    pub invalid: Invalid,
    /// Its `runAt`, if it parsed.
    pub run_at: Option<RunAt>,
}

/// The outcome of [`validate`], later folded with what the writes found
/// (a name taken, a refused workload).
pub type Verdict = Result<Valid, Rejected>;

impl std::fmt::Display for Rejected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.invalid.fmt(f)
    }
}

impl Rejected {
    /// The condition and Event reason.
    pub fn reason(&self) -> &'static str {
        self.invalid.reason()
    }

    /// `invalid`, for a Debugger whose spec was `valid` until a write said
    /// otherwise.
    pub fn after(valid: Valid, invalid: Invalid) -> Self {
        Rejected {
            invalid,
            run_at: Some(valid.run_at),
        }
    }
}

/// Checks `dbg` against what it refers to: the Debugger made [`Valid`]
/// (with `defaults`, the operator's images), or why not.
pub fn validate(dbg: &Debugger, found: Found, defaults: &Images) -> Verdict {
    let run_at = check(&dbg.name_any(), &dbg.spec, found)?;
    Ok(Valid::of(dbg, run_at, found.pinger, defaults))
}

/// Checks the spec `spec` of the Debugger `name` against what it refers
/// to: its `runAt`, or why it is not valid.
pub fn check(name: &str, spec: &DebuggerSpec, found: Found) -> Result<RunAt, Rejected> {
    let run_at = RunAt::parse(&spec.run_at);
    let reject = |invalid: Invalid| Rejected {
        invalid,
        run_at: run_at.as_ref().ok().cloned(),
    };
    let mut problems = Vec::new();
    if name.len() > NAME_MAX {
        problems.push(format!(
            "the name {name:?} has {} characters; a Debugger's name is a label value of its pods and may have at most {NAME_MAX}",
            name.len()
        ));
    }
    if spec.categories.is_empty() {
        problems.push(
            "categories is empty, so no script would run; name at least one of disk, net, mem, svc, custom, or leave the field out for all"
                .to_string(),
        );
    }
    if spec.enable_config_map && spec.config_map == spec.summary_name(name) {
        problems.push(format!(
            "configMap and summaryConfigMap both name ConfigMap {:?}: the summary would replace the scripts; give the summary another name",
            spec.config_map
        ));
    }
    if spec.workload_type == WorkloadType::Daemonset && !spec.node_name.is_empty() {
        problems.push(format!(
            "nodeName {:?} is only allowed with workloadType pod, and this Debugger's is daemonset; leave nodeName empty or set workloadType: pod",
            spec.node_name
        ));
    }
    if let Some(why) = name_problem(&spec.priority_class_name) {
        problems.push(format!(
            "priorityClassName {:?} is not a PriorityClass name: {why}",
            spec.priority_class_name
        ));
    }
    if spec.enable_pinger && spec.pinger.is_empty() {
        problems.push(
            "enablePinger is true but pinger is empty; name a Pinger of the Debugger's namespace"
                .to_string(),
        );
    }
    if spec.enable_config_map && spec.config_map.is_empty() {
        problems.push(
            "enableConfigMap is true but configMap is empty; name the ConfigMap that holds the scripts"
                .to_string(),
        );
    }
    if spec.enable_config_map && !spec.config_map.is_empty() {
        if let Some(why) = name_problem(&spec.config_map) {
            problems.push(format!(
                "configMap {:?} is not a valid ConfigMap name: {why}",
                spec.config_map
            ));
        }
    }
    if let Some(why) = name_problem(&spec.summary_config_map) {
        problems.push(format!(
            "summaryConfigMap {:?} is not a valid ConfigMap name: {why}",
            spec.summary_config_map
        ));
    }
    for (i, secret) in spec.image_pull_secrets.iter().enumerate() {
        let why = if secret.name.is_empty() {
            Some("it is empty; name a Secret of the Debugger's namespace".to_string())
        } else {
            name_problem(&secret.name)
        };
        if let Some(why) = why {
            problems.push(format!(
                "imagePullSecrets[{i}].name {:?} is not a valid Secret name: {why}",
                secret.name
            ));
        }
    }
    // The schema holds them to the range too; a spec written past it
    // (an older CRD, a client that skips validation) is refused here.
    for (field, runs) in [
        ("failureThreshold", spec.failure_threshold),
        ("successThreshold", spec.success_threshold),
    ] {
        if !(1..=MAX_THRESHOLD).contains(&runs) {
            problems.push(format!(
                "{field} {runs} is out of range: it counts consecutive runs, from 1 to {MAX_THRESHOLD}, the runs a node's history keeps"
            ));
        }
    }
    problems.extend(
        spec.check_settings
            .iter()
            .filter_map(|(name, value)| combo_api::settings::check(name, value)),
    );
    if let Err(e) = &run_at {
        problems.push(e.to_string());
    }
    if !problems.is_empty() {
        return Err(reject(Invalid::InvalidSpec(problems.join("; "))));
    }
    if spec.enable_pinger && found.pinger.is_none() {
        return Err(reject(Invalid::PingerNotFound(format!(
            "pinger {:?}: Pinger not found in the Debugger's namespace",
            spec.pinger
        ))));
    }
    if spec.enable_config_map && !found.scripts {
        return Err(reject(Invalid::ConfigMapNotFound(format!(
            "configMap {:?}: ConfigMap not found in the Debugger's namespace; pods would wait for it",
            spec.config_map
        ))));
    }
    match run_at {
        Ok(run_at) => Ok(run_at),
        Err(_) => unreachable!("an unparsable runAt is a problem above"),
    }
}

/// What keeps a non-empty `s` from being an RFC 1123 subdomain, as
/// Kubernetes requires of ConfigMap and Secret names, in words; `None` when
/// it is one (or is empty: emptiness is checked where it matters).
pub(crate) fn name_problem(s: &str) -> Option<String> {
    const RULE: &str = "lowercase letters, digits, '-' and '.', each part between dots starting and ending with a letter or digit";
    if s.is_empty() {
        return None;
    }
    if s.len() > 253 {
        return Some(format!("it has {} characters, at most 253", s.len()));
    }
    if let Some(c) = s
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-' || *c == '.'))
    {
        return Some(format!("it contains {c:?}; a name has {RULE}"));
    }
    s.split('.')
        .any(|l| l.is_empty() || l.starts_with('-') || l.ends_with('-'))
        .then(|| {
            format!("a part between dots is empty or starts or ends with '-'; a name has {RULE}")
        })
}

#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;
