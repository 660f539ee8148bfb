//! A workload's `metric`: a figure the program prints (tokens/s, ms per step) read from
//! each timed run's output by a regex with one capture group, several matches in a run
//! combined (`combine`: the median by default, or `sum`, `mean`, `last`), and compared pair
//! by pair in place of the run's wall time. `better = "higher"` (a throughput) is turned
//! into its inverse for the comparison, so a ratio below 1 is better either way.
//!
//! Whatever a program prints, a figure is finite and positive or an error saying why:
//! each capture is checked, and the combination again after combining (done without
//! overflow: the middle of two figures is `a + (b − a) / 2`, a mean a running one), so NaN,
//! infinity, zero or a negative number never reach `bench::stats`. The baseline's own
//! output is read when it is recorded (`verify::record_baseline`), so a baseline printing
//! no usable figure is named as such. Property tests below fuzz the extraction.
//!
//! Validated here (`Validator::metric`): the regex compiles and has exactly one capture
//! group, `better` is `higher` or `lower`, `combine` one of the four — each error at its
//! spec line with the fix.

use regex::Regex;
use toml::Spanned;

use super::raw::RawMetric;
use super::validate::Validator;
use super::SpecError;

/// `metric = { regex = '…', unit = "…", better = "higher" | "lower", combine = "…" }`.
#[derive(Debug, Clone)]
pub struct Metric {
    pub regex: Regex,
    /// What the figure counts, shown beside it (`tokens/s`, `ms`).
    pub unit: String,
    pub better: Better,
    pub combine: Combine,
    /// The capture is a time with its unit (`48.36 µs`), read in nanoseconds: criterion's.
    pub time_units: bool,
    /// The spec line of the `metric` (of the workload, for criterion's), for messages.
    pub line: usize,
}

impl PartialEq for Metric {
    fn eq(&self, other: &Self) -> bool {
        let key = |m: &Self| {
            let regex = m.regex.as_str().to_string();
            (
                regex,
                m.unit.clone(),
                m.better,
                m.combine,
                m.time_units,
                m.line,
            )
        };
        key(self) == key(other)
    }
}

/// What criterion prints per benchmark (0.3 to 0.8): `name  time:   [lo est hi]`, each a
/// number and a unit.
const CRITERION_TIME: &str = r"time:\s+\[\S+\s+\S+\s+(\S+\s+\S+)\s+\S+\s+\S+\]";

/// Which way the metric is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    Higher,
    Lower,
}

/// How a run's matches become its figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Combine {
    Median,
    Sum,
    Mean,
    Last,
    /// The geometric mean: each match weighs the same whatever its scale (criterion's
    /// benchmarks).
    Geomean,
}

/// How many lines of a run's output a failed match shows.
const SHOWN_LINES: usize = 5;

impl Metric {
    /// The run's figure from its output: every match of the capture group, combined. An
    /// error says what was wrong: no match (with the first lines printed), a capture that
    /// is no positive finite number, or figures whose combination is not usable (a `sum`
    /// past the largest float, a figure whose inverse is infinite under `better =
    /// "higher"`). So whatever a program prints, a figure is finite and positive, and so is
    /// the value compared ([`Metric::oriented`]): NaN, infinity, zero or a negative number
    /// never reach the statistics.
    pub fn value(&self, output: &str) -> Result<f64, String> {
        let mut values = Vec::new();
        for caps in self.regex.captures_iter(output) {
            let text = caps.get(1).map_or("", |m| m.as_str()).trim();
            let parsed = match self.time_units {
                true => nanoseconds(text),
                false => text.parse::<f64>().ok(),
            };
            match parsed {
                Some(v) if v.is_finite() && v > 0.0 => values.push(v),
                _ => {
                    return Err(format!(
                        "the metric's regex `{}` captured \"{}\", which is no positive number",
                        self.regex.as_str(),
                        crate::util::clip(text, 80)
                    ))
                }
            }
        }
        if values.is_empty() {
            let first: Vec<&str> = output.lines().take(SHOWN_LINES).collect();
            return Err(format!(
                "the output does not match the metric's regex `{}` (spec line {}); its first lines:\n{}",
                self.regex.as_str(),
                self.line,
                crate::util::indent(&first.join("\n"), "  | ")
            ));
        }
        let v = self.combined(&mut values);
        self.usable(v, values.len())
    }

