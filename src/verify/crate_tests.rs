//! The crate's own tests as a verifier (`[verify] tests = true`): build and run them with
//! a candidate's exact settings — where a miscompile or a fast-math change would show —
//! and reject the candidate when a test fails that passes with the baseline's settings.
//!
//! Runs for the `profile`, `cpu` and `pgo` candidates (the PGO one with its
//! `-Cprofile-use`); not for `bolt`, which rewrites only the binary, never the tests.
//! Cargo runs through `cargo::test`; this module decides and explains.

use std::collections::BTreeSet;
use std::path::PathBuf;

use super::{Reference, VerifyError};
use crate::cargo::{self, BuildSettings, TestRun, TestRunner};
use crate::context::{Candidate, Context};
use crate::stages::StageName;

/// The crate's tests fail with a candidate's settings.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct TestFailure {
    /// The candidate, e.g. `pgo` or `cpu (x86-64-v3)`.
    pub stage: String,
    pub runner: TestRunner,
    /// Failing test names (may be empty when a test binary crashed or did not build).
    pub failed: Vec<String>,
    /// The tests did not compile with these settings.
    pub build_failed: bool,
    /// The first panic message, the crash, or the compiler's last lines.
    pub detail: String,
    pub command: String,
    /// Everything the runner printed.
    pub log: PathBuf,
}

impl std::fmt::Display for TestFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.build_failed {
            write!(
                f,
                "the crate's tests do not build with the {} candidate's settings",
                self.stage
            )?;
        } else if self.failed.is_empty() {
            write!(
                f,
                "the crate's tests fail with the {} candidate's settings",
                self.stage
            )?;
        } else {
            write!(
                f,
                "{} of the crate's tests fail with the {} candidate's settings: {}",
                self.failed.len(),
                self.stage,
                self.failed.join(", ")
            )?;
        }
        for l in self.detail.lines() {
            write!(f, "\n    {l}")?;
        }
        write!(
            f,
            "\n    command: {}\n    full log: {}",
            self.command,
            self.log.display()
        )
    }
}

/// What a test run's output says.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ParsedTests {
    pub failed: Vec<String>,
    pub build_failed: bool,
    pub detail: String,
}

/// The baseline's test result, computed only when a candidate fails (then a test that
/// also fails on the baseline is not held against the candidate).
#[derive(Debug, Clone)]
pub(super) struct BaselineTests {
    success: bool,
    parsed: ParsedTests,
}

/// Which candidates the crate's tests verify.
pub(crate) fn applies_to(stage: StageName) -> bool {
    stage.row().crate_tests
}

/// What the crate's tests say of a candidate ([`check`]).
#[must_use]
#[derive(Debug)]
pub(crate) enum Tested {
    /// Nothing held against it: the tests pass with its settings, fail only as they do
    /// with the baseline's, or are not asked for (`[verify] tests`) or not run for its stage.
    Passed,
    /// A test fails (or they do not build) with its settings but not with the baseline's.
    Failed(TestFailure),
}

