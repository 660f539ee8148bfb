//! A comparison read back from where it was kept (`cache::VerdictCache`) is checked
//! against its own data before it is trusted: its samples' pairs give its estimate again
//! (the estimator it names, on the figures it compared), its ratio is that estimate's, and
//! its verdict is its interval's. A stored ratio, interval or verdict edited by hand or by
//! a damaged write made the report contradict itself (the workload line said 0.500
//! faster, its row, from the same comparison's log estimate, 0.995 inconclusive).

use super::comparison::{Comparison, RunRecord, Side};
use super::stats::{self, Estimator, LogEstimate, Verdict, TRIM};

/// How far two figures that should be one may differ (relative): what the JSON round
/// trip of a float and the order of a sum can change, nothing a real edit leaves.
const SAME: f64 = 1e-9;

impl Comparison {
    /// Why this comparison does not agree with its own data, `None` when it does: its
    /// pairs (the samples) give another estimate, another number of pairs, or its ratio,
    /// interval and verdict are not that estimate's.
    pub(crate) fn disagreement(&self) -> Option<String> {
        let d = self.pair_log_ratios();
        if d.len() != self.n as usize || self.log.n != d.len() {
            return Some(format!(
                "it says {} pairs, its samples hold {}",
                self.n,
                d.len()
            ));
        }
        let mean = match self.estimator {
            Estimator::Trimmed => LogEstimate::trimmed(&d, TRIM).mean,
            Estimator::Mean => LogEstimate::of(&d).mean,
        };
        if !same(mean, self.log.mean) {
            return Some(format!(
                "its samples give the ratio {:.3}, it says {:.3}",
                mean.exp(),
                self.log.mean.exp()
            ));
        }
        let e = &self.estimate;
        let within = e.ci_low <= e.ratio && e.ratio <= e.ci_high;
        if !(same(e.ratio, mean.exp()) && within) {
            return Some(format!(
                "its samples give the ratio {:.3}, its estimate says {e}",
                mean.exp()
            ));
        }
        let verdict = stats::verdict(e.ci_low, e.ci_high, self.margin);
        let withheld = self.median_disagrees && e.verdict == Verdict::Inconclusive;
        if verdict != e.verdict && !withheld {
            return Some(format!(
                "its interval [{:.3}, {:.3}] is {verdict}, it says {}",
                e.ci_low, e.ci_high, e.verdict
            ));
        }
        None
    }

    /// `ln(b / a)` of each pair as the comparison compared them: the i-th run of each side
    /// in the order they ran, each one's wall time or its metric's figure (oriented so
    /// lower is better), as `bench::drive` paired them.
    fn pair_log_ratios(&self) -> Vec<f64> {
        let figure = |r: &RunRecord| match &self.metric {
            None => r.wall_secs,
            Some(m) => match (m.better, r.metric) {
                (_, None) => f64::NAN,
                (crate::spec::Better::Lower, Some(v)) => v,
                (crate::spec::Better::Higher, Some(v)) => 1.0 / v,
            },
        };
        let mut runs: Vec<&RunRecord> = self.samples.iter().collect();
        runs.sort_by_key(|r| r.seq);
        let side = |s: Side| -> Vec<f64> {
            (runs.iter())
                .filter(|r| r.side == s)
                .map(|r| figure(r))
                .collect()
        };
        let (a, b) = (side(Side::A), side(Side::B));
        let n = a.len().min(b.len());
        stats::log_ratios(&a[..n], &b[..n])
    }
}

/// Whether `a` and `b` are one figure (NaN is never the same as anything).
fn same(a: f64, b: f64) -> bool {
    (a - b).abs() <= SAME * a.abs().max(b.abs()).max(1.0)
}

/// `c` with its estimate, log estimate and number of pairs made again from its samples:
/// a comparison that agrees with its own data, for the tests of what reads one back.
#[cfg(test)]
pub(crate) fn agreeing(mut c: Comparison) -> Comparison {
    c.estimator = Estimator::Trimmed;
    let d = c.pair_log_ratios();
    c.n = d.len() as u32;
    c.log = LogEstimate::trimmed(&d, TRIM);
    c.median_disagrees = false;
    c.estimate = stats::Estimate::from_log(&c.log, c.estimate.confidence, c.margin);
    c
}

#[cfg(test)]
mod tests {
    use super::agreeing;
    use crate::bench::Verdict;

    fn kept() -> crate::bench::Comparison {
        agreeing(
            crate::bench::export::fixture::report().workloads[0]
                .comparison
                .clone(),
        )
    }

    /// Issue 61: a comparison whose stored ratio, interval and verdict were edited (0.500
    /// faster) while its samples and log estimate say 0.995 is found out; so is one whose
    /// log estimate was edited with it, and one with a pair fewer than it says. As made, it
    /// agrees.
    #[test]
    fn a_comparison_that_no_longer_agrees_with_its_samples_is_found_out() {
        let c = kept();
        assert_eq!(c.disagreement(), None, "{c:#?}");
        let mut tampered = c.clone();
        tampered.estimate.ratio = 0.5;
        tampered.estimate.ci_low = 0.45;
        tampered.estimate.ci_high = 0.55;
        tampered.estimate.verdict = Verdict::Faster;
        let why = tampered.disagreement().expect("the estimate was edited");
        assert!(why.contains("its estimate says time ratio 0.500"), "{why}");
        tampered.log.mean = 0.5f64.ln();
        let why = tampered
            .disagreement()
            .expect("the log estimate was edited too");
        assert!(why.contains("it says 0.500"), "{why}");
        let mut verdict = c.clone();
        verdict.estimate.verdict = Verdict::Faster;
        if c.estimate.verdict != Verdict::Faster {
            assert!(verdict.disagreement().is_some());
        }
        let mut fewer = c.clone();
        fewer.samples.pop();
        let why = fewer.disagreement().expect("a run is missing");
        assert!(why.contains("its samples hold 1"), "{why}");
    }
}
