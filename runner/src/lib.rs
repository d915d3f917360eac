//! The inspection runner: discovers the scripts of each category, runs them
//! with a timeout and bounded parallelism, keeps errlogs of what failed, and
//! reports a per-node summary, either printed (`--once`) or written to the
//! Debugger's summary ConfigMap at the `runAt` times.

pub mod checks;
pub mod cli;
pub mod cluster;
pub mod local;
pub mod run;
pub mod shutdown;
#[cfg(test)]
mod testdir;
