//! The single-comparison driver: a warm-up, then randomized ABBA/BAAB blocks run look by
//! look ([`Drive`]) — when to look, when to stop (decided, futile, the pair cap, `max_time`)
//! — and assembling a [`Comparison`] from the runs (statistics by `stats`, noise warnings).

use std::time::Duration;

use super::comparison::{
    BenchError, BenchOptions, Comparison, ExpectedStatus, Noise, Outliers, Phase, Progress,
    RunRecord, Side, Sides, StopReason, ALPHA, NOISY_CV,
};
use super::counters::{self, Counts};
use super::source::ProcessSource;
use super::source::{TimedRuns, PAD_MAX};
use super::stats::{self, Estimate, LookSchedule, PairedAnalysis, Summary};
use crate::process::{Command, Lingering};

/// Compare B against A: read both programs and the files they name into the page cache
/// (`Command::prime`), warm up both, then run randomized ABBA blocks until a look
/// reaches a verdict, the pair cap or `max_time` (see `stats::LookSchedule` for why the
/// repeated looks keep the error rate at 5 %). Both commands get identical treatment;
/// each run gets a random `CARGO_OPTIMIZE_PAD`. Any failed run (not exit code 0, or timed
/// out) is an error naming its side.
pub fn compare(
    a: &Command,
    b: &Command,
    opts: &BenchOptions,
    on_progress: &mut dyn FnMut(&Progress),
) -> Result<Comparison, BenchError> {
    compare_expecting(a, b, opts, ExpectedStatus::Success, on_progress)
}

/// [`compare`], where a run fails when its status is not `expected` (or it timed out).
pub(crate) fn compare_expecting(
    a: &Command,
    b: &Command,
    opts: &BenchOptions,
    expected: ExpectedStatus,
    on_progress: &mut dyn FnMut(&Progress),
) -> Result<Comparison, BenchError> {
    compare_measuring(a, b, opts, expected, None, on_progress)
}

/// [`compare_expecting`], each run's figure read by `metric` from its output when given.
pub(crate) fn compare_measuring(
    a: &Command,
    b: &Command,
    opts: &BenchOptions,
    expected: ExpectedStatus,
    metric: Option<&crate::spec::Metric>,
    on_progress: &mut dyn FnMut(&Progress),
) -> Result<Comparison, BenchError> {
    a.prime();
    b.prime();
    let mut src = ProcessSource::new(a, b, expected).measuring(metric);
    let mut c = drive(&mut src, opts, on_progress)?;
    src.fill_in(&mut c);
    Ok(c)
}

/// The run order and stopping loop, over any source.
pub(crate) fn drive(
    src: &mut dyn TimedRuns,
    opts: &BenchOptions,
    on_progress: &mut dyn FnMut(&Progress),
) -> Result<Comparison, BenchError> {
    let mut d = Drive::warm_up(src, opts, on_progress)?;
    loop {
        if let Some(stop) = d.advance_to_look(src, on_progress)? {
            return Ok(d.finish(src, stop));
        }
    }
}

/// One comparison under way: warmed up, then run look by look ([`Drive::advance_to_look`])
/// until a look ends it, or until its caller stops it ([`Drive::finish`]).
pub(crate) struct Drive<'o> {
    opts: &'o BenchOptions,
    rng: fastrand::Rng,
    min_pairs: u32,
    max_pairs: u32,
    warmed: u32,
    schedule: Option<LookSchedule>,
    runs: Vec<RunRecord>,
    wall_a: Vec<f64>,
    wall_b: Vec<f64>,
    look: usize,
    measure_start: Duration,
    /// The latest look's analysis.
    latest: Option<PairedAnalysis>,
    /// A fixed design's batches, when their spread set its interval (`bench::drift`).
    drift: Option<Vec<f64>>,
    /// Whether its own verdict stops it (decided, or *faster* out of its reach), or only
    /// its group's geometric mean does ([`Drive::in_group`]).
    alone: bool,
}

