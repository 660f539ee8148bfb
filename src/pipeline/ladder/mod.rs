//! The ladder's spine, from a stage's offers to each one's verdict: the best candidate so
//! far, the best portable one, and a row per offer. [`Ladder::climb`] tries a stage's
//! offers in order, each alone ([`Ladder::try_offer`]) or, a run of consecutive
//! [`Build::Raced`] ones, together ([`Ladder::race`]); each is checked — identical to its
//! rival? verified? measured? — and [`Ladder::decide`] keeps or drops it by one rule: kept
//! when measurably faster than the candidate it had to beat.
//!
//! A race's offers are independent of each other and have one rival: each is built on the
//! best so far and checked as any offer is, then they are measured together in one race
//! (`measure::race`) and decided one by one: of those the keep rule would keep, the one
//! with the best estimate is kept, the others dropped naming it.
//!
//! Each offer is measured against its rival only. A row's ratio to the baseline is derived
//! by chaining (C/A = C/B · B/A on the log scale: means add, variances add, Welch–
//! Satterthwaite degrees of freedom; the two comparisons are independent samples), and
//! what ships is measured against the baseline directly, once, at the end
//! ([`Ladder::measure_final`]): the headline speedup is never a derived one.
//!
//! Beside the spine: what a row says beyond its verdict (its notes, `--explain`) in
//! `notes.rs`, the allocators' preview in `preview.rs`, what ships in `ship.rs`.
//!
//! Names: a [`Candidate`] is a build; an [`Offer`] is a stage's proposal (a candidate, or
//! how to build one, and its [`Rival`]: which kept candidate it must beat); a
//! [`KeptCandidate`] is one the ladder kept (the baseline first) with its ratio to the
//! baseline; the [`Standing`] is what a stage is given of the ladder (best, portable, the
//! stages `expected`: those still `to_come` the budget pays for); a race's offers are its
//! entrants.

use std::collections::BTreeMap;

use super::budget::{Budget, Decides, Grant, Share};
use super::measure::{self, Measured};
use crate::bench::stats::{self, LogEstimate};
use crate::bench::{Comparison, Estimate, Verdict};
use crate::cache::VerdictCache;
use crate::cargo::CargoError;
use crate::context::{Candidate, Context};
use crate::report::{Settings, StageReport, Status};
use crate::stage::{self, Build, Offer, Rival, StageError, Standing};
use crate::stages::{Changes, StageName};
use crate::verify::{Concluded, Rejection, TimedVerification, Untimed, Verifier};

mod notes;
mod preview;
mod ship;

use notes::{describe, resources_note, size_note};

/// A candidate the ladder kept (the baseline first), with its measurements: its ratio to
/// the baseline (`None` for the baseline itself).
#[derive(Clone)]
struct KeptCandidate {
    candidate: Candidate,
    vs_baseline: Option<ToBaseline>,
    /// `vs_baseline` as it stood when the candidate was chosen, once the final
    /// confirmation replaced it: biased towards fast by the choice.
    at_selection: Option<ToBaseline>,
    /// Each eval workload's ratio to the baseline in the final confirmation (empty before
    /// it): what the gate's `max-slowdown-per-workload` and the ship line read.
    workloads: Vec<(String, Estimate)>,
}

/// A ratio to the baseline on the log scale, measured directly or chained; `confirmed`
/// when measured directly on the final gate's fresh pairs (`Ladder::measure_final`), the
/// only figure a candidate ships on.
#[derive(Clone, Copy)]
struct ToBaseline {
    log: LogEstimate,
    confidence: f64,
    measured: bool,
    confirmed: bool,
}

impl ToBaseline {
    /// A candidate's ratio to the baseline measured as `m` against its rival, whose own is
    /// `rival` (`None`: the rival is the baseline, so it is measured directly).
    fn through(rival: Option<ToBaseline>, m: &Measured) -> Self {
        match rival {
            None => ToBaseline {
                log: m.log,
                confidence: m.confidence,
                measured: true,
                confirmed: false,
            },
            Some(r) => ToBaseline {
                log: stats::sum_log(&[r.log, m.log]),
                confidence: r.confidence.max(m.confidence),
                measured: false,
                confirmed: false,
            },
        }
    }

    fn estimate(&self, margin: f64) -> Estimate {
        Estimate::from_log(&self.log, self.confidence, margin)
    }
}

