//! Timing a candidate against another on every eval workload with the bench engine, each
//! side in its own private cwd when the workload writes files, with a progress line per
//! workload on a terminal (pairs, a bar and an upper bound of the time left, the running
//! interval coloured by verdict). A candidate whose eval workloads are still to be checked
//! comes with its `verify::TimedVerification`: its first timed run of each is handed to
//! `Verifier::verify_timed`, the hook that checks it.

use std::path::Path;
use std::time::{Duration, Instant};

use super::budget::Share;
use crate::bench::stats::LogEstimate;
use crate::bench::{
    self, BenchOptions, Comparison, Estimate, ExpectedStatus, Pairing, Phase, Progress, StopReason,
    Verdict,
};
use crate::cache::VerdictCache;
use crate::context::{Candidate, Context};
use crate::spec::{Expect, Workload};
use crate::ui::{Tone, Ui};
use crate::verify::{Reference, TimedVerification, Verifier};

mod race;
pub(crate) use race::race;

/// A candidate against another over every eval workload: the geometric mean (its estimate,
/// and on the log scale, to chain it with others), and each workload's comparison.
pub(crate) struct Measured {
    pub estimate: Estimate,
    pub log: LogEstimate,
    /// The level `estimate`'s interval is at (the strictest of the workloads').
    pub confidence: f64,
    pub per_workload: Vec<(String, Comparison)>,
    /// Why the comparison is *budget-limited*: its share of the run's budget ran out before
    /// a verdict, and about how long it would need.
    pub budget_limited: Option<String>,
}

/// What a comparison decides and what it may spend: with `only_faster` (a keep-or-drop
/// decision) a workload's comparison stops as soon as *faster* is out of reach; `share` is
/// its part of the run's budget.
#[derive(Clone, Copy)]
pub(crate) struct Terms {
    pub only_faster: bool,
    pub share: Share,
}

/// A comparison's bench options, their max-time cut to its share of the budget, and the
/// max-time it has in full (the spec's, weighted): its verdicts are kept under the full one,
/// and a comparison the share cut short is not kept.
pub(crate) struct Capped {
    pub opts: BenchOptions,
    pub full_max: Duration,
}

impl Capped {
    /// `opts` within `share` of the budget, `full_max` being their max-time in full.
    fn within(mut opts: BenchOptions, full_max: Duration, share: Share) -> Self {
        opts.max_time = share.max_time.min(full_max);
        opts.pairs_past_max_time = share.pairs_past_max_time;
        Capped { opts, full_max }
    }

    /// `opts` as they are, not cut by a budget.
    pub(crate) fn uncut(opts: BenchOptions) -> Self {
        let full_max = opts.max_time;
        Capped { opts, full_max }
    }
}

/// The two sides of a comparison, each a label and a binary: `b` timed against `a`, with
/// the shared library `b_preload` preloaded into it when given ([`preview`]).
#[derive(Clone, Copy)]
pub(crate) struct Versus<'a> {
    pub a: (&'a str, &'a Path),
    pub b: (&'a str, &'a Path),
    pub b_preload: Option<&'a Path>,
}

/// Compare `cand` with `rival` on every eval workload under `terms`. With `check`, the
/// candidate's first timed run of each workload is its verification run.
pub(crate) fn measure(
    ctx: &Context,
    rival: &Candidate,
    cand: &Candidate,
    verifier: &Verifier,
    terms: Terms,
    cache: &VerdictCache,
    verification: Option<&TimedVerification>,
) -> anyhow::Result<Measured> {
    let capped = match terms.only_faster {
        true => keep_or_drop_options(ctx, rival, cand, terms.share),
        false => {
            let opts = BenchOptions::from_config(&ctx.spec.bench);
            let full = opts.max_time;
            Capped::within(opts, full, terms.share)
        }
    };
    measured(ctx, rival, cand, verifier, &capped, cache, verification)
}

/// What a refinement's comparison gets of `max-time` (`stage::refines`): its near ties —
/// often a run's costliest comparisons — stop at half the time.
const REFINEMENT_TIME: f64 = 0.5;

