//! The report in GitHub-flavoured Markdown, for a PR comment or `$GITHUB_STEP_SUMMARY`:
//! the ladder table, what to ship (settings, portable alternative, the apply command), the
//! rows that were not kept with their reasons, the shipped candidate against the baseline
//! per workload and its resources, the hotspots of the PGO profile (only when asked:
//! `report --format md --hotspots`), and the per-workload results in a `<details>` block
//! (the confidence level of each interval explained in one footnote). Paths are relative
//! to the workspace.

use std::fmt::Write as _;

use super::hotspots::{calls_cell, CALLS_UNKNOWN};
use super::text::{estimate_cell, portable_hint, settings_line, speedup_line};
use super::{Hotspots, Report, Status};
use crate::render::{markdown_cell as cell, markdown_code as code, Render};
use crate::util::human_bytes;

pub(crate) struct MarkdownRenderer {
    /// Include the hotspots table.
    pub hotspots: bool,
}

impl Render<Report> for MarkdownRenderer {
    fn render(&self, report: &Report) -> String {
        report.relative(&render(report, self.hotspots))
    }
}

fn render(r: &Report, with_hotspots: bool) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "## cargo-optimize: `{}` ({})\n",
        code(&r.bin),
        cell(&r.crate_name)
    );
    let _ = writeln!(
        s,
        "Run `{}`, cargo-optimize {}, {}, LLVM {}, host `{}`.\n",
        code(&r.run_id),
        cell(&r.tool_version),
        cell(&r.toolchain.rustc),
        cell(&r.toolchain.llvm),
        code(&r.toolchain.host)
    );
    if let Some(m) = &r.machine {
        let _ = writeln!(
            s,
            "Machine: {}{}{}; hardware counters: {}.\n",
            cell(m.cpu_model.as_deref().unwrap_or("unknown CPU")),
            m.logical_cpus
                .map(|n| format!(", {n} logical CPUs"))
                .unwrap_or_default(),
            m.x86_64_level
                .as_deref()
                .map(|l| format!(", {l}"))
                .unwrap_or_default(),
            if m.hardware_counters { "yes" } else { "no" }
        );
    }
    if let Some(src) = &r.source {
        let _ = writeln!(s, "{}\n", cell(&source_line(src)));
    }
    ship(&mut s, r);
    ladder(&mut s, r);
    not_kept(&mut s, r);
    coverage(&mut s, r);
    shipped(&mut s, r);
    if let Some(h) = r.hotspots.as_ref().filter(|_| with_hotspots) {
        hotspots(&mut s, h);
    }
    workloads(&mut s, r);
    s
}

/// The ladder's table, a row per stage, and how to read it.
fn ladder(s: &mut String, r: &Report) {
    let _ = writeln!(
        s,
        "| stage | status | vs | time ratio vs it [95% CI] | time ratio vs baseline [95% CI] | build s | size |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---:|---:|");
    for st in &r.stages {
        let status = match st.status {
            Status::Kept => "**kept**".to_string(),
            other => other.as_str().to_string(),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} |",
            cell(&st.label()),
            status,
            cell(&st.rival().unwrap_or_else(|| "-".into())),
            estimate_cell(st.vs_best.as_ref()),
            estimate_cell(st.vs_baseline.as_ref()),
            st.build_seconds
                .map(|b| format!("{b:.1}"))
                .unwrap_or_else(|| "-".into()),
            st.size_bytes.map(human_bytes).unwrap_or_else(|| "-".into()),
        );
    }
    let _ = writeln!(
        s,
        "\nA ratio is the candidate's time over the reference's (below 1 is faster); a stage is kept only when it is *faster* than the candidate it is measured against (`vs`: the best before it)."
    );
}

/// The rows not kept, each with its reason line by line and its notes.
fn not_kept(s: &mut String, r: &Report) {
    let not_kept: Vec<_> = r
        .stages
        .iter()
        .filter(|st| st.status != Status::Kept)
        .collect();
    if !not_kept.is_empty() {
        let _ = writeln!(s, "\n**Not kept**\n");
        for st in not_kept {
            let mut lines = st.reason.lines();
            let first = lines.next().unwrap_or("");
            let _ = writeln!(
                s,
                "- {} — {}: {}",
                cell(&st.label()),
                st.status.as_str(),
                cell(first)
            );
            for more in lines.filter(|l| !l.trim().is_empty()) {
                let _ = writeln!(s, "  {}", cell(more.trim()));
            }
            for note in &st.notes {
                let _ = writeln!(s, "  (note: {})", cell(note));
            }
        }
    }
}

