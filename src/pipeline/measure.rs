//! Timing a candidate against another on every eval workload with the bench engine, each
//! side in its own private cwd when the workload writes files, with a spinner per workload.

use std::time::Instant;

use anyhow::Context as _;

use crate::bench::stats::LogEstimate;
use crate::bench::{self, BenchOptions, Comparison, Estimate, ExpectedStatus};
use crate::context::{Candidate, Context};
use crate::spec::{Expect, Workload};
use crate::verify::Reference;

/// A candidate against another over every eval workload: the geometric mean (its estimate,
/// and on the log scale, to chain it with others), and each workload's comparison.
pub struct Measured {
    pub estimate: Estimate,
    pub log: LogEstimate,
    /// The level `estimate`'s interval is at (the strictest of the workloads').
    pub confidence: f64,
    pub per_workload: Vec<(String, Comparison)>,
}

/// Compare `cand` with `rival` on every eval workload.
pub fn measure(
    ctx: &Context,
    rival: &Candidate,
    cand: &Candidate,
    reference: &Reference,
) -> anyhow::Result<Measured> {
    let opts = BenchOptions::from_config(&ctx.spec.bench);
    let per_workload = compare_over_workloads(ctx, rival, cand, &opts, reference)?;
    let all: Vec<Comparison> = per_workload.iter().map(|(_, c)| c.clone()).collect();
    let (log, confidence) = bench::geomean_log(&all);
    Ok(Measured {
        estimate: bench::geomean(&all, opts.margin),
        log,
        confidence,
        per_workload,
    })
}

/// The exit status a timed run of `w` must have: 0, or for `expect = "exit-code"` the
/// baseline's (any, when the baseline's status varied from run to run).
pub fn expected_status(w: &Workload, reference: &Reference) -> ExpectedStatus {
    if w.expect != Expect::ExitCode {
        return ExpectedStatus::Success;
    }
    if let Some(n) = reference.nondeterministic.get(&w.name) {
        if !n.status_stable {
            return ExpectedStatus::Any;
        }
    }
    match reference.observed.get(&w.name) {
        Some(o) => ExpectedStatus::Exactly(o.outcome.status),
        None => ExpectedStatus::SameAsFirstRun,
    }
}

/// `b` against `a` on every eval workload.
fn compare_over_workloads(
    ctx: &Context,
    a: &Candidate,
    b: &Candidate,
    opts: &BenchOptions,
    reference: &Reference,
) -> anyhow::Result<Vec<(String, Comparison)>> {
    let eval: Vec<&Workload> = ctx.spec.workloads.iter().filter(|w| w.eval).collect();
    if eval.is_empty() {
        anyhow::bail!(
            "{}: no workload has `use = [\"eval\"]`, so nothing can be measured\n  fix: mark at least one workload for eval",
            ctx.spec.path.display()
        );
    }
    let start = Instant::now();
    let mut comps = Vec::new();
    for (i, w) in eval.iter().enumerate() {
        let label = format!(
            "{} vs {}: measuring [{}/{}] {}",
            b.label(),
            a.label(),
            i + 1,
            eval.len(),
            w.name
        );
        ctx.ui.step(&label);
        let spinner = ctx.ui.spinner(label.clone());
        // Each side writes its declared files into its own copy of the cwd.
        let (wa, _sa) = ctx.sandboxed(w, "bench-a")?;
        let (wb, _sb) = ctx.sandboxed(w, "bench-b")?;
        let ca = wa.command(&a.binary);
        let cb = wb.command(&b.binary);
        let expected = expected_status(w, reference);
        let c = bench::compare_expecting(&ca, &cb, opts, expected, &mut |p| {
            let est = p.estimate.map(|e| format!(", {e}")).unwrap_or_default();
            spinner.set_message(format!("{label}: {} pairs{est}", p.pairs));
        });
        spinner.finish_and_clear();
        let c = c.with_context(|| format!("workload `{}`", w.name))?;
        if let Some(warning) = c.lingering.warning() {
            ctx.warn_once(&format!("workload `{}` {warning}", w.name));
        }
        if let Some(note) = &c.stop_note {
            ctx.ui.warn(&format!("workload `{}`: {note}", w.name));
        }
        ctx.ui.info(&format!("{}: {}", w.name, c.headline()));
        comps.push((w.name.clone(), c));
    }
    ctx.record(
        &format!("{} vs {}: measure", b.label(), a.label()),
        start.elapsed().as_secs_f64(),
        None,
    );
    Ok(comps)
}
