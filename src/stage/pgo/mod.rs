//! The PGO stage: instrumented build → train workloads → `llvm-profdata merge` →
//! optimized build, with settings identical to the best candidate's except the PGO flags.
//! After training, the eval workloads run once on the instrumented binary to see whether
//! training ran what they run (`eval`: the pass and its cache; `coverage`: the overlap
//! arithmetic and the warning when training misses hot eval code). With `--pgo-profile FILE`
//! the stage trains nothing and builds with that profile (`given`).

mod beside;
mod coverage;
mod eval;
mod given;
pub(crate) mod whole;

pub(crate) use beside::{ahead, speculate};
use beside::{start_after, twinned};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{Build, Candidate, Context, Offer, Rival, StageError, Standing};
use crate::cache::{run_key, Store};
use crate::context::facts::{PgoProfileFit, PgoProfileStats, StageFacts};
pub(crate) use crate::context::TrainedProfile;
use crate::stages::StageName;
use crate::store::{file_hash, Blobs, KeptBlob};
use crate::util::reset_dir;

/// The instrumented program's value-profiling warning, and the flag that cures it.
const VP_WARNING: &str = "Running out of static counters";
/// Raised once, when the first training run prints [`VP_WARNING`].
const VP_COUNTERS_RETRY: u32 = 64;

/// The variant name of the PGO build of the portable best (see the pipeline).
pub(crate) const PORTABLE: &str = "portable";

/// The pgo stage's contract.
pub(crate) struct Pgo;

impl super::Stage for Pgo {
    fn offers<'c>(&self, ctx: &'c Context, standing: &Standing) -> Vec<Offer<'c>> {
        offers(ctx, standing)
    }

    /// Its build, and with C (when the c-compiler stage is tried and has a candidate) the
    /// whole-program build too.
    fn count(&self, plan: &crate::context::Plan) -> super::Count {
        let c = crate::stages::changing(crate::stages::Changes::CCompiler);
        let whole = match plan.spec.stages.tries(c) {
            true => super::contract(c).count(plan).most,
            false => 0,
        };
        super::Count::exactly(1 + whole)
    }
}

/// PGO on top of the best so far; when the best picks a CPU, also on the portable best
/// (`pgo (portable)`, against the portable best), so the binary that runs anywhere gets
/// PGO too. When the portable best is the best without its target-cpu, it is built with
/// the best's profile (one instrumented build and training for both; how well the profile
/// fits it is recorded); otherwise it is trained on its own.
pub(crate) fn offers<'c>(ctx: &'c Context, standing: &Standing) -> Vec<Offer<'c>> {
    if let Some(file) = &ctx.plan.pgo_profile {
        return given::offers(ctx, standing, file);
    }
    let (best, profile) = match train_profile(ctx, &standing.best.settings, "pgo", "pgo") {
        Ok(mut p) => {
            let note = assess_coverage(ctx, &mut p, "pgo", "pgo");
            let mut beside = Vec::new();
            if shares_profile(standing) {
                // The portable build needs only this profile: it builds beside this one.
                let portable = use_settings(ctx, &standing.portable.settings, &p, false);
                let label = crate::context::label("pgo", Some(PORTABLE));
                beside.push((format!("{label}: optimized"), portable));
            }
            let settings = twinned(ctx, &standing.best.settings, standing.expected);
            let later = start_after(ctx, standing, &settings, &p, beside);
            let best = build_with(ctx, &settings, &p, None, false).map(|mut c| {
                c.notes.extend(note);
                c
            });
            if best.is_ok() {
                ctx.build_after_stage(later);
            }
            (best, Ok(p))
        }
        Err(e) => {
            let why = e.to_string();
            (Err(e), Err(why))
        }
    };
    let mut offers = vec![Offer::against_best(best)];
    if let Ok(p) = &profile {
        whole::extend(ctx, &standing.best.settings, p, &mut offers);
    }
    if standing.best.targets_cpu() && !standing.portable.targets_cpu() {
        let portable = standing.portable;
        let candidate = if shares_profile(standing) {
            profile
                .map_err(|why| StageError::Failed(format!("its profile is pgo's: {why}")))
                .and_then(|p| build_with(ctx, &portable.settings, &p, Some(PORTABLE), false))
                .map(|mut c| {
                    c.notes.push("built with the pgo build's profile: one instrumented build and one training serve both".into());
                    c
                })
        } else {
            train_profile(ctx, &portable.settings, "pgo-portable", "pgo (portable)")
                .and_then(|p| build_with(ctx, &portable.settings, &p, Some(PORTABLE), false))
        };
        offers.push(Offer {
            variant: Some(PORTABLE.to_string()),
            rival: Rival::Portable,
            candidate: Build::Now(candidate),
        });
    }
    offers
}

