//! Timing a candidate against another on every eval workload with the bench engine, each
//! side in its own private cwd when the workload writes files, with a progress line per
//! workload on a terminal (pairs, a bar and an upper bound of the time left, the running
//! interval coloured by verdict). A candidate whose eval workloads are still to be checked
//! comes with its `verify::TimedVerification`: its first timed run of each is handed to
//! `Verifier::verify_timed`, the hook that checks it.
//!
//! One candidate is a duel ([`measure`], `bench::compare_jointly`); several of a stage are
//! a race on the rival's shared runs ([`race`], `bench::race_jointly`), and so are what
//! ships and its portable alternative confirmed together ([`confirm`]). Either way each
//! workload's verdict kept from an earlier run is reused ([`Found`]) and the rest measured,
//! then kept for later runs, and the geometric mean taken ([`Measured::of`]). What it says
//! on the terminal is `say`'s.

use std::path::Path;
use std::time::{Duration, Instant};

use super::budget::Share;
use crate::bench::stats::LogEstimate;
use crate::bench::{
    self, BenchOptions, Comparison, Estimate, ExpectedStatus, Pairing, Phase, StopReason,
};
use crate::cache::VerdictCache;
use crate::context::sandbox::Sandbox;
use crate::context::{Candidate, Context};
use crate::process::Command;
use crate::spec::{Expect, Workload};
use crate::verify::{Reference, TimedVerification, Verifier};

mod say;

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

impl Measured {
    /// The geometric mean of `per_workload`'s comparisons, made under `capped`.
    fn of(per_workload: Vec<(String, Comparison)>, capped: &Capped) -> Self {
        let all: Vec<Comparison> = per_workload.iter().map(|(_, c)| c.clone()).collect();
        let (log, confidence) = bench::geomean_log(&all);
        let estimate = Estimate::from_log(&log, confidence, capped.opts.margin);
        Measured {
            budget_limited: budget_limited(&all, &estimate, &capped.opts, capped.full_max),
            estimate,
            log,
            confidence,
            per_workload,
        }
    }
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
    raced(
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
    Ok(Measured::of(per_workload, capped))
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
    let eval = eval_workloads(ctx)?;
    let _quiet = quiet_ahead(ctx, capped.opts.in_turns);
    let start = Instant::now();
    let recorded_then = ctx.recorded_secs();
    let found = Found::look_up(ctx, cache, sides, &eval, capped, "");
    let todo: Vec<&Workload> = (eval.iter().zip(found.todo()))
        .filter(|(_, t)| *t)
        .map(|(w, _)| *w)
        .collect();
    let mut measured = Vec::new();
    if !todo.is_empty() {
        let (opts, done) = (&capped.opts, found.done());
        measured = measure_jointly(ctx, sides, opts, verifier, verification, &todo, &done)?;
        ctx.record_own(
            &format!("{} vs {}: measure", sides.b.0, sides.a.0),
            start,
            recorded_then,
        );
    }
    Ok(found.fill(cache, capped, &eval, measured))
}

/// One side's comparisons on every eval workload: each workload's verdict key, and the
/// comparison kept under it from an earlier run (`None`: to measure).
struct Found {
    keys: Vec<Option<String>>,
    found: Vec<Option<Comparison>>,
}

impl Found {
    /// The comparisons of `sides` on `eval` kept from earlier runs under `capped`, each said
    /// (after `whose`, naming the candidate in a race).
    fn look_up(
        ctx: &Context,
        cache: &VerdictCache,
        sides: Versus,
        eval: &[&Workload],
        capped: &Capped,
        whose: &str,
    ) -> Self {
        // Keyed under the comparison's full max-time (`full_max`: the spec's, weighted), not
        // the budget's share (which differs from run to run); a comparison the share cut
        // short is not kept ([`Found::fill`]), so a larger budget measures again. Nor under
        // the pairs past it the budget gave what decides the ship: an unchanged re-run
        // reuses the verdict whatever its budget then pays for.
        let key_opts = BenchOptions {
            max_time: capped.opts.max_time.max(capped.full_max),
            pairs_past_max_time: 0,
            ..capped.opts.clone()
        };
        let keys = verdict_keys(ctx, cache, sides, eval, &key_opts);
        let found = (keys.iter().zip(eval))
            .map(|(k, w)| {
                let what = format!("{whose}{}", w.name);
                let kept = kept(ctx, cache, k.as_deref(), &what)?;
                ctx.ui().info(&format!(
                    "{what}: {} (kept from an earlier run: same binaries, workload and machine; --fresh measures again)",
                    kept.headline()
                ));
                Some(kept)
            })
            .collect();
        Found { keys, found }
    }

