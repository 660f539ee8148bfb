//! The run's time budget (`--budget`, `[bench] budget`; [`DEFAULT`] when neither is given):
//! the wall time a whole run may take, builds included, and the projection printed once the
//! baseline has been built and run.
//!
//! What each kind of work costs is learnt from the baseline ([`Costs`]: its build, one run of
//! each workload). Before a stage builds anything, [`Budget::affords`] asks whether what is
//! left pays for the stage's builds, verifications and training and a first look at each of
//! its comparisons, keeping a first look for the final comparison; a stage that does not fit
//! is not tried, and its row says so with the fix. Each comparison then gets a share of what is
//! left after the work still to come ([`Budget::share`]), the final comparison (what ships)
//! twice the others' share, and what decides the ship its first look whole when that is
//! paid for; a comparison its share cut short is *budget-limited*.
//!
//! The budget is a bound: once it is spent ([`Budget::spent`], [`Budget::deadline`]) no
//! build, check or comparison starts, and a run ends within its budget plus
//! [`Budget::overrun_bound`] (a comparison started before it, then the final confirmation's
//! first look) and a training, check or workload run already running (builds are killed).

use std::cell::Cell;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::bench::comparison::LADDER_MIN_PAIRS;
use crate::report::Projection;
use crate::stage::Count;
use crate::stages::StageName;

/// Fifteen minutes. A typical crate (builds of a minute or less, workloads of a second or
/// less) climbs every stage well within it. A crate with minute-long builds and 10 s
/// workloads spends minutes on its baseline and on the pgo stage alone (two builds,
/// training, the coverage pass, a first look at 2 pairs of each workload): 15 minutes buy
/// that stage and say which others they could not try.
/// It bounds a run and never shortens one whose whole ladder costs less: a default of about
/// cargo-pgo's time would leave out the profile and cpu stages on a build-bound crate, and
/// what they find no measurement before them predicts (docs/src/measuring.md, with the
/// figures of the crates that set these rules; `--quick` and `--budget` are the shorter
/// runs).
pub(crate) const DEFAULT: Duration = Duration::from_secs(900);

/// What one piece of work costs, in seconds, as the baseline showed.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Costs {
    /// One build.
    pub build: f64,
    /// One run of every workload that is not timed (a candidate's verification: eval
    /// workloads are checked on their first timed run).
    pub verify: f64,
    /// One run of every train workload (a training; instrumented binaries run slower,
    /// counted twice).
    pub train: f64,
    /// One run of every eval workload (a pair of runs costs twice this).
    pub eval: f64,
    /// How many eval workloads there are.
    pub eval_workloads: usize,
}

impl Costs {
    /// From the baseline's build time and each workload's run time on it.
    pub(crate) fn of(
        spec: &crate::spec::Spec,
        build_secs: f64,
        times: &BTreeMap<String, f64>,
    ) -> Self {
        let sum = |keep: &dyn Fn(&crate::spec::Workload) -> bool| -> f64 {
            spec.workloads
                .iter()
                .filter(|w| keep(w))
                .filter_map(|w| times.get(&w.name))
                .sum()
        };
        Costs {
            build: build_secs,
            // Eval workloads are checked on their first timed run: only the others cost a
            // run of their own.
            verify: sum(&|w| !w.eval),
            train: 2.0 * sum(&|w| w.train),
            eval: sum(&|w| w.eval),
            eval_workloads: spec.workloads.iter().filter(|w| w.eval).count(),
        }
    }
}

impl Costs {
    /// From the last run of the same program (its report), before anything is built: its
    /// builds' mean time, and each workload's run time on the slowest side it was timed on
    /// (the baseline, as a rule); a workload it did not time (train only) counts as their
    /// mean. `None` without a timed workload.
    pub(crate) fn from_report(
        report: &crate::report::Report,
        spec: &crate::spec::Spec,
    ) -> Option<Self> {
        let builds: Vec<f64> = (report.stages.iter())
            .filter_map(|s| s.build_seconds)
            .filter(|&b| b > 0.0)
            .collect();
        let timed: BTreeMap<String, f64> = (report.workloads.iter())
            .filter_map(|w| {
                let slowest = w
                    .per_stage
                    .values()
                    .map(|c| c.wall_secs_a())
                    .fold(f64::NAN, f64::max);
                slowest.is_finite().then(|| (w.name.clone(), slowest))
            })
            .collect();
        if timed.is_empty() {
            return None;
        }
        let mean = timed.values().sum::<f64>() / timed.len() as f64;
        let times = (spec.workloads.iter())
            .map(|w| (w.name.clone(), timed.get(&w.name).copied().unwrap_or(mean)))
            .collect();
        let build = builds.iter().sum::<f64>() / builds.len().max(1) as f64;
        Some(Costs::of(spec, build, &times))
    }
}

/// What a stage spends besides measuring, and how many comparisons it makes.
#[derive(Debug, Clone, Copy, PartialEq)]
struct LadderShape {
    builds: f64,
    verifications: f64,
    /// Trainings (train workloads on an instrumented binary).
    trainings: f64,
    /// Instrumented runs of the eval workloads (the eval coverage pass), each counted twice.
    evals: f64,
    comparisons: f64,
}

/// The shape of `stage` when it builds `n` candidates (its row's `shape`): a build, a
/// verification and a comparison per candidate (at least the row's `at_least`), and the
/// builds, trainings and instrumented eval runs besides.
fn shape(stage: StageName, n: usize) -> LadderShape {
    let row = stage.row().shape;
    let n = n.max(row.at_least) as f64;
    LadderShape {
        builds: row.extra_builds + n,
        verifications: n,
        trainings: row.trainings,
        evals: row.evals,
        comparisons: n,
    }
}

/// Which stages get time first when not all fit: by the gain they usually bring (the
/// table's `priority`).
fn priority(stage: StageName) -> u8 {
    stage.row().priority
}