/// A raced offer checked and ready to measure: its row's label, the candidate, and the
/// check its timed runs make (none when an earlier run checked every workload already).
struct Entrant {
    /// Its offer's place in the group.
    k: usize,
    row: String,
    cand: Candidate,
    verification: Option<TimedVerification>,
}

impl Entrant {
    fn new(
        k: usize,
        row: String,
        cand: Candidate,
        verification: Option<TimedVerification>,
    ) -> Self {
        Entrant {
            k,
            row,
            cand,
            verification,
        }
    }
}

pub(crate) struct Ladder<'a> {
    ctx: &'a Context<'a>,
    cache: &'a VerdictCache,
    budget: &'a Budget,
    /// What the budget granted the step being climbed (asked once, when it begins).
    grant: Option<Grant<'a>>,
    /// The stages still to climb after the current one.
    to_come: Vec<StageName>,
    /// Stages the budget could not pay for.
    pub not_tried: Vec<String>,
    verifier: Verifier<'a>,
    baseline: Candidate,
    best: KeptCandidate,
    /// The best candidate without a stage `-Ctarget-cpu`: always reported next to the
    /// final one, so a CPU-specific binary is never the only artifact.
    portable: KeptCandidate,
    pub rows: Vec<StageReport>,
    /// Every candidate kept, in order: what the final gate falls back on.
    kept: Vec<KeptCandidate>,
    /// Workload → candidate tag → comparison against its rival.
    pub per_workload: BTreeMap<String, BTreeMap<String, Comparison>>,
    /// Allocators not to build, with why (`preview`), and whether they were previewed.
    screened: BTreeMap<String, String>,
    previewed: bool,
    /// The previews' comparisons (workload → label → comparison): in the report beside
    /// `per_workload`, not in the spread the confirmation is sized from (they time the
    /// best so far against itself with another allocator, not the ladder's binaries).
    preview_per_workload: BTreeMap<String, BTreeMap<String, Comparison>>,
}

impl<'a> Ladder<'a> {
    /// A ladder standing on the baseline, whose outputs every candidate must match.
    pub(crate) fn new(
        ctx: &'a Context<'a>,
        cache: &'a VerdictCache,
        baseline: Candidate,
        verifier: Verifier<'a>,
        budget: &'a Budget,
    ) -> Self {
        let mut row = candidate_row(&baseline, Status::Kept, "the reference");
        row.verified = Some(true);
        let kept = KeptCandidate {
            candidate: baseline.clone(),
            vs_baseline: None,
            at_selection: None,
            workloads: Vec::new(),
        };
        Ladder {
            ctx,
            cache,
            budget,
            grant: None,
            to_come: ctx.spec.stages.try_.clone(),
            not_tried: Vec::new(),
            verifier,
            baseline,
            best: kept.clone(),
            portable: kept,
            rows: vec![row],
            kept: Vec::new(),
            per_workload: BTreeMap::new(),
            screened: BTreeMap::new(),
            previewed: false,
            preview_per_workload: BTreeMap::new(),
        }
    }

    /// Try every offer of one stage; after the profile stage, `--explain` when asked.
    pub(crate) fn climb(&mut self, name: StageName, explain: bool) -> anyhow::Result<()> {
        if let Some(i) = self.to_come.iter().position(|s| *s == name) {
            self.to_come.remove(i);
        }
        let ui = self.ctx.ui().clone();
        ui.event(
            "stage-started",
            serde_json::json!({ "stage": name.as_str() }),
        );
        let chained = self.best.candidate.binary != self.baseline.binary;
        self.grant = None;
        let spec_max = self.ctx.spec.bench.max_time;
        let grant = match self.budget.grant(name, &self.to_come, chained, spec_max) {
            Ok(grant) => grant,
            Err(why) => {
                self.not_affordable(name, &why);
                return Ok(());
            }
        };
        // The allocators' preview is measured under this stage's grant, before its offers.
        self.grant = Some(grant);
        if self.previews_allocators(name) && !self.budget.spent() {
            self.preview_allocators()?;
        }
        let grant = self.grant.take().expect("granted above");
        let standing = Standing {
            best: &self.best.candidate,
            portable: &self.portable.candidate,
            expected: &grant.expected,
            screened: &self.screened,
        };
        let mut offers = stage::offers(name, self.ctx, &standing)
            .into_iter()
            .peekable();
        self.grant = Some(grant);
        let raced = |o: &Offer| matches!(o.candidate, Build::Raced(_));
        while let Some(offer) = offers.next() {
            let mut group = vec![offer];
            while raced(&group[0]) && offers.peek().is_some_and(raced) {
                group.extend(offers.next());
            }
            match group.len() {
                1 => self.try_offer(name, group.remove(0))?,
                _ => self.race(name, group)?,
            }
        }
        // Builds a stage asked for once its own timings are done (BOLT's input) start now,
        // while the budget lasts.
        if !self.budget.spent() {
            self.ctx.start_deferred();
        }
        if name.row().changes == Changes::ProfileSettings {
            self.note_cheaper_profile();
            if explain {
                self.explain_profile();
            }
        }
        Ok(())
    }

