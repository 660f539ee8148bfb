//! What a comparison is and how it is asked for: the options ([`BenchOptions`]), the sides,
//! the errors, the progress a caller sees, and the result ([`Comparison`]: its run records,
//! estimate, verdict, noise and metric summaries), with the geometric mean over several.
//! The runs themselves come from `source`, their order and when to stop from `drive` (one
//! comparison) and `joint` (the workloads of a candidate pair together).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::counters::{CounterSummary, Counts};
use super::stats::{self, Estimate, Summary};
use crate::process::{self, ExitStatus, Lingering};

/// How to compare.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchOptions {
    /// Warm-up runs of each side before measuring.
    pub warmup: u32,
    /// Pairs collected before the first look at the data.
    pub min_pairs: u32,
    /// Upper bound on pairs.
    pub max_pairs: u32,
    /// Upper bound on the time of one comparison, warm-up included, checked between runs:
    /// a comparison stops at the end of the first ABBA block (two pairs) that ends after
    /// it, even short of `min_pairs` (then [`Comparison::stop_note`] says so).
    #[serde(with = "secs")]
    pub max_time: Duration,
    /// Equivalence margin (0.01 = 1 %).
    #[serde(deserialize_with = "crate::util::lenient_f64::one")]
    pub margin: f64,
    /// Seeds the run order, the padding and the bootstrap.
    pub seed: u64,
    /// The caller only needs to know whether B is *faster* (a ladder's keep rule): stop as
    /// soon as the interval lies wholly above `1 − margin`, where "faster" cannot be reached
    /// any more at the look's confidence (non-binding futility: it only ever ends a
    /// comparison that would not have been called faster, so no error rate grows).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub only_faster: bool,
    /// Pairs a workload runs even past `max_time` (0: none): the ladder's comparison that
    /// decides what ships gets its first look whole when the run's budget pays for it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pairs_past_max_time: u32,
    /// How a look estimates the ratio (`stats::Estimator`: the pairs' trimmed mean by
    /// default; a comparison recorded before the field existed used the mean).
    #[serde(
        default = "stats::Estimator::before_trimming",
        skip_serializing_if = "stats::Estimator::is_mean"
    )]
    pub estimator: stats::Estimator,
    /// A fixed design: `max_pairs` pairs per workload, fixed before they run, the workloads
    /// of a joint comparison taking turns one ABBA block at a time, and one look at the end
    /// of each, so no verdict stops one early and each one's pairs spread over the whole
    /// comparison's time (`joint::drive_in_turns`; the confirmation of what ships).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub in_turns: bool,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

mod secs {
    pub(crate) fn serialize<S: serde::Serializer>(
        d: &std::time::Duration,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }

    pub(crate) fn deserialize<'de, D: serde::Deserializer<'de>>(
        d: D,
    ) -> Result<std::time::Duration, D::Error> {
        let secs = <f64 as serde::Deserialize>::deserialize(d)?;
        std::time::Duration::try_from_secs_f64(secs).map_err(serde::de::Error::custom)
    }
}

/// Pairs before a workload's first look when the spec does not set `min-runs` (rounded up
/// to whole ABBA blocks: 6).
pub(crate) const DEFAULT_MIN_PAIRS: u32 = 5;

/// The same for a ladder's keep-or-drop comparison ([`BenchOptions::for_ladder`]): its
/// question is answered by the geometric mean over every workload, whose first joint look
/// already has 4 pairs per workload. In seeded simulation
/// (`stopping::ladder_first_looks_at_four_pairs`) 4 pairs answer clear questions and
/// ties sooner than 6, for somewhat less power for small speedups. A plain comparison keeps
/// 6: there an A-vs-A run has to settle as *equivalent*, which 4 makes slower.
/// Figures: docs/src/decisions.md, "A ladder's first look is at 4 pairs".
pub(crate) const LADDER_MIN_PAIRS: u32 = 4;

/// Overall error budget: the reported intervals are (at least) 95 % intervals.
pub(crate) const ALPHA: f64 = 0.05;

/// The spec's `[bench]` defaults, so that `bench` without a spec measures as with one.
impl Default for BenchOptions {
    fn default() -> Self {
        let cfg = crate::spec::BenchConfig::default();
        BenchOptions {
            warmup: cfg.warmup,
            min_pairs: cfg.min_runs.unwrap_or(DEFAULT_MIN_PAIRS),
            max_pairs: 5000,
            max_time: cfg.max_time,
            margin: cfg.margin,
            seed: fastrand::u64(..),
            only_faster: false,
            pairs_past_max_time: 0,
            estimator: stats::Estimator::default(),
            in_turns: false,
        }
    }
}