/// A keep-or-drop comparison's options within `share`, and its full max-time: the spec's,
/// [`REFINEMENT_TIME`] of it for a refinement.
fn keep_or_drop_options(
    ctx: &Context,
    rival: &Candidate,
    cand: &Candidate,
    share: Share,
) -> Capped {
    let opts = BenchOptions::for_ladder(&ctx.spec.bench);
    let full = match crate::stage::refines(cand.stage, cand.variant(), rival.stage) {
        true => opts.max_time.mul_f64(REFINEMENT_TIME),
        false => opts.max_time,
    };
    Capped::within(opts, full, share)
}

/// What ships against the baseline on fresh pairs: `pairs` per workload, fixed before the
/// first of them is run, the workloads taking turns, and one look at them (or fewer, when
/// its `share` of the budget ends first) — no verdict stops it early, so its estimate is not biased by when it stopped, and
/// none of its pairs chose the candidate, so the choice does not bias it either.
pub(crate) fn confirm(
    ctx: &Context,
    baseline: &Candidate,
    cands: &[&Candidate],
    verifier: &Verifier,
    share: Share,
    pairs: u32,
    cache: &VerdictCache,
) -> anyhow::Result<Vec<Measured>> {
    let capped = || {
        let mut opts = BenchOptions::from_config(&ctx.spec.bench);
        let full = opts.max_time;
        opts.min_pairs = pairs;
        opts.max_pairs = pairs;
        // The workloads take turns, so each one's pairs spread over the whole confirmation
        // (`bench::joint::drive_in_turns`): the ratio drifts over seconds on shared machines.
        opts.in_turns = true;
        Capped::within(opts, full, share)
    };
    if let [cand] = cands {
        return Ok(vec![measured(
            ctx,
            baseline,
            cand,
            verifier,
            &capped(),
            cache,
            None,
        )?]);
    }
    // Several (what ships and its portable alternative): one series of the baseline's
    // runs serves them all, as in a race, but each with its fixed pairs.
    let verifications = vec![None; cands.len()];
    race::raced(
        ctx,
        baseline,
        cands,
        verifier,
        &|_| capped(),
        cache,
        &verifications,
    )?
    .into_iter()
    .collect()
}

/// `cand` against `rival` on every eval workload under `capped`, and their geometric mean.
fn measured(
    ctx: &Context,
    rival: &Candidate,
    cand: &Candidate,
    verifier: &Verifier,
    capped: &Capped,
    cache: &VerdictCache,
    verification: Option<&TimedVerification>,
) -> anyhow::Result<Measured> {
    let (rival_label, cand_label) = (rival.label(), cand.label());
    let sides = Versus {
        a: (&rival_label, &rival.binary),
        b: (&cand_label, &cand.binary),
        b_preload: None,
    };
    measured_sides(ctx, sides, verifier, capped, cache, verification)
}

/// `best` with the shared library `lib` preloaded (`sys::PRELOAD_VAR`), labelled
/// `label`, against `best` itself on every eval workload: a keep-or-drop comparison within
/// `share`, nothing built (the alloc stage's preview of an allocator). Its runs are not
/// checked: nothing it times ships.
pub(crate) fn preview(
    ctx: &Context,
    best: &Candidate,
    (label, lib): (&str, &Path),
    verifier: &Verifier,
    share: Share,
    cache: &VerdictCache,
) -> anyhow::Result<Measured> {
    let opts = BenchOptions::for_ladder(&ctx.spec.bench);
    let full = opts.max_time;
    let best_label = best.label();
    let sides = Versus {
        a: (&best_label, &best.binary),
        b: (label, &best.binary),
        b_preload: Some(lib),
    };
    let capped = Capped::within(opts, full, share);
    measured_sides(ctx, sides, verifier, &capped, cache, None)
}

