//! The report as one self-contained HTML page: inline CSS and SVG (drawn by `svg`), no
//! scripts, no network, readable from `file://` and printable. Sections: what to ship, the
//! ladder (chart and table), per-workload forest plots, the per-pair distributions, the
//! hotspots of the PGO profile (when the run made one), the pipeline's timeline, binary sizes, peak memory, toolchain/machine facts and noise.
//!
//! Every string from the report goes through [`esc`]. [`bench_page`] draws the same kind
//! of page for a standalone `bench` A/B comparison.

use std::fmt::Write as _;

use maud::PreEscaped;

use super::hotspots::{calls_cell, CALLS_UNKNOWN};
use super::text::{estimate_cell, portable_hint, settings_line, short_name, speedup_line};
use super::{pair_ratios, Hotspots, Report, StageReport, Status};
use crate::bench::export::format_secs;
use crate::bench::Comparison;
use crate::render::html as esc;
use crate::render::page::{document, status_legend};
use crate::render::svg::{bars, forest, strip, Bar, Interval, Strip};
use crate::render::Render;
use crate::util::human_bytes;

pub struct HtmlRenderer;

impl Render<Report> for HtmlRenderer {
    fn render(&self, report: &Report) -> String {
        page(report)
    }
}

/// The run's page.
pub fn page(r: &Report) -> String {
    let mut b = String::new();
    let _ = writeln!(
        b,
        "<h1>cargo-optimize: <code>{}</code></h1>\n<p class=\"meta\">crate <code>{}</code> · run <code>{}</code> · cargo-optimize {}</p>",
        esc(&r.bin),
        esc(&r.crate_name),
        esc(&r.run_id),
        esc(&r.tool_version)
    );
    ship(&mut b, r);
    ladder(&mut b, r);
    coverage(&mut b, r);
    workloads(&mut b, r);
    distributions(&mut b, r);
    if let Some(h) = &r.hotspots {
        hotspots(&mut b, h);
    }
    timeline(&mut b, r);
    sizes_and_memory(&mut b, r);
    facts(&mut b, r);
    document(
        &format!("cargo-optimize: {} ({})", r.bin, r.run_id),
        PreEscaped(b),
    )
}

fn margin_of(r: &Report) -> f64 {
    r.workloads
        .iter()
        .flat_map(|w| w.per_stage.values())
        .map(|c| c.margin)
        .find(|m| m.is_finite())
        .unwrap_or(0.01)
}

fn ship(b: &mut String, r: &Report) {
    let _ = writeln!(b, "<h2 id=\"ship\">What to ship</h2>");
    let Some(f) = &r.final_ else {
        let _ = writeln!(b, "<p>The run chose nothing.</p>");
        return;
    };
    let _ = writeln!(
        b,
        "<div class=\"ship\"><dl>\n<dt>{}</dt><dd>{}</dd>\n<dt>binary</dt><dd><code>{}</code></dd>",
        esc(&f.label()),
        esc(&speedup_line(f)),
        esc(&f.binary)
    );
    if let Some(v) = &f.settings {
        let _ = writeln!(
            b,
            "<dt>settings</dt><dd><code>{}</code></dd>",
            esc(&settings_line(v))
        );
    }
    if let Some(p) = f.portable.as_ref().filter(|_| f.stage != "baseline") {
        let text = if p.binary == f.binary {
            format!(
                "the same binary: it picks no CPU, runs on any {} machine",
                r.toolchain.host
            )
        } else if p.stage == "baseline" {
            "the baseline (your current build): no stage without a target-cpu was kept".into()
        } else {
            format!(
                "{} — {}; runs on any {} machine",
                p.label(),
                speedup_line(p),
                r.toolchain.host
            )
        };
        let _ = writeln!(b, "<dt>portable alternative</dt><dd>{}", esc(&text));
        if p.binary != f.binary {
            let _ = write!(b, "<br><code>{}</code>", esc(&p.binary));
            if let Some(v) = &p.settings {
                let _ = write!(b, "<br>settings: <code>{}</code>", esc(&settings_line(v)));
            }
            if let Some(h) = portable_hint(r) {
                let _ = write!(b, "<br>{}", esc(&h));
            }
        }
        let _ = writeln!(b, "</dd>");
    }
    if let Some(cpu) = f.apply_advice() {
        let _ = writeln!(
            b,
            "<dt>write it into the project</dt><dd><code>cargo optimize apply</code>{}</dd>",
            if cpu {
                " (add <code>--cpu</code> to also write its target-cpu, for this machine's CPU only)"
            } else {
                ""
            }
        );
    }
    let _ = writeln!(b, "</dl></div>");
}

