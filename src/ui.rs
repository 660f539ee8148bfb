//! What the user sees while work goes on: step lines, spinners, warnings, colour. All of it
//! goes to stderr so stdout stays clean for scripts (the ladder and reports print there);
//! with `--message-format json`, [`Ui::event`] writes one JSON object per line to stdout
//! (docs/src/message-format.md). Colour is decided once per stream through `anstream`:
//! `--color`/`CARGO_TERM_COLOR` force it ([`set_color_choice`]), else a terminal is
//! coloured unless `NO_COLOR`, and `CLICOLOR_FORCE` colours any stream.
//! Knows nothing of runs or reports; every layer above may use it.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use anstream::ColorChoice;

use anstyle::{AnsiColor, Style};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How chatty to be and whether to animate.
#[derive(Debug, Clone)]
pub(crate) struct Ui {
    pub quiet: bool,
    pub verbose: u8,
    pub animate: bool,
    pub color: bool,
    /// `--message-format json`: [`Ui::event`] prints events on stdout.
    pub events: bool,
}

/// Force colour on or off for every stream (`Some`), or leave it to each stream (`None`).
pub(crate) fn set_color_choice(forced: Option<bool>) {
    let choice = match forced {
        Some(true) => ColorChoice::Always,
        Some(false) => ColorChoice::Never,
        None => ColorChoice::Auto,
    };
    choice.write_global();
}

/// Whether text written to stdout is coloured (`forced`, else the global choice and the
/// environment, see the module doc).
pub(crate) fn stdout_color(forced: Option<bool>) -> bool {
    forced.unwrap_or_else(|| anstream::AutoStream::choice(&std::io::stdout()) != ColorChoice::Never)
}

/// The colours the tool uses, by meaning.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Tone {
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
    pub(crate) fn new(quiet: bool, verbose: u8, color: Option<bool>) -> Self {
        let tty = std::io::stderr().is_terminal();
        Ui {
            quiet,
            verbose,
            animate: tty && !quiet,
            color: color.unwrap_or_else(|| {
                anstream::AutoStream::choice(&std::io::stderr()) != ColorChoice::Never
            }),
            events: false,
        }
    }

    /// Silent, uncoloured, not animated (tests, and renderings for files).
    pub(crate) fn plain() -> Self {
        Ui {
            quiet: true,
            verbose: 0,
            animate: false,
            color: false,
            events: false,
        }
    }

    /// One event of `kind` with `fields` (an object) as a line of JSON on stdout, when
    /// `--message-format json` asked for events; `{"event": kind, …fields}`.
    pub(crate) fn event(&self, kind: &str, fields: serde_json::Value) {
        if !self.events {
            return;
        }
        let line = event_line(kind, fields);
        let mut out = std::io::stdout().lock();
        // A closed stdout ends nothing here: the run's results are in its folder.
        let _ = writeln!(out, "{line}").and_then(|()| out.flush());
    }

    /// `--message-format json`'s last line when the command fails: the `error` event, with
    /// the message stderr gets and the exit code (a program reading stdout alone learns why).
    pub(crate) fn error_event(&self, message: &str) {
        let events = Ui {
            events: true,
            ..self.clone()
        };
        let fields = serde_json::json!({ "message": message, "exit_code": 2 });
        events.event("error", fields);
    }

    /// A spinner for long work; a no-op when not on a terminal.
    pub(crate) fn spinner(&self, msg: impl Into<String>) -> ProgressBar {
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
    pub(crate) fn step(&self, msg: &str) {
        if !self.quiet {
            eprintln!("{} {msg}", self.paint("→", Tone::Step));
        }
    }

    /// One item of a step (`pgo: verifying [2/7] infer`): on a terminal only. A log gets
    /// the step's one line when it finishes ([`Ui::done`]).
    pub(crate) fn progress(&self, msg: &str) {
        if self.animate {
            eprintln!("{}", fit(&format!("{} {msg}", self.paint("→", Tone::Step))));
        }
    }

    /// A step finished.
    pub(crate) fn done(&self, msg: &str, seconds: f64) {
        if !self.quiet {
            let line = format!("{} {msg} ({seconds:.1}s)", self.paint("✓", Tone::Good));
            eprintln!("{}", fit(&line));
        }
    }

    pub(crate) fn info(&self, msg: &str) {
        if !self.quiet {
            eprintln!("{}", fit(&format!("  {msg}")));
        }
    }

    pub(crate) fn detail(&self, msg: &str) {
        if self.verbose > 0 && !self.quiet {
            eprintln!("  {msg}");
        }
    }

    pub(crate) fn warn(&self, msg: &str) {
        eprintln!(
            "{}",
            fit(&format!("{} {msg}", self.paint("warning:", Tone::Warn)))
        );
    }

    /// `s` in the tone's colour when colour is on.
    pub(crate) fn paint(&self, s: &str, tone: Tone) -> String {
        if self.color {
            let style = tone.style();
            format!("{style}{s}{style:#}")
        } else {
            s.to_string()
        }
    }
}

/// `{"event": kind, …fields}` on one line: `event` first, then the fields in key order.
fn event_line(kind: &str, fields: serde_json::Value) -> String {
    let kind = serde_json::Value::from(kind);
    match fields {
        serde_json::Value::Object(f) if !f.is_empty() => {
            let rest = serde_json::Value::Object(f).to_string();
            format!("{{\"event\":{kind},{}", &rest[1..])
        }
        _ => format!("{{\"event\":{kind}}}"),
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
    fn events_are_one_object_per_line_event_first() {
        let l = event_line("built", serde_json::json!({"z": 1, "a": "x\ny"}));
        assert_eq!(l, r#"{"event":"built","a":"x\ny","z":1}"#);
        let v: serde_json::Value = serde_json::from_str(&l).unwrap();
        assert_eq!(v["a"], "x\ny");
        assert_eq!(
            event_line("ship", serde_json::json!({})),
            r#"{"event":"ship"}"#
        );
    }

    #[test]
    fn paint_only_with_colour() {
        let mut ui = Ui::plain();
        assert_eq!(ui.paint("x", Tone::Good), "x");
        ui.color = true;
        assert_eq!(ui.paint("x", Tone::Good), "\x1b[32mx\x1b[0m");
    }
}
