//! Statistics of paired A/B measurements: estimates, confidence intervals, verdicts,
//! the repeated-looks schedule, outliers and spread.
//!
//! Pure functions on numbers only: nothing here runs a process, reads a clock or prints.
//!
//! The model (docs/src/measuring.md): for pair i, `d_i = ln(t_B,i / t_A,i)`. The ratio B/A is
//! estimated by `exp` of the 20 % trimmed mean of `d` with Yuen's interval
//! ([`Estimator::Trimmed`], the default): noise on a shared machine has heavy tails (a run
//! is disturbed by another process, never sped up), which move the mean of `d` and widen its
//! interval, and leave the trimmed mean where it was; where the noise has no tails it costs
//! little (`bench::sim`). With [`Estimator::Mean`], `exp(mean d)` with a paired Student-t
//! interval on the mean of `d` (`mean ± t(1-α/2, n-1)·s/√n`, mapped through `exp`); when the
//! sample is small or skewed a seeded percentile bootstrap over the pairs is computed as a
//! check, and the reported interval is the union of both (never narrower than either).

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

/// What a comparison says about B relative to A.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The whole interval is below `1 − margin`.
    Faster,
    /// The whole interval is above `1 + margin`.
    Slower,
    /// The whole interval is inside `[1 − margin, 1 + margin]`.
    Equivalent,
    /// The whole interval is below 1 but not below `1 − margin`: faster, by less than the
    /// margin as far as the data tell (never kept; measuring goes on while time allows).
    #[serde(rename = "slightly-faster")]
    SlightlyFaster,
    /// The whole interval is above 1 but not above `1 + margin`.
    #[serde(rename = "slightly-slower")]
    SlightlySlower,
    /// None of the above: the interval straddles 1 and a margin boundary.
    Inconclusive,
}

impl Verdict {
    pub fn as_str(&self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::Equivalent => "equivalent",
            Verdict::SlightlyFaster => "slightly faster",
            Verdict::SlightlySlower => "slightly slower",
            Verdict::Inconclusive => "inconclusive",
        }
    }

    /// A verdict that ends the measuring: one of faster, slower or equivalent. A slight
    /// difference is not: more pairs may still show it beyond the margin, or inside it.
    pub fn is_decided(self) -> bool {
        matches!(
            self,
            Verdict::Faster | Verdict::Slower | Verdict::Equivalent
        )
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The verdict for an interval of the ratio B/A with equivalence margin `margin`.
pub fn verdict(ci_low: f64, ci_high: f64, margin: f64) -> Verdict {
    if !(ci_low.is_finite() && ci_high.is_finite()) {
        return Verdict::Inconclusive;
    }
    let margin = margin.max(0.0);
    if ci_high < 1.0 - margin {
        Verdict::Faster
    } else if ci_low > 1.0 + margin {
        Verdict::Slower
    } else if ci_low >= 1.0 - margin && ci_high <= 1.0 + margin {
        Verdict::Equivalent
    } else if ci_high < 1.0 {
        Verdict::SlightlyFaster
    } else if ci_low > 1.0 {
        Verdict::SlightlySlower
    } else {
        Verdict::Inconclusive
    }
}

/// A ratio B/A with its interval and verdict.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    #[serde(deserialize_with = "crate::util::lenient_f64::one")]
    pub ratio: f64,
    #[serde(deserialize_with = "crate::util::lenient_f64::one")]
    pub ci_low: f64,
    #[serde(deserialize_with = "crate::util::lenient_f64::one")]
    pub ci_high: f64,
    pub verdict: Verdict,
    /// Confidence level of the interval (e.g. 0.95, or stricter after repeated looks).
    #[serde(deserialize_with = "crate::util::lenient_f64::one")]
    pub confidence: f64,
}

impl Estimate {
    /// `exp(log.mean)` with the interval `exp(log.mean ± t·se)` at `confidence`.
    pub fn from_log(log: &LogEstimate, confidence: f64, margin: f64) -> Self {
        let (lo, hi) = log.interval(confidence);
        Estimate {
            ratio: log.mean.exp(),
            ci_low: lo.exp(),
            ci_high: hi.exp(),
            verdict: verdict(lo.exp(), hi.exp(), margin),
            confidence,
        }
    }

    /// Whether the ladder keeps a candidate so measured: *faster* (the whole interval past
    /// the margin), or *slightly faster* with the estimate itself past it — surely faster,
    /// and by the margin or more as far as the time it had could tell (slow workloads buy
    /// only a few pairs, and the stricter rule drops a real gain of a few percent and ships
    /// the slower build).
    /// Figures: docs/src/decisions.md, "Slightly faster past the margin is kept".
    pub fn keeps(&self, margin: f64) -> bool {
        match self.verdict {
            Verdict::Faster => true,
            Verdict::SlightlyFaster => self.ratio <= 1.0 - margin,
            _ => false,
        }
    }
}

impl std::fmt::Display for Estimate {
    /// `time ratio 0.934 [0.912, 0.951] faster` (B/A: below 1, B is faster)
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "time ratio {:.3} [{:.3}, {:.3}] {}",
            self.ratio, self.ci_low, self.ci_high, self.verdict
        )
    }
}

/// An estimate of a mean on the log scale: the mean, its standard error and the degrees
/// of freedom of its t distribution.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LogEstimate {
    #[serde(deserialize_with = "crate::util::lenient_f64::one")]
    pub mean: f64,
    #[serde(deserialize_with = "crate::util::lenient_f64::one")]
    pub se: f64,
    #[serde(deserialize_with = "crate::util::lenient_f64::one")]
    pub df: f64,
    pub n: usize,
}

impl LogEstimate {
    /// The one-sample estimate of the mean of `d` (`n ≥ 2` for a finite interval).
    pub fn of(d: &[f64]) -> Self {
        let n = d.len();
        let m = mean(d);
        let se = if n >= 2 {
            std_dev(d) / (n as f64).sqrt()
        } else {
            f64::INFINITY
        };
        LogEstimate {
            mean: m,
            se,
            df: (n.max(2) - 1) as f64,
            n,
        }
    }

    /// The `trim`-trimmed mean of `d` (`g = ⌊trim·n⌋` values dropped at each end) with the
    /// Tukey–McLaughlin standard error `s_w / ((1 − 2g/n)·√n)`, `s_w` the standard deviation
    /// of `d` winsorized at the same `g`, on `n − 2g − 1` degrees of freedom (Yuen's
    /// interval). With `g = 0` (fewer than 5 pairs at 20 %) it is [`LogEstimate::of`].
    pub fn trimmed(d: &[f64], trim: f64) -> Self {
        let n = d.len();
        let g = (trim * n as f64).floor() as usize;
        if g == 0 || n < 2 * g + 2 {
            return LogEstimate::of(d);
        }
        let mut sorted = d.to_vec();
        sorted.sort_by(f64::total_cmp);
        let (low, high) = (sorted[g], sorted[n - 1 - g]);
        // `max`/`min`, not `clamp`: a NaN among the figures must not panic.
        let winsorized: Vec<f64> = sorted.iter().map(|x| x.max(low).min(high)).collect();
        let kept = 1.0 - 2.0 * g as f64 / n as f64;
        LogEstimate {
            mean: mean(&sorted[g..n - g]),
            se: std_dev(&winsorized) / (kept * (n as f64).sqrt()),
            df: (n - 2 * g - 1) as f64,
            n,
        }
    }

