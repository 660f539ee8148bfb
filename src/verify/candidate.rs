//! The checks themselves: [`record_baseline`] runs every workload on the baseline (the
//! reference every candidate must match) and checks the baseline agrees with itself;
//! [`check_candidate`] runs every workload on a candidate, compares, then runs the crate's
//! own tests with its settings when the spec asks for it ([`Checked`]). A release calls it
//! whole; the ladder's `Verifier` runs it in parts ([`check_candidate_on`]) around the
//! candidate's timed runs.

use std::time::Instant;

use super::crate_tests::Tested;
use super::{Compared, Expect, Reference, Rejection};
use crate::context::{Candidate, Context};
use crate::stages::StageName;
use crate::util::indent;

/// The baseline's outputs on every workload, then the determinism check: a second run of
/// each (of those under `observe::DEFER`; the others when a candidate first differs), so a
/// workload whose baseline disagrees with itself is named instead of rejecting every
/// candidate. A workload that declares no `files` first runs once in a private copy of its
/// cwd to show it writes nothing there; for a slow one that run is also its observation. A
/// workload that fails, times out or does not write a declared file on the baseline is a
/// spec problem, reported as such.
pub(crate) fn record_baseline(ctx: &Context, baseline: &Candidate) -> anyhow::Result<Reference> {
    let n = ctx.spec.workloads.len();
    let start = Instant::now();
    let mut peak = 0;
    let mut reference = Reference::new(baseline);
    let at = |line: usize| format!("{}:{line}", ctx.spec.path.display());
    for (i, w) in ctx.spec.workloads.iter().enumerate() {
        ctx.ui()
            .progress(&format!("baseline: running [{}/{n}] {}", i + 1, w.name));
        let copy_run = match w.files.is_empty() {
            true => check_writes_nothing(ctx, baseline, w)?,
            false => None,
        };
        let outputs = ctx.run.outputs(StageName::BASELINE.as_str());
        // A slow workload's run in the private copy is its observation too: it wrote
        // nothing there, so in place it prints the same, and a second run costs as much
        // again (six 10 s workloads: a minute).
        let obs = match copy_run.filter(|o| o.wall >= super::observe::DEFER) {
            Some(outcome) => super::observed_from(w, outcome, None, &outputs)?,
            None => super::observe(ctx, &baseline.binary, w, &outputs)?,
        };
        let out = &obs.outcome;
        if out.timed_out {
            anyhow::bail!(
                "{}: workload `{}` exceeded its timeout of {} on the baseline and was killed (with its children)\n  fix: raise `timeout` for this workload, or give it a smaller input",
                at(w.line),
                w.name,
                humantime::format_duration(w.timeout)
            );
        }
        if let Some(signal) = out.status.signal {
            crashed(ctx, w, &out.status, signal, &out.stderr_tail(15))?;
        }
        if !out.status.success() && w.expect != Expect::ExitCode {
            // A harness (a bench that panics) fails on its own: a non-zero exit is never
            // what it should do.
            let fix = crate::process::refused_hint(&out.stderr).unwrap_or(match w.cargo {
                Some(_) => "  fix: run the harness by hand (`cargo bench` / `cargo test` with the workload's args after `--`) to see why it fails, and fix it or give it other args",
                None => "  fix: correct its args/stdin/cwd, or set `expect = \"exit-code\"` if a non-zero exit is what it should do",
            });
            anyhow::bail!(
                "{}: workload `{}` failed on the baseline ({}); its stderr ends with:\n{}\n{fix}",
                at(w.line),
                w.name,
                out.status,
                indent(&out.stderr_tail(15), "    ")
            );
        }
        if let Some(f) = obs.files.iter().find(|f| f.contents.is_none()) {
            if out.status.success() {
                anyhow::bail!(
                    "{}: workload `{}` declares the output file {} but the baseline did not write it (it ran in a fresh copy of its cwd {})\n  fix: correct `files` (paths are relative to the workload's `cwd`)",
                    at(w.line),
                    w.name,
                    f.declared.display(),
                    w.cwd.display()
                );
            }
        }
        metric_on_baseline(ctx, w, out)?;
        peak = peak.max(out.max_rss_bytes);
        reference.observed.insert(w.name.clone(), obs);
    }
    ctx.record(
        "baseline: workloads",
        start.elapsed().as_secs_f64(),
        Some(peak),
    );
    ctx.ui().done(
        &format!("baseline ran {n}/{n} workloads"),
        start.elapsed().as_secs_f64(),
    );
    super::check_determinism(ctx, baseline, &mut reference)?;
    Ok(reference)
}