/// Whether `pgo (portable)` is built with the pgo build's profile: the best picks a CPU and
/// the portable best is the best without it.
fn shares_profile(standing: &Standing) -> bool {
    standing.best.targets_cpu()
        && !standing.portable.targets_cpu()
        && without_cpu(&standing.best.settings) == standing.portable.settings
}

/// The eval coverage of `profile` (kept in it, so every row built with it reports it) and
/// its summary line; returns the warning when training misses hot eval code, or why the
/// coverage could not be measured, for the pgo row's notes. Never fails the stage.
fn assess_coverage(
    ctx: &Context,
    profile: &mut TrainedProfile,
    name: &str,
    label: &str,
) -> Option<String> {
    match eval::profile_quality(ctx, profile, name, label) {
        Ok(Some(q)) => {
            ctx.ui().info(&format!("profile: {}", q.describe()));
            let warning = coverage::warning(&q);
            if let Some(w) = &warning {
                ctx.ui().warn(w);
            }
            profile.quality = Some(q);
            warning
        }
        Ok(None) => None,
        Err(e) => {
            let msg = format!("eval coverage not measured: {e}");
            ctx.ui().info(&format!("{label}: {msg}"));
            Some(msg)
        }
    }
}

/// `settings` without any `-Ctarget-cpu` flag.
fn without_cpu(settings: &crate::cargo::BuildSettings) -> crate::cargo::BuildSettings {
    let mut s = settings.clone();
    let mut out = Vec::new();
    let mut flags = s.stage_rustflags.iter().peekable();
    while let Some(f) = flags.next() {
        if f == "-C" && flags.peek().is_some_and(|n| n.starts_with("target-cpu=")) {
            flags.next();
        } else if !f.starts_with("-Ctarget-cpu=") {
            out.push(f.clone());
        }
    }
    s.stage_rustflags = out;
    s
}

/// Instrumented build of `settings` (with `--target <host>`) → train workloads →
/// merged profile in the content-addressed cache (or the one an earlier run kept for the
/// same instrumented binary and train workloads). `name` names the run folder's profiles.
pub(crate) fn train_profile(
    ctx: &Context,
    settings: &crate::cargo::BuildSettings,
    name: &str,
    label: &str,
) -> Result<TrainedProfile, StageError> {
    // Trained earlier in this run: ahead of the stage (`speculate`), or by the stage itself.
    let key = format!("{name} {}", settings.hash());
    if let Some(p) = ctx.trained_profile(&key) {
        return Ok(p);
    }
    profdata(ctx)?;
    let instrumented = instrument(ctx, settings, label, None)?;
    let profile = train_instrumented(ctx, settings, instrumented, name, label)?;
    ctx.keep_trained_profile(key, profile.clone());
    Ok(profile)
}

/// llvm-profdata, or why PGO cannot run.
fn profdata<'c>(ctx: &'c Context) -> Result<&'c crate::toolchain::Tool, StageError> {
    ctx.plan.llvm_profdata.as_ref().ok_or_else(|| {
        StageError::Failed(
            "llvm-profdata of rustc's LLVM is not available (run `cargo optimize doctor`)".into(),
        )
    })
}

/// The instrumented build of `settings` (for the host target, named explicitly), with
/// `vp` value-profile counters per site when given; its settings and what it built.
pub(crate) fn instrument(
    ctx: &Context,
    settings: &crate::cargo::BuildSettings,
    label: &str,
    vp: Option<u32>,
) -> Result<(crate::cargo::BuildSettings, crate::cargo::Built), StageError> {
    // The folder compiled into the instrumented binary is a stable one, so its build is
    // cached across runs; training sends the profiles to this run's own folder through
    // LLVM_PROFILE_FILE, so concurrent runs never mix profiles.
    instrument_into(
        ctx,
        settings,
        label,
        vp,
        &ctx.plan.optimize_dir.join("pgo-default"),
    )
}

/// [`instrument`], the binary writing its profiles into `gen_dir` (compiled in:
/// `-Cprofile-generate`) unless `LLVM_PROFILE_FILE` says otherwise. `profile collect` builds
/// the binary to deploy with it.
pub(crate) fn instrument_into(
    ctx: &Context,
    settings: &crate::cargo::BuildSettings,
    label: &str,
    vp: Option<u32>,
    gen_dir: &Path,
) -> Result<(crate::cargo::BuildSettings, crate::cargo::Built), StageError> {
    let instrumented = instrumented_settings(ctx, settings, vp, gen_dir);
    let built = ctx.build(&format!("{label}: instrumented"), &instrumented)?;
    Ok((instrumented, built))
}