    /// A stage the budget cannot pay for: a skipped row with the fix, and a warning.
    fn not_affordable(&mut self, name: StageName, why: &str) {
        self.ctx.ui().warn(&format!("{name}: {why}"));
        let fix = format!(
            "{why}; fix: --budget {} (or [bench] budget), or --stages {name} to climb it alone",
            crate::util::format_span(2.0 * self.budget.total.as_secs_f64())
        );
        self.rows.push(StageReport::without_candidate(
            name.as_str(),
            Status::Skipped,
            fix,
        ));
        self.not_tried.push(name.as_str().to_string());
    }

    /// An offer the budget, spent, leaves untried (not built, or built and not checked or
    /// measured): a skipped row with the fix; the stage is named among those not tried.
    fn out_of_budget(&mut self, name: StageName, variant: Option<String>) {
        let why = format!(
            "not tried: the run's budget of {} is spent; fix: --budget {} (or [bench] budget)",
            crate::util::format_span(self.budget.total.as_secs_f64()),
            crate::util::format_span(2.0 * self.budget.total.as_secs_f64())
        );
        let label = crate::context::label(name.as_str(), variant.as_deref());
        self.ctx.ui().info(&format!("{label}: {why}"));
        let mut r = StageReport::without_candidate(name.as_str(), Status::Skipped, why);
        r.facts.variant = variant;
        self.rows.push(r);
        if !self.not_tried.iter().any(|n| n == name.as_str()) {
            self.not_tried.push(name.as_str().to_string());
        }
    }

    /// Skipped, failed, identical, rejected, or measured and decided. An error is one of
    /// the tool's own (a workload cannot be started at all), not the candidate's.
    fn try_offer(&mut self, name: StageName, offer: Offer) -> anyhow::Result<()> {
        if self.budget.spent() {
            self.out_of_budget(name, offer.variant);
            return Ok(());
        }
        let row = crate::context::label(name.as_str(), offer.variant.as_deref());
        let candidate = match offer.candidate {
            Build::Now(c) => c,
            Build::OnBest(build) | Build::Raced(build) => build(
                &self.best.candidate,
                self.rows.last().and_then(|r| r.vs_best.as_ref()),
            ),
            Build::IfPreviousKept { build, why_not } => {
                let previous_kept = self
                    .rows
                    .last()
                    .is_some_and(|r| r.name == name.as_str() && r.status == Status::Kept);
                if previous_kept {
                    build()
                } else {
                    Err(StageError::Redundant(why_not))
                }
            }
        };
        let Some(cand) = self.built(name, offer.variant, candidate, offer.rival) else {
            return Ok(());
        };
        let fp = (name.row().changes == Changes::FpFlags).then(|| cand.clone());
        self.verify_and_measure(&row, cand, offer.rival)?;
        if let Some(cand) = fp {
            self.note_deviation(&cand);
        }
        Ok(())
    }

