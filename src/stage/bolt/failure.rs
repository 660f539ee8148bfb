//! When BOLT does not work out: which problems mean "BOLT cannot run on this binary here"
//! (the stage is *skipped*, `StageError::NotAvailable`, exit 0) and which are failures
//! (`StageError::Failed`, exit 1), with BOLT's own words, its log and what to do.
//!
//! The rule:
//! - **Skipped** — a limitation of BOLT or of this machine that no setting of the user's
//!   can fix: llvm-bolt refuses the input as unsupported (`BOLT-ERROR: … not supported`),
//!   its runtime library is missing, or BOLT's instrumentation runtime stops the
//!   instrumented program with its own assertion. The reason says what would enable BOLT
//!   (perf + LBR sampling, which needs no runtime, on a machine that has LBR; a fixed BOLT).
//! - **Failed** — anything else: llvm-bolt crashing (a signal), invalid `bolt-args`, a
//!   train workload that fails or times out on the instrumented binary for a reason of its
//!   own, or a bug of ours. These are real problems someone must look at.
//!
//! Must not: run anything but `perf`'s capability probe (through `crate::toolchain`).

use std::path::Path;

use super::{Context, StageError};
use crate::process::{self, Outcome};
use crate::toolchain;
use crate::util::indent;

/// What llvm-bolt says when it refuses an input it cannot handle (as opposed to a crash or
/// a usage error).
/// (`linking object with arch x86_64 into context with arch aarch64`: the instrumentation
/// runtime this llvm-bolt ships is built for its host only, so it cannot instrument another
/// architecture's binary.)
const UNSUPPORTED: &[&str] = &[
    "not supported",
    "unsupported",
    "library not found",
    ARCH_MISMATCH,
];

/// What llvm-bolt says when its instrumentation runtime is another architecture's.
const ARCH_MISMATCH: &str = "linking object with arch";

/// How BOLT's instrumentation runtime reports a failed check (bolt/runtime/common.h
/// `assert`: `Assertion failed: <message>` on stderr, then exit code 1).
const RUNTIME_ASSERTION: &str = "Assertion failed: ";

pub(crate) fn save_log(path: &Path, cmd: &process::Command, out: &Outcome) -> std::io::Result<()> {
    let mut text = format!("$ {}\n# {}\n", cmd.display(), out.status);
    text.push_str(&String::from_utf8_lossy(&out.stdout));
    text.push_str("\n# stderr\n");
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    std::fs::write(path, text)
}

/// llvm-bolt (or perf2bolt) failed or crashed on the input (`bin/bolt-input/<name>`): BOLT's own
/// words, and what to do; skipped when BOLT refused the input as unsupported.
pub(crate) fn bolt_failure(
    doing: &str,
    cmd: &process::Command,
    out: &Outcome,
    log: &Path,
    ctx: &Context,
) -> StageError {
    let stdout = String::from_utf8_lossy(&out.stdout);
    // BOLT prints some errors on stdout (BOLT-ERROR) and option errors on stderr.
    let mut said: Vec<String> = stdout
        .lines()
        .filter(|l| l.contains("BOLT-ERROR"))
        .map(str::to_string)
        .collect();
    let tail = out.stderr_tail(15);
    if !tail.trim().is_empty() {
        said.push(tail);
    }
    if said.is_empty() {
        said.push(process::tail_lines(&out.stdout, 10));
    }
    let said = said.join("\n");
    let tool = cmd
        .program
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "llvm-bolt".into());
    let input = cmd
        .args
        .iter()
        .find(|a| {
            let dir = Path::new(a).parent().and_then(Path::file_name);
            dir.is_some_and(|n| n == "bolt-input")
        })
        .map(|a| a.to_string_lossy().into_owned())
        .unwrap_or_default();
    let user_args = ctx.spec.stages.bolt_args.is_some() && doing == "optimizing";
    if let Some(line) = said.lines().find(|l| l.contains(ARCH_MISMATCH)) {
        return StageError::NotAvailable(format!(
            "{tool} cannot instrument this binary ({doing} {input}): its instrumentation runtime (libbolt_rt_instr.a) is built for this machine's architecture only:\n    {}\n  log: {}\n  what would enable it: BOLT on the target's own machine (a CI cell of that target, `release --emit-ci github`), or an llvm-bolt with a runtime built for the binary's architecture",
            line.trim(),
            log.display()
        ));
    }
    if out.status.signal.is_none() && !user_args && is_unsupported(&said) {
        return StageError::NotAvailable(format!(
            "{tool} cannot handle this binary ({doing} {input}):\n{}\n  log: {}\n  what would enable it: {}",
            indent(&said, "    "),
            log.display(),
            enable_hint(ctx)
        ));
    }
    let how = match out.status.signal {
        Some(s) => format!("crashed (killed by signal {s})"),
        None => format!("failed ({})", out.status),
    };
    let fix = if user_args {
        "check `bolt-args` in [stages] of optimize.toml (`llvm-bolt --help-hidden` lists the options), or remove it to use the built-in flags".to_string()
    } else {
        format!(
            "leave bolt out of [stages] try (the best candidate so far is kept), and report the BOLT problem with its log {}",
            log.display()
        )
    };
    StageError::Failed(format!(
        "{tool} {how} {doing} {input}:\n{}\n  command: {}\n  fix: {fix}",
        indent(&said, "    "),
        cmd.display(),
    ))
}