pub(crate) struct Budget {
    pub total: Duration,
    started: Instant,
    costs: Cell<Option<Costs>>,
    /// The share of the builds the ladder will likely ask for that the build cache holds
    /// ([`Budget::hold`]): those cost no build, so a re-run of what the last run built is
    /// not refused stages for builds it will not make.
    cached: Cell<f64>,
    /// How many candidates each stage builds (its contract's `count`); a stage not in
    /// it builds none.
    counts: BTreeMap<StageName, Count>,
    /// The spec's `max-time` per workload: a comparison's first look never runs past it by
    /// more than one block of runs.
    spec_max: Duration,
}

impl Budget {
    /// A budget of `total` counted from now; `counts` how many candidates each stage
    /// builds, `spec_max` the spec's `max-time`.
    pub(crate) fn new(
        total: Duration,
        counts: BTreeMap<StageName, Count>,
        spec_max: Duration,
    ) -> Self {
        Budget {
            total,
            started: Instant::now(),
            costs: Cell::new(None),
            cached: Cell::new(0.0),
            counts,
            spec_max,
        }
    }

    /// How many candidates `stage` builds (`least`: at the fewest).
    fn candidates(&self, stage: StageName, least: bool) -> usize {
        let count = self.counts.get(&stage).copied();
        let count = count.unwrap_or(Count::exactly(0));
        match least {
            true => count.least,
            false => count.most,
        }
    }

    /// That a `share` (0 to 1) of the builds the ladder will likely ask for is in the build
    /// cache: a build is projected at the rest of its cost.
    pub(crate) fn hold(&self, share: f64) {
        self.cached.set(share.clamp(0.0, 1.0));
    }

    /// The share of the likely builds the build cache holds ([`Budget::hold`]).
    pub(crate) fn cached(&self) -> f64 {
        self.cached.get()
    }

    /// What one build is expected to cost, the cached share of them costing nothing.
    fn build_cost(&self, costs: &Costs) -> f64 {
        costs.build * (1.0 - self.cached.get())
    }

    /// The seconds a stage costs besides measuring, and the seconds of its first looks.
    fn stage_cost(&self, costs: &Costs, stage: StageName) -> (f64, f64) {
        let s = shape(stage, self.candidates(stage, false));
        let work = s.builds * self.build_cost(costs)
            + s.verifications * costs.verify
            + s.trainings * costs.train
            + s.evals * costs.eval;
        (work, s.comparisons * self.first_look(costs))
    }

    /// A comparison's first look: [`LADDER_MIN_PAIRS`] pairs of every eval workload, or,
    /// when `max-time` comes first, the blocks of runs (two pairs each) up to the one that
    /// ends past it — not a whole block after `max-time`, which projected long workloads at
    /// nearly twice what they cost.
    fn first_look(&self, costs: &Costs) -> f64 {
        let n = costs.eval_workloads.max(1) as f64;
        let block = 4.0 * costs.eval / n;
        let min_blocks = f64::from(LADDER_MIN_PAIRS) / 2.0;
        if block <= 0.0 {
            return 0.0;
        }
        let to_max = (self.spec_max.as_secs_f64() / block).ceil().max(1.0);
        n * block * min_blocks.min(to_max)
    }

    /// What confirming the ship against the baseline is expected to cost: the pairs
    /// [`confirmation_pairs`] buys at the spread a run-to-run variation of `cv` gives a pair
    /// (√2·cv) and over its span, at most `max-time` per workload, at least a first look.
    fn confirmation(&self, costs: &Costs, spec_max: Duration, cv: f64) -> f64 {
        let n = costs.eval_workloads.max(1);
        let spreads = vec![std::f64::consts::SQRT_2 * cv.max(0.005); n];
        let least = span_pairs(costs.eval, n, spec_max);
        let secs = f64::from(confirmation_pairs(&spreads, least)) * 2.0 * costs.eval;
        let cap = spec_max.as_secs_f64() * n as f64;
        secs.min(cap).max(self.first_look(costs))
    }

    /// What the baseline showed each piece of work costs.
    pub(crate) fn learn(&self, costs: Costs) {
        self.costs.set(Some(costs));
    }

    /// Seconds left (negative once overspent).
    pub(crate) fn left(&self) -> f64 {
        self.total.as_secs_f64() - self.started.elapsed().as_secs_f64()
    }

    /// When the budget is spent: builds end there (`Context::set_deadline`).
    pub(crate) fn deadline(&self) -> Instant {
        self.started + self.total
    }

    /// Whether the budget is spent: no build, training, check or comparison starts after;
    /// only the final confirmation of what ships, on its first look.
    pub(crate) fn spent(&self) -> bool {
        self.left() <= 0.0
    }

    /// The most the ladder runs past its budget (seconds; `None` before costs are known),
    /// besides a training, check or workload run already running (builds are killed): what starts
    /// before the budget is spent and may end after it, a comparison (its share is at least
    /// its first look), and then the final confirmation, on its first look.
    pub(crate) fn overrun_bound(&self) -> Option<f64> {
        (self.costs.get()).map(|c| 2.0 * self.first_look(&c))
    }

    /// Whether what is left pays for `stage` (its work and first looks), for the stages of
    /// higher priority still `to_come` (they get time first), and — once a stage was kept
    /// (`chained`), so what ships is compared with the baseline at the end — for the final
    /// comparison's first look. Without known costs (the baseline's outputs were reused, so
    /// nothing was run), only whether anything is left.
    pub(crate) fn affords(
        &self,
        stage: StageName,
        to_come: &[StageName],
        chained: bool,
    ) -> Result<(), String> {
        let left = self.left();
        let Some(c) = self.costs.get() else {
            return match left > 0.0 {
                true => Ok(()),
                false => Err(self.not_tried(left, 0.0, "")),
            };
        };
        let (own, reserved, first) = self.needs(&c, stage, to_come, chained);
        if left > own + reserved {
            return Ok(());
        }
        let mut names: Vec<&str> = first.iter().map(|s| s.as_str()).collect();
        if chained || !first.is_empty() {
            names.push("a first look at what ships against the baseline");
        }
        let why = match names.is_empty() {
            true => String::new(),
            false => format!(
                ", after {} kept for {}",
                crate::util::format_span(reserved),
                names.join(" and ")
            ),
        };
        Err(self.not_tried(left, own, &why))
    }