    /// The workloads to measure: those without a comparison kept from an earlier run.
    fn todo(&self) -> Vec<bool> {
        self.found.iter().map(Option::is_none).collect()
    }

    /// The comparisons kept from an earlier run.
    fn done(&self) -> Vec<Comparison> {
        self.found.iter().flatten().cloned().collect()
    }

    /// Every workload's comparison, by name: `measured` (one per workload to measure, in
    /// order) in their places, each kept for later runs unless the budget's share cut it
    /// short.
    fn fill(
        mut self,
        cache: &VerdictCache,
        capped: &Capped,
        eval: &[&Workload],
        measured: Vec<Comparison>,
    ) -> Vec<(String, Comparison)> {
        let (opts, full) = (&capped.opts, capped.full_max);
        let cut_short = |c: &Comparison| opts.max_time < full && c.stop == StopReason::MaxTime;
        let mut measured = measured.into_iter();
        for (key, slot) in self.keys.iter().zip(self.found.iter_mut()) {
            if slot.is_none() {
                let c = measured.next().expect("one per workload measured");
                if let Some(k) = key.as_ref().filter(|_| !cut_short(&c)) {
                    cache.put(k, &c);
                }
                *slot = Some(c);
            }
        }
        (eval.iter().zip(self.found))
            .map(|(w, c)| (w.name.clone(), c.expect("measured or kept")))
            .collect()
    }
}

/// The comparison kept under `key` (`what`: whose, for the warning); `None` without a key,
/// without one kept, or when the one kept no longer agrees with its own samples
/// (`Comparison::disagreement`): that one is removed and measured again, saying so, so
/// a row and its workloads' lines always come from one comparison that holds.
fn kept(ctx: &Context, cache: &VerdictCache, key: Option<&str>, what: &str) -> Option<Comparison> {
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
        spinner.set_message(say::progress_message(&label(j), p, ctx.ui()));
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
    say::tell_measured(ctx, &pair, todo, &measured, started);
    Ok(measured)
}

/// `cands` against `rival` on every eval workload, as [`measure`] measures
/// one (keep-or-drop, each within `share`), but raced: one series of the rival's runs serves
/// them all. `checks[j]`: candidate `j`'s first timed run of each workload is its
/// verification run. One result per candidate; an error of the race as a whole (no eval
/// workload, a sandbox) is the outer one.
pub(crate) fn race(
    ctx: &Context,
    rival: &Candidate,
    cands: &[&Candidate],
    verifier: &Verifier,
    share: Share,
    cache: &VerdictCache,
    verifications: &[Option<&TimedVerification>],
) -> anyhow::Result<Vec<anyhow::Result<Measured>>> {
    let capped = |c: &Candidate| keep_or_drop_options(ctx, rival, c, share);
    raced(ctx, rival, cands, verifier, &capped, cache, verifications)
}

/// [`race`] with each candidate's options `capped(candidate)`: a keep-or-drop duel's, or
/// the confirmation's fixed design (`in_turns`, [`confirm`]).
fn raced(
    ctx: &Context,
    rival: &Candidate,
    cands: &[&Candidate],
    verifier: &Verifier,
    capped: &dyn Fn(&Candidate) -> Capped,
    cache: &VerdictCache,
    verifications: &[Option<&TimedVerification>],
) -> anyhow::Result<Vec<anyhow::Result<Measured>>> {
    let eval = eval_workloads(ctx)?;
    let entrants: Vec<Entrant> = (cands.iter().zip(verifications))
        .map(|(c, verification)| {
            Entrant::new(ctx, rival, c, *verification, capped(c), cache, &eval)
        })
        .collect();
    let confirming = entrants.iter().any(|a| a.capped.opts.in_turns);
    let _quiet = quiet_ahead(ctx, confirming);
    let (start, recorded_then) = (Instant::now(), ctx.recorded_secs());
    let todo: Vec<Vec<bool>> = entrants.iter().map(|e| e.found.todo()).collect();
    let raced = say::done_verb(Entrant::widest(&entrants));
    if todo.iter().flatten().any(|&t| t) {
        let results = run_race(ctx, rival, verifier, &eval, &entrants, &todo)?;
        let labels: Vec<String> = cands.iter().map(|c| c.label()).collect();
        ctx.record_own(
            &format!(
                "{} {raced} vs {}: measure",
                labels.join(", "),
                rival.label()
            ),
            start,
            recorded_then,
        );
        Ok(entrants
            .into_iter()
            .zip(results)
            .zip(&todo)
            .map(|((entrant, r), todo)| entrant.conclude(cache, &eval, todo, r))
            .collect())
    } else {
        let none = vec![false; eval.len()];
        Ok(entrants
            .into_iter()
            .map(|entrant| entrant.conclude(cache, &eval, &none, Ok(Vec::new())))
            .collect())
    }
}

/// One candidate of a race: the candidate and its timed check (when its eval workloads are
/// still to be checked), its options (a duel's), and its comparisons kept from earlier runs.
struct Entrant<'a> {
    cand: &'a Candidate,
    verification: Option<&'a TimedVerification>,
    capped: Capped,
    found: Found,
}