fn status_class(st: &StageReport) -> &'static str {
    st.status.as_str()
}

fn ladder(b: &mut String, r: &Report) {
    let margin = margin_of(r);
    let _ = writeln!(b, "<h2 id=\"ladder\">The ladder</h2>");
    let _ = writeln!(
        b,
        "<p class=\"caption\">Each stage's time ratio against the baseline with its 95 % interval (below 1 is faster); the band is the ±{:.1} % margin. A stage is kept only when it is faster than the best before it (the table's first column of ratios).</p>",
        margin * 100.0
    );
    b.push_str(&status_legend().into_string());
    let rows: Vec<Interval> = r
        .stages
        .iter()
        .map(|st| {
            let est = if st.name == "baseline" && st.status == Status::Kept {
                Some((1.0, 1.0, 1.0))
            } else {
                st.vs_baseline
                    .as_ref()
                    .map(|e| (e.ratio, e.ci_low, e.ci_high))
            };
            let note = match (&st.vs_baseline, st.status) {
                (Some(e), _) => format!(
                    "{}: {} vs baseline {}",
                    st.status.as_str(),
                    st.label(),
                    estimate_cell(Some(e))
                ),
                (None, Status::Kept) => "the reference".into(),
                (None, s) => format!(
                    "{}, not measured: {}",
                    s.as_str(),
                    st.reason.lines().next().unwrap_or("")
                ),
            };
            Interval {
                label: st.label(),
                key: st.label(),
                class: status_class(st).into(),
                est,
                note,
            }
        })
        .collect();
    b.push_str(&forest(
        "ladder",
        &rows,
        margin,
        "time ratio vs baseline (below 1 is faster)",
    ));
    let _ = writeln!(
        b,
        "<table class=\"ladder\">\n<tr><th>stage</th><th>status</th><th>time vs previous best [95% CI]</th><th>time vs baseline [95% CI]</th><th>build s</th><th>size</th><th>why</th></tr>"
    );
    for st in &r.stages {
        let mut why = esc(&st.reason).replace('\n', "<br>");
        for n in &st.notes {
            let _ = write!(why, "<br><em>{}</em>", esc(n));
        }
        let _ = writeln!(
            b,
            "<tr data-status=\"{}\"><td>{}</td><td class=\"status {}\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"why\">{}</td></tr>",
            status_class(st),
            esc(&st.label()),
            status_class(st),
            st.status.as_str(),
            esc(&estimate_cell(st.vs_best.as_ref())),
            esc(&estimate_cell(st.vs_baseline.as_ref())),
            st.build_seconds
                .map(|s| format!("{s:.1}"))
                .unwrap_or_else(|| "-".into()),
            esc(&st.size_bytes.map(human_bytes).unwrap_or_else(|| "-".into())),
            why
        );
    }
    let _ = writeln!(b, "</table>");
}

