//! What ships: the best candidate and the portable alternative beside it (on the same
//! runs of the baseline) confirmed against the baseline on fresh pairs at the end; the
//! final gate ([`Gate`]), which ships a candidate only on that direct comparison, surely
//! faster (and under `max-slowdown-per-workload` no workload surely slower by more), and
//! otherwise falls back on a kept candidate that passes the same test on the same number
//! of fresh pairs, never on the refused one nor on a stage's own figure; and the final
//! choice the report carries.

use std::path::Path;

use super::{KeptCandidate, Ladder, ToBaseline};
use crate::bench::stats::LogEstimate;
use crate::bench::{Comparison, Verdict};
use crate::context::Candidate;
use crate::pipeline::budget::{confirmation_pairs, span_pairs, Decides};
use crate::pipeline::measure;
use crate::report::{FinalChoice, Settings, Status};

impl Ladder<'_> {
    /// Confirm what ships and the portable alternative against the baseline on fresh
    /// pairs (`measure::confirm`): none of them chose the candidate, and their number is
    /// fixed before they run, so neither the choice nor an early stop biases the ratio the
    /// `ship:` line prints and the gate decides on; the ratio at the choice is kept beside
    /// it (`at_selection`). The comparisons are kept per workload under `<tag> vs baseline`.
    /// Then [`Ladder::gate`].
    pub(crate) fn measure_final(&mut self) -> anyhow::Result<()> {
        let portable_is_best = self.portable.candidate.binary == self.best.candidate.binary;
        self.grant = Some(self.budget.last_grant(self.ctx.spec.bench.max_time));
        // What ships, when it is not the baseline, and the portable alternative beside it:
        // both together share one series of the baseline's runs. The portable one's own
        // comparison with the baseline, when it had one, chose it: not a figure to ship on.
        let mut which = Vec::new();
        if self.best.vs_baseline.is_some() {
            which.push(false);
        }
        if !portable_is_best && self.portable.vs_baseline.is_some() {
            which.push(true);
        }
        let pairs = self.confirmation_pairs();
        if !which.is_empty() {
            let cands: Vec<&Candidate> = (which.iter())
                .map(|&p| &self.kept_candidate(p).candidate)
                .collect();
            let ms = self.confirm(&cands, pairs)?;
            for (portable, m) in which.into_iter().zip(ms) {
                let h = match portable {
                    true => &mut self.portable,
                    false => &mut self.best,
                };
                confirmed(h, &m);
                self.keep_per_workload(&self.kept_candidate(portable).candidate.tag(), m);
            }
        }
        if portable_is_best {
            self.portable = self.best.clone();
        }
        self.gate(pairs)
    }

    fn kept_candidate(&self, portable: bool) -> &KeptCandidate {
        match portable {
            true => &self.portable,
            false => &self.best,
        }
    }

    /// `cands` against the baseline on `pairs` fresh pairs per workload, under the final
    /// comparison's share of what is left of the budget.
    fn confirm(&self, cands: &[&Candidate], pairs: u32) -> anyhow::Result<Vec<measure::Measured>> {
        let share = self.share(Decides::Final);
        let (base, v) = (&self.baseline, &self.verifier);
        measure::confirm(self.ctx, base, cands, v, share, pairs, self.cache)
    }

    /// A confirmation's comparisons, kept per workload under `<tag> vs baseline`.
    fn keep_per_workload(&mut self, tag: &str, m: measure::Measured) {
        let tag = format!("{tag} vs baseline");
        for (w, c) in m.per_workload {
            self.per_workload
                .entry(w)
                .or_default()
                .insert(tag.clone(), c);
        }
    }

    /// Pairs per workload for the confirmation: [`confirmation_pairs`] at each workload's
    /// spread pooled over every comparison the run made on it (a comparison's own first
    /// look has 4 pairs, too few to tell its spread: sized from it alone, the confirmation
    /// bought a fraction of the pairs its ±1.5 % needed), and at least what spans its
    /// least time at the run times those comparisons saw ([`span_pairs`]; theirs, not the
    /// baseline's latest runs, so an unchanged re-run asks for the same pairs and reuses
    /// the verdicts kept under them).
    fn confirmation_pairs(&self) -> u32 {
        let by_workload = self.per_workload.values();
        let spreads: Vec<f64> = by_workload
            .clone()
            .map(|by_tag| pooled_spread(by_tag.values().map(|c| c.log)))
            .collect();
        let eval_secs: f64 = by_workload
            .map(|by_tag| median_run_secs(by_tag.values()))
            .sum();
        let (workloads, max) = (spreads.len(), self.ctx.spec.bench.max_time);
        confirmation_pairs(&spreads, span_pairs(eval_secs, workloads, max))
    }

    /// The final gate: what ships must be measurably faster than the baseline *measured
    /// directly on the gate's fresh pairs* (under `objective = "size"`: not slower), not
    /// only by a chain of keeps, each of which may have been lucky, nor by the comparison
    /// that chose it; and, under `max-slowdown-per-workload`, surely slower by no more on
    /// any workload ([`Gate::refusal`]). Otherwise a kept candidate that passes the same
    /// test on the same number of fresh pairs ships instead (the latest kept first, at most
    /// [`MAX_FALLBACKS`] tried; portable: one without a `-Ctarget-cpu`), else the
    /// baseline; the row and a warning say why. The portable alternative likewise.
    fn gate(&mut self, pairs: u32) -> anyhow::Result<()> {
        let gate = Gate {
            size: self.ctx.spec.bench.objective_size,
            margin: self.margin(),
            max_slowdown: self.ctx.spec.bench.max_slowdown_per_workload,
        };
        let mut tried = vec![self.best.clone(), self.portable.clone()];
        let mut warned = Vec::new();
        for portable in [false, true] {
            let Some(why) = gate.refusal(self.kept_candidate(portable)) else {
                continue;
            };
            let failed = self.kept_candidate(portable).clone();
            let instead = self.fallback(&gate, portable, pairs, &mut tried)?;
            match portable {
                true => self.portable = instead,
                false => self.best = instead,
            }
            // What ships when it is also the portable alternative is refused once.
            if !warned.contains(&failed.candidate.binary) {
                self.not_shipped(&failed, &why, portable);
                warned.push(failed.candidate.binary);
            }
        }
        Ok(())
    }

    /// The first kept candidate, latest first, that passes the gate confirmed on `pairs`
    /// fresh pairs (`tried`: the candidates confirmed so far, reused, not measured again;
    /// at most [`MAX_FALLBACKS`] confirmed anew), else the baseline.
    fn fallback(
        &mut self,
        gate: &Gate,
        portable: bool,
        pairs: u32,
        tried: &mut Vec<KeptCandidate>,
    ) -> anyhow::Result<KeptCandidate> {
        let failed = self.kept_candidate(portable).candidate.binary.clone();
        let order: Vec<KeptCandidate> = fallback_order(&self.kept, &failed, portable)
            .into_iter()
            .cloned()
            .collect();
        let mut confirmations = 0;
        for mut h in order {
            let known = tried
                .iter()
                .find(|t| t.candidate.binary == h.candidate.binary);
            if let Some(t) = known {
                h = t.clone();
            } else if confirmations < MAX_FALLBACKS && self.budget.left() > 0.0 {
                confirmations += 1;
                let m = self.confirm(&[&h.candidate], pairs)?.remove(0);
                confirmed(&mut h, &m);
                self.keep_per_workload(&h.candidate.tag(), m);
                tried.push(h.clone());
            } else {
                continue;
            }
            if gate.refusal(&h).is_none() {
                return Ok(h);
            }
        }
        Ok(KeptCandidate {
            candidate: self.baseline.clone(),
            vs_baseline: None,
            at_selection: None,
            workloads: Vec::new(),
        })
    }

    /// `failed` did not pass the gate (`why`): a warning, and a note on its row, naming
    /// what ships instead (another candidate only when it passed the same test).
    fn not_shipped(&mut self, failed: &KeptCandidate, why: &str, portable: bool) {
        let what = match portable {
            true => "not the portable alternative",
            false => "not shipped",
        };
        let now = self.kept_candidate(portable);
        let instead = match now.vs_baseline {
            Some(_) => format!(
                "{} ships instead: it passed the same test",
                now.candidate.label()
            ),
            None => "the baseline ships instead: no kept candidate passed the same test".into(),
        };
        let why = format!("{what}: {why}; {instead}");
        (self.ctx.ui()).warn(&format!("{}: {why}", failed.candidate.label()));
        let binary = failed.candidate.binary.display().to_string();
        let row = (self.rows.iter_mut().rev())
            .find(|r| r.status == Status::Kept && r.binary.as_deref() == Some(&*binary));
        if let Some(row) = row {
            row.notes.push(why);
        }
    }

    /// What to ship, with the portable alternative beside it.
    pub(crate) fn final_choice(&self) -> FinalChoice {
        let mut f = self.choice(&self.best);
        f.portable = Some(Box::new(self.choice(&self.portable)));
        f
    }

    fn choice(&self, h: &KeptCandidate) -> FinalChoice {
        let c = &h.candidate;
        let e = h.vs_baseline.map(|t| t.estimate(self.margin()));
        FinalChoice {
            stage: c.stage.to_string(),
            binary: c.binary.display().to_string(),
            speedup_vs_baseline: e.map(|e| 1.0 / e.ratio),
            speedup_ci: e.map(|e| (1.0 / e.ci_high, 1.0 / e.ci_low)),
            at_selection: h.at_selection.map(|t| t.estimate(self.margin())),
            variant: c.variant().map(str::to_string),
            settings: Some(Settings::from(&c.settings)),
            portable: None,
        }
    }
}