impl<'a> Entrant<'a> {
    fn new(
        ctx: &Context,
        rival: &Candidate,
        cand: &'a Candidate,
        verification: Option<&'a TimedVerification>,
        capped: Capped,
        cache: &VerdictCache,
        eval: &[&Workload],
    ) -> Self {
        let sides = Versus {
            a: ("", &rival.binary),
            b: ("", &cand.binary),
            b_preload: None,
        };
        let whose = format!("{} on ", cand.label());
        let found = Found::look_up(ctx, cache, sides, eval, &capped, &whose);
        Entrant {
            cand,
            verification,
            capped,
            found,
        }
    }

    /// The race's options: the entrant's with the longest max-time.
    fn widest<'r>(entrants: &'r [Entrant]) -> &'r BenchOptions {
        (entrants.iter().map(|a| &a.capped.opts))
            .max_by_key(|o| o.max_time)
            .expect("a race has entrants")
    }

    /// The race's comparisons (those of the workloads `todo` marks) in their places, and
    /// the geometric mean over every workload ([`Found::fill`], [`Measured::of`]).
    fn conclude(
        self,
        cache: &VerdictCache,
        eval: &[&Workload],
        todo: &[bool],
        raced: bench::GroupResult,
    ) -> anyhow::Result<Measured> {
        let mine: Vec<&Workload> = (eval.iter().zip(todo))
            .filter(|(_, t)| **t)
            .map(|(w, _)| *w)
            .collect();
        let raced = raced.map_err(|(i, e)| {
            anyhow::Error::new(e).context(format!("workload `{}`", mine[i].name))
        })?;
        let per_workload = self.found.fill(cache, &self.capped, eval, raced);
        Ok(Measured::of(per_workload, &self.capped))
    }
}

/// A workload's rival: its command, its private cwd, the status its runs must have.
type RivalSide = (Command, Option<Sandbox>, ExpectedStatus);
/// A workload's entrant: its command and its private cwd.
type EntrantSide = (Command, Option<Sandbox>);