/// The PGO profile's eval coverage and the hot eval code training missed (when recorded).
fn coverage(b: &mut String, r: &Report) {
    let Some((row, q)) = r.profile_quality() else {
        return;
    };
    let _ = writeln!(
        b,
        "<h2 id=\"coverage\">Profile coverage</h2>\n<p>{}: {}.</p>",
        esc(&row.label()),
        esc(&q.describe())
    );
    if q.untrained_hot.is_empty() {
        return;
    }
    let _ = writeln!(
        b,
        "<p class=\"caption\">Functions hot in the eval workloads that training ran under 1/20 as much (or not at all); each eval workload weighs the same. Add train workloads like the ones named.</p>\n<table class=\"coverage\">\n<tr><th>function</th><th>eval share</th><th>train share</th><th>hottest in eval workload</th></tr>"
    );
    for u in &q.untrained_hot {
        let _ = writeln!(
            b,
            "<tr><td><code>{}</code></td><td class=\"num\">{:.1} %</td><td class=\"num\">{:.2} %</td><td>{}</td></tr>",
            esc(&u.function),
            u.eval_share * 100.0,
            u.train_share * 100.0,
            esc(&u.workload)
        );
    }
    let _ = writeln!(b, "</table>");
}

/// The candidates with comparisons, in ladder order: (row label, tag, row).
fn measured_rows(r: &Report) -> Vec<(String, String, &StageReport)> {
    let mut out: Vec<(String, String, &StageReport)> = Vec::new();
    for st in &r.stages {
        if let Some(tag) = st.tag() {
            let any = r.workloads.iter().any(|w| w.per_stage.contains_key(&tag));
            if any && !out.iter().any(|(_, t, _)| *t == tag) {
                out.push((st.label(), tag, st));
            }
        }
    }
    out
}

fn workloads(b: &mut String, r: &Report) {
    let margin = margin_of(r);
    let shipped = r.final_.as_ref().map(|f| f.binary.clone());
    let rows: Vec<_> = measured_rows(r)
        .into_iter()
        .filter(|(_, _, st)| {
            st.status == Status::Kept || st.binary.is_some() && st.binary == shipped
        })
        .collect();
    let _ = writeln!(b, "<h2 id=\"workloads\">Per workload</h2>");
    if rows.is_empty() {
        let _ = writeln!(b, "<p>No stage was kept: nothing to break down.</p>");
        return;
    }
    let _ = writeln!(
        b,
        "<p class=\"caption\">For the shipped candidate and each kept stage: its time ratio on each workload against the candidate it had to beat, with the interval.</p>"
    );
    for (label, tag, st) in rows {
        let rival = st.rival().unwrap_or_else(|| "its rival".into());
        let items: Vec<Interval> = r
            .workloads
            .iter()
            .filter_map(|w| {
                let c = w.per_stage.get(&tag)?;
                Some(Interval {
                    label: w.name.clone(),
                    key: w.name.clone(),
                    class: c.verdict.to_string(),
                    est: Some((c.ratio, c.ci_low, c.ci_high)),
                    note: format!(
                        "{}: {:.3} [{:.3}, {:.3}] {} ({} pairs)",
                        w.name, c.ratio, c.ci_low, c.ci_high, c.verdict, c.n
                    ),
                })
            })
            .collect();
        let _ = writeln!(
            b,
            "<h3>{} vs {}{}</h3>",
            esc(&label),
            esc(&rival),
            if st.binary.is_some() && st.binary == shipped {
                " (shipped)"
            } else {
                ""
            }
        );
        b.push_str(&forest(
            &format!("workloads:{tag}"),
            &items,
            margin,
            &format!("time ratio {label} / {rival}"),
        ));
    }
}

fn distributions(b: &mut String, r: &Report) {
    let margin = margin_of(r);
    let rows = measured_rows(r);
    let _ = writeln!(b, "<h2 id=\"distributions\">Every pair</h2>");
    if rows.is_empty() {
        let _ = writeln!(b, "<p>Nothing was measured.</p>");
        return;
    }
    let _ = writeln!(
        b,
        "<p class=\"caption\">Each dot is one interleaved pair's time ratio (candidate / reference); the tick is the estimate. A wide cloud is noise; a lone dot far away, an outlier.</p>"
    );
    for (label, tag, st) in rows {
        let rival = st.rival().unwrap_or_else(|| "its rival".into());
        let items: Vec<Strip> = r
            .workloads
            .iter()
            .filter_map(|w| {
                let c = w.per_stage.get(&tag)?;
                Some(Strip {
                    label: w.name.clone(),
                    key: w.name.clone(),
                    values: pair_ratios(c),
                    center: Some(c.ratio),
                })
            })
            .collect();
        let _ = writeln!(b, "<h3>{} vs {}</h3>", esc(&label), esc(&rival));
        b.push_str(&strip(
            &format!("pairs:{tag}"),
            &items,
            margin,
            &format!("per-pair time ratio {label} / {rival}"),
        ));
    }
}