    /// What `stage` costs (its work and first looks), what is reserved for the stages of
    /// higher priority still `to_come` (and the final comparison's first look once
    /// `chained`), and which stages those are.
    fn needs(
        &self,
        c: &Costs,
        stage: StageName,
        to_come: &[StageName],
        chained: bool,
    ) -> (f64, f64, Vec<StageName>) {
        let cost = |s: StageName| {
            let (work, looks) = self.stage_cost(c, s);
            work + looks
        };
        let first = ahead_of(stage, to_come);
        // The final comparison's first look is kept once a stage was kept, and also when
        // stages of higher priority are to come: if this one is kept, they are climbed on
        // top of it and what ships is compared with the baseline at the end; reserving only
        // their own costs let a lesser stage spend what the higher one's final look needed.
        let final_look = chained || !first.is_empty();
        let reserved: f64 = first.iter().map(|s| cost(*s)).sum::<f64>()
            + if final_look { self.first_look(c) } else { 0.0 };
        (cost(stage), reserved, first)
    }

    /// The stages of `to_come` the ladder can expect to climb once `stage` is paid for, in
    /// order, as far as the costs learnt tell (all of them when none are known, while any
    /// time is left): what the projection counts and what may start building ahead.
    pub(crate) fn expected(&self, stage: StageName, to_come: &[StageName]) -> Vec<StageName> {
        let Some(c) = self.costs.get() else {
            return match self.left() > 0.0 {
                true => to_come.to_vec(),
                false => Vec::new(),
            };
        };
        let mut left = self.left() - self.needs(&c, stage, to_come, true).0;
        let mut expected = Vec::new();
        // As the ladder asks: the final comparison's first look is kept once a stage may
        // have been kept before (from the baseline, not for the first stage).
        let mut chained = stage != StageName::BASELINE;
        for (i, &next) in to_come.iter().enumerate() {
            let (own, reserved, _) = self.needs(&c, next, &to_come[i + 1..], chained);
            if left > own + reserved {
                expected.push(next);
                left -= own;
                chained = true;
            }
        }
        expected
    }

    fn not_tried(&self, left: f64, needed: f64, why: &str) -> String {
        format!(
            "not tried: {} of the run's budget of {} is left{why}, and this stage needs about {} (builds, verification, training and a first look at its candidates)",
            crate::util::format_span(left.max(0.0)),
            crate::util::format_span(self.total.as_secs_f64()),
            crate::util::format_span(needed)
        )
    }

    /// The next comparison's share: a `max-time` per workload, its share of what is left once
    /// the `to_come` stages' work is paid for, over the comparisons still to make (the final
    /// one counted twice), at least its first look, at most `spec_max`; and for a comparison
    /// that decides what ships (`Decides::Ship`, `Decides::Final`) its first look whole —
    /// [`LADDER_MIN_PAIRS`] pairs of each workload, past `spec_max` — when what is left pays
    /// for the pairs past it after the work and first looks still to come.
    pub(crate) fn share(
        &self,
        spec_max: Duration,
        to_come: &[StageName],
        decides: Decides,
    ) -> Share {
        let mut share = Share {
            max_time: spec_max,
            pairs_past_max_time: 0,
        };
        let Some(c) = self.costs.get() else {
            return share;
        };
        let is_final = decides == Decides::Final;
        let (mut work, mut looks) = (0.0, 0.0);
        let mut comparisons = if is_final { 2.0 } else { 3.0 };
        for &stage in to_come {
            let (w, l) = self.stage_cost(&c, stage);
            (work, looks) = (work + w, looks + l);
            comparisons += shape(stage, self.candidates(stage, false)).comparisons;
        }
        let mine = if is_final { 2.0 } else { 1.0 };
        let mean = (self.left() - work).max(0.0) * mine / comparisons;
        let n = c.eval_workloads.max(1) as f64;
        let floor = self.first_look(&c) / n;
        share.max_time = Duration::from_secs_f64((mean / n).max(floor)).min(spec_max);
        // A look of fewer pairs than the minimum leaves an interval too wide to keep a gain of
        // a few percent (with one pair off, 1 degree of freedom), so the comparisons that
        // decide what ships run their minimum past `max-time` when minutes of the budget are
        // otherwise unused. The first look `max-time` cut was paid for when the stage was; the
        // pairs past it must be spare. (A look max-time does not cut leaves nothing past it,
        // but for rounding.)
        let past = 2.0 * f64::from(LADDER_MIN_PAIRS) * c.eval - self.first_look(&c);
        let final_look = if is_final { 0.0 } else { self.first_look(&c) };
        let spare = self.left() - work - looks - final_look;
        if decides != Decides::Keep && past > 1e-6 && spare >= past {
            share.pairs_past_max_time = LADDER_MIN_PAIRS;
        }
        share
    }
}

/// The stages of `to_come` that get time before `stage`: those of higher [`priority`]. Both
/// what `stage` must leave them to be tried at all ([`Budget::affords`]) and what its
/// comparisons leave them ([`Budget::grant`]'s shares); the others get what is left after
/// it. Why the shares too: reserving every stage's projected work (each candidate at the
/// baseline's build time) leaves a crate of slow builds a share too small to tell a few
/// percent from noise, so an early stage's real gain is dropped as budget-limited, while the
/// later stages' builds, reserved at a whole build each, may cost far less.
/// Figures: docs/src/decisions.md, "Only higher-priority stages are paid for first".
fn ahead_of(stage: StageName, to_come: &[StageName]) -> Vec<StageName> {
    (to_come.iter().copied())
        .filter(|s| priority(*s) > priority(stage))
        .collect()
}

