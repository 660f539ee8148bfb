//! The eval coverage pass: after training, the eval workloads run once on the same
//! instrumented binary, each into a profile of its own (`profiles/<name>/eval/<workload>/`,
//! merged to `eval/<workload>.profdata`), and `coverage` compares them with the training
//! profile. One instrumented run per eval workload, recorded as the step `pgo: eval
//! coverage`. Its result is kept in `cache/coverage/<key>.json` under what decides it — the
//! instrumented binary, the train and eval workloads, the training profile's content — so a
//! run that reuses the training reuses this too and runs nothing more. The result is the pgo
//! row's `profile_quality` (and the portable row's when it shares the profile), a `profile:`
//! line and, when training misses hot eval code, a warning that is also the row's note. It
//! never fails the stage (a failed pass is a note), releases do not run it, and it is not run
//! when every eval workload is also a train workload (training already ran them).

use std::path::Path;
use std::time::Instant;

use super::coverage::{self, EvalPgoProfile};
use super::{merge, profdata, TrainedProfile};
use crate::cache::{key_of, Store};
use crate::context::facts::PgoProfileQuality;
use crate::spec::Workload;
use crate::stage::{Context, StageError};
use crate::toolchain::profdata::function_counts;
use crate::util::reset_dir;

/// How well `profile` covers the eval workloads: the kept answer, or the eval pass run now.
/// `None` when there is no eval workload, none ran instrumented code, or the profile was
/// not trained here (no instrumented binary to run them on).
pub(crate) fn profile_quality(
    ctx: &Context,
    profile: &TrainedProfile,
    name: &str,
    label: &str,
) -> Result<Option<PgoProfileQuality>, StageError> {
    let eval: Vec<&Workload> = ctx.spec.workloads.iter().filter(|w| w.eval).collect();
    let Some(binary) = profile.instrumented_binary.as_deref() else {
        return Ok(None);
    };
    if eval.is_empty() {
        return Ok(None);
    }
    let train: Vec<&Workload> = ctx.spec.workloads.iter().filter(|w| w.train).collect();
    if eval_is_trained(&eval) {
        // The training ran exactly these workloads on this binary: the pass would only say
        // that training covers them, for a run of each.
        ctx.ui().info(&format!(
            "{label}: eval coverage not measured: every eval workload is also a train workload"
        ));
        return Ok(None);
    }
    let store = Store::new(&ctx.plan.optimize_dir, "coverage");
    let key = cache_key(binary, profile, &train, &eval).ok();
    let kept = key.as_deref().filter(|_| !ctx.plan.fresh);
    if let Some(quality) = kept.and_then(|k| store.get::<Option<PgoProfileQuality>>(k)) {
        ctx.ui().info(&format!(
            "{label}: eval coverage reused from an earlier run (the same profile and workloads)"
        ));
        return Ok(quality);
    }
    let start = Instant::now();
    let quality = measure(ctx, binary, profile, &eval, name, label);
    ctx.record(
        &format!("{label}: eval coverage"),
        start.elapsed().as_secs_f64(),
        None,
    );
    let quality = quality?;
    if let Some(k) = &key {
        store.put(k, &quality);
    }
    Ok(quality)
}

/// Whether every eval workload is also trained on (then training covers eval by definition).
fn eval_is_trained(eval: &[&Workload]) -> bool {
    eval.iter().all(|w| w.train)
}

/// The key of the pass: the instrumented binary, every train and eval workload, the
/// training profile (its file is named by its content's hash).
fn cache_key(
    binary: &Path,
    profile: &TrainedProfile,
    train: &[&Workload],
    eval: &[&Workload],
) -> std::io::Result<String> {
    let workloads = [train, eval].concat();
    let stable = profile.stable.file_name().unwrap_or_default();
    let extra = format!(
        "eval coverage; {} train workloads; {}",
        train.len(),
        stable.to_string_lossy()
    );
    key_of(&[binary], &workloads, &extra)
}

/// Run each eval workload on the instrumented binary into its own profile and compare.
fn measure(
    ctx: &Context,
    binary: &Path,
    profile: &TrainedProfile,
    eval: &[&Workload],
    name: &str,
    label: &str,
) -> Result<Option<PgoProfileQuality>, StageError> {
    let profdata = &profdata(ctx)?.path;
    let dir = ctx.run.profiles(name).join("eval");
    let mut profiles = Vec::new();
    let start = std::time::Instant::now();
    for (i, w) in eval.iter().enumerate() {
        ctx.ui().progress(&format!(
            "{label}: eval coverage [{}/{}] {}",
            i + 1,
            eval.len(),
            w.name
        ));
        let raw = dir.join(w.file_stem());
        run_one(ctx, binary, w, &raw)?;
        let merged = dir.join(format!("{}.profdata", w.file_stem()));
        merge(profdata, &raw, &merged)?;
        profiles.push(EvalPgoProfile {
            workload: w.name.clone(),
            functions: function_counts(profdata, &merged).map_err(counts_failed)?,
        });
    }
    ctx.ui().done(
        &format!("{label}: eval coverage {n}/{n}", n = eval.len()),
        start.elapsed().as_secs_f64(),
    );
    let train = function_counts(profdata, &profile.stable).map_err(counts_failed)?;
    Ok(coverage::assess(&train, &profiles))
}

/// A profile llvm-profdata could not read: the pass fails (a note on the row).
fn counts_failed(e: crate::toolchain::profdata::CountsError) -> StageError {
    StageError::Failed(e.to_string())
}

/// One eval workload on the instrumented binary, its raw profile into `raw`.
fn run_one(ctx: &Context, binary: &Path, w: &Workload, raw: &Path) -> Result<(), StageError> {
    reset_dir(raw)?;
    let pattern = raw.join("%m_%p.profraw");
    let out = ctx.run_workload(binary, w, &[("LLVM_PROFILE_FILE", &pattern)])?;
    if out.timed_out {
        return Err(StageError::Failed(format!(
            "eval workload `{}` timed out after {:?} on the instrumented binary",
            w.name, w.timeout
        )));
    }
    let wrote = std::fs::read_dir(raw)?
        .flatten()
        .any(|e| e.path().extension().is_some_and(|x| x == "profraw"));
    if !wrote {
        return Err(StageError::Failed(format!(
            "eval workload `{}` wrote no profile on the instrumented binary (it exits through abort, _exit or a signal?)",
            w.name
        )));
    }
    Ok(())
}
