//! Terminal output: progress spinners, step lines, warnings, and the final ladder table.
//! Everything goes to stderr except the ladder, so stdout stays clean for scripts.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::cli::{Color, GlobalArgs};

/// How chatty to be and whether to animate.
#[derive(Debug, Clone)]
pub struct Ui {
    pub quiet: bool,
    pub verbose: u8,
    pub animate: bool,
    pub color: bool,
}

impl Ui {
    pub fn new(g: &GlobalArgs) -> Self {
        let tty = std::io::stderr().is_terminal();
        let color = match g.color {
            Color::Always => true,
            Color::Never => false,
            Color::Auto => tty && std::env::var_os("NO_COLOR").is_none(),
        };
        Ui {
            quiet: g.quiet,
            verbose: g.verbose,
            animate: tty && !g.quiet,
            color,
        }
    }

    /// A spinner for long work; a no-op when not on a terminal.
    pub fn spinner(&self, msg: impl Into<String>) -> ProgressBar {
        if !self.animate {
            return ProgressBar::hidden();
        }
        let pb = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        pb.set_style(
            ProgressStyle::with_template("{spinner} {msg} [{elapsed}]")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        pb.set_message(msg.into());
        pb.enable_steady_tick(Duration::from_millis(120));
        pb
    }

    /// A step started (printed even without a terminal, so logs show progress).
    pub fn step(&self, msg: &str) {
        if !self.quiet {
            eprintln!("{} {msg}", self.paint("→", "36"));
        }
    }

    /// A step finished.
    pub fn done(&self, msg: &str, seconds: f64) {
        if !self.quiet {
            eprintln!("{} {msg} ({seconds:.1}s)", self.paint("✓", "32"));
        }
    }

    pub fn info(&self, msg: &str) {
        if !self.quiet {
            eprintln!("  {msg}");
        }
    }

    pub fn detail(&self, msg: &str) {
        if self.verbose > 0 && !self.quiet {
            eprintln!("  {msg}");
        }
    }

    pub fn warn(&self, msg: &str) {
        eprintln!("{} {msg}", self.paint("warning:", "33"));
    }

    pub fn paint(&self, s: &str, code: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
}

/// The ladder: one row per stage, then what to ship. Printed to stdout.
pub fn print_ladder(report: &super::Report, ui: &Ui) {
    print!("{}", ladder(report, ui));
}

/// The ladder as text (see [`print_ladder`]): one row per stage (per candidate for the cpu
/// stage), why each non-kept row was not kept, each profile setting's own effect when
/// `--explain` measured it, then what to ship and the portable alternative.
pub fn ladder(report: &super::Report, ui: &Ui) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let names: Vec<String> = report.stages.iter().map(row_name).collect();
    let w = names
        .iter()
        .map(|n| n.chars().count())
        .max()
        .unwrap_or(5)
        .max(5);
    let _ = writeln!(
        s,
        "\n{:<w$} {:<9} {:<36} {:<36} {:>8} {:>10}",
        "stage",
        "status",
        "time vs previous best [95% CI]",
        "time vs baseline [95% CI]",
        "build s",
        "size"
    );
    for (st, name) in report.stages.iter().zip(&names) {
        let status = format!("{:?}", st.status).to_lowercase();
        let painted = match st.status {
            super::Status::Kept => ui.paint(&format!("{status:<9}"), "32"),
            super::Status::Rejected | super::Status::Failed => {
                ui.paint(&format!("{status:<9}"), "31")
            }
            _ => format!("{status:<9}"),
        };
        let _ = writeln!(
            s,
            "{:<w$} {} {:<36} {:<36} {:>8} {:>10}",
            name,
            painted,
            estimate_cell(st.vs_best.as_ref()),
            estimate_cell(st.vs_baseline.as_ref()),
            st.build_seconds
                .map(|b| format!("{b:.1}"))
                .unwrap_or_else(|| "-".into()),
            st.size_bytes.map(human_bytes).unwrap_or_else(|| "-".into()),
        );
        if st.status != super::Status::Kept {
            let first = st.reason.lines().next().unwrap_or("");
            let _ = writeln!(s, "{:<w$} └ {first}", "");
        }
    }
    for st in &report.stages {
        if let Some(items) = st.facts.get("explain").and_then(|e| e.as_array()) {
            explain_block(&mut s, items);
        }
    }
    if let Some(f) = &report.final_ {
        let _ = writeln!(s);
        let _ = writeln!(s, "ship: {} ({})", f.binary, final_name(f));
        let _ = writeln!(s, "  {}", speedup_line(f));
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
                    final_name(p)
                );
                if p.stage == "baseline" {
                    let _ = writeln!(
                        s,
                        "  your current build: no stage without a target-cpu was kept"
                    );
                } else {
                    let _ = writeln!(s, "  {}", speedup_line(p));
                    if let Some(settings) = &p.settings {
                        let _ = writeln!(s, "  settings: {}", settings_line(settings));
                    }
                }
                if let Some(hint) = portable_hint(report) {
                    let _ = writeln!(s, "  {hint}");
                }
            }
        }
        if f.stage != "baseline" {
            let cpu = f
                .settings
                .as_ref()
                .map(|v| string_list(v, "stage_rustflags"))
                .is_some_and(|flags| crate::stage::target_cpu_of(&flags).is_some());
            let _ = writeln!(
                s,
                "write it into the project: cargo optimize apply{}",
                if cpu {
                    "   (add --cpu to also write its target-cpu, for this machine's CPU only)"
                } else {
                    ""
                }
            );
        }
    }
    s
}

