//! The measurement engine (ARCHITECTURE §6): interleaved runs, statistics, counters.
//!
//! `runner` decides the order of runs and when to stop, `stats` turns times into
//! estimates and verdicts, `counters` reads hardware counters where the machine has them,
//! `export` writes results as JSON, Markdown and CSV. The `cargo optimize bench` command
//! that drives it lives in `crate::commands::bench`. The engine imports only `process`,
//! `spec` and `util` from the crate.

pub mod counters;
pub mod export;
pub mod runner;
pub mod stats;

pub use runner::{
    compare, compare_expecting, compare_jointly, geomean, geomean_log, BenchError, BenchOptions,
    Comparison, ExpectedStatus, Job, Noise, Outliers, Phase, Progress, RunRecord, Side, Sides,
    StopReason,
};
pub use stats::{Estimate, Verdict};