    /// Two-sided interval for the mean at `confidence` on the log scale.
    pub fn interval(&self, confidence: f64) -> (f64, f64) {
        if self.se == 0.0 {
            return (self.mean, self.mean);
        }
        let t = t_quantile(two_sided(confidence), self.df);
        (self.mean - t * self.se, self.mean + t * self.se)
    }
}

/// The upper quantile probability of a two-sided interval at `confidence`.
fn two_sided(confidence: f64) -> f64 {
    1.0 - (1.0 - confidence) / 2.0
}

/// `ln(b_i / a_i)` for each pair. Non-positive times are clamped to 1 ns; a positive
/// figure is not (a metric's oriented figure may be far below 1e-9: `1 / 1e12` tokens/s),
/// and a ratio past the float range is taken as `ln b − ln a`, finite for finite figures.
pub(crate) fn log_ratios(a: &[f64], b: &[f64]) -> Vec<f64> {
    let positive = |x: f64| if x > 0.0 { x } else { 1e-9 };
    a.iter()
        .zip(b)
        .map(|(&a, &b)| {
            let (a, b) = (positive(a), positive(b));
            match (b / a).ln() {
                d if d.is_finite() => d,
                _ => b.ln() - a.ln(),
            }
        })
        .collect()
}

/// Number of bootstrap resamples for the check interval.
pub(crate) const BOOTSTRAP_RESAMPLES: usize = 4000;

/// The paired analysis of one look at the data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct PairedAnalysis {
    /// The reported estimate: interval = union of the t and (when computed) bootstrap ones.
    pub estimate: Estimate,
    /// Paired-t statistics of `d`. `se` is the *effective* standard error: widened so that
    /// `mean ± t·se` reproduces the reported interval (used to combine workloads).
    pub log: LogEstimate,
    /// The paired-t interval alone (ratio scale).
    #[serde(deserialize_with = "crate::util::lenient_f64::pair")]
    pub t_interval: [f64; 2],
    /// The bootstrap interval (ratio scale) when it was computed.
    #[serde(deserialize_with = "crate::util::lenient_f64::opt_pair")]
    pub bootstrap_interval: Option<[f64; 2]>,
    /// Sample skewness of `d`.
    #[serde(deserialize_with = "crate::util::lenient_f64::one")]
    pub skewness: f64,
    /// `exp(median d)`: the typical pair's ratio.
    #[serde(deserialize_with = "crate::util::lenient_f64::one")]
    pub median_ratio: f64,
    /// Distribution-free interval for `exp(median d)` (sign test, same confidence; ratio
    /// scale; infinite bounds when there are too few pairs for one).
    #[serde(deserialize_with = "crate::util::lenient_f64::pair")]
    pub median_interval: [f64; 2],
    /// The median interval contradicts the mean's verdict, which was therefore withheld
    /// (reported as inconclusive): a few disturbed pairs drive the mean.
    pub median_disagrees: bool,
}

impl PairedAnalysis {
    /// This analysis of a fixed design with its interval no narrower than the spread of its
    /// consecutive `batches` says: the estimate stays, the standard error becomes the
    /// batches' (with their degrees of freedom) when that is the larger, and the batches'
    /// ratios come with it.
    pub(crate) fn widened(
        self,
        batches: Option<super::drift::Batches>,
        margin: f64,
    ) -> (PairedAnalysis, Option<Vec<f64>>) {
        let Some(b) = batches.filter(|b| b.se > self.log.se) else {
            return (self, None);
        };
        let log = LogEstimate {
            se: b.se,
            df: b.df,
            ..self.log
        };
        let widened = PairedAnalysis {
            estimate: Estimate::from_log(&log, self.estimate.confidence, margin),
            log,
            ..self
        };
        (widened, Some(b.ratios))
    }
}

/// Which estimate of the ratio a comparison reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Estimator {
    /// `exp` of the 20 % trimmed mean of `d` with the Tukey–McLaughlin (Yuen) interval
    /// ([`LogEstimate::trimmed`]), the default: see the module's doc and `bench::sim`'s
    /// simulation for what it buys.
    #[default]
    Trimmed,
    /// `exp(mean d)` with the paired t interval (and the bootstrap's, when skewed): what
    /// every comparison used before; a comparison read without the field was made so.
    Mean,
}

impl Estimator {
    /// What a comparison recorded without the field used.
    pub fn before_trimming() -> Self {
        Estimator::Mean
    }

    /// Written as an absent field, which reads back as the mean: a report of an earlier
    /// version re-serialises to the same JSON.
    pub fn is_mean(&self) -> bool {
        *self == Estimator::Mean
    }
}

/// The share of pairs [`Estimator::Trimmed`] drops at each end of the sorted `d`.
pub(crate) const TRIM: f64 = 0.2;

/// Analyse paired wall times at a confidence level with `estimator`; `seed` drives the
/// bootstrap of the mean's check.
pub(crate) fn analyze(
    a: &[f64],
    b: &[f64],
    confidence: f64,
    margin: f64,
    estimator: Estimator,
    seed: u64,
) -> PairedAnalysis {
    match estimator {
        Estimator::Trimmed => analyze_trimmed(&log_ratios(a, b), confidence, margin),
        Estimator::Mean => analyze_pairs(a, b, confidence, margin, seed),
    }
}

/// Names how pairs become an estimate and a verdict here; a kept comparison's key holds it
/// (`cache::VerdictCache::key`), so a change of the analysis (a new check, another
/// estimator) is not answered by verdicts an earlier one made. Change it with the analysis.
pub(crate) const ANALYSIS: &str =
    "trimmed-0.2; fixed designs checked against 4 batches; a pair's runs on one CPU";

