//! The measurement engine (ARCHITECTURE §6): interleaved runs, statistics, counters.
//!
//! `runner` decides the order of runs and when to stop, `stats` turns times into
//! estimates and verdicts, `counters` reads hardware counters where the machine has them,
//! `export` writes results as JSON, Markdown and CSV. This file holds the
//! `cargo optimize bench` command.

pub mod counters;
pub mod runner;
pub mod stats;

pub use runner::{
    compare, geomean, BenchError, BenchOptions, Comparison, Noise, Outliers, Phase, Progress,
    RunRecord, Side, Sides, StopReason,
};
pub use stats::{Estimate, Verdict};

/// `cargo optimize bench`.
pub fn bench_command(
    _g: &crate::cli::GlobalArgs,
    _args: &crate::cli::BenchArgs,
) -> anyhow::Result<i32> {
    anyhow::bail!("not yet")
}