    /// Build, check, race and decide a group of raced offers (see the module's doc), their
    /// rows in the offers' order. Under `objective = "size"` (a smaller candidate's
    /// comparison runs on past *faster*) each is measured alone as any offer is.
    fn race(&mut self, name: StageName, offers: Vec<Offer>) -> anyhow::Result<()> {
        let rival = offers[0].rival;
        // The offer each row pushed since `base` is of: the rows are put in the offers'
        // order at the end.
        let (base, mut owner) = (self.rows.len(), Vec::new());
        let mut built = Vec::new();
        for (k, offer) in offers.into_iter().enumerate() {
            let row = crate::context::label(name.as_str(), offer.variant.as_deref());
            let Build::Raced(build) = offer.candidate else {
                unreachable!("a race has raced offers only");
            };
            let latest = self.rows.last().and_then(|r| r.vs_best.as_ref());
            let candidate = build(&self.best.candidate, latest);
            if let Some(cand) = self.built(name, offer.variant, candidate, offer.rival) {
                built.push((k, row, cand));
            }
            owner.resize(self.rows.len() - base, k);
        }
        let mut entrants = Vec::new();
        for (k, row, cand) in built {
            if self.ctx.spec.bench.objective_size {
                self.verify_and_measure(&row, cand, rival)?;
            } else {
                match self.verify_untimed(&row, &cand)? {
                    Untimed::Rejected(_) => {}
                    Untimed::AllChecked => entrants.push(Entrant::new(k, row, cand, None)),
                    Untimed::Passed(c) => entrants.push(Entrant::new(k, row, cand, Some(c))),
                }
            }
            owner.resize(self.rows.len() - base, k);
        }
        if entrants.len() > 1 {
            self.ctx.ui().info(&format!(
                "{name}: racing {} setting(s) against `{}`",
                entrants.len(),
                self.rival(rival).label()
            ));
        }
        self.run_race(entrants, rival, base, &mut owner)?;
        let mut rows: Vec<_> = self.rows.drain(base..).zip(owner).collect();
        rows.sort_by_key(|(_, k)| *k);
        self.rows.extend(rows.into_iter().map(|(r, _)| r));
        Ok(())
    }

    /// Measure the entrants in one race (one alone: a duel's), then conclude and decide
    /// each, noting in `owner` which offer each row pushed since `base` is of.
    fn run_race(
        &mut self,
        mut entrants: Vec<Entrant>,
        which: Rival,
        base: usize,
        owner: &mut Vec<usize>,
    ) -> anyhow::Result<()> {
        if entrants.is_empty() {
            return Ok(());
        }
        let rival = self.rival(which);
        let share = self.share(match rival.binary == self.baseline.binary {
            true if which == Rival::Best => Decides::Ship,
            _ => Decides::Keep,
        });
        let cands: Vec<&Candidate> = entrants.iter().map(|e| &e.cand).collect();
        let verifications: Vec<Option<&TimedVerification>> =
            entrants.iter().map(|e| e.verification.as_ref()).collect();
        let ctx = self.ctx;
        let raced = measure::race(
            ctx,
            rival,
            &cands,
            &self.verifier,
            share,
            self.cache,
            &verifications,
        );
        let results: Vec<anyhow::Result<Measured>> = match raced {
            Ok(r) => r,
            Err(e) => {
                let why = format!("{e:#}");
                (0..entrants.len())
                    .map(|_| Err(anyhow::anyhow!("{why}")))
                    .collect()
            }
        };
        let mut measured = Vec::new();
        for (j, (e, m)) in entrants.iter_mut().zip(results).enumerate() {
            if let Some(m) = self.conclude(&e.row, &e.cand, e.verification.take(), m)? {
                measured.push((j, m));
            }
            owner.resize(self.rows.len() - base, e.k);
        }
        let winner = (measured.iter())
            .filter(|(j, m)| self.keeps(&entrants[*j].cand, which, m).0)
            .min_by(|a, b| a.1.estimate.ratio.total_cmp(&b.1.estimate.ratio))
            .map(|(j, _)| *j);
        let label = winner.map(|w| format!("`{}`", entrants[w].cand.label()));
        // The winner last: deciding it makes it the best, which the others were not
        // measured against.
        measured.sort_by_key(|(j, _)| Some(*j) == winner);
        let ks: Vec<usize> = entrants.iter().map(|e| e.k).collect();
        let mut cands: Vec<Option<Candidate>> =
            entrants.into_iter().map(|e| Some(e.cand)).collect();
        for (j, m) in measured {
            let beaten = (Some(j) != winner).then_some(label.as_deref()).flatten();
            let cand = cands[j].take().expect("decided once");
            self.decide(cand, which, m, beaten);
            owner.resize(self.rows.len() - base, ks[j]);
        }
        Ok(())
    }