/// The trimmed mean's analysis of `d`: its estimate and interval, the median's beside it.
fn analyze_trimmed(d: &[f64], confidence: f64, margin: f64) -> PairedAnalysis {
    let log = LogEstimate::trimmed(d, TRIM);
    let (lo, hi) = log.interval(confidence);
    let (t_lo, t_hi) = LogEstimate::of(d).interval(confidence);
    let (m_lo, m_hi) = median_interval(d, confidence);
    PairedAnalysis {
        estimate: Estimate {
            ratio: log.mean.exp(),
            ci_low: lo.exp(),
            ci_high: hi.exp(),
            verdict: verdict(lo.exp(), hi.exp(), margin),
            confidence,
        },
        log,
        t_interval: [t_lo.exp(), t_hi.exp()],
        bootstrap_interval: None,
        skewness: skewness(d),
        median_ratio: median(d).exp(),
        median_interval: [m_lo.exp(), m_hi.exp()],
        median_disagrees: false,
    }
}

/// Analyse paired wall times at a confidence level by their mean ([`Estimator::Mean`]);
/// `seed` drives the bootstrap.
///
/// The bootstrap check runs when `n < 30` or `|skewness(d)| > 1`: there the t interval's
/// normality assumption is weakest. The reported interval is the union of both.
///
/// A robustness check guards the verdict: the median of `d` has a distribution-free
/// interval (sign test) at the same confidence; when that interval does not reach the
/// region the verdict claims (e.g. *faster* while the median interval lies wholly at or
/// above `1 − margin`), the mean is being driven by a few disturbed pairs — typical of a
/// machine with bursts of background load — and the verdict is withheld as
/// *inconclusive*. This only ever turns a verdict into *inconclusive*, so it cannot raise
/// the error rates; on undisturbed data the two agree and it costs nothing.
pub(crate) fn analyze_pairs(
    a: &[f64],
    b: &[f64],
    confidence: f64,
    margin: f64,
    seed: u64,
) -> PairedAnalysis {
    let d = log_ratios(a, b);
    let mut log = LogEstimate::of(&d);
    let (t_lo, t_hi) = log.interval(confidence);
    let skew = skewness(&d);
    let (mut lo, mut hi) = (t_lo, t_hi);
    let mut boot = None;
    if d.len() >= 2 && (d.len() < 30 || skew.abs() > 1.0) {
        let (b_lo, b_hi) = bootstrap_mean_interval(&d, confidence, BOOTSTRAP_RESAMPLES, seed);
        boot = Some([b_lo.exp(), b_hi.exp()]);
        lo = lo.min(b_lo);
        hi = hi.max(b_hi);
    }
    if log.se.is_finite() && log.se > 0.0 {
        let t = t_quantile(two_sided(confidence), log.df);
        let half = (log.mean - lo).max(hi - log.mean);
        log.se = log.se.max(half / t);
    }
    let (m_lo, m_hi) = median_interval(&d, confidence);
    let mean_verdict = verdict(lo.exp(), hi.exp(), margin);
    let (low_edge, high_edge) = ((1.0 - margin.max(0.0)).ln(), (1.0 + margin.max(0.0)).ln());
    let median_supports = match mean_verdict {
        Verdict::Faster => m_lo < low_edge,
        Verdict::Slower => m_hi > high_edge,
        Verdict::Equivalent => m_lo <= high_edge && m_hi >= low_edge,
        Verdict::SlightlyFaster => m_lo < 0.0,
        Verdict::SlightlySlower => m_hi > 0.0,
        Verdict::Inconclusive => true,
    };
    PairedAnalysis {
        estimate: Estimate {
            ratio: log.mean.exp(),
            ci_low: lo.exp(),
            ci_high: hi.exp(),
            verdict: if median_supports {
                mean_verdict
            } else {
                Verdict::Inconclusive
            },
            confidence,
        },
        log,
        t_interval: [t_lo.exp(), t_hi.exp()],
        bootstrap_interval: boot,
        skewness: skew,
        median_ratio: median(&d).exp(),
        median_interval: [m_lo.exp(), m_hi.exp()],
        median_disagrees: !median_supports,
    }
}

/// Distribution-free interval for the median of `d` at (at least) `confidence`, from
/// order statistics: `[d_(k), d_(n+1−k)]` covers the median with probability
/// `1 − 2·P(X ≤ k−1)`, `X ~ Binomial(n, ½)` (the sign test). Infinite bounds when `n` is
/// too small for the level.
pub(crate) fn median_interval(d: &[f64], confidence: f64) -> (f64, f64) {
    let n = d.len();
    let tail = (1.0 - confidence) / 2.0;
    let mut sorted = d.to_vec();
    sorted.sort_by(f64::total_cmp);
    // Largest 0-based l with P(X ≤ l) ≤ tail.
    let ln_n_fact = ln_gamma(n as f64 + 1.0);
    let ln_half_n = n as f64 * 0.5f64.ln();
    let mut cdf = 0.0;
    let mut best = None;
    for l in 0..n.div_ceil(2) {
        let ln_pmf =
            ln_n_fact - ln_gamma(l as f64 + 1.0) - ln_gamma((n - l) as f64 + 1.0) + ln_half_n;
        cdf += ln_pmf.exp();
        if cdf > tail {
            break;
        }
        best = Some(l);
    }
    match best {
        Some(l) => (sorted[l], sorted[n - 1 - l]),
        None => (f64::NEG_INFINITY, f64::INFINITY),
    }
}

/// Percentile bootstrap interval of the mean of `d` (log scale), seeded.
pub(crate) fn bootstrap_mean_interval(
    d: &[f64],
    confidence: f64,
    resamples: usize,
    seed: u64,
) -> (f64, f64) {
    let n = d.len();
    if n == 0 || resamples == 0 {
        return (f64::NAN, f64::NAN);
    }
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut means: Vec<f64> = (0..resamples)
        .map(|_| (0..n).map(|_| d[rng.usize(0..n)]).sum::<f64>() / n as f64)
        .collect();
    means.sort_by(f64::total_cmp);
    let tail = (1.0 - confidence) / 2.0;
    (
        quantile_sorted(&means, tail),
        quantile_sorted(&means, 1.0 - tail),
    )
}

/// Geometric mean of several ratio estimates with its interval.
///
/// Combines the per-workload log estimates: the mean of the log means, standard error
/// `√(Σ se_i²) / k`, degrees of freedom by Welch–Satterthwaite
/// `(Σ se_i²)² / Σ (se_i⁴ / df_i)`. The workloads are independent measurements, so their
/// variances add.
pub(crate) fn geomean_of(logs: &[LogEstimate], confidence: f64, margin: f64) -> Estimate {
    if logs.is_empty() {
        return Estimate {
            ratio: f64::NAN,
            ci_low: f64::NAN,
            ci_high: f64::NAN,
            verdict: Verdict::Inconclusive,
            confidence,
        };
    }
    Estimate::from_log(&geomean_log(logs), confidence, margin)
}

/// The log estimate of the geometric mean of independent ratios: the mean of the means.
pub(crate) fn geomean_log(logs: &[LogEstimate]) -> LogEstimate {
    let kf = logs.len().max(1) as f64;
    let sum = sum_log(logs);
    LogEstimate {
        mean: sum.mean / kf,
        se: sum.se / kf,
        ..sum
    }
}

