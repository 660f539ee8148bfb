//! The source of a comparison's runs: [`TimedRuns`], what runs a side once and tells the
//! time, written as a trait so that the stopping rule can be exercised with simulated run
//! times (`stopping`, `sim`), and [`ProcessSource`], the real one: each run one process of
//! the user's program (`process::run`), its environment padded ([`PAD_VAR`]), its output
//! read and checked, its time or metric taken, its CPU chosen (`bench::pin`).

use std::time::{Duration, Instant};

use super::comparison::{BenchError, Comparison, ExpectedStatus, MetricSummary, RunRecord, Side};
use super::counters::{CounterSet, Counts};
use super::stats;
use crate::process::{self, Command, ExitStatus, Lingering};

/// Name of the environment variable whose random length (0–4095 bytes) shifts the
/// process's stack and environment layout from run to run (Mytkowicz et al., "Producing
/// wrong data without doing anything obviously wrong", ASPLOS 2009).
pub(crate) const PAD_VAR: &str = "CARGO_OPTIMIZE_PAD";

/// Largest padding, exclusive.
pub(super) const PAD_MAX: usize = 4096;

/// A check of one run's whole outcome (its output in memory, or where B's command spools
/// it: [`process::Command::spool`]): `Err` says why it is refused.
pub(crate) type CheckRun<'a> = dyn Fn(&process::Outcome) -> Result<(), String> + 'a;

/// What one run produced.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Observation {
    pub wall: Duration,
    /// The workload's metric as the run printed it (`None`: the run is timed as a whole).
    pub metric: Option<f64>,
    /// What the comparison compares: the metric oriented so lower is better, else the wall
    /// time in seconds.
    pub measure: f64,
    pub user: Duration,
    pub sys: Duration,
    pub max_rss_bytes: u64,
    pub status: ExitStatus,
    pub counters: Option<Counts>,
}

#[cfg(test)]
impl Observation {
    /// A successful run of `wall`, all of it user time: what the engine's simulated sources
    /// return.
    pub(crate) fn of_wall(wall: Duration) -> Self {
        Observation {
            wall,
            metric: None,
            measure: wall.as_secs_f64(),
            user: wall,
            sys: Duration::ZERO,
            max_rss_bytes: 1 << 20,
            status: ExitStatus {
                code: Some(0),
                signal: None,
            },
            counters: None,
        }
    }
}

/// Something that runs a side once and tells the time.
pub(crate) trait TimedRuns {
    fn run(&mut self, side: Side, pad_bytes: usize) -> Result<Observation, BenchError>;
    /// Time since the comparison started.
    fn elapsed(&self) -> Duration;
    /// The pad the latest run had, when the source chose it rather than the `pad_bytes`
    /// asked for (a race's rounds pad each run once for every entrant it serves).
    fn pad_used(&self, asked: usize) -> usize {
        asked
    }
    /// A race's round begins (its runs share a CPU: `bench::pin`).
    fn new_round(&mut self) {}
}

pub(super) struct ProcessSource<'c> {
    a: &'c Command,
    b: &'c Command,
    /// Time spent running this comparison's commands (comparisons run in turn each have
    /// their own clock).
    busy: Duration,
    counters: Option<CounterSet>,
    counters_status: String,
    expected: ExpectedStatus,
    /// The worst seen.
    lingering: Lingering,
    check_b: Option<&'c CheckRun<'c>>,
    /// The figure read from each run's output instead of its wall time.
    metric: Option<&'c crate::spec::Metric>,
    /// The benchmarks a criterion harness's first run measured.
    benchmarks: Vec<String>,
    /// Which CPU each run goes on (a race's sources on one workload share it).
    pinning: std::rc::Rc<std::cell::RefCell<super::pin::Pinning>>,
}

/// Bytes of a metric workload's stdout (its head) and stderr (its tail) searched for the
/// metric.
const METRIC_OUTPUT_KEPT: usize = 4 << 20;

/// Bytes of a timed run's stdout (its head) and stderr (its tail) kept in memory.
const TIMED_OUTPUT_KEPT: usize = 64 << 10;