/// The PGO profile's eval coverage and the hot eval code training missed.
fn coverage(s: &mut String, r: &Report) {
    let Some((row, q)) = r.profile_quality() else {
        return;
    };
    let _ = writeln!(s, "\n**Profile coverage** ({})\n", cell(&row.label()));
    let _ = writeln!(s, "{}.", cell(&q.describe()));
    if q.untrained_hot.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\n| hot in eval, untrained | eval share | train share | hottest in eval workload |"
    );
    let _ = writeln!(s, "|---|---:|---:|---|");
    for u in &q.untrained_hot {
        let _ = writeln!(
            s,
            "| `{}` | {:.1} % | {:.2} % | {} |",
            code(&u.function),
            u.eval_share * 100.0,
            u.train_share * 100.0,
            cell(&u.workload)
        );
    }
    let _ = writeln!(
        s,
        "\nEach eval workload weighs the same; a function is listed when training ran it under 1/20 of its eval share. Add train workloads like the ones named."
    );
}

/// The hottest functions of the run's PGO profile.
fn hotspots(s: &mut String, h: &Hotspots) {
    let _ = writeln!(
        s,
        "\n### Hotspots\n\nThe hottest functions of the merged PGO profile: {} of {} functions ran, and these {} hold {:.1} % of its counters (work done in the train workloads, not time). More: `cargo optimize hotspots`.\n",
        h.functions_with_counts,
        h.functions_in_profile,
        h.functions.len(),
        h.listed_share() * 100.0
    );
    if h.functions.is_empty() {
        return;
    }
    let calls = |c: &str| {
        if h.any_calls() {
            format!(" {c} |")
        } else {
            String::new()
        }
    };
    let _ = writeln!(
        s,
        "| # | function | crate | share |{}\n|---:|---|---|---:|{}",
        calls("calls"),
        if h.any_calls() { "---:|" } else { "" }
    );
    for (i, f) in h.functions.iter().enumerate() {
        let _ = writeln!(
            s,
            "| {} | `{}` | {} | {:.1} % |{}",
            i + 1,
            code(&f.name),
            cell(&f.crate_name),
            f.share * 100.0,
            calls(&calls_cell(f.entries))
        );
    }
    if h.calls_unknown() {
        let _ = writeln!(s, "\n{}", cell(&format!("({CALLS_UNKNOWN})")));
    }
}

fn ship(s: &mut String, r: &Report) {
    let Some(f) = &r.final_ else {
        return;
    };
    let _ = writeln!(s, "**Ship `{}`**: {}.\n", code(&f.label()), speedup_line(f));
    let _ = writeln!(s, "- binary: `{}`", code(&f.binary));
    let against = super::shipped::against_baseline(r, f);
    if let Some(slower) = super::shipped::slower_line(&against) {
        let _ = writeln!(s, "- {}", cell(&slower));
    }
    if let Some(drift) = super::shipped::drift_line(&against) {
        let _ = writeln!(s, "- {}", cell(&drift));
    }
    if let Some(size) = r.size_line(&f.binary) {
        let _ = writeln!(s, "- size: {}", cell(&size));
    }
    if let Some(v) = &f.settings {
        let _ = writeln!(s, "- settings: `{}`", code(&settings_line(v)));
    }
    if let Some(p) = f.portable.as_ref().filter(|_| f.stage != "baseline") {
        if p.binary == f.binary {
            let _ = writeln!(
                s,
                "- portable: the same binary (it picks no CPU: runs on any `{}` machine)",
                code(&r.toolchain.host)
            );
        } else {
            let _ = writeln!(
                s,
                "- portable alternative (no target-cpu, runs on any `{}` machine): `{}` — {}",
                code(&r.toolchain.host),
                code(&p.label()),
                if p.stage == "baseline" {
                    "your current build: no stage without a target-cpu was kept".to_string()
                } else {
                    speedup_line(p)
                }
            );
            if let Some(hint) = portable_hint(r) {
                let _ = writeln!(s, "  {}", cell(&hint));
            }
        }
    }
    if let Some(cpu) = f.apply_advice() {
        let _ = writeln!(
            s,
            "- write it into the project: `cargo optimize apply`{}",
            if cpu {
                " (the portable alternative; `--cpu` applies the winner, for this machine's CPU only)"
            } else {
                ""
            }
        );
    }
    let _ = writeln!(s);
}

/// `Run started 2026-11-01T12:00:00Z on commit 3f2a9c1e8b7d (with uncommitted changes).`
pub(crate) fn source_line(src: &super::RunSource) -> String {
    let commit = match (&src.git_commit, src.git_dirty) {
        (Some(c), Some(true)) => format!(
            " on commit {} (with uncommitted changes)",
            crate::util::clip(c, 12)
        ),
        (Some(c), _) => format!(" on commit {}", crate::util::clip(c, 12)),
        (None, _) => " (not a git work tree)".to_string(),
    };
    format!("Run started {}{commit}.", src.started)
}

