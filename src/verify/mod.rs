//! Verification: does a candidate behave like the baseline?
//!
//! Owns the expect modes (`exact`, `exit-code`, `{ numeric = … }`, `{ numeric-abs = … }`,
//! `{ ignore = "regex" }`, with `sort-lines`, `stderr` and output `files`), the mismatch
//! report (workload, candidate, stream or file, first differing line with its number, both
//! values, and for numbers the error against the tolerance), the determinism check of the
//! baseline, and the crate's own tests as a verifier.
//!
//! Submodules: [`text`] and [`numeric`] compare bytes and never run anything; `observe`
//! runs workloads through `context::Context` (so through `process`); [`crate_tests`]
//! runs the tests through the `cargo` module; [`candidate`] records the baseline's outputs and
//! checks a candidate against them (what a release calls); `verifier` is what the ladder
//! holds: [`Verifier`], with one entry per phase of a candidate's check — before it is
//! measured, on its first timed run of each eval workload (the hook the bench engine
//! calls), after it is measured — sharing a [`TimedVerification`]; `deviation` how far a candidate's
//! numbers moved from the baseline's (the fp stage's rows).
//!
//! Every check says what it found as a `#[must_use]` outcome ([`Compared`],
//! [`crate_tests::Tested`], [`Checked`], [`Untimed`], [`Concluded`]); its error is a fault
//! (a run could not be made), never a difference.
//!
//! Must not: measure (the bench engine times; verify only compares what runs produced).

pub(crate) mod candidate;
pub(crate) mod crate_tests;
mod deviation;
pub(crate) mod numeric;
mod observe;
pub(crate) mod text;
mod verifier;

use std::path::{Path, PathBuf};

pub(crate) use candidate::{check_candidate, record_baseline, Checked};
pub(crate) use crate_tests::TestFailure;
pub(crate) use observe::{
    check_determinism, observe, observed_from, spool_for, Compared, Nondeterminism, Reference,
};
pub(crate) use verifier::{Concluded, TimedVerification, Untimed, Verifier};

use crate::process::{ExitStatus, Outcome, ProcessError};
use crate::spec::{Expect, Workload};
use numeric::{NumericDiff, Tolerance};
use text::{LineMode, Rules, TextDiff};

/// What one run of a workload produced: its outcome and the output files it declared.
#[derive(Debug, Clone)]
pub(crate) struct Observed {
    pub outcome: Outcome,
    /// One entry per declared file, in the spec's order.
    pub files: Vec<OutputFile>,
    /// Where the outputs were saved: the folder (`outputs/<stage>/`) and the file stem.
    pub saved: Option<(PathBuf, String)>,
}

impl Observed {
    /// An observation without files (nothing saved).
    #[cfg(test)]
    pub(crate) fn of(outcome: Outcome) -> Self {
        Observed {
            outcome,
            files: Vec::new(),
            saved: None,
        }
    }

    /// Stream `i` (0: stdout, 1: stderr) as a comparison reads it: from memory when it was
    /// kept whole there, else from the file it was written to as it arrived.
    fn source(&self, i: usize) -> text::Source<'_> {
        let o = &self.outcome;
        let bytes = if i == 0 { &o.stdout } else { &o.stderr };
        match &o.spooled {
            Some(s) if s.bytes[i] != bytes.len() as u64 => {
                text::Source::File(if i == 0 { &s.to.stdout } else { &s.to.stderr })
            }
            _ => text::Source::Bytes(bytes),
        }
    }

    /// The saved copy of a stream (`stdout`, `stderr`) or of a declared file.
    fn saved_path(&self, stream: &Stream) -> Option<PathBuf> {
        match stream {
            Stream::Out(name) => {
                let (dir, stem) = self.saved.as_ref()?;
                Some(dir.join(format!("{stem}.{name}")))
            }
            Stream::File(i) => self.files.get(*i)?.saved.clone(),
        }
    }
}

/// A declared output file after a run.
#[derive(Debug, Clone)]
pub(crate) struct OutputFile {
    /// As declared in the spec (relative to the workload's cwd, or absolute).
    pub declared: PathBuf,
    /// `None` when the run did not write it.
    pub contents: Option<Vec<u8>>,
    /// Its copy under `outputs/<stage>/<workload>.files/`.
    pub saved: Option<PathBuf>,
}