impl<'o> Drive<'o> {
    /// Warm up both sides (`opts.warmup` pairs, within `max_time`).
    pub(crate) fn warm_up(
        src: &mut dyn TimedRuns,
        opts: &'o BenchOptions,
        on_progress: &mut dyn FnMut(&Progress),
    ) -> Result<Self, BenchError> {
        let mut rng = fastrand::Rng::with_seed(opts.seed);
        let min_pairs = opts.min_pairs.max(2);
        let mut warmed = 0;
        for i in 0..opts.warmup {
            // max-time bounds everything, the warm-up included.
            if src.elapsed() >= opts.max_time {
                break;
            }
            warmed += 1;
            on_progress(&Progress {
                phase: Phase::Warmup {
                    done: i,
                    total: opts.warmup,
                },
                pairs: 0,
                planned_pairs: None,
                elapsed: src.elapsed(),
                max_time: opts.max_time,
                estimate: None,
            });
            let first = if rng.bool() { Side::A } else { Side::B };
            for side in [first, other(first)] {
                src.run(side, rng.usize(0..PAD_MAX))?;
            }
        }
        let mut d = Drive {
            opts,
            rng,
            min_pairs,
            max_pairs: opts.max_pairs.max(min_pairs),
            warmed,
            schedule: None,
            runs: Vec::new(),
            wall_a: Vec::new(),
            wall_b: Vec::new(),
            look: 0,
            measure_start: src.elapsed(),
            latest: None,
            drift: None,
            alone: true,
        };
        if warmed > 0 {
            d.schedule = Some(d.plan(warmed, src.elapsed(), src.elapsed()));
        }
        Ok(d)
    }

    /// The schedule depends only on the pace of the warm-up (or, without warm-up, of the
    /// first block), never on the measured ratios.
    fn plan(&self, pairs_done: u32, time_for_them: Duration, now: Duration) -> LookSchedule {
        let opts = self.opts;
        let per_pair = time_for_them.as_secs_f64() / f64::from(pairs_done.max(1));
        let left = opts.max_time.saturating_sub(now).as_secs_f64();
        let by_time = if per_pair > 0.0 {
            (left / per_pair).floor().min(f64::from(u32::MAX / 2)) as u32
        } else {
            self.max_pairs
        };
        let already = if self.warmed > 0 { 0 } else { pairs_done };
        LookSchedule::plan(
            self.min_pairs,
            self.max_pairs.min(already.saturating_add(by_time)),
            ALPHA,
        )
    }

    /// One of a group whose geometric mean answers a keep-or-drop question
    /// (`opts.only_faster`, `joint::drive_groups`): only the group stops it, or its cap
    /// or max-time. Stopped on its own verdict, a workload keeps the interval it had then,
    /// and the mean's interval stays as wide: a candidate of mixed effects (one workload
    /// much faster, another a little slower) is dropped with nothing left running, though
    /// more pairs of the slower one would have decided it.
    /// Figures: docs/src/decisions.md, "A workload in a group stops with the group".
    pub(crate) fn in_group(mut self) -> Self {
        self.alone = !self.opts.only_faster;
        self
    }

    /// The latest look's estimate (none before the first look).
    pub(crate) fn latest(&self) -> Option<&PairedAnalysis> {
        self.latest.as_ref()
    }

    /// The latest estimate as it would be with the pairs the schedule can still reach:
    /// the same mean, its standard error shrunk by `√(n / cap)` (`None` before a look).
    pub(super) fn at_budget(&self) -> Option<stats::LogEstimate> {
        let log = self.latest()?.log;
        let cap = f64::from(self.schedule.as_ref()?.cap());
        let n = (log.n as f64).max(1.0);
        Some(stats::LogEstimate {
            se: log.se * (n / cap.max(n)).sqrt(),
            ..log
        })
    }

