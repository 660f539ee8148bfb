//! Timing a candidate against another on every eval workload with the bench engine, each
//! side in its own private cwd when the workload writes files, with a spinner per workload.

use std::time::Instant;

use anyhow::Context as _;

use crate::bench::{self, BenchOptions, Comparison, Estimate};
use crate::context::{Candidate, Context};
use crate::spec::{StageName, Workload};

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
) -> anyhow::Result<Measured> {
    let opts = BenchOptions::from_config(&ctx.spec.bench);
    let (vs_rival, per_workload) = compare_over_workloads(ctx, rival, cand, &opts)?;
    let vs_baseline = if rival.stage == StageName::Baseline {
        vs_rival
    } else {
        compare_over_workloads(ctx, baseline, cand, &opts)?.0
    };
    Ok(Measured {
        vs_rival,
        vs_baseline,
        per_workload,
    })
}

/// `b` against `a` on every eval workload; the geometric mean over them and each one.
pub fn compare_over_workloads(
    ctx: &Context,
    a: &Candidate,
    b: &Candidate,
    opts: &BenchOptions,
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
        let c = bench::compare(&ca, &cb, opts, &mut |p| {
            let est = p.estimate.map(|e| format!(", {e}")).unwrap_or_default();
            spinner.set_message(format!("{label}: {} pairs{est}", p.pairs));
        });
        spinner.finish_and_clear();
        let c = c.with_context(|| format!("workload `{}`", w.name))?;
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