/// What the budget grants one step of the ladder, asked once when the step begins
/// ([`Budget::grant`]): the stages after it the budget expects to pay for (the projection
/// counts them; their candidates may build ahead), and the share of each of the step's
/// comparisons, drawn when the comparison starts — from what is left then, so a step's later
/// comparisons never spend what its earlier ones used.
pub(crate) struct Grant<'b> {
    budget: &'b Budget,
    to_come: Vec<StageName>,
    spec_max: Duration,
    pub(crate) expected: Vec<StageName>,
}

impl Grant<'_> {
    /// The share of the step's next comparison, by what it decides.
    pub(crate) fn share(&self, decides: Decides) -> Share {
        (self.budget).share(self.spec_max, &self.to_come, decides)
    }
}

impl Budget {
    /// The grant of the ladder's step `stage`, with `to_come` after it (`chained`: a stage was
    /// kept before, so what ships is confirmed at the end), comparisons at most `spec_max`
    /// per workload; or why the step does not fit ([`Budget::affords`]).
    pub(crate) fn grant(
        &self,
        stage: StageName,
        to_come: &[StageName],
        chained: bool,
        spec_max: Duration,
    ) -> Result<Grant<'_>, String> {
        self.affords(stage, to_come, chained)?;
        Ok(Grant {
            budget: self,
            expected: self.expected(stage, to_come),
            to_come: ahead_of(stage, to_come),
            spec_max,
        })
    }

    /// The grant of the last step, the confirmation of what ships: nothing comes after it.
    pub(crate) fn last_grant(&self, spec_max: Duration) -> Grant<'_> {
        Grant {
            budget: self,
            expected: Vec::new(),
            to_come: Vec::new(),
            spec_max,
        }
    }
}

/// How long the next comparison may run: `max_time` per workload, and the pairs it runs
/// even past it (`bench::BenchOptions::pairs_past_max_time`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Share {
    pub max_time: Duration,
    pub pairs_past_max_time: u32,
}

/// What a comparison decides, for its share of the budget ([`Budget::share`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decides {
    /// Whether a candidate is kept over one kept before it.
    Keep,
    /// Whether a candidate is kept over the baseline: whether anything but the baseline
    /// ships, unless a later stage is kept.
    Ship,
    /// What ships against the baseline, measured directly at the end.
    Final,
}

/// The half-width the confirmation aims at for the geometric mean's 95 % interval.
const CONFIRM_HALF_WIDTH: f64 = 0.015;

/// The least time (seconds) the confirmation's pairs span, all workloads together.
///
/// Why: on shared machines the ratio itself drifts over seconds, not only each run's time.
/// Pairs close in time share that drift, so a short confirmation is precise about its own
/// window and wrong about the next one: a few seconds of pairs print a narrow interval that
/// a later re-measurement misses. Time, not pairs, buys that part of the precision.
/// Figures: docs/src/decisions.md, "The confirmation spans 15 s".
const CONFIRM_SPAN: f64 = 15.0;

/// Pairs per workload that make the confirmation span [`CONFIRM_SPAN`] (at most half the
/// spec's `max_time` per workload, so a short max-time keeps it short) when one run of every
/// eval workload takes `eval_secs`; 0 when that is unknown.
pub(crate) fn span_pairs(eval_secs: f64, workloads: usize, spec_max: Duration) -> u32 {
    let span = CONFIRM_SPAN.min(spec_max.as_secs_f64() * workloads as f64 / 2.0);
    match eval_secs > 0.0 {
        true => (span / (2.0 * eval_secs)).ceil().min(2000.0) as u32,
        false => 0,
    }
}

/// Pairs per workload that give the geometric mean of `spreads.len()` workloads a 95 %
/// interval of ±[`CONFIRM_HALF_WIDTH`] when each workload's pairs spread as given (the
/// standard deviation of a pair's log ratio; its standard error is that over √n), and at
/// least `least` ([`span_pairs`]): between 8 and 2 000 (the budget's share stops it sooner
/// when it cannot pay); 16 without spreads.
pub(crate) fn confirmation_pairs(spreads: &[f64], least: u32) -> u32 {
    let finite: Vec<f64> = spreads.iter().copied().filter(|s| s.is_finite()).collect();
    if finite.is_empty() {
        return 16.max(least).min(2000);
    }
    let k = finite.len() as f64;
    let target = (1.0 + CONFIRM_HALF_WIDTH).ln() / crate::bench::stats::normal_quantile(0.975);
    let n = finite.iter().map(|s| s * s).sum::<f64>() / (k * k * target * target);
    (n.ceil() as u32).max(least).clamp(8, 2000)
}