    /// One block: ABBA or BAAB, i.e. two pairs in mirrored order.
    fn block(&mut self, src: &mut dyn TimedRuns) -> Result<(), BenchError> {
        let first = if self.rng.bool() { Side::A } else { Side::B };
        let order = [first, other(first), other(first), first];
        for (k, side) in order.into_iter().enumerate() {
            let pad = self.rng.usize(0..PAD_MAX);
            let o = src.run(side, pad)?;
            match side {
                Side::A => self.wall_a.push(o.measure),
                Side::B => self.wall_b.push(o.measure),
            }
            self.runs.push(RunRecord {
                pair: pair_index(k, self.wall_a.len().min(self.wall_b.len())),
                side,
                seq: self.runs.len() as u32,
                wall_secs: o.wall.as_secs_f64(),
                user_secs: o.user.as_secs_f64(),
                sys_secs: o.sys.as_secs_f64(),
                max_rss_bytes: o.max_rss_bytes,
                status: o.status,
                pad_bytes: src.pad_used(pad),
                outlier: false,
                counters: o.counters,
                metric: o.metric,
            });
        }
        Ok(())
    }

    /// Run blocks up to the next look and analyse it; `Some(reason)` when that look ends
    /// the comparison.
    pub(crate) fn advance_to_look(
        &mut self,
        src: &mut dyn TimedRuns,
        on_progress: &mut dyn FnMut(&Progress),
    ) -> Result<Option<StopReason>, BenchError> {
        let opts = self.opts;
        loop {
            self.block(src)?;
            let n = self.wall_a.len() as u32;
            let now = src.elapsed();
            if self.schedule.is_none() {
                self.schedule = Some(self.plan(n, now - self.measure_start, now));
            }
            let sched = self.schedule.as_ref().expect("planned above");
            let time_up = now >= opts.max_time && n >= opts.pairs_past_max_time;
            let due = n >= sched.looks[self.look.min(sched.looks.len() - 1)];
            // When time is up, stop at this look even short of `min_pairs`: max-time is
            // the bound a user can rely on (`stop_note` says what it cost), but for the
            // `pairs_past_max_time` the run's budget gave the comparison that decides what
            // ships.
            if due || time_up {
                let final_look = time_up || n >= sched.cap() || self.look + 1 >= sched.looks.len();
                let confidence = sched.confidence_at(self.look, final_look);
                let cap = sched.cap();
                let a = self.look_now(confidence, cap, now, on_progress);
                let sched = self.schedule.as_ref().expect("planned above");
                let last = self.look >= sched.looks.len();
                let stop = if self.alone && a.estimate.verdict.is_decided() {
                    Some(StopReason::Decided)
                } else if self.alone
                    && opts.only_faster
                    && self.look >= 2
                    && cannot_be_faster(&a.log, opts.margin)
                {
                    // From a workload's second look on: stopped at its first, a real speedup
                    // whose first few pairs happened to look slow stays frozen in the
                    // geometric mean (in simulation at 6 pairs, a 2 % speedup was called
                    // faster 235 times of 300 instead of 208, for the same time on ties).
                    Some(StopReason::Futile)
                } else if n >= sched.cap() {
                    Some(StopReason::MaxPairs)
                } else if time_up {
                    Some(StopReason::MaxTime)
                } else if last {
                    Some(StopReason::MaxPairs)
                } else {
                    None
                };
                self.latest = Some(a);
                return Ok(stop);
            }
            let d = stats::log_ratios(&self.wall_a, &self.wall_b);
            let confidence = sched.confidence_at(self.look, false);
            on_progress(&Progress {
                phase: Phase::Measuring,
                pairs: n,
                planned_pairs: Some(sched.cap()),
                elapsed: now,
                max_time: opts.max_time,
                estimate: Some(Estimate::from_log(
                    &stats::LogEstimate::of(&d),
                    confidence,
                    opts.margin,
                )),
            });
        }
    }

