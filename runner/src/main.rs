//! `combo-runner`: Runs node inspection scripts and reports a per-node summary.

use clap::Parser;

/// Runs node inspection scripts and reports a per-node summary.
#[derive(Parser, Debug)]
#[command(name = "combo-runner", version, about)]
struct Args {}

fn main() {
    let _args = Args::parse();
}
