//! A fixed design's interval checked for drift: on a shared machine the ratio itself
//! drifts over seconds, so pairs close in time are not independent, and an interval from
//! their spread alone is too narrow. The pairs of a fixed design (the confirmation of what
//! ships, `joint::drive_in_turns`) span the whole comparison in time; cut into consecutive
//! batches, the batches' estimates differ by the drift each saw as well as by their pairs'
//! noise ([`batches`]).

use super::stats::{Estimator, LogEstimate, TRIM};

/// How many consecutive batches [`batches`] splits a fixed design's pairs into.
///
/// Why four: in the seeded simulation of a confirmation (`bench::sim`), four batches miss
/// the ratio least: fewer pairs per batch spread more by chance, fewer batches see less of
/// the drift.
/// Figures: docs/src/decisions.md, "A fixed design is checked against four batches".
const DRIFT_BATCHES: usize = 4;

/// The spread of a fixed design's consecutive batches: the standard error (on `df`
/// degrees of freedom) of the [`DRIFT_BATCHES`] batches' estimates, and their ratios in
/// time order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Batches {
    pub se: f64,
    pub df: f64,
    pub ratios: Vec<f64>,
}

/// The batches of the time-ordered log ratios `d` of a fixed design, each batch's estimate
/// by `estimator`; `None` with fewer than four pairs a batch. Its interval is no narrower
/// than their spread says (`PairedAnalysis::widened`,
/// `sim::under_drift_the_confirmations_interval_counts_it`).
pub(crate) fn batches(d: &[f64], estimator: Estimator) -> Option<Batches> {
    let (n, m) = (d.len(), DRIFT_BATCHES);
    if n < 4 * m {
        return None;
    }
    let means: Vec<f64> = (0..m)
        .map(|j| {
            let batch = &d[j * n / m..(j + 1) * n / m];
            match estimator {
                Estimator::Trimmed => LogEstimate::trimmed(batch, TRIM).mean,
                Estimator::Mean => LogEstimate::of(batch).mean,
            }
        })
        .collect();
    Some(Batches {
        se: LogEstimate::of(&means).se,
        df: (m - 1) as f64,
        ratios: means.iter().map(|x| x.exp()).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::stats::{analyze, Verdict};

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    /// A ratio that moved halfway through (0 then 0.1) is checked against four batches:
    /// their means 0, 0, 0.1, 0.1 have a standard error of 0.0289 on 3 degrees of
    /// freedom, wider than the pairs' own 0.0207 (trimmed); pairs that alternate give batches that
    /// agree, and fewer than four pairs a batch are left alone.
    #[test]
    fn a_drifting_ratio_widens_the_interval_to_its_batches() {
        let analysed = |d: &[f64]| {
            let a = vec![1.0; d.len()];
            let b: Vec<f64> = d.iter().map(|x| x.exp()).collect();
            let p = analyze(&a, &b, 0.95, 0.01, Estimator::Trimmed, 1);
            let (after, batches) = p.clone().widened(batches(d, Estimator::Trimmed), 0.01);
            (p, after, batches)
        };
        let moved: Vec<f64> = (0..16).map(|i| if i < 8 { 0.0 } else { 0.1 }).collect();
        let (before, after, batches) = analysed(&moved);
        let batches = batches.expect("widened");
        assert!(close(batches[0], 1.0, 1e-12) && close(batches[3], 0.1f64.exp(), 1e-12));
        assert!(
            close(after.log.se, 0.1 / 3f64.sqrt() / 2.0, 1e-9),
            "{:?}",
            after.log
        );
        assert!(close(before.log.se, 0.0207, 1e-4), "{:?}", before.log);
        assert_eq!(after.log.df, 3.0);
        assert_eq!(after.log.mean, before.log.mean);
        assert!(after.estimate.ci_low < before.estimate.ci_low);
        assert_eq!(after.estimate.verdict, Verdict::Inconclusive);
        let alternating: Vec<f64> = (0..16).map(|i| 0.1 * f64::from(i % 2)).collect();
        let (before, after, batches) = analysed(&alternating);
        assert_eq!((after.log, batches), (before.log, None));
        let (before, after, batches) = analysed(&moved[4..]);
        assert_eq!(
            (after.log, batches),
            (before.log, None),
            "12 pairs: 3 a batch"
        );
    }
}
