//! Writing `cargo optimize bench` results to files, one format per submodule behind the one
//! render trait ([`crate::render::Render`], [`Format`]): JSON (everything), Markdown (a
//! table), CSV (one row per measured run), HTML (a page with charts: `html`).
//!
//! Owns: the exported report types, the file formats, writing the files. Must not: measure
//! or print to the terminal.

mod csv;
mod html;
mod markdown;

use std::path::Path;

use anyhow::Result;
use serde::Serialize;

use crate::render::Render;

use super::comparison::{BenchOptions, Comparison};
use super::stats::Estimate;

pub use crate::util::format_secs;

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
        let geomean = super::comparison::geomean(&comps, options.margin);
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

/// The formats `bench` can write, and what renders each.
pub(crate) use crate::render::ExportFormat as Format;

impl Format {
    pub fn renderer(self) -> Box<dyn Render<BenchReport>> {
        match self {
            Format::Json => Box::new(crate::render::Json),
            Format::Markdown => Box::new(markdown::MarkdownExporter),
            Format::Csv => Box::new(csv::CsvExporter),
            Format::Html => Box::new(html::HtmlExporter),
        }
    }
}

/// The per-pair time ratios (B's wall time over A's, in pair order) of a comparison.
pub fn pair_ratios(c: &Comparison) -> Vec<f64> {
    let mut pairs: std::collections::BTreeMap<u32, (Option<f64>, Option<f64>)> =
        std::collections::BTreeMap::new();
    for r in &c.samples {
        let e = pairs.entry(r.pair).or_default();
        match r.side {
            super::comparison::Side::A => e.0 = Some(r.wall_secs),
            super::comparison::Side::B => e.1 = Some(r.wall_secs),
        }
    }
    pairs
        .values()
        .filter_map(|&(a, b)| Some(b? / a?))
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect()
}

/// Write `report` in each format that has a path, in the order given.
pub(crate) fn write_files(report: &BenchReport, targets: &[(Format, Option<&Path>)]) -> Result<()> {
    for (format, path) in targets {
        if let Some(p) = path {
            let text = format.renderer().render(report);
            crate::util::atomic::write(p, text.as_bytes())?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_everything_pretty_with_a_final_newline() {
        let r = fixture::report();
        let text = Format::Json.renderer().render(&r);
        assert!(
            text.starts_with("{\n  \"schema\": 1,\n  \"kind\": \"bench\",\n"),
            "{text}"
        );
        assert!(text.ends_with("\n}\n"));
        // Byte for byte what the exporter wrote before it was split out.
        assert_eq!(text, serde_json::to_string_pretty(&r).unwrap() + "\n");
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["workloads"][0]["name"], "big|input,x");
        assert_eq!(v["workloads"][0]["samples"].as_array().unwrap().len(), 4);
        assert_eq!(v["options"]["max_time"], 3.0);
    }

    #[test]
    fn writes_each_requested_format_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let (j, c) = (dir.path().join("r.json"), dir.path().join("r.csv"));
        let r = fixture::report();
        write_files(
            &r,
            &[
                (Format::Json, Some(&j)),
                (Format::Markdown, None),
                (Format::Csv, Some(&c)),
            ],
        )
        .unwrap();
        assert_eq!(
            std::fs::read(&j).unwrap(),
            Format::Json.renderer().render(&r).into_bytes()
        );
        assert_eq!(
            std::fs::read(&c).unwrap(),
            Format::Csv.renderer().render(&r).into_bytes()
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
        let missing = dir.path().join("no/such/dir/r.md");
        let err = write_files(&r, &[(Format::Markdown, Some(&missing))]).unwrap_err();
        assert!(format!("{err:#}").starts_with("cannot write "), "{err:#}");
    }
}

#[cfg(test)]
pub(crate) mod fixture {
    use super::*;
    use crate::bench::comparison::{Noise, Outliers, RunRecord, Side, Sides, StopReason};
    use crate::bench::stats::{LogEstimate, Summary, Verdict};
    use crate::process::ExitStatus;
    use std::time::Duration;

    fn summary(median: f64) -> Sides<Summary> {
        let s = Summary {
            mean: median,
            median,
            min: median,
            max: median,
            std_dev: 0.0,
        };
        Sides { a: s, b: s }
    }

    fn run(pair: u32, side: Side, seq: u32, wall: f64, code: Option<i32>) -> RunRecord {
        RunRecord {
            pair,
            side,
            seq,
            wall_secs: wall,
            user_secs: wall * 0.9,
            sys_secs: 0.001,
            max_rss_bytes: 2 << 20,
            status: ExitStatus {
                code,
                signal: if code.is_none() { Some(9) } else { None },
            },
            pad_bytes: 64,
            outlier: pair == 1,
            counters: None,
            metric: None,
        }
    }

    /// A small, fixed report: one workload with a `|` and a `,` in its name, two pairs.
    pub(crate) fn report() -> BenchReport {
        let comparison = Comparison {
            estimate: crate::bench::Estimate {
                ratio: 0.9,
                ci_low: 0.85,
                ci_high: 0.95,
                verdict: Verdict::Faster,
                confidence: 0.975,
            },
            estimator: Default::default(),
            margin: 0.01,
            n: 2,
            looks: 1,
            planned_looks: 2,
            stop: StopReason::Decided,
            log: LogEstimate {
                mean: -0.1,
                se: 0.01,
                df: 1.0,
                n: 2,
            },
            t_interval: [0.85, 0.95],
            bootstrap_interval: None,
            median_ratio: 0.9,
            median_interval: [0.8, 1.0],
            median_disagrees: false,
            cv_a: 0.012,
            cv_b: 0.034,
            outliers: Outliers {
                pairs: 1,
                a: 0,
                b: 1,
                pair_indices: vec![1],
            },
            median_a_secs: 0.0412,
            median_b_secs: 0.037,
            wall: summary(0.04),
            user: summary(0.036),
            sys: summary(0.001),
            rss: summary(2097152.0),
            noise: Noise {
                cpu_wall: Sides { a: 0.9, b: 0.9 },
                cv: Sides { a: 0.012, b: 0.034 },
                spread: 0.02,
                outlier_fraction: 0.5,
                warning: Some("noisy measurements: CV 3.4 %".into()),
            },
            noise_warning: Some("noisy measurements: CV 3.4 %".into()),
            counters: None,
            counters_status: "not supported".into(),
            elapsed_secs: 1.5,
            seed: 7,
            samples: vec![
                run(0, Side::A, 0, 0.0412, Some(0)),
                run(0, Side::B, 1, 0.037, Some(0)),
                run(1, Side::B, 2, 0.05, None),
                run(1, Side::A, 3, 0.04, Some(0)),
            ],
            lingering: Default::default(),
            pinned: false,
            stop_note: None,
            drift: None,
            metric: None,
        };
        let options = BenchOptions {
            warmup: 1,
            min_pairs: 2,
            max_pairs: 10,
            max_time: Duration::from_secs(3),
            margin: 0.01,
            seed: 7,
            only_faster: false,
            pairs_past_max_time: 0,
            estimator: Default::default(),
            in_turns: false,
        };
        BenchReport::new(
            options,
            vec![WorkloadResult {
                name: "big|input,x".into(),
                command_a: "/bin/a 'big input'".into(),
                command_b: "/bin/b 'big input'".into(),
                comparison,
            }],
        )
    }
}