/// The log estimate of the product of independent ratios (a chain: C/A = C/B · B/A): the
/// sum of the means, variances added, degrees of freedom by Welch–Satterthwaite.
pub(crate) fn sum_log(logs: &[LogEstimate]) -> LogEstimate {
    let var_sum: f64 = logs.iter().map(|l| l.se * l.se).sum();
    let df = if var_sum > 0.0 {
        let denom: f64 = logs.iter().map(|l| l.se.powi(4) / l.df.max(1.0)).sum();
        if denom > 0.0 {
            (var_sum * var_sum / denom).max(1.0)
        } else {
            f64::INFINITY
        }
    } else {
        logs.iter().map(|l| l.df).fold(f64::INFINITY, f64::min)
    };
    LogEstimate {
        mean: logs.iter().map(|l| l.mean).sum(),
        se: var_sum.sqrt(),
        df,
        n: logs.iter().map(|l| l.n).sum(),
    }
}

// ---------------------------------------------------------------------------------------
// Repeated looks.

/// When to look at the data and at which confidence level, so that collecting more pairs
/// while the verdict is inconclusive does not inflate the error rates.
///
/// The scheme is a group-sequential design with an alpha-spending function. Before any
/// measured pair is analysed, the schedule fixes the looks at geometrically spaced pair
/// counts `min, 2·min, 4·min, …` up to a cap (the most pairs that can be collected:
/// `max_pairs`, or what `max_time` allows at the warm-up's pace). Look `k` uses a two-sided
/// interval at confidence `1 − α_k`, where `α_k = α(k) − α(k−1)` is what the spending
/// function spends at it: half of α evenly over the `K` looks (`α/2K` each, as Bonferroni
/// would), half by the O'Brien–Fleming-type function of Lan and DeMets,
/// `2 − 2Φ(z_{1−α/4} / √t_k)` at information fraction `t_k = pairs_k / cap`, which spends
/// almost nothing early and most at the last look.
///
/// Why a mix: in seeded simulation (σ = 3 % per pair, margin 1 %, ~300-pair cap, 400
/// trials, `stopping::spending_keeps_early_stops_and_sharpens_the_last_look`), pure
/// O'Brien–Fleming needed 103 pairs on average to call a 3 % speedup (Bonferroni 55) because
/// its first looks are so strict when the cap is far; Bonferroni found a 1.5 % speedup in 131
/// of 400 (O'Brien–Fleming 173) because every look, the last included, pays `α/K`. The mix:
/// 65 pairs, 158 of 400, and A-vs-A settled as *equivalent* 361 times (Bonferroni 331), with
/// no wrong verdict in any of them.
///
/// The procedure stops at the first look whose verdict is not *inconclusive*, at the cap,
/// or when time runs out; that final look spends all of α that is left. The spent amounts
/// add up to `α` (and each is at least `α/2K`, so no level is beyond computation), so by
/// the union bound the probability that *any* look's
/// interval misses the true ratio is at most `α`; a wrong *faster*/*slower*/*equivalent*
/// verdict needs such a miss, so its rate is at most `α` however many looks were taken
/// (the union bound ignores that looks are correlated: the real rate is lower still). The
/// reported interval is the one of the stopping look, at that look's level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct LookSchedule {
    /// Pair counts at which the data is analysed (increasing, even: pairs come in ABBA blocks).
    pub looks: Vec<u32>,
    /// Overall error budget (0.05 for 95 %).
    #[serde(deserialize_with = "crate::util::lenient_f64::one")]
    pub alpha: f64,
}

impl LookSchedule {
    /// Looks from `min_pairs` doubling up to `cap_pairs`. A look closer than 1.5× to the
    /// cap is merged into the cap (it would buy little and cost a share of α).
    pub(crate) fn plan(min_pairs: u32, cap_pairs: u32, alpha: f64) -> Self {
        let min = round_even(min_pairs.max(2));
        let cap = round_even(cap_pairs.max(min));
        let mut looks = Vec::new();
        let mut n = min;
        loop {
            if f64::from(n) * 1.5 > f64::from(cap) {
                looks.push(cap);
                break;
            }
            looks.push(n);
            n = round_even(n.saturating_mul(2));
        }
        LookSchedule { looks, alpha }
    }

    /// The confidence level of look `k` (0-based): `1 − α_k` (see the type's doc). A `last`
    /// look (time is up, or the cap is reached) spends all that is left.
    pub(crate) fn confidence_at(&self, k: usize, last: bool) -> f64 {
        let before = if k == 0 { 0.0 } else { self.spent_by(k - 1) };
        let upto = if last || k + 1 >= self.looks.len() {
            self.alpha
        } else {
            self.spent_by(k)
        };
        1.0 - (upto - before)
    }

    /// `α(k)`: the error budget spent by the end of look `k` — half of α evenly over the
    /// looks, half by the O'Brien–Fleming-type function `2 − 2Φ(z_{1−α/4} / √t)` of the
    /// information fraction `t = pairs / cap`.
    fn spent_by(&self, k: usize) -> f64 {
        let looks = self.looks.len().max(1);
        let even = 0.5 * self.alpha * (k + 1).min(looks) as f64 / looks as f64;
        let t = f64::from(self.looks[k.min(looks - 1)]) / f64::from(self.cap());
        let z = normal_quantile(1.0 - self.alpha / 4.0);
        let obf = 2.0 * (1.0 - normal_cdf(z / t.clamp(1e-9, 1.0).sqrt()));
        (even + obf).min(self.alpha)
    }

    /// The largest number of pairs the schedule collects.
    pub(crate) fn cap(&self) -> u32 {
        self.looks.last().copied().unwrap_or(2)
    }
}

fn round_even(n: u32) -> u32 {
    n.saturating_add(n % 2)
}

// ---------------------------------------------------------------------------------------
// Descriptive statistics.

/// Mean, median, spread of one series.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct Summary {
    #[serde(deserialize_with = "crate::util::lenient_f64::one")]
    pub mean: f64,
    #[serde(deserialize_with = "crate::util::lenient_f64::one")]
    pub median: f64,
    #[serde(deserialize_with = "crate::util::lenient_f64::one")]
    pub min: f64,
    #[serde(deserialize_with = "crate::util::lenient_f64::one")]
    pub max: f64,
    #[serde(deserialize_with = "crate::util::lenient_f64::one")]
    pub std_dev: f64,
}

impl Summary {
    pub fn of(x: &[f64]) -> Self {
        if x.is_empty() {
            return Summary::default();
        }
        Summary {
            mean: mean(x),
            median: median(x),
            min: x.iter().copied().fold(f64::INFINITY, f64::min),
            max: x.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            std_dev: if x.len() >= 2 { std_dev(x) } else { 0.0 },
        }
    }
}

