//! The inspection runner: discovers the scripts of each category, runs them
//! with a timeout and bounded parallelism, keeps errlogs of what failed, and
//! reports a per-node summary, either printed (`--once`) or written to the
//! Debugger's summary ConfigMap at the `runAt` times.

pub mod cli;
pub mod cluster;
pub mod discover;
pub mod dns;
pub mod errlog;
pub mod exec;
pub mod local;
pub mod output;
pub mod probe;
pub mod publish;
pub mod reaper;
pub mod report;
pub mod run;
pub mod runlog;
pub mod schedule;
pub mod scripts_hash;
pub mod shutdown;
pub mod state;
pub mod stdout;
#[cfg(test)]
mod testdir;
pub mod writer;
