//! Command line of `combo-operator` (docs/reference.md, "`combo-operator`").

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// Default runner image (`--runner-image`).
pub const DEFAULT_RUNNER_IMAGE: &str = "kube-combo/runner:v0.1.0";
/// Default pinger image (`--pinger-image`).
pub const DEFAULT_PINGER_IMAGE: &str = "kube-combo/pinger:v0.1.0";

/// The kube-combo operator: reconciles Debuggers and Pingers into Pods and DaemonSets.
#[derive(Parser, Debug)]
#[command(name = "combo-operator", version)]
pub struct Cli {
    /// What to do; without a subcommand the operator runs.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Options of the running operator.
    #[command(flatten)]
    pub run: RunArgs,
}

/// Subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Print every CustomResourceDefinition (Debugger, Pinger, DebuggerReport) as YAML.
    Crd {
        /// Write one file per CRD into this directory instead of printing.
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

/// Options of the running operator.
#[derive(Parser, Debug, Clone)]
pub struct RunArgs {
    /// Runner image for Debuggers whose spec.image is empty.
    #[arg(long, env = "COMBO_RUNNER_IMAGE", default_value = DEFAULT_RUNNER_IMAGE)]
    pub runner_image: String,
    /// Pinger image for Pingers whose spec.image is empty.
    #[arg(long, env = "COMBO_PINGER_IMAGE", default_value = DEFAULT_PINGER_IMAGE)]
    pub pinger_image: String,
    /// Secrets holding registry credentials, comma-separated, given to the
    /// pods of Debuggers whose spec.imagePullSecrets is empty; each must
    /// exist in the namespace of every such Debugger.
    #[arg(
        long,
        env = "COMBO_IMAGE_PULL_SECRETS",
        value_name = "NAME[,NAME]",
        value_delimiter = ',',
        value_parser = secret_name
    )]
    pub image_pull_secrets: Vec<String>,
    /// Address of /metrics, /healthz and /readyz.
    #[arg(long, default_value = "0.0.0.0:8080")]
    pub metrics_addr: SocketAddr,
    /// Watch only this namespace (default: all namespaces).
    #[arg(long)]
    pub namespace: Option<String>,
    /// Run the controller only while holding the Lease, so that replicas can stand by.
    #[arg(long)]
    pub leader_elect: bool,
    /// Namespace of the leader-election Lease (default: the operator's own namespace).
    #[arg(long, env = "POD_NAMESPACE", default_value = "kube-combo-system")]
    pub leader_elect_namespace: String,
    /// Name of the leader-election Lease.
    #[arg(long, default_value = "kube-combo-operator")]
    pub leader_elect_lease: String,
    /// Never taint nodes, for an install without the right to patch them:
    /// Debuggers that list taints get TaintsDisabled.
    #[arg(long)]
    pub no_taints: bool,
}

/// A Secret name of `--image-pull-secrets`: a DNS-1123 subdomain.
fn secret_name(s: &str) -> Result<String, String> {
    if s.is_empty() {
        return Err("an empty Secret name".into());
    }
    match crate::core::validate::name_problem(s) {
        Some(why) => Err(format!("{s:?} is not a valid Secret name: {why}")),
        None => Ok(s.to_string()),
    }
}

/// Prints a fatal error the way every kube-combo binary does (one line,
/// `<bin>: <chain>`; the full Debug form with its backtrace only when
/// `RUST_BACKTRACE` is set) and gives the exit status 1.
pub fn report(bin: &str, err: &anyhow::Error) -> std::process::ExitCode {
    if combo_api::cli::backtrace_wanted() {
        eprintln!("{bin}: {err:?}");
    } else {
        eprintln!("{}", combo_api::cli::error_line(bin, err.as_ref()));
    }
    std::process::ExitCode::FAILURE
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::Cli;

    #[test]
    fn image_pull_secrets_take_a_comma_separated_list_of_secret_names() {
        let none = Cli::try_parse_from(["combo-operator"]).unwrap();
        assert!(none.run.image_pull_secrets.is_empty());
        let two = Cli::try_parse_from(["combo-operator", "--image-pull-secrets", "regcred,mirror"])
            .unwrap();
        assert_eq!(two.run.image_pull_secrets, ["regcred", "mirror"]);
        let bad = Cli::try_parse_from(["combo-operator", "--image-pull-secrets", "regcred,Bad"])
            .unwrap_err()
            .to_string();
        assert!(
            bad.contains("\"Bad\" is not a valid Secret name: it contains 'B'"),
            "{bad}"
        );
    }
}
