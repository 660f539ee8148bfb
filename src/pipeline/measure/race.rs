//! Several candidates of a stage measured together against one rival (`bench::race_jointly`):
//! each candidate's verdicts kept from an earlier run reused per workload as a duel's are,
//! the rest raced on the rival's shared runs, each candidate's comparisons then kept and
//! summed up as [`measure`](super::measure) does its one.

use std::time::Instant;

use super::{
    budget_limited, expected_status, progress_message, quiet_ahead, verdict_keys, Capped, Measured,
};
use crate::bench::{self, BenchOptions, Comparison, ExpectedStatus, Pairing, Phase, StopReason};
use crate::cache::VerdictCache;
use crate::context::sandbox::Sandbox;
use crate::context::{Candidate, Context};
use crate::process::Command;
use crate::spec::Workload;
use crate::verify::{TimedVerification, Verifier};

/// `cands` against `rival` on every eval workload, as [`measure`](super::measure) measures
/// one (keep-or-drop, each within `share`), but raced: one series of the rival's runs serves
/// them all. `checks[j]`: candidate `j`'s first timed run of each workload is its
/// verification run. One result per candidate; an error of the race as a whole (no eval
/// workload, a sandbox) is the outer one.
pub(crate) fn race(
    ctx: &Context,
    rival: &Candidate,
    cands: &[&Candidate],
    verifier: &Verifier,
    share: super::super::budget::Share,
    cache: &VerdictCache,
    verifications: &[Option<&TimedVerification>],
) -> anyhow::Result<Vec<anyhow::Result<Measured>>> {
    let capped = |c: &Candidate| super::keep_or_drop_options(ctx, rival, c, share);
    raced(ctx, rival, cands, verifier, &capped, cache, verifications)
}

/// [`race`] with each candidate's options `capped(candidate)`: a keep-or-drop duel's, or
/// the confirmation's fixed design (`in_turns`, [`confirm`](super::confirm)).
pub(super) fn raced(
    ctx: &Context,
    rival: &Candidate,
    cands: &[&Candidate],
    verifier: &Verifier,
    capped: &dyn Fn(&Candidate) -> Capped,
    cache: &VerdictCache,
    verifications: &[Option<&TimedVerification>],
) -> anyhow::Result<Vec<anyhow::Result<Measured>>> {
    let eval = super::eval_workloads(ctx)?;
    let entrants: Vec<Entrant> = (cands.iter().zip(verifications))
        .map(|(c, verification)| {
            Entrant::new(ctx, rival, c, *verification, capped(c), cache, &eval)
        })
        .collect();
    let confirming = entrants.iter().any(|a| a.capped.opts.in_turns);
    let _quiet = quiet_ahead(ctx, confirming);
    let (start, recorded_then) = (Instant::now(), ctx.recorded_secs());
    let todo: Vec<Vec<bool>> = entrants.iter().map(Entrant::todo).collect();
    let raced = done_verb(Entrant::widest(&entrants));
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

/// What a race does, said when it starts: a fixed design (`in_turns`) confirms its entrants.
fn what_it_does(opts: &BenchOptions, workloads: usize) -> String {
    match opts.in_turns {
        true => format!(
            "confirming [{workloads} workload(s), {} pairs each, in turns]",
            opts.max_pairs
        ),
        false => format!("racing [{workloads} workload(s)]"),
    }
}

/// What a race did, said when it is done: a fixed design (`in_turns`) confirmed its entrants.
fn done_verb(opts: &BenchOptions) -> &'static str {
    match opts.in_turns {
        true => "confirmed",
        false => "raced",
    }
}

/// One candidate of a race: the candidate and its timed check (when its eval workloads are
/// still to be checked), its options (a duel's), verdict keys and kept comparisons.
struct Entrant<'a> {
    cand: &'a Candidate,
    verification: Option<&'a TimedVerification>,
    capped: Capped,
    keys: Vec<Option<String>>,
    found: Vec<Option<Comparison>>,
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
        let key_opts = BenchOptions {
            max_time: capped.opts.max_time.max(capped.full_max),
            pairs_past_max_time: 0,
            ..capped.opts.clone()
        };
        let sides = super::Versus {
            a: ("", &rival.binary),
            b: ("", &cand.binary),
            b_preload: None,
        };
        let keys = verdict_keys(ctx, cache, sides, eval, &key_opts);
        let found = (keys.iter().zip(eval))
            .map(|(k, w)| {
                let what = format!("{} on {}", cand.label(), w.name);
                let kept = super::kept(ctx, cache, k.as_deref(), &what)?;
                ctx.ui().info(&format!(
                    "{} on {}: {} (kept from an earlier run: same binaries, workload and machine; --fresh measures again)",
                    cand.label(),
                    w.name,
                    kept.headline()
                ));
                Some(kept)
            })
            .collect();
        Entrant {
            cand,
            verification,
            capped,
            keys,
            found,
        }
    }

    /// The workloads to race: those without a comparison kept from an earlier run.
    fn todo(&self) -> Vec<bool> {
        self.found.iter().map(Option::is_none).collect()
    }

    /// The comparisons kept from an earlier run.
    fn done(&self) -> Vec<Comparison> {
        self.found.iter().flatten().cloned().collect()
    }

    /// The race's options: the entrant's with the longest max-time.
    fn widest<'r>(entrants: &'r [Entrant]) -> &'r BenchOptions {
        (entrants.iter().map(|a| &a.capped.opts))
            .max_by_key(|o| o.max_time)
            .expect("a race has entrants")
    }

    /// The race's comparisons (those of the workloads `todo` marks) kept where not cut
    /// short by the budget, and the geometric mean over every workload.
    fn conclude(
        mut self,
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
        let (opts, full) = (&self.capped.opts, self.capped.full_max);
        let cut_short = |c: &Comparison| opts.max_time < full && c.stop == StopReason::MaxTime;
        let mut raced = raced.into_iter();
        for (key, slot) in self.keys.iter().zip(self.found.iter_mut()) {
            if slot.is_none() {
                let c = raced.next().expect("one per workload raced");
                if let Some(k) = key.as_ref().filter(|_| !cut_short(&c)) {
                    cache.put(k, &c);
                }
                *slot = Some(c);
            }
        }
        let per_workload: Vec<(String, Comparison)> = (eval.iter().zip(self.found))
            .map(|(w, c)| (w.name.clone(), c.expect("raced or kept")))
            .collect();
        let all: Vec<Comparison> = per_workload.iter().map(|(_, c)| c.clone()).collect();
        let (log, confidence) = bench::geomean_log(&all);
        let estimate = bench::geomean(&all, opts.margin);
        Ok(Measured {
            budget_limited: budget_limited(&all, &estimate, opts, full),
            estimate,
            log,
            confidence,
            per_workload,
        })
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
    let done: Vec<Vec<Comparison>> = entrants.iter().map(Entrant::done).collect();
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
        .progress(&format!("{what}: {}", what_it_does(opts, eval.len())));
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
        spinner.set_message(progress_message(
            &format!("{cand} vs {}: racing {w}", rival.label()),
            p,
            ctx.ui(),
        ));
    });
    spinner.finish_and_clear();
    let verb = done_verb(opts);
    ctx.ui()
        .done(&format!("{what} {verb}"), started.elapsed().as_secs_f64());
    Ok(results)
}
