//! Output comparison: does a candidate behave like the baseline on a workload?
//!
//! Owns the expect modes (`exact`, `exit-code`, …) and the mismatch report (the first
//! differing line with its number and both values). Must not run anything: it compares
//! outcomes that the pipeline recorded.

use crate::process::{Outcome, Status};
use crate::spec::{Expect, Workload};

/// How a candidate's outputs differ from the baseline's on one workload.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Mismatch {
    pub workload: String,
    /// "status", "stdout" or "stderr".
    pub stream: String,
    /// 1-based line of the first difference (0 for the exit status).
    pub line: usize,
    pub expected: String,
    pub actual: String,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.stream == "status" {
            write!(
                f,
                "workload `{}`: exit status differs: baseline {}, candidate {}",
                self.workload, self.expected, self.actual
            )
        } else {
            write!(
                f,
                "workload `{}`: {} differs at line {}:\n    baseline:  {}\n    candidate: {}",
                self.workload, self.stream, self.line, self.expected, self.actual
            )
        }
    }
}

/// Compare a candidate's outcome with the baseline's according to the workload's `expect`.
pub fn check(workload: &Workload, baseline: &Outcome, candidate: &Outcome) -> Result<(), Mismatch> {
    check_status(workload, baseline.status, candidate.status)?;
    if workload.expect == Expect::ExitCode {
        return Ok(());
    }
    compare_stream(workload, "stdout", &baseline.stdout, &candidate.stdout)?;
    if workload.stderr {
        compare_stream(workload, "stderr", &baseline.stderr, &candidate.stderr)?;
    }
    Ok(())
}

fn check_status(workload: &Workload, a: Status, b: Status) -> Result<(), Mismatch> {
    if a == b {
        return Ok(());
    }
    Err(Mismatch {
        workload: workload.name.clone(),
        stream: "status".into(),
        line: 0,
        expected: a.to_string(),
        actual: b.to_string(),
    })
}

fn compare_stream(workload: &Workload, stream: &str, a: &[u8], b: &[u8]) -> Result<(), Mismatch> {
    if a == b {
        return Ok(());
    }
    let (ta, tb) = (String::from_utf8_lossy(a), String::from_utf8_lossy(b));
    let mut la = ta.split('\n');
    let mut lb = tb.split('\n');
    let mut line = 0;
    loop {
        line += 1;
        match (la.next(), lb.next()) {
            (Some(x), Some(y)) if x == y => continue,
            (x, y) => {
                return Err(Mismatch {
                    workload: workload.name.clone(),
                    stream: stream.into(),
                    line,
                    expected: x
                        .map(str::to_string)
                        .unwrap_or_else(|| "<end of output>".into()),
                    actual: y
                        .map(str::to_string)
                        .unwrap_or_else(|| "<end of output>".into()),
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn outcome(code: i32, stdout: &str) -> Outcome {
        Outcome {
            status: Status {
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
        }
    }

    fn workload(expect: Expect) -> Workload {
        Workload {
            name: "w".into(),
            args: vec![],
            stdin: None,
            env: Default::default(),
            cwd: ".".into(),
            timeout: Duration::from_secs(1),
            train: true,
            eval: true,
            expect,
            files: vec![],
            sort_lines: false,
            stderr: false,
            line: 1,
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
    fn exit_code_mode_ignores_stdout_but_not_status() {
        let w = workload(Expect::ExitCode);
        assert!(check(&w, &outcome(0, "a"), &outcome(0, "b")).is_ok());
        let m = check(&w, &outcome(0, "a"), &outcome(1, "a")).unwrap_err();
        assert_eq!(m.stream, "status");
        assert!(m.to_string().contains("exit code 1"));
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
}