impl BenchOptions {
    /// Options from the spec's `[bench]` table; the seed is fresh (recorded in the result).
    /// Without `min-runs`, a workload's first look comes after [`DEFAULT_MIN_PAIRS`] pairs.
    pub fn from_config(cfg: &crate::spec::BenchConfig) -> Self {
        BenchOptions {
            warmup: cfg.warmup,
            min_pairs: cfg.min_runs.unwrap_or(DEFAULT_MIN_PAIRS).max(2),
            max_time: cfg.max_time,
            margin: cfg.margin.max(0.0),
            ..BenchOptions::default()
        }
    }

    /// [`from_config`](Self::from_config) for a keep-or-drop question (`only_faster`): without
    /// `min-runs`, each workload first looks after [`LADDER_MIN_PAIRS`].
    pub fn for_ladder(cfg: &crate::spec::BenchConfig) -> Self {
        BenchOptions {
            only_faster: true,
            min_pairs: cfg.min_runs.unwrap_or(LADDER_MIN_PAIRS).max(2),
            ..BenchOptions::from_config(cfg)
        }
    }
}

/// Which side of a comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Side {
    A,
    B,
}

impl std::fmt::Display for Side {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Side::A => "A",
            Side::B => "B",
        })
    }
}

/// Which exit status makes a run count as a success (a timed-out run never does).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum ExpectedStatus {
    /// Exit code 0.
    #[default]
    Success,
    /// Exactly this status: a workload whose exit status is its result (`expect =
    /// "exit-code"`) is held to the baseline's.
    Exactly(ExitStatus),
    /// Whatever the first run gives; every later run of either side must match it.
    SameAsFirstRun,
    /// Any status (a workload whose baseline exits differently from run to run).
    Any,
}

impl ExpectedStatus {
    /// Why `status` is not the expected one, or `None` when it is.
    pub(super) fn mismatch(&self, status: ExitStatus) -> Option<String> {
        match self {
            ExpectedStatus::Success if !status.success() => Some(status.to_string()),
            ExpectedStatus::Exactly(want) if *want != status => {
                Some(format!("{status}, expected {want}"))
            }
            _ => None,
        }
    }
}

/// A run that did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("{side} failed ({what}): `{command}`{}", tail_block(.stderr_tail))]
    RunFailed {
        side: Side,
        command: String,
        status: ExitStatus,
        timed_out: bool,
        /// "exit code 3", "killed by signal 9", "timed out after 10s".
        what: String,
        stderr_tail: String,
    },
    #[error("cannot run {side}: {error}")]
    Process {
        side: Side,
        error: process::ProcessError,
    },
    /// B's first run did not pass [`Pairing::check_b`].
    #[error("B's first run was rejected: {0}")]
    Rejected(String),
    /// A run's output gave no figure for the workload's `metric`.
    #[error("{side}'s run printed no usable metric: {what}\n  command: `{command}`\n  fix: make the regex match what the program prints (one capture group around the number), or remove `metric` to time the whole run")]
    Metric {
        side: Side,
        command: String,
        what: String,
    },
}

fn tail_block(tail: &str) -> String {
    if tail.trim().is_empty() {
        String::new()
    } else {
        format!(
            "\n  stderr (last lines):\n{}",
            crate::util::indent(tail, "    ")
        )
    }
}

/// Where a comparison is.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    pub phase: Phase,
    /// Measured pairs so far.
    pub pairs: u32,
    /// The most pairs the schedule will collect (known once planned).
    pub planned_pairs: Option<u32>,
    pub elapsed: Duration,
    pub max_time: Duration,
    /// The running estimate (at the corrected confidence; no bootstrap) once `pairs ≥ 2`.
    pub estimate: Option<Estimate>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Warmup {
        done: u32,
        total: u32,
    },
    Measuring,
    /// A look was just taken (the `look`-th, from 1): `estimate` is its own, at the
    /// confidence that look spends.
    Look {
        look: u32,
    },
}

/// Why the measurement stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StopReason {
    /// A look reached a verdict other than inconclusive.
    Decided,
    /// The last scheduled look (the pair cap).
    MaxPairs,
    /// `max_time` was spent.
    MaxTime,
    /// With `only_faster`: the interval showed that *faster* could not be reached.
    Futile,
    /// Stopped with the other workloads of a joint comparison: their geometric mean was
    /// *faster* (see `compare_jointly`).
    TogetherDecided,
    /// Stopped with the other workloads: their geometric mean could no longer be faster.
    TogetherFutile,
}

/// One measured run (warm-up runs are not recorded).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Pair index (0-based); each pair holds one A run and one B run.
    pub pair: u32,
    pub side: Side,
    /// Position in execution order among measured runs.
    pub seq: u32,
    #[serde(deserialize_with = "crate::util::lenient_f64::one")]
    pub wall_secs: f64,
    #[serde(deserialize_with = "crate::util::lenient_f64::one")]
    pub user_secs: f64,
    #[serde(deserialize_with = "crate::util::lenient_f64::one")]
    pub sys_secs: f64,
    pub max_rss_bytes: u64,
    pub status: ExitStatus,
    pub pad_bytes: usize,
    /// The pair's log-ratio was flagged as an outlier (kept in the statistics).
    pub outlier: bool,
    pub counters: Option<Counts>,
    /// The workload's metric as the run printed it (a metric comparison's runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric: Option<f64>,
}

