//! `[check]` and a workload's `budget`: what `cargo optimize check` fails on, validated
//! like the rest of the spec (file:line:col and a fix).
//!
//! Owns: the types ([`CheckConfig`], [`WorkloadLimit`]) and their validation. Must not: judge a
//! measurement (the check module does).

use std::collections::BTreeMap;
use std::time::Duration;

use toml::Spanned;

use super::raw::{RawBudget, RawCheck};
use super::validate::Validator;
use super::SpecError;

/// `[check] max-regression` when the spec does not say: 5 %.
pub(crate) const DEFAULT_MAX_REGRESSION: f64 = 0.05;

/// What `cargo optimize check` fails on.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CheckConfig {
    /// A workload regresses when its whole interval of new/old time lies above
    /// `1 + max_regression`.
    pub max_regression: f64,
    /// The new binary may be at most this many bytes.
    pub max_binary_size: Option<u64>,
    /// Line of `max-binary-size` in the spec, for messages.
    pub max_binary_size_line: usize,
    /// Expanded workload name → its limit (its `budget`).
    pub limits: BTreeMap<String, WorkloadLimit>,
}

impl Default for CheckConfig {
    fn default() -> Self {
        CheckConfig {
            max_regression: DEFAULT_MAX_REGRESSION,
            max_binary_size: None,
            max_binary_size_line: 0,
            limits: BTreeMap::new(),
        }
    }
}

/// A workload's limits (its spec `budget`; "budget" in code is the run's time budget): the
/// mean time and mean peak RSS of the new build must not exceed
/// these.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct WorkloadLimit {
    pub time: Option<Duration>,
    pub max_rss: Option<u64>,
    /// The bound of the workload's `metric`: at most this when lower is better, at least
    /// this when higher is.
    pub metric: Option<f64>,
    /// Line of the `budget` in the spec, for messages.
    pub line: usize,
}