/// What climbing `stages` (and the final comparison) is expected to cost at `costs`, within
/// `budget`; `cv` is the workloads' run-to-run variation (a fraction).
pub(crate) fn project(
    costs: &Costs,
    stages: &[StageName],
    budget: &Budget,
    spec_max: Duration,
    cv: f64,
) -> Projection {
    let mut p = Projection {
        builds: 0.0,
        build_secs: 0.0,
        least_builds: Some([0.0, 0.0]),
        verify_secs: 0.0,
        training_secs: 0.0,
        measure_secs: [budget.confirmation(costs, spec_max, cv); 2],
        pairs_bought: 0.0,
        pairs_for_1pct: 0.0,
    };
    let mut comparisons = 1.0;
    for &stage in stages {
        let s = shape(stage, budget.candidates(stage, false));
        p.builds += s.builds;
        p.build_secs += s.builds * budget.build_cost(costs);
        p.verify_secs += s.verifications * costs.verify;
        p.training_secs += s.trainings * costs.train + s.evals * costs.eval;
        let least = shape(stage, budget.candidates(stage, true));
        if let Some([n, secs]) = p.least_builds.as_mut() {
            *n += least.builds;
            *secs += least.builds * budget.build_cost(costs);
        }
        let least = least.comparisons;
        p.measure_secs[0] += least * budget.first_look(costs);
        comparisons += s.comparisons;
    }
    let work = p.build_secs + p.verify_secs + p.training_secs;
    let share = (budget.share(spec_max, stages, Decides::Keep).max_time).as_secs_f64();
    let room = (budget.left() - work).max(p.measure_secs[0]);
    p.measure_secs[1] = (share * costs.eval_workloads as f64 * comparisons)
        .min(room)
        .max(p.measure_secs[0]);
    let per_pair = 2.0 * costs.eval / costs.eval_workloads.max(1) as f64;
    p.pairs_bought = if per_pair > 0.0 {
        share / per_pair
    } else {
        0.0
    };
    // Half-width of a 95 % interval of the mean log ratio: 1.96 · √2 · cv / √n ≤ 1 %.
    let cv = cv.max(0.005);
    p.pairs_for_1pct = (1.96 * std::f64::consts::SQRT_2 * cv / 0.01).powi(2).ceil();
    p
}

/// The projection as one line for the terminal.
pub(crate) fn line(p: &Projection, budget_secs: f64, costs: &Costs) -> String {
    let span = crate::util::format_span;
    let [lo, hi] = p.total();
    let n = costs.eval_workloads;
    let over = match lo > budget_secs {
        true => "; more than the budget: the stages that fit are tried, pgo first",
        false => "",
    };
    let builds = match p.least_builds {
        Some([n, secs]) if n < p.builds => format!(
            "{n:.0}–{:.0} builds {}–{}",
            p.builds,
            span(secs),
            span(p.build_secs)
        ),
        _ => format!("{:.0} builds {}", p.builds, span(p.build_secs)),
    };
    format!(
        "projection: {}–{} (≈{builds}, verification {}, training {}, measuring {}–{}) within the budget of {}; {n} eval workload(s) of ~{} a run: a comparison's share buys up to ~{:.0} pairs each, ±1 % needs ~{:.0}",
        span(lo),
        span(hi),
        span(p.verify_secs),
        span(p.training_secs),
        span(p.measure_secs[0]),
        span(p.measure_secs[1]),
        span(budget_secs),
        crate::util::format_secs(costs.eval / n.max(1) as f64),
        p.pairs_bought,
        p.pairs_for_1pct,
    ) + over
}