/// Both sides of something.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sides<T> {
    pub a: T,
    pub b: T,
}

/// `Sides<f64>` whose sides may be NaN or infinite (written as `null`).
fn lenient_sides<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Sides<f64>, D::Error> {
    let s = Sides::<Option<f64>>::deserialize(d)?;
    Ok(Sides {
        a: s.a.unwrap_or(f64::NAN),
        b: s.b.unwrap_or(f64::NAN),
    })
}

/// Outliers by the MAD rule, flagged and kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outliers {
    /// Pairs whose log-ratio is an outlier.
    pub pairs: u32,
    /// Runs of A / B whose wall time is an outlier among that side's runs.
    pub a: u32,
    pub b: u32,
    /// Indices of the outlier pairs.
    pub pair_indices: Vec<u32>,
}

/// How trustworthy the machine looked during the comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Noise {
    /// Median (user + sys) / wall of each side: about 1 for a single-threaded CPU-bound
    /// program on a quiet machine; well below when it waits (I/O, or for a busy CPU).
    #[serde(deserialize_with = "lenient_sides")]
    pub cpu_wall: Sides<f64>,
    /// Coefficient of variation of the wall time of each side.
    #[serde(deserialize_with = "lenient_sides")]
    pub cv: Sides<f64>,
    /// Standard deviation of the per-pair log-ratios (≈ relative spread of B/A).
    #[serde(deserialize_with = "crate::util::lenient_f64::one")]
    pub spread: f64,
    #[serde(deserialize_with = "crate::util::lenient_f64::one")]
    pub outlier_fraction: f64,
    pub warning: Option<String>,
}

/// Above this CV of wall times the machine is called noisy.
pub(crate) const NOISY_CV: f64 = 0.10;

/// The result of comparing B against A.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Comparison {
    /// B/A of wall time, `exp` of the `estimator`'s estimate of `ln(t_B/t_A)` (below 1 is
    /// faster), its interval at the stopping look's confidence, `1 − α_k` (see
    /// `stats::LookSchedule`), and the verdict; flattened, so report.json's fields stay
    /// where they were.
    #[serde(flatten)]
    pub estimate: Estimate,
    /// How `estimate` was made (absent: the mean, as before the field existed).
    #[serde(
        default = "stats::Estimator::before_trimming",
        skip_serializing_if = "stats::Estimator::is_mean"
    )]
    pub estimator: stats::Estimator,
    #[serde(deserialize_with = "crate::util::lenient_f64::one")]
    pub margin: f64,
    /// Measured pairs.
    pub n: u32,
    /// Looks taken and planned (see `stats::LookSchedule`).
    pub looks: u32,
    pub planned_looks: u32,
    pub stop: StopReason,
    /// The statistics of `ln(t_B/t_A)` behind `estimate` (the mean's: se widened to the
    /// reported interval; the trimmed mean's: Yuen's se and degrees of freedom).
    pub log: stats::LogEstimate,
    #[serde(deserialize_with = "crate::util::lenient_f64::pair")]
    pub t_interval: [f64; 2],
    #[serde(deserialize_with = "crate::util::lenient_f64::opt_pair")]
    pub bootstrap_interval: Option<[f64; 2]>,
    /// `exp(median ln(t_B/t_A))` and its distribution-free interval (the robustness check).
    #[serde(deserialize_with = "crate::util::lenient_f64::one")]
    pub median_ratio: f64,
    #[serde(deserialize_with = "crate::util::lenient_f64::pair")]
    pub median_interval: [f64; 2],
    /// The median contradicted the mean's verdict, so the verdict was withheld.
    pub median_disagrees: bool,
    #[serde(deserialize_with = "crate::util::lenient_f64::one")]
    pub cv_a: f64,
    #[serde(deserialize_with = "crate::util::lenient_f64::one")]
    pub cv_b: f64,
    pub outliers: Outliers,
    #[serde(deserialize_with = "crate::util::lenient_f64::one")]
    pub median_a_secs: f64,
    #[serde(deserialize_with = "crate::util::lenient_f64::one")]
    pub median_b_secs: f64,
    pub wall: Sides<Summary>,
    pub user: Sides<Summary>,
    pub sys: Sides<Summary>,
    /// Peak RSS in bytes.
    pub rss: Sides<Summary>,
    pub noise: Noise,
    pub noise_warning: Option<String>,
    /// Hardware counter medians, when the machine has counters.
    pub counters: Option<CounterSummary>,
    /// "supported", or why counters are not available.
    pub counters_status: String,
    /// Wall time of the whole comparison, warm-up included.
    #[serde(deserialize_with = "crate::util::lenient_f64::one")]
    pub elapsed_secs: f64,
    pub seed: u64,
    /// Every measured run, in execution order.
    pub samples: Vec<RunRecord>,
    /// Runs left processes behind that kept their output open (the worst case seen).
    #[serde(default, skip_serializing_if = "Lingering::is_none")]
    pub lingering: Lingering,
    /// Both runs of each pair ran on one CPU, a block per allowed CPU in turn (`bench::pin`):
    /// the workload kept one core busy at a time.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pinned: bool,
    /// Why the comparison has fewer pairs than asked for (`max_time` came first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_note: Option<String>,
    /// A fixed design's (the confirmation's) ratio in each of its consecutive batches of
    /// pairs, in time order, when their spread set the interval: the ratio drifted while it
    /// was measured (`bench::drift`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift: Option<Vec<f64>>,
    /// The workload's metric, when the comparison compared it instead of wall time: the
    /// ratio above is then of the metric (a higher-is-better one inverted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric: Option<MetricSummary>,
}

