//! `combo-pinger`: Persistent ICMP, TCP, UDP and DNS probing.

use clap::Parser;

/// Persistent ICMP, TCP, UDP and DNS probing.
#[derive(Parser, Debug)]
#[command(name = "combo-pinger", version, about)]
struct Args {}

fn main() {
    let _args = Args::parse();
}