/// How a candidate's outputs differ from the baseline's on one workload.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Mismatch {
    pub workload: String,
    /// The candidate (`pgo`, `cpu (x86-64-v3)`); empty when not known.
    pub stage: String,
    /// "status", "stdout", "stderr" or "file <path>".
    pub stream: String,
    /// 1-based line of the first difference (0 for the exit status or a missing file).
    pub line: usize,
    /// 1-based byte column of the difference in the baseline's line (0 when not known).
    pub column: usize,
    /// Lines were compared in sorted order (`sort-lines`); `line` counts sorted lines.
    pub sorted: bool,
    /// With `sorted`: the lines' numbers in the original outputs.
    pub line_baseline: Option<usize>,
    pub line_candidate: Option<usize>,
    pub expected: String,
    pub actual: String,
    /// In numeric modes: the two numbers and their error against the tolerance.
    pub numeric: Option<NumericDiff>,
    /// The full outputs: the baseline's and the candidate's saved copies.
    pub saved: Option<(PathBuf, PathBuf)>,
}

impl Mismatch {
    /// The same mismatch, attributed to a candidate.
    pub fn in_stage(mut self, stage: &str) -> Self {
        self.stage = stage.to_string();
        self
    }

    fn who(&self) -> String {
        if self.stage.is_empty() {
            format!("workload `{}`", self.workload)
        } else {
            format!(
                "workload `{}` on the {} candidate",
                self.workload, self.stage
            )
        }
    }

    /// "line 3, column 9" / "line 2 of the sorted lines (baseline line 5, candidate line 1)".
    pub fn place(&self) -> String {
        let mut s = format!("line {}", self.line);
        if self.sorted {
            s.push_str(" of the sorted lines");
            let n = |l: Option<usize>| l.map(|l| l.to_string()).unwrap_or_else(|| "–".into());
            if self.line_baseline.is_some() || self.line_candidate.is_some() {
                s.push_str(&format!(
                    " (baseline line {}, candidate line {})",
                    n(self.line_baseline),
                    n(self.line_candidate)
                ));
            }
        } else if self.column > 0 {
            s.push_str(&format!(", column {}", self.column));
        }
        s
    }
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.stream == "status" {
            return write!(
                f,
                "{}: exit status differs: baseline {}, candidate {}",
                self.who(),
                self.expected,
                self.actual
            );
        }
        if self.line == 0 {
            write!(
                f,
                "{}: {} differs: baseline {}, candidate {}",
                self.who(),
                self.stream,
                self.expected,
                self.actual
            )?;
        } else {
            write!(
                f,
                "{}: {} differs at {}:\n    baseline:  {}\n    candidate: {}",
                self.who(),
                self.stream,
                self.place(),
                self.expected,
                self.actual
            )?;
        }
        if let Some(n) = &self.numeric {
            write!(f, "\n    numbers: {n}")?;
        }
        if let Some((a, b)) = &self.saved {
            write!(
                f,
                "\n    full outputs: {}\n                  {}",
                a.display(),
                b.display()
            )?;
        }
        Ok(())
    }
}

/// Why a candidate is rejected.
#[derive(Debug, Clone)]
pub(crate) enum Rejection {
    Outputs(Mismatch),
    Tests(TestFailure),
}

impl Rejection {
    /// One phrase for "<stage> rejected: …".
    pub(crate) fn headline(&self) -> &'static str {
        match self {
            Rejection::Outputs(_) => "its outputs differ from the baseline's",
            Rejection::Tests(_) => "the crate's own tests fail with its settings",
        }
    }
}