/// The spread of one pair's log ratio pooled over comparisons (each's `se·√n`, weighted by
/// its degrees of freedom); NaN without a comparison of 2 pairs or more.
fn pooled_spread(logs: impl Iterator<Item = LogEstimate>) -> f64 {
    let (mut sum, mut df) = (0.0, 0.0);
    for l in logs.filter(|l| l.n >= 2 && l.se.is_finite()) {
        let d = (l.n - 1) as f64;
        sum += l.se * l.se * l.n as f64 * d;
        df += d;
    }
    (sum / df).sqrt()
}

/// The mean of comparisons' median run times (both sides); 0 without one.
fn median_run_secs<'c>(comparisons: impl Iterator<Item = &'c Comparison>) -> f64 {
    let (mut sum, mut n) = (0.0, 0.0);
    for c in comparisons {
        for t in [c.median_a_secs, c.median_b_secs] {
            if t.is_finite() && t > 0.0 {
                sum += t;
                n += 1.0;
            }
        }
    }
    if n > 0.0 {
        sum / n
    } else {
        0.0
    }
}

/// How many kept candidates the gate confirms, latest first, when what would ship does not
/// pass: each costs a confirmation, and the ones kept earliest are rarely what a chain that
/// did not hold needs.
const MAX_FALLBACKS: usize = 2;

