//! The report as one self-contained HTML page: a maud template in `render::page`'s shell
//! (the stylesheet inline from `render/assets/report.css`), charts as inline SVG drawn by
//! `render::svg`; no scripts, no network, readable from `file://` and printable. Sections:
//! what to ship, the ladder (chart and table), the profile's coverage, per-workload forest
//! plots, the per-pair distributions, the hotspots of the PGO profile (when the run made
//! one), the pipeline's timeline, binary sizes, peak memory, toolchain/machine facts and
//! noise.
//!
//! Every value from the report is spliced with `(…)`, which the template escapes
//! (`render::html`); only the charts, markup we draw, go in as `PreEscaped`.

use maud::{html, Markup, PreEscaped};

use super::hotspots::{calls_cell, CALLS_UNKNOWN};
use super::text::{estimate_cell, portable_hint, settings_line, short_name, speedup_line};
use super::{pair_ratios, FinalChoice, Hotspots, Report, StageReport, Status};
use crate::bench::Comparison;
use crate::render::page::{document, status_legend};
use crate::render::svg::{bars, forest, strip, Bar, Interval, Strip};
use crate::render::Render;
use crate::util::human_bytes;

pub(crate) struct HtmlRenderer;

impl Render<Report> for HtmlRenderer {
    fn render(&self, report: &Report) -> String {
        page(report)
    }
}

/// The run's page.
pub(crate) fn page(r: &Report) -> String {
    let body = html! {
        h1 { "cargo-optimize: " code { (r.bin) } }
        p class="meta" {
            "crate " code { (r.crate_name) } " · run " code { (r.run_id) }
            " · cargo-optimize " (r.tool_version)
            @if let Some(src) = &r.source {
                br;
                span class="source" { (super::markdown::source_line(src)) }
            }
        }
        (ship(r))
        (ladder(r))
        (shipped(r))
        (coverage(r))
        (workloads(r))
        (distributions(r))
        @if let Some(h) = &r.hotspots { (hotspots(h)) }
        (timeline(r))
        (sizes(r))
        (memory(r))
        (facts(r))
    };
    r.relative(&document(
        &format!("cargo-optimize: {} ({})", r.bin, r.run_id),
        body,
    ))
}

/// The shipped candidate against the baseline: each workload's median time and ratio, then
/// the resources it used (user and system time, peak RSS, hardware counters), old → new.
fn shipped(r: &Report) -> Markup {
    let Some(f) = r.final_.as_ref().filter(|f| f.stage != "baseline") else {
        return html! {};
    };
    let comps = super::shipped::against_baseline(r, f);
    if comps.is_empty() {
        return html! {};
    }
    let res = super::shipped::resources(&comps);
    html! {
        h2 id="shipped" { (f.label()) " against the baseline" }
        table class="shipped" {
            tr { th { "workload" } th { "baseline (median)" } th { (f.label()) " (median)" } th { "time ratio [95% CI]" } }
            @for (w, c) in &comps {
                tr {
                    td { (w) }
                    td class="num" { (c.medians().0) }
                    td class="num" { (c.medians().1) }
                    td class="num" { (format!("{:.3} [{:.3}, {:.3}] {}", c.estimate.ratio, c.estimate.ci_low, c.estimate.ci_high, c.estimate.verdict)) }
                }
            }
        }
        @if !res.is_empty() {
            table class="resources" {
                tr { th { "resource (all workloads)" } th { "baseline" } th { (f.label()) } th { "ratio" } }
                @for x in &res {
                    tr {
                        td { (x.name) }
                        td class="num" { (x.old) }
                        td class="num" { (x.new) }
                        td class="num" { (format!("{:.3}", x.ratio)) }
                    }
                }
            }
        }
    }
}

/// A chart we drew (SVG markup, its text escaped by `render::svg`).
fn chart(svg: String) -> PreEscaped<String> {
    PreEscaped(svg)
}

fn margin_of(r: &Report) -> f64 {
    r.workloads
        .iter()
        .flat_map(|w| w.per_stage.values())
        .map(|c| c.margin)
        .find(|m| m.is_finite())
        .unwrap_or(0.01)
}

