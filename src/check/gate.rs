//! The gate's decisions, as pure functions on numbers: is a workload's interval a
//! regression beyond `max-regression` (or were the binaries byte-identical, nothing to judge), is a budget exceeded, and the exit code of the
//! whole check.
//!
//! Must not: run, measure or print anything.

use serde::{Deserialize, Serialize};

use crate::bench::stats::{mean, std_dev, t_quantile};

/// What one workload's interval of new/old time says against the threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Judgement {
    /// The whole interval lies above `1 + max_regression`: slower beyond the threshold.
    Regression,
    /// The whole interval lies below `1 − max_regression`.
    Improvement,
    /// The whole interval lies at or below `1 + max_regression` (not an improvement):
    /// whatever the difference, it is within the threshold.
    NoRegression,
    /// The interval straddles `1 + max_regression`: neither shown nor ruled out.
    Inconclusive,
    /// Old and new binaries are the same bytes: no regression is possible, nothing was
    /// compared (never the judgement of an interval: [`judge`] does not give it).
    ByteIdentical,
}

impl Judgement {
    pub fn as_str(self) -> &'static str {
        match self {
            Judgement::Regression => "regression",
            Judgement::Improvement => "improvement",
            Judgement::NoRegression => "no regression",
            Judgement::Inconclusive => "inconclusive",
            Judgement::ByteIdentical => "byte-identical",
        }
    }
}

/// Judge an interval `[ci_low, ci_high]` of the ratio new/old (above 1: slower) against
/// `max_regression`: only the interval counts, never the point estimate.
pub(crate) fn judge(ci_low: f64, ci_high: f64, max_regression: f64) -> Judgement {
    if !(ci_low.is_finite() && ci_high.is_finite()) {
        return Judgement::Inconclusive;
    }
    if ci_low > 1.0 + max_regression {
        Judgement::Regression
    } else if ci_high < 1.0 - max_regression {
        Judgement::Improvement
    } else if ci_high <= 1.0 + max_regression {
        Judgement::NoRegression
    } else {
        Judgement::Inconclusive
    }
}

/// A mean with its 95 % t interval (of the mean) and the number of values.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Mean {
    #[serde(deserialize_with = "crate::util::lenient_f64::one")]
    pub mean: f64,
    #[serde(deserialize_with = "crate::util::lenient_f64::one")]
    pub ci_low: f64,
    #[serde(deserialize_with = "crate::util::lenient_f64::one")]
    pub ci_high: f64,
    pub n: usize,
}

impl Mean {
    /// The mean of `x` with its 95 % interval (infinite with fewer than two values).
    pub fn of(x: &[f64]) -> Mean {
        let n = x.len();
        let m = mean(x);
        let half = if n >= 2 {
            t_quantile(0.975, (n - 1) as f64) * std_dev(x) / (n as f64).sqrt()
        } else {
            f64::INFINITY
        };
        Mean {
            mean: m,
            ci_low: m - half,
            ci_high: m + half,
            n,
        }
    }
}

/// One limit of one workload (a key of its spec `budget`) against what was measured: the
/// `check` report's `budgets` entries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LimitOutcome {
    /// `time` (seconds) or `max-rss` (bytes).
    pub kind: String,
    pub limit: f64,
    pub measured: Mean,
    /// The measured mean is above the limit.
    pub over: bool,
    /// Line of the budget in the spec.
    pub line: usize,
    /// A `metric` budget's unit, and whether higher is better (the budget is then a floor:
    /// `over` means below it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub floor: bool,
}

impl LimitOutcome {
    pub fn new(kind: &str, limit: f64, values: &[f64], line: usize) -> Self {
        let measured = Mean::of(values);
        LimitOutcome {
            kind: kind.to_string(),
            limit,
            over: measured.mean > limit,
            measured,
            line,
            unit: None,
            floor: false,
        }
    }

    /// A budget of the workload's `metric`: a ceiling when lower is better, a floor when
    /// higher is.
    pub fn metric(limit: f64, values: &[f64], line: usize, m: &crate::spec::Metric) -> Self {
        let floor = m.better == crate::spec::Better::Higher;
        let mut b = LimitOutcome::new("metric", limit, values, line);
        b.over = match floor {
            true => b.measured.mean < limit,
            false => b.measured.mean > limit,
        };
        b.unit = Some(m.unit.clone());
        b.floor = floor;
        b
    }

