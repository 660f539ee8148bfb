//! Markdown export: one table row per workload, then the geometric mean, the margin and
//! any noise warnings.

use std::fmt::Write as _;

use super::{format_secs, BenchReport};
use crate::render::{markdown_cell, Render};

pub(crate) struct MarkdownExporter;

impl Render<BenchReport> for MarkdownExporter {
    fn render(&self, report: &BenchReport) -> String {
        table(report)
    }
}

fn table(r: &BenchReport) -> String {
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
            markdown_cell(&w.name),
            c.estimate.ratio,
            c.estimate.ci_low,
            c.estimate.ci_high,
            c.estimate.confidence * 100.0,
            c.estimate.verdict,
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
                .map(|n| format!("- {}: {}", markdown_cell(&w.name), n))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_table() {
        let r = super::super::fixture::report();
        let text = MarkdownExporter.render(&r);
        assert_eq!(
            text,
            "\
| workload | B/A | interval | verdict | n | A median | B median | CV A | CV B | outlier pairs |
|---|---:|---|---|---:|---:|---:|---:|---:|---:|
| big\\|input,x | 0.900 | [0.850, 0.950] (97.5 %) | faster | 2 | 41.2 ms | 37.0 ms | 1.2 % | 3.4 % | 1 |
| **geometric mean** | 0.905 | [0.702, 1.167] (97.5 %) | inconclusive | | | | | | |

B/A is B's wall time over A's (below 1: B is faster); verdicts use a 1.0 % margin.

Warnings:
- big\\|input,x: noisy measurements: CV 3.4 %
"
        );
    }

    #[test]
    fn a_name_with_html_is_shown_not_rendered() {
        let mut r = super::super::fixture::report();
        r.workloads[0].name = "<b>x</b> & y".into();
        let text = MarkdownExporter.render(&r);
        assert!(
            text.contains("\n| &lt;b&gt;x&lt;/b&gt; &amp; y | 0.900 |"),
            "{text}"
        );
        assert!(
            text.contains("\n- &lt;b&gt;x&lt;/b&gt; &amp; y: noisy"),
            "{text}"
        );
    }
}
