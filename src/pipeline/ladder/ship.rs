//! What ships: the best candidate (and the portable alternative beside it, on the same
//! runs of the baseline, when its ratio was chained) confirmed against the baseline on
//! fresh pairs at the end, the final gate that
//! falls back on what was kept before when the confirmation does not hold, and the final
//! choice the report carries.

use super::{Holder, Ladder, ToBaseline};
use crate::bench::stats::LogEstimate;
use crate::bench::{Comparison, Estimate, Verdict};
use crate::context::Candidate;
use crate::pipeline::budget::{confirmation_pairs, span_pairs, Decides};
use crate::pipeline::measure;
use crate::report::{FinalChoice, Settings, Status};

impl Ladder<'_> {
    /// Confirm what ships (and the portable alternative, when its ratio was chained) against
    /// the baseline on fresh pairs (`measure::confirm`): none of them chose the candidate, and their number is
    /// fixed before they run, so neither the choice nor an early stop biases the ratio the
    /// `ship:` line prints and the gate decides on; the ratio at the choice is kept beside
    /// it (`at_selection`). The comparisons are kept per workload under `<tag> vs baseline`.
    pub(crate) fn measure_final(&mut self) -> anyhow::Result<()> {
        let portable_is_best = self.portable.candidate.binary == self.best.candidate.binary;
        self.grant = Some(self.budget.last_grant(self.ctx.spec.bench.max_time));
        let share = self.share(Decides::Final);
        // What ships, when it is not the baseline; the portable alternative only when its
        // ratio was chained: a comparison with the baseline of its own gave it one measured
        // directly, and confirming it again would cost more for a figure already measured
        // directly. Both together share one series of the baseline's runs.
        let mut which = Vec::new();
        if self.best.vs_baseline.is_some() {
            which.push(false);
        }
        if !portable_is_best && self.portable.vs_baseline.is_some_and(|t| !t.measured) {
            which.push(true);
        }
        if !which.is_empty() {
            let pairs = self.confirmation_pairs();
            let cands: Vec<&Candidate> =
                (which.iter()).map(|&p| &self.holder(p).candidate).collect();
            let (base, v) = (&self.baseline, &self.verifier);
            let ms = measure::confirm(self.ctx, base, &cands, v, share, pairs, self.cache)?;
            for (portable, m) in which.into_iter().zip(ms) {
                self.confirmed(portable, m);
            }
        }
        if portable_is_best {
            self.portable = self.best.clone();
        }
        self.gate();
        Ok(())
    }

    fn holder(&self, portable: bool) -> &Holder {
        match portable {
            true => &self.portable,
            false => &self.best,
        }
    }

    /// What ships (or the portable alternative) confirmed as `m`: its ratio to the
    /// baseline, measured directly, the one at its choice kept beside it; its comparisons
    /// kept per workload under `<tag> vs baseline`.
    fn confirmed(&mut self, portable: bool, m: measure::Measured) {
        let h = match portable {
            true => &mut self.portable,
            false => &mut self.best,
        };
        h.at_selection = h.vs_baseline;
        h.vs_baseline = Some(ToBaseline {
            log: m.log,
            confidence: m.confidence,
            measured: true,
        });
        let tag = format!("{} vs baseline", h.candidate.tag());
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
    /// directly* (under `objective = "size"`: not slower), not only by a chain of keeps,
    /// each of which may have been lucky. Otherwise the latest kept candidate that was
    /// (portable: one without a `-Ctarget-cpu`) ships instead, else the baseline; the row
    /// and a warning say why.
    fn gate(&mut self) {
        let size = self.ctx.spec.bench.objective_size;
        let margin = self.margin();
        let holds = |h: &Holder| {
            h.vs_baseline
                .is_none_or(|t| t.measured && ships(&t.estimate(margin), size))
        };
        let baseline = Holder {
            candidate: self.baseline.clone(),
            vs_baseline: None,
            at_selection: None,
        };
        let fallback = |portable: bool| {
            let found = self.kept.iter().rev().find(|h| {
                holds(h) && h.vs_baseline.is_some() && !(portable && h.candidate.targets_cpu())
            });
            found.cloned().unwrap_or_else(|| baseline.clone())
        };
        let (best, portable) = (fallback(false), fallback(true));
        if !holds(&self.portable) {
            self.portable = portable;
        }
        if holds(&self.best) {
            return;
        }
        let failed = std::mem::replace(&mut self.best, best);
        let direct = failed.vs_baseline.map(|t| t.estimate(margin));
        let why = format!(
            "not shipped: measured directly against the baseline, {}: not faster, so the chain of keeps that led here did not hold; {} ships instead",
            direct.map_or("not measured".to_string(), |e| e.to_string()),
            self.best.candidate.label()
        );
        self.ctx
            .ui()
            .warn(&format!("{}: {why}", failed.candidate.label()));
        let row = self.rows.iter_mut().rev().find(|r| {
            r.status == Status::Kept
                && r.binary.as_deref() == Some(&*failed.candidate.binary.display().to_string())
        });
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

    fn choice(&self, h: &Holder) -> FinalChoice {
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

/// Whether a direct measurement against the baseline lets a candidate ship: surely faster
/// (the whole interval below 1), or under `objective = "size"` not surely slower.
fn ships(e: &Estimate, size: bool) -> bool {
    match size {
        true => !matches!(e.verdict, Verdict::Slower | Verdict::SlightlySlower),
        false => e.ci_high < 1.0,
    }
}

#[cfg(test)]
mod tests {
    use super::pooled_spread;
    use crate::bench::stats::LogEstimate;

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
