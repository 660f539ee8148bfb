//! The ladder as text: one row per stage, the three hottest functions of the PGO profile
//! (when the run made one), then what to ship. Printed to stdout by the
//! pipeline and by any command that shows a past run.

use super::shipped;
use super::text::{estimate_cell, portable_hint, settings_line, short_name, speedup_line, wrap};
use super::{FinalChoice, Hotspots, Report, StageReport, Status};
use crate::context::facts::Explained;
use crate::render::Render;
use crate::ui::{Tone, Ui};
use crate::util::human_bytes;

/// The ladder without colour, 80 columns wide (`cargo optimize report --format term`).
pub(crate) struct TerminalRenderer;

impl Render<Report> for TerminalRenderer {
    fn render(&self, report: &Report) -> String {
        ladder(report, &Ui::plain(), DEFAULT_WIDTH)
    }
}

/// The width lines are wrapped to when the terminal's is unknown.
pub(crate) const DEFAULT_WIDTH: usize = 80;

/// The ladder: one row per stage, then what to ship. Printed to stdout, wrapped to its
/// terminal's width (`COLUMNS`, else the terminal's, else 80).
pub(crate) fn print_ladder(report: &Report, ui: &Ui) {
    print!("{}", ladder(report, ui, terminal_width()));
}

/// `COLUMNS` when set, else stdout's terminal width, else [`DEFAULT_WIDTH`].
pub(crate) fn terminal_width() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .or_else(|| {
            console::Term::stdout()
                .size_checked()
                .map(|(_, cols)| usize::from(cols))
        })
        .filter(|w| *w >= 40)
        .unwrap_or(DEFAULT_WIDTH)
}

/// The ladder as text (see [`print_ladder`]): one row per stage (per candidate for the cpu
/// stage) with its time ratio against its rival; under a measured row what it was measured
/// against, how many workloads it was faster on, its ratio to the baseline when its rival
/// was another, and the noise warnings; under a row not kept, why; each profile setting's
/// own effect when `--explain` measured it; the shipped candidate per workload and its
/// resources against the baseline; then what to ship and the portable alternative. Paths
/// are relative to the workspace, lines wrapped to `width`.
pub(crate) fn ladder(report: &Report, ui: &Ui, width: usize) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let names: Vec<String> = report.stages.iter().map(StageReport::label).collect();
    // The cells take 62 columns; a name longer than what is left gets a line of its own.
    let cap = width.saturating_sub(62).max(5);
    let w = (names.iter().map(|n| n.chars().count()))
        .filter(|&n| n <= cap)
        .max()
        .unwrap_or(5)
        .max(5);
    let _ = writeln!(
        s,
        "\n{:<w$} {:<8} {:<33} {:>7} {:>10}",
        "stage", "status", "time ratio vs its rival [95% CI]", "build s", "size"
    );
    let coverage = report.profile_quality();
    for (st, name) in report.stages.iter().zip(&names) {
        table_row(&mut s, name, st, w, ui);
        let mut under = row_notes(report, st);
        if let Some((_, q)) = coverage.filter(|(row, _)| std::ptr::eq(*row, st)) {
            under.push(format!("profile: {}", q.describe()));
        }
        under.extend(given_profile_line(st));
        under.extend(st.facts.output_deviation.as_ref().map(|d| d.describe()));
        under.extend(
            (st.facts.cheaper_alternative.as_ref())
                .map(|c| format!("as fast within the margin and cheaper to build: {c}")),
        );
        for line in under {
            let _ = writeln!(s, "{:<w$} └ {line}", "");
        }
    }
    let noisy = report
        .stages
        .iter()
        .any(|st| shipped::noise(&shipped::of_row(report, st)).is_some());
    if noisy {
        let _ = writeln!(
            s,
            "noise: some comparisons were too noisy to decide: close other programs, raise max-time, or steady the workloads whose run time varies (report.html has each comparison's noise)"
        );
    }
    for st in &report.stages {
        if let Some(items) = &st.facts.explain {
            explain_block(&mut s, items);
        }
    }
    if let Some(f) = report.final_.as_ref().filter(|f| f.stage != "baseline") {
        shipped_block(&mut s, report, f);
    }
    if let Some(h) = &report.hotspots {
        s.push_str(&hotspots_lines(h));
    }
    if let Some(f) = &report.final_ {
        ship(&mut s, report, f);
    }
    let s = report.relative(&s);
    s.lines()
        .map(|l| wrap(l, width))
        .fold(String::new(), |acc, l| acc + &l + "\n")
}

