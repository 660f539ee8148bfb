//! The fp stage: LLVM's floating-point codegen options, each as `-Cllvm-args=<flag>` on
//! top of the best so far (the flags kept before it included), one candidate per flag.
//!
//! These change results — contraction fuses `a * b + c` into one rounding (FMA), the
//! `no-*` options let LLVM assume no NaNs, infinities or signed zeros, flushing denormals
//! changes tiny values — so the stage is off by default: a spec opts in with `[stages] try`
//! or `fp = [...]`. The ladder verifies each candidate against the baseline like any other
//! (`exact` rejects any changed digit, `numeric` accepts what is within its tolerances),
//! keeps it only when it is measurably faster too, and its row says how far the outputs
//! moved (`verify::deviation`, `OutputDeviation::describe`).
//!
//! Which options exist is asked of this rustc's LLVM once (`toolchain::llvm_args`, kept
//! with the toolchain's facts); a flag it lacks is a skipped row. `--fp-contract=fast` can
//! only fuse where the target has FMA instructions: x86-64 has none below the x86-64-v3
//! level, so on a portable x86-64 build the flag cannot change a thing and is skipped with
//! that reason (after the cpu stage kept x86-64-v3 or `native`, or with
//! `-Ctarget-feature=+fma` in your rustflags, it is built).
//!
//! Must not: measure, verify or decide (the pipeline does).

use super::{Build, Candidate, Context, Offer, Rival, StageError, Standing};
use crate::context::facts::StageFacts;
use crate::process;
use crate::stages::StageName;

/// The flags tried when the spec lists none, in this order.
pub(crate) const DEFAULT_FLAGS: [&str; 5] = [
    "--fp-contract=fast",
    "--enable-no-nans-fp-math",
    "--enable-no-infs-fp-math",
    "--enable-no-signed-zeros-fp-math",
    "--denormal-fp-math=positive-zero",
];

/// The fp stage's contract.
pub(crate) struct Fp;

impl super::Stage for Fp {
    fn offers<'c>(&self, ctx: &'c Context, standing: &Standing) -> Vec<Offer<'c>> {
        offers(ctx, standing)
    }

    /// A candidate per flag: the spec's list, else the default ones.
    fn count(&self, plan: &crate::context::Plan) -> super::Count {
        let flags = plan.spec.stages.fp.as_ref().map(Vec::len);
        super::Count::exactly(flags.unwrap_or(DEFAULT_FLAGS.len()))
    }

    /// `[stages] fp`: each flag one this rustc's LLVM accepts (`toolchain::llvm_args`),
    /// else exit 2 naming the spec's line.
    fn check(&self, plan: &crate::context::Plan, _triple: &str) -> anyhow::Result<()> {
        let spec = &plan.spec;
        let Some(flags) = &spec.stages.fp else {
            return Ok(());
        };
        let options = crate::toolchain::llvm_args::llvm_options(&plan.rustc, &plan.optimize_dir);
        let Ok(options) = options else {
            return Ok(()); // the stage's rows say so
        };
        for (i, flag) in flags.iter().enumerate() {
            if let Err(why) = options.accepts(flag) {
                let line = spec.stages.fp_lines.get(i).copied().unwrap_or(0);
                anyhow::bail!(
                    "{}:{line}: [stages] fp: \"{flag}\": {why}\n  fix: list options from `rustc -Cllvm-args=--help-hidden`, e.g. {}",
                    spec.path.display(),
                    DEFAULT_FLAGS.join(", ")
                );
            }
        }
        Ok(())
    }
}

/// One offer per flag, each built on the best so far when the ladder reaches it.
pub(crate) fn offers<'c>(ctx: &'c Context, _standing: &Standing) -> Vec<Offer<'c>> {
    let flags: Vec<String> = match &ctx.spec.stages.fp {
        Some(list) => list.clone(),
        None => DEFAULT_FLAGS.iter().map(|f| f.to_string()).collect(),
    };
    let options =
        crate::toolchain::llvm_args::llvm_options(&ctx.plan.rustc, &ctx.plan.optimize_dir);
    ctx.ui().info(&format!(
        "fp: flags {} (they change floating-point results: each is kept only when every workload's outputs verify and it is faster)",
        flags.join(", ")
    ));
    flags
        .into_iter()
        .map(|flag| {
            let accepted = match &options {
                Ok(o) => o.accepts(&flag),
                Err(e) => Err(format!(
                    "cannot tell which options this rustc's LLVM accepts: {e}"
                )),
            };
            let candidate = match accepted {
                Err(why) => Build::Now(Err(StageError::NotAvailable(why))),
                Ok(()) => {
                    let f = flag.clone();
                    Build::OnBest(Box::new(move |best: &Candidate, _: Option<&_>| {
                        build(ctx, best, &f)
                    }))
                }
            };
            Offer {
                variant: Some(flag),
                rival: Rival::Best,
                candidate,
            }
        })
        .collect()
}

