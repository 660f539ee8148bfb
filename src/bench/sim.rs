//! Seeded simulation of the measuring engine under the noise a shared machine makes:
//! what [`Estimator::Trimmed`] buys over [`Estimator::Mean`], and that it keeps the error
//! rates. Test-only: nothing here is compiled into the tool.
//!
//! The noise model (`Disturbed`) is fitted to a real sample: the 144 pairs of one cold run
//! on a shared VM with nothing else running (every ladder comparison of the run;
//! report.json's `samples`). Each pair's `d = ln(b/a)` minus
//! its comparison's median had the quantiles 1 % −0.255, 5 % −0.152, 10 % −0.097, 25 %
//! −0.030, 75 % 0.035, 90 % 0.085, 95 % 0.138, 99 % 0.252: a narrow core and heavy tails.
//! A run's time is `base · ratio · exp(σ·Z) · (1 + J)`, `Z` standard normal, and with
//! probability `P` a disturbance `J ~ Exponential(mean M)` (another process took the CPU
//! for a while; a run is slowed down, never sped up), else `J = 0`. A grid search over σ,
//! `P`, `M` for the least squared distance between those quantiles and the model's gave
//! σ = 0.025, `P` = 0.4, `M` = 0.08 (`the_model_reproduces_the_sample`). On top of it,
//! optionally, the ratio drifts over seconds ([`DRIFT_SD`]): pairs close in time share it.
//! Figures: docs/src/decisions.md, "The simulation's noise model".

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use super::comparison::{BenchError, BenchOptions, Side, LADDER_MIN_PAIRS};
use super::joint::{drive_in_turns, drive_jointly, race};
use super::source::{Observation, TimedRuns};
use super::stats::{Estimate, Estimator};
use super::{geomean, Comparison};

/// The fitted model's parameters (see the module's doc).
const SIGMA: f64 = 0.025;
const P: f64 = 0.4;
const M: f64 = 0.08;

/// The drift of the ratio itself, fitted to one time-ordered series of 458 pairs of one
/// workload (baseline vs pgo, ~70 ms runs, 64 s): blocks of 8 to 64 pairs
/// (1–9 s) varied by 0.023–0.025 (sd of log ratios) beyond what their pairs' own spread
/// explains, so the drift's sd is about 0.024 and it outlives those blocks; 20 s
/// re-measurements of four workloads agreeing within 0.2 % bound its correlation time to a
/// few seconds. Modelled as B's time × `exp(η)`, η an AR(1) process in the clock's time:
/// sd [`DRIFT_SD`], correlation time [`DRIFT_SECS`].
const DRIFT_SD: f64 = 0.024;
const DRIFT_SECS: f64 = 5.0;

/// Simulated runs under the fitted noise: B is `ratio` times A's time.
struct Disturbed {
    rng: fastrand::Rng,
    base: f64,
    ratio: f64,
    /// Scales the disturbances' mean: 1 is the fitted machine, 0 lognormal noise alone.
    disturbance: f64,
    clock: Duration,
    /// The ratio's drift: its sd (0: none), its current value and when it was last moved.
    drift: (f64, f64, Duration),
    /// The time every source of one trial shares (the drift moves with it): each run
    /// advances it, so workloads measured one after another see different drift.
    now: Rc<Cell<Duration>>,
}

impl Disturbed {
    fn new(seed: u64, base: f64, ratio: f64, disturbance: f64) -> Self {
        Disturbed {
            rng: fastrand::Rng::with_seed(seed),
            base,
            ratio,
            disturbance,
            clock: Duration::ZERO,
            drift: (0.0, 0.0, Duration::ZERO),
            now: Rc::default(),
        }
    }

    /// The same, with the ratio drifting as fitted ([`DRIFT_SD`]), from its stationary law,
    /// on the time `now` shared with the trial's other sources.
    fn drifting(mut self, now: &Rc<Cell<Duration>>) -> Self {
        let eta = DRIFT_SD * normal(&mut self.rng);
        self.drift = (DRIFT_SD, eta, Duration::ZERO);
        self.now = Rc::clone(now);
        self
    }