    /// The run's figure as [`Metric::value`] reads it from a run's stdout, then its stderr
    /// (a program may print its figures on either).
    pub fn value_of_run(&self, stdout: &[u8], stderr: &[u8]) -> Result<f64, String> {
        let mut text = String::from_utf8_lossy(stdout).into_owned();
        text.push('\n');
        text.push_str(&String::from_utf8_lossy(stderr));
        self.value(&text)
    }

    /// `v`, the combination of `n` figures, checked after combining: finite and positive,
    /// and so its oriented value.
    fn usable(&self, v: f64, n: usize) -> Result<f64, String> {
        let oriented = self.oriented(v);
        if v.is_finite() && v > 0.0 && oriented.is_finite() && oriented > 0.0 {
            return Ok(v);
        }
        let why = match v.is_finite() && v > 0.0 {
            false => format!(
                "{n} figure(s) combined by `{}` give {v}",
                self.combine.as_str()
            ),
            true => format!("its figure {v} under `better = \"higher\"` has no finite inverse"),
        };
        Err(format!(
            "the metric's regex `{}` (spec line {}) read figures that cannot be compared: {why}\n  fix: print figures in a unit that keeps them within floating-point range (say ms instead of ns), or another `combine`",
            self.regex.as_str(),
            self.line
        ))
    }

    /// The matches combined without overflow where the result is within range: the
    /// middle of two figures is `a + (b − a) / 2` and a mean is a running one, so two
    /// `1e308` figures give `1e308`, never infinity. A `sum` past the largest float is
    /// infinite, which [`Metric::usable`] refuses.
    fn combined(&self, values: &mut [f64]) -> f64 {
        match self.combine {
            Combine::Sum => values.iter().sum(),
            Combine::Mean => running_mean(values.iter().copied()),
            Combine::Last => values[values.len() - 1],
            Combine::Geomean => running_mean(values.iter().map(|v| v.ln())).exp(),
            Combine::Median => {
                values.sort_by(f64::total_cmp);
                let mid = values.len() / 2;
                match values.len() % 2 {
                    1 => values[mid],
                    _ => midpoint(values[mid - 1], values[mid]),
                }
            }
        }
    }

    /// The metric of a criterion bench harness: each benchmark's own per-iteration estimate
    /// (the middle of its `time:` line), in nanoseconds, several combined by their geometric
    /// mean; `line` is the workload's.
    pub fn criterion(line: usize) -> Metric {
        Metric {
            regex: Regex::new(CRITERION_TIME).expect("a valid regex"),
            unit: "ns/iter".into(),
            better: Better::Lower,
            combine: Combine::Geomean,
            time_units: true,
            line,
        }
    }

    /// The benchmarks a criterion harness's output measured, in order: the name before each
    /// `time:` (on the line before it when the name is long).
    pub fn criterion_benchmarks(output: &str) -> Vec<String> {
        let mut names = Vec::new();
        let mut previous = "";
        for line in output.lines() {
            if let Some(at) = line.find("time:").filter(|_| line.contains('[')) {
                let name = match line[..at].trim() {
                    "" => previous.trim(),
                    n => n,
                };
                names.push(name.to_string());
            }
            if !line.trim().is_empty() {
                previous = line;
            }
        }
        names
    }

    /// `value` as compared: lower is better (a higher-is-better figure inverted).
    pub fn oriented(&self, value: f64) -> f64 {
        match self.better {
            Better::Lower => value,
            Better::Higher => 1.0 / value,
        }
    }
}

