//! The joint driver: the comparisons of one candidate pair over several workloads, advanced
//! look by look — each to its first look, then always the one whose next look buys the
//! geometric mean the most precision per second —, stopping together once the mean answers
//! a keep-or-drop question, or once *faster* has too little conditional power left
//! ([`compare_jointly`]). Each workload's own comparison is a [`Drive`].

use super::drive::{cannot_be_faster, Drive};
use super::runner::{
    BenchError, BenchOptions, CheckRun, Comparison, ExpectedStatus, ProcessSource, Progress,
    Source, StopReason, ALPHA,
};
use super::stats::{self, Estimate, Verdict};
use crate::process::Command;

/// One comparison of [`compare_jointly`]: the two commands and the status their runs must
/// have.
pub struct Job<'c> {
    pub a: &'c Command,
    pub b: &'c Command,
    pub expected: ExpectedStatus,
    /// B's first run, whole (its output not cut), is handed to this before its time counts:
    /// an `Err` ends the comparison ([`BenchError::Rejected`]). The ladder's verification of
    /// a candidate on a workload it times.
    pub check_b: Option<&'c CheckRun<'c>>,
}

/// Several comparisons (one per workload) run look by look: each to its first look, then
/// always the one whose next look buys the geometric mean the most precision per second
/// (time goes where the variance is), each with its own `max_time` and stopping rules. With
/// `opts.only_faster` (a keep-or-drop decision on the geometric mean) the ones still
/// running also stop together as soon as the geometric mean of every comparison's latest
/// estimate (`done` ones, kept from earlier runs, included) is *faster*, or *faster* is
/// out of its reach at the futility level: time goes to the workloads that still decide
/// something, and none once the answer is known. Stopping together never calls anything
/// faster that the geometric mean does not already call faster at its own (strictest)
/// level, so it adds no wrong *faster* verdicts. `on_progress(i, p)` reports job `i`;
/// an error names the job it came from.
pub fn compare_jointly(
    jobs: &[Job],
    done: &[Comparison],
    opts: &BenchOptions,
    on_progress: &mut dyn FnMut(usize, &Progress),
) -> Result<Vec<Comparison>, (usize, BenchError)> {
    let mut srcs: Vec<ProcessSource> = jobs
        .iter()
        .map(|j| {
            j.a.prime();
            j.b.prime();
            ProcessSource::new(j.a, j.b, j.expected).checking_b(j.check_b)
        })
        .collect();
    let mut cs = drive_jointly(&mut srcs, done, opts, on_progress)?;
    for (c, src) in cs.iter_mut().zip(&srcs) {
        src.fill_in(c);
    }
    Ok(cs)
}

/// [`compare_jointly`] over any sources.
pub(crate) fn drive_jointly<S: Source>(
    srcs: &mut [S],
    done: &[Comparison],
    opts: &BenchOptions,
    on_progress: &mut dyn FnMut(usize, &Progress),
) -> Result<Vec<Comparison>, (usize, BenchError)> {
    let mut drives = Vec::new();
    for (i, src) in srcs.iter_mut().enumerate() {
        let d = Drive::warm_up(src, opts, &mut |p| on_progress(i, p)).map_err(|e| (i, e))?;
        drives.push(d);
    }
    let mut stops: Vec<Option<StopReason>> = vec![None; srcs.len()];
    while let Some(i) = next_to_advance(&drives, srcs, &stops) {
        stops[i] = drives[i]
            .advance_to_look(&mut srcs[i], &mut |p| on_progress(i, p))
            .map_err(|e| (i, e))?;
        let all_looked = drives.iter().all(|d| d.latest().is_some());
        if opts.only_faster && all_looked && stops.iter().any(Option::is_none) {
            if let Some(reason) = together(&drives, &stops, done, opts) {
                for s in stops.iter_mut().filter(|s| s.is_none()) {
                    *s = Some(reason);
                }
            }
        }
    }
    Ok(drives
        .into_iter()
        .zip(srcs.iter())
        .zip(stops)
        .map(|((d, src), stop)| d.finish(src, stop.expect("every job stopped")))
        .collect())
}

/// Which running comparison to advance to its next look: first every one to its first
/// look, then the one whose next look buys the geometric mean the most precision per
/// second. The mean's variance is `Σ se_i² / k²`; the next look about doubles a
/// comparison's pairs, which halves its `se_i²` at the cost of the time it has taken so
/// far, so the score is `se_i² / time_i`: the noisiest workload per second of running it.
fn next_to_advance<S: Source>(
    drives: &[Drive],
    srcs: &[S],
    stops: &[Option<StopReason>],
) -> Option<usize> {
    let running = (0..drives.len()).filter(|&i| stops[i].is_none());
    if let Some(i) = running.clone().find(|&i| drives[i].latest().is_none()) {
        return Some(i);
    }
    let score = |i: usize| {
        let se = drives[i].latest().map_or(f64::INFINITY, |a| a.log.se);
        let secs = srcs[i].elapsed().as_secs_f64().max(1e-9);
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
    // budget. One that has stopped on its own (decided, or *faster* out of its own reach)
    // gets no more pairs: its standard error stays what it is. (Counting its budget too
    // made a near tie whose noisy workloads had stopped look still winnable, and it ran
    // on to max-time: the demo's `bolt vs pgo` took 28 s for 1.000 [0.982, 1.019].)
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
/// It applies from that first joint look: waiting for a second look (as it first did) cost
/// a noisy near tie twice the time in simulation and bought no power
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