    /// A built offer, or its row (skipped, failed, dropped: byte-identical to its rival) and
    /// `None`.
    fn built(
        &mut self,
        name: StageName,
        variant: Option<String>,
        candidate: Result<Candidate, StageError>,
        which: Rival,
    ) -> Option<Candidate> {
        let ui = self.ctx.ui().clone();
        let row = crate::context::label(name.as_str(), variant.as_deref());
        let cand = match candidate {
            // Nothing starts once the budget is spent: not a build (`Context::build`
            // refuses), nor a check or a comparison of one that was ready.
            Ok(_) | Err(StageError::Cargo(CargoError::OutOfBudget)) if self.budget.spent() => {
                self.out_of_budget(name, variant);
                return None;
            }
            Ok(c) => c,
            Err(StageError::Pruned(why)) => {
                self.note_pruned(name, why);
                return None;
            }
            Err(e) => {
                let status = match e {
                    StageError::NotAvailable(_) => Status::Skipped,
                    StageError::Redundant(_) | StageError::Screened(_) => Status::Dropped,
                    _ => Status::Failed,
                };
                match status {
                    Status::Failed => ui.warn(&format!("{row} stage failed: {e}")),
                    _ => ui.info(&format!("{row}: {}: {e}", status.as_str())),
                }
                let mut r = StageReport::without_candidate(name.as_str(), status, e.to_string());
                r.facts.variant = variant;
                self.rows.push(r);
                return None;
            }
        };
        let rival = self.rival(which);
        // The same bytes as its rival: the settings change nothing for this program (e.g.
        // the preset equals the user's profile). Nothing to verify or time.
        if crate::store::same_bytes(&cand.binary, &rival.binary) {
            let why = format!(
                "byte-identical to the {} binary: these settings change nothing here",
                rival.label()
            );
            ui.info(&format!("{row}: dropped: {why}"));
            self.push_verified(&cand, Status::Dropped, &why);
            return None;
        }
        Some(cand)
    }

    /// Every comparison the run made, per workload and label, for the report: the
    /// ladder's and the previews'.
    pub(crate) fn take_per_workload(&mut self) -> BTreeMap<String, BTreeMap<String, Comparison>> {
        let mut all = std::mem::take(&mut self.per_workload);
        for (w, by_label) in std::mem::take(&mut self.preview_per_workload) {
            all.entry(w).or_default().extend(by_label);
        }
        all
    }

    fn rival(&self, which: Rival) -> &Candidate {
        match which {
            Rival::Best => &self.best.candidate,
            Rival::Portable => &self.portable.candidate,
        }
    }

    /// Check `cand` and measure it against its rival; its first timed run of each eval
    /// workload is its verification there (the `TimedVerification` of `Verifier::verify_untimed`).
    /// Rejected, failed, or measured and decided.
    fn verify_and_measure(
        &mut self,
        row: &str,
        cand: Candidate,
        which: Rival,
    ) -> anyhow::Result<()> {
        let verification = match self.verify_untimed(row, &cand)? {
            Untimed::Rejected(_) => return Ok(()),
            Untimed::AllChecked => None,
            Untimed::Passed(verification) => Some(verification),
        };
        let rival = self.rival(which);
        // Against the baseline itself, on the best track, the verdict decides whether
        // anything but the baseline ships.
        let share = self.share(match rival.binary == self.baseline.binary {
            true if which == Rival::Best => Decides::Ship,
            _ => Decides::Keep,
        });
        // Under `objective = "size"` a smaller candidate is kept when it is as fast, so its
        // comparison runs on to tell *equivalent* apart, not only *faster*.
        let only_faster = !smaller_counts(self.ctx, &cand, rival);
        let measured = measure::measure(
            self.ctx,
            rival,
            &cand,
            &self.verifier,
            measure::Terms { only_faster, share },
            self.cache,
            verification.as_ref(),
        );
        if let Some(m) = self.conclude(row, &cand, verification, measured)? {
            self.decide(cand, which, m, None);
        }
        Ok(())
    }

    /// Before measuring `cand`: its untimed check (`Verifier::verify_untimed`), its row when
    /// rejected, the `verified` event when an earlier run checked it all.
    fn verify_untimed(&mut self, row: &str, cand: &Candidate) -> anyhow::Result<Untimed> {
        let untimed = self.verifier.verify_untimed(cand)?;
        match &untimed {
            Untimed::AllChecked => verified_event(self.ctx.ui(), cand, None),
            Untimed::Rejected(r) => self.reject(row, cand, r),
            Untimed::Passed(_) => {}
        }
        Ok(untimed)
    }