/// What a metric comparison compared (see [`Comparison::metric`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricSummary {
    pub unit: String,
    pub better: crate::spec::Better,
    /// The median figure of each side, as the program printed it.
    #[serde(deserialize_with = "crate::util::lenient_f64::one")]
    pub median_a: f64,
    #[serde(deserialize_with = "crate::util::lenient_f64::one")]
    pub median_b: f64,
    /// The same pairs' wall times: B/A (the geometric mean of the pairs' ratios) and its
    /// t interval at the metric estimate's confidence, shown beside the metric's.
    #[serde(deserialize_with = "crate::util::lenient_f64::one")]
    pub wall_ratio: f64,
    #[serde(deserialize_with = "crate::util::lenient_f64::pair")]
    pub wall_interval: [f64; 2],
    /// A criterion harness's benchmarks, as its first run named them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub benchmarks: Vec<String>,
}

impl MetricSummary {
    /// `A 412 tokens/s → B 455 tokens/s`-style figures: `412 tokens/s`.
    pub fn show(&self, value: f64) -> String {
        let unit = match self.unit.is_empty() {
            true => String::new(),
            false => format!(" {}", self.unit),
        };
        format!("{}{unit}", crate::util::format_number(value))
    }
}

impl Comparison {
    /// `time ratio 0.934 [0.912, 0.951] faster (n=24)`; a metric comparison's `metric
    /// ratio … (n=24; wall 0.981 [0.95, 1.02])`.
    pub fn headline(&self) -> String {
        match &self.metric {
            None => format!("{} (n={})", self.estimate, self.n),
            Some(m) => format!(
                "{} (n={}; wall {:.3} [{:.3}, {:.3}])",
                self.estimate
                    .to_string()
                    .replacen("time ratio", "metric ratio", 1),
                self.n,
                m.wall_ratio,
                m.wall_interval[0],
                m.wall_interval[1]
            ),
        }
    }

    /// Each side's median as shown: the metric's figure with its unit, else the time.
    pub fn medians(&self) -> (String, String) {
        match &self.metric {
            Some(m) => (m.show(m.median_a), m.show(m.median_b)),
            None => (
                crate::util::format_secs(self.median_a_secs),
                crate::util::format_secs(self.median_b_secs),
            ),
        }
    }

    /// Side A's median wall time in seconds (what a run costs, metric or not).
    pub fn wall_secs_a(&self) -> f64 {
        match self.metric {
            Some(_) => self.wall.a.median,
            None => self.median_a_secs,
        }
    }
}

/// Geometric mean of the ratios of several comparisons (e.g. one per workload), with
/// its interval: the per-workload log-estimates are averaged and their standard errors
/// combined (`stats::geomean_of`). The interval is at the strictest confidence level of
/// the inputs, so it is never less corrected than they are.
pub(crate) fn geomean(comparisons: &[Comparison], margin: f64) -> Estimate {
    let (log, confidence) = geomean_log(comparisons);
    if comparisons.is_empty() {
        return stats::geomean_of(&[], confidence, margin);
    }
    Estimate::from_log(&log, confidence, margin)
}

/// The log estimate of the geometric mean of several comparisons, and the confidence level
/// its interval is reported at (the strictest of theirs).
pub(crate) fn geomean_log(comparisons: &[Comparison]) -> (stats::LogEstimate, f64) {
    let logs: Vec<stats::LogEstimate> = comparisons.iter().map(|c| c.log).collect();
    let confidence = comparisons
        .iter()
        .map(|c| c.estimate.confidence)
        .fold(1.0 - ALPHA, f64::max);
    (stats::geomean_log(&logs), confidence)
}