/// Run the crate's tests with `cand`'s settings when the spec asks for it; `Failed`
/// rejects the candidate, an error is a fault (the tests could not be run).
pub(crate) fn check(
    ctx: &Context,
    cand: &Candidate,
    reference: &Reference,
) -> Result<Tested, VerifyError> {
    if !ctx.spec.verify.tests || !applies_to(cand.stage) {
        return Ok(Tested::Passed);
    }
    let runner = *reference
        .test_runner
        .get_or_init(|| TestRunner::detect(|w| ctx.ui().warn(&w)));
    let label = cand.label();
    let run = run_tests(ctx, &label, &cand.tag(), &cand.settings, runner)?;
    if run.0.success {
        ctx.ui().info(&format!("{label}: the crate's tests pass"));
        return Ok(Tested::Passed);
    }
    let (run, log) = run;
    let parsed = parse(runner, &run.stdout, &run.stderr);
    let failure = TestFailure {
        stage: label.clone(),
        runner,
        failed: parsed.failed.clone(),
        build_failed: parsed.build_failed,
        detail: parsed.detail.clone(),
        command: run.command.clone(),
        log,
    };
    // Hold only new failures against the candidate.
    let base = baseline(ctx, reference, runner)?;
    if base.success {
        return Ok(Tested::Failed(failure));
    }
    if base.parsed.build_failed {
        ctx.ui().warn(&format!(
            "the crate's tests do not build with the baseline's settings either, so they cannot verify {label}; see {}",
            ctx.run.root.join("tests/baseline.log").display()
        ));
        return Ok(Tested::Passed);
    }
    if parsed.build_failed {
        return Ok(Tested::Failed(failure));
    }
    let known: BTreeSet<&String> = base.parsed.failed.iter().collect();
    let new: Vec<String> = parsed
        .failed
        .iter()
        .filter(|t| !known.contains(t))
        .cloned()
        .collect();
    // Nameless failures (a crashed test binary) against a failing baseline count as known.
    if new.is_empty() {
        ctx.ui().warn(&format!(
            "{label}: the crate's tests that fail ({}) fail with the baseline's settings too; not held against it",
            if parsed.failed.is_empty() {
                "a test binary".to_string()
            } else {
                parsed.failed.join(", ")
            }
        ));
        return Ok(Tested::Passed);
    }
    Ok(Tested::Failed(TestFailure {
        failed: new,
        ..failure
    }))
}

fn baseline(
    ctx: &Context,
    reference: &Reference,
    runner: TestRunner,
) -> Result<BaselineTests, VerifyError> {
    if let Some(b) = reference.baseline_tests.borrow().as_ref() {
        return Ok(b.clone());
    }
    let (run, _) = run_tests(
        ctx,
        "baseline",
        "baseline",
        &reference.baseline_settings,
        runner,
    )?;
    let b = BaselineTests {
        success: run.success,
        parsed: parse(runner, &run.stdout, &run.stderr),
    };
    *reference.baseline_tests.borrow_mut() = Some(b.clone());
    Ok(b)
}

/// Run the tests, keep the log under `runs/<id>/tests/<tag>.log`, record the step.
fn run_tests(
    ctx: &Context,
    label: &str,
    tag: &str,
    settings: &BuildSettings,
    runner: TestRunner,
) -> Result<(TestRun, PathBuf), VerifyError> {
    let what = match runner {
        TestRunner::Cargo => "cargo test",
        TestRunner::Nextest => "cargo nextest run",
    };
    ctx.ui().step(&format!(
        "{label}: the crate's tests with its settings ({what})"
    ));
    // The same target dir as the candidate's build (Context::build), so dependencies
    // built with these settings are reused.
    let target_dir = ctx.plan.optimize_dir.join("build").join(settings.hash());
    let spinner = ctx.ui().spinner(format!("{label}: {what}"));
    let run = cargo::test(
        &ctx.plan.project,
        settings,
        &target_dir,
        runner,
        &mut |line| {
            let line = line.trim();
            if line.starts_with("Compiling") || line.starts_with("Running") {
                spinner.set_message(format!("{label}: {line}"));
            }
        },
    );
    spinner.finish_and_clear();
    let run = run?;
    ctx.record(&format!("{label}: crate tests"), run.seconds, None);
    let dir = ctx.run.root.join("tests");
    std::fs::create_dir_all(&dir).map_err(|e| VerifyError::io("create", &dir, e))?;
    let log = dir.join(format!("{tag}.log"));
    let text = format!(
        "$ {}\n{}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        run.command, run.status, run.stdout, run.stderr
    );
    std::fs::write(&log, text).map_err(|e| VerifyError::io("write", &log, e))?;
    Ok((run, log))
}