    /// `mean 12.3 ms [12.1, 12.5] (n=20) > budget 10 ms`, in the kind's unit.
    pub fn describe(&self) -> String {
        let f = |v: f64| self.format(v);
        format!(
            "mean {} [{}, {}] (n={}) {} budget {}",
            f(self.measured.mean),
            f(self.measured.ci_low),
            f(self.measured.ci_high),
            self.measured.n,
            match (self.floor, self.over) {
                (false, true) => ">",
                (false, false) => "≤",
                (true, true) => "<",
                (true, false) => "≥",
            },
            f(self.limit)
        )
    }

    /// A value in this budget's unit: a duration or a size.
    pub fn format(&self, v: f64) -> String {
        if !v.is_finite() {
            return "–".into();
        }
        if let Some(unit) = &self.unit {
            format!("{} {unit}", crate::util::format_number(v))
                .trim_end()
                .to_string()
        } else if self.kind == "time" {
            crate::bench::export::format_secs(v)
        } else {
            crate::util::human_bytes(v.max(0.0) as u64)
        }
    }
}

/// The exit code of a check: 1 when anything failed (a regression, a changed output, a
/// budget or the size limit exceeded), else 0. Errors are 2, elsewhere.
pub(crate) fn exit_code(failures: usize) -> i32 {
    if failures > 0 {
        1
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_decides_never_the_point_estimate() {
        let m = 0.05;
        // Wholly above 1.05: a regression, however close the low end.
        assert_eq!(judge(1.051, 1.3, m), Judgement::Regression);
        // Point estimate 1.10 but the interval reaches below 1.05: not shown.
        assert_eq!(judge(1.04, 1.16, m), Judgement::Inconclusive);
        // Slower, but within the threshold: no regression.
        assert_eq!(judge(1.01, 1.04, m), Judgement::NoRegression);
        assert_eq!(judge(0.97, 1.05, m), Judgement::NoRegression);
        assert_eq!(judge(0.80, 0.94, m), Judgement::Improvement);
        assert_eq!(judge(0.80, 0.96, m), Judgement::NoRegression);
        // A wider threshold turns the same interval into a pass.
        assert_eq!(judge(1.08, 1.12, m), Judgement::Regression);
        assert_eq!(judge(1.08, 1.12, 0.15), Judgement::NoRegression);
        // No interval (too few pairs): nothing can be said.
        assert_eq!(judge(f64::NAN, 1.2, m), Judgement::Inconclusive);
        assert_eq!(judge(1.2, f64::INFINITY, m), Judgement::Inconclusive);
    }

    #[test]
    fn a_mean_with_its_t_interval() {
        let m = Mean::of(&[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(m.mean, 2.5);
        // t(0.975, 3) = 3.182; sd = 1.291; se = 0.6455.
        assert!((m.ci_high - m.mean - 2.054).abs() < 0.001, "{m:?}");
        assert!((m.mean - m.ci_low - 2.054).abs() < 0.001, "{m:?}");
        assert_eq!(m.n, 4);
        assert!(Mean::of(&[5.0]).ci_high.is_infinite());
    }

    #[test]
    fn a_higher_is_better_metric_budget_is_a_floor() {
        let mut m = crate::spec::Metric::criterion(4);
        m.unit = "tokens/s".into();
        m.better = crate::spec::Better::Higher;
        let b = LimitOutcome::metric(1000.0, &[900.0, 950.0, 920.0], 5, &m);
        assert!(b.over, "{b:?}");
        assert!(
            b.describe().ends_with("< budget 1000 tokens/s"),
            "{}",
            b.describe()
        );
        let ok = LimitOutcome::metric(1000.0, &[1200.0, 1250.0], 5, &m);
        assert!(
            !ok.over && ok.describe().contains("≥ budget"),
            "{}",
            ok.describe()
        );
    }

    #[test]
    fn a_budget_is_missed_when_the_mean_is_above_it() {
        let b = LimitOutcome::new("time", 0.010, &[0.0121, 0.0123, 0.0125], 7);
        assert!(b.over);
        let text = b.describe();
        assert!(
            text.starts_with("mean 12.3 ms [") && text.ends_with("(n=3) > budget 10.0 ms"),
            "{text}"
        );
        // The mean decides even when the interval reaches above the limit.
        let b = LimitOutcome::new("time", 0.010, &[0.008, 0.0119], 7);
        assert!(!b.over && b.measured.ci_high > 0.010, "{b:?}");
        let rss = LimitOutcome::new("max-rss", 500.0 * 1048576.0, &[600.0 * 1048576.0; 3], 2);
        assert!(rss.over);
        assert!(rss.describe().contains("600.0 MiB"), "{}", rss.describe());
        assert!(
            rss.describe().ends_with("> budget 500.0 MiB"),
            "{}",
            rss.describe()
        );
        assert_eq!(exit_code(0), 0);
        assert_eq!(exit_code(2), 1);
    }
}