    /// Look at the pairs so far at `confidence` (the schedule's `cap` is shown as planned).
    fn look_now(
        &mut self,
        confidence: f64,
        cap: u32,
        now: Duration,
        on_progress: &mut dyn FnMut(&Progress),
    ) -> PairedAnalysis {
        let opts = self.opts;
        let n = self.wall_a.len() as u32;
        let seed = opts.seed ^ (u64::from(n) << 32) ^ 0x9e37_79b9_7f4a_7c15;
        let (a, b) = (&self.wall_a, &self.wall_b);
        let a = stats::analyze(a, b, confidence, opts.margin, opts.estimator, seed);
        self.look += 1;
        on_progress(&Progress {
            phase: Phase::Look {
                look: self.look as u32,
            },
            pairs: n,
            planned_pairs: Some(cap),
            elapsed: now,
            max_time: opts.max_time,
            estimate: Some(a.estimate),
        });
        a
    }

    /// One turn of a fixed design (`opts.in_turns`): one block, then, once the workload has
    /// its `max_pairs` or `max_time` is up (past `pairs_past_max_time`), its one look, at
    /// the full confidence (`Some(reason)`); else `None`, with the progress so far.
    pub(crate) fn turn(
        &mut self,
        src: &mut dyn TimedRuns,
        on_progress: &mut dyn FnMut(&Progress),
    ) -> Result<Option<StopReason>, BenchError> {
        let opts = self.opts;
        self.block(src)?;
        let (n, now) = (self.wall_a.len() as u32, src.elapsed());
        let time_up = now >= opts.max_time && n >= opts.pairs_past_max_time;
        if n < self.max_pairs && !time_up {
            on_progress(&Progress {
                phase: Phase::Measuring,
                pairs: n,
                planned_pairs: Some(self.max_pairs),
                elapsed: now,
                max_time: opts.max_time,
                estimate: None,
            });
            return Ok(None);
        }
        // One look, planned as what it is: the pairs taken, all of α spent on them.
        let sched = LookSchedule::plan(n, n, ALPHA);
        let confidence = sched.confidence_at(0, true);
        self.schedule = Some(sched);
        self.look = 0;
        let a = self.look_now(confidence, n, now, on_progress);
        // Its pairs span the whole comparison in time, and the ratio drifts over seconds:
        // the interval also counts how much their consecutive batches differ.
        let d = stats::log_ratios(&self.wall_a, &self.wall_b);
        let (a, drift) = a.widened(super::drift::batches(&d, opts.estimator), opts.margin);
        (self.latest, self.drift) = (Some(a), drift);
        Ok(Some(match n >= self.max_pairs {
            true => StopReason::MaxPairs,
            false => StopReason::MaxTime,
        }))
    }

    /// The comparison as it stands at its latest look (which must have been taken).
    pub(crate) fn finish(self, src: &dyn TimedRuns, stop: StopReason) -> Comparison {
        let sched = self.schedule.expect("planned before the first look");
        let n = self.wall_a.len() as u32;
        let min_pairs = self.min_pairs;
        let stop_note = (n < min_pairs).then(|| {
            format!(
                "max-time ({}) was reached after {n} pairs, fewer than the {min_pairs} asked for: the interval is wider than it would be; raise max-time or ask for fewer runs",
                humantime::format_duration(self.opts.max_time)
            )
        });
        let analysis = self.latest.expect("a look was taken");
        let mut c = assemble(
            self.runs,
            &self.wall_a,
            &self.wall_b,
            analysis,
            stop,
            self.look as u32,
            &sched,
            self.opts,
            src.elapsed(),
        );
        c.stop_note = stop_note;
        c.drift = self.drift;
        c
    }
}

