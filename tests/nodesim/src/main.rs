//! `combo-nodesim`: Simulated kubelet for kube-combo's end-to-end tests.

use clap::Parser;

/// Simulated kubelet for kube-combo's end-to-end tests.
#[derive(Parser, Debug)]
#[command(name = "combo-nodesim", version, about)]
struct Args {}

fn main() {
    let _args = Args::parse();
}
