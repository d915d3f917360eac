//! Checks the runner performs itself, as subcommands the default scripts
//! call: `combo-runner dns` and `combo-runner probe-socket`.

pub mod dns;
pub mod probe;
