//! Persistent ICMP, TCP, UDP and DNS probing, in a Kubernetes pod (following a
//! Pinger) or standalone on any Linux host. The binary is `combo-pinger`.

pub mod cli;
pub mod cluster;
pub mod engine;
pub mod events;
pub mod gateway;
pub mod metrics;
pub mod probe;
pub mod recent;
pub mod round;
pub mod standalone;
pub mod targets;

/// Exit status of the process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitCode {
    /// Every round passed.
    Passed = 0,
    /// Some round failed.
    Failed = 1,
    /// Bad flags or setup.
    Usage = 2,
}

/// Runs the pinger as the command line says; returns the exit status.
pub async fn run(args: cli::Args) -> ExitCode {
    if args.standalone() {
        standalone::run(args).await
    } else if let Some(name) = args.pinger.clone() {
        cluster::run(name).await
    } else {
        eprintln!("combo-pinger: give target flags (--ping, --tcp, --udp, --dns, --gateway) or a Pinger to follow (PINGER_NAME / --pinger); see --help");
        ExitCode::Usage
    }
}