impl Validator<'_> {
    /// A `metric` table, checked.
    pub(super) fn metric(&self, m: &Spanned<RawMetric>) -> Result<Metric, SpecError> {
        let raw = m.get_ref();
        let regex = Regex::new(raw.regex.get_ref()).map_err(|e| {
            self.at(
                &raw.regex,
                format!("the metric's regex does not compile: {}", first_line(&e.to_string())),
                Some("write a regex with one capture group around the number, such as regex = 'throughput: ([0-9.]+) tokens/s' (single quotes keep backslashes)".into()),
            )
        })?;
        if regex.captures_len() != 2 {
            return Err(self.at(
                &raw.regex,
                format!("the metric's regex has {} capture groups; it needs exactly one, around the number", regex.captures_len() - 1),
                Some("put the number in one group, such as 'step ([0-9.]+) ms', and make other groups non-capturing: (?:…)".into()),
            ));
        }
        let better = match raw.better.get_ref().as_str() {
            "higher" => Better::Higher,
            "lower" => Better::Lower,
            other => return Err(self.at(
                &raw.better,
                format!("`better` is \"higher\" or \"lower\", not \"{other}\""),
                Some("better = \"higher\" for a throughput (tokens/s), \"lower\" for a time (ms per step)".into()),
            )),
        };
        let combine = match raw.combine.as_ref().map(|c| c.get_ref().as_str()) {
            None | Some("median") => Combine::Median,
            Some("sum") => Combine::Sum,
            Some("mean") => Combine::Mean,
            Some("last") => Combine::Last,
            Some("geomean") => Combine::Geomean,
            Some(other) => return Err(self.at(
                raw.combine.as_ref().expect("matched Some"),
                format!("`combine` is \"median\", \"sum\", \"mean\", \"last\" or \"geomean\", not \"{other}\""),
                Some("combine says how a run's several matches become its figure (default \"median\")".into()),
            )),
        };
        Ok(Metric {
            regex,
            unit: raw.unit.clone().unwrap_or_default(),
            better,
            combine,
            time_units: false,
            line: self.line(m.span().start),
        })
    }
}

impl Combine {
    /// As the spec spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Combine::Median => "median",
            Combine::Sum => "sum",
            Combine::Mean => "mean",
            Combine::Last => "last",
            Combine::Geomean => "geomean",
        }
    }
}

/// The middle of `a ≤ b`, finite for finite figures of one sign: `(a + b) / 2` is infinite
/// for two `1e308`.
fn midpoint(a: f64, b: f64) -> f64 {
    a + (b - a) / 2.0
}

/// The mean as a running one (`m += (x − m) / k`): each step stays between the figures
/// seen, so it never overflows where a sum would.
fn running_mean(xs: impl Iterator<Item = f64>) -> f64 {
    let mut m = 0.0;
    for (k, x) in xs.enumerate() {
        m += (x - m) / (k + 1) as f64;
    }
    m
}

/// `48.363 µs` in nanoseconds.
fn nanoseconds(text: &str) -> Option<f64> {
    let (number, unit) = text.split_once(char::is_whitespace)?;
    let scale = match unit.trim() {
        "ps" => 1e-3,
        "ns" => 1.0,
        "µs" | "us" | "μs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return None,
    };
    Some(number.parse::<f64>().ok()? * scale)
}