pub(crate) fn mean(x: &[f64]) -> f64 {
    if x.is_empty() {
        return f64::NAN;
    }
    x.iter().sum::<f64>() / x.len() as f64
}

/// Sample standard deviation (n − 1).
pub(crate) fn std_dev(x: &[f64]) -> f64 {
    let n = x.len();
    if n < 2 {
        return f64::NAN;
    }
    let m = mean(x);
    (x.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
}

/// Coefficient of variation: standard deviation / mean.
pub(crate) fn cv(x: &[f64]) -> f64 {
    if x.len() < 2 {
        return 0.0;
    }
    let m = mean(x);
    if m == 0.0 {
        return 0.0;
    }
    std_dev(x) / m.abs()
}

/// Sample skewness (g1); 0 when there is no spread.
pub(crate) fn skewness(x: &[f64]) -> f64 {
    let n = x.len();
    if n < 3 {
        return 0.0;
    }
    let m = mean(x);
    let m2 = x.iter().map(|v| (v - m).powi(2)).sum::<f64>() / n as f64;
    if m2 <= 0.0 {
        return 0.0;
    }
    let m3 = x.iter().map(|v| (v - m).powi(3)).sum::<f64>() / n as f64;
    m3 / m2.powf(1.5)
}

pub(crate) fn median(x: &[f64]) -> f64 {
    let mut v = x.to_vec();
    v.sort_by(f64::total_cmp);
    quantile_sorted(&v, 0.5)
}

/// Quantile of sorted data with linear interpolation (R type 7).
pub(crate) fn quantile_sorted(sorted: &[f64], p: f64) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        1 => sorted[0],
        n => {
            let h = (n - 1) as f64 * p.clamp(0.0, 1.0);
            let lo = h.floor() as usize;
            let hi = (lo + 1).min(n - 1);
            sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
        }
    }
}

/// Outliers by the modified z-score rule (Iglewicz & Hoaglin): `|0.6745·(x − median) / MAD| >
/// 3.5`. Outliers are flagged, never dropped. No spread (MAD = 0) flags nothing.
pub(crate) fn mad_outliers(x: &[f64]) -> Vec<bool> {
    if x.len() < 3 {
        return vec![false; x.len()];
    }
    let med = median(x);
    let dev: Vec<f64> = x.iter().map(|v| (v - med).abs()).collect();
    let mad = median(&dev);
    if mad <= 0.0 || !mad.is_finite() {
        return vec![false; x.len()];
    }
    x.iter()
        .map(|v| (0.6745 * (v - med) / mad).abs() > 3.5)
        .collect()
}

// ---------------------------------------------------------------------------------------
// Distributions.

// Special functions and quantiles come from statrs; the tests below check them against
// published tables, since every interval this tool reports stands on them.

#[cfg(test)]
use statrs::function::beta::beta_reg as reg_inc_beta;
pub(crate) use statrs::function::gamma::ln_gamma;

/// Student's t with `df` degrees of freedom (`None` for a df it cannot have).
fn students_t(df: f64) -> Option<StudentsT> {
    StudentsT::new(0.0, 1.0, df).ok()
}

/// CDF of Student's t distribution with `df` (> 0, need not be an integer) degrees of freedom.
#[cfg(test)]
fn t_cdf(t: f64, df: f64) -> f64 {
    students_t(df).map_or(f64::NAN, |d| d.cdf(t))
}

/// Inverse CDF of Student's t: the `t` with `P(T ≤ t) = p`; NaN outside `0 < p < 1` or
/// for `df ≤ 0`. Above 10⁴ degrees of freedom statrs' inversion loses accuracy (an error of
/// 7e-6 in `p` at 10⁶), so there the normal quantile with its first Cornish–Fisher term
/// `(z³ + z) / 4df` is used: its error is O(1/df²), below 1e-8.
pub(crate) fn t_quantile(p: f64, df: f64) -> f64 {
    if !(p > 0.0 && p < 1.0) || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    if p == 0.5 {
        return 0.0; // exactly: the distribution is symmetric
    }
    if df > 1e4 {
        let z = normal_quantile(p);
        return z + (z.powi(3) + z) / (4.0 * df);
    }
    students_t(df).map_or(f64::NAN, |d| d.inverse_cdf(p))
}

/// CDF of the standard normal.
pub(crate) fn normal_cdf(z: f64) -> f64 {
    Normal::standard().cdf(z)
}