    /// After `cand`'s measuring: its `check` ended (`Verifier::verify_finish`), then rejected,
    /// failed, or measured (returned, to be decided).
    fn conclude(
        &mut self,
        row: &str,
        cand: &Candidate,
        verification: Option<TimedVerification>,
        measured: anyhow::Result<Measured>,
    ) -> anyhow::Result<Option<Measured>> {
        let concluded = match verification {
            Some(c) => Some(self.verifier.verify_finish(c, measured.is_ok())?),
            None => None,
        };
        if let Some(Concluded::Rejected(r)) = &concluded {
            self.reject(row, cand, r);
            return Ok(None);
        }
        let m = match measured {
            Ok(m) => m,
            Err(e) => {
                self.ctx
                    .ui()
                    .warn(&format!("{row}: measuring failed: {e:#}"));
                self.push_verified(cand, Status::Failed, &format!("measuring failed: {e:#}"));
                return Ok(None);
            }
        };
        if let Some(Concluded::Passed) = concluded {
            verified_event(self.ctx.ui(), cand, None);
        }
        Ok(Some(m))
    }

    fn reject(&mut self, row: &str, cand: &Candidate, m: &Rejection) {
        self.ctx
            .ui()
            .warn(&format!("{row} rejected: {}\n  {m}", m.headline()));
        verified_event(self.ctx.ui(), cand, Some(m.headline()));
        let mut r = candidate_row(cand, Status::Rejected, &m.to_string());
        r.verified = Some(false);
        self.rows.push(r);
        self.ctx.abandon_ahead(cand);
    }

    /// The one keep-or-drop rule: kept when measurably faster than its rival
    /// (`Estimate::keeps`: the interval below 1 and the estimate past the margin; the whole
    /// interval past it for a refinement). A kept
    /// portable-track offer replaces the portable best; any other kept one the best (and
    /// the portable best too, when it picks no CPU).
    ///
    /// `beaten`: a raced offer that would be kept but another of its race was faster (its
    /// label) — dropped, saying so.
    fn decide(&mut self, cand: Candidate, rival: Rival, m: Measured, beaten: Option<&str>) {
        let trade = (cand.stage.row().changes == Changes::Allocator)
            .then(|| resources_note(&m.per_workload));
        for (w, c) in &m.per_workload {
            self.per_workload
                .entry(w.clone())
                .or_default()
                .insert(cand.tag(), c.clone());
        }
        let kept = match rival {
            Rival::Best => &self.best,
            Rival::Portable => &self.portable,
        };
        let (keep, for_size) = self.keeps(&cand, rival, &m);
        // Beaten only matters to an entrant the rule would keep: one that is not is dropped for
        // its own verdict.
        let beaten = beaten.filter(|_| keep);
        let keep = keep && beaten.is_none();
        let to_baseline = ToBaseline::through(kept.vs_baseline, &m);
        let status = if keep { Status::Kept } else { Status::Dropped };
        let mut reason = self.reason(&cand, &kept.candidate, &m, keep, for_size);
        if let Some(by) = beaten {
            reason = format!("{reason}; dropped: raced with it, {by} was faster");
        }
        self.ctx.ui().event(
            "verdict",
            serde_json::json!({
                "candidate": cand.label(),
                "rival": kept.candidate.label(),
                "status": status.as_str(),
                "estimate": m.estimate,
                "vs_baseline": to_baseline.estimate(self.margin()),
                "chained": !to_baseline.measured,
            }),
        );
        let mut r = candidate_row(&cand, status, &reason);
        r.verified = Some(true);
        r.facts.rival = Some(kept.candidate.label());
        r.vs_best = Some(m.estimate);
        r.vs_baseline = Some(to_baseline.estimate(self.margin()));
        r.notes.extend(trade.flatten());
        self.rows.push(r);
        if !keep {
            self.ctx.abandon_ahead(&cand);
            return;
        }
        let kept = KeptCandidate {
            candidate: cand,
            vs_baseline: Some(to_baseline),
            at_selection: None,
            workloads: Vec::new(),
        };
        self.kept.push(kept.clone());
        if rival == Rival::Portable {
            self.portable = kept;
        } else {
            if !kept.candidate.targets_cpu() {
                self.portable = kept.clone();
            }
            // A build started for the best that was (the pgo stage's, on `max`) is useless.
            if self.ctx.ahead.cancel_urgent() > 0 {
                self.ctx.ui().info(&format!(
                    "stopped the build started ahead for {}: {} is the best now",
                    self.best.candidate.label(),
                    kept.candidate.label()
                ));
            }
            self.best = kept;
        }
    }

