//! The joint drivers: the comparisons of one candidate pair over several workloads, advanced
//! look by look — each to its first look, then always the one whose next look buys the
//! geometric mean the most precision per second —, stopping together once the mean answers
//! a keep-or-drop question, or once *faster* has too little conditional power left
//! ([`compare_jointly`]); and the race, several candidates against one rival's shared runs
//! ([`race_jointly`]), driven the same way with one group per entrant. Each workload's own
//! comparison is a [`Drive`].
//!
//! The race: per workload, rounds run the rival once and every live entrant once, in a
//! fresh random order each round; each entrant's pair of a round is (the round's rival run, the
//! entrant's run), so the rival's runs serve every entrant at once. Each (entrant, workload) is an
//! ordinary [`Drive`](super::drive::Drive) over a queue of those pairs, and the entrants are
//! driven as the groups of [`drive_groups`]: every entrant stops as a duel would (decided,
//! futile, `max_time`), and its runs leave the rounds of a workload once its comparison there
//! has stopped, so the others' rounds get shorter. `max_time` bounds the race's running on a
//! workload (every entrant's clock is the race's: the race's running up to the latest round its
//! comparison has runs from), not each entrant's. With `in_turns` the race is a fixed design
//! instead (the confirmation of what ships and its portable alternative): every entrant takes
//! its fixed pairs on every workload, the workloads taking turns, and nothing stops early.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::time::Duration;

use super::comparison::{
    BenchError, BenchOptions, Comparison, ExpectedStatus, Progress, Side, StopReason, ALPHA,
};
use super::drive::{cannot_be_faster, Drive};
use super::source::ProcessSource;
use super::source::{CheckRun, Observation, TimedRuns, PAD_MAX};
use super::stats::{self, Estimate, Verdict};
use crate::process::{Command, ExitStatus, Lingering};

/// One comparison of [`compare_jointly`]: the two commands and the status their runs must
/// have.
pub(crate) struct Pairing<'c> {
    pub a: &'c Command,
    pub b: &'c Command,
    pub expected: ExpectedStatus,
    /// B's first run, whole (its output not cut), is handed to this before its time counts:
    /// an `Err` ends the comparison ([`BenchError::Rejected`]). The ladder's verification of
    /// a candidate on a workload it times.
    pub check_b: Option<&'c CheckRun<'c>>,
    /// The workload's `metric`: each run's figure read from its output instead of timing
    /// it whole.
    pub metric: Option<&'c crate::spec::Metric>,
}

/// Several comparisons (one per workload) run look by look: each to its first look, then
/// always the one whose next look buys the geometric mean the most precision per second
/// (time goes where the variance is), each with its own `max_time` and stopping rules. With
/// `opts.only_faster` (a keep-or-drop decision on the geometric mean) no workload stops on
/// its own verdict (`Drive::in_group`: its pairs still narrow the mean); they stop together
/// as soon as the geometric mean of every comparison's latest estimate (`done` ones, kept
/// from earlier runs, included) is *faster*, or *faster* is out of its reach at the
/// futility level: none runs once the answer is known. Stopping together never calls
/// anything faster that the geometric mean does not already call faster at its own (strictest)
/// level, so it adds no wrong *faster* verdicts. `on_progress(i, p)` reports job `i`;
/// an error names the job it came from.
pub(crate) fn compare_jointly(
    jobs: &[Pairing],
    done: &[Comparison],
    opts: &BenchOptions,
    on_progress: &mut dyn FnMut(usize, &Progress),
) -> Result<Vec<Comparison>, (usize, BenchError)> {
    let mut srcs: Vec<ProcessSource> = jobs
        .iter()
        .map(|j| {
            j.a.prime();
            j.b.prime();
            ProcessSource::new(j.a, j.b, j.expected)
                .checking_b(j.check_b)
                .measuring(j.metric)
        })
        .collect();
    let mut cs = match opts.in_turns {
        true => drive_in_turns(&mut srcs, opts, on_progress, &mut |_| {})?,
        false => drive_jointly(&mut srcs, done, opts, on_progress)?,
    };
    for (c, src) in cs.iter_mut().zip(&srcs) {
        src.fill_in(c);
    }
    Ok(cs)
}

/// [`compare_jointly`] over any sources.
pub(crate) fn drive_jointly<S: TimedRuns>(
    srcs: &mut [S],
    done: &[Comparison],
    opts: &BenchOptions,
    on_progress: &mut dyn FnMut(usize, &Progress),
) -> Result<Vec<Comparison>, (usize, BenchError)> {
    let mut groups = [srcs];
    let mut on_p = |_: usize, i: usize, p: &Progress| on_progress(i, p);
    let mut results = drive_groups(&mut groups, &[done], opts, &mut on_p, &mut |_, _| {});
    results.pop().expect("one group")
}