/// `sides.b` against `sides.a` on every eval workload under `capped`, and their geometric
/// mean.
fn measured_sides(
    ctx: &Context,
    sides: Versus,
    verifier: &Verifier,
    capped: &Capped,
    cache: &VerdictCache,
    verification: Option<&TimedVerification>,
) -> anyhow::Result<Measured> {
    let per_workload = compare_over_workloads(ctx, sides, capped, verifier, verification, cache)?;
    let all: Vec<Comparison> = per_workload.iter().map(|(_, c)| c.clone()).collect();
    let (log, confidence) = bench::geomean_log(&all);
    let estimate = bench::geomean(&all, capped.opts.margin);
    let budget_limited = budget_limited(&all, &estimate, &capped.opts, capped.full_max);
    Ok(Measured {
        estimate,
        log,
        confidence,
        per_workload,
        budget_limited,
    })
}

/// Whether the budget's share, not the spec's `max-time`, ended a comparison short of a
/// verdict; then what it bought and about what deciding would take (the interval narrows
/// as 1/√n, and deciding needs it about as narrow as the margin).
fn budget_limited(
    all: &[Comparison],
    estimate: &Estimate,
    opts: &BenchOptions,
    spec_max: Duration,
) -> Option<String> {
    let cut = opts.max_time < spec_max && all.iter().any(|c| c.stop == StopReason::MaxTime);
    if !cut || estimate.verdict.is_decided() {
        return None;
    }
    let half = (estimate.ci_high.ln() - estimate.ci_low.ln()) / 2.0;
    let factor = (half / opts.margin.max(1e-6)).powi(2).max(1.0);
    let pairs = all.iter().map(|c| c.n).min().unwrap_or(0);
    Some(format!(
        "budget-limited: its share of the run's budget, {} per workload, bought {pairs} pair(s); about {} per workload would decide it (a larger --budget)",
        crate::util::format_span(opts.max_time.as_secs_f64()),
        crate::util::format_span(opts.max_time.as_secs_f64() * factor),
    ))
}

/// The exit status a timed run of `w` must have: 0, or for `expect = "exit-code"` the
/// baseline's (any, when the baseline's status varied from run to run).
pub(crate) fn expected_status(w: &Workload, reference: &Reference) -> ExpectedStatus {
    if w.expect != Expect::ExitCode {
        return ExpectedStatus::Success;
    }
    if let Some(n) = reference.nondeterminism(&w.name) {
        if !n.status_stable {
            return ExpectedStatus::Any;
        }
    }
    match reference.observed.get(&w.name) {
        Some(o) => ExpectedStatus::Exactly(o.outcome.status),
        None => ExpectedStatus::SameAsFirstRun,
    }
}