impl TimedRuns for ProcessSource<'_> {
    fn run(&mut self, side: Side, pad_bytes: usize) -> Result<Observation, BenchError> {
        let mut cmd = match side {
            Side::A => self.a.clone(),
            Side::B => self.b.clone(),
        };
        cmd.env.push((PAD_VAR.into(), "x".repeat(pad_bytes).into()));
        // A timed run's output is read (the program must not block on a full pipe) but not
        // kept beyond what an error message shows — but for the run `check_b` looks at.
        let check = match side {
            Side::B => self.check_b.take(),
            Side::A => None,
        };
        let kept = match self.metric {
            Some(_) => METRIC_OUTPUT_KEPT,
            None => TIMED_OUTPUT_KEPT,
        };
        cmd.keep = check.is_none().then_some(kept);
        if check.is_none() {
            cmd.spool = None; // only the checked run's outputs are written down
        }
        let counting = match &mut self.counters {
            Some(set) => set.start().is_ok(),
            None => false,
        };
        cmd.cpu = self.pinning.borrow_mut().next();
        let started = Instant::now();
        let result = process::run(&cmd);
        self.busy += started.elapsed();
        let counts = match (&mut self.counters, counting) {
            (Some(set), true) => Some(set.stop()),
            _ => None,
        };
        let out = result.map_err(|error| BenchError::Process { side, error })?;
        let cpu_secs = (out.user + out.sys).as_secs_f64();
        (self.pinning.borrow_mut()).observe(cpu_secs, out.wall.as_secs_f64());
        let sticky = [Lingering::Escaped, Lingering::Swept].contains(&self.lingering);
        if out.lingering != Lingering::None && !sticky {
            self.lingering = out.lingering;
        }
        if let Some(check) = check.filter(|_| !out.timed_out) {
            check(&out).map_err(BenchError::Rejected)?;
        }
        if self.expected == ExpectedStatus::SameAsFirstRun && !out.timed_out {
            self.expected = ExpectedStatus::Exactly(out.status);
        }
        let mismatch = self.expected.mismatch(out.status);
        if out.timed_out || mismatch.is_some() {
            let what = if out.timed_out {
                match cmd.timeout {
                    Some(t) => format!("timed out after {}", humantime::format_duration(t)),
                    None => "timed out".into(),
                }
            } else {
                mismatch.unwrap_or_default()
            };
            return Err(BenchError::RunFailed {
                side,
                command: cmd_display(self, side),
                status: out.status,
                timed_out: out.timed_out,
                what,
                stderr_tail: out.stderr_tail(10),
            });
        }
        let (metric, measure) = self.measure(side, &out)?;
        Ok(Observation {
            wall: out.wall,
            metric,
            measure,
            user: out.user,
            sys: out.sys,
            max_rss_bytes: out.max_rss_bytes,
            status: out.status,
            counters: counts,
        })
    }

    fn elapsed(&self) -> Duration {
        self.busy
    }

    fn new_round(&mut self) {
        self.pinning.borrow_mut().new_round();
    }
}

/// The mean of `d` and the half-width of its t interval at `confidence` (infinite below
/// 2 values).
fn t_interval(d: &[f64], confidence: f64) -> (f64, f64) {
    let n = d.len();
    if n < 2 {
        return (stats::mean(d), f64::INFINITY);
    }
    let se = stats::std_dev(d) / (n as f64).sqrt();
    let q = 1.0 - (1.0 - confidence) / 2.0;
    (stats::mean(d), stats::t_quantile(q, (n - 1) as f64) * se)
}