/// The fixed design (`opts.in_turns`): the workloads take turns one ABBA block at a time
/// until each has its `max_pairs` (or its `max_time` of running is up), then each looks
/// once. Nothing the pairs show stops them, so the estimate is not biased by when it
/// stopped; and each workload's pairs spread over the whole comparison's time instead of a
/// window of their own, so a ratio that drifts over seconds is averaged, not caught in one
/// state (`sim::under_drift_taking_turns_cuts_the_confirmations_misses`). `on_stop(i)` is
/// told when workload `i` has all its pairs (a race takes its runs out of the rounds).
pub(crate) fn drive_in_turns<S: TimedRuns>(
    srcs: &mut [S],
    opts: &BenchOptions,
    on_progress: &mut dyn FnMut(usize, &Progress),
    on_stop: &mut dyn FnMut(usize),
) -> Result<Vec<Comparison>, (usize, BenchError)> {
    let mut drives = Vec::new();
    for (i, src) in srcs.iter_mut().enumerate() {
        let d = Drive::warm_up(src, opts, &mut |p| on_progress(i, p)).map_err(|e| (i, e))?;
        drives.push(d);
    }
    let mut stops: Vec<Option<StopReason>> = vec![None; srcs.len()];
    while stops.iter().any(Option::is_none) {
        for (i, (d, src)) in drives.iter_mut().zip(srcs.iter_mut()).enumerate() {
            if stops[i].is_none() {
                stops[i] = d
                    .turn(src, &mut |p| on_progress(i, p))
                    .map_err(|e| (i, e))?;
                if stops[i].is_some() {
                    on_stop(i);
                }
            }
        }
    }
    Ok(drives
        .into_iter()
        .zip(srcs.iter())
        .zip(stops)
        .map(|((d, src), stop)| d.finish(src, stop.expect("every workload stopped")))
        .collect())
}

/// One group's comparisons (one per workload) and the result of each group of
/// [`drive_groups`]: its comparisons, or the first error and the workload it came from.
pub(crate) type GroupResult = Result<Vec<Comparison>, (usize, BenchError)>;

/// A group of [`drive_groups`] under way.
struct DriveGroup<'o> {
    drives: Vec<Drive<'o>>,
    stops: Vec<Option<StopReason>>,
    error: Option<(usize, BenchError)>,
}

/// Several groups of comparisons (a duel is one group; a race has one per entrant), each
/// group's workloads stopping together as [`compare_jointly`] says, advanced look by look
/// across every group by the same rule: first every comparison to its first look, then the
/// one whose next look buys its group's geometric mean the most precision per second. An
/// error ends its group only. `on_stop(g, i)` is told when comparison `i` of group `g` needs
/// no more runs (stopped, or its group failed) — a race takes its runs out of the rounds.
pub(crate) fn drive_groups<'o, S: TimedRuns>(
    groups: &mut [&mut [S]],
    done: &[&[Comparison]],
    opts: &'o BenchOptions,
    on_progress: &mut dyn FnMut(usize, usize, &Progress),
    on_stop: &mut dyn FnMut(usize, usize),
) -> Vec<GroupResult> {
    let mut states: Vec<DriveGroup<'o>> = Vec::new();
    for (g, srcs) in groups.iter_mut().enumerate() {
        let mut state = DriveGroup {
            drives: Vec::new(),
            stops: vec![None; srcs.len()],
            error: None,
        };
        for (i, src) in srcs.iter_mut().enumerate() {
            match Drive::warm_up(src, opts, &mut |p| on_progress(g, i, p)) {
                Ok(d) => state.drives.push(d.in_group()),
                Err(e) => {
                    fail(&mut state, g, (i, e), on_stop);
                    break;
                }
            }
        }
        states.push(state);
    }
    while let Some((g, i)) = next_to_advance(&states, groups) {
        let state = &mut states[g];
        let advanced =
            state.drives[i].advance_to_look(&mut groups[g][i], &mut |p| on_progress(g, i, p));
        match advanced {
            Err(e) => fail(state, g, (i, e), on_stop),
            Ok(stop) => {
                if stop.is_some() {
                    state.stops[i] = stop;
                    on_stop(g, i);
                }
                stop_together(state, g, done[g], opts, on_stop);
            }
        }
    }
    states
        .into_iter()
        .zip(groups.iter())
        .map(|(state, srcs)| match state.error {
            Some(e) => Err(e),
            None => Ok(state
                .drives
                .into_iter()
                .zip(srcs.iter())
                .zip(state.stops)
                .map(|((d, src), stop)| d.finish(src, stop.expect("every job stopped")))
                .collect()),
        })
        .collect()
}