/// The hottest functions of the run's PGO profile: a bar per function, then the table.
fn hotspots(b: &mut String, h: &Hotspots) {
    let _ = writeln!(b, "<h2 id=\"hotspots\">Hotspots</h2>");
    let _ = writeln!(
        b,
        "<p class=\"caption\">The hottest functions of the merged PGO profile, by their share of its counters summed (work done in the train workloads, not time): {} of {} functions ran, and these {} hold {:.1} %. More, by crate and module: <code>cargo optimize hotspots</code>.</p>",
        h.functions_with_counts,
        h.functions_in_profile,
        h.functions.len(),
        h.listed_share() * 100.0
    );
    if h.functions.is_empty() {
        return;
    }
    let rows: Vec<Bar> = h
        .functions
        .iter()
        .map(|f| Bar {
            label: short_name(&f.name, 46),
            key: f.name.clone(),
            class: "hotspot".into(),
            start: 0.0,
            len: f.share * 100.0,
            text: format!("{:.1} %", f.share * 100.0),
        })
        .collect();
    b.push_str(&bars(
        "hotspots",
        &rows,
        "share of the profile's counts (%)",
    ));
    hotspots_table(b, h);
}

/// The hotspots as a table (a calls column only when some are known).
fn hotspots_table(b: &mut String, h: &Hotspots) {
    let calls = |c: &str, tag: &str| {
        if h.any_calls() {
            format!("<{tag}>{c}</{}>", &tag[..2])
        } else {
            String::new()
        }
    };
    let _ = writeln!(
        b,
        "<table class=\"hotspots\">\n<tr><th>#</th><th>function</th><th>crate</th><th>share</th>{}</tr>",
        calls("calls", "th")
    );
    for (i, f) in h.functions.iter().enumerate() {
        let _ = writeln!(
            b,
            "<tr><td class=\"num\">{}</td><td><code>{}</code></td><td>{}</td><td class=\"num\">{:.1} %</td>{}</tr>",
            i + 1,
            esc(&f.name),
            esc(&f.crate_name),
            f.share * 100.0,
            calls(&calls_cell(f.entries), "td class=\"num\"")
        );
    }
    let _ = writeln!(b, "</table>");
    if h.calls_unknown() {
        let _ = writeln!(b, "<p class=\"caption\">{}</p>", esc(CALLS_UNKNOWN));
    }
}

fn step_kind(step: &str) -> &'static str {
    if step.ends_with("measure") {
        "measure"
    } else if step.contains("verify") || step.contains("workloads") || step.contains("determinism")
    {
        "verify"
    } else if step.contains("build") || step.contains("llvm-bolt") {
        "build"
    } else if step.contains("training")
        || step.contains("merge")
        || step.contains("instrument")
        || step.contains("coverage")
    {
        "train"
    } else {
        "other"
    }
}

