//! What the user sees while work goes on: step lines, spinners, warnings, colour. All of it
//! goes to stderr so stdout stays clean for scripts (the ladder and reports print there).
//! Knows nothing of runs or reports; every layer above may use it.

use std::io::IsTerminal;
use std::time::Duration;

use anstyle::{AnsiColor, Style};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How chatty to be and whether to animate.
#[derive(Debug, Clone)]
pub struct Ui {
    pub quiet: bool,
    pub verbose: u8,
    pub animate: bool,
    pub color: bool,
}

/// The colours the tool uses, by meaning.
#[derive(Debug, Clone, Copy)]
pub enum Tone {
    Step,
    Good,
    Warn,
    Bad,
}

impl Tone {
    fn style(self) -> Style {
        let c = match self {
            Tone::Step => AnsiColor::Cyan,
            Tone::Good => AnsiColor::Green,
            Tone::Warn => AnsiColor::Yellow,
            Tone::Bad => AnsiColor::Red,
        };
        Style::new().fg_color(Some(c.into()))
    }
}

impl Ui {
    /// `color`: `Some(on)` forces it; `None` colours a terminal unless `NO_COLOR` is set.
    pub fn new(quiet: bool, verbose: u8, color: Option<bool>) -> Self {
        let tty = std::io::stderr().is_terminal();
        Ui {
            quiet,
            verbose,
            animate: tty && !quiet,
            color: color.unwrap_or(tty && std::env::var_os("NO_COLOR").is_none()),
        }
    }

    /// Silent, uncoloured, not animated (tests, and renderings for files).
    pub fn plain() -> Self {
        Ui {
            quiet: true,
            verbose: 0,
            animate: false,
            color: false,
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
            eprintln!("{} {msg}", self.paint("→", Tone::Step));
        }
    }

    /// One item of a step (`pgo: verifying [2/7] infer`): on a terminal only. A log gets
    /// the step's one line when it finishes ([`Ui::done`]).
    pub fn progress(&self, msg: &str) {
        if self.animate {
            eprintln!("{}", fit(&format!("{} {msg}", self.paint("→", Tone::Step))));
        }
    }

    /// A step finished.
    pub fn done(&self, msg: &str, seconds: f64) {
        if !self.quiet {
            let line = format!("{} {msg} ({seconds:.1}s)", self.paint("✓", Tone::Good));
            eprintln!("{}", fit(&line));
        }
    }

    pub fn info(&self, msg: &str) {
        if !self.quiet {
            eprintln!("{}", fit(&format!("  {msg}")));
        }
    }

    pub fn detail(&self, msg: &str) {
        if self.verbose > 0 && !self.quiet {
            eprintln!("  {msg}");
        }
    }

    pub fn warn(&self, msg: &str) {
        eprintln!(
            "{}",
            fit(&format!("{} {msg}", self.paint("warning:", Tone::Warn)))
        );
    }

    /// `s` in the tone's colour when colour is on.
    pub fn paint(&self, s: &str, tone: Tone) -> String {
        if self.color {
            let style = tone.style();
            format!("{style}{s}{style:#}")
        } else {
            s.to_string()
        }
    }
}

/// Each line of `text` wrapped to stderr's width when it is a terminal (a log keeps a
/// message on one line, for grep; the ladder on stdout is wrapped either way).
fn fit(text: &str) -> String {
    let Some(width) = console::Term::stderr()
        .size_checked()
        .map(|(_, cols)| usize::from(cols))
        .filter(|w| *w >= 40)
    else {
        return text.to_string();
    };
    text.lines()
        .map(|l| crate::util::wrap(l, width))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paint_only_with_colour() {
        let mut ui = Ui::plain();
        assert_eq!(ui.paint("x", Tone::Good), "x");
        ui.color = true;
        assert_eq!(ui.paint("x", Tone::Good), "\x1b[32mx\x1b[0m");
    }
}