/// Group `g` ends with `error`: its comparisons still running are given up.
fn fail(
    state: &mut DriveGroup,
    g: usize,
    error: (usize, BenchError),
    on_stop: &mut dyn FnMut(usize, usize),
) {
    for (i, s) in state.stops.iter().enumerate() {
        if s.is_none() {
            on_stop(g, i);
        }
    }
    state.error = Some(error);
}

/// With `opts.only_faster`, once every comparison of group `g` has looked: stop the ones
/// still running when the group's geometric mean has answered ([`together`]).
fn stop_together(
    state: &mut DriveGroup,
    g: usize,
    done: &[Comparison],
    opts: &BenchOptions,
    on_stop: &mut dyn FnMut(usize, usize),
) {
    let all_looked = state.drives.iter().all(|d| d.latest().is_some());
    if !(opts.only_faster && all_looked && state.stops.iter().any(Option::is_none)) {
        return;
    }
    if let Some(reason) = together(&state.drives, &state.stops, done, opts) {
        for (i, s) in state.stops.iter_mut().enumerate() {
            if s.is_none() {
                *s = Some(reason);
                on_stop(g, i);
            }
        }
    }
}

/// Which running comparison to advance to its next look, as `(group, index)`: first every
/// one to its first look, then the one whose next look buys its group's geometric mean the
/// most precision per second. The mean's variance is `Σ se_i² / k²`; the next look about
/// doubles a comparison's pairs, which halves its `se_i²` at the cost of the time it has
/// taken so far, so the score is `se_i² / time_i`: the noisiest workload per second of
/// running it.
fn next_to_advance<S: TimedRuns>(
    states: &[DriveGroup],
    groups: &[&mut [S]],
) -> Option<(usize, usize)> {
    let running = states
        .iter()
        .enumerate()
        .filter(|(_, s)| s.error.is_none())
        .flat_map(|(g, s)| (0..s.drives.len()).map(move |i| (g, i)))
        .filter(|&(g, i)| states[g].stops[i].is_none());
    let latest = |(g, i): (usize, usize)| states[g].drives[i].latest();
    if let Some(gi) = running.clone().find(|&gi| latest(gi).is_none()) {
        return Some(gi);
    }
    let score = |(g, i): (usize, usize)| {
        let se = latest((g, i)).map_or(f64::INFINITY, |a| a.log.se);
        let secs = groups[g][i].elapsed().as_secs_f64().max(1e-9);
        let s = se * se / secs;
        if s.is_nan() {
            f64::INFINITY
        } else {
            s
        }
    };
    running.max_by(|&a, &b| score(a).total_cmp(&score(b)))
}

/// Whether the geometric mean of every latest estimate has answered a keep-or-drop
/// question: [`StopReason::TogetherDecided`] or [`StopReason::TogetherFutile`].
fn together(
    drives: &[Drive],
    stops: &[Option<StopReason>],
    done: &[Comparison],
    opts: &BenchOptions,
) -> Option<StopReason> {
    let mut logs: Vec<stats::LogEstimate> = done.iter().map(|c| c.log).collect();
    let mut confidence = done
        .iter()
        .map(|c| c.estimate.confidence)
        .fold(1.0 - ALPHA, f64::max);
    for a in drives.iter().map(|d| d.latest().expect("each looked once")) {
        logs.push(a.log);
        confidence = confidence.max(a.estimate.confidence);
    }
    let log = stats::geomean_log(&logs);
    // What the mean's standard error would be with every running comparison run to its
    // budget. One that has stopped (its cap or max-time; in a group no workload stops on
    // its own verdict) gets no more pairs: its standard error stays what it is. Counting
    // its budget too makes a near tie whose noisy workloads have stopped look still
    // winnable, and it runs on to max-time.
    // Figures: docs/src/decisions.md, "A near tie is curtailed at the first joint look".
    let mut at_budget: Vec<stats::LogEstimate> = done.iter().map(|c| c.log).collect();
    at_budget.extend(drives.iter().zip(stops).filter_map(|(d, s)| match s {
        Some(_) => d.latest().map(|a| a.log),
        None => d.at_budget(),
    }));
    let se_at_budget = stats::geomean_log(&at_budget).se;
    if Estimate::from_log(&log, confidence, opts.margin).verdict == Verdict::Faster {
        Some(StopReason::TogetherDecided)
    } else if cannot_be_faster(&log, opts.margin)
        || unlikely_to_become_faster(&log, se_at_budget, opts.margin)
    {
        Some(StopReason::TogetherFutile)
    } else {
        None
    }
}