/// The settings of the instrumented build of `settings` ([`instrument_into`]).
pub(super) fn instrumented_settings(
    ctx: &Context,
    settings: &crate::cargo::BuildSettings,
    vp: Option<u32>,
    gen_dir: &Path,
) -> crate::cargo::BuildSettings {
    let mut flags = vec![format!("-Cprofile-generate={}", gen_dir.display())];
    if let Some(n) = vp {
        flags.push(format!("-Cllvm-args=-vp-counters-per-site={n}"));
    }
    if crate::cargo::uses_lto(&ctx.plan.project, settings) == Some(true) {
        // Counters are placed before LTO, per function, under names LTO does not change:
        // the optimized build (with the profile's LTO) finds every one, for less than half
        // the build.
        // Figures: docs/src/decisions.md, "Instrumented builds skip LTO".
        flags.push(crate::cargo::NO_LTO_FLAG.to_string());
    }
    let instrumented = with_host_target(ctx, settings).with_rustflags(flags);
    whole::instrumented(ctx, settings, instrumented, gen_dir)
}

/// What a training of `binary` on `workloads` is kept under; `None`, said once with the
/// fix, when the workloads' inputs are too large to key. Said, not silent: every build on
/// the profile is redone too, and an unchanged re-run costs minutes.
/// Figures: docs/src/decisions.md, "A training too large to key is said".
fn training_key(
    ctx: &Context,
    label: &str,
    binary: &Path,
    workloads: &[&crate::spec::Workload],
) -> Option<String> {
    match run_key(binary, workloads) {
        Ok(key) => Some(key),
        Err(why) => {
            ctx.warn_once(&format!(
                "{label}: the training is not kept for later runs, so an unchanged re-run trains again and rebuilds what uses its profile: {why}\n  fix: {}",
                crate::cache::unkeyed_fix()
            ));
            None
        }
    }
}

/// Train the instrumented build of `settings` (from [`instrument`]) and merge its
/// profile; when the program runs out of value-profile counters it is built again with
/// more and trained again.
pub(crate) fn train_instrumented(
    ctx: &Context,
    settings: &crate::cargo::BuildSettings,
    (mut instrumented, mut built): (crate::cargo::BuildSettings, crate::cargo::Built),
    name: &str,
    label: &str,
) -> Result<TrainedProfile, StageError> {
    let profdata_tool = profdata(ctx)?;
    let mut notes = Vec::new();
    let raw_dir = ctx.run.profiles(name).join("raw");
    let trained = Store::new(&ctx.plan.optimize_dir, "profiles");
    let profiles = Blobs::profiles(&ctx.plan.optimize_dir);
    let train_workloads: Vec<_> = ctx.spec.workloads.iter().filter(|w| w.train).collect();
    let mut vp_counters: Option<u32> = None;
    let (warnings, key, reused, installed) = loop {
        let installed = install_instrumented(ctx, name, &built.binary)?;
        // The same instrumented binary on the same train workloads: the profile an earlier
        // run merged, when it is still the file it was.
        let key = training_key(ctx, label, &built.binary, &train_workloads);
        let kept = key.as_deref().filter(|_| !ctx.plan.fresh);
        if let Some(hit) = kept.and_then(|k| reusable(&trained, &profiles, k)) {
            break (BTreeMap::new(), key, Some(hit), installed);
        }
        reset_dir(&raw_dir)?;
        let warnings = train(ctx, label, &installed, &raw_dir)?;
        let vp_hit = warnings.keys().any(|w| w.contains(VP_WARNING));
        if vp_hit && vp_counters.is_none() {
            let msg = format!(
                "the instrumented program ran out of value-profile counters; rebuilt it with -Cllvm-args=-vp-counters-per-site={VP_COUNTERS_RETRY} and trained again"
            );
            ctx.ui().warn(&msg);
            notes.push(msg);
            vp_counters = Some(VP_COUNTERS_RETRY);
            (instrumented, built) = instrument(ctx, settings, label, vp_counters)?;
            continue;
        }
        break (warnings, key, None, installed);
    };
    for (w, n) in &warnings {
        let msg = format!("instrumented program said ({n}×): {w}");
        ctx.ui().warn(&msg);
        notes.push(msg);
    }

    let (stable, stats, repaired) = match reused {
        Some(t) => {
            ctx.ui().info(&format!(
                "{label}: profile reused from an earlier run (the same instrumented binary and train workloads): {}",
                t.profile.display()
            ));
            (t.profile, t.stats, false)
        }
        None => {
            let (stable, stats, repaired) =
                merge_and_keep(ctx, label, name, &profdata_tool.path, &raw_dir, &mut notes)?;
            if let Some(k) = &key {
                let hash = file_hash(&stable)?;
                let value = Trained {
                    profile: stable.clone(),
                    hash,
                    stats: stats.clone(),
                };
                trained.put(k, &value);
            }
            (stable, stats, repaired)
        }
    };
    Ok(TrainedProfile {
        stable,
        stats,
        repaired,
        notes,
        instrumented: Some(instrumented),
        instrumented_binary: Some(installed),
        vp_counters,
        quality: None,
        source: None,
    })
}