/// One row of the ladder's table: name (on a line of its own when longer than `w`),
/// status, ratio to its rival, build time, size.
fn table_row(s: &mut String, name: &str, st: &StageReport, w: usize, ui: &Ui) {
    use std::fmt::Write;
    let status = format!("{:<8}", st.status.as_str());
    let painted = match st.status {
        Status::Kept => ui.paint(&status, Tone::Good),
        Status::Rejected | Status::Failed => ui.paint(&status, Tone::Bad),
        _ => status,
    };
    let name = match name.chars().count() > w {
        true => {
            let _ = writeln!(s, "{name}");
            ""
        }
        false => name,
    };
    let _ = writeln!(
        s,
        "{:<w$} {} {:<33} {:>7} {:>10}",
        name,
        painted,
        estimate_cell(st.vs_best.as_ref()),
        st.build_seconds
            .map(|b| format!("{b:.1}"))
            .unwrap_or_else(|| "-".into()),
        st.size_bytes.map(human_bytes).unwrap_or_else(|| "-".into()),
    );
}

/// The lines under a row: a measured row's rival, workloads and (when its rival was not the
/// baseline) its ratio to the baseline, then its noise warnings; a row not measured, why
/// it was not kept. A measured row's reason is not repeated (its cells say it), only what
/// the budget added to it.
fn row_notes(report: &Report, st: &StageReport) -> Vec<String> {
    let mut out = Vec::new();
    let Some(rival) = st.rival().filter(|_| st.vs_best.is_some()) else {
        if st.status != Status::Kept {
            out.push(st.reason.lines().next().unwrap_or("").to_string());
        }
        return out;
    };
    let comps = shipped::of_row(report, st);
    let mut line = format!("vs {rival}");
    if let Some(t) = shipped::tally(&comps) {
        line.push_str(&format!(": {t}"));
    }
    if rival != "baseline" {
        if let Some(e) = &st.vs_baseline {
            line.push_str(&format!("; vs baseline {}", estimate_cell(Some(e))));
        }
    }
    if let Some((_, budget)) = st.reason.lines().next().unwrap_or("").split_once("; ") {
        line.push_str(&format!("; {budget}"));
    }
    out.push(line);
    // What an allocator trades for its time (the ladder's note on an alloc row).
    out.extend(
        st.notes
            .iter()
            .filter(|n| n.starts_with(shipped::RESOURCES_NOTE) || n.starts_with(shipped::C_NOTE))
            .cloned(),
    );
    out.extend(shipped::noise(&comps).map(|n| format!("noise: {n}")));
    out
}

/// The shipped candidate against the baseline: each workload's median time old → new with
/// its ratio, then the resources it used (issue 28: user and system time, peak RSS,
/// counters), old → new.
fn shipped_block(s: &mut String, report: &Report, f: &FinalChoice) {
    use std::fmt::Write;
    let comps = shipped::against_baseline(report, f);
    if comps.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\n{} vs baseline, per workload (median time, baseline → {}):",
        f.label(),
        f.label()
    );
    let w = comps
        .iter()
        .map(|(n, _)| n.chars().count())
        .max()
        .unwrap_or(8);
    for (name, c) in &comps {
        let _ = writeln!(
            s,
            "  {name:<w$} {:>9} → {:>9}  {} [{:.3}, {:.3}] {} (n={})",
            c.medians().0,
            c.medians().1,
            format_args!("{:.3}", c.estimate.ratio),
            c.estimate.ci_low,
            c.estimate.ci_high,
            c.estimate.verdict,
            c.n
        );
        // A metric's workload: what the same pairs' wall times said, beside it.
        if let Some(m) = &c.metric {
            let _ = writeln!(s, "  {:<w$} {}", "", metric_line(m));
        }
    }
    let res: Vec<String> = shipped::resources(&comps)
        .iter()
        .map(|r| format!("{} {} → {} ({:.3})", r.name, r.old, r.new, r.ratio))
        .collect();
    if !res.is_empty() {
        let _ = writeln!(s, "  {}", res.join(", "));
    }
}

