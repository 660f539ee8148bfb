//! The measurement engine (model: docs/src/measuring.md): interleaved runs, statistics, counters.
//!
//! `runner` holds the options, the comparison and the source of runs, `drive` decides the
//! order of one comparison's runs and when to stop, `joint` advances a candidate pair's
//! workloads together, `race` measures several candidates against one shared rival's runs,
//! `pin` puts both runs of a pair on one CPU, `stats` turns times into estimates and verdicts, `kept` checks a comparison read back against its own samples, `drift` checks a fixed design's interval against its batches, `counters` reads hardware counters where the machine has them,
//! `export` writes results as JSON, Markdown and CSV. The `cargo optimize bench` command
//! that drives it lives in `crate::commands::bench`. The engine imports only `process`,
//! `spec`, `sys` and `util` from the crate.

pub(crate) mod counters;
mod drift;
mod drive;
pub(crate) mod export;
mod joint;
pub(crate) mod kept;
mod pin;
mod race;
pub(crate) mod runner;
#[cfg(test)]
mod sim;
mod source;
pub(crate) mod stats;

pub use drive::compare;
pub(crate) use drive::compare_measuring;
pub(crate) use joint::GroupResult;
pub(crate) use joint::{compare_jointly, Pairing};
pub(crate) use race::race_jointly;
pub(crate) use runner::{
    geomean, geomean_log, ExpectedStatus, Phase, Progress, RunRecord, StopReason,
};
pub use runner::{BenchError, BenchOptions, Comparison, Side};
pub use stats::{Estimate, Verdict};