impl Validator<'_> {
    pub(super) fn check(&self, raw: RawCheck) -> Result<CheckConfig, SpecError> {
        let mut cfg = CheckConfig::default();
        if let Some(m) = &raw.max_regression {
            let v = *m.get_ref();
            if !(v > 0.0 && v < 0.5) {
                return Err(self.at(
                    m,
                    format!("`max-regression` must be between 0 and 0.5 (exclusive), not {v}"),
                    Some("max-regression = 0.05 fails the check when the new build is slower by more than 5 % (the whole interval above 1.05)".into()),
                ));
            }
            cfg.max_regression = v;
        }
        if let Some(s) = &raw.max_binary_size {
            cfg.max_binary_size = Some(self.size(s, "max-binary-size", "\"20M\"")?);
            cfg.max_binary_size_line = self.line(s.span().start);
        }
        Ok(cfg)
    }

    /// A workload's budget; `has_metric`: the workload has a `metric`, which a `metric`
    /// bound needs.
    pub(super) fn workload_limit(
        &self,
        raw: Spanned<RawBudget>,
        has_metric: bool,
    ) -> Result<WorkloadLimit, SpecError> {
        let line = self.line(raw.span().start);
        let b = raw.get_ref();
        if b.time.is_none() && b.max_rss.is_none() && b.metric.is_none() {
            return Err(self.at(
                &raw,
                "the budget is empty",
                Some("write budget = { time = \"10ms\", max-rss = \"500MB\" } (either or both), or remove it".into()),
            ));
        }
        if let Some(m) = &b.metric {
            let v = *m.get_ref();
            if !has_metric {
                return Err(self.at(m, "the budget's `metric` bounds the workload's metric, and this workload has none", Some("add metric = { regex = '…', unit = \"…\", better = \"higher\" | \"lower\" } to the workload, or use time = \"10ms\"".into())));
            }
            if !(v.is_finite() && v > 0.0) {
                return Err(self.at(m, format!("the budget's `metric` must be a positive number, not {v}"), Some("metric = 1500 (in the metric's unit: at least this when higher is better, at most when lower is)".into())));
            }
        }
        let time = b
            .time
            .as_ref()
            .map(|t| self.duration(t, "time"))
            .transpose()?;
        let max_rss = b
            .max_rss
            .as_ref()
            .map(|s| self.size(s, "max-rss", "\"500MB\""))
            .transpose()?;
        Ok(WorkloadLimit {
            time,
            max_rss,
            metric: b.metric.as_ref().map(|m| *m.get_ref()),
            line,
        })
    }

    /// A size such as `"500MB"`: above zero.
    fn size(&self, v: &Spanned<String>, key: &str, example: &str) -> Result<u64, SpecError> {
        let fix = || {
            Some(format!(
                "write {key} = {example} (units K, M, G, T; 1M = 1024 KiB)"
            ))
        };
        let n = crate::util::parse_size(v.get_ref())
            .map_err(|e| self.at(v, format!("`{key}`: {e}"), fix()))?;
        if n == 0 {
            return Err(self.at(v, format!("`{key}` must be above zero"), fix()));
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::{Fixture, ONE};
    use super::*;

    #[test]
    fn check_defaults_and_values() {
        let f = Fixture::new();
        let spec = f.ok(ONE);
        assert_eq!(spec.check, CheckConfig::default());
        assert_eq!(spec.check.max_regression, 0.05);
        let spec = f.ok(&format!(
            "[check]\nmax-regression = 0.1\nmax-binary-size = \"2M\"\n{ONE}"
        ));
        assert_eq!(spec.check.max_regression, 0.1);
        assert_eq!(spec.check.max_binary_size, Some(2 << 20));
        assert_eq!(spec.check.max_binary_size_line, 3);
    }

    #[test]
    fn budgets_are_parsed_per_expanded_workload() {
        let f = Fixture::new();
        let text = "[[workload]]\nname = \"a\"\nbudget = { time = \"10ms\", max-rss = \"500MB\" }\n\n[[workload]]\nname = \"m{n}\"\nargs = [\"{n}\"]\nmatrix = { n = [\"1\", \"2\"] }\nbudget = { time = \"1.5s\" }\n\n[[workload]]\nname = \"free\"\n";
        let spec = f.ok(text);
        let b = &spec.check.limits;
        assert_eq!(b.len(), 3, "{b:?}");
        assert_eq!(b["a"].time, Some(Duration::from_millis(10)));
        assert_eq!(b["a"].max_rss, Some(500 << 20));
        assert_eq!(b["a"].line, 3);
        assert_eq!(b["m1"].time, Some(Duration::from_millis(1500)));
        assert_eq!(b["m2"].max_rss, None);
        assert!(!b.contains_key("free"));
    }

    #[test]
    fn bad_check_values_name_their_line_and_the_fix() {
        let f = Fixture::new();
        let (line, _, msg, fix) = f.err(&format!("[check]\nmax-regression = 0.7\n{ONE}"));
        assert_eq!(line, 2);
        assert!(
            msg.contains("max-regression") && msg.contains("0.7"),
            "{msg}"
        );
        assert!(fix.contains("max-regression = 0.05"), "{fix}");
        let (line, _, msg, fix) = f.err(&format!("[check]\nmax-binary-size = \"big\"\n{ONE}"));
        assert_eq!(line, 2);
        assert!(msg.contains("max-binary-size"), "{msg}");
        assert!(fix.contains("max-binary-size = \"20M\""), "{fix}");
        let (line, _, msg, fix) = f.err(&format!("{ONE}budget = {{ time = 10 }}\n"));
        assert_eq!(line, 3);
        assert!(msg.contains("`time`") && msg.contains("number"), "{msg}");
        assert!(fix.contains("time = \"10s\""), "{fix}");
        let (line, _, msg, _) = f.err(&format!("{ONE}budget = {{ max-rss = \"5 parsecs\" }}\n"));
        assert_eq!(line, 3);
        assert!(msg.contains("max-rss"), "{msg}");
        let (line, _, msg, fix) = f.err(&format!("{ONE}budget = {{}}\n"));
        assert_eq!((line, msg.as_str()), (3, "the budget is empty"));
        assert!(fix.contains("time = \"10ms\""), "{fix}");
        let (line, _, msg, _) = f.err(&format!("{ONE}budget = {{ time = \"0s\" }}\n"));
        assert_eq!(line, 3);
        assert!(msg.contains("longer than zero"), "{msg}");
    }
}
