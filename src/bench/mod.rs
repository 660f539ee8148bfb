//! The measurement engine (model: docs/src/measuring.md): interleaved runs, statistics, counters.
//!
//! `comparison` holds the options and the comparison's types, `source` the source of runs
//! (the trait and the process one), `drive` decides the order of one comparison's runs and
//! when to stop (exercised on simulated runs: `stopping`, `sim`), `joint` advances a candidate pair's
//! workloads together, and races several candidates against one shared rival's runs,
//! `pin` puts both runs of a pair on one CPU, `stats` turns times into estimates and verdicts, `kept` checks a comparison read back against its own samples, `drift` checks a fixed design's interval against its batches, `counters` reads hardware counters where the machine has them,
//! `export` writes results as JSON, Markdown and CSV. The `cargo optimize bench` command
//! that drives it lives in `crate::commands::bench`. The engine imports only `process`,
//! `spec`, `sys` and `util` from the crate.

pub(crate) mod comparison;
pub(crate) mod counters;
mod drift;
mod drive;
pub(crate) mod export;
mod joint;
pub(crate) mod kept;
mod pin;
#[cfg(test)]
mod sim;
mod source;
pub(crate) mod stats;
#[cfg(test)]
mod stopping;

pub(crate) use comparison::{
    geomean, geomean_log, ExpectedStatus, Phase, Progress, RunRecord, StopReason,
};
pub use comparison::{BenchError, BenchOptions, Comparison, Side};
pub use drive::compare;
pub(crate) use drive::compare_measuring;
pub(crate) use joint::GroupResult;
pub(crate) use joint::{compare_jointly, race_jointly, Pairing};
pub(crate) use source::CheckRun;
pub use stats::{Estimate, Verdict};