fn ship(r: &Report) -> Markup {
    html! {
        h2 id="ship" { "What to ship" }
        @if let Some(f) = &r.final_ {
            div class="ship" { dl {
                dt { (f.label()) } dd { (speedup_line(f)) }
                @if let Some(l) = super::shipped::slower_line(&super::shipped::against_baseline(r, f)) {
                    dt { "slower" } dd { (l) }
                }
                @if let Some(d) = super::shipped::drift_line(&super::shipped::against_baseline(r, f)) {
                    dt { "drift" } dd { (d) }
                }
                dt { "binary" } dd { code { (f.binary) } }
                @if let Some(size) = r.size_line(&f.binary) { dt { "size" } dd { (size) } }
                @if let Some(v) = &f.settings {
                    dt { "settings" } dd { code { (settings_line(v)) } }
                }
                @if let Some(p) = f.portable.as_ref().filter(|_| f.stage != "baseline") {
                    dt { "portable alternative" } dd { (portable(r, f, p)) }
                }
                @if let Some(cpu) = f.apply_advice() {
                    dt { "write it into the project" }
                    dd {
                        code { "cargo optimize apply" }
                        @if cpu {
                            " (the portable alternative; " code { "--cpu" }
                            " applies the winner, for this machine's CPU only)"
                        }
                    }
                }
            } }
        } @else {
            p { "The run chose nothing." }
        }
    }
}

/// The portable alternative to what ships: the same binary, the baseline, or its own.
fn portable(r: &Report, f: &FinalChoice, p: &FinalChoice) -> Markup {
    let host = &r.toolchain.host;
    let text = if p.binary == f.binary {
        format!("the same binary: it picks no CPU, runs on any {host} machine")
    } else if p.stage == "baseline" {
        "the baseline (your current build): no stage without a target-cpu was kept".into()
    } else {
        format!(
            "{} — {}; runs on any {host} machine",
            p.label(),
            speedup_line(p)
        )
    };
    html! {
        (text)
        @if p.binary != f.binary {
            br; code { (p.binary) }
            @if let Some(v) = &p.settings { br; "settings: " code { (settings_line(v)) } }
            @if let Some(h) = portable_hint(r) { br; (h) }
        }
    }
}

fn status_class(st: &StageReport) -> &'static str {
    st.status.as_str()
}

fn ladder(r: &Report) -> Markup {
    let margin = margin_of(r);
    let rows: Vec<Interval> = r.stages.iter().map(|st| ladder_mark(r, st)).collect();
    html! {
        h2 id="ladder" { "The ladder" }
        p class="caption" {
            (format!("Each stage's time ratio against the baseline with its 95 % interval (below 1 is faster); the band is the ±{:.1} % margin. The hollow diamond ◇ on a row marks its reference: the candidate it was measured against (the best before it, or the baseline). A stage is kept only when it is faster than its reference (the table's first column of ratios; or, unless it is a refinement, surely faster with its estimate past the margin), so a dropped stage can sit left of the kept one it did not beat.", margin * 100.0))
        }
        (status_legend())
        (chart(forest("ladder", &rows, margin, "time ratio vs baseline (below 1 is faster)")))
        table class="ladder" {
            tr {
                @for h in ["stage", "status", "measured against", "time ratio vs it [95% CI]",
                    "time ratio vs baseline [95% CI]", "build s", "size", "why"] { th { (h) } }
            }
            @for st in &r.stages { (ladder_row(st)) }
        }
    }
}

/// A stage's mark on the ladder's chart, with its rival's place (the baseline at 1, or the
/// kept row it was measured against).
fn ladder_mark(r: &Report, st: &StageReport) -> Interval {
    let reference = st.rival().and_then(|rival| {
        if rival == "baseline" {
            return Some(1.0);
        }
        let row = r
            .stages
            .iter()
            .find(|x| x.label() == rival && x.status == Status::Kept)?;
        Some(row.vs_baseline.as_ref()?.ratio)
    });
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
        note: match st.rival() {
            Some(rival) => format!("{note} (measured against {rival}, the ◇)"),
            None => note,
        },
        reference,
    }
}

/// A stage's row of the ladder's table: its reason line by line, then its notes.
fn ladder_row(st: &StageReport) -> Markup {
    let build = st
        .build_seconds
        .map(|s| format!("{s:.1}"))
        .unwrap_or_else(|| "-".into());
    let size = st.size_bytes.map(human_bytes).unwrap_or_else(|| "-".into());
    html! {
        tr data-status=(status_class(st)) {
            td { (st.label()) }
            td class={ "status " (status_class(st)) } { (st.status.as_str()) }
            td { (st.rival().unwrap_or_else(|| "-".into())) }
            td class="num" { (estimate_cell(st.vs_best.as_ref())) }
            td class="num" { (estimate_cell(st.vs_baseline.as_ref())) }
            td class="num" { (build) }
            td class="num" { (size) }
            td class="why" {
                @for (i, line) in st.reason.split('\n').enumerate() {
                    @if i > 0 { br; } (line)
                }
                @for n in &st.notes { br; em { (n) } }
            }
        }
    }
}