impl std::fmt::Display for Rejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rejection::Outputs(m) => m.fmt(f),
            Rejection::Tests(t) => t.fmt(f),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum VerifyError {
    #[error(transparent)]
    Process(#[from] ProcessError),
    #[error(transparent)]
    Cargo(#[from] crate::cargo::CargoError),
    #[error("cannot {action} {path}: {error}")]
    Io {
        action: &'static str,
        path: PathBuf,
        error: std::io::Error,
    },
}

impl VerifyError {
    pub(crate) fn io(action: &'static str, path: &Path, source: std::io::Error) -> Self {
        VerifyError::Io {
            action,
            path: path.to_path_buf(),
            error: source,
        }
    }
}

/// Which output a comparison is about.
enum Stream {
    /// `stdout` / `stderr`.
    Out(&'static str),
    /// The i-th declared file.
    File(usize),
}

/// Compare a candidate's outcome with the baseline's according to the workload's
/// `expect`: the exit status, then stdout, then stderr when `stderr = true`.
#[cfg(test)]
#[allow(clippy::result_large_err)] // built once per rejection: boxing buys nothing
pub(crate) fn check(
    workload: &Workload,
    baseline: &Outcome,
    candidate: &Outcome,
) -> Result<(), Mismatch> {
    check_observed(
        workload,
        &Observed::of(baseline.clone()),
        &Observed::of(candidate.clone()),
    )
}

/// [`check`], then each declared output file, with the same rules.
#[allow(clippy::result_large_err)] // built once per rejection: boxing buys nothing
pub(crate) fn check_observed(
    workload: &Workload,
    a: &Observed,
    b: &Observed,
) -> Result<(), Mismatch> {
    check_status(workload, a.outcome.status, b.outcome.status)?;
    let Some((mode, mask)) = line_rules(&workload.expect) else {
        return Ok(()); // exit-code: the status only
    };
    let rules = Rules {
        mode,
        mask: mask.as_ref(),
        sort: workload.sort_lines,
    };
    let mut streams = vec![(Stream::Out("stdout"), a.source(0), b.source(0))];
    if workload.stderr {
        streams.push((Stream::Out("stderr"), a.source(1), b.source(1)));
    }
    for (stream, x, y) in streams {
        let d = text::compare_sources(x, y, &rules).unwrap_or_else(|e| Some(unreadable(e)));
        if let Some(d) = d {
            return Err(mismatch(workload, &stream, a, b, d));
        }
    }
    for (i, fa) in a.files.iter().enumerate() {
        let stream = Stream::File(i);
        let fb = b.files.get(i).and_then(|f| f.contents.as_deref());
        let d = match (fa.contents.as_deref(), fb) {
            (Some(x), Some(y)) => text::compare(x, y, &rules),
            (None, None) => None,
            (x, y) => {
                let says = |c: Option<&[u8]>| match c {
                    Some(c) => format!("wrote it ({} bytes)", c.len()),
                    None => "did not write it".to_string(),
                };
                Some(TextDiff {
                    line: 0,
                    column: 0,
                    sorted: false,
                    line_a: None,
                    line_b: None,
                    expected: says(x),
                    actual: says(y),
                    numeric: None,
                })
            }
        };
        if let Some(d) = d {
            return Err(mismatch(workload, &stream, a, b, d));
        }
    }
    Ok(())
}

/// A saved output that could not be read back (deleted under us, a disk error): a
/// difference, saying so, rather than a pass nobody checked.
fn unreadable(e: std::io::Error) -> TextDiff {
    let says = format!("(a saved output could not be read: {e})");
    TextDiff {
        line: 0,
        column: 0,
        sorted: false,
        line_a: None,
        line_b: None,
        expected: says.clone(),
        actual: says,
        numeric: None,
    }
}

/// The line mode and mask of an expect mode; `None` for `exit-code` and a harness's
/// `Success`.
fn line_rules(expect: &Expect) -> Option<(LineMode, Option<regex::bytes::Regex>)> {
    Some(match expect {
        Expect::ExitCode | Expect::Success => return None,
        Expect::Exact => (LineMode::Exact, None),
        Expect::Numeric(t) => (LineMode::Numeric(Tolerance::Relative(*t)), None),
        Expect::NumericAbs(t) => (LineMode::Numeric(Tolerance::Absolute(*t)), None),
        // The spec validated the regex with the same engine.
        Expect::Ignore(re) => (LineMode::Exact, regex::bytes::Regex::new(re).ok()),
    })
}

#[allow(clippy::result_large_err)] // built once per rejection: boxing buys nothing
fn check_status(workload: &Workload, a: ExitStatus, b: ExitStatus) -> Result<(), Mismatch> {
    if a == b {
        return Ok(());
    }
    Err(Mismatch {
        workload: workload.name.clone(),
        stage: String::new(),
        stream: "status".into(),
        line: 0,
        column: 0,
        sorted: false,
        line_baseline: None,
        line_candidate: None,
        expected: a.to_string(),
        actual: b.to_string(),
        numeric: None,
        saved: None,
    })
}

fn mismatch(w: &Workload, stream: &Stream, a: &Observed, b: &Observed, d: TextDiff) -> Mismatch {
    let name = match stream {
        Stream::Out(s) => s.to_string(),
        Stream::File(i) => format!(
            "file {}",
            a.files
                .get(*i)
                .map(|f| f.declared.display().to_string())
                .unwrap_or_default()
        ),
    };
    let saved = match (a.saved_path(stream), b.saved_path(stream)) {
        (Some(x), Some(y)) => Some((x, y)),
        _ => None,
    };
    Mismatch {
        workload: w.name.clone(),
        stage: String::new(),
        stream: name,
        line: d.line,
        column: d.column,
        sorted: d.sorted,
        line_baseline: d.line_a.filter(|_| d.sorted),
        line_candidate: d.line_b.filter(|_| d.sorted),
        expected: d.expected,
        actual: d.actual,
        numeric: d.numeric,
        saved,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn outcome(code: i32, stdout: &str) -> Outcome {
        Outcome {
            status: ExitStatus {
                code: Some(code),
                signal: None,
            },
            stdout: stdout.as_bytes().to_vec(),
            stderr: b"noise".to_vec(),
            wall: Duration::ZERO,
            user: Duration::ZERO,
            sys: Duration::ZERO,
            max_rss_bytes: 0,
            timed_out: false,
            lingering: Default::default(),
            spooled: None,
            pid: 0,
            swept: 0,
        }
    }

    pub(super) fn workload(expect: Expect) -> Workload {
        Workload {
            timeout: Duration::from_secs(1),
            expect,
            ..Workload::for_tests(Path::new("."))
        }
    }

    fn with_file(out: Outcome, contents: Option<&str>) -> Observed {
        Observed {
            outcome: out,
            files: vec![OutputFile {
                declared: "out/result.txt".into(),
                contents: contents.map(|c| c.as_bytes().to_vec()),
                saved: None,
            }],
            saved: None,
        }
    }

    #[test]
    fn exact_reports_first_differing_line() {
        let w = workload(Expect::Exact);
        let m = check(&w, &outcome(0, "a\nb\nc\n"), &outcome(0, "a\nB\nc\n")).unwrap_err();
        assert_eq!((m.stream.as_str(), m.line), ("stdout", 2));
        assert_eq!((m.expected.as_str(), m.actual.as_str()), ("b", "B"));
        assert!(check(&w, &outcome(0, "x"), &outcome(0, "x")).is_ok());
    }

    #[test]
    fn shorter_output_is_a_difference() {
        let w = workload(Expect::Exact);
        let m = check(&w, &outcome(0, "a\nb"), &outcome(0, "a")).unwrap_err();
        assert_eq!(m.line, 2);
        assert_eq!(m.actual, "<end of output>");
    }

    #[test]
    fn exit_code_mode_ignores_stdout_and_files_but_not_status() {
        let w = workload(Expect::ExitCode);
        assert!(check(&w, &outcome(0, "a"), &outcome(0, "b")).is_ok());
        let m = check(&w, &outcome(0, "a"), &outcome(1, "a")).unwrap_err();
        assert_eq!(m.stream, "status");
        assert!(m.to_string().contains("exit code 1"));
        let (a, b) = (
            with_file(outcome(0, ""), Some("1")),
            with_file(outcome(0, ""), None),
        );
        assert!(check_observed(&w, &a, &b).is_ok());
    }

    #[test]
    fn stderr_compared_only_when_asked() {
        let mut w = workload(Expect::Exact);
        let a = outcome(0, "x");
        let mut b = outcome(0, "x");
        b.stderr = b"other".to_vec();
        assert!(check(&w, &a, &b).is_ok());
        w.stderr = true;
        assert_eq!(check(&w, &a, &b).unwrap_err().stream, "stderr");
    }

    #[test]
    fn numeric_modes_report_the_error_against_the_tolerance() {
        let w = workload(Expect::Numeric(1e-6));
        let a = outcome(0, "n = 3\nx = 0.333333333333\n");
        assert!(check(&w, &a, &outcome(0, "n = 3\nx = 0.333333333334\n")).is_ok());
        let m = check(&w, &a, &outcome(0, "n = 3\nx = 0.3334\n"))
            .unwrap_err()
            .in_stage("pgo");
        assert_eq!((m.line, m.column), (2, 5));
        let n = m.numeric.as_ref().unwrap();
        assert!((n.error - 6.667e-5 / 0.3334).abs() < 1e-6, "{}", n.error);
        assert_eq!(
            m.to_string(),
            "workload `w` on the pgo candidate: stdout differs at line 2, column 5:\n    \
             baseline:  x = 0.333333333333\n    candidate: x = 0.3334\n    \
             numbers: 0.333333333333 vs 0.3334: relative error 2.00e-4 > tolerance 1e-6"
        );
        // Exact mode rejects the last-digit noise that numeric accepts.
        let exact = workload(Expect::Exact);
        assert!(check(&exact, &a, &outcome(0, "n = 3\nx = 0.333333333334\n")).is_err());
        // numeric-abs.
        let abs = workload(Expect::NumericAbs(1e-3));
        assert!(check(&abs, &outcome(0, "1000.0001"), &outcome(0, "1000.0009")).is_ok());
        let m = check(&abs, &outcome(0, "0.1"), &outcome(0, "0.2")).unwrap_err();
        assert_eq!(m.numeric.unwrap().kind, "absolute");
    }

    #[test]
    fn ignore_and_sort_lines_modes() {
        let w = workload(Expect::Ignore(r"^pid \d+$".into()));
        assert!(check(&w, &outcome(0, "pid 12\nok\n"), &outcome(0, "pid 99\nok\n")).is_ok());
        let m = check(&w, &outcome(0, "pid 12\nok\n"), &outcome(0, "pid 99\nko\n")).unwrap_err();
        assert_eq!(m.line, 2);
        let mut w = workload(Expect::Exact);
        w.sort_lines = true;
        assert!(check(&w, &outcome(0, "b\na\n"), &outcome(0, "a\nb\n")).is_ok());
        let m = check(&w, &outcome(0, "b\na\n"), &outcome(0, "a\nc\n")).unwrap_err();
        assert_eq!(
            m.place(),
            "line 2 of the sorted lines (baseline line 1, candidate line 2)"
        );
    }

    #[test]
    fn files_are_compared_with_the_same_rules() {
        let w = workload(Expect::Numeric(1e-6));
        let a = with_file(outcome(0, "same"), Some("k 1.0\nv 2.0\n"));
        let b = with_file(outcome(0, "same"), Some("k 1.0000000001\nv 2.0\n"));
        assert!(check_observed(&w, &a, &b).is_ok());
        let c = with_file(outcome(0, "same"), Some("k 1.0\nv 2.5\n"));
        let m = check_observed(&w, &a, &c).unwrap_err();
        assert_eq!((m.stream.as_str(), m.line), ("file out/result.txt", 2));
        let missing = with_file(outcome(0, "same"), None);
        let m = check_observed(&w, &a, &missing)
            .unwrap_err()
            .in_stage("pgo");
        assert_eq!(
            m.to_string(),
            "workload `w` on the pgo candidate: file out/result.txt differs: baseline wrote it (12 bytes), candidate did not write it"
        );
    }

    #[test]
    fn saved_outputs_are_named_in_the_report() {
        let w = workload(Expect::Exact);
        let mut a = Observed::of(outcome(0, "1\n"));
        let mut b = Observed::of(outcome(0, "2\n"));
        a.saved = Some(("/r/outputs/baseline".into(), "w".into()));
        b.saved = Some(("/r/outputs/pgo".into(), "w".into()));
        let m = check_observed(&w, &a, &b).unwrap_err();
        assert_eq!(
            m.saved,
            Some((
                "/r/outputs/baseline/w.stdout".into(),
                "/r/outputs/pgo/w.stdout".into()
            ))
        );
        assert!(m.to_string().ends_with(
            "full outputs: /r/outputs/baseline/w.stdout\n                  /r/outputs/pgo/w.stdout"
        ));
    }
}