    /// Whether `m` keeps `cand` against its rival, and whether for its size alone.
    fn keeps(&self, cand: &Candidate, rival: Rival, m: &Measured) -> (bool, bool) {
        let kept = self.rival(rival);
        let for_size =
            m.estimate.verdict == Verdict::Equivalent && smaller_counts(self.ctx, cand, kept);
        // A refinement (`stage::refines`) gains a few percent at most and costs size or
        // portability: it must be *faster*, not just surely faster by about the margin.
        let keep = match stage::refines(cand.stage, cand.variant(), kept.stage) {
            true => m.estimate.verdict == Verdict::Faster,
            false => m.estimate.keeps(self.margin()),
        };
        (keep || for_size, for_size)
    }

    /// A decided row's reason: the comparison, why an *equivalent* or *slightly faster*
    /// one was kept, and why a *budget-limited* one was not (also warned).
    fn reason(
        &self,
        cand: &Candidate,
        rival: &Candidate,
        m: &Measured,
        keep: bool,
        for_size: bool,
    ) -> String {
        let reason = format!(
            "{} vs {}: {}",
            cand.label(),
            rival.label(),
            describe(&m.estimate)
        );
        let reason = match (for_size, keep && m.estimate.verdict == Verdict::SlightlyFaster) {
            (true, _) => format!("{reason}; {}", size_note(cand, rival)),
            (false, true) => format!(
                "{reason}; kept: surely faster, and by the {} % margin or more as far as its time could tell",
                self.margin() * 100.0
            ),
            (false, false) => reason,
        };
        match m.budget_limited.as_deref() {
            Some(why) if !keep => {
                self.ctx.ui().warn(&format!("{}: {why}", cand.label()));
                format!("{reason}; {why}")
            }
            _ => reason,
        }
    }

    /// A built candidate's row, not kept (dropped or failed): the builds started ahead on
    /// it are stopped.
    fn push_verified(&mut self, cand: &Candidate, status: Status, reason: &str) {
        let mut r = candidate_row(cand, status, reason);
        r.verified = Some(true);
        self.rows.push(r);
        self.ctx.abandon_ahead(cand);
    }

    /// The baseline's outputs and which workloads are deterministic.
    pub(crate) fn verifier(&self) -> &Verifier<'a> {
        &self.verifier
    }

    /// The next comparison's share of the budget, from the step's grant (every comparison
    /// is made within a step; outside one, as if nothing came after it).
    fn share(&self, decides: Decides) -> Share {
        match &self.grant {
            Some(grant) => grant.share(decides),
            None => (self.budget.last_grant(self.ctx.spec.bench.max_time)).share(decides),
        }
    }

    fn margin(&self) -> f64 {
        self.ctx.spec.bench.margin
    }
}

/// The `verified` event: `cand` passed every output check, or was rejected (`why`).
fn verified_event(ui: &crate::ui::Ui, cand: &Candidate, why: Option<&str>) {
    ui.event(
        "verified",
        serde_json::json!({ "candidate": cand.label(), "passed": why.is_none(), "reason": why }),
    );
}

fn candidate_row(c: &Candidate, status: Status, reason: &str) -> StageReport {
    StageReport {
        name: c.stage.to_string(),
        status,
        reason: reason.to_string(),
        binary: Some(c.binary.display().to_string()),
        size_bytes: Some(c.size_bytes),
        build_seconds: Some(c.build_seconds),
        settings: Some(Settings::from(&c.settings)),
        verified: None,
        vs_best: None,
        vs_baseline: None,
        notes: c.notes.clone(),
        facts: c.facts.clone(),
    }
}

/// Whether `cand` being smaller than `rival` counts: `[bench] objective = "size"`.
fn smaller_counts(ctx: &Context, cand: &Candidate, rival: &Candidate) -> bool {
    ctx.spec.bench.objective_size && cand.size_bytes < rival.size_bytes
}