/// Failing tests, build failure and a detail line from a runner's output.
pub(crate) fn parse(runner: TestRunner, stdout: &str, stderr: &str) -> ParsedTests {
    let mut failed: Vec<String> = Vec::new();
    let mut push = |name: &str| {
        if !name.is_empty() && !failed.iter().any(|f| f == name) {
            failed.push(name.to_string());
        }
    };
    match runner {
        TestRunner::Cargo => {
            // libtest: `test path::name ... FAILED` (`- should panic` for should_panic tests).
            for line in stdout.lines().chain(stderr.lines()) {
                if let Some(name) = line
                    .strip_prefix("test ")
                    .and_then(|l| l.trim_end().strip_suffix(" ... FAILED"))
                {
                    push(name.trim_end_matches(" - should panic").trim());
                }
            }
        }
        TestRunner::Nextest => {
            // `        FAIL [   0.004s] (2/3) binary-id path::name`, also SIGSEGV, ABORT,
            // TIMEOUT, LEAK-FAIL …; `TRY n FAIL` lines are retries.
            for line in stderr.lines().chain(stdout.lines()) {
                if let Some(name) = nextest_failure(line) {
                    push(name);
                }
            }
        }
    }
    let all = format!("{stdout}\n{stderr}");
    let build_failed = failed.is_empty()
        && all
            .lines()
            .any(|l| l.starts_with("error: could not compile") || l.starts_with("error[E"));
    let detail = if build_failed {
        let errors: Vec<&str> = all
            .lines()
            .filter(|l| l.starts_with("error"))
            .take(6)
            .collect();
        errors.join("\n")
    } else {
        panic_detail(&all).unwrap_or_else(|| crash_detail(&all))
    };
    ParsedTests {
        failed,
        build_failed,
        detail,
    }
}

fn nextest_failure(line: &str) -> Option<&str> {
    let l = line.trim_start();
    let (status, rest) = l.split_once(' ')?;
    let is_status = !status.is_empty()
        && status
            .chars()
            .all(|c| c.is_ascii_uppercase() || c == '-' || c.is_ascii_digit());
    if !is_status
        || !["FAIL", "SIG", "ABORT", "TIMEOUT"]
            .iter()
            .any(|s| status.contains(s))
    {
        return None;
    }
    let rest = rest.trim_start().strip_prefix('[')?;
    let (_, rest) = rest.split_once(']')?;
    let mut rest = rest.trim();
    if rest.starts_with('(') {
        rest = rest.split_once(')').map(|(_, r)| r.trim())?;
    }
    // `binary-id test::name`: the name is the last word.
    rest.split_whitespace().last()
}

/// The first `panicked at` line and the message after it.
fn panic_detail(all: &str) -> Option<String> {
    let lines: Vec<&str> = all.lines().collect();
    let i = lines.iter().position(|l| l.contains("panicked at"))?;
    let mut out = vec![lines[i].trim()];
    out.extend(
        lines[i + 1..]
            .iter()
            .map(|l| l.trim())
            .take_while(|l| {
                !l.is_empty() && !l.starts_with("note:") && !l.starts_with("stack backtrace")
            })
            .take(3),
    );
    Some(out.join("\n"))
}