/// The level of the futility check: a ladder comparison stops once the lower end of the
/// two-sided 80 % interval (a one-sided 90 % bound) lies above `1 − margin`. Stopping for
/// futility never calls anything faster, so it cannot raise the rate of wrong *faster*
/// verdicts however loose it is (a non-binding futility rule); it only costs power, and at
/// this level little: a true 2·margin speedup is stopped for futility at a look with
/// probability < 1 % (its point estimate would have to lie ~2.4 standard errors above the
/// truth), which `futility_ends_ties_early_and_keeps_speedups` checks in simulation.
const FUTILITY_CONFIDENCE: f64 = 0.80;

/// Whether *faster* is out of reach: see [`FUTILITY_CONFIDENCE`].
pub(super) fn cannot_be_faster(log: &stats::LogEstimate, margin: f64) -> bool {
    log.interval(FUTILITY_CONFIDENCE).0.exp() > 1.0 - margin
}

/// Pair index of the k-th run of a block, given how many complete pairs exist after it.
fn pair_index(k: usize, complete_pairs: usize) -> u32 {
    // Runs 0,1 form one pair and runs 2,3 the next; after run 0 or 2 the pair is not yet
    // complete, so its index is `complete_pairs`; after run 1 or 3 it is `complete − 1`.
    if k.is_multiple_of(2) {
        complete_pairs as u32
    } else {
        complete_pairs as u32 - 1
    }
}

fn other(s: Side) -> Side {
    match s {
        Side::A => Side::B,
        Side::B => Side::A,
    }
}

#[allow(clippy::too_many_arguments)]
fn assemble(
    mut runs: Vec<RunRecord>,
    wall_a: &[f64],
    wall_b: &[f64],
    analysis: PairedAnalysis,
    stop: StopReason,
    looks: u32,
    sched: &LookSchedule,
    opts: &BenchOptions,
    elapsed: Duration,
) -> Comparison {
    let d = stats::log_ratios(wall_a, wall_b);
    let outliers = mark_outliers(&mut runs, &d, wall_a, wall_b);
    let n = wall_a.len() as u32;
    let mut noise = noise_of(&runs, &d, wall_a, wall_b, &outliers);
    noise.warning = noise_warning(&noise, stats::median(wall_a), &analysis);
    let side_col = |side: Side, f: &dyn Fn(&RunRecord) -> f64| -> Vec<f64> {
        runs.iter().filter(|r| r.side == side).map(f).collect()
    };
    let sides = |f: &dyn Fn(&RunRecord) -> f64| Sides {
        a: Summary::of(&side_col(Side::A, f)),
        b: Summary::of(&side_col(Side::B, f)),
    };
    let cv = noise.cv;
    let counts_of = |side: Side| -> Vec<Option<Counts>> {
        runs.iter()
            .filter(|r| r.side == side)
            .map(|r| r.counters)
            .collect()
    };
    let counters = counters::summarize(&counts_of(Side::A), &counts_of(Side::B));
    Comparison {
        estimate: analysis.estimate,
        margin: opts.margin,
        n,
        looks,
        planned_looks: sched.looks.len() as u32,
        stop,
        log: analysis.log,
        t_interval: analysis.t_interval,
        bootstrap_interval: analysis.bootstrap_interval,
        median_ratio: analysis.median_ratio,
        median_interval: analysis.median_interval,
        median_disagrees: analysis.median_disagrees,
        cv_a: cv.a,
        cv_b: cv.b,
        outliers,
        median_a_secs: stats::median(wall_a),
        median_b_secs: stats::median(wall_b),
        wall: sides(&|r| r.wall_secs),
        user: sides(&|r| r.user_secs),
        sys: sides(&|r| r.sys_secs),
        rss: sides(&|r| r.max_rss_bytes as f64),
        noise_warning: noise.warning.clone(),
        noise,
        counters,
        counters_status: "not measured".into(),
        elapsed_secs: elapsed.as_secs_f64(),
        seed: opts.seed,
        estimator: opts.estimator,
        samples: runs,
        lingering: Lingering::None,
        pinned: false,
        stop_note: None,
        drift: None,
        metric: None,
    }
}