fn timeline(b: &mut String, r: &Report) {
    let steps: Vec<_> = r.pipeline.iter().filter(|p| p.step != "total").collect();
    let _ = writeln!(b, "<h2 id=\"timeline\">Where the time went</h2>");
    if steps.is_empty() {
        let _ = writeln!(b, "<p>The report has no timings.</p>");
        return;
    }
    let total = r
        .pipeline
        .iter()
        .find(|p| p.step == "total")
        .map(|p| p.seconds)
        .unwrap_or_else(|| steps.iter().map(|p| p.seconds).sum());
    let _ = writeln!(
        b,
        "<p class=\"caption\">The pipeline's steps in order, {:.1} s in all: <span style=\"color:#8250df\">builds</span>, <span style=\"color:#1a7f37\">training</span>, <span style=\"color:#bf8700\">verification</span>, <span style=\"color:#0969da\">measuring</span>.</p>",
        total
    );
    let mut at = 0.0;
    let items: Vec<Bar> = steps
        .iter()
        .map(|p| {
            let secs = if p.seconds.is_finite() {
                p.seconds
            } else {
                0.0
            };
            let bar = Bar {
                label: p.step.clone(),
                key: p.step.clone(),
                class: step_kind(&p.step).into(),
                start: at,
                len: secs,
                text: match p.peak_rss_bytes {
                    Some(m) => format!("{secs:.2} s, peak {}", human_bytes(m)),
                    None => format!("{secs:.2} s"),
                },
            };
            at += secs;
            bar
        })
        .collect();
    b.push_str(&bars("timeline", &items, "seconds since the run started"));
}

fn sizes_and_memory(b: &mut String, r: &Report) {
    let _ = writeln!(b, "<h2 id=\"sizes\">Binary sizes</h2>");
    let sized: Vec<Bar> = r
        .stages
        .iter()
        .filter_map(|st| {
            let size = st.size_bytes?;
            Some(Bar {
                label: st.label(),
                key: st.label(),
                class: status_class(st).into(),
                start: 0.0,
                len: size as f64 / 1024.0,
                text: human_bytes(size),
            })
        })
        .collect();
    if sized.is_empty() {
        let _ = writeln!(b, "<p>No sizes recorded.</p>");
    } else {
        b.push_str(&bars("sizes", &sized, "KiB"));
    }

    let _ = writeln!(b, "<h2 id=\"memory\">Peak memory</h2>");
    let mut mem: Vec<Bar> = Vec::new();
    let baseline_rss = r
        .workloads
        .iter()
        .flat_map(|w| w.per_stage.iter())
        .filter(|(tag, _)| {
            r.stages
                .iter()
                .find(|st| st.tag().as_deref() == Some(tag.as_str()))
                .and_then(StageReport::rival)
                .is_some_and(|rv| rv == "baseline")
        })
        .map(|(_, c)| c.rss.a.median)
        .fold(f64::NAN, f64::max);
    if baseline_rss.is_finite() {
        mem.push(rss_bar("baseline", "kept", baseline_rss));
    }
    for (label, tag, st) in measured_rows(r) {
        let m = r
            .workloads
            .iter()
            .filter_map(|w| w.per_stage.get(&tag))
            .map(|c| c.rss.b.median)
            .fold(f64::NAN, f64::max);
        if m.is_finite() {
            mem.push(rss_bar(&label, status_class(st), m));
        }
    }
    if mem.is_empty() {
        let _ = writeln!(b, "<p>No memory measurements.</p>");
    } else {
        let _ = writeln!(
            b,
            "<p class=\"caption\">Each candidate's peak resident memory: the median over its measured runs, the largest over the workloads. The tools' own peaks are in the timeline's labels.</p>"
        );
        b.push_str(&bars("memory", &mem, "MiB"));
    }
}

fn rss_bar(label: &str, class: &str, bytes: f64) -> Bar {
    Bar {
        label: label.into(),
        key: label.into(),
        class: class.into(),
        start: 0.0,
        len: bytes / (1024.0 * 1024.0),
        text: human_bytes(bytes as u64),
    }
}