impl ProcessSource<'_> {
    /// A run's figure as the workload's metric reads it from its output (with the value
    /// compared: lower is better), or its wall time.
    fn measure(
        &mut self,
        side: Side,
        out: &process::Outcome,
    ) -> Result<(Option<f64>, f64), BenchError> {
        let Some(m) = self.metric else {
            return Ok((None, out.wall.as_secs_f64()));
        };
        // Its stdout, then its stderr: a program may print its figures on either.
        let v = (m.value_of_run(&out.stdout, &out.stderr)).map_err(|what| BenchError::Metric {
            side,
            command: cmd_display(self, side),
            what,
        })?;
        if m.time_units && self.benchmarks.is_empty() {
            let text = [&out.stdout[..], b"\n", &out.stderr[..]].concat();
            let text = String::from_utf8_lossy(&text);
            self.benchmarks = crate::spec::Metric::criterion_benchmarks(&text);
        }
        Ok((Some(v), m.oriented(v)))
    }
}

/// `ln(wall B / wall A)` of every pair with both runs.
fn wall_log_ratios(samples: &[RunRecord]) -> Vec<f64> {
    let mut pairs: std::collections::BTreeMap<u32, [Option<f64>; 2]> = Default::default();
    for r in samples {
        let i = usize::from(r.side == Side::B);
        pairs.entry(r.pair).or_default()[i] = Some(r.wall_secs);
    }
    (pairs.values())
        .filter_map(|p| Some((p[1]? / p[0]?).ln()))
        .filter(|d| d.is_finite())
        .collect()
}

fn cmd_display(src: &ProcessSource<'_>, side: Side) -> String {
    match side {
        Side::A => src.a.display(),
        Side::B => src.b.display(),
    }
}

impl<'c> ProcessSource<'c> {
    pub(super) fn new(a: &'c Command, b: &'c Command, expected: ExpectedStatus) -> Self {
        let (counters, counters_status) = match CounterSet::open_inherited() {
            Ok(set) => (Some(set), "supported".to_string()),
            Err(why) => (None, why),
        };
        ProcessSource {
            a,
            b,
            busy: Duration::ZERO,
            counters,
            counters_status,
            expected,
            lingering: Lingering::None,
            check_b: None,
            metric: None,
            benchmarks: Vec::new(),
            pinning: std::rc::Rc::new(std::cell::RefCell::new(super::pin::Pinning::here(
                a.pinnable && b.pinnable,
            ))),
        }
    }

    /// Its runs pinned as `pinning` says, shared with the other sources of a race's rounds.
    pub(super) fn pinned_with(
        self,
        pinning: std::rc::Rc<std::cell::RefCell<super::pin::Pinning>>,
    ) -> Self {
        ProcessSource { pinning, ..self }
    }

    /// Each run's figure read from its output by `metric` instead of timing it whole.
    pub(super) fn measuring(self, metric: Option<&'c crate::spec::Metric>) -> Self {
        ProcessSource { metric, ..self }
    }

    /// What the source knows and the comparison reports.
    /// B's first run handed to `check` before its time counts (see [`Pairing::check_b`]).
    ///
    /// [`Pairing::check_b`]: super::Pairing::check_b
    pub(super) fn checking_b(self, check: Option<&'c CheckRun<'c>>) -> Self {
        ProcessSource {
            check_b: check,
            ..self
        }
    }

    pub(super) fn fill_in(&self, c: &mut Comparison) {
        c.counters_status = self.counters_status.clone();
        c.lingering = self.lingering;
        c.pinned = self.pinning.borrow().pinned();
        if let Some(m) = self.metric {
            let median = |side: Side| {
                let v: Vec<f64> = (c.samples.iter())
                    .filter(|r| r.side == side)
                    .filter_map(|r| r.metric)
                    .collect();
                stats::median(&v)
            };
            let d = wall_log_ratios(&c.samples);
            let (mean, half) = t_interval(&d, c.estimate.confidence);
            c.metric = Some(MetricSummary {
                unit: m.unit.clone(),
                better: m.better,
                median_a: median(Side::A),
                median_b: median(Side::B),
                wall_ratio: mean.exp(),
                wall_interval: [(mean - half).exp(), (mean + half).exp()],
                benchmarks: self.benchmarks.clone(),
            });
        }
    }

    /// The worst lingering seen in this source's runs.
    pub(super) fn lingering(&self) -> Lingering {
        self.lingering
    }
}