/// The instrumented binary, copied into the run folder to run under the program's own file
/// name (`bin/<name>-instrumented/<file>`), as every candidate does.
fn install_instrumented(ctx: &Context, name: &str, built: &Path) -> std::io::Result<PathBuf> {
    Ok(ctx.install_as(&format!("{name}-instrumented"), built)?.0)
}

/// Whether BOLT can run here and would take a binary built with `settings` plus
/// relocations as it is (the profile keeps symbols; no relocations yet).
pub(crate) fn bolt_takes_as_is(ctx: &Context, settings: &crate::cargo::BuildSettings) -> bool {
    let flags = settings.all_rustflags();
    matches!(ctx.plan.bolt_tools, Some(Ok(_)))
        && ctx.plan.project.library.is_none()
        && !super::bolt::has_emit_relocs(&flags)
        && super::bolt::stripping_flags(&flags).is_empty()
        && crate::cargo::keeps_symbols(&ctx.plan.project, settings) == Some(true)
}

/// `settings` for the host target named explicitly (as the instrumented build has it, so
/// symbol names match between the two builds).
pub(super) fn with_host_target(
    ctx: &Context,
    settings: &crate::cargo::BuildSettings,
) -> crate::cargo::BuildSettings {
    let mut target = settings.clone();
    target
        .target
        .get_or_insert_with(|| ctx.plan.rustc.host.clone());
    target
}

/// The `-Cprofile-use` build of `settings` with `profile`; a `variant` gets its own
/// binary name and label (`pgo (portable)`, `bin/pgo-portable`). `relocs`: linked with
/// relocations, ready for BOLT (see [`bolt_takes_as_is`]).
/// The optimized build of `settings` with `profile` ([`build_with`] builds it).
pub(super) fn use_settings(
    ctx: &Context,
    settings: &crate::cargo::BuildSettings,
    profile: &TrainedProfile,
    relocs: bool,
) -> crate::cargo::BuildSettings {
    let mut use_flags = use_flags(profile);
    if relocs {
        // Linked ready for BOLT, so the BOLT stage reads this binary as is instead of
        // building it again with `-Wl,-q`.
        use_flags.push(crate::cargo::EMIT_RELOCS_FLAG.to_string());
    }
    with_host_target(ctx, settings).with_rustflags(use_flags)
}

/// The rustflags an optimized build adds for `profile`.
fn use_flags(profile: &TrainedProfile) -> Vec<String> {
    vec![
        format!("-Cprofile-use={}", profile.stable.display()),
        "-Cllvm-args=-pgo-warn-missing-function".to_string(),
    ]
}