/// Inverse CDF of the standard normal; NaN outside `0 < p < 1`.
pub(crate) fn normal_quantile(p: f64) -> f64 {
    if !(p > 0.0 && p < 1.0) {
        return f64::NAN;
    }
    Normal::standard().inverse_cdf(p)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A standard normal draw (Box–Muller) from a seeded generator.
    pub(crate) fn normal(rng: &mut fastrand::Rng) -> f64 {
        let u1 = rng.f64().max(1e-300);
        let u2 = rng.f64();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn t_quantiles_match_tables() {
        for (df, want) in [
            (1.0, 12.706),
            (2.0, 4.303),
            (5.0, 2.571),
            (10.0, 2.228),
            (30.0, 2.042),
            (100.0, 1.984),
        ] {
            let got = t_quantile(0.975, df);
            assert!(close(got, want, 0.0005), "df={df}: {got} vs {want}");
        }
        assert!(close(t_quantile(0.995, 10.0), 3.169, 0.0005));
        assert!(close(t_quantile(0.95, 20.0), 1.725, 0.0005));
        // Far tails: df=1 is Cauchy, quantile = tan(π(p − ½)).
        let p = 0.9995;
        let cauchy = (std::f64::consts::PI * (p - 0.5)).tan();
        assert!(close(t_quantile(p, 1.0), cauchy, 1e-6 * cauchy));
        // Symmetry, median, huge df → normal.
        assert!(close(t_quantile(0.025, 10.0), -2.228, 0.0005));
        assert_eq!(t_quantile(0.5, 3.0), 0.0);
        assert!(close(t_quantile(0.975, 1e9), 1.959_964, 1e-5));
        assert!(close(t_quantile(0.975, 1e6), 1.959_966, 1e-5));
        // Either side of the switch to the expansion: t(0.975, 10⁴) = 1.960201240.
        assert!(close(t_quantile(0.975, 1e4), 1.960_201_240, 1e-8));
        assert!(close(t_quantile(0.975, 1.0001e4), 1.960_201_240, 1e-6));
        assert!(t_quantile(1.0, 3.0).is_nan() && t_quantile(0.9, 0.0).is_nan());
        // Non-integer df lies between its neighbours.
        let (a, b, c) = (
            t_quantile(0.975, 4.0),
            t_quantile(0.975, 4.5),
            t_quantile(0.975, 5.0),
        );
        assert!(a > b && b > c);
    }

    #[test]
    fn a_chain_adds_means_and_variances() {
        let a = LogEstimate {
            mean: -0.1,
            se: 0.03,
            df: 10.0,
            n: 11,
        };
        let b = LogEstimate {
            mean: -0.05,
            se: 0.04,
            df: 20.0,
            n: 21,
        };
        let c = sum_log(&[a, b]);
        assert!(close(c.mean, -0.15, 1e-12));
        assert!(close(c.se, 0.05, 1e-12));
        // Welch–Satterthwaite: (0.0009 + 0.0016)² / (0.0009²/10 + 0.0016²/20).
        let ws = 0.0025f64.powi(2) / (0.0009f64.powi(2) / 10.0 + 0.0016f64.powi(2) / 20.0);
        assert!(close(c.df, ws, 1e-9));
        let g = geomean_log(&[a, b]);
        assert!(close(g.mean, -0.075, 1e-12) && close(g.se, 0.025, 1e-12));
    }

    #[test]
    fn t_cdf_inverts_quantile() {
        for df in [1.0, 2.5, 7.0, 40.0, 500.0] {
            for p in [0.6, 0.9, 0.975, 0.999, 0.999_99] {
                let t = t_quantile(p, df);
                assert!(close(t_cdf(t, df), p, 1e-10), "df={df} p={p}");
            }
        }
    }

    #[test]
    fn normal_quantile_known_values() {
        assert!(close(normal_quantile(0.975), 1.959_964, 1e-6));
        assert!(close(normal_quantile(0.5), 0.0, 1e-12));
        assert!(close(normal_quantile(0.001), -3.090_232, 1e-6));
        assert!(close(normal_quantile(0.999_9), 3.719_016, 1e-6));
    }

    #[test]
    fn ln_gamma_known_values() {
        assert!(close(ln_gamma(1.0), 0.0, 1e-13));
        assert!(close(ln_gamma(5.0), 24f64.ln(), 1e-12));
        assert!(close(
            ln_gamma(0.5),
            std::f64::consts::PI.sqrt().ln(),
            1e-12
        ));
        assert!(close(ln_gamma(0.25), 3.625_609_908_221_908f64.ln(), 1e-12));
    }

    #[test]
    fn incomplete_beta_known_values() {
        // I_x(1, 1) = x; I_x(a, 1) = x^a; symmetry I_x(a,b) = 1 − I_{1−x}(b,a).
        assert!(close(reg_inc_beta(1.0, 1.0, 0.3), 0.3, 1e-14));
        assert!(close(reg_inc_beta(3.0, 1.0, 0.5), 0.125, 1e-14));
        let v = reg_inc_beta(2.5, 4.0, 0.3);
        assert!(close(v, 1.0 - reg_inc_beta(4.0, 2.5, 0.7), 1e-13));
    }

    #[test]
    fn verdicts_follow_the_margin() {
        assert_eq!(verdict(0.90, 0.98, 0.01), Verdict::Faster);
        assert_eq!(verdict(1.02, 1.10, 0.01), Verdict::Slower);
        assert_eq!(verdict(0.995, 1.005, 0.01), Verdict::Equivalent);
        assert_eq!(verdict(0.98, 1.00, 0.01), Verdict::Inconclusive);
        assert_eq!(verdict(1.00, 1.02, 0.01), Verdict::Inconclusive);
        // Wholly below (above) 1, but across the margin: a slight difference, not a tie.
        assert_eq!(verdict(0.98, 0.999, 0.01), Verdict::SlightlyFaster);
        assert_eq!(verdict(1.001, 1.02, 0.01), Verdict::SlightlySlower);
        assert!(!Verdict::SlightlyFaster.is_decided() && Verdict::Faster.is_decided());
        assert_eq!(
            serde_json::to_string(&Verdict::SlightlyFaster).unwrap(),
            "\"slightly-faster\""
        );
        // The ladder keeps *slightly faster* only with the estimate past the margin.
        let est = |ratio: f64, lo: f64, hi: f64| Estimate {
            ratio,
            ci_low: lo,
            ci_high: hi,
            verdict: verdict(lo, hi, 0.01),
            confidence: 0.95,
        };
        assert!(est(0.970, 0.949, 0.992).keeps(0.01));
        assert!(!est(0.993, 0.987, 0.999).keeps(0.01));
        assert!(est(0.95, 0.93, 0.97).keeps(0.01));
        assert!(!est(0.97, 0.93, 1.01).keeps(0.01));
        assert_eq!(verdict(0.5, 2.0, 0.01), Verdict::Inconclusive);
        assert_eq!(verdict(f64::NAN, 1.0, 0.01), Verdict::Inconclusive);
        assert_eq!(
            serde_json::to_string(&Verdict::Faster).unwrap(),
            "\"faster\""
        );
        assert_eq!(
            serde_json::to_string(&Verdict::Inconclusive).unwrap(),
            "\"inconclusive\""
        );
    }

    #[test]
    fn paired_estimate_of_exact_ratio() {
        let a = [1.0, 2.0, 3.0, 4.0];
        let b: Vec<f64> = a.iter().map(|x| x * 1.1).collect();
        let r = analyze_pairs(&a, &b, 0.95, 0.01, 1);
        assert!(close(r.estimate.ratio, 1.1, 1e-12));
        assert!(close(r.estimate.ci_low, 1.1, 1e-12) && close(r.estimate.ci_high, 1.1, 1e-12));
        assert_eq!(r.estimate.verdict, Verdict::Slower);
    }

    #[test]
    fn paired_t_interval_by_hand() {
        // d = ln 2 + {-0.1, 0, 0.1}: mean ln 2, s = 0.1, se = 0.1/√3, t(0.975, 2) = 4.3027.
        let a = [1.0, 1.0, 1.0];
        let b: Vec<f64> = [-0.1, 0.0, 0.1]
            .iter()
            .map(|e: &f64| (2f64.ln() + e).exp())
            .collect();
        let r = analyze_pairs(&a, &b, 0.95, 0.01, 1);
        let half = 4.302_653 * 0.1 / 3f64.sqrt();
        assert!(close(r.t_interval[0], (2f64.ln() - half).exp(), 1e-5));
        assert!(close(r.t_interval[1], (2f64.ln() + half).exp(), 1e-5));
        // The reported interval contains the t interval (union with the bootstrap).
        assert!(r.estimate.ci_low <= r.t_interval[0] && r.estimate.ci_high >= r.t_interval[1]);
    }

    /// Lognormal samples of a run time with `sigma` noise.
    fn lognormal_pairs(
        rng: &mut fastrand::Rng,
        n: usize,
        ratio: f64,
        sigma: f64,
    ) -> (Vec<f64>, Vec<f64>) {
        let a = (0..n).map(|_| 0.05 * (sigma * normal(rng)).exp()).collect();
        let b = (0..n)
            .map(|_| 0.05 * ratio * (sigma * normal(rng)).exp())
            .collect();
        (a, b)
    }

    #[test]
    fn ci_coverage_is_about_95_percent() {
        let mut rng = fastrand::Rng::with_seed(7);
        let trials = 400;
        let mut covered = 0;
        for i in 0..trials {
            let (a, b) = lognormal_pairs(&mut rng, 20, 1.05, 0.03);
            let r = analyze_pairs(&a, &b, 0.95, 0.01, i);
            if r.t_interval[0] <= 1.05 && 1.05 <= r.t_interval[1] {
                covered += 1;
            }
        }
        let rate = covered as f64 / trials as f64;
        eprintln!("coverage {rate}");
        assert!((0.90..=0.99).contains(&rate), "coverage {rate}");
    }

    #[test]
    fn bootstrap_is_seeded_and_sane() {
        let mut rng = fastrand::Rng::with_seed(3);
        let d: Vec<f64> = (0..50).map(|_| 0.1 + 0.02 * normal(&mut rng)).collect();
        let x = bootstrap_mean_interval(&d, 0.95, 2000, 42);
        let y = bootstrap_mean_interval(&d, 0.95, 2000, 42);
        assert_eq!(x, y);
        let t = LogEstimate::of(&d).interval(0.95);
        // Both intervals are about 2·1.96·0.02/√50 ≈ 0.011 wide and centred near 0.1.
        assert!(x.0 < 0.1 + 0.01 && x.1 > 0.1 - 0.01);
        assert!(
            ((x.1 - x.0) / (t.1 - t.0) - 1.0).abs() < 0.25,
            "{x:?} vs {t:?}"
        );
    }

    #[test]
    fn skewed_small_samples_get_a_bootstrap_check() {
        let a = vec![1.0; 40];
        let mut b = vec![1.0; 40];
        for (i, v) in b.iter_mut().enumerate() {
            *v = 1.0 + 0.001 * i as f64;
        }
        b[39] = 3.0; // one huge outlier: skewed
        let r = analyze_pairs(&a, &b, 0.95, 0.01, 9);
        assert!(r.skewness > 1.0);
        assert!(r.bootstrap_interval.is_some());
        let r = analyze_pairs(&a[..35], &b[..35], 0.95, 0.01, 9);
        assert!(r.bootstrap_interval.is_none(), "not skewed, n ≥ 30");
    }

    #[test]
    fn median_interval_by_the_sign_test() {
        // n = 10: P(X ≤ 1) = 11/1024 ≈ 0.0107 ≤ 0.025 < P(X ≤ 2) = 56/1024, so the 95 %
        // interval is [x_(2), x_(9)].
        let x: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(median_interval(&x, 0.95), (2.0, 9.0));
        // n = 5 cannot reach 95 % (2·2⁻⁵ = 0.0625): unbounded.
        let (lo, hi) = median_interval(&x[..5], 0.95);
        assert!(lo.is_infinite() && hi.is_infinite());
        // Coverage over many samples is at least the level.
        let mut rng = fastrand::Rng::with_seed(11);
        let covered = (0..400)
            .filter(|_| {
                let d: Vec<f64> = (0..25).map(|_| normal(&mut rng)).collect();
                let (lo, hi) = median_interval(&d, 0.95);
                lo <= 0.0 && 0.0 <= hi
            })
            .count();
        assert!(covered >= 372, "covered {covered}/400");
    }

    #[test]
    fn a_few_disturbed_pairs_cannot_make_a_verdict() {
        // Undisturbed, B is 3 % slower. Seventeen pairs out of 100 had A hit by a burst of
        // background load (A took 2–3× as long): the mean of d says "faster", the typical
        // pair says "slower" — no verdict.
        let mut rng = fastrand::Rng::with_seed(5);
        let mut a = Vec::new();
        let mut b = Vec::new();
        for i in 0..100 {
            let hit = if i % 6 == 0 { 2.0 + rng.f64() } else { 1.0 };
            a.push(0.040 * hit * (0.005 * normal(&mut rng)).exp());
            b.push(0.040 * 1.03 * (0.005 * normal(&mut rng)).exp());
        }
        let r = analyze_pairs(&a, &b, 0.99, 0.01, 1);
        assert!(
            r.estimate.ci_high < 0.99,
            "the mean alone would say faster: {:?}",
            r.estimate
        );
        assert!(r.median_ratio > 1.02);
        assert!(r.median_disagrees);
        assert_eq!(r.estimate.verdict, Verdict::Inconclusive);
    }

    #[test]
    fn geomean_of_known_ratios() {
        let logs: Vec<LogEstimate> = [0.9f64, 1.0, 1.2]
            .iter()
            .map(|r| LogEstimate {
                mean: r.ln(),
                se: 0.0,
                df: 10.0,
                n: 11,
            })
            .collect();
        let g = geomean_of(&logs, 0.95, 0.01);
        assert!(close(g.ratio, (0.9f64 * 1.0 * 1.2).powf(1.0 / 3.0), 1e-12));
        assert!(close(g.ci_low, g.ratio, 1e-12) && close(g.ci_high, g.ratio, 1e-12));

        // Two workloads, se 0.005 each, df 10 each: se = √2·0.005/2, df = 20.
        let logs = [
            LogEstimate {
                mean: 0.5f64.ln(),
                se: 0.005,
                df: 10.0,
                n: 11,
            },
            LogEstimate {
                mean: 2f64.ln(),
                se: 0.005,
                df: 10.0,
                n: 11,
            },
        ];
        let g = geomean_of(&logs, 0.95, 0.01);
        assert!(close(g.ratio, 1.0, 1e-12));
        let half = 2.085_963 * 2f64.sqrt() * 0.005 / 2.0;
        assert!(close(g.ci_high.ln(), half, 1e-6) && close(g.ci_low.ln(), -half, 1e-6));
        assert_eq!(g.verdict, Verdict::Equivalent);
        assert!(geomean_of(&[], 0.95, 0.01).ratio.is_nan());
    }

    #[test]
    fn schedule_looks_double_and_correct_alpha() {
        let s = LookSchedule::plan(10, 200, 0.05);
        assert_eq!(s.looks, vec![10, 20, 40, 80, 200]);
        // Half of α evenly (α/2K a look), half O'Brien–Fleming-type (most at the last
        // look); all the looks together exactly α.
        let spent: Vec<f64> = (0..5).map(|k| 1.0 - s.confidence_at(k, false)).collect();
        assert!(close(spent[0], 0.05 / 10.0, 1e-6), "{spent:?}");
        assert!(spent.windows(2).all(|w| w[0] < w[1]), "{spent:?}");
        assert!(spent[4] > 0.02, "{spent:?}");
        assert!(close(spent.iter().sum::<f64>(), 0.05, 1e-12), "{spent:?}");
        // A last look before the cap spends all that is left.
        let early_end: f64 = (1.0 - s.confidence_at(0, false)) + (1.0 - s.confidence_at(1, true));
        assert!(close(early_end, 0.05, 1e-12));
        assert_eq!(LookSchedule::plan(10, 10, 0.05).looks, vec![10]);
        assert_eq!(LookSchedule::plan(10, 3, 0.05).looks, vec![10]);
        assert_eq!(LookSchedule::plan(9, 14, 0.05).looks, vec![14]);
        assert_eq!(LookSchedule::plan(1, 4, 0.05).looks, vec![2, 4]);
        assert!(close(
            LookSchedule::plan(10, 14, 0.05).confidence_at(0, false),
            0.95,
            1e-12
        ));
        assert_eq!(LookSchedule::plan(10, 16, 0.05).looks, vec![10, 16]);
    }

    #[test]
    fn outliers_are_flagged_by_mad() {
        let mut x = vec![1.0, 1.01, 0.99, 1.02, 0.98, 1.0, 1.01];
        x.push(2.0);
        let f = mad_outliers(&x);
        assert_eq!(f.iter().filter(|&&o| o).count(), 1);
        assert!(f[7]);
        assert!(
            mad_outliers(&[1.0, 1.0, 1.0, 5.0]).iter().all(|o| !o),
            "MAD 0 flags nothing"
        );
    }

    #[test]
    fn descriptive_statistics() {
        let x = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(median(&x), 2.5);
        assert!(close(std_dev(&x), 1.290_994_448_735_805_6, 1e-12));
        assert!(close(cv(&x), 1.290_994_448_735_805_6 / 2.5, 1e-12));
        let s = Summary::of(&x);
        assert_eq!((s.min, s.max, s.mean), (1.0, 4.0, 2.5));
        assert_eq!(quantile_sorted(&x, 0.25), 1.75);
        assert!(close(skewness(&[1.0, 2.0, 3.0]), 0.0, 1e-12));
        assert!(skewness(&[1.0, 1.0, 1.0, 10.0]) > 1.0);
    }
}

/// Property tests over every kind of f64 the engine could be handed (issue 61: a NaN among
/// the pairs panicked the trimmed interval, exit 101). The engine is only ever handed
/// finite positive figures (`spec::Metric::value` refuses the rest); these hold it to not
/// panicking whatever it gets, and to a finite estimate on finite positive figures.
#[cfg(test)]
mod props {
    use super::*;
    use proptest::prelude::*;

    /// Issue 61's figures: each pair's ratio of two huge or two tiny figures is read
    /// without overflow or the 1 ns clamp of times (an oriented throughput of 1e12/s is
    /// 1e-12), and a NaN among the pairs does not panic.
    #[test]
    fn huge_tiny_and_nan_figures_give_ratios_without_a_panic() {
        let d = log_ratios(&[1e-12, 1e308, 1e-300], &[2e-12, 1e308, 1e300]);
        assert!((d[0] - 2f64.ln()).abs() < 1e-12, "{d:?}");
        assert_eq!(d[1], 0.0);
        assert!((d[2] - 600.0 * 10f64.ln()).abs() < 1e-9, "{d:?}");
        // Sorted last and trimmed away, the NaN leaves a finite estimate.
        let mut with_nan: Vec<f64> = (0..12).map(|i| 0.01 * i as f64).collect();
        with_nan[3] = f64::NAN;
        let log = LogEstimate::trimmed(&with_nan, TRIM);
        let (lo, hi) = log.interval(0.95);
        assert!(log.mean.is_finite() && lo < hi, "{log:?}");
        let all_nan = analyze_trimmed(&[f64::NAN; 12], 0.95, 0.01);
        assert_eq!(all_nan.estimate.verdict, Verdict::Inconclusive);
    }

    fn figures() -> impl Strategy<Value = Vec<f64>> {
        prop::collection::vec(
            prop_oneof![
                any::<f64>(),
                prop::num::f64::SUBNORMAL,
                1e300f64..f64::MAX,
                Just(f64::NAN),
                Just(f64::INFINITY),
                Just(0.0),
            ],
            0..14,
        )
    }

    /// A positive finite figure of any magnitude, subnormals and huge ones included.
    fn positive() -> impl Strategy<Value = f64> {
        prop_oneof![
            prop::num::f64::POSITIVE | prop::num::f64::NORMAL,
            prop::num::f64::POSITIVE | prop::num::f64::SUBNORMAL,
            1e300f64..f64::MAX,
        ]
    }

    proptest! {
        /// Whatever the figures, the analyses return: no panic, and a verdict is decided
        /// only on a finite interval.
        #[test]
        fn any_figures_are_analysed_without_a_panic(a in figures(), b in figures(), seed in any::<u64>()) {
            for estimator in [Estimator::Trimmed, Estimator::Mean] {
                let r = analyze(&a, &b, 0.95, 0.01, estimator, seed);
                let e = r.estimate;
                if e.verdict.is_decided() {
                    prop_assert!(e.ci_low.is_finite() && e.ci_high.is_finite(), "{e:?}");
                }
            }
            let _ = (Summary::of(&a), median(&a), mad_outliers(&a), median_interval(&b, 0.95));
            let _ = (LogEstimate::trimmed(&a, TRIM).interval(0.99), LogEstimate::of(&b).interval(0.9));
            let _ = (skewness(&a), cv(&b), bootstrap_mean_interval(&a, 0.95, 50, seed));
        }

        /// Finite positive figures of any magnitude, the two sides within a factor of 1000
        /// of each other pair by pair: a finite positive ratio inside a non-empty interval.
        #[test]
        fn finite_positive_figures_give_a_finite_estimate(
            pairs in prop::collection::vec((positive(), 1e-3f64..1e3), 2..14),
            seed in any::<u64>(),
        ) {
            let a: Vec<f64> = pairs.iter().map(|p| p.0).collect();
            let b: Vec<f64> = pairs.iter().map(|p| (p.0 * p.1).clamp(f64::MIN_POSITIVE / 4.0, f64::MAX)).collect();
            for estimator in [Estimator::Trimmed, Estimator::Mean] {
                let r = analyze(&a, &b, 0.95, 0.01, estimator, seed);
                let e = r.estimate;
                prop_assert!(e.ratio.is_finite() && e.ratio > 0.0, "{estimator:?} {e:?}");
                prop_assert!(e.ci_low <= e.ratio * (1.0 + 1e-9) && e.ratio <= e.ci_high * (1.0 + 1e-9), "{estimator:?} {e:?}");
                prop_assert!(r.log.mean.is_finite(), "{:?}", r.log);
            }
        }
    }
}