/// What `h` (what ships, or the portable alternative) passed the final confirmation as:
/// its ratio to the baseline on the gate's fresh pairs, the one at its choice kept beside
/// it, each workload's.
fn confirmed(h: &mut KeptCandidate, m: &measure::Measured) {
    h.at_selection = h.at_selection.or(h.vs_baseline);
    h.vs_baseline = Some(ToBaseline {
        log: m.log,
        confidence: m.confidence,
        measured: true,
        confirmed: true,
    });
    h.workloads = (m.per_workload.iter())
        .map(|(w, c)| (w.clone(), c.estimate))
        .collect();
}

/// The kept candidates a gate that refused `failed` may fall back on, latest first: each
/// binary once, never `failed` itself, and for the portable track none that picks a CPU.
fn fallback_order<'h>(
    kept: &'h [KeptCandidate],
    failed: &Path,
    portable: bool,
) -> Vec<&'h KeptCandidate> {
    let mut order: Vec<&KeptCandidate> = Vec::new();
    for h in kept.iter().rev() {
        let c = &h.candidate;
        let seen = order.iter().any(|o| o.candidate.binary == c.binary);
        if c.binary != failed && !seen && !(portable && c.targets_cpu()) {
            order.push(h);
        }
    }
    order
}

/// The final gate's rule.
struct Gate {
    /// `objective = "size"`: not surely slower is enough.
    size: bool,
    margin: f64,
    /// `max-slowdown-per-workload`.
    max_slowdown: Option<f64>,
}