pub(crate) fn build_with(
    ctx: &Context,
    settings: &crate::cargo::BuildSettings,
    profile: &TrainedProfile,
    variant: Option<&str>,
    relocs: bool,
) -> Result<Candidate, StageError> {
    let name = match variant {
        Some(v) => format!("pgo-{v}"),
        None => "pgo".to_string(),
    };
    let label = crate::context::label("pgo", variant);
    let mut notes = profile.notes.clone();
    let stable = &profile.stable;
    let use_settings = use_settings(ctx, settings, profile, relocs);
    // What `apply` checks before it copies the profile into the project.
    let profile_sha256 = crate::store::file_sha256(stable).ok();
    if profile.repaired {
        notes.push(redo_after_repair(ctx, stable, &use_settings));
    }
    let built = ctx.build(&format!("{label}: optimized"), &use_settings)?;
    if let Some(problem) = profile_problems(&built.stderr, stable).first() {
        return Err(StageError::Failed(format!(
            "rustc could not use the PGO profile: {problem}\n  the binary was built without the profile, so it is not reported as a PGO build\n  fix: run `cargo optimize clean` and run again; if it persists, the profile is from another LLVM version than rustc's ({})",
            ctx.plan.rustc.llvm_version
        )));
    }
    let mut fit = PgoProfileFit {
        profile_functions: Some(profile.stats.functions),
        ..profile_fit(&built.stderr, stable)
    };
    if profile.source.is_some() {
        fit = given::with_functions_in_program(ctx, fit, stable, &built.binary);
    }
    notes.extend(fit_note(ctx, profile, variant, &fit));
    let missing = count_missing_functions(&built.stderr);
    if missing > 0 {
        ctx.ui().info(&format!(
            "{missing} function(s) of the package had no profile data: the profile does not match this code (built from other sources or settings), so they are optimized without it"
        ));
    }
    let (binary, size_bytes) = ctx.install_as(&name, &built.binary)?;

    let facts = StageFacts {
        variant: variant.map(str::to_string),
        profile_fit: Some(fit),
        profile: Some(profile.stats.clone()),
        profile_sha256,
        functions_without_profile: Some(missing),
        instrumented_rustflags: profile.instrumented.as_ref().map(|s| s.all_rustflags()),
        // Unknown for a profile trained elsewhere.
        vp_counters_per_site: profile.source.is_none().then_some(profile.vp_counters),
        profile_source: profile.source.clone(),
        profile_quality: profile.quality.clone(),
        ..Default::default()
    };
    Ok(Candidate {
        stage: StageName::Pgo,
        binary,
        settings: use_settings,
        size_bytes,
        build_seconds: built.seconds,
        notes,
        facts,
    })
}

/// A cached profile that did not match its content was written again: the build that used
/// it is redone (its target dir removed), and the warning is the row's note.
fn redo_after_repair(
    ctx: &Context,
    stable: &std::path::Path,
    settings: &crate::cargo::BuildSettings,
) -> String {
    let msg = format!(
        "the cached profile {} did not match its content (a run was interrupted while writing it?): it was written again, and the build that used it is redone",
        stable.display()
    );
    ctx.ui().warn(&msg);
    let _ = std::fs::remove_dir_all(ctx.plan.optimize_dir.join("build").join(settings.hash()));
    msg
}

/// How `profile` fits the build of `variant` (`fit`), said: a given profile's fit always
/// (stale: a warning with the fix), a trained one's only when functions changed. The
/// row's note when functions changed.
fn fit_note(
    ctx: &Context,
    profile: &TrainedProfile,
    variant: Option<&str>,
    fit: &PgoProfileFit,
) -> Option<String> {
    let label = crate::context::label("pgo", variant);
    if let Some(src) = &profile.source {
        let msg = format!(
            "{label}: the profile from {}: {}",
            src.display(),
            fit.describe()
        );
        let fix = "fix: collect again with a collector built from this source and these settings (`cargo optimize profile collect`)";
        if fit.foreign() {
            let whose = format!(
                "the profile from {}: {}",
                src.display(),
                fit.describe_foreign()
            );
            ctx.ui().warn(&format!(
                "{label}: {whose}\n  {fix} in this project, and give that profile"
            ));
            return Some(whose);
        }
        match fit.changed_functions {
            0 => ctx.ui().info(&msg),
            _ => ctx.ui().warn(&format!("{msg}\n  {fix}")),
        }
    }
    if fit.changed_functions == 0 {
        return None;
    }
    let whose = match (&profile.source, variant) {
        (Some(src), _) => format!(
            "the profile from {} is stale against this source",
            src.display()
        ),
        (None, Some(_)) => "the profile trained on the pgo build (shared to spare a build and a training) does not fully fit this one".into(),
        (None, None) => "the fresh profile did not fit its own build".into(),
    };
    Some(format!("{whose}: {}", fit.describe()))
}