/// `the metric (ms, lower is better; benchmarks a, b); wall time 0.981 [0.95, 1.02]`.
fn metric_line(m: &crate::bench::comparison::MetricSummary) -> String {
    let unit = if m.unit.is_empty() {
        "no unit"
    } else {
        &m.unit
    };
    let better = match m.better {
        crate::spec::Better::Higher => "higher",
        crate::spec::Better::Lower => "lower",
    };
    let benchmarks = match m.benchmarks.is_empty() {
        true => String::new(),
        false => format!("; benchmarks {}", m.benchmarks.join(", ")),
    };
    format!(
        "the metric ({unit}, {better} is better{benchmarks}); wall time {:.3} [{:.3}, {:.3}]",
        m.wall_ratio, m.wall_interval[0], m.wall_interval[1]
    )
}

/// What to ship, the portable alternative and how to write it into the project.
fn ship(s: &mut String, report: &Report, f: &FinalChoice) {
    use std::fmt::Write;
    let _ = writeln!(s);
    let _ = writeln!(s, "ship: {} ({})", f.binary, f.label());
    let _ = writeln!(s, "  {}", speedup_line(f));
    let against = shipped::against_baseline(report, f);
    if let Some(slower) = shipped::slower_line(&against) {
        let _ = writeln!(s, "  {slower}");
    }
    if let Some(drift) = shipped::drift_line(&against) {
        let _ = writeln!(s, "  {drift}");
    }
    if let Some(size) = report.size_line(&f.binary) {
        let _ = writeln!(s, "  size {size}");
    }
    if let Some(settings) = &f.settings {
        let _ = writeln!(s, "  settings: {}", settings_line(settings));
    }
    if let Some(p) = f.portable.as_ref().filter(|_| f.stage != "baseline") {
        if p.binary == f.binary {
            let _ = writeln!(
                s,
                "portable: the same binary (it does not pick a CPU: runs on any {} machine)",
                report.toolchain.host
            );
        } else {
            let _ = writeln!(
                s,
                "portable alternative (no target-cpu, runs on any {} machine): {} ({})",
                report.toolchain.host,
                p.binary,
                p.label()
            );
            if p.stage == "baseline" {
                let _ = writeln!(
                    s,
                    "  your current build: no stage without a target-cpu was kept"
                );
            } else {
                let _ = writeln!(s, "  {}", speedup_line(p));
                let against = shipped::against_baseline(report, p);
                if let Some(slower) = shipped::slower_line(&against) {
                    let _ = writeln!(s, "  {slower}");
                }
                if let Some(size) = report.size_line(&p.binary) {
                    let _ = writeln!(s, "  size {size}");
                }
                if let Some(settings) = &p.settings {
                    let _ = writeln!(s, "  settings: {}", settings_line(settings));
                }
            }
            if let Some(hint) = portable_hint(report) {
                let _ = writeln!(s, "  {hint}");
            }
        }
    }
    if let Some(cpu) = f.apply_advice() {
        let portable_kept = f.portable.as_ref().is_some_and(|p| p.stage != "baseline");
        let _ = writeln!(
            s,
            "write it into the project: cargo optimize apply{}",
            match (cpu, portable_kept) {
                (false, _) => "",
                (true, true) => "   (the portable alternative; --cpu applies the winner, for this machine's CPU only)",
                (true, false) => " --cpu   (for this machine's CPU only: nothing that runs on any machine was faster)",
            }
        );
    }
}

/// `profile: <file> (given, not trained here); …`: where a row's profile came from when it
/// was given (`--pgo-profile`), and how much of it still fits the source.
fn given_profile_line(st: &StageReport) -> Option<String> {
    let src = st.facts.profile_source.as_ref()?;
    let fit = match &st.facts.profile_fit {
        Some(f) if f.foreign() => format!(
            "; it does not belong to this program ({} of its {} profiled function(s) are in it)",
            f.functions_in_program.unwrap_or(0),
            f.functions_compared.unwrap_or(0)
        ),
        Some(f) if f.changed_functions == 0 => {
            "; it fits this source (no profiled function changed)".to_string()
        }
        Some(f) => format!(
            "; stale: {}{} profiled function(s) changed since it was collected",
            f.changed_functions,
            f.profile_functions
                .map(|n| format!(" of {n}"))
                .unwrap_or_default()
        ),
        None => String::new(),
    };
    Some(format!(
        "profile: {} (given, not trained here){fit}",
        src.display()
    ))
}