/// The shipped candidate against the baseline: each workload's median time and ratio, then
/// its resources (user and system time, peak RSS, hardware counters), old → new.
fn shipped(s: &mut String, r: &Report) {
    let Some(f) = r.final_.as_ref().filter(|f| f.stage != "baseline") else {
        return;
    };
    let comps = super::shipped::against_baseline(r, f);
    if comps.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\n### `{}` against the baseline\n\n| workload | baseline (median) | `{}` (median) | time ratio [95% CI] |\n|---|---:|---:|---|",
        code(&f.label()),
        code(&f.label())
    );
    for (w, c) in &comps {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.3} [{:.3}, {:.3}] {} |",
            cell(w),
            c.medians().0,
            c.medians().1,
            c.estimate.ratio,
            c.estimate.ci_low,
            c.estimate.ci_high,
            c.estimate.verdict
        );
    }
    let res = super::shipped::resources(&comps);
    if !res.is_empty() {
        let _ = writeln!(
            s,
            "\n| resource (all workloads) | baseline | `{}` | ratio |\n|---|---:|---:|---:|",
            code(&f.label())
        );
        for x in res {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {:.3} |",
                cell(&x.name),
                cell(&x.old),
                cell(&x.new),
                x.ratio
            );
        }
    }
}

fn workloads(s: &mut String, r: &Report) {
    let measured: Vec<_> = r
        .workloads
        .iter()
        .filter(|w| !w.per_stage.is_empty())
        .collect();
    if measured.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\n<details><summary>Per-workload results ({} workloads)</summary>\n",
        measured.len()
    );
    let _ = writeln!(
        s,
        "| workload | candidate | vs | time ratio [CI] (level)[^levels] | verdict | pairs | median A | median B | CV A | CV B |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---:|---:|---:|---:|---:|");
    for w in measured {
        // In ladder order: the rows' tags, then any comparison no row names.
        let mut tags: Vec<String> = r.stages.iter().filter_map(|st| st.tag()).collect();
        tags.retain(|t| w.per_stage.contains_key(t));
        tags.dedup();
        for t in w.per_stage.keys() {
            if !tags.contains(t) {
                tags.push(t.clone());
            }
        }
        for tag in tags {
            let c = &w.per_stage[&tag];
            let row = r.stages.iter().find(|st| st.tag().as_deref() == Some(&tag));
            let label = row.map(|st| st.label()).unwrap_or_else(|| tag.clone());
            let rival = match row {
                Some(st) => st.rival(),
                None => tag
                    .ends_with(" vs baseline")
                    .then(|| "baseline".to_string()),
            }
            .unwrap_or_else(|| "-".into());
            let _ = writeln!(
                s,
                "| {} | {} | {} | {:.3} [{:.3}, {:.3}] ({:.1} %) | {} | {} | {} | {} | {:.1} % | {:.1} % |",
                cell(&w.name),
                cell(&label),
                cell(&rival),
                c.estimate.ratio,
                c.estimate.ci_low,
                c.estimate.ci_high,
                c.estimate.confidence * 100.0,
                c.estimate.verdict,
                c.n,
                c.medians().0,
                c.medians().1,
                c.cv_a * 100.0,
                c.cv_b * 100.0
            );
        }
    }
    let _ = writeln!(
        s,
        "\nA is the reference (the best before the candidate), B the candidate.\n\n</details>\n\n[^levels]: Each interval's confidence level. A comparison may stop at any of its looks, and each look spends part of the 5 % error the run allows, so a comparison that stopped early is held to a level above 95 %; the ladder's 95 % intervals combine them."
    );
}

#[cfg(test)]
mod tests {
    use crate::render::Render as _;

    #[test]
    fn a_commit_with_a_multibyte_character_at_the_cut_is_shortened_without_a_panic() {
        let src = crate::report::RunSource {
            started: "2026-11-01T12:00:00Z".into(),
            workspace: "/w".into(),
            git_commit: Some("0123456789aé-and-more".into()),
            git_dirty: Some(true),
        };
        let line = super::source_line(&src);
        assert!(line.contains(" on commit 0123456789a (with"), "{line}");
    }

    #[test]
    fn hotspots_only_when_asked() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let text =
            std::fs::read_to_string(dir.join("tests/fixtures/reports/demo/report.json")).unwrap();
        let mut r: crate::report::Report = serde_json::from_str(&text).unwrap();
        r.hotspots = Some(crate::report::hotspots::sample());
        let without = super::MarkdownRenderer { hotspots: false }.render(&r);
        let with = super::MarkdownRenderer { hotspots: true }.render(&r);
        assert!(!without.contains("### Hotspots"), "{without}");
        assert!(with.contains("### Hotspots"), "{with}");
    }

    #[test]
    fn the_hotspots_table() {
        let mut s = String::new();
        super::hotspots(&mut s, &crate::report::hotspots::sample());
        assert_eq!(
            s,
            "
### Hotspots

The hottest functions of the merged PGO profile: 4 of 9 functions ran, and these 3 hold 76.2 % of its counters (work done in the train workloads, not time). More: `cargo optimize hotspots`.

| # | function | crate | share | calls |
|---:|---|---|---:|---:|
| 1 | `demo::interp::Vm::run` | demo | 41.2 % | 3 |
| 2 | `<alloc::vec::Vec<T> as core::ops::Drop>::drop` | alloc | 25.0 % | - |
| 3 | `demo::lex\\|tokens` | demo | 10.0 % | 1200 |

(calls are not shown where the profile does not count them: rustc's PGO instrumentation counts the edges of a function's control flow, not its entries)
"
        );
    }
}
