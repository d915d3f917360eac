//! `combo-operator`: The kube-combo operator: reconciles Debuggers and Pingers into Pods and DaemonSets.

use clap::Parser;

/// The kube-combo operator: reconciles Debuggers and Pingers into Pods and DaemonSets.
#[derive(Parser, Debug)]
#[command(name = "combo-operator", version, about)]
struct Args {}

fn main() {
    let _args = Args::parse();
}