/// Three lines on where the work is (report.json's `hotspots`): the three hottest
/// functions with their share, how much the listed ones hold, and where to see more.
pub(crate) fn hotspots_lines(h: &Hotspots) -> String {
    let top: Vec<String> = h
        .functions
        .iter()
        .take(3)
        .map(|f| format!("{} {:.0} %", short_name(&f.name, 60), f.share * 100.0))
        .collect();
    if top.is_empty() {
        return "\nhottest: no function has counts in the PGO profile\n".into();
    }
    format!(
        "\nhottest: {}\n  the top {} functions hold {:.1} % of the PGO profile's counts ({} of {} functions ran)\n  more: cargo optimize hotspots (by crate and module; --flamegraph samples the shipped binary with perf)\n",
        top.join(", "),
        h.functions.len(),
        h.listed_share() * 100.0,
        h.functions_with_counts,
        h.functions_in_profile
    )
}

/// Each profile setting alone against the baseline (`--explain`).
fn explain_block(s: &mut String, items: &[Explained]) {
    use std::fmt::Write;
    let _ = writeln!(
        s,
        "\nprofile settings, each alone vs the baseline (--explain):"
    );
    for it in items {
        let setting = format!("{} = {}", it.setting, it.value);
        let effect = if let Some(e) = &it.error {
            format!("not measured: {}", e.lines().next().unwrap_or(""))
        } else if it.same_code_as_baseline {
            "same machine code as the baseline (its profile already has it)".into()
        } else {
            estimate_cell(it.vs_baseline.as_ref())
        };
        let size = it.size_bytes.map(human_bytes).unwrap_or_else(|| "-".into());
        let _ = writeln!(s, "  {setting:<24} {size:>10}  {effect}");
    }
}

#[cfg(test)]
mod tests {
    use super::super::{FinalChoice, Report, Settings, StageReport, Status, ToolchainInfo};
    use super::*;
    use crate::bench::Estimate;
    use crate::bench::Verdict;

    fn settings(flags: &[&str], lto: bool) -> Settings {
        Settings {
            profile: "release".into(),
            profile_overrides: if lto {
                [("lto".to_string(), "\"fat\"".to_string())].into()
            } else {
                Default::default()
            },
            rustflags: flags.iter().map(|f| f.to_string()).collect(),
            stage_rustflags: flags.iter().map(|f| f.to_string()).collect(),
            user_rustflags: vec![],
            target: None,
            features: Default::default(),
            allocator: None,
            c: None,
        }
    }

    fn ui() -> Ui {
        Ui::plain()
    }

    fn row(name: &str, status: Status, variant: Option<&str>, flags: &[&str]) -> StageReport {
        let mut r = StageReport::without_candidate(name, status, format!("{name} reason"));
        r.settings = Some(settings(flags, true));
        r.binary = Some(format!("/run/bin/{name}"));
        r.vs_best = Some(Estimate {
            ratio: 0.9,
            ci_low: 0.85,
            ci_high: 0.95,
            verdict: Verdict::Faster,
            confidence: 0.95,
        });
        r.facts.variant = variant.map(str::to_string);
        r
    }

    fn choice(stage: &str, flags: &[&str], speedup: Option<f64>) -> FinalChoice {
        FinalChoice {
            stage: stage.into(),
            binary: format!("/run/bin/{stage}"),
            speedup_vs_baseline: speedup,
            speedup_ci: speedup.map(|x| (x - 0.1, x + 0.1)),
            at_selection: None,
            variant: None,
            settings: Some(settings(flags, false)),
            portable: None,
        }
    }

    #[test]
    fn three_lines_on_the_hottest_functions() {
        assert_eq!(
            hotspots_lines(&crate::report::hotspots::sample()),
            "\nhottest: demo::interp::Vm::run 41 %, <alloc::vec::Vec<T> as core::ops::Drop>::drop 25 %, demo::lex|tokens 10 %
  the top 3 functions hold 76.2 % of the PGO profile's counts (4 of 9 functions ran)
  more: cargo optimize hotspots (by crate and module; --flamegraph samples the shipped binary with perf)
"
        );
        assert_eq!(short_name("abcdefghij", 5), "ab…ij");
        assert_eq!(short_name("abcdefghij", 6), "ab…hij");
        assert_eq!(short_name("abc", 5), "abc");
    }