/// What the projection leaves out when the budget cannot pay for every stage: the stages,
/// the whole ladder's projection (`whole`), and the fix.
pub(crate) fn left_out(stages: &[StageName], whole: &Projection, budget_secs: f64) -> String {
    let span = crate::util::format_span;
    let names: Vec<&str> = stages.iter().map(|s| s.as_str()).collect();
    let [lo, hi] = whole.total();
    format!(
        "; {} {} not fit in the budget (the whole ladder: {}–{}): --budget {} to try them, or --stages {} alone",
        names.join(", "),
        if names.len() == 1 { "does" } else { "do" },
        span(lo),
        span(hi),
        span((2.0 * budget_secs).max(lo)),
        names.join(",")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a default spec's stages build: the preset, two CPU levels, the default fp
    /// flags, mimalloc, no C, PGO's build and BOLT's.
    fn counts() -> BTreeMap<StageName, Count> {
        let fp = crate::stage::fp::DEFAULT_FLAGS.len();
        let n = [1, 2, fp, 0, 1, 1, 1];
        StageName::TRIED
            .into_iter()
            .zip(n)
            .map(|(s, n)| (s, Count::exactly(n)))
            .collect()
    }

    fn costs() -> Costs {
        Costs {
            build: 60.0,
            verify: 50.0,
            train: 25.0,
            eval: 24.0,
            eval_workloads: 3,
        }
    }

    /// A slow renderer's costs: ~45 s builds, three train and three eval workloads of
    /// ~8–13 s.
    /// Figures: docs/src/decisions.md, "The budget's overrun bound".
    fn renderer() -> Costs {
        Costs {
            build: 44.0,
            verify: 24.0,
            train: 48.0,
            eval: 29.0,
            eval_workloads: 3,
        }
    }

    #[test]
    fn the_run_goes_past_its_budget_by_two_first_looks_at_most() {
        let b = Budget::new(Duration::from_secs(60), counts(), Duration::from_secs(30));
        assert_eq!(b.overrun_bound(), None, "no costs known yet");
        assert!(!b.spent());
        assert_eq!(b.deadline() - b.started, Duration::from_secs(60));
        // Costs of a slow program: a block of 4 runs of 9.67 s passes max-time, so a first look is one
        // block of each of the 3 workloads (116 s); the comparison running when the budget
        // is spent and then the final confirmation: 232 s.
        b.learn(renderer());
        assert!((b.overrun_bound().unwrap() - 232.0).abs() < 1e-9);
        // One 5 ms workload: a first look is its 4 pairs (40 ms), the bound 80 ms.
        let quick = Costs {
            build: 1.0,
            verify: 0.0,
            train: 0.01,
            eval: 0.005,
            eval_workloads: 1,
        };
        let b = Budget::new(Duration::from_nanos(1), counts(), Duration::from_secs(3));
        b.learn(quick);
        assert!((b.overrun_bound().unwrap() - 0.08).abs() < 1e-12);
        std::thread::sleep(Duration::from_millis(2));
        assert!(b.spent() && b.left() < 0.0);
    }

    #[test]
    fn stages_that_do_not_fit_give_way_to_pgo_and_say_why() {
        let stages = [
            StageName::Profile,
            StageName::Cpu,
            StageName::Pgo,
            StageName::Bolt,
        ];
        // What 15 minutes leave after that crate's baseline (~205 s).
        let b = Budget::new(Duration::from_secs(695), counts(), Duration::from_secs(30));
        assert!(
            b.affords(StageName::Pgo, &[], false).is_ok(),
            "no costs known: anything left will do"
        );
        b.learn(renderer());
        // A first look stops at the block that ends past max-time: a block of 4 runs of
        // 9.7 s (38.7 s) passes 30 s, so 3 × 38.7 ≈ 116 s. pgo: 2 builds, the untimed
        // workloads, a training and the coverage pass (218 s) + its first look = 334 s.
        let e = b
            .affords(StageName::Profile, &stages[1..], false)
            .unwrap_err();
        assert!(e.contains("kept for cpu and pgo"), "{e}");
        assert!(e.contains("budget of 11m 35s"), "{e}");
        assert!(b.affords(StageName::Cpu, &stages[2..], false).is_err());
        assert!(b.affords(StageName::Pgo, &stages[3..], false).is_ok());
        // BOLT after a kept pgo: its own 232 s and the final comparison's first look.
        let after = Budget::new(Duration::from_secs(271), counts(), Duration::from_secs(30));
        after.learn(renderer());
        let e = after.affords(StageName::Bolt, &[], true).unwrap_err();
        assert!(
            e.starts_with("not tried: 4m 31s of the run's budget"),
            "{e}"
        );
        assert!(
            e.contains("kept for a first look at what ships against the baseline"),
            "{e}"
        );
        // What 10 minutes leave after the baseline (395 s) buys pgo alone; 5 minutes (95 s)
        // no stage at all.
        let ten = Budget::new(Duration::from_secs(395), counts(), Duration::from_secs(30));
        ten.learn(renderer());
        assert!(ten.affords(StageName::Pgo, &stages[3..], false).is_ok());
        assert!(ten.affords(StageName::Cpu, &stages[2..], false).is_err());
        let five = Budget::new(Duration::from_secs(95), counts(), Duration::from_secs(30));
        five.learn(renderer());
        assert!(five.affords(StageName::Pgo, &stages[3..], false).is_err());
    }

    /// A re-run whose builds the build cache holds pays for none of them: with slow builds
    /// (~110 s each) a budget they would overrun still climbs every stage.
    #[test]
    fn builds_the_cache_holds_cost_nothing() {
        let slow = Costs {
            build: 110.0,
            verify: 1.0,
            train: 2.0,
            eval: 0.7,
            eval_workloads: 2,
        };
        let stages = [StageName::Profile, StageName::Cpu, StageName::Pgo];
        let b = Budget::new(Duration::from_secs(300), counts(), Duration::from_secs(30));
        b.learn(slow);
        assert!(b.affords(StageName::Profile, &stages[1..], false).is_err());
        let cold = project(&slow, &stages, &b, Duration::from_secs(30), 0.02);
        b.hold(1.0);
        assert!(b.affords(StageName::Profile, &stages[1..], false).is_ok());
        assert_eq!(b.expected(StageName::Baseline, &stages), stages.to_vec());
        let again = project(&slow, &stages, &b, Duration::from_secs(30), 0.02);
        assert_eq!(cold.builds, again.builds);
        assert!(
            cold.build_secs > 500.0 && again.build_secs == 0.0,
            "{again:?}"
        );
        // Half held: a build is projected at half its cost.
        b.hold(0.5);
        let half = project(&slow, &stages, &b, Duration::from_secs(30), 0.02);
        assert!((half.build_secs - cold.build_secs / 2.0).abs() < 1e-9);
    }

    /// What a stage may build ahead for: BOLT after pgo only when, pgo paid for (334 s
    /// on that crate), what is left still pays for BOLT's 232 s and the final first look.
    #[test]
    fn the_stages_expected_next_are_those_left_paid_for() {
        let b = Budget::new(Duration::from_secs(600), counts(), Duration::from_secs(30));
        assert_eq!(
            b.expected(StageName::Pgo, &[StageName::Bolt]),
            vec![StageName::Bolt],
            "no costs known: every stage to come"
        );
        b.learn(renderer());
        assert!(b.expected(StageName::Pgo, &[StageName::Bolt]).is_empty());
        let more = Budget::new(Duration::from_secs(1200), counts(), Duration::from_secs(30));
        more.learn(renderer());
        assert_eq!(
            more.expected(StageName::Pgo, &[StageName::Bolt]),
            vec![StageName::Bolt]
        );
        // From the baseline, as the ladder asks. With 800 s left cpu does not fit: its 368 s,
        // pgo's 334 s (higher priority) and the final comparison's first look (116 s: if cpu
        // is kept, pgo climbs on it) come to 818 s. pgo and then bolt do.
        // Figures: docs/src/decisions.md, "Stages are afforded in priority order".
        let run = Budget::new(Duration::from_secs(800), counts(), Duration::from_secs(30));
        run.learn(renderer());
        let all = [
            StageName::Profile,
            StageName::Cpu,
            StageName::Pgo,
            StageName::Bolt,
        ];
        let e = run.affords(StageName::Cpu, &all[2..], false).unwrap_err();
        assert!(
            e.contains("kept for pgo and a first look at what ships against the baseline"),
            "{e}"
        );
        assert_eq!(
            run.expected(StageName::Baseline, &all),
            vec![StageName::Pgo, StageName::Bolt]
        );
        let more_run = Budget::new(Duration::from_secs(900), counts(), Duration::from_secs(30));
        more_run.learn(renderer());
        assert_eq!(
            more_run.expected(StageName::Baseline, &all),
            vec![StageName::Cpu, StageName::Pgo]
        );
        // After the profile stage, cpu and pgo; what is left then does not pay for bolt.
        assert_eq!(
            more.expected(
                StageName::Profile,
                &[StageName::Cpu, StageName::Pgo, StageName::Bolt]
            ),
            vec![StageName::Cpu, StageName::Pgo]
        );
    }

    #[test]
    fn a_comparison_gets_its_share_of_what_is_left_after_the_work_to_come() {
        let spec_max = Duration::from_secs(30);
        let b = Budget::new(Duration::from_secs(3600), counts(), spec_max);
        b.learn(costs());
        // Plenty left: the spec's max-time.
        assert_eq!(
            b.share(spec_max, &[StageName::Pgo], Decides::Keep).max_time,
            spec_max
        );
        let tight = Budget::new(
            Duration::from_secs(1000),
            counts(),
            Duration::from_secs(120),
        );
        tight.learn(Costs {
            eval: 0.3,
            ..costs()
        });
        // 1000 s − pgo's work (195.6 s) over 1 (this) + 1 (pgo) + 2 (final) comparisons,
        // per workload: ≈ 67.0 s, capped at max-time.
        let t = (tight.share(Duration::from_secs(120), &[StageName::Pgo], Decides::Keep)).max_time;
        assert!((t.as_secs_f64() - 67.0).abs() < 0.5, "{t:?}");
        // The final comparison gets all that is left when nothing else is to come.
        let f = (tight.share(Duration::from_secs(900), &[], Decides::Final)).max_time;
        assert!((f.as_secs_f64() - 1000.0 / 3.0).abs() < 1.0, "{f:?}");
        // Never below a first look (4 pairs × 2 runs × 8 s per workload).
        let spent = Budget::new(Duration::from_millis(1), counts(), Duration::from_secs(100));
        spent.learn(costs());
        let t = (spent.share(Duration::from_secs(100), &[], Decides::Keep)).max_time;
        assert_eq!(t.as_secs_f64(), 64.0);
    }

    #[test]
    fn a_comparison_leaves_no_time_for_the_builds_of_stages_that_usually_gain_less() {
        let spec_max = Duration::from_secs(30);
        // A program of slow builds and quick runs: 77 s builds, two eval workloads of ~0.2 s.
        let rg = |left: u64| {
            let b = Budget::new(Duration::from_secs(left), counts(), spec_max);
            b.learn(Costs {
                build: 77.0,
                verify: 0.5,
                train: 0.9,
                eval: 0.42,
                eval_workloads: 2,
            });
            b
        };
        let share = |b: &Budget, stage, to_come: &[StageName]| {
            let grant = b.grant(stage, to_come, true, spec_max).expect("it fits");
            grant.share(Decides::Ship).max_time
        };
        // 300 s left at PGO's comparison: it is not cut to 14 s a workload for BOLT's and
        // the allocator's builds (78 + 78 s), which get what is left after it.
        let b = rg(300);
        let lower = [StageName::Alloc, StageName::Bolt];
        assert_eq!(share(&b, StageName::Pgo, &lower), spec_max);
        let all = b.share(spec_max, &lower, Decides::Ship).max_time;
        assert!(all < Duration::from_secs(15), "{all:?}");
        // 600 s left at the profile stage's: the cpu and pgo stages' work is still kept
        // (311 s), BOLT's, the allocator's and the C compiler's (none here) is not.
        let b = rg(600);
        let to_come = [
            StageName::Cpu,
            StageName::CCompiler,
            StageName::Pgo,
            StageName::Alloc,
            StageName::Bolt,
        ];
        let profile = share(&b, StageName::Profile, &to_come);
        let higher = [StageName::Cpu, StageName::Pgo];
        let kept = b.share(spec_max, &higher, Decides::Ship).max_time;
        assert!(
            profile.abs_diff(kept) < Duration::from_millis(100),
            "{profile:?} vs {kept:?}"
        );
        assert!(profile < spec_max, "{profile:?}");
        let all = b.share(spec_max, &to_come, Decides::Ship).max_time;
        assert!(
            profile > all + Duration::from_secs(10),
            "{profile:?} vs {all:?}"
        );
    }

    #[test]
    fn what_decides_the_ship_gets_its_first_look_past_max_time_when_it_is_paid_for() {
        let spec_max = Duration::from_secs(30);
        // The renderer's ~10 s runs: 30 s buys one block (2 pairs) of each workload, 116 s
        // in all; 4 pairs take 232 s, 116 s more.
        let roomy = Budget::new(Duration::from_secs(600), counts(), spec_max);
        roomy.learn(renderer());
        let keep = roomy.share(spec_max, &[], Decides::Keep);
        assert_eq!((keep.max_time, keep.pairs_past_max_time), (spec_max, 0));
        for decides in [Decides::Ship, Decides::Final] {
            let s = roomy.share(spec_max, &[], decides);
            assert_eq!(
                (s.max_time, s.pairs_past_max_time),
                (spec_max, 4),
                "{decides:?}"
            );
        }
        // With BOLT to come, its work, its first look and the final one are paid for first:
        // 600 − (44 + 24 + 48) − 116 − 116 = 252 s spare.
        let s = roomy.share(spec_max, &[StageName::Bolt], Decides::Ship);
        assert_eq!(s.pairs_past_max_time, 4);
        // What is left does not pay for it: the share, as for any other comparison.
        let tight = Budget::new(Duration::from_secs(400), counts(), spec_max);
        tight.learn(renderer());
        assert_eq!(
            tight.share(spec_max, &[StageName::Bolt], Decides::Ship),
            tight.share(spec_max, &[StageName::Bolt], Decides::Keep)
        );
        // Short runs finish their pairs within max-time anyway.
        let quick = Budget::new(Duration::from_secs(600), counts(), spec_max);
        quick.learn(Costs {
            eval: 0.3,
            ..costs()
        });
        assert_eq!(
            quick
                .share(spec_max, &[], Decides::Ship)
                .pairs_past_max_time,
            0
        );
    }

    #[test]
    fn the_projection_adds_up_the_stages_and_says_what_precision_buys() {
        let b = Budget::new(Duration::from_secs(600), counts(), Duration::from_secs(10));
        let c = Costs {
            build: 2.0,
            verify: 1.0,
            train: 0.5,
            eval: 0.3,
            eval_workloads: 2,
        };
        b.learn(c);
        let stages = [
            StageName::Profile,
            StageName::Cpu,
            StageName::Pgo,
            StageName::Bolt,
        ];
        let p = project(&c, &stages, &b, Duration::from_secs(10), 0.02);
        assert_eq!(p.builds, 6.0);
        assert_eq!(p.build_secs, 12.0);
        assert_eq!(p.verify_secs, 5.0);
        // pgo: a training (0.5) and the coverage pass (2 × 0.3); bolt: a training.
        assert!((p.training_secs - 1.6).abs() < 1e-9, "{p:?}");
        // First looks: 5 comparisons (1 + 2 + 1 + 1) × 4 pairs × 2 × 0.3 s, and the final
        // confirmation's 17 pairs × 2 × 0.3 s (2 % per run: ±1.5 % needs 7, but its span,
        // half of 10 s for each of 2 workloads, needs 10 / 0.6).
        assert!((p.measure_secs[0] - 22.2).abs() < 1e-9, "{p:?}");
        assert!(p.measure_secs[1] >= p.measure_secs[0]);
        // 2 % per run: (1.96 · √2 · 2)² ≈ 30.7 → 31 pairs for ±1 %.
        assert_eq!(p.pairs_for_1pct, 31.0);
        // A share of 10 s (max-time) per workload of 0.15 s runs: ~33 pairs.
        assert!((p.pairs_bought - 10.0 / 0.3).abs() < 1e-6, "{p:?}");
        assert_eq!(p.least_builds, Some([6.0, 12.0]));
        // With the profile search (max and three more when max is kept) and `native` built
        // only after a kept level, the fewest builds are five of nine: the low end counts
        // those.
        // Figures: docs/src/decisions.md, "The projection's low end counts the fewest builds".
        let mut b9 = Budget::new(Duration::from_secs(600), counts(), Duration::from_secs(10));
        b9.counts
            .insert(StageName::Profile, Count { least: 1, most: 4 });
        b9.counts
            .insert(StageName::Cpu, Count { least: 1, most: 2 });
        b9.learn(c);
        let p9 = project(&c, &stages, &b9, Duration::from_secs(10), 0.02);
        assert_eq!((p9.builds, p9.least_builds), (9.0, Some([5.0, 10.0])));
        assert_eq!(
            p9.total()[0] - p9.measure_secs[0],
            10.0 + p9.verify_secs + p9.training_secs
        );
        assert!(
            line(&p9, 600.0, &c).contains("(≈5–9 builds "),
            "{}",
            line(&p9, 600.0, &c)
        );
        let line = line(&p, 600.0, &c);
        assert!(line.contains("(≈6 builds "), "{line}");
        assert!(line.starts_with("projection: "), "{line}");
        assert!(line.contains("within the budget of 10m"), "{line}");
        assert!(!line.contains("more than the budget"), "{line}");
        // What the budget leaves out is named, with the whole ladder's projection and the fix.
        let out = left_out(&[StageName::Profile, StageName::Bolt], &p, 600.0);
        assert!(
            out.starts_with("; profile, bolt do not fit in the budget (the whole ladder: "),
            "{out}"
        );
        assert!(
            out.ends_with(": --budget 20m to try them, or --stages profile,bolt alone"),
            "{out}"
        );
        // A ladder that cannot fit says what happens instead.
        let small = super::line(&p, 20.0, &c);
        assert!(
            small.ends_with("more than the budget: the stages that fit are tried, pgo first"),
            "{small}"
        );
    }

    /// Four workloads whose pairs spread by 10 %: the geometric mean's se is 0.1/(2√n), and
    /// ±1.5 % at 95 % needs 1.96·0.05/√n ≤ ln 1.015 = 0.01489, so n ≥ 43.3.
    #[test]
    fn the_confirmation_buys_the_pairs_its_half_width_needs() {
        assert_eq!(confirmation_pairs(&[0.1; 4], 0), 44);
        // One workload twice as noisy pays for itself: (3·0.01 + 0.04) / 0.04 × 43.3 / 4.
        assert_eq!(confirmation_pairs(&[0.1, 0.1, 0.1, 0.2], 0), 76);
        assert_eq!(confirmation_pairs(&[0.001], 0), 8);
        assert_eq!(confirmation_pairs(&[5.0], 0), 2000);
        assert_eq!(confirmation_pairs(&[], 0), 16);
        assert_eq!(confirmation_pairs(&[f64::NAN, f64::INFINITY], 0), 16);
        // The span's pairs when they are more: quiet pairs do not make it short.
        assert_eq!(confirmation_pairs(&[0.001], 75), 75);
        assert_eq!(confirmation_pairs(&[0.1; 4], 30), 44);
        assert_eq!(confirmation_pairs(&[], 5000), 2000);
    }

    /// Four ~50 ms workloads (0.2 s a round): 15 s at 0.4 s a pair of rounds is 38 pairs;
    /// a max-time of 2 s caps the span at 2·4/2 = 4 s, 10 pairs; unknown costs add none.
    #[test]
    fn the_confirmation_spans_fifteen_seconds_or_half_the_max_time() {
        let s = Duration::from_secs;
        assert_eq!(span_pairs(0.2, 4, s(10)), 38);
        assert_eq!(span_pairs(0.2, 4, s(2)), 10);
        assert_eq!(span_pairs(0.0, 4, s(10)), 0);
        assert_eq!(span_pairs(1e-6, 1, s(3600)), 2000);
    }
}