/// Stochastic curtailment of a joint comparison: below this conditional power — the chance
/// that, were the current estimate the truth, the comparison run to its time budget would
/// end *faster* — it stops. Like the interval rule above it is non-binding (it never calls
/// anything faster), so it cannot raise the rate of wrong *faster* verdicts; it saves the
/// budget a near-tie spends narrowing an interval around `1 − margin`, and costs power only
/// for a real speedup whose estimate, once every workload has looked, still sits near 1.
/// It applies from that first joint look: waiting for a second look costs a noisy near tie
/// twice the time in simulation and buys no power
/// (`a_noisy_near_tie_is_curtailed_at_the_first_joint_look`).
const CURTAIL_POWER: f64 = 0.05;

/// Whether the conditional power of reaching *faster* is below [`CURTAIL_POWER`]: the final
/// mean, given the current one (`log`) and the final standard error `se_final`, is normal
/// around the current mean with variance `se² − se_final²` (what the remaining pairs add),
/// and *faster* needs it below `ln(1 − margin) − z·se_final`.
pub(super) fn unlikely_to_become_faster(
    log: &stats::LogEstimate,
    se_final: f64,
    margin: f64,
) -> bool {
    if !(log.se.is_finite() && se_final.is_finite()) {
        return false;
    }
    let needed = (1.0 - margin).ln() - stats::normal_quantile(1.0 - ALPHA / 2.0) * se_final;
    let spread = (log.se * log.se - se_final * se_final).max(0.0).sqrt();
    if spread <= 0.0 {
        return log.mean > needed;
    }
    stats::normal_cdf((needed - log.mean) / spread) < CURTAIL_POWER
}

/// Measure several entrants against one rival: `entrants[j][w]` is entrant `j`'s comparison on workload
/// `w` (`None`: not measured there, e.g. kept from an earlier run) — its `a` the rival (the
/// same command for every entrant of a workload), its `b` the entrant, its `check_b` the entrant's
/// verification on its first run. `done[j]` are entrant `j`'s comparisons kept from earlier
/// runs (its geometric mean counts them, as [`compare_jointly`]'s `done`). One result per
/// entrant: its comparisons, in workload order, or its first error and the index (among its own
/// comparisons) it came from; a failing entrant does not end the others, a failing rival ends
/// them all. `on_progress(j, i, p)` reports entrant `j`'s comparison `i`.
///
pub(crate) fn race_jointly(
    entrants: &[Vec<Option<Pairing>>],
    done: &[&[Comparison]],
    opts: &BenchOptions,
    on_progress: &mut dyn FnMut(usize, usize, &Progress),
) -> Vec<GroupResult> {
    let workloads = entrants.iter().map(Vec::len).max().unwrap_or(0);
    let mut per_workload = Vec::new();
    for w in 0..workloads {
        let jobs: Vec<Option<&Pairing>> = entrants
            .iter()
            .map(|a| a.get(w).and_then(Option::as_ref))
            .collect();
        let Some(first) = jobs.iter().flatten().next() else {
            per_workload.push(None);
            continue;
        };
        first.a.prime();
        // Every run of a round on one CPU: the rival's run pairs with each entrant's.
        let pinnable = jobs.iter().flatten().all(|j| j.a.pinnable && j.b.pinnable);
        let pin = Rc::new(RefCell::new(super::pin::Pinning::here_by_round(pinnable)));
        let rival = ProcessSource::new(first.a, first.a, first.expected)
            .measuring(first.metric)
            .pinned_with(Rc::clone(&pin));
        let srcs = jobs
            .iter()
            .map(|j| {
                j.map(|j| {
                    j.b.prime();
                    ProcessSource::new(j.a, j.b, j.expected)
                        .checking_b(j.check_b)
                        .measuring(j.metric)
                        .pinned_with(Rc::clone(&pin))
                })
            })
            .collect();
        per_workload.push(Some((rival, srcs)));
    }
    let (mut results, rounds) = race(per_workload, done, opts, on_progress);
    for (j, result) in results.iter_mut().enumerate() {
        let Ok(cs) = result else { continue };
        let mine = rounds
            .iter()
            .flatten()
            .filter(|r| r.borrow().entrants[j].is_some());
        for (r, c) in mine.zip(cs.iter_mut()) {
            let r = r.borrow();
            if let Some(src) = &r.entrants[j] {
                src.fill_in(c);
            }
            if c.lingering == Lingering::None {
                c.lingering = r.rival.lingering();
            }
        }
    }
    results
}

/// The rounds of one workload, kept for what the sources know after the race.
type SharedRounds<S> = Rc<RefCell<Rounds<S>>>;