/// A timed workload's metric read from the baseline's own run: a baseline that prints no
/// usable figure (none, NaN, infinity, zero, a negative number, figures whose combination
/// overflows) is the culprit, named as such (exit 2) — not the first candidate measured
/// against it.
fn metric_on_baseline(
    ctx: &Context,
    w: &crate::spec::Workload,
    out: &crate::process::Outcome,
) -> anyhow::Result<()> {
    let Some(m) = w.metric.as_ref().filter(|_| w.eval) else {
        return Ok(());
    };
    match m.value_of_run(&out.stdout, &out.stderr) {
        Ok(_) => Ok(()),
        Err(what) => anyhow::bail!(
            "{}:{}: workload `{}`: the baseline's own output gives no figure its metric can compare, so no candidate can be measured on it: {what}\n  fix: make the program print a positive finite figure the regex captures, or remove `metric` to time the whole run",
            ctx.spec.path.display(),
            m.line,
            w.name
        ),
    }
}

/// A workload that declares no output `files` runs in the user's tree, so it must not write
/// there: one extra run in a private copy of its cwd shows what it writes, and such a
/// workload is refused with the fix — before it ever runs in the tree itself.
fn check_writes_nothing(
    ctx: &Context,
    baseline: &Candidate,
    w: &crate::spec::Workload,
) -> anyhow::Result<Option<crate::process::Outcome>> {
    if ctx.cwd_too_large_to_copy(w) {
        // The kernel refuses the write anyway where it confines workloads: the copy would
        // only have named it sooner.
        if crate::sys::confine::protection().kind() == "landlock" {
            return Ok(None);
        }
        ctx.warn_once(&format!(
            "workload `{}`: its cwd {} is too large to copy just to check that the workload writes nothing there; it was not checked\n  fix: point `cwd` at a smaller folder, or declare what it writes with `files = [...]`",
            w.name,
            w.cwd.display()
        ));
        return Ok(None);
    }
    let (copy, sandbox) = ctx.private_copy(w, "writes")?;
    // Spooled where the baseline's outputs go: for a slow workload this run is its
    // observation (see `record_baseline`).
    let spool = super::observe::spool_for(&ctx.run.outputs(StageName::BASELINE.as_str()), w);
    let outcome = ctx.run_in_place(&baseline.binary, &copy, &[], Some(spool))?;
    let changes = sandbox.changes(10);
    if changes.is_empty() {
        return Ok(Some(outcome));
    }
    let names: Vec<String> = changes.iter().map(|c| c.to_string()).collect();
    let (what, fix) = match names.iter().find(|n| n.starts_with("..")) {
        Some(out) => (
            format!("writes outside its working directory {} ({out}, beside it), which would change files next to your project", w.cwd.display()),
            "make it write inside its cwd and declare that with `files = [...]`, or give it a `cwd` whose parent it may write into".to_string(),
        ),
        None if changes.iter().all(|c| c.is_written()) => (
            format!("writes into its working directory {} ({}), which would change your files", w.cwd.display(), names.join(", ")),
            format!(
                "declare what it writes with `files = [{}]` (it then runs in a private copy of its cwd, and the files are compared), or point its output outside the project",
                names.iter().map(|n| crate::util::toml_string(n)).collect::<Vec<_>>().join(", ")
            ),
        ),
        None => (
            format!("changes its working directory {} ({}), which would change your files", w.cwd.display(), names.join("; ")),
            "make it leave its cwd as it is (deleting, making folders or links, changing permissions), or give it a `cwd` of its own; a workload that declares output `files = [...]` runs in a private copy of its cwd".to_string(),
        ),
    };
    anyhow::bail!(
        "{}:{}: workload `{}` {what} on every run\n  fix: {fix}",
        ctx.spec.path.display(),
        w.line,
        w.name,
    )
}

