//! Command line of `combo-runner`.

use std::path::PathBuf;

use combo_api::Category;

use crate::run::report::Format;

/// Runs the node inspection scripts and reports a per-node summary.
///
/// Without `--once` it runs inside a workload pod: it follows its Debugger
/// (env DEBUGGER_NAME, POD_NAMESPACE, POD_NAME, NODE_NAME) and writes this
/// node's DebuggerReport, which the operator gathers into the summary.
#[derive(clap::Parser, Debug, Clone)]
#[command(name = "combo-runner", version)]
pub struct Args {
    /// A check for scripts to call (`"$COMBO_RUNNER" dns ...`) instead of a
    /// run.
    #[command(subcommand)]
    pub command: Option<Command>,

    /// Run the inspection once on this machine, print the result and exit
    /// (0 all healthy, 1 some item failed, 2 usage or setup error).
    #[arg(long)]
    pub once: bool,

    /// Root of the scripts: one directory per category.
    #[arg(long, value_name = "DIR", default_value = "/scripts")]
    pub scripts: PathBuf,

    /// Categories to run, comma separated (local mode; in a pod the Debugger's
    /// `categories` apply).
    #[arg(long, value_delimiter = ',', value_parser = parse_category, value_name = "LIST",
          default_value = "disk,net,mem,svc,custom")]
    pub categories: Vec<Category>,

    /// Time limit of one script in seconds (local mode; in a pod the
    /// Debugger's `scriptTimeoutSeconds` applies).
    #[arg(long, value_name = "SECONDS", default_value_t = 60,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub timeout: u64,

    /// Output format of local mode.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub output: Format,

    /// Local mode: write errlogs to `<DIR>/<category>/<run id>.log` instead of
    /// the `errlog/` directories under `--scripts`.
    #[arg(long, value_name = "DIR")]
    pub errlog_dir: Option<PathBuf>,

    /// Local mode: errlog files kept per category (in a pod the Debugger's
    /// `errlogRetention` applies).
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub errlog_retention: usize,

    /// Where the node's root filesystem is, given to scripts as HOST_ROOT
    /// (the operator sets `/host` when the Debugger has enableSys).
    #[arg(long, env = "HOST_ROOT", value_name = "DIR", default_value = "/")]
    pub host_root: String,

    /// Root of the scripts' state directories, kept across runs (default in
    /// a pod /var/lib/combo-runner/state; locally the same as root, else
    /// $XDG_STATE_HOME/combo-runner).
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,

    /// In a pod: the Debugger's directory on the node (the operator sets it
    /// with enableSys), holding one directory per Debugger uid; once the
    /// Debugger is seen with the uid in DEBUGGER_UID, the others, left by
    /// an earlier Debugger of the same name, are removed.
    #[arg(long, env = "COMBO_NODE_DATA", value_name = "DIR")]
    pub node_data: Option<PathBuf>,

    /// In a pod: the uid of the Debugger whose directory under
    /// `--node-data` this runner keeps.
    #[arg(long, env = "DEBUGGER_UID", value_name = "UID")]
    pub debugger_uid: Option<String>,

    /// Most scripts running at the same time.
    #[arg(long, value_name = "N", default_value_t = 8,
          value_parser = clap::value_parser!(u64).range(1..=256))]
    pub parallel: u64,
}

/// The runner's subcommands.
#[derive(clap::Subcommand, Debug, Clone)]
pub enum Command {
    /// Ask DNS resolvers for names over UDP and TCP and print one
    /// script-contract line per resolver and transport.
    Dns(crate::checks::dns::DnsArgs),
    /// Connect to a unix socket: exit 0 when a daemon accepts, else print
    /// why (a stale socket is refused) and exit 1.
    ProbeSocket(crate::checks::probe::ProbeSocketArgs),
}

fn parse_category(s: &str) -> Result<Category, String> {
    s.trim().parse()
}
