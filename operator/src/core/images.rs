//! The images the operator's workloads run when a Debugger or Pinger names
//! none, from the operator's command line.

/// Images used when a spec names none, and the Secrets to pull them with
/// (the operator's flags).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Images {
    /// `--runner-image`.
    pub runner: String,
    /// `--pinger-image`.
    pub pinger: String,
    /// `--image-pull-secrets`: the pods' `imagePullSecrets` when the
    /// Debugger lists none.
    pub pull_secrets: Vec<String>,
}