/// Merge this run's raw profiles, report them, and keep the result in the content-addressed
/// cache (`cache/<hash>.profdata`, which the PGO build's flags name). Returns the cached
/// file, the profile's statistics, and whether a bad cache entry had to be replaced.
fn merge_and_keep(
    ctx: &Context,
    label: &str,
    name: &str,
    profdata: &Path,
    raw_dir: &Path,
    notes: &mut Vec<String>,
) -> Result<(PathBuf, PgoProfileStats, bool), StageError> {
    let profiles = ctx.run.profiles(name);
    std::fs::create_dir_all(&profiles)?;
    let merged = profiles.join("merged.profdata");
    let stats = ctx.timed(&format!("{label}: llvm-profdata merge"), || {
        merge(profdata, raw_dir, &merged)
    })?;
    ctx.ui().info(&format!(
        "profile: {} raw file(s), {} instrumented function(s), max count {}{}",
        stats.raw_files,
        stats.functions,
        stats.max_count,
        if stats.dropped.is_empty() {
            String::new()
        } else {
            format!(", {} file(s) dropped", stats.dropped.len())
        }
    ));
    for d in &stats.dropped {
        notes.push(format!("llvm-profdata dropped: {d}"));
    }
    let KeptBlob {
        path: stable,
        repaired,
        ..
    } = cache_profile(&ctx.plan.optimize_dir, &merged)?;
    Ok((stable, stats, repaired))
}

/// A profile an earlier run trained and merged (`cache/profiles/<run key>.json`).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Trained {
    profile: PathBuf,
    /// The content hash of `profile` when it was kept.
    hash: String,
    stats: PgoProfileStats,
}

/// The kept profile for `key`, when its file is the content-addressed profile of its
/// digest in `profiles` (`store::Blobs::profiles`: a name that is no digest, or a file
/// elsewhere, is not trusted) and still exactly what was kept.
fn reusable(store: &Store, profiles: &Blobs, key: &str) -> Option<Trained> {
    let t: Trained = store.get(key)?;
    // Not `Blobs::get`, which removes a mismatching file: the training is redone then, and
    // `Blobs::keep` must still find the damaged copy to say it was repaired.
    (profiles.path_of(&t.hash)? == t.profile && file_hash(&t.profile).ok()? == t.hash).then_some(t)
}

/// Run every `train` workload on the instrumented binary; returns the program's own
/// LLVM profile warnings, collapsed to one entry per distinct message with a count.
fn train(
    ctx: &Context,
    label: &str,
    binary: &Path,
    raw_dir: &Path,
) -> Result<BTreeMap<String, usize>, StageError> {
    let pattern = raw_dir.join("%m_%p.profraw");
    let train: Vec<_> = ctx.spec.workloads.iter().filter(|w| w.train).collect();
    let mut warnings = BTreeMap::new();
    let start = std::time::Instant::now();
    for (i, w) in train.iter().enumerate() {
        ctx.ui().progress(&format!(
            "{label}: training [{}/{}] {}",
            i + 1,
            train.len(),
            w.name
        ));
        let out = ctx.run_workload(binary, w, &[("LLVM_PROFILE_FILE", &pattern)])?;
        if out.timed_out {
            return Err(StageError::Failed(format!(
                "train workload `{}` timed out after {:?} on the instrumented binary",
                w.name, w.timeout
            )));
        }
        collapse_profile_warnings(&out.stderr, &mut warnings);
    }
    ctx.record(
        &format!("{label}: training"),
        start.elapsed().as_secs_f64(),
        None,
    );
    ctx.ui().done(
        &format!("{label}: trained on {n}/{n} workloads", n = train.len()),
        start.elapsed().as_secs_f64(),
    );
    Ok(warnings)
}

/// Count `LLVM Profile Warning/Error:` lines by message.
pub(crate) fn collapse_profile_warnings(stderr: &[u8], into: &mut BTreeMap<String, usize>) {
    for line in String::from_utf8_lossy(stderr).lines() {
        let line = line.trim();
        if line.starts_with("LLVM Profile Warning:") || line.starts_with("LLVM Profile Error:") {
            *into.entry(line.to_string()).or_insert(0) += 1;
        }
    }
}