    /// The drift's factor on B now: η moved by the shared time since its last move.
    fn drift_factor(&mut self) -> f64 {
        let (sd, eta, then) = self.drift;
        if sd == 0.0 {
            return 1.0;
        }
        let now = self.now.get();
        let rho = (-(now - then).as_secs_f64() / DRIFT_SECS).exp();
        let eta = rho * eta + (1.0 - rho * rho).sqrt() * sd * normal(&mut self.rng);
        self.drift = (sd, eta, now);
        eta.exp()
    }

    fn time(&mut self, scale: f64) -> f64 {
        let z = normal(&mut self.rng);
        let j = match self.rng.f64() < P && self.disturbance > 0.0 {
            true => -M * self.disturbance * (1.0 - self.rng.f64()).ln(),
            false => 0.0,
        };
        self.base * scale * (SIGMA * z).exp() * (1.0 + j)
    }
}

fn normal(rng: &mut fastrand::Rng) -> f64 {
    let (u, v) = (1.0 - rng.f64(), rng.f64());
    (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
}

impl TimedRuns for Disturbed {
    fn run(&mut self, side: Side, _pad: usize) -> Result<Observation, BenchError> {
        let scale = if side == Side::B {
            self.ratio * self.drift_factor()
        } else {
            1.0
        };
        let wall = Duration::from_secs_f64(self.time(scale));
        self.clock += wall + Duration::from_millis(1);
        self.now
            .set(self.now.get() + wall + Duration::from_millis(1));
        Ok(Observation::of_wall(wall))
    }
    fn elapsed(&self) -> Duration {
        self.clock
    }
}

/// What a batch of simulated ladder comparisons cost and called.
#[derive(Debug)]
struct Tally {
    /// Mean seconds of running per comparison (all its workloads).
    secs: f64,
    /// Mean pairs per comparison (all its workloads).
    pairs: f64,
    /// Comparisons whose geometric mean the ladder would keep (`Estimate::keeps`).
    kept: usize,
    /// Comparisons whose geometric mean's interval missed the planted ratio.
    missed: usize,
}

/// `trials` ladder comparisons (keep-or-drop, four workloads of `base` seconds measured
/// jointly, `max_time` each) of a candidate `ratio` times its rival's time.
fn ladder(
    trials: u64,
    base: f64,
    max_time: u64,
    ratio: f64,
    disturbance: f64,
    estimator: Estimator,
) -> Tally {
    ladder_in(
        trials,
        base,
        max_time,
        ratio,
        (disturbance, false),
        estimator,
    )
}

/// [`ladder`] under `noise`: the disturbances' scale, and whether the ratio drifts.
fn ladder_in(
    trials: u64,
    base: f64,
    max_time: u64,
    ratio: f64,
    noise: (f64, bool),
    estimator: Estimator,
) -> Tally {
    let (disturbance, drift) = noise;
    let (mut secs, mut pairs, mut kept, mut missed) = (0.0, 0u64, 0, 0);
    for t in 0..trials {
        let o = BenchOptions {
            only_faster: true,
            warmup: 0,
            min_pairs: LADDER_MIN_PAIRS,
            max_pairs: 5000,
            max_time: Duration::from_secs(max_time),
            margin: 0.01,
            seed: t,
            pairs_past_max_time: 0,
            estimator,
            in_turns: false,
        };
        let now = Rc::default();
        let mut sims: Vec<Disturbed> = (0..4)
            .map(|i| Disturbed::new(t * 10 + i, base, ratio, disturbance))
            .map(|d| if drift { d.drifting(&now) } else { d })
            .collect();
        let cs: Vec<Comparison> = drive_jointly(&mut sims, &[], &o, &mut |_, _| {}).unwrap();
        secs += sims.iter().map(|s| s.clock.as_secs_f64()).sum::<f64>();
        pairs += cs.iter().map(|c| u64::from(c.n)).sum::<u64>();
        let e = geomean(&cs, 0.01);
        kept += usize::from(e.keeps(0.01));
        missed += usize::from(!(e.ci_low <= ratio && ratio <= e.ci_high));
    }
    Tally {
        secs: secs / trials as f64,
        pairs: pairs as f64 / trials as f64,
        kept,
        missed,
    }
}

fn quantile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// The fitted model's `d = ln(b/a)` has the sample's quantiles (module doc), each within
/// 0.02 (the sample's own 1 % and 99 % quantiles rest on one or two pairs).
#[test]
fn the_model_reproduces_the_sample() {
    let mut sim = Disturbed::new(1, 0.3, 1.0, 1.0);
    let mut d: Vec<f64> = (0..40_000)
        .map(|_| (sim.time(1.0) / sim.time(1.0)).ln())
        .collect();
    d.sort_by(f64::total_cmp);
    let sample = [
        (0.01, -0.255),
        (0.05, -0.152),
        (0.10, -0.097),
        (0.25, -0.030),
        (0.75, 0.035),
        (0.90, 0.085),
        (0.95, 0.138),
        (0.99, 0.252),
    ];
    for (p, want) in sample {
        let got = quantile(&d, p);
        assert!(
            (got - want).abs() < 0.02,
            "quantile {p}: {got:.3} vs {want}"
        );
    }
}

/// Under the fitted noise at a pace of 300 ms runs, four workloads measured
/// jointly as the ladder does: the trimmed mean with 6 s per workload finds a planted 3 %
/// speedup as often as the mean did with 10 s, in about two thirds of the running, and
/// neither keeps A vs A more than 5 % of the time. Measured (300 trials each; kept of 300,
/// seconds of running per comparison), mean → trimmed at the same max-time:
/// 3 % at 6 s 125 → 164, at 10 s 171 → 212, at 20 s 223 → 257; 2 % at 6 s 50 → 80, at
/// 10 s 66 → 97, at 14 s 85 → 121; A vs A at 10 s 2 → 3. The trimmed mean at 6 s (164,
/// 18.6 s) against the mean at 10 s (171, 26.2 s); for 2 %, at 6 s (80, 16.7 s) against the
/// mean at 14 s (85, 32.5 s): half the time.
#[test]
fn trimming_saves_time_under_the_machines_noise() {
    let trials = 300;
    let at = |max_time, ratio, estimator| ladder(trials, 0.3, max_time, ratio, 1.0, estimator);
    let tie = at(10, 1.0, Estimator::Trimmed);
    let tie_mean = at(10, 1.0, Estimator::Mean);
    eprintln!("A vs A at 10 s: trimmed {tie:?}\n  mean {tie_mean:?}");
    assert!(tie.kept * 20 <= trials as usize, "A vs A kept {}", tie.kept);
    assert!(tie.missed * 20 <= trials as usize, "{tie:?}");
    let before = at(10, 0.97, Estimator::Mean);
    let after = at(6, 0.97, Estimator::Trimmed);
    eprintln!("3 % faster: mean at 10 s {before:?}\n  trimmed at 6 s {after:?}");
    assert!(after.kept + 10 >= before.kept, "{after:?} vs {before:?}");
    assert!(after.secs < 0.8 * before.secs, "{after:?} vs {before:?}");
    assert!(after.pairs < 0.8 * before.pairs, "{after:?} vs {before:?}");
    assert!(after.missed * 20 <= trials as usize, "{after:?}");
    let same_time = at(10, 0.97, Estimator::Trimmed);
    assert!(
        same_time.kept > before.kept + 20,
        "{same_time:?} vs {before:?}"
    );
}

/// Without disturbances (lognormal noise alone, σ 2.5 %) trimming costs little, and
/// keeps the error rates: where the noise has no tails it has nothing to gain.
#[test]
fn without_tails_trimming_keeps_the_error_rates() {
    let trials = 200;
    for (ratio, kept_at_least) in [(1.0, 0), (0.97, 190)] {
        let t = ladder(trials, 0.3, 10, ratio, 0.0, Estimator::Trimmed);
        let m = ladder(trials, 0.3, 10, ratio, 0.0, Estimator::Mean);
        eprintln!("lognormal only, ratio {ratio}: trimmed {t:?}\n  mean {m:?}");
        assert!(t.kept >= kept_at_least && t.missed * 20 <= trials as usize);
        if ratio == 1.0 {
            assert!(t.kept * 20 <= trials as usize);
        }
    }
}

/// What a batch of simulated races (or of the duels they replace) cost and called.
#[derive(Debug)]
struct RaceTally {
    /// Mean seconds of running per race (every entrant, every workload).
    secs: f64,
    /// Races in which some entrant was kept.
    any_kept: usize,
    /// Races in which `planted` was kept and had the best estimate of those kept.
    caught: usize,
}

/// The ladder's options for a simulated comparison.
fn ladder_options(seed: u64, max_time: u64) -> BenchOptions {
    BenchOptions {
        only_faster: true,
        warmup: 0,
        min_pairs: LADDER_MIN_PAIRS,
        max_pairs: 5000,
        max_time: Duration::from_secs(max_time),
        margin: 0.01,
        seed,
        pairs_past_max_time: 0,
        estimator: Estimator::Trimmed,
        in_turns: false,
    }
}

/// Which entrant the ladder would take: the best estimate among those it would keep.
fn winner(means: &[Option<Estimate>]) -> Option<usize> {
    (0..means.len())
        .filter(|&j| means[j].is_some_and(|e| e.keeps(0.01)))
        .min_by(|&a, &b| {
            let r = |j: usize| means[j].map_or(f64::INFINITY, |e| e.ratio);
            r(a).total_cmp(&r(b))
        })
}

/// `trials` races of entrants `ratios` times the rival's time over four workloads of `base`
/// seconds, `max_time` per workload for the race; with `duels`, each entrant measured alone
/// against the rival instead (four workloads jointly, `max_time` each, as today).
fn races(trials: u64, base: f64, max_time: u64, ratios: &[f64], duels: bool) -> RaceTally {
    let planted = (0..ratios.len()).find(|&j| ratios[j] < 1.0);
    let (mut secs, mut any_kept, mut caught) = (0.0, 0, 0);
    for t in 0..trials {
        let o = ladder_options(t, max_time);
        let seed = |w: u64, j: u64| t * 1000 + w * 10 + j;
        let results: Vec<Vec<Comparison>> = if duels {
            (0..ratios.len())
                .map(|j| {
                    let mut sims: Vec<Disturbed> = (0..4)
                        .map(|w| Disturbed::new(seed(w, j as u64), base, ratios[j], 1.0))
                        .collect();
                    let cs = drive_jointly(&mut sims, &[], &o, &mut |_, _| {}).unwrap();
                    secs += sims.iter().map(|s| s.clock.as_secs_f64()).sum::<f64>();
                    cs
                })
                .collect()
        } else {
            let per_workload = (0..4)
                .map(|w| {
                    let rival = Disturbed::new(seed(w, 9), base, 1.0, 1.0);
                    let entrants = (0..ratios.len())
                        .map(|j| Some(Disturbed::new(seed(w, j as u64), base, ratios[j], 1.0)))
                        .collect();
                    Some((rival, entrants))
                })
                .collect();
            let done: Vec<&[Comparison]> = vec![&[]; ratios.len()];
            let (results, rounds) = race(per_workload, &done, &o, &mut |_, _, _| {});
            secs += rounds
                .iter()
                .flatten()
                .map(|r| r.borrow().elapsed().as_secs_f64())
                .sum::<f64>();
            results.into_iter().map(Result::unwrap).collect()
        };
        let means: Vec<Option<Estimate>> =
            results.iter().map(|cs| Some(geomean(cs, 0.01))).collect();
        let best = winner(&means);
        any_kept += usize::from(best.is_some());
        caught += usize::from(best.is_some() && best == planted);
    }
    RaceTally {
        secs: secs / trials as f64,
        any_kept,
        caught,
    }
}

/// Three entrants raced against one rival, four workloads of 300 ms runs under the fitted
/// noise, as the ladder measures (trimmed mean, margin 1 %, max-time 6 s per workload; the
/// race bounded by `race_options`): (a) A vs A — every entrant the rival's equal — keeps an entrant
/// in at most 5 % of races: 7 of 300 (three duels: 9), 24.9 s of running against 35.8 s;
/// (b) one entrant 3 % faster, two equal: the race takes the planted entrant in 171 of 300 races in
/// 31.6 s of running, three duels in 158 in 42.4 s. (At max-time 10 s: A vs A 6 against 4;
/// planted 224 in 41.3 s against 204 in 53.5 s.) Each entrant's α is a duel's: the shared
/// rival makes the entrants' errors move together, so the race's any-entrant rate stays under the
/// three duels' sum.
#[test]
fn a_race_of_three_keeps_the_error_rate_and_costs_less_than_three_duels() {
    let trials = 300;
    let at = |ratios: &[f64], duels| races(trials, 0.3, 6, ratios, duels);
    let tie = at(&[1.0, 1.0, 1.0], false);
    let tie_duels = at(&[1.0, 1.0, 1.0], true);
    eprintln!("A vs A: race {tie:?}\n  duels {tie_duels:?}");
    assert!(tie.any_kept * 20 <= trials as usize, "{tie:?}");
    assert!(tie.secs < 0.85 * tie_duels.secs, "{tie:?} vs {tie_duels:?}");
    let race = at(&[1.0, 0.97, 1.0], false);
    let duels = at(&[1.0, 0.97, 1.0], true);
    eprintln!("planted 3 %: race {race:?}\n  duels {duels:?}");
    assert!(race.caught >= duels.caught, "{race:?} vs {duels:?}");
    assert!(race.secs < 0.85 * duels.secs, "{race:?} vs {duels:?}");
}

/// A race of one entrant is a duel: the same pairs' worth of power at the same cost (their
/// runs differ only in their seeds).
#[test]
fn a_race_of_one_is_a_duel() {
    let race = races(300, 0.3, 6, &[0.97], false);
    let duel = races(300, 0.3, 6, &[0.97], true);
    eprintln!("race {race:?}\n  duel {duel:?}");
    assert!(
        race.caught.abs_diff(duel.caught) <= 15,
        "{race:?} vs {duel:?}"
    );
    assert!(
        (race.secs / duel.secs - 1.0).abs() < 0.1,
        "{race:?} vs {duel:?}"
    );
}

/// `trials` confirmations (four workloads of `base` seconds, `pairs` each fixed in advance,
/// one look; `in_turns`: the workloads taking turns, else one after another) of a candidate
/// `ratio` times the baseline's time under the fitted noise and drift: how many estimates of
/// the geometric mean were more than 1.5 % off, and how many intervals missed the ratio.
fn confirmations(trials: u64, base: f64, pairs: u32, ratio: f64, in_turns: bool) -> (usize, usize) {
    confirmations_in(trials, base, pairs, ratio, (in_turns, true))
}

/// [`confirmations`] with the ratio drifting or not (`how`: in turns, drifting).
fn confirmations_in(
    trials: u64,
    base: f64,
    pairs: u32,
    ratio: f64,
    how: (bool, bool),
) -> (usize, usize) {
    let (in_turns, drift) = how;
    let (mut off, mut missed) = (0, 0);
    for t in 0..trials {
        let o = BenchOptions {
            only_faster: false,
            min_pairs: pairs,
            max_pairs: pairs,
            max_time: Duration::from_secs(3600),
            in_turns,
            ..ladder_options(t, 3600)
        };
        let now = Rc::default();
        let mut sims: Vec<Disturbed> = (0..4)
            .map(|w| Disturbed::new(t * 10 + w, base, ratio, 1.0))
            .map(|d| if drift { d.drifting(&now) } else { d })
            .collect();
        let cs = match in_turns {
            true => drive_in_turns(&mut sims, &o, &mut |_, _| {}, &mut |_| {}),
            false => drive_jointly(&mut sims, &[], &o, &mut |_, _| {}),
        };
        let e = geomean(&cs.unwrap(), 0.01);
        off += usize::from((e.ratio / ratio).ln().abs() > 0.015f64.ln_1p());
        missed += usize::from(!(e.ci_low <= ratio && ratio <= e.ci_high));
    }
    (off, missed)
}

/// Under the fitted drift, with four workloads of ~50 ms measured one after another, a
/// confirmation of 8 pairs each (3.2 s of running) is more than 1.5 % off in 106 of 300
/// trials; one that spans 15 s (38 pairs, `pipeline::budget::span_pairs`) in 64.
#[test]
fn under_drift_the_confirmation_needs_its_span() {
    let trials = 300;
    let short = confirmations(trials, 0.05, 8, 0.76, false);
    let spanned = confirmations(trials, 0.05, 38, 0.76, false);
    eprintln!("(off by > 1.5 %, interval missed) 8 pairs: {short:?}; 38 pairs: {spanned:?}");
    assert!(spanned.0 * 3 < short.0 * 2, "{short:?} vs {spanned:?}");
}

/// Under the fitted drift, the same 15 s confirmation with the workloads taking turns
/// (`joint::drive_in_turns`) instead of one after another: 41 against 64 of 300 trials more
/// than 1.5 % off; its interval, which counts the drift (`PairedAnalysis::widened`), missed
/// the ratio 27 times, against 97 for the other's, which does not.
#[test]
fn under_drift_taking_turns_cuts_the_confirmations_misses() {
    let trials = 300;
    let in_turns = confirmations(trials, 0.05, 38, 0.76, true);
    let one_by_one = confirmations(trials, 0.05, 38, 0.76, false);
    eprintln!("(off by > 1.5 %, missed) in turns: {in_turns:?}; one by one: {one_by_one:?}");
    assert!(
        in_turns.0 * 4 < one_by_one.0 * 3,
        "{in_turns:?} vs {one_by_one:?}"
    );
    assert!(in_turns.1 < one_by_one.1, "{in_turns:?} vs {one_by_one:?}");
}

/// Under the fitted drift the ladder's A vs A keeps at most 5 %: 6 of 300 at a pace of
/// ~50 ms runs and 7 at 300 ms (3 without drift); a planted 3 % is kept 233 and
/// 181 times.
#[test]
fn under_drift_the_ladder_keeps_its_error_rate() {
    let trials = 300;
    for base in [0.05, 0.3] {
        let tie = ladder_in(trials, base, 10, 1.0, (1.0, true), Estimator::Trimmed);
        let planted = ladder_in(trials, base, 10, 0.97, (1.0, true), Estimator::Trimmed);
        eprintln!("base {base}: A vs A {tie:?}\n  3 % {planted:?}");
        assert!(tie.kept * 20 <= trials as usize, "{tie:?}");
        assert!(planted.kept * 2 > trials as usize, "{planted:?}");
    }
}

/// The 15 s confirmation in turns, its interval checked against its batches'
/// (`PairedAnalysis::widened`): under the fitted drift it missed the ratio 27 times of 300
/// (67 from its pairs' spread alone, before the check), without drift 4 (a 95 % interval:
/// 15 expected; the check only ever widens it).
#[test]
fn under_drift_the_confirmations_interval_counts_it() {
    let trials = 300;
    let drifting = confirmations_in(trials, 0.05, 38, 0.76, (true, true));
    let steady = confirmations_in(trials, 0.05, 38, 0.76, (true, false));
    eprintln!("(off by > 1.5 %, missed) drifting: {drifting:?}; steady: {steady:?}");
    assert!(drifting.1 * 10 <= trials as usize, "{drifting:?}");
    assert!(steady.1 * 20 <= trials as usize, "{steady:?}");
}

/// `trials` keep-or-drop duels over four workloads of `base` seconds (the ladder's options,
/// `max_time` per workload), workload `w` of B at `ratios[w]` times A's time: how many
/// were kept, and the mean seconds of running.
fn mixed_duels(trials: u64, base: f64, max_time: u64, ratios: [f64; 4]) -> (usize, f64) {
    let (mut kept, mut secs) = (0, 0.0);
    for t in 0..trials {
        let o = ladder_options(t, max_time);
        let mut sims: Vec<Disturbed> = (0..4)
            .map(|w| Disturbed::new(t * 1000 + w as u64, base, ratios[w], 1.0))
            .collect();
        let cs = drive_jointly(&mut sims, &[], &o, &mut |_, _| {}).unwrap();
        secs += sims.iter().map(|s| s.clock.as_secs_f64()).sum::<f64>();
        kept += usize::from(geomean(&cs, 0.01).keeps(0.01));
    }
    (kept, secs / trials as f64)
}

/// A candidate of mixed effects, as a CPU level can be (one workload 35 % faster, three
/// 3.5–8 % slower: 7 % faster on the geometric mean), is decided on that mean: its
/// workloads run until the mean answers, not until each answers alone (`Drive::in_group`).
/// 300 duels of 50 ms workloads under the fitted noise, 10 s each at most: kept 300 times
/// in 2.4 s of running (with each workload stopping on its own verdict: 260, in 2.4 s);
/// A vs A kept 3 times in 4.8 s.
#[test]
fn a_mixed_speedup_is_decided_on_its_geometric_mean() {
    let trials = 300;
    let mixed = mixed_duels(trials, 0.05, 10, [0.65, 1.08, 1.035, 1.035]);
    let tie = mixed_duels(trials, 0.05, 10, [1.0; 4]);
    eprintln!("mixed: {mixed:?}; A vs A: {tie:?}");
    assert!(tie.0 * 20 <= trials as usize, "A vs A: {tie:?}");
    assert!(mixed.0 * 10 >= trials as usize * 9, "mixed: {mixed:?}");
}