/// The pairs whose log ratio is an outlier (each run marked), and each side's outliers.
fn mark_outliers(runs: &mut [RunRecord], d: &[f64], wall_a: &[f64], wall_b: &[f64]) -> Outliers {
    let pair_flags = stats::mad_outliers(d);
    let pair_indices: Vec<u32> = (0..pair_flags.len() as u32)
        .filter(|&i| pair_flags[i as usize])
        .collect();
    for r in runs.iter_mut() {
        r.outlier = pair_flags.get(r.pair as usize).copied().unwrap_or(false);
    }
    let count = |x: &[f64]| {
        stats::mad_outliers(&x.iter().map(|v| v.ln()).collect::<Vec<_>>())
            .into_iter()
            .filter(|&o| o)
            .count() as u32
    };
    Outliers {
        pairs: pair_indices.len() as u32,
        a: count(wall_a),
        b: count(wall_b),
        pair_indices,
    }
}

/// How noisy the runs were (the warning is added by the caller).
fn noise_of(
    runs: &[RunRecord],
    d: &[f64],
    wall_a: &[f64],
    wall_b: &[f64],
    outliers: &Outliers,
) -> Noise {
    let cpu_wall = |side: Side| {
        let v: Vec<f64> = (runs.iter().filter(|r| r.side == side))
            .map(|r| (r.user_secs + r.sys_secs) / r.wall_secs.max(1e-9))
            .collect();
        stats::median(&v)
    };
    Noise {
        cpu_wall: Sides {
            a: cpu_wall(Side::A),
            b: cpu_wall(Side::B),
        },
        cv: Sides {
            a: stats::cv(wall_a),
            b: stats::cv(wall_b),
        },
        spread: stats::std_dev(d),
        outlier_fraction: f64::from(outliers.pairs) / (wall_a.len().max(1) as f64),
        warning: None,
    }
}

/// A warning when the measurements look too noisy to trust, or `None`.
///
/// The CPU/wall check only applies to runs of 10 ms or more: below that, process start-up
/// and the parent's bookkeeping are a visible share of the wall time on any machine.
fn noise_warning(
    noise: &Noise,
    median_wall_secs: f64,
    analysis: &PairedAnalysis,
) -> Option<String> {
    let verdict = analysis.estimate.verdict;
    let mut why = Vec::new();
    if analysis.median_disagrees {
        why.push(format!(
            "the typical pair (median B/A {:.3} [{:.3}, {:.3}]) contradicts the mean, so a few \
             disturbed runs drive it; verdict withheld",
            analysis.median_ratio, analysis.median_interval[0], analysis.median_interval[1]
        ));
    }
    let worst_cv = noise.cv.a.max(noise.cv.b);
    if worst_cv > NOISY_CV {
        why.push(format!(
            "run-to-run variation is high (CV A {:.1} %, B {:.1} %)",
            noise.cv.a * 100.0,
            noise.cv.b * 100.0
        ));
    }
    if noise.outlier_fraction > 0.10 {
        why.push(format!(
            "{:.0} % of the pairs are outliers",
            noise.outlier_fraction * 100.0
        ));
    }
    let cpu = noise.cpu_wall.a.min(noise.cpu_wall.b);
    if median_wall_secs >= 0.010 && cpu < 0.9 {
        why.push(format!(
            "the program had a CPU for only {:.0} % of its wall time (if it is CPU-bound, \
             other processes are competing for the CPU)",
            cpu * 100.0
        ));
    }
    if why.is_empty() {
        return None;
    }
    let head = if !verdict.is_decided() {
        "too noisy to decide: "
    } else {
        "noisy measurements: "
    };
    Some(format!(
        "{head}{}; close other programs, or raise max-time",
        why.join("; ")
    ))
}