fn facts(b: &mut String, r: &Report) {
    let t = &r.toolchain;
    let _ = writeln!(
        b,
        "<h2 id=\"facts\">Toolchain, machine and noise</h2>\n<table>"
    );
    let mut row = |k: &str, v: &str| {
        let _ = writeln!(b, "<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(v));
    };
    row("rustc", &t.rustc);
    row("LLVM", &t.llvm);
    row(
        "llvm-profdata",
        t.llvm_profdata.as_deref().unwrap_or("not found"),
    );
    row("llvm-bolt", t.llvm_bolt.as_deref().unwrap_or("not found"));
    row("host", &t.host);
    if let Some(m) = &r.machine {
        let mut cpu = m.cpu_model.clone().unwrap_or_else(|| "unknown CPU".into());
        if let Some(n) = m.logical_cpus {
            cpu.push_str(&format!(", {n} logical CPUs"));
        }
        if let Some(l) = &m.x86_64_level {
            cpu.push_str(&format!(", {l}"));
        }
        row("machine", &cpu);
        row(
            "hardware counters (this machine)",
            &format!(
                "{}: {}",
                if m.hardware_counters { "yes" } else { "no" },
                m.hardware_counters_detail
            ),
        );
    }
    if let Some(cpu) = r.stages.iter().find_map(|s| s.facts.native_cpu.clone()) {
        row("CPU (LLVM's name for it)", &cpu);
    }
    if let Some(bf) = r.stages.iter().find_map(|s| s.facts.bolt.as_ref()) {
        row("BOLT profile", &format!("{}: {}", bf.mode, bf.mode_reason));
    }
    let comps: Vec<(&str, &str, &Comparison)> = r
        .workloads
        .iter()
        .flat_map(|w| {
            w.per_stage
                .iter()
                .map(move |(tag, c)| (w.name.as_str(), tag.as_str(), c))
        })
        .collect();
    if let Some((_, _, c)) = comps.first() {
        row("hardware counters (measuring)", &c.counters_status);
    }
    let mut cvs: Vec<f64> = comps
        .iter()
        .flat_map(|(_, _, c)| [c.cv_a, c.cv_b])
        .filter(|v| v.is_finite())
        .collect();
    cvs.sort_by(f64::total_cmp);
    if !cvs.is_empty() {
        row(
            "noise (CV of run times)",
            &format!(
                "median {:.1} %, largest {:.1} % over {} comparisons",
                cvs[cvs.len() / 2] * 100.0,
                cvs[cvs.len() - 1] * 100.0,
                comps.len()
            ),
        );
    }
    let _ = writeln!(b, "</table>");
    if comps.is_empty() {
        return;
    }
    let _ = writeln!(
        b,
        "<table class=\"noise\">\n<tr><th>workload</th><th>candidate</th><th>pairs</th><th>median A</th><th>median B</th><th>CV A</th><th>CV B</th><th>outlier pairs</th><th>note</th></tr>"
    );
    for (w, tag, c) in comps {
        let _ = writeln!(
            b,
            "<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{:.1} %</td><td class=\"num\">{:.1} %</td><td class=\"num\">{}</td><td>{}</td></tr>",
            esc(w),
            esc(tag),
            c.n,
            esc(&format_secs(c.median_a_secs)),
            esc(&format_secs(c.median_b_secs)),
            c.cv_a * 100.0,
            c.cv_b * 100.0,
            c.outliers.pairs,
            esc(c.noise_warning.as_deref().unwrap_or(""))
        );
    }
    let _ = writeln!(b, "</table>");
}

#[cfg(test)]
mod tests {
    #[test]
    fn hotspots_are_a_bar_chart_with_a_mark_per_function_and_a_table() {
        let mut b = String::new();
        super::hotspots(&mut b, &crate::report::hotspots::sample());
        assert!(b.starts_with("<h2 id=\"hotspots\">Hotspots</h2>\n"), "{b}");
        assert!(
            b.contains("4 of 9 functions ran, and these 3 hold 76.2 %"),
            "{b}"
        );
        assert_eq!(
            b.matches(r#"<g class="mark hotspot" data-chart="hotspots" data-key="#)
                .count(),
            3
        );
        assert!(
            b.contains(r#"data-key="&lt;alloc::vec::Vec&lt;T&gt; as core::ops::Drop&gt;::drop""#),
            "{b}"
        );
        assert!(b.contains("<tr><td class=\"num\">1</td><td><code>demo::interp::Vm::run</code></td><td>demo</td><td class=\"num\">41.2 %</td><td class=\"num\">3</td></tr>\n"), "{b}");
        let mut again = String::new();
        super::hotspots(&mut again, &crate::report::hotspots::sample());
        assert_eq!(again, b);
    }
}
