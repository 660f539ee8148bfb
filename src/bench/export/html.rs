//! HTML export (`bench --export-html`): one self-contained page — the geometric mean, a
//! forest plot of B/A per workload, every pair's ratio, the commands and the noise. A maud
//! template in `render::page`'s shell: every value is escaped by the template.

use maud::{html, Markup, PreEscaped};

use super::{format_secs, pair_ratios, BenchReport, WorkloadResult};
use crate::render::page::{document, verdict_legend};
use crate::render::svg::{forest, strip, Interval, Strip};
use crate::render::Render;
use crate::util::human_bytes;

pub(crate) struct HtmlExporter;

impl Render<BenchReport> for HtmlExporter {
    fn render(&self, report: &BenchReport) -> String {
        document("cargo-optimize bench", body(report))
    }
}

fn body(r: &BenchReport) -> Markup {
    let margin = r.options.margin;
    let g = &r.geomean;
    let n = r.workloads.len();
    html! {
        h1 { "cargo-optimize bench: B vs A" }
        p class="meta" {
            "cargo-optimize " (r.tool_version) " · " (n) " workload" @if n != 1 { "s" }
            (format!(" · margin ±{:.1} % · seed {}", margin * 100.0, r.options.seed))
        }
        div class="ship" { dl {
            dt { "geometric mean of B/A" }
            dd { (format!("{:.3} [{:.3}, {:.3}] ({:.1} %) — {}", g.ratio, g.ci_low, g.ci_high,
                g.confidence * 100.0, g.verdict)) }
        } }
        h2 id="workloads" { "Per workload" }
        (verdict_legend())
        (PreEscaped(forest("workloads", &intervals(r), margin, "time ratio B / A")))
        h2 id="distributions" { "Every pair" }
        p class="caption" {
            "Each dot is one interleaved pair's time ratio B/A; the tick is the estimate."
        }
        (PreEscaped(strip("pairs", &strips(r), margin, "per-pair time ratio B / A")))
        h2 id="facts" { "Commands and noise" }
        (commands(&r.workloads))
        @if let Some(w) = r.workloads.first() {
            p class="caption" { "hardware counters: " (w.comparison.counters_status) }
        }
    }
}

fn intervals(r: &BenchReport) -> Vec<Interval> {
    r.workloads
        .iter()
        .map(|w| {
            let c = &w.comparison;
            Interval {
                label: w.name.clone(),
                key: w.name.clone(),
                class: c.estimate.verdict.to_string(),
                est: Some((c.estimate.ratio, c.estimate.ci_low, c.estimate.ci_high)),
                note: format!(
                    "{}: {:.3} [{:.3}, {:.3}] {}",
                    w.name,
                    c.estimate.ratio,
                    c.estimate.ci_low,
                    c.estimate.ci_high,
                    c.estimate.verdict
                ),
                reference: None,
            }
        })
        .collect()
}

fn strips(r: &BenchReport) -> Vec<Strip> {
    r.workloads
        .iter()
        .map(|w| Strip {
            label: w.name.clone(),
            key: w.name.clone(),
            values: pair_ratios(&w.comparison),
            center: Some(w.comparison.estimate.ratio),
        })
        .collect()
}

/// Each workload's commands, pairs, medians, noise and peak memory.
fn commands(workloads: &[WorkloadResult]) -> Markup {
    html! { table {
        tr {
            @for h in ["workload", "A", "B", "pairs", "median A", "median B", "CV A", "CV B",
                "peak RSS A / B", "outlier pairs"] { th { (h) } }
        }
        @for w in workloads {
            @let c = &w.comparison;
            tr {
                td { (w.name) }
                td { code { (w.command_a) } }
                td { code { (w.command_b) } }
                td class="num" { (c.n) }
                td class="num" { (format_secs(c.median_a_secs)) }
                td class="num" { (format_secs(c.median_b_secs)) }
                td class="num" { (format!("{:.1} %", c.cv_a * 100.0)) }
                td class="num" { (format!("{:.1} %", c.cv_b * 100.0)) }
                td class="num" {
                    (human_bytes(c.rss.a.median as u64)) " / " (human_bytes(c.rss.b.median as u64))
                }
                td class="num" { (c.outliers.pairs) }
            }
        }
    } }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_mark_per_workload_and_every_value_escaped() {
        let mut r = super::super::fixture::report();
        r.workloads[0].command_b = "/bin/b '<big>' \"&\"".into();
        let page = HtmlExporter.render(&r);
        assert_eq!(
            page.matches(r#"data-chart="workloads" data-key="#).count(),
            1
        );
        assert!(page.contains("<td>big|input,x</td>"), "{page}");
        assert!(page.contains("<code>/bin/a 'big input'</code>"), "{page}");
        assert!(
            page.contains("<code>/bin/b '&lt;big&gt;' &quot;&amp;&quot;</code>"),
            "{page}"
        );
        assert!(!page.contains("<script"));
        assert_eq!(page, HtmlExporter.render(&r), "the same bytes every time");
    }
}