/// The PGO profile's eval coverage and the hot eval code training missed (when recorded).
fn coverage(r: &Report) -> Markup {
    let Some((row, q)) = r.profile_quality() else {
        return html! {};
    };
    html! {
        h2 id="coverage" { "Profile coverage" }
        p { (row.label()) ": " (q.describe()) "." }
        @if !q.untrained_hot.is_empty() {
            p class="caption" {
                "Functions hot in the eval workloads that training ran under 1/20 as much (or not at all); each eval workload weighs the same. Add train workloads like the ones named."
            }
            table class="coverage" {
                tr {
                    th { "function" } th { "eval share" } th { "train share" }
                    th { "hottest in eval workload" }
                }
                @for u in &q.untrained_hot {
                    tr {
                        td { code { (u.function) } }
                        td class="num" { (format!("{:.1} %", u.eval_share * 100.0)) }
                        td class="num" { (format!("{:.2} %", u.train_share * 100.0)) }
                        td { (u.workload) }
                    }
                }
            }
        }
    }
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

fn workloads(r: &Report) -> Markup {
    let margin = margin_of(r);
    let shipped = r.final_.as_ref().map(|f| f.binary.clone());
    let is_shipped = |st: &StageReport| st.binary.is_some() && st.binary == shipped;
    let rows: Vec<_> = measured_rows(r)
        .into_iter()
        .filter(|(_, _, st)| st.status == Status::Kept || is_shipped(st))
        .collect();
    html! {
        h2 id="workloads" { "Per workload" }
        @if rows.is_empty() {
            p { "No stage was kept: nothing to break down." }
        } @else {
            p class="caption" {
                "For the shipped candidate and each kept stage: its time ratio on each workload against the candidate it had to beat, with the interval."
            }
            @for (label, tag, st) in &rows {
                @let rival = st.rival().unwrap_or_else(|| "its rival".into());
                h3 { (label) " vs " (rival) @if is_shipped(st) { " (shipped)" } }
                (chart(forest(
                    &format!("workloads:{tag}"),
                    &workload_marks(r, tag),
                    margin,
                    &format!("time ratio {label} / {rival}"),
                )))
            }
        }
    }
}

/// Each workload's ratio for the candidate `tag`, a mark each.
fn workload_marks(r: &Report, tag: &str) -> Vec<Interval> {
    r.workloads
        .iter()
        .filter_map(|w| {
            let c = w.per_stage.get(tag)?;
            Some(Interval {
                label: w.name.clone(),
                key: w.name.clone(),
                class: c.estimate.verdict.to_string(),
                est: Some((c.estimate.ratio, c.estimate.ci_low, c.estimate.ci_high)),
                note: format!(
                    "{}: {:.3} [{:.3}, {:.3}] {} ({} pairs)",
                    w.name,
                    c.estimate.ratio,
                    c.estimate.ci_low,
                    c.estimate.ci_high,
                    c.estimate.verdict,
                    c.n
                ),
                reference: None,
            })
        })
        .collect()
}

fn distributions(r: &Report) -> Markup {
    let margin = margin_of(r);
    let rows = measured_rows(r);
    html! {
        h2 id="distributions" { "Every pair" }
        @if rows.is_empty() {
            p { "Nothing was measured." }
        } @else {
            p class="caption" {
                "Each dot is one interleaved pair's time ratio (candidate / reference); the tick is the estimate. A wide cloud is noise; a lone dot far away, an outlier."
            }
            @for (label, tag, st) in &rows {
                @let rival = st.rival().unwrap_or_else(|| "its rival".into());
                @let items: Vec<Strip> = r.workloads.iter().filter_map(|w| {
                    let c = w.per_stage.get(tag)?;
                    Some(Strip {
                        label: w.name.clone(),
                        key: w.name.clone(),
                        values: pair_ratios(c),
                        center: Some(c.estimate.ratio),
                    })
                }).collect();
                h3 { (label) " vs " (rival) }
                (chart(strip(
                    &format!("pairs:{tag}"),
                    &items,
                    margin,
                    &format!("per-pair time ratio {label} / {rival}"),
                )))
            }
        }
    }
}

/// The hottest functions of the run's PGO profile: a bar per function, then the table.
fn hotspots(h: &Hotspots) -> Markup {
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
    html! {
        h2 id="hotspots" { "Hotspots" }
        p class="caption" {
            (format!("The hottest functions of the merged PGO profile, by their share of its counters summed (work done in the train workloads, not time): {} of {} functions ran, and these {} hold {:.1} %. More, by crate and module: ",
                h.functions_with_counts, h.functions_in_profile, h.functions.len(), h.listed_share() * 100.0))
            code { "cargo optimize hotspots" } "."
        }
        @if !h.functions.is_empty() {
            (chart(bars("hotspots", &rows, "share of the profile's counts (%)")))
            (hotspots_table(h))
        }
    }
}

/// The hotspots as a table (a calls column only when some are known).
fn hotspots_table(h: &Hotspots) -> Markup {
    let calls = h.any_calls();
    html! {
        table class="hotspots" {
            tr {
                th { "#" } th { "function" } th { "crate" } th { "share" }
                @if calls { th { "calls" } }
            }
            @for (i, f) in h.functions.iter().enumerate() {
                tr {
                    td class="num" { (i + 1) }
                    td { code { (f.name) } }
                    td { (f.crate_name) }
                    td class="num" { (format!("{:.1} %", f.share * 100.0)) }
                    @if calls { td class="num" { (calls_cell(f.entries)) } }
                }
            }
        }
        @if h.calls_unknown() { p class="caption" { (CALLS_UNKNOWN) } }
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

fn timeline(r: &Report) -> Markup {
    let steps: Vec<_> = r.pipeline.iter().filter(|p| p.step != "total").collect();
    let total = r
        .pipeline
        .iter()
        .find(|p| p.step == "total")
        .map(|p| p.seconds)
        .unwrap_or_else(|| steps.iter().map(|p| p.seconds).sum());
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
    html! {
        details class="maintainer" id="timeline" {
        summary { h2 { "Where the time went" } }
        @if steps.is_empty() {
            p { "The report has no timings." }
        } @else {
            p class="caption" {
                (format!("The pipeline's steps in order, {total:.1} s in all: "))
                span style="color:#8250df" { "builds" } ", "
                span style="color:#1a7f37" { "training" } ", "
                span style="color:#bf8700" { "verification" } ", "
                span style="color:#0969da" { "measuring" } "."
            }
            (chart(bars("timeline", &items, "seconds since the run started")))
        }
        }
    }
}

fn sizes(r: &Report) -> Markup {
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
    html! {
        h2 id="sizes" { "Binary sizes" }
        @if sized.is_empty() {
            p { "No sizes recorded." }
        } @else {
            (chart(bars("sizes", &sized, "KiB")))
        }
    }
}

fn memory(r: &Report) -> Markup {
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
    html! {
        details class="maintainer" id="memory" {
        summary { h2 { "Peak memory" } }
        @if mem.is_empty() {
            p { "No memory measurements." }
        } @else {
            p class="caption" {
                "Each candidate's peak resident memory: the median over its measured runs, the largest over the workloads. The tools' own peaks are in the timeline's labels."
            }
            (chart(bars("memory", &mem, "MiB")))
        }
        }
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

/// Every comparison of the run: (workload, candidate tag, comparison).
fn comparisons(r: &Report) -> Vec<(&str, &str, &Comparison)> {
    r.workloads
        .iter()
        .flat_map(|w| {
            w.per_stage
                .iter()
                .map(move |(tag, c)| (w.name.as_str(), tag.as_str(), c))
        })
        .collect()
}

fn facts(r: &Report) -> Markup {
    let comps = comparisons(r);
    html! {
        h2 id="facts" { "Toolchain, machine and noise" }
        table {
            @for (k, v) in fact_rows(r, &comps) { tr { th { (k) } td { (v) } } }
        }
        @if !comps.is_empty() { (noise_table(&comps)) }
    }
}

/// The facts table's rows: toolchain, machine, CPU, BOLT's profile, counters, noise.
fn fact_rows(r: &Report, comps: &[(&str, &str, &Comparison)]) -> Vec<(&'static str, String)> {
    let t = &r.toolchain;
    let found = |p: &Option<String>| p.clone().unwrap_or_else(|| "not found".into());
    let mut rows = vec![
        ("rustc", t.rustc.clone()),
        ("LLVM", t.llvm.clone()),
        ("llvm-profdata", found(&t.llvm_profdata)),
        ("llvm-bolt", found(&t.llvm_bolt)),
        ("host", t.host.clone()),
    ];
    if let Some(m) = &r.machine {
        let mut cpu = m.cpu_model.clone().unwrap_or_else(|| "unknown CPU".into());
        if let Some(n) = m.logical_cpus {
            cpu.push_str(&format!(", {n} logical CPUs"));
        }
        if let Some(l) = &m.x86_64_level {
            cpu.push_str(&format!(", {l}"));
        }
        rows.push(("machine", cpu));
        let yes = if m.hardware_counters { "yes" } else { "no" };
        let detail = format!("{yes}: {}", m.hardware_counters_detail);
        rows.push(("hardware counters (this machine)", detail));
    }
    if let Some(cpu) = r.stages.iter().find_map(|s| s.facts.native_cpu.clone()) {
        rows.push(("CPU (LLVM's name for it)", cpu));
    }
    if let Some(bf) = r.stages.iter().find_map(|s| s.facts.bolt.as_ref()) {
        rows.push(("BOLT profile", format!("{}: {}", bf.mode, bf.mode_reason)));
    }
    if let Some((_, _, c)) = comps.first() {
        rows.push(("hardware counters (measuring)", c.counters_status.clone()));
    }
    let mut cvs: Vec<f64> = comps
        .iter()
        .flat_map(|(_, _, c)| [c.cv_a, c.cv_b])
        .filter(|v| v.is_finite())
        .collect();
    cvs.sort_by(f64::total_cmp);
    if let (Some(mid), Some(max)) = (cvs.get(cvs.len() / 2), cvs.last()) {
        let text = format!(
            "median {:.1} %, largest {:.1} % over {} comparisons",
            mid * 100.0,
            max * 100.0,
            comps.len()
        );
        rows.push(("noise (CV of run times)", text));
    }
    rows
}

/// Every comparison's pairs, medians, noise and outliers.
fn noise_table(comps: &[(&str, &str, &Comparison)]) -> Markup {
    html! {
        table class="noise" {
            tr {
                @for h in ["workload", "candidate", "pairs", "median A", "median B", "CV A",
                    "CV B", "outlier pairs", "note"] { th { (h) } }
            }
            @for (w, tag, c) in comps {
                tr {
                    td { (w) }
                    td { (tag) }
                    td class="num" { (c.n) }
                    td class="num" { (c.medians().0) }
                    td class="num" { (c.medians().1) }
                    td class="num" { (format!("{:.1} %", c.cv_a * 100.0)) }
                    td class="num" { (format!("{:.1} %", c.cv_b * 100.0)) }
                    td class="num" { (c.outliers.pairs) }
                    td { (c.noise_warning.as_deref().unwrap_or("")) }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::render::Render;

    #[test]
    fn hotspots_are_a_bar_chart_with_a_mark_per_function_and_a_table() {
        let b = super::hotspots(&crate::report::hotspots::sample()).into_string();
        assert!(b.starts_with("<h2 id=\"hotspots\">Hotspots</h2>"), "{b}");
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
        assert!(b.contains("<tr><td class=\"num\">1</td><td><code>demo::interp::Vm::run</code></td><td>demo</td><td class=\"num\">41.2 %</td><td class=\"num\">3</td></tr>"), "{b}");
        let again = super::hotspots(&crate::report::hotspots::sample()).into_string();
        assert_eq!(again, b);
    }

    #[test]
    fn a_stage_reason_is_escaped_line_by_line_with_its_notes() {
        let mut r: crate::report::Report = serde_json::from_str(include_str!(
            "../../tests/fixtures/reports/demo/report.json"
        ))
        .unwrap();
        r.stages[1].reason = "a <b>\n& \"c\"".into();
        r.stages[1].notes = vec!["<note>".into()];
        let page = super::HtmlRenderer.render(&r);
        assert!(
            page.contains("<td class=\"why\">a &lt;b&gt;<br>&amp; &quot;c&quot;<br><em>&lt;note&gt;</em></td>"),
            "{page}"
        );
        assert!(!page.contains("<b>") && !page.contains("<note>"));
    }
}
