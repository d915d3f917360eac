//! `kubectl-combo`: kubectl plugin for kube-combo.

use clap::Parser;

/// kubectl plugin for kube-combo.
#[derive(Parser, Debug)]
#[command(name = "kubectl-combo", version, about)]
struct Args {}

fn main() {
    let _args = Args::parse();
}