/// A workload the baseline crashed on (killed by `signal`): an error, except under
/// `expect = "exit-code"`, where the crash is what every candidate must do too (a warning
/// says it is timed crash included). A crash is never suggested as a result to accept.
fn crashed(
    ctx: &Context,
    w: &crate::spec::Workload,
    status: &crate::process::ExitStatus,
    signal: i32,
    stderr: &str,
) -> anyhow::Result<()> {
    let at = format!("{}:{}", ctx.spec.path.display(), w.line);
    let said = if stderr.trim().is_empty() {
        "it printed nothing on stderr".to_string()
    } else {
        format!("its stderr ends with:\n{}", indent(stderr, "    "))
    };
    if w.expect == Expect::ExitCode {
        ctx.warn_once(&format!(
            "{at}: workload `{}` crashes on the baseline ({status}); under `expect = \"exit-code\"` every candidate must crash the same way, and it is timed crash included",
            w.name
        ));
        return Ok(());
    }
    let core = if crate::process::signal_name(signal) == Some("SIGKILL") {
        "something killed it (the out-of-memory killer, or another process)"
    } else {
        "the program crashed on this input"
    };
    anyhow::bail!(
        "{at}: workload `{}` crashed on the baseline ({status}): {core}; {said}\n  fix: run the workload's command by hand to see why, and fix the program or give it an input it handles",
        w.name
    )
}

/// What checking a candidate found ([`check_candidate`]).
#[must_use]
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // one per candidate: boxing buys nothing
pub(crate) enum Checked {
    /// Every workload checked agrees with the baseline, and the crate's tests (when run)
    /// hold nothing against it.
    Passed,
    /// Its outputs differ on a workload, or the crate's tests fail with its settings.
    Rejected(Rejection),
}

/// Run every workload on the candidate and compare with the baseline; then, with
/// `[verify] tests = true`, run the crate's own tests with the candidate's settings. An
/// error is a fault (a workload or the tests could not be run), not a rejection.
pub(crate) fn check_candidate(
    ctx: &Context,
    cand: &Candidate,
    reference: &Reference,
) -> anyhow::Result<Checked> {
    check_candidate_on(ctx, cand, reference, &|_| true, true)
}

/// [`check_candidate`] on the workloads `which` picks, and the crate's tests when `tests`.
pub(crate) fn check_candidate_on(
    ctx: &Context,
    cand: &Candidate,
    reference: &Reference,
    which: &dyn Fn(&crate::spec::Workload) -> bool,
    tests: bool,
) -> anyhow::Result<Checked> {
    let start = Instant::now();
    let picked: Vec<_> = ctx.spec.workloads.iter().filter(|w| which(w)).collect();
    let n = picked.len();
    let outputs = ctx.run.outputs(&cand.tag());
    let mut result = Checked::Passed;
    for (i, w) in picked.into_iter().enumerate() {
        ctx.ui().progress(&format!(
            "{}: verifying [{}/{n}] {}",
            cand.label(),
            i + 1,
            w.name
        ));
        let obs = super::observe(ctx, &cand.binary, w, &outputs)?;
        if let Compared::Differs(m) = reference.check_settled(ctx, w, &cand.label(), &obs)? {
            result = Checked::Rejected(Rejection::Outputs(m));
            break;
        }
    }
    ctx.record(
        &format!("{}: verify", cand.label()),
        start.elapsed().as_secs_f64(),
        None,
    );
    let passed = matches!(result, Checked::Passed);
    if passed && n > 0 {
        ctx.ui().done(
            &format!("{} verified {n}/{n}", cand.label()),
            start.elapsed().as_secs_f64(),
        );
    }
    if passed && tests {
        if let Tested::Failed(t) = super::crate_tests::check(ctx, cand, reference)? {
            result = Checked::Rejected(Rejection::Tests(t));
        }
    }
    Ok(result)
}