    #[test]
    fn ladder_rows_ship_and_portable_alternative() {
        let v4 = ["-Ctarget-cpu=x86-64-v4"];
        let pgo = ["-Ctarget-cpu=x86-64-v4", "-Cprofile-use=/p.profdata"];
        let mut fin = choice("pgo", &pgo, Some(1.14));
        fin.portable = Some(Box::new(choice("baseline", &[], None)));
        let report = Report {
            schema: 1,
            tool_version: "0".into(),
            run_id: "r".into(),
            crate_name: "c".into(),
            bin: "c".into(),
            toolchain: ToolchainInfo {
                rustc: "1".into(),
                llvm: "22.1.2".into(),
                llvm_profdata: None,
                llvm_bolt: None,
                host: "x86_64-unknown-linux-gnu".into(),
            },
            stages: vec![
                row("baseline", Status::Kept, None, &[]),
                row("profile", Status::Dropped, None, &[]),
                row("cpu", Status::Kept, Some("x86-64-v4"), &v4),
                row("cpu", Status::Skipped, Some("sapphirerapids"), &[]),
                row("pgo", Status::Kept, None, &pgo),
            ],
            workloads: vec![],
            final_: Some(fin),
            pipeline: vec![],
            machine: None,
            verdict_cache: None,
            build_cache: None,
            compile_cache: None,
            quick: false,
            budget: None,
            source: None,
            confinement: None,
            hotspots: None,
        };
        let text = ladder(&report, &ui(), 200);
        let line = |start: &str| {
            text.lines()
                .find(|l| l.starts_with(start))
                .unwrap_or_else(|| panic!("no `{start}` line in\n{text}"))
                .to_string()
        };
        assert!(line("cpu (x86-64-v4) ").contains("kept"), "{text}");
        assert!(line("cpu (sapphirerapids) ").contains("skipped"), "{text}");
        assert!(text.contains("└ sapphirerapids reason") || text.contains("└ cpu reason"));
        assert!(
            line("pgo ").contains("0.900 [0.850, 0.950] faster"),
            "{text}"
        );
        assert!(line("ship: /run/bin/pgo (pgo)").ends_with("(pgo)"));
        assert!(
            text.contains("time ratio 0.877 [0.806, 0.962] vs the baseline"),
            "{text}"
        );
        assert!(
            text.contains("settings: --profile release; rustflags: -Ctarget-cpu=x86-64-v4"),
            "{text}"
        );
        assert!(line("portable alternative").contains("/run/bin/baseline"));
        assert!(text.contains("your current build"), "{text}");
        assert!(
            text.contains("pgo built on the cpu candidate; for a portable build with it: cargo optimize --stages profile,pgo"),
            "{text}"
        );
        assert!(
            text.contains("cargo optimize apply --cpu   (for this machine"),
            "{text}"
        );
    }

    /// The ladder of the frozen demo report as a terminal shows it (colour, 100 columns)
    /// and as a log gets it (`report --format term`: no colour, 80 columns; the integration
    /// test `report::markdown_and_terminal_renderings_match_the_snapshots` checks that one
    /// too). `UPDATE_SNAPSHOTS=1` writes them anew; review the diff.
    #[test]
    fn ladder_snapshots_for_a_terminal_and_a_log() {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/reports/demo");
        let report: Report =
            serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap())
                .unwrap();
        let mut tty = Ui::plain();
        tty.color = true;
        for (file, text) in [
            ("ladder-tty.txt", ladder(&report, &tty, 100)),
            ("ladder.txt", TerminalRenderer.render(&report)),
        ] {
            if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
                std::fs::write(dir.join(file), &text).unwrap();
            }
            let want = std::fs::read_to_string(dir.join(file)).unwrap();
            assert!(text == want, "{file} differs:\n{text}");
        }
        let log = TerminalRenderer.render(&report);
        assert!(log.lines().all(|l| l.chars().count() <= 80), "{log}");
        // A name too long for the table's first column gets a line of its own.
        let mut long = report.clone();
        long.stages[1].facts.variant = Some("--enable-no-signed-zeros-fp-math".into());
        let text = ladder(&long, &Ui::plain(), 80);
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
        let label = long.stages[1].label();
        assert!(text.lines().any(|l| l == label), "{text}");
        assert!(!log.contains("/home/dev/demo/"), "{log}");
        assert!(!log.contains("└ pgo vs"), "a row repeated: {log}");
        assert!(log.contains("tokenize         188 ms →    171 ms"), "{log}");
        assert!(
            log.contains("└ noise: too noisy to decide on 1 of 2 workloads (tokenize)"),
            "{log}"
        );
        assert!(
            log.contains("faster on 2 of 2 workloads, none slower"),
            "{log}"
        );
    }
}