/// Stages kept on top of a cpu candidate are missing from the portable alternative: say
/// which, and how to get a portable build with them.
fn portable_hint(report: &super::Report) -> Option<String> {
    let on_cpu: Vec<&str> = report
        .stages
        .iter()
        .filter(|st| st.status == super::Status::Kept && st.name != "cpu")
        .filter(|st| {
            st.settings.as_ref().is_some_and(|v| {
                crate::stage::target_cpu_of(&string_list(v, "stage_rustflags")).is_some()
            })
        })
        .map(|st| st.name.as_str())
        // A stage whose own portable variant was kept needs no hint (pgo (portable)).
        .filter(|n| {
            report
                .final_
                .as_ref()
                .and_then(|f| f.portable.as_ref())
                .is_none_or(|p| p.stage != *n)
        })
        .collect();
    if on_cpu.is_empty() {
        return None;
    }
    let mut without_cpu: Vec<&str> = Vec::new();
    for st in &report.stages {
        let n = st.name.as_str();
        if n != "baseline" && n != "cpu" && !without_cpu.contains(&n) {
            without_cpu.push(n);
        }
    }
    Some(format!(
        "({} built on the cpu candidate; for a portable build with {}: cargo optimize --stages {})",
        on_cpu.join(" and "),
        if on_cpu.len() == 1 { "it" } else { "them" },
        without_cpu.join(",")
    ))
}

/// `cpu (x86-64-v3)` for a stage row with a variant, else the stage name.
fn row_name(st: &super::StageReport) -> String {
    match st.facts.get("variant").and_then(|v| v.as_str()) {
        Some(v) => format!("{} ({v})", st.name),
        None => st.name.clone(),
    }
}

fn final_name(f: &super::FinalChoice) -> String {
    match &f.variant {
        Some(v) => format!("{} ({v})", f.stage),
        None => f.stage.clone(),
    }
}

fn speedup_line(f: &super::FinalChoice) -> String {
    match (f.speedup_vs_baseline, f.speedup_ci) {
        (Some(x), Some((lo, hi))) => {
            format!("measured {x:.2}× the baseline's speed [95% CI {lo:.2}–{hi:.2}×]")
        }
        _ if f.stage == "baseline" => {
            "no stage was measurably faster than the baseline: keep building as you do".into()
        }
        _ => "not measured against the baseline".into(),
    }
}