fn build(ctx: &Context, best: &Candidate, flag: &str) -> Result<Candidate, StageError> {
    let arg = format!("-Cllvm-args={flag}");
    let all = best.settings.all_rustflags();
    if all.contains(&arg) {
        return Err(StageError::Redundant(format!(
            "the {} build already passes {arg}",
            best.label()
        )));
    }
    if contracts(flag) {
        let triple = (best.settings.target.clone()).unwrap_or_else(|| ctx.plan.rustc.host.clone());
        if let Some(why) = no_fma(&triple, &all) {
            return Err(StageError::NotAvailable(why));
        }
    }
    let settings = best.settings.with_rustflags([arg]);
    let facts = StageFacts {
        variant: Some(flag.to_string()),
        fp_flags: Some(flags_of(&settings.stage_rustflags)),
        ..Default::default()
    };
    let (cand, _) = super::build_candidate(ctx, StageName::Fp, settings, facts)?;
    Ok(cand)
}

/// Whether `flag` asks LLVM to fuse multiplies and adds.
fn contracts(flag: &str) -> bool {
    matches!(flag.trim_start_matches('-').split_once('='), Some(("fp-contract", v)) if v != "off")
}

/// The `-Cllvm-args=` values of `flags`, in order.
pub(crate) fn flags_of(flags: &[String]) -> Vec<String> {
    flags
        .iter()
        .filter_map(|f| f.strip_prefix("-Cllvm-args="))
        .map(str::to_string)
        .collect()
}

/// Why contraction can change nothing on `triple` with these rustflags: an x86 target
/// without the `fma` feature (other architectures with floating point have FMA). `None`
/// when it can, or when rustc cannot say (then it is built and measured).
fn no_fma(triple: &str, rustflags: &[String]) -> Option<String> {
    if !(triple.starts_with("x86_64") || triple.starts_with("i686") || triple.starts_with("i586")) {
        return None;
    }
    let mut args = vec![
        "--print".to_string(),
        "cfg".into(),
        "--target".into(),
        triple.into(),
    ];
    args.extend(target_flags(rustflags));
    let out = process::run_tool(crate::toolchain::rustc_program(), &args).ok()?;
    if !out.status.success() {
        return None;
    }
    let features = super::cpu::parse_features(&String::from_utf8_lossy(&out.stdout));
    (!features.contains("fma")).then(|| {
        let cpu = crate::cargo::target_cpu_of(rustflags);
        format!(
            "--fp-contract=fast fuses a * b + c into FMA instructions, and the best so far builds for {} without them, so it could change nothing\n  fix: keep a CPU level with FMA first (the cpu stage's x86-64-v3 or native, before fp), or add -Ctarget-feature=+fma to your rustflags",
            cpu.map_or(format!("{triple}'s default CPU"), |c| format!("target-cpu {c}"))
        )
    })
}

/// The rustflags that decide target features: `-Ctarget-cpu=…`, `-Ctarget-feature=…`, in
/// either spelling (`-C x=…` too).
fn target_flags(flags: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut prev_c = false;
    for f in flags {
        let opt = if prev_c {
            Some(f.as_str())
        } else {
            f.strip_prefix("-C")
        };
        prev_c = f == "-C";
        if let Some(o) =
            opt.filter(|o| o.starts_with("target-cpu=") || o.starts_with("target-feature="))
        {
            out.push(format!("-C{o}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contraction_and_flag_lists() {
        assert!(contracts("--fp-contract=fast"));
        assert!(contracts("--fp-contract=on"));
        assert!(!contracts("--fp-contract=off"));
        assert!(!contracts("--enable-no-nans-fp-math"));
        let rf = [
            "--cfg".to_string(),
            "x".into(),
            "-Ctarget-cpu=x86-64-v3".into(),
            "-C".into(),
            "target-feature=+fma".into(),
            "-Cllvm-args=--fp-contract=fast".into(),
        ];
        assert_eq!(
            target_flags(&rf),
            ["-Ctarget-cpu=x86-64-v3", "-Ctarget-feature=+fma"]
        );
        assert_eq!(flags_of(&rf), ["--fp-contract=fast"]);
    }

    #[test]
    fn fma_is_known_from_the_target_cpu() {
        let triple = crate::toolchain::rustc()
            .map(|r| r.host)
            .unwrap_or_default();
        if !triple.starts_with("x86_64") {
            return;
        }
        let why = no_fma(&triple, &[]).expect("x86-64 has no FMA");
        assert!(why.contains("x86_64") && why.contains("fix: "), "{why}");
        assert!(no_fma(&triple, &["-Ctarget-cpu=x86-64-v3".into()]).is_none());
        assert!(no_fma(&triple, &["-Ctarget-feature=+fma".into()]).is_none());
        assert!(no_fma("aarch64-unknown-linux-gnu", &[]).is_none());
    }
}
