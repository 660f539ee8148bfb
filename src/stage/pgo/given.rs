//! `--pgo-profile FILE`: the pgo stage builds with a profile made elsewhere — collected on
//! production hosts by the binary of `cargo optimize profile collect` and merged with
//! `cargo optimize profile merge` — instead of instrumenting and training here. The file is
//! copied into the content-addressed cache as a trained profile is (`cache_profile`), and
//! [`build_with`] builds the pgo candidate and `pgo (portable)` with it, so both are
//! verified and measured like any candidate. How stale the profile is against the current
//! source is each row's `profile_fit` (rustc's hash-mismatch warnings); where it came from
//! is `facts.profile_source`. No eval coverage pass: there is no instrumented binary.

use std::path::Path;

use crate::context::facts::PgoProfileFit;

use super::{build_with, cache_profile, profdata, start_after, twinned, TrainedProfile, PORTABLE};
use crate::context::facts::PgoProfileStats;
use crate::stage::{Build, Context, Offer, Rival, StageError, Standing};

/// The pgo candidate on the best so far, and `pgo (portable)` on the portable best when the
/// best picks a CPU and the portable best does not, both built with the profile in `file`.
pub(super) fn offers<'c>(ctx: &'c Context, standing: &Standing, file: &Path) -> Vec<Offer<'c>> {
    let profile = load(ctx, file);
    let settings = twinned(ctx, &standing.best.settings, standing.expected);
    let later = (profile.as_ref())
        .map(|p| start_after(ctx, standing, &settings, p, Vec::new()))
        .unwrap_or_default();
    let best = match &profile {
        Ok(p) => build_with(ctx, &settings, p, None, false),
        Err(e) => Err(StageError::Failed(e.to_string())),
    };
    if best.is_ok() {
        ctx.build_after_stage(later);
    }
    let mut offers = vec![Offer::against_best(best)];
    // A collector built by `profile collect` counts the program's C too.
    if let Ok(p) = &profile {
        super::whole::extend(ctx, &standing.best.settings, p, &mut offers);
    }
    if standing.best.targets_cpu() && !standing.portable.targets_cpu() {
        let portable = match profile {
            Ok(p) => build_with(ctx, &standing.portable.settings, &p, Some(PORTABLE), false),
            Err(e) => Err(StageError::Failed(format!("its profile is pgo's: {e}"))),
        };
        offers.push(Offer {
            variant: Some(PORTABLE.to_string()),
            rival: Rival::Portable,
            candidate: Build::Now(portable),
        });
    }
    offers
}

/// The profile in `file` (checked readable when the plan was made) as a [`TrainedProfile`]: its
/// statistics, and its copy in the content-addressed cache that the build names.
fn load(ctx: &Context, file: &Path) -> Result<TrainedProfile, StageError> {
    let tool = profdata(ctx)?;
    let summary = crate::toolchain::profdata::summary(&tool.path, file)
        .map_err(|e| StageError::Failed(e.to_string()))?;
    let (functions, max_count) = (summary.functions, summary.max_count);
    if functions == 0 || max_count == 0 {
        return Err(StageError::Failed(format!(
            "the profile {} is empty ({functions} functions, maximum count {max_count})\n  fix: merge the profiles the collector wrote on your hosts (`cargo optimize profile merge`); a collector writes its profile only when the program exits normally",
            file.display()
        )));
    }
    let kept = cache_profile(&ctx.plan.optimize_dir, file)?;
    let (stable, repaired) = (kept.path, kept.repaired);
    ctx.ui().info(&format!(
        "pgo: the profile {} ({functions} functions, max count {max_count}): no instrumented build and no training in this run",
        file.display()
    ));
    Ok(TrainedProfile {
        stable,
        stats: PgoProfileStats {
            raw_files: 0,
            functions,
            max_count,
            dropped: Vec::new(),
            path: file.to_path_buf(),
        },
        repaired,
        notes: vec![format!(
            "built with the profile given by --pgo-profile {} (collected elsewhere, not trained on this run's workloads)",
            file.display()
        )],
        instrumented: None,
        instrumented_binary: None,
        vp_counters: None,
        quality: None,
        source: Some(file.to_path_buf()),
    })
}

/// How many of the given `profile`'s functions other than `main` are functions of `binary`
/// (built with it), by the symbols the profile names and the binary's symbol table: `fit`
/// with `functions_in_program` and `functions_compared` set. A profile of this program, even
/// stale, names many of them (those not inlined away); another program's, none. Left as it
/// is when either cannot be read (a stripped binary has no symbol table).
pub(super) fn with_functions_in_program(
    ctx: &Context,
    fit: PgoProfileFit,
    profile: &Path,
    binary: &Path,
) -> PgoProfileFit {
    let Ok(tool) = profdata(ctx) else { return fit };
    let functions = crate::toolchain::profdata::function_counts(&tool.path, profile);
    let symbols = crate::stage::bolt::elf::symbol_names(binary);
    let (Ok(functions), Ok(symbols)) = (functions, symbols) else {
        return fit;
    };
    if symbols.is_empty() {
        return fit;
    }
    let named: Vec<&str> = functions
        .iter()
        .map(|f| f.symbol.as_str())
        .filter(|s| *s != "main")
        .collect();
    let found = named
        .iter()
        .filter(|s| symbols.contains(s.as_bytes()))
        .count();
    PgoProfileFit {
        functions_in_program: Some(found as u64),
        functions_compared: Some(named.len() as u64),
        ..fit
    }
}