fn first_line(s: &str) -> &str {
    s.lines().last().unwrap_or(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metric(re: &str, better: Better, combine: Combine) -> Metric {
        Metric {
            regex: Regex::new(re).unwrap(),
            unit: "tokens/s".into(),
            better,
            combine,
            time_units: false,
            line: 7,
        }
    }

    #[test]
    fn matches_are_combined_and_higher_is_inverted() {
        let out = "start\nstep 10.0 ms\nstep 30 ms\nstep 20 ms\ndone\n";
        let m = |c| metric(r"step ([0-9.]+) ms", Better::Lower, c);
        assert_eq!(m(Combine::Median).value(out), Ok(20.0));
        assert_eq!(m(Combine::Sum).value(out), Ok(60.0));
        assert_eq!(m(Combine::Mean).value(out), Ok(20.0));
        assert_eq!(m(Combine::Last).value(out), Ok(20.0));
        assert_eq!(m(Combine::Median).value("step 1 ms\nstep 3 ms\n"), Ok(2.0));
        let t = metric(r"([0-9.]+) tokens/s", Better::Higher, Combine::Last);
        assert_eq!(t.oriented(t.value("250 tokens/s").unwrap()), 1.0 / 250.0);
    }

    #[test]
    fn criterion_s_time_lines_are_read_in_nanoseconds_and_named() {
        let out = "Benchmarking pipeline/short: Analyzing\n\
            pipeline/short          time:   [47.191 µs 48.000 µs 49.099 µs]\n\n\
            a/very/long/benchmark/name/that/wraps\n\
            \x20                       time:   [188.05 ms 192.00 ms 207.10 ms]\n\
            Found 2 outliers among 10 measurements (20.00%)\n";
        let m = Metric::criterion(3);
        let v = m.value(out).unwrap();
        assert!((v - (48_000.0f64 * 192e6).sqrt()).abs() < 1e-3, "{v}");
        assert_eq!(
            Metric::criterion_benchmarks(out),
            ["pipeline/short", "a/very/long/benchmark/name/that/wraps"]
        );
        assert_eq!(nanoseconds("1.5 s"), Some(1.5e9));
        assert_eq!(nanoseconds("2 ns"), Some(2.0));
        assert_eq!(nanoseconds("2 parsecs"), None);
    }

    #[test]
    fn no_match_names_the_regex_the_line_and_the_first_lines_printed() {
        let m = metric(r"step ([0-9.]+) ms", Better::Lower, Combine::Median);
        let e = m.value("hello\nworld\n").unwrap_err();
        assert!(e.contains("`step ([0-9.]+) ms` (spec line 7)"), "{e}");
        assert!(e.contains("  | hello\n  | world"), "{e}");
        let e = metric(r"step (\S+)", Better::Lower, Combine::Median)
            .value("step fast\n")
            .unwrap_err();
        assert!(
            e.contains("captured \"fast\", which is no positive number"),
            "{e}"
        );
    }

    /// Issue 61: two `1e308` figures overflowed the median (and the mean) to infinity,
    /// which then made the interval code panic on NaN. The middle of two huge figures is
    /// `a + (b − a) / 2`; what cannot be combined within range is refused after combining.
    #[test]
    fn huge_figures_combine_without_overflow_and_unusable_ones_are_refused_after_combining() {
        let huge = "step 1e308 ms\nstep 1e308 ms\n";
        let m = |c| metric(r"step (\S+) ms", Better::Lower, c);
        assert_eq!(m(Combine::Median).value(huge), Ok(1e308));
        assert_eq!(m(Combine::Mean).value(huge), Ok(1e308));
        let near = |r: Result<f64, String>, want: f64| (r.unwrap() / want - 1.0).abs() < 1e-12;
        assert!(near(m(Combine::Geomean).value(huge), 1e308));
        let two = "step 1.5e308 ms\nstep 1.7e308 ms\n";
        assert!(near(m(Combine::Median).value(two), 1.6e308));
        assert!(near(m(Combine::Mean).value(two), 1.6e308));
        let e = m(Combine::Sum).value(huge).unwrap_err();
        assert!(e.contains("2 figure(s) combined by `sum` give inf"), "{e}");
        assert!(e.contains("(spec line 7)") && e.contains("fix: "), "{e}");
        // A figure whose inverse is infinite cannot be compared when higher is better.
        let tiny = metric(r"step (\S+) ms", Better::Higher, Combine::Last);
        let e = tiny.value("step 5e-324 ms\n").unwrap_err();
        assert!(e.contains("has no finite inverse"), "{e}");
        for bad in ["NaN", "inf", "-inf", "0", "-1", "1e309"] {
            let e = m(Combine::Median)
                .value(&format!("step {bad} ms\n"))
                .unwrap_err();
            assert!(e.contains("which is no positive number"), "{bad}: {e}");
        }
        assert_eq!(nanoseconds("1e308 s").filter(|v| v.is_finite()), None);
    }

    /// A figure as a program may print it: any f64 (NaN, infinities, subnormals, huge),
    /// in the forms `{}` and `{:e}` give.
    fn printed() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        prop_oneof![
            any::<f64>().prop_map(|v| format!("{v}")),
            any::<f64>().prop_map(|v| format!("{v:e}")),
            (prop::num::f64::POSITIVE | prop::num::f64::SUBNORMAL).prop_map(|v| format!("{v:e}")),
            (1e300f64..f64::MAX).prop_map(|v| format!("{v:e}")),
            (f64::MAX / 2.0..f64::MAX).prop_map(|v| format!("{v:e}")),
            Just("1e308".to_string()),
            Just("NaN".to_string()),
            Just("inf".to_string()),
            Just("-0".to_string()),
        ]
    }

    fn combines() -> impl proptest::strategy::Strategy<Value = Combine> {
        proptest::sample::select(vec![
            Combine::Median,
            Combine::Sum,
            Combine::Mean,
            Combine::Last,
            Combine::Geomean,
        ])
    }

    /// What a read figure must be: finite and positive, and so its oriented value.
    fn usable(m: &Metric, r: &Result<f64, String>) -> bool {
        match r {
            Ok(v) => {
                v.is_finite() && *v > 0.0 && m.oriented(*v).is_finite() && m.oriented(*v) > 0.0
            }
            Err(e) => !e.is_empty(),
        }
    }

    proptest::proptest! {
        /// No printed text panics the extraction: a figure is finite and positive, or an
        /// error says why.
        #[test]
        fn any_printed_text_gives_a_usable_figure_or_an_error(
            text in "\\PC*",
            higher in proptest::bool::ANY,
            combine in combines(),
        ) {
            let better = if higher { Better::Higher } else { Better::Lower };
            for m in [metric(r"([^ ]+)", better, combine), metric(r"step (\S+) ms", better, combine)] {
                let r = m.value(&text);
                proptest::prop_assert!(usable(&m, &r), "{r:?}");
            }
            let c = Metric::criterion(1);
            let r = c.value(&format!("b  time:   [1 ns {text} 3 ns]"));
            proptest::prop_assert!(usable(&c, &r), "{r:?}");
            let _ = Metric::criterion_benchmarks(&text);
        }

        /// Every kind of f64 printed as a run's figures, combined every way: never a panic,
        /// never a non-finite or non-positive figure; figures all finite and positive
        /// combine within their range (but a sum, which may overflow and is then refused).
        #[test]
        fn any_printed_figures_combine_to_a_usable_figure_or_an_error(
            figures in proptest::collection::vec(printed(), 1..8),
            higher in proptest::bool::ANY,
            combine in combines(),
        ) {
            let better = if higher { Better::Higher } else { Better::Lower };
            let m = metric(r"step (\S+) ms", better, combine);
            let text: String = figures.iter().map(|f| format!("step {f} ms\n")).collect();
            let r = m.value(&text);
            proptest::prop_assert!(usable(&m, &r), "{text}: {r:?}");
            let parsed: Vec<f64> = figures.iter().filter_map(|f| f.parse().ok()).collect();
            let all_good = parsed.len() == figures.len()
                && parsed.iter().all(|v| v.is_finite() && *v > 0.0 && (1.0 / v).is_finite());
            if all_good && combine != Combine::Sum {
                let v = r.clone().map_err(proptest::test_runner::TestCaseError::fail)?;
                let lo = parsed.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = parsed.iter().copied().fold(0.0, f64::max);
                // Within the figures' range, up to the rounding of a mean of logarithms.
                proptest::prop_assert!(v >= lo * (1.0 - 1e-9) && v <= hi * (1.0 + 1e-9), "{v} of {parsed:?}");
            }
        }
    }
}