impl Gate {
    /// Why `h` may not ship, `None` when it may: the baseline always may; anything else
    /// only on its direct comparison with the baseline on the gate's fresh pairs, surely
    /// faster (the whole interval below 1; under `objective = "size"` not surely slower),
    /// and under `max-slowdown-per-workload` no workload surely slower by more.
    fn refusal(&self, h: &KeptCandidate) -> Option<String> {
        let t = h.vs_baseline?;
        if !t.confirmed {
            return Some(
                "not measured directly against the baseline on the final gate's fresh pairs".into(),
            );
        }
        let e = t.estimate(self.margin);
        let passes = match self.size {
            true => !matches!(e.verdict, Verdict::Slower | Verdict::SlightlySlower),
            false => e.ci_high < 1.0,
        };
        if !passes {
            let not = if self.size { "slower" } else { "not faster" };
            return Some(format!(
                "measured directly against the baseline on the final gate's fresh pairs, {e}: {not}"
            ));
        }
        let max = self.max_slowdown?;
        let (w, e) = (h.workloads.iter()).find(|(_, e)| e.ci_low > 1.0 + max)?;
        Some(format!(
            "measured directly against the baseline on the final gate's fresh pairs, workload `{w}` is {e}: slower by more than max-slowdown-per-workload = {max}"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::{fallback_order, pooled_spread, Gate, KeptCandidate, ToBaseline};
    use crate::bench::stats::LogEstimate;
    use crate::bench::{Estimate, Verdict};
    use crate::cargo::BuildSettings;
    use crate::context::Candidate;
    use crate::stages::StageName;

    fn candidate(stage: StageName, binary: &str, cpu: bool) -> Candidate {
        let mut settings = BuildSettings::plain("release");
        if cpu {
            settings
                .stage_rustflags
                .push("-Ctarget-cpu=x86-64-v3".into());
        }
        Candidate {
            stage,
            binary: binary.into(),
            settings,
            size_bytes: 0,
            build_seconds: 0.0,
            notes: Vec::new(),
            facts: Default::default(),
        }
    }

    /// A ratio to the baseline on 20 pairs, its standard error on the log scale `se`.
    fn to_baseline(ratio: f64, se: f64, confirmed: bool) -> ToBaseline {
        ToBaseline {
            log: LogEstimate {
                mean: ratio.ln(),
                se,
                df: 19.0,
                n: 20,
            },
            confidence: 0.95,
            measured: true,
            confirmed,
        }
    }

    fn kept_candidate(
        binary: &str,
        vs: Option<ToBaseline>,
        workloads: &[(&str, f64, f64)],
    ) -> KeptCandidate {
        let estimate = |&(w, lo, hi): &(&str, f64, f64)| {
            let e = Estimate {
                ratio: (lo * hi).sqrt(),
                ci_low: lo,
                ci_high: hi,
                verdict: crate::bench::stats::verdict(lo, hi, 0.01),
                confidence: 0.95,
            };
            (w.to_string(), e)
        };
        KeptCandidate {
            candidate: candidate(StageName::Pgo, binary, false),
            vs_baseline: vs,
            at_selection: None,
            workloads: workloads.iter().map(estimate).collect(),
        }
    }

    const TIME: Gate = Gate {
        size: false,
        margin: 0.01,
        max_slowdown: None,
    };

    /// Issue 61: a stage's own figure, measured directly against the baseline in the
    /// comparison that chose it (0.5, surely faster), is not what a candidate ships on;
    /// only the final gate's direct comparison is, and only when surely faster (0.995 on
    /// a ±2 % interval is not). The baseline always ships.
    #[test]
    fn only_the_final_gates_direct_comparison_surely_faster_ships() {
        let stage_figure = kept_candidate("bin/pgo", Some(to_baseline(0.5, 0.01, false)), &[]);
        let why = TIME
            .refusal(&stage_figure)
            .expect("a stage figure does not ship");
        assert!(
            why.contains(
                "not measured directly against the baseline on the final gate's fresh pairs"
            ),
            "{why}"
        );
        let inconclusive = kept_candidate("bin/pgo", Some(to_baseline(0.995, 0.01, true)), &[]);
        let why = TIME
            .refusal(&inconclusive)
            .expect("inconclusive does not ship");
        assert!(why.contains("time ratio 0.995"), "{why}");
        assert!(why.ends_with("inconclusive: not faster"), "{why}");
        let faster = kept_candidate("bin/pgo", Some(to_baseline(0.8, 0.01, true)), &[]);
        assert_eq!(TIME.refusal(&faster), None);
        assert_eq!(
            TIME.refusal(&kept_candidate("bin/baseline", None, &[])),
            None
        );
        // Under `objective = "size"`: not surely slower is enough, surely slower is not.
        let size = Gate { size: true, ..TIME };
        let equal = kept_candidate("bin/pgo", Some(to_baseline(1.0, 0.002, true)), &[]);
        assert_eq!(size.refusal(&equal), None);
        let slower = kept_candidate("bin/pgo", Some(to_baseline(1.2, 0.01, true)), &[]);
        let why = size.refusal(&slower).expect("surely slower does not ship");
        assert!(why.ends_with(": slower"), "{why}");
    }

    /// Issue 61: 2.16× slower on one of two workloads while the geometric mean is faster
    /// ships unless `max-slowdown-per-workload` forbids it; a bound the workload stays
    /// within lets it ship.
    #[test]
    fn a_workload_surely_slower_than_max_slowdown_per_workload_refuses_the_candidate() {
        let workloads = [("fast", 0.2, 0.22), ("decode", 2.1, 2.22)];
        let h = kept_candidate("bin/pgo", Some(to_baseline(0.68, 0.01, true)), &workloads);
        assert_eq!(TIME.refusal(&h), None);
        let strict = Gate {
            max_slowdown: Some(0.05),
            ..TIME
        };
        let why = strict.refusal(&h).expect("decode is 2.16× slower");
        assert!(
            why.contains("workload `decode` is time ratio 2.159 [2.100, 2.220] slower"),
            "{why}"
        );
        assert!(why.contains("max-slowdown-per-workload = 0.05"), "{why}");
        let loose = Gate {
            max_slowdown: Some(1.5),
            ..TIME
        };
        assert_eq!(loose.refusal(&h), None);
        // The bound is on the whole interval: surely slower by more than the bound.
        let within = [("fast", 0.2, 0.22), ("decode", 1.03, 1.07)];
        let h = kept_candidate("bin/pgo", Some(to_baseline(0.5, 0.01, true)), &within);
        assert_eq!(strict.refusal(&h), None);
        assert_eq!(
            h.workloads[1].1.verdict,
            Verdict::Slower,
            "the premise: decode is surely slower"
        );
    }

    /// Issue 61: what the gate falls back on is never the candidate it refused ("c-compiler
    /// not shipped … c-compiler ships instead"), each binary is tried once, the latest kept
    /// first, and the portable track tries none that picks a CPU.
    #[test]
    fn the_fallback_is_never_the_refused_candidate_itself() {
        let kept = |stage, binary: &str, cpu| KeptCandidate {
            candidate: candidate(stage, binary, cpu),
            vs_baseline: Some(to_baseline(0.7, 0.01, false)),
            at_selection: None,
            workloads: Vec::new(),
        };
        let kept = [
            kept(StageName::Profile, "bin/profile", false),
            kept(StageName::Cpu, "bin/cpu", true),
            kept(StageName::CCompiler, "bin/c-compiler", true),
            kept(StageName::CCompiler, "bin/c-compiler", true),
        ];
        let names = |order: Vec<&KeptCandidate>| -> Vec<String> {
            (order.iter())
                .map(|h| h.candidate.binary.display().to_string())
                .collect()
        };
        let failed = std::path::Path::new("bin/c-compiler");
        assert_eq!(
            names(fallback_order(&kept, failed, false)),
            ["bin/cpu", "bin/profile"]
        );
        assert_eq!(names(fallback_order(&kept, failed, true)), ["bin/profile"]);
        let failed = std::path::Path::new("bin/pgo");
        assert_eq!(
            names(fallback_order(&kept, failed, false)),
            ["bin/c-compiler", "bin/cpu", "bin/profile"]
        );
    }

    /// Two comparisons of one workload: 4 pairs spreading 0.02 (se 0.01) and 16 spreading
    /// 0.12 (se 0.03): pooled by degrees of freedom, √((3·0.0004 + 15·0.0144) / 18) ≈ 0.110.
    #[test]
    fn the_spread_is_pooled_over_a_workloads_comparisons() {
        let log = |se: f64, n: usize| LogEstimate {
            mean: 0.0,
            se,
            df: (n - 1) as f64,
            n,
        };
        let s = pooled_spread([log(0.01, 4), log(0.03, 16)].into_iter());
        assert!((s - 0.1100).abs() < 1e-3, "{s}");
        let one_pair = pooled_spread([log(0.5, 1), log(f64::INFINITY, 8)].into_iter());
        assert!(one_pair.is_nan());
    }
}