/// `sides.b` against `sides.a` on every eval workload under `capped`; a verdict kept from
/// an earlier run on the same binaries, workload, options and machine is reused. The
/// others run look by look, time going where the variance is (`bench::compare_jointly`),
/// so a keep-or-drop question stops as soon as their geometric mean answers it. With
/// `check`, b's first timed run of each is checked (`Verifier::verify_timed`). `check` calls
/// it directly with its own labels (the revision, the working tree).
pub(crate) fn compare_over_workloads(
    ctx: &Context,
    sides: Versus,
    capped: &Capped,
    verifier: &Verifier,
    verification: Option<&TimedVerification>,
    cache: &VerdictCache,
) -> anyhow::Result<Vec<(String, Comparison)>> {
    let (opts, full_max) = (&capped.opts, capped.full_max);
    let eval = eval_workloads(ctx)?;
    let _quiet = quiet_ahead(ctx, opts.in_turns);
    let start = Instant::now();
    let recorded_then = ctx.recorded_secs();
    // Keyed under the comparison's full max-time (`full_max`: the spec's, weighted), not
    // the budget's share (which differs from run to run); a comparison the share cut short is
    // not kept, so a larger budget measures again.
    // Nor under the pairs past it the budget gave what decides the ship: an unchanged re-run
    // reuses the verdict whatever its budget then pays for.
    let key_opts = BenchOptions {
        max_time: opts.max_time.max(full_max),
        pairs_past_max_time: 0,
        ..opts.clone()
    };
    let keys = verdict_keys(ctx, cache, sides, &eval, &key_opts);
    let cut_short =
        |c: &Comparison| opts.max_time < key_opts.max_time && c.stop == StopReason::MaxTime;
    let mut found: Vec<Option<Comparison>> = Vec::new();
    for (w, key) in eval.iter().zip(&keys) {
        let kept = kept(ctx, cache, key.as_deref(), &w.name);
        if let Some(c) = &kept {
            ctx.ui().info(&format!(
                "{}: {} (kept from an earlier run: same binaries, workload and machine; --fresh measures again)",
                w.name,
                c.headline()
            ));
        }
        found.push(kept);
    }
    let todo: Vec<&Workload> = eval
        .iter()
        .zip(&found)
        .filter(|(_, c)| c.is_none())
        .map(|(w, _)| *w)
        .collect();
    if !todo.is_empty() {
        let done: Vec<Comparison> = found.iter().flatten().cloned().collect();
        let mut measured =
            measure_jointly(ctx, sides, opts, verifier, verification, &todo, &done)?.into_iter();
        for (key, slot) in keys.iter().zip(found.iter_mut()) {
            if slot.is_none() {
                let c = measured.next().expect("one per workload measured");
                if let Some(k) = key.as_ref().filter(|_| !cut_short(&c)) {
                    cache.put(k, &c);
                }
                *slot = Some(c);
            }
        }
        ctx.record_own(
            &format!("{} vs {}: measure", sides.b.0, sides.a.0),
            start,
            recorded_then,
        );
    }
    Ok(eval
        .iter()
        .zip(found)
        .map(|(w, c)| (w.name.clone(), c.expect("measured or kept")))
        .collect())
}

/// The comparison kept under `key` (`what`: whose, for the warning); `None` without a key,
/// without one kept, or when the one kept no longer agrees with its own samples
/// (`Comparison::disagreement`): that one is removed and measured again, saying so, so
/// a row and its workloads' lines always come from one comparison that holds.
pub(super) fn kept(
    ctx: &Context,
    cache: &VerdictCache,
    key: Option<&str>,
    what: &str,
) -> Option<Comparison> {
    match cache.get(key?) {
        Ok(found) => found,
        Err(why) => {
            ctx.ui().warn(&format!(
                "{what}: the verdict kept from an earlier run no longer agrees with its own samples ({why}): dropped, measuring again"
            ));
            None
        }
    }
}

/// The spec's eval workloads; an error with the fix when there are none.
fn eval_workloads<'s>(ctx: &Context<'s>) -> anyhow::Result<Vec<&'s Workload>> {
    let eval: Vec<&Workload> = ctx.spec.workloads.iter().filter(|w| w.eval).collect();
    if eval.is_empty() {
        anyhow::bail!(
            "{}: no workload has `use = [\"eval\"]`, so nothing can be measured\n  fix: mark at least one workload for eval",
            ctx.spec.path.display()
        );
    }
    Ok(eval)
}

/// Each workload's verdict key for `b` against `a`, `None` (said once a run, with the fix)
/// where its inputs cannot be keyed: too large a folder to hash.
fn verdict_keys(
    ctx: &Context,
    cache: &VerdictCache,
    sides: Versus,
    eval: &[&Workload],
    key_opts: &BenchOptions,
) -> Vec<Option<String>> {
    let binaries = (sides.a.1, sides.b.1);
    eval.iter()
        .map(
            |w| match cache.key(binaries, sides.b_preload, w, key_opts) {
                Ok(k) => Some(k),
                Err(e) => {
                    if let Some(warning) = cache.unkept_warning(&w.name, &e) {
                        ctx.ui().warn(&warning);
                    }
                    None
                }
            },
        )
        .collect()
}