/// Merge every `.profraw` in `raw_dir` into `out`; an empty profile is an error that
/// explains the usual causes.
fn merge(profdata: &Path, raw_dir: &Path, out: &Path) -> Result<PgoProfileStats, StageError> {
    let raw: Vec<PathBuf> = std::fs::read_dir(raw_dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "profraw"))
        .collect();
    if raw.is_empty() {
        return Err(StageError::Failed(format!(
            "the train workloads produced no profile (.profraw) in {}\n  usual causes: the program exits through `std::process::abort`, `_exit` or a signal (the profile is written by an atexit handler), it is killed by a timeout, or no workload has `use = [\"train\"]`\n  fix: let the program return from main (or call std::process::exit) in the train workloads",
            raw_dir.display()
        )));
    }
    let inputs: Vec<(&Path, u64)> = raw.iter().map(|p| (p.as_path(), 1)).collect();
    let said = crate::toolchain::profdata::merge(profdata, &inputs, out)
        .map_err(|e| StageError::Failed(e.to_string()))?;
    let dropped: Vec<String> = said
        .iter()
        .map(|s| match s.input {
            Some(i) => format!("{}: {}", raw[i].display(), s.message),
            None => s.message.clone(),
        })
        .collect();
    let summary = crate::toolchain::profdata::summary(profdata, out)
        .map_err(|e| StageError::Failed(e.to_string()))?;
    let (functions, max_count) = (summary.functions, summary.max_count);
    if functions == 0 || max_count == 0 {
        return Err(StageError::Failed(format!(
            "the merged profile {} is empty ({} functions, maximum count {}); {} raw file(s) were merged, {} dropped\n  usual causes: the train workloads exit before doing work, or the raw profiles are from another LLVM version",
            out.display(),
            functions,
            max_count,
            raw.len(),
            dropped.len()
        )));
    }
    Ok(PgoProfileStats {
        raw_files: raw.len(),
        functions,
        max_count,
        dropped,
        path: out.to_path_buf(),
    })
}

/// What rustc's warnings say about how `profile` fits the code it was used on: LLVM warns
/// once per function whose control flow changed since training, `… (hash mismatch) <name>
/// Hash = <h> up to <count> count discarded`.
pub(crate) fn profile_fit(stderr: &str, profile: &Path) -> PgoProfileFit {
    let mut fit = PgoProfileFit {
        profile: profile.to_path_buf(),
        ..Default::default()
    };
    for line in stderr.lines().filter(|l| l.contains("(hash mismatch)")) {
        fit.changed_functions += 1;
        let discarded = line
            .split_once(" up to ")
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .and_then(|n| n.parse::<u64>().ok());
        fit.discarded_counts += discarded.unwrap_or(0);
    }
    fit
}

/// The number of functions in `profile` (`llvm-profdata show`), when it can be read.
pub(crate) fn profile_functions(profdata: &Path, profile: &Path) -> Option<u64> {
    let functions = crate::toolchain::profdata::summary(profdata, profile)
        .ok()?
        .functions;
    (functions > 0).then_some(functions)
}

/// `-pgo-warn-missing-function` prints one warning per function without profile data.
pub(crate) fn count_missing_functions(stderr: &str) -> usize {
    stderr
        .lines()
        .filter(|l| l.contains("no profile data available for function"))
        .count()
}

/// Keep `merged` in the content-addressed profile cache (`store::Blobs::profiles`): an
/// existing copy is checked against its name first, one that does not match is replaced
/// (`repaired`).
pub(super) fn cache_profile(optimize_dir: &Path, merged: &Path) -> std::io::Result<KeptBlob> {
    Blobs::profiles(optimize_dir).keep(merged)
}

