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

/// The ladder as text (see [`print_ladder`]).
pub fn ladder(report: &super::Report, ui: &Ui) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\n{:<9} {:<9} {:<34} {:<34} {:>8} {:>10}",
        "stage",
        "status",
        "time vs previous best [95% CI]",
        "time vs baseline [95% CI]",
        "build s",
        "size"
    );
    for st in &report.stages {
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
            "{:<9} {} {:<34} {:<34} {:>8} {:>10}",
            st.name,
            painted,
            estimate_cell(st.vs_best.as_ref()),
            estimate_cell(st.vs_baseline.as_ref()),
            st.build_seconds
                .map(|b| format!("{b:.1}"))
                .unwrap_or_else(|| "-".into()),
            st.size_bytes.map(human_bytes).unwrap_or_else(|| "-".into()),
        );
        if matches!(
            st.status,
            super::Status::Rejected | super::Status::Failed | super::Status::Skipped
        ) {
            let first = st.reason.lines().next().unwrap_or("");
            let _ = writeln!(s, "{:<9} └ {first}", "");
        }
    }
    if let Some(f) = &report.final_ {
        let _ = writeln!(s);
        match (f.speedup_vs_baseline, f.speedup_ci) {
            (Some(x), Some((lo, hi))) => {
                let _ = writeln!(
                    s,
                    "ship: {} ({}) — measured {x:.2}× the baseline's speed [95% CI {lo:.2}–{hi:.2}×]",
                    f.binary, f.stage
                );
            }
            _ => {
                let _ = writeln!(
                    s,
                    "ship: {} ({}) — no stage was measurably faster than the baseline",
                    f.binary, f.stage
                );
            }
        }
    }
    s
}

fn estimate_cell(v: Option<&serde_json::Value>) -> String {
    let Some(v) = v else {
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