/// Nothing timed may share a CPU with a build started ahead: they are kept on other CPUs
/// or stopped while the returned guard lives (`Ahead::quiet`), or waited for where they
/// cannot be, the wait recorded as building time (so the run's `time:` line adds up).
/// The confirmation of what ships (`confirming`: its fixed design) stops them: every stage
/// is done, so none is for this run any more, and nothing then loads the machine beside
/// the figure the run reports.
fn quiet_ahead(ctx: &Context, confirming: bool) -> Option<crate::context::ahead::Paused> {
    let waited = Instant::now();
    let paused = ctx.ahead.quiet(!confirming);
    let secs = waited.elapsed().as_secs_f64();
    if secs >= 0.05 {
        ctx.record(crate::report::AHEAD_WAIT_STEP, secs, None);
    }
    paused
}

/// Measure `todo` jointly against the `done` comparisons, each side in its own private cwd
/// when the workload writes files, with a progress line on a terminal.
fn measure_jointly(
    ctx: &Context,
    sides: Versus,
    opts: &BenchOptions,
    verifier: &Verifier,
    verification: Option<&TimedVerification>,
    todo: &[&Workload],
    done: &[Comparison],
) -> anyhow::Result<Vec<Comparison>> {
    let ((a_label, a), (b_label, b)) = (sides.a, sides.b);
    // Each side writes its declared files into its own copy of the cwd.
    let mut sandboxes = Vec::new();
    let mut commands = Vec::new();
    for w in todo {
        let (wa, sa) = ctx.sandboxed(w, "bench-a")?;
        let (wb, sb) = ctx.sandboxed(w, "bench-b")?;
        let expected = expected_status(w, verifier.reference()?);
        let mut cb = ctx.command(&wb, b);
        if let (Some(lib), Some(var)) = (sides.b_preload, crate::sys::PRELOAD_VAR) {
            cb = cb.env(var, lib);
        }
        // B's checked first run writes its outputs where the candidate's are saved.
        cb.spool = verification.map(|c| c.spool(w));
        commands.push((ctx.command(&wa, a), cb, expected));
        sandboxes.push((sa, sb));
    }
    let hooks: Vec<_> = todo
        .iter()
        .zip(&sandboxes)
        .map(|(w, (_, sb))| verification.map(|c| verifier.verify_timed(c, w, sb.as_ref())))
        .collect();
    let jobs: Vec<Pairing> = (commands.iter().zip(&hooks).zip(todo))
        .map(|(((ca, cb, expected), hook), w)| Pairing {
            a: ca,
            b: cb,
            expected: *expected,
            check_b: hook.as_deref(),
            metric: w.metric.as_ref(),
        })
        .collect();
    let pair = format!("{b_label} vs {a_label}");
    let n = todo.len();
    let how = match opts.in_turns {
        true => format!("{} pairs each, in turns", opts.max_pairs),
        false => "where the variance is".to_string(),
    };
    ctx.ui()
        .progress(&format!("{pair}: measuring [{n} workload(s), {how}]"));
    let started = std::time::Instant::now();
    let spinner = ctx.ui().spinner(pair.clone());
    let label = |j: usize| format!("{pair}: measuring [{}/{n}] {}", j + 1, todo[j].name);
    let result = bench::compare_jointly(&jobs, done, opts, &mut |j, p| {
        if let Phase::Look { look } = p.phase {
            ctx.ui().event(
                "estimate",
                serde_json::json!({
                    "candidate": b_label, "rival": a_label, "workload": todo[j].name,
                    "look": look, "pairs": p.pairs, "estimate": p.estimate,
                }),
            );
        }
        spinner.set_message(progress_message(&label(j), p, ctx.ui()));
    });
    spinner.finish_and_clear();
    drop(jobs);
    drop(hooks);
    drop(sandboxes);
    // Which side is which, so a failed run is the culprit's (a rival printing no usable
    // figure is not the candidate's fault).
    let measured = result.map_err(|(j, e)| {
        let which = format!("workload `{}` (A: {a_label}, B: {b_label})", todo[j].name);
        anyhow::Error::new(e).context(which)
    })?;
    tell_measured(ctx, &pair, todo, &measured, started);
    Ok(measured)
}