/// rustc's warnings about the profile file itself (`malformed instrumentation profile
/// data`, unreadable file): with them the binary is built without the profile.
pub(crate) fn profile_problems(stderr: &str, profile: &Path) -> Vec<String> {
    let path = profile.display().to_string();
    stderr
        .lines()
        .filter(|l| l.contains(&path) && !l.contains("no profile data available for function"))
        .map(|l| l.trim().to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stale_profile_is_measured_by_its_hash_mismatches() {
        let stderr = "warning: m.cgu.0: function control flow change detected (hash mismatch) _ZN1m4main17hE Hash = 320656258419602754 up to 17025473 count discarded\nwarning: m.cgu.0: function control flow change detected (hash mismatch) _ZN1m4step17hE Hash = 1 up to 27 count discarded\nwarning: `m` (bin \"m\") generated 2 warnings\n";
        let fit = profile_fit(stderr, Path::new("/p/x.profdata"));
        assert_eq!((fit.changed_functions, fit.discarded_counts), (2, 17025500));
        assert_eq!(
            profile_fit("warning: unused variable", Path::new("/p")).changed_functions,
            0
        );
        let described = PgoProfileFit {
            profile_functions: Some(40),
            ..fit
        }
        .describe();
        assert!(
            described.starts_with("2 of 40 profiled function(s) changed"),
            "{described}"
        );
    }

    #[test]
    fn a_given_profile_with_almost_none_of_its_functions_in_the_program_is_foreign() {
        let fit = |found, compared| PgoProfileFit {
            functions_in_program: found,
            functions_compared: compared,
            ..Default::default()
        };
        assert!(fit(Some(0), Some(7)).foreign());
        assert!(fit(Some(3), Some(1000)).foreign(), "almost none");
        assert!(!fit(Some(10), Some(1000)).foreign());
        assert!(!fit(Some(1), Some(7)).foreign());
        assert!(!fit(Some(0), Some(0)).foreign(), "nothing to compare");
        assert!(
            !fit(None, None).foreign(),
            "a trained profile, or no symbols"
        );
        let said = fit(Some(0), Some(7)).describe_foreign();
        assert!(
            said.starts_with("it does not belong to this program: 0 of its 7"),
            "{said}"
        );
    }

    #[test]
    fn warnings_are_collapsed_with_counts() {
        let mut m = BTreeMap::new();
        let err = b"LLVM Profile Warning: Unable to track new values: Running out of static counters.\nother\nLLVM Profile Warning: Unable to track new values: Running out of static counters.\n";
        collapse_profile_warnings(err, &mut m);
        collapse_profile_warnings(err, &mut m);
        assert_eq!(m.len(), 1);
        assert_eq!(m.values().next(), Some(&4));
    }

    #[test]
    fn a_cache_entry_is_checked_before_it_is_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let merged = dir.path().join("merged.profdata");
        std::fs::write(&merged, b"profile bytes").unwrap();
        let kept = cache_profile(dir.path(), &merged).unwrap();
        let entry = kept.path;
        assert!(!kept.repaired);
        assert_eq!(entry.parent().unwrap(), dir.path().join("cache"));
        assert_eq!(std::fs::read(&entry).unwrap(), b"profile bytes");
        // A partial write left behind: detected, replaced.
        std::fs::write(&entry, b"profile").unwrap();
        let again = cache_profile(dir.path(), &merged).unwrap();
        assert_eq!(again.path, entry);
        assert!(again.repaired);
        assert_eq!(std::fs::read(&entry).unwrap(), b"profile bytes");
        // Intact: reused as is; no temporary file is left.
        assert!(!cache_profile(dir.path(), &merged).unwrap().repaired);
        let cache = dir.path().join("cache");
        assert_eq!(std::fs::read_dir(&cache).unwrap().count(), 1);
    }

    #[test]
    fn a_kept_profile_is_reused_only_while_its_file_is_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let made = dir.path().join("merged.profdata");
        std::fs::write(&made, b"counts").unwrap();
        let profiles = Blobs::profiles(dir.path());
        let profile = profiles.keep(&made).unwrap().path;
        let store = Store::new(dir.path(), "profiles");
        let t = Trained {
            profile: profile.clone(),
            hash: file_hash(&profile).unwrap(),
            stats: PgoProfileStats {
                raw_files: 1,
                functions: 2,
                max_count: 3,
                dropped: vec![],
                path: profile.clone(),
            },
        };
        store.put("k", &t);
        assert_eq!(
            reusable(&store, &profiles, "k").map(|t| t.stats.functions),
            Some(2)
        );
        assert!(reusable(&store, &profiles, "other").is_none());
        // The same bytes elsewhere: not the cache's profile.
        store.put(
            "k",
            &Trained {
                profile: made.clone(),
                ..t
            },
        );
        assert!(
            reusable(&store, &profiles, "k").is_none(),
            "a profile outside the cache"
        );
        std::fs::write(&profile, b"changed").unwrap();
        store.put(
            "k",
            &Trained {
                profile: profile.clone(),
                hash: file_hash(&made).unwrap(),
                stats: PgoProfileStats {
                    raw_files: 1,
                    functions: 2,
                    max_count: 3,
                    dropped: vec![],
                    path: profile.clone(),
                },
            },
        );
        assert!(
            reusable(&store, &profiles, "k").is_none(),
            "a changed profile file was trusted"
        );
    }

    #[test]
    fn rustc_profile_warnings_are_found() {
        let p = Path::new("/t/cache/ab.profdata");
        let stderr = "warning: /t/cache/ab.profdata: malformed instrumentation profile data: corrupted binary ids\nwarning: x.rs: no profile data available for function f in /t/cache/ab.profdata\n";
        assert_eq!(
            profile_problems(stderr, p),
            ["warning: /t/cache/ab.profdata: malformed instrumentation profile data: corrupted binary ids"]
        );
        assert!(profile_problems("warning: unrelated\n", p).is_empty());
    }

    #[test]
    fn missing_function_warnings_counted() {
        let s = "warning: foo.rs: no profile data available for function _ZN3foo\nwarning: x\nwarning: bar: no profile data available for function main\n";
        assert_eq!(count_missing_functions(s), 2);
    }
}
