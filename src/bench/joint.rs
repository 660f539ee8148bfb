//! The joint driver: the comparisons of one candidate pair over several workloads, advanced
//! look by look — each to its first look, then always the one whose next look buys the
//! geometric mean the most precision per second —, stopping together once the mean answers
//! a keep-or-drop question, or once *faster* has too little conditional power left
//! ([`compare_jointly`]). Each workload's own comparison is a [`Drive`].

use super::comparison::{
    BenchError, BenchOptions, Comparison, ExpectedStatus, Progress, StopReason, ALPHA,
};
use super::drive::{cannot_be_faster, Drive};
use super::source::ProcessSource;
use super::source::{CheckRun, TimedRuns};
use super::stats::{self, Estimate, Verdict};
use crate::process::Command;

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