/// The rival's command of each workload in its own private cwd, with the status its runs
/// must have, and each entrant's in theirs.
fn commands(
    ctx: &Context,
    rival: &Candidate,
    verifier: &Verifier,
    eval: &[&Workload],
    entrants: &[Entrant],
) -> anyhow::Result<(Vec<RivalSide>, Vec<Vec<EntrantSide>>)> {
    let mut rivals = Vec::new();
    let mut sides = Vec::new();
    for w in eval {
        let (wa, sa) = ctx.sandboxed(w, "bench-a")?;
        let expected = expected_status(w, verifier.reference()?);
        let mut mine = Vec::new();
        for (j, entrant) in entrants.iter().enumerate() {
            let (wb, sb) = ctx.sandboxed(w, &format!("bench-b{j}"))?;
            let mut cb = ctx.command(&wb, &entrant.cand.binary);
            cb.spool = entrant.verification.map(|c| c.spool(w));
            mine.push((cb, sb));
        }
        rivals.push((ctx.command(&wa, &rival.binary), sa, expected));
        sides.push(mine);
    }
    Ok((rivals, sides))
}

/// The race itself: per workload the rival's command in its own private cwd and each
/// entrant's that `todo` marks in theirs, with a progress line on a terminal.
fn run_race(
    ctx: &Context,
    rival: &Candidate,
    verifier: &Verifier,
    eval: &[&Workload],
    entrants: &[Entrant],
    todo: &[Vec<bool>],
) -> anyhow::Result<Vec<bench::GroupResult>> {
    let done: Vec<Vec<Comparison>> = entrants.iter().map(|e| e.found.done()).collect();
    let opts = Entrant::widest(entrants);
    let (rivals, sides) = commands(ctx, rival, verifier, eval, entrants)?;
    let hooks: Vec<Vec<_>> = (entrants.iter().enumerate())
        .map(|(j, entrant)| {
            (eval.iter().zip(&sides))
                .map(|(w, s)| {
                    entrant
                        .verification
                        .map(|c| verifier.verify_timed(c, w, s[j].1.as_ref()))
                })
                .collect()
        })
        .collect();
    let jobs: Vec<Vec<Option<Pairing>>> = (0..entrants.len())
        .map(|j| {
            (0..eval.len())
                .map(|w| {
                    todo[j][w].then(|| Pairing {
                        a: &rivals[w].0,
                        b: &sides[w][j].0,
                        expected: rivals[w].2,
                        check_b: hooks[j][w].as_deref(),
                        metric: eval[w].metric.as_ref(),
                    })
                })
                .collect()
        })
        .collect();
    let done: Vec<&[Comparison]> = done.iter().map(Vec::as_slice).collect();
    let what = format!("{} candidate(s) vs {}", entrants.len(), rival.label());
    ctx.ui()
        .progress(&format!("{what}: {}", say::what_it_does(opts, eval.len())));
    let started = Instant::now();
    let spinner = ctx.ui().spinner(what.clone());
    // Entrant j's comparison i is on the i-th workload `todo[j]` marks.
    let on = |j: usize, i: usize| (0..eval.len()).filter(|&w| todo[j][w]).nth(i).unwrap_or(0);
    let results = bench::race_jointly(&jobs, &done, opts, &mut |j, i, p| {
        let (cand, w) = (entrants[j].cand.label(), &eval[on(j, i)].name);
        if let Phase::Look { look } = p.phase {
            ctx.ui().event(
                "estimate",
                serde_json::json!({
                    "candidate": cand, "rival": rival.label(), "workload": w,
                    "look": look, "pairs": p.pairs, "estimate": p.estimate,
                }),
            );
        }
        spinner.set_message(say::progress_message(
            &format!("{cand} vs {}: racing {w}", rival.label()),
            p,
            ctx.ui(),
        ));
    });
    spinner.finish_and_clear();
    let verb = say::done_verb(opts);
    ctx.ui()
        .done(&format!("{what} {verb}"), started.elapsed().as_secs_f64());
    Ok(results)
}