/// [`race_jointly`] over any sources: per workload, the rival's source (its side A is run)
/// and each entrant's (its side B is run; `None`: the entrant is not measured there). Also returns
/// each workload's rounds, whose sources know what the comparisons report.
pub(crate) fn race<S: TimedRuns>(
    per_workload: Vec<Option<(S, Vec<Option<S>>)>>,
    done: &[&[Comparison]],
    opts: &BenchOptions,
    on_progress: &mut dyn FnMut(usize, usize, &Progress),
) -> (Vec<GroupResult>, Vec<Option<SharedRounds<S>>>) {
    let k = done.len();
    let opts = &race_options(opts, k);
    let rounds: Vec<Option<SharedRounds<S>>> = per_workload
        .into_iter()
        .enumerate()
        .map(|(w, e)| {
            e.map(|(rival, entrants)| {
                let seed = opts.seed ^ (w as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                Rc::new(RefCell::new(Rounds::new(rival, entrants, seed)))
            })
        })
        .collect();
    // Entrant j's comparisons, each with the workload it is on.
    let mut where_: Vec<Vec<usize>> = vec![Vec::new(); k];
    let mut srcs: Vec<Vec<EntrantSource<S>>> = (0..k).map(|_| Vec::new()).collect();
    for (w, r) in rounds.iter().enumerate() {
        let Some(r) = r else { continue };
        for j in 0..k {
            if r.borrow().entrants.get(j).is_some_and(Option::is_some) {
                where_[j].push(w);
                srcs[j].push(EntrantSource {
                    rounds: Rc::clone(r),
                    entrant: j,
                    pad: 0,
                    clock: Duration::ZERO,
                });
            }
        }
    }
    let mut on_stop = |j: usize, i: usize| {
        if let Some(r) = &rounds[where_[j][i]] {
            r.borrow_mut().live[j] = false;
        }
    };
    let results = match opts.in_turns {
        true => drive_entrants_in_turns(srcs, &where_, opts, on_progress, &mut on_stop),
        false => {
            let mut groups: Vec<&mut [EntrantSource<S>]> =
                srcs.iter_mut().map(Vec::as_mut_slice).collect();
            drive_groups(&mut groups, done, opts, on_progress, &mut on_stop)
        }
    };
    (results, rounds)
}

/// The race as a fixed design (`opts.in_turns`, the confirmation of what ships and its
/// portable alternative): every entrant's comparison on every workload driven by
/// [`drive_in_turns`], ordered by workload so that the entrants of a workload take their turns
/// one after another on the same rounds. `srcs[j][i]` is entrant `j`'s comparison on workload
/// `where_[j][i]`. An error ends the race: every entrant's result is that error.
fn drive_entrants_in_turns<S: TimedRuns>(
    srcs: Vec<Vec<EntrantSource<S>>>,
    where_: &[Vec<usize>],
    opts: &BenchOptions,
    on_progress: &mut dyn FnMut(usize, usize, &Progress),
    on_stop: &mut dyn FnMut(usize, usize),
) -> Vec<GroupResult> {
    // (workload, entrant, index among the entrant's comparisons), in the order of the turns.
    let mut order: Vec<(usize, usize, usize)> = (where_.iter().enumerate())
        .flat_map(|(j, ws)| ws.iter().enumerate().map(move |(i, &w)| (w, j, i)))
        .collect();
    order.sort_unstable();
    let mut by_entrant: Vec<Vec<Option<EntrantSource<S>>>> = (srcs.into_iter())
        .map(|v| v.into_iter().map(Some).collect())
        .collect();
    let mut flat: Vec<EntrantSource<S>> = (order.iter())
        .map(|&(_, j, i)| by_entrant[j][i].take().expect("each comparison once"))
        .collect();
    let driven = drive_in_turns(
        &mut flat,
        opts,
        &mut |x, p| on_progress(order[x].1, order[x].2, p),
        &mut |x| on_stop(order[x].1, order[x].2),
    );
    match driven {
        Ok(cs) => {
            let mut out: Vec<Vec<Option<Comparison>>> =
                where_.iter().map(|ws| vec![None; ws.len()]).collect();
            for (&(_, j, i), c) in order.iter().zip(cs) {
                out[j][i] = Some(c);
            }
            (out.into_iter())
                .map(|cs| Ok(cs.into_iter().map(|c| c.expect("driven")).collect()))
                .collect()
        }
        Err((x, e)) => {
            let w = order[x].0;
            (where_.iter())
                .map(|ws| Err((ws.iter().position(|&v| v == w).unwrap_or(0), again(&e))))
                .collect()
        }
    }
}

/// A run waiting for an entrant's comparison: what it measured, its pad, and the race's clock
/// at the end of its round.
type Queued = (Observation, usize, Duration);

/// The race's options: those of a duel, with `max_time` the race's bound on a workload,
/// `max_time · (k + 1) / 2` for `k` entrants. A round of the race runs `k + 1` programs where a
/// duel's pair runs 2, so while every entrant runs each gets the pairs a duel gets in
/// `max_time`, and once some have stopped the others get more; the race never runs longer
/// than the `k` duels it replaces could (`k · max_time`). Bounded by `max_time` itself, the
/// race of three found a planted 3 % in 66 races of 300 where three duels found it in 158
/// (`a_race_of_three_keeps_the_error_rate_and_costs_less_than_three_duels`).
pub(crate) fn race_options(opts: &BenchOptions, k: usize) -> BenchOptions {
    BenchOptions {
        max_time: opts.max_time.mul_f64((k.max(1) + 1) as f64 / 2.0),
        ..opts.clone()
    }
}

/// One workload's rounds: the rival and every live entrant once each, in a random order.
pub(crate) struct Rounds<S> {
    rng: fastrand::Rng,
    rival: S,
    entrants: Vec<Option<S>>,
    /// Whether entrant `j` still takes part (its comparison here has not stopped).
    live: Vec<bool>,
    /// Per entrant, the runs its comparison has not taken yet: the rival's (`[0]`) and its own
    /// (`[1]`).
    queues: Vec<[VecDeque<Queued>; 2]>,
    /// Per entrant, how its own run failed.
    failed: Vec<Option<BenchError>>,
    /// How the rival's run failed: every entrant's comparison ends with it.
    rival_failed: Option<BenchError>,
}

impl<S: TimedRuns> Rounds<S> {
    fn new(rival: S, entrants: Vec<Option<S>>, seed: u64) -> Self {
        let k = entrants.len();
        Rounds {
            rng: fastrand::Rng::with_seed(seed),
            rival,
            live: entrants.iter().map(Option::is_some).collect(),
            entrants,
            queues: (0..k).map(|_| Default::default()).collect(),
            failed: (0..k).map(|_| None).collect(),
            rival_failed: None,
        }
    }

    /// The race's running on this workload: the rival's and every entrant's.
    pub(crate) fn elapsed(&self) -> Duration {
        self.entrants
            .iter()
            .flatten()
            .map(TimedRuns::elapsed)
            .sum::<Duration>()
            + self.rival.elapsed()
    }

    /// One round: the rival and every live entrant once, in a fresh random order. Each run is
    /// queued with the race's clock at the round's end: an entrant's comparison has taken the
    /// race's time up to the rounds its runs come from.
    fn round(&mut self) {
        let mut order: Vec<Option<usize>> = std::iter::once(None)
            .chain((0..self.entrants.len()).filter(|&j| self.live[j]).map(Some))
            .collect();
        self.rng.shuffle(&mut order);
        self.rival.new_round();
        let mut ran = Vec::new();
        for who in order {
            let pad = self.rng.usize(0..PAD_MAX);
            match who {
                None => match self.rival.run(Side::A, pad) {
                    Ok(o) => ran.push((None, o, pad)),
                    Err(e) => self.rival_failed = Some(e),
                },
                Some(j) => {
                    let src = self.entrants[j].as_mut().expect("a live entrant runs here");
                    match src.run(Side::B, pad) {
                        Ok(o) => ran.push((Some(j), o, pad)),
                        Err(e) => {
                            self.failed[j] = Some(e);
                            self.live[j] = false;
                        }
                    }
                }
            }
            if self.rival_failed.is_some() {
                return;
            }
        }
        let clock = self.elapsed();
        for (who, o, pad) in ran {
            match who {
                Some(j) => self.queues[j][1].push_back((o, pad, clock)),
                None => {
                    for j in (0..self.entrants.len()).filter(|&j| self.live[j]) {
                        self.queues[j][0].push_back((o.clone(), pad, clock));
                    }
                }
            }
        }
    }

    /// Entrant `j`'s next run of `side`: from its queue, else from new rounds.
    fn take(&mut self, j: usize, side: Side) -> Result<Queued, BenchError> {
        let q = usize::from(side == Side::B);
        loop {
            if let Some(run) = self.queues[j][q].pop_front() {
                return Ok(run);
            }
            if let Some(e) = self.failed[j].take() {
                return Err(e);
            }
            if let Some(e) = &self.rival_failed {
                return Err(again(e));
            }
            // Asked for more runs, so its comparison is running: it takes part again.
            self.live[j] = true;
            self.round();
        }
    }
}

/// The rival's error again, for every entrant it ends.
fn again(e: &BenchError) -> BenchError {
    match e {
        BenchError::RunFailed {
            side,
            command,
            status,
            timed_out,
            what,
            stderr_tail,
        } => BenchError::RunFailed {
            side: *side,
            command: command.clone(),
            status: *status,
            timed_out: *timed_out,
            what: what.clone(),
            stderr_tail: stderr_tail.clone(),
        },
        BenchError::Process { side, error } => BenchError::RunFailed {
            side: *side,
            command: String::new(),
            status: ExitStatus {
                code: None,
                signal: None,
            },
            timed_out: false,
            what: error.to_string(),
            stderr_tail: String::new(),
        },
        BenchError::Rejected(why) => BenchError::Rejected(why.clone()),
        BenchError::Metric {
            side,
            command,
            what,
        } => BenchError::Metric {
            side: *side,
            command: command.clone(),
            what: what.clone(),
        },
    }
}

/// Entrant `entrant`'s comparison on one workload: its side A the rival's runs of the rounds, its
/// side B its own.
pub(crate) struct EntrantSource<S> {
    rounds: SharedRounds<S>,
    entrant: usize,
    pad: usize,
    /// The race's clock at the end of the latest round this comparison has runs from.
    clock: Duration,
}

impl<S: TimedRuns> TimedRuns for EntrantSource<S> {
    fn run(&mut self, side: Side, _pad: usize) -> Result<Observation, BenchError> {
        let (o, pad, clock) = self.rounds.borrow_mut().take(self.entrant, side)?;
        self.pad = pad;
        self.clock = self.clock.max(clock);
        Ok(o)
    }
    fn elapsed(&self) -> Duration {
        self.clock
    }
    fn pad_used(&self, _asked: usize) -> usize {
        self.pad
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::rc::Rc;
    use std::time::Duration;

    use super::drive_in_turns;
    use crate::bench::comparison::{BenchError, BenchOptions, Side, StopReason};
    use crate::bench::source::{Observation, TimedRuns};

    /// Runs of `secs` each, writing its workload's index into the shared order.
    struct Logged {
        id: usize,
        secs: f64,
        clock: Duration,
        order: Rc<RefCell<Vec<usize>>>,
    }

    impl TimedRuns for Logged {
        fn run(&mut self, side: Side, _pad: usize) -> Result<Observation, BenchError> {
            self.order.borrow_mut().push(self.id);
            let scale = if side == Side::B { 0.9 } else { 1.0 };
            let wall = Duration::from_secs_f64(self.secs * scale);
            self.clock += wall;
            Ok(Observation::of_wall(wall))
        }
        fn elapsed(&self) -> Duration {
            self.clock
        }
    }

    /// Three workloads of 6 fixed pairs take turns a block (4 runs) at a time; the third,
    /// whose runs take 1 s, is out of its 2 s max-time after its first block and looks
    /// then, while the others run on to their 6 pairs. No look stops one early: each
    /// has one look, at the end.
    #[test]
    fn workloads_take_turns_a_block_at_a_time_and_look_once() {
        let order = Rc::new(RefCell::new(Vec::new()));
        let mut srcs: Vec<Logged> = [0.01, 0.01, 1.0]
            .iter()
            .enumerate()
            .map(|(id, &secs)| Logged {
                id,
                secs,
                clock: Duration::ZERO,
                order: Rc::clone(&order),
            })
            .collect();
        let opts = BenchOptions {
            warmup: 0,
            min_pairs: 6,
            max_pairs: 6,
            max_time: Duration::from_secs(2),
            in_turns: true,
            ..BenchOptions::default()
        };
        let cs = drive_in_turns(&mut srcs, &opts, &mut |_, _| {}, &mut |_| {}).unwrap();
        let blocks: Vec<usize> = order.borrow().chunks(4).map(|b| b[0]).collect();
        assert_eq!(blocks, [0, 1, 2, 0, 1, 0, 1]);
        let got: Vec<(u32, u32, StopReason)> = cs.iter().map(|c| (c.n, c.looks, c.stop)).collect();
        assert_eq!(
            got,
            [
                (6, 1, StopReason::MaxPairs),
                (6, 1, StopReason::MaxPairs),
                (2, 1, StopReason::MaxTime)
            ]
        );
        assert!(
            cs[0].estimate.ci_high < 1.0,
            "B is 10 % faster: {:?}",
            cs[0].estimate
        );
    }
}

#[cfg(test)]
mod race_tests {
    use super::*;
    use crate::bench::comparison::{StopReason, LADDER_MIN_PAIRS};
    use crate::bench::stats;

    /// Runs of `secs · (1 + 1 %·noise)` seconds; the B side fails from its `fail_at`-th run.
    struct Fake {
        rng: fastrand::Rng,
        secs: f64,
        fail_at: Option<u32>,
        runs: u32,
        clock: Duration,
    }

    fn fake(seed: u64, secs: f64, fail_at: Option<u32>) -> Fake {
        Fake {
            rng: fastrand::Rng::with_seed(seed),
            secs,
            fail_at,
            runs: 0,
            clock: Duration::ZERO,
        }
    }

    impl TimedRuns for Fake {
        fn run(&mut self, side: Side, _pad: usize) -> Result<Observation, BenchError> {
            self.runs += 1;
            if side == Side::B && self.fail_at.is_some_and(|n| self.runs >= n) {
                return Err(BenchError::Rejected("wrong output".into()));
            }
            let wall = Duration::from_secs_f64(self.secs * (1.0 + 0.01 * (self.rng.f64() - 0.5)));
            self.clock += wall;
            Ok(Observation::of_wall(wall))
        }
        fn elapsed(&self) -> Duration {
            self.clock
        }
    }

    fn options() -> BenchOptions {
        BenchOptions {
            only_faster: true,
            warmup: 0,
            min_pairs: LADDER_MIN_PAIRS,
            max_pairs: 200,
            max_time: Duration::from_secs(20),
            margin: 0.01,
            seed: 7,
            pairs_past_max_time: 0,
            estimator: Default::default(),
            in_turns: false,
        }
    }

    /// Entrant 0 is 20 % faster, entrant 1 fails its third run, entrant 2 ties, on two workloads (entrant 2
    /// not measured on the second): entrant 1's error is its own, entrant 0 is called faster on
    /// both, and the rival ran once per round — as often as the entrant that ran most.
    #[test]
    fn a_failing_entrant_ends_alone_and_the_rival_serves_every_entrant() {
        let per_workload = (0..2)
            .map(|w| {
                let entrants = vec![
                    Some(fake(w, 0.08, None)),
                    Some(fake(w + 10, 0.1, Some(3))),
                    (w == 0).then(|| fake(w + 20, 0.1, None)),
                ];
                Some((fake(w + 30, 0.1, None), entrants))
            })
            .collect();
        let done: Vec<&[Comparison]> = vec![&[]; 3];
        let (results, rounds) = race(per_workload, &done, &options(), &mut |_, _, _| {});
        let entrant0 = results[0].as_ref().expect("entrant 0 runs to the end");
        assert_eq!(entrant0.len(), 2);
        assert!(entrant0
            .iter()
            .all(|c| c.estimate.verdict == stats::Verdict::Faster));
        assert!(matches!(results[1], Err((0, BenchError::Rejected(_)))));
        assert_eq!(results[2].as_ref().expect("entrant 2 ends").len(), 1);
        for r in rounds.iter().flatten() {
            let r = r.borrow();
            let most = r.entrants.iter().flatten().map(|a| a.runs).max().unwrap();
            assert_eq!(r.rival.runs, most, "one rival run a round");
        }
    }

    /// The fixed design (`in_turns`, the confirmation of what ships and its portable
    /// alternative): every entrant gets exactly its pairs on every workload, none stops at a
    /// verdict, the rival runs once a round for both, and each entrant's estimate is its own.
    #[test]
    fn a_fixed_race_gives_every_entrant_its_pairs_on_one_series_of_the_rival() {
        let per_workload = (0..2)
            .map(|w| {
                let entrants = vec![Some(fake(w, 0.08, None)), Some(fake(w + 10, 0.1, None))];
                Some((fake(w + 30, 0.1, None), entrants))
            })
            .collect();
        let opts = BenchOptions {
            only_faster: false,
            min_pairs: 12,
            max_pairs: 12,
            max_time: Duration::from_secs(600),
            in_turns: true,
            ..options()
        };
        let done: Vec<&[Comparison]> = vec![&[]; 2];
        let (results, rounds) = race(per_workload, &done, &opts, &mut |_, _, _| {});
        for (j, result) in results.iter().enumerate() {
            let cs = result.as_ref().expect("no entrant fails");
            assert_eq!(cs.len(), 2);
            for c in cs {
                assert_eq!((c.n, c.stop), (12, StopReason::MaxPairs), "entrant {j}");
                let faster = c.estimate.verdict == stats::Verdict::Faster;
                assert_eq!(faster, j == 0, "entrant {j}: {:?}", c.estimate);
            }
        }
        for r in rounds.iter().flatten() {
            let r = r.borrow();
            let runs: Vec<u32> = r.entrants.iter().flatten().map(|a| a.runs).collect();
            assert_eq!(runs, [r.rival.runs; 2], "both entrants run every round");
            assert_eq!(r.rival.runs, 12, "a pair a round");
        }
    }
}
