//! Writing `cargo optimize bench` results: JSON (everything), Markdown (a table), CSV (one
//! row per measured run).
//!
//! Owns: the file formats. Must not: measure or print to the terminal.

use std::fmt::Write as _;

use serde::Serialize;

use super::runner::{BenchOptions, Comparison, Side};
use super::stats::Estimate;

/// One workload's comparison, as exported.
#[derive(Debug, Clone, Serialize)]
pub struct WorkloadResult {
    pub name: String,
    /// The commands, for the record.
    pub command_a: String,
    pub command_b: String,
    #[serde(flatten)]
    pub comparison: Comparison,
}

/// Everything a `bench` invocation measured.
#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    pub schema: u32,
    pub kind: &'static str,
    pub tool_version: &'static str,
    pub options: BenchOptions,
    pub workloads: Vec<WorkloadResult>,
    /// Geometric mean of the ratios over the workloads.
    pub geomean: Estimate,
}

impl BenchReport {
    pub fn new(options: BenchOptions, workloads: Vec<WorkloadResult>) -> Self {
        let comps: Vec<Comparison> = workloads.iter().map(|w| w.comparison.clone()).collect();
        let geomean = super::runner::geomean(&comps, options.margin);
        BenchReport {
            schema: 1,
            kind: "bench",
            tool_version: env!("CARGO_PKG_VERSION"),
            options,
            workloads,
            geomean,
        }
    }
}

pub fn to_json(r: &BenchReport) -> String {
    // Serializing plain data with string keys cannot fail.
    serde_json::to_string_pretty(r).unwrap_or_default() + "\n"
}

/// A Markdown table: one row per workload, then the geometric mean.
pub fn to_markdown(r: &BenchReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "| workload | B/A | interval | verdict | n | A median | B median | CV A | CV B | outlier pairs |"
    );
    let _ = writeln!(s, "|---|---:|---|---|---:|---:|---:|---:|---:|---:|");
    for w in &r.workloads {
        let c = &w.comparison;
        let _ = writeln!(
            s,
            "| {} | {:.3} | [{:.3}, {:.3}] ({:.1} %) | {} | {} | {} | {} | {:.1} % | {:.1} % | {} |",
            md_escape(&w.name),
            c.ratio,
            c.ci_low,
            c.ci_high,
            c.confidence * 100.0,
            c.verdict,
            c.n,
            format_secs(c.median_a_secs),
            format_secs(c.median_b_secs),
            c.cv_a * 100.0,
            c.cv_b * 100.0,
            c.outliers.pairs
        );
    }
    let g = &r.geomean;
    let _ = writeln!(
        s,
        "| **geometric mean** | {:.3} | [{:.3}, {:.3}] ({:.1} %) | {} | | | | | | |",
        g.ratio,
        g.ci_low,
        g.ci_high,
        g.confidence * 100.0,
        g.verdict
    );
    let warnings: Vec<String> = r
        .workloads
        .iter()
        .filter_map(|w| {
            w.comparison
                .noise_warning
                .as_ref()
                .map(|n| format!("- {}: {}", md_escape(&w.name), n))
        })
        .collect();
    let _ = writeln!(
        s,
        "\nB/A is B's wall time over A's (below 1: B is faster); verdicts use a {:.1} % margin.",
        r.options.margin * 100.0
    );
    if !warnings.is_empty() {
        let _ = writeln!(s, "\nWarnings:\n{}", warnings.join("\n"));
    }
    s
}

fn md_escape(s: &str) -> String {
    s.replace('|', "\\|")
}

/// One row per measured run.
pub fn to_csv(r: &BenchReport) -> String {
    let mut s = String::from(
        "workload,side,pair,seq,wall_secs,user_secs,sys_secs,max_rss_bytes,status,pad_bytes,outlier\n",
    );
    for w in &r.workloads {
        for run in &w.comparison.samples {
            let status = match (run.status.code, run.status.signal) {
                (Some(c), _) => c.to_string(),
                (None, Some(sig)) => format!("signal {sig}"),
                _ => String::new(),
            };
            let _ = writeln!(
                s,
                "{},{},{},{},{:.9},{:.6},{:.6},{},{},{},{}",
                csv_field(&w.name),
                match run.side {
                    Side::A => "A",
                    Side::B => "B",
                },
                run.pair,
                run.seq,
                run.wall_secs,
                run.user_secs,
                run.sys_secs,
                run.max_rss_bytes,
                csv_field(&status),
                run.pad_bytes,
                run.outlier
            );
        }
    }
    s
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Seconds as a short human string: `41.2 ms`, `1.53 s`, `812 µs`.
pub fn format_secs(s: f64) -> String {
    if !s.is_finite() {
        return "–".into();
    }
    if s == 0.0 {
        return "0 s".into();
    }
    let (v, unit) = if s >= 1.0 {
        (s, "s")
    } else if s >= 1e-3 {
        (s * 1e3, "ms")
    } else {
        (s * 1e6, "µs")
    };
    let digits = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    format!("{v:.digits$} {unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_fields() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }

    #[test]
    fn seconds_are_readable() {
        assert_eq!(format_secs(0.0412), "41.2 ms");
        assert_eq!(format_secs(1.534), "1.53 s");
        assert_eq!(format_secs(0.000_812), "812 µs");
        assert_eq!(format_secs(0.005), "5.00 ms");
        assert_eq!(format_secs(0.0), "0 s");
    }
}
