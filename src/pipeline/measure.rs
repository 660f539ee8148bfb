//! Timing a candidate against another on every eval workload with the bench engine, each
//! side in its own private cwd when the workload writes files, with a spinner per workload.

use std::time::Instant;

use anyhow::Context as _;

use crate::bench::{self, BenchOptions, Comparison, Estimate, ExpectedStatus};
use crate::context::{Candidate, Context};
use crate::spec::{Expect, StageName, Workload};
use crate::verify::Reference;

/// A candidate's verdicts: against its rival, against the baseline, and per workload
/// (against its rival).
pub struct Measured {
    pub vs_rival: Estimate,
    pub vs_baseline: Estimate,
    pub per_workload: Vec<(String, Comparison)>,
}

/// Compare `cand` with `rival` (and with the baseline when the rival is not the baseline)
/// on every eval workload.
pub fn measure(
    ctx: &Context,
    rival: &Candidate,
    cand: &Candidate,
    baseline: &Candidate,
    reference: &Reference,
) -> anyhow::Result<Measured> {
    let opts = BenchOptions::from_config(&ctx.spec.bench);
    let (vs_rival, per_workload) = compare_over_workloads(ctx, rival, cand, &opts, reference)?;
    let vs_baseline = if rival.stage == StageName::Baseline {
        vs_rival
    } else {
        compare_over_workloads(ctx, baseline, cand, &opts, reference)?.0
    };
    Ok(Measured {
        vs_rival,
        vs_baseline,
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

/// `b` against `a` on every eval workload; the geometric mean over them and each one.
pub fn compare_over_workloads(
    ctx: &Context,
    a: &Candidate,
    b: &Candidate,
    opts: &BenchOptions,
    reference: &Reference,
) -> anyhow::Result<(Estimate, Vec<(String, Comparison)>)> {
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
    let all: Vec<Comparison> = comps.iter().map(|(_, c)| c.clone()).collect();
    Ok((bench::geomean(&all, opts.margin), comps))
}