/// A test binary that died without naming a test (signal, abort).
fn crash_detail(all: &str) -> String {
    let crash: Vec<&str> = all
        .lines()
        .filter(|l| {
            l.contains("process didn't exit successfully")
                || l.starts_with("error: test failed")
                || l.contains("SIGSEGV")
                || l.contains("SIGABRT")
        })
        .map(str::trim)
        .take(4)
        .collect();
    crash.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    const CARGO_OUT: &str = "
running 3 tests
test tests::fine ... ok
test tests::flips ... FAILED
test tests::boom - should panic ... FAILED

failures:

---- tests::flips stdout ----

thread 'tests::flips' panicked at src/lib.rs:9:9:
the answer changed: 42 != 43
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace

failures:
    tests::boom
    tests::flips

test result: FAILED. 1 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s
";

    #[test]
    fn cargo_test_failures_are_named() {
        let p = parse(
            TestRunner::Cargo,
            CARGO_OUT,
            "error: test failed, to rerun pass `--lib`\n",
        );
        assert_eq!(p.failed, ["tests::flips", "tests::boom"]);
        assert!(!p.build_failed);
        assert_eq!(
            p.detail,
            "thread 'tests::flips' panicked at src/lib.rs:9:9:\nthe answer changed: 42 != 43"
        );
    }

    #[test]
    fn nextest_failures_are_named() {
        // As nextest 0.9 prints it (the SIGSEGV and TRY lines added).
        let err = " Nextest run ID 251c2145 with nextest profile: default
    Starting 3 tests across 2 binaries
        PASS [   0.012s] (1/3) verify-tests tests::sums
        FAIL [   0.151s] (2/3) verify-tests tests::parity_holds
  stdout ───

    running 1 test
    test tests::parity_holds ... FAILED

  stderr ───

    thread 'tests::parity_holds' (17877) panicked at src/lib.rs:27:9:
    assertion `left == right` failed: the parity check changed
      left: 1
     right: 0
    stack backtrace:
       0: __rustc::rust_begin_unwind

      SIGSEGV [   0.010s] (3/3) verify-tests::bin/verify-tests tests::crash
   TRY 1 FAIL [   0.001s] verify-tests tests::flaky
────────────
     Summary [   0.152s] 3 tests run: 1 passed, 2 failed, 0 skipped
        FAIL [   0.151s] (2/3) verify-tests tests::parity_holds
      SIGSEGV [   0.010s] (3/3) verify-tests::bin/verify-tests tests::crash
error: test run failed
";
        let p = parse(TestRunner::Nextest, "", err);
        assert_eq!(p.failed, ["tests::parity_holds", "tests::crash"]);
        assert_eq!(
            p.detail,
            "thread 'tests::parity_holds' (17877) panicked at src/lib.rs:27:9:\n\
             assertion `left == right` failed: the parity check changed\nleft: 1\nright: 0"
        );
        // Older nextest without the (n/m) counter.
        assert_eq!(
            nextest_failure("        FAIL [   0.004s] crate tests::x"),
            Some("tests::x")
        );
        assert_eq!(
            nextest_failure("        PASS [   0.004s] crate tests::x"),
            None
        );
        assert_eq!(nextest_failure("error: test run failed"), None);
    }

    #[test]
    fn build_failures_and_crashes() {
        let err = "   Compiling t v0.1.0\nerror[E0425]: cannot find value `x` in this scope\nerror: could not compile `t` (lib test) due to 1 previous error\n";
        let p = parse(TestRunner::Cargo, "", err);
        assert!(p.build_failed && p.failed.is_empty());
        assert!(p.detail.starts_with("error[E0425]"), "{}", p.detail);
        let err = "error: test failed, to rerun pass `--lib`\n\nCaused by:\n  process didn't exit successfully: `/t/deps/t-123` (signal: 11, SIGSEGV: invalid memory reference)\n";
        let p = parse(TestRunner::Cargo, "running 1 test\n", err);
        assert!(!p.build_failed && p.failed.is_empty());
        assert!(p.detail.contains("SIGSEGV"), "{}", p.detail);
    }

    #[test]
    fn failure_message_names_tests_and_log() {
        let f = TestFailure {
            stage: "pgo".into(),
            runner: TestRunner::Cargo,
            failed: vec!["tests::flips".into()],
            build_failed: false,
            detail: "thread 'tests::flips' panicked at src/lib.rs:9:9:\nboom".into(),
            command: "cargo test".into(),
            log: "/r/tests/pgo.log".into(),
        };
        let s = f.to_string();
        assert!(s.starts_with(
            "1 of the crate's tests fail with the pgo candidate's settings: tests::flips\n    thread"
        ), "{s}");
        assert!(s.ends_with("full log: /r/tests/pgo.log"), "{s}");
        assert!(applies_to(StageName::Pgo) && !applies_to(StageName::Bolt));
    }
}