/// `--profile release + lto = "fat", codegen-units = 1; rustflags: -Ctarget-cpu=native`.
fn settings_line(v: &serde_json::Value) -> String {
    let profile = v.get("profile").and_then(|p| p.as_str()).unwrap_or("?");
    let mut out = format!("--profile {profile}");
    if let Some(o) = v.get("profile_overrides").and_then(|o| o.as_object()) {
        if !o.is_empty() {
            let list: Vec<String> = o
                .iter()
                .map(|(k, v)| format!("{k} = {}", v.as_str().unwrap_or("?")))
                .collect();
            out.push_str(&format!(" + {}", list.join(", ")));
        }
    }
    let flags = string_list(v, "stage_rustflags");
    if !flags.is_empty() {
        out.push_str(&format!("; rustflags: {}", flags.join(" ")));
    }
    out
}

fn string_list(v: &serde_json::Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(|f| f.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Each profile setting alone against the baseline (`--explain`).
fn explain_block(s: &mut String, items: &[serde_json::Value]) {
    use std::fmt::Write;
    let _ = writeln!(
        s,
        "\nprofile settings, each alone vs the baseline (--explain):"
    );
    for it in items {
        let text = |k: &str| it.get(k).and_then(|v| v.as_str()).unwrap_or("");
        let setting = format!("{} = {}", text("setting"), text("value"));
        let effect = if let Some(e) = it.get("error").and_then(|v| v.as_str()) {
            format!("not measured: {}", e.lines().next().unwrap_or(""))
        } else if it.get("same_code_as_baseline") == Some(&serde_json::Value::Bool(true)) {
            "same machine code as the baseline (its profile already has it)".into()
        } else {
            estimate_cell(it.get("vs_baseline"))
        };
        let size = it
            .get("size_bytes")
            .and_then(|v| v.as_u64())
            .map(human_bytes)
            .unwrap_or_else(|| "-".into());
        let _ = writeln!(s, "  {setting:<24} {size:>10}  {effect}");
    }
}

fn estimate_cell(v: Option<&serde_json::Value>) -> String {
    let Some(v) = v.filter(|v| !v.is_null()) else {
        return "-".into();
    };
    let num = |k: &str| v.get(k).and_then(|x| x.as_f64()).unwrap_or(f64::NAN);
    format!(
        "{:.3} [{:.3}, {:.3}] {}",
        num("ratio"),
        num("ci_low"),
        num("ci_high"),
        v.get("verdict").and_then(|x| x.as_str()).unwrap_or("?")
    )
}

/// `1234567` → `1.2 MiB`.
pub fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    use super::super::{FinalChoice, Report, StageReport, Status, ToolchainInfo};
    use super::*;

    fn ui() -> Ui {
        Ui {
            quiet: true,
            verbose: 0,
            animate: false,
            color: false,
        }
    }

    fn row(name: &str, status: Status, variant: Option<&str>, flags: &[&str]) -> StageReport {
        let mut r = StageReport::without_candidate(name, status, format!("{name} reason"));
        r.settings = Some(serde_json::json!({
            "profile": "release",
            "profile_overrides": { "lto": "\"fat\"" },
            "stage_rustflags": flags,
        }));
        r.binary = Some(format!("/run/bin/{name}"));
        r.vs_best = Some(serde_json::json!({
            "ratio": 0.9, "ci_low": 0.85, "ci_high": 0.95, "verdict": "faster"
        }));
        if let Some(v) = variant {
            r.facts.insert("variant".into(), v.into());
        }
        r
    }

    fn choice(stage: &str, flags: &[&str], speedup: Option<f64>) -> FinalChoice {
        FinalChoice {
            stage: stage.into(),
            binary: format!("/run/bin/{stage}"),
            speedup_vs_baseline: speedup,
            speedup_ci: speedup.map(|x| (x - 0.1, x + 0.1)),
            variant: None,
            settings: Some(serde_json::json!({
                "profile": "release",
                "profile_overrides": {},
                "stage_rustflags": flags,
            })),
            portable: None,
        }
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
        };
        let text = ladder(&report, &ui());
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
            text.contains("measured 1.14× the baseline's speed"),
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
        assert!(text.contains("cargo optimize apply   (add --cpu"), "{text}");
    }
}