/// What a joint measurement found, said once it is done: warnings per workload, each
/// workload's headline on a terminal, then the tally.
fn tell_measured(
    ctx: &Context,
    pair: &str,
    todo: &[&Workload],
    measured: &[Comparison],
    started: std::time::Instant,
) {
    for (w, c) in todo.iter().zip(measured) {
        if let Some(warning) = c.lingering.warning() {
            ctx.warn_once(&format!("workload `{}` {warning}", w.name));
        }
        if let Some(note) = &c.stop_note {
            ctx.ui().warn(&format!("workload `{}`: {note}", w.name));
        }
        if ctx.ui().animate {
            ctx.ui().info(&format!("{}: {}", w.name, c.headline()));
        }
    }
    let named: Vec<(&str, &Comparison)> = todo
        .iter()
        .zip(measured)
        .map(|(w, c)| (w.name.as_str(), c))
        .collect();
    let tally = crate::report::shipped::tally(&named).unwrap_or_default();
    ctx.ui().done(
        &format!("{pair} measured: {tally}"),
        started.elapsed().as_secs_f64(),
    );
}

/// `label: 12/40 pairs [#####···············] ≤ 14 s left, time ratio 0.93 [0.90, 0.96] faster`:
/// the time left is an upper bound (the schedule's last pair, or max-time, whichever is
/// sooner; a decided verdict stops earlier).
fn progress_message(label: &str, p: &Progress, ui: &Ui) -> String {
    if let Phase::Warmup { done, total } = p.phase {
        return format!("{label}: warm-up {}/{total}", done + 1);
    }
    let elapsed = p.elapsed.as_secs_f64();
    let by_time = (p.max_time.as_secs_f64() - elapsed).max(0.0);
    let left = match p.planned_pairs {
        Some(n) if p.pairs > 0 && n >= p.pairs => {
            (elapsed / f64::from(p.pairs) * f64::from(n - p.pairs)).min(by_time)
        }
        _ => by_time,
    };
    let done = if elapsed + left > 0.0 {
        elapsed / (elapsed + left)
    } else {
        0.0
    };
    const WIDTH: usize = 20;
    let filled = ((done * WIDTH as f64).round() as usize).min(WIDTH);
    let bar = format!("{}{}", "#".repeat(filled), "·".repeat(WIDTH - filled));
    let pairs = match p.planned_pairs {
        Some(n) => format!("{}/{n}", p.pairs),
        None => p.pairs.to_string(),
    };
    let est = p
        .estimate
        .map(|e| {
            let tone = match e.verdict {
                Verdict::Faster => Tone::Good,
                Verdict::Slower => Tone::Bad,
                _ => Tone::Step,
            };
            format!(", {}", ui.paint(&e.to_string(), tone))
        })
        .unwrap_or_default();
    format!("{label}: {pairs} pairs [{bar}] ≤ {left:.0} s left{est}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn progress_shows_pairs_bar_time_left_and_the_interval() {
        let p = Progress {
            phase: Phase::Measuring,
            pairs: 10,
            planned_pairs: Some(40),
            elapsed: Duration::from_secs(5),
            max_time: Duration::from_secs(10),
            estimate: Some(Estimate {
                ratio: 0.93,
                ci_low: 0.9,
                ci_high: 0.96,
                verdict: Verdict::Faster,
                confidence: 0.95,
            }),
        };
        // 30 more pairs at 0.5 s would take 15 s; max-time leaves 5 s.
        assert_eq!(
            progress_message("pgo vs baseline", &p, &Ui::plain()),
            "pgo vs baseline: 10/40 pairs [##########··········] ≤ 5 s left, time ratio 0.930 [0.900, 0.960] faster"
        );
        let warm = Progress {
            phase: Phase::Warmup { done: 0, total: 2 },
            estimate: None,
            ..p
        };
        assert_eq!(progress_message("x", &warm, &Ui::plain()), "x: warm-up 1/2");
    }
}