fn is_unsupported(said: &str) -> bool {
    said.lines()
        .filter(|l| l.contains("BOLT-ERROR"))
        .any(|l| UNSUPPORTED.iter().any(|u| l.contains(u)))
}

/// A train workload failed on the instrumented binary although it succeeds on the
/// baseline. When BOLT's runtime stopped it with its own assertion, BOLT cannot profile
/// this binary by instrumentation here: the stage is skipped with the reason.
pub(crate) fn instrumented_run_refused(
    workload: &str,
    out: &Outcome,
    ctx: &Context,
) -> Option<StageError> {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let at = stderr.find(RUNTIME_ASSERTION)?;
    let message = stderr[at + RUNTIME_ASSERTION.len()..]
        .lines()
        .next()
        .unwrap_or_default()
        .trim();
    Some(StageError::NotAvailable(format!(
        "BOLT's instrumentation runtime stopped the instrumented binary on train workload `{workload}` ({}): \"Assertion failed: {message}\" — a limitation of this llvm-bolt's runtime on this binary, not of your program\n  what would enable it: {}",
        out.status,
        enable_hint(ctx)
    )))
}

/// What would let BOLT run where instrumentation cannot: sampling needs no runtime.
fn enable_hint(ctx: &Context) -> String {
    let perf = toolchain::find_on_path("perf");
    let lbr = toolchain::lbr_usable(perf.as_deref());
    let here = if lbr.available {
        "this machine has it".to_string()
    } else {
        format!("not this machine: {}", lbr.detail)
    };
    format!(
        "profile by sampling instead of instrumentation — `bolt-mode = \"perf\"` in [stages] of optimize.toml on a machine whose CPU exposes LBR branch stacks to perf (bare-metal Intel; {here}) — or an llvm-bolt {} build with the limitation fixed",
        ctx.plan.rustc.llvm_major
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsupported_inputs_are_told_from_other_errors() {
        assert!(is_unsupported(
            "BOLT-ERROR: instrumenting binaries using BTI is not supported."
        ));
        assert!(is_unsupported(
            "BOLT-ERROR: library not found: /usr/lib/llvm-22/lib/libbolt_rt_instr.a"
        ));
        assert!(!is_unsupported(
            "llvm-bolt: Unknown command line argument '--definitely-not-an-option'."
        ));
        // Instrumenting an aarch64 binary with an x86-64 llvm-bolt's runtime (LLVM 22).
        assert!(is_unsupported(
            "BOLT-ERROR: linking object with arch x86_64 into context with arch aarch64"
        ));
        assert!(!is_unsupported("BOLT-ERROR: failed to parse profile"));
        // Only BOLT's own errors count, not a warning that mentions the words.
        assert!(!is_unsupported(
            "BOLT-WARNING: unsupported debug section: .debug_foo"
        ));
    }
}
