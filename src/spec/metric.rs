//! A workload's `metric`: a figure the program prints (tokens/s, ms per step) read from
//! each timed run's output by a regex with one capture group, several matches in a run
//! combined (`combine`: the median by default, or `sum`, `mean`, `last`), and compared pair
//! by pair in place of the run's wall time. `better = "higher"` (a throughput) is turned
//! into its inverse for the comparison, so a ratio below 1 is better either way.
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
    /// error says what was wrong: no match (with the first lines printed), or a capture that
    /// is no positive number.
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
        Ok(self.combined(&mut values))
    }

    fn combined(&self, values: &mut [f64]) -> f64 {
        let n = values.len() as f64;
        match self.combine {
            Combine::Sum => values.iter().sum(),
            Combine::Mean => values.iter().sum::<f64>() / n,
            Combine::Last => values[values.len() - 1],
            Combine::Geomean => (values.iter().map(|v| v.ln()).sum::<f64>() / n).exp(),
            Combine::Median => {
                values.sort_by(f64::total_cmp);
                let mid = values.len() / 2;
                match values.len() % 2 {
                    1 => values[mid],
                    _ => (values[mid - 1] + values[mid]) / 2.0,
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
}
