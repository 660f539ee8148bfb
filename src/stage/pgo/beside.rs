//! Builds the pgo stage starts for the stages around it, so they are done when asked for:
//! its own instrumented build ahead of it (the cpu stage starts it beside its level), its
//! whole work on a kept `max` begun by the profile stage ([`speculate`]), and, beside its
//! optimized build, the allocator's candidate and BOLT's input — the
//! optimized build's own twin link (`cargo::twin`) where it can be, else a build of its
//! own beside it under LTO, else a relink after the stage's timings.

use super::{
    bolt_takes_as_is, instrumented_settings, use_settings, with_host_target, TrainedProfile,
};
use crate::stage::{Context, Standing};
use crate::stages::{changing, Changes, StageName};

/// The instrumented build ahead of the stage, on the best so far (`settings`), when the
/// ladder expects (`expected`) the pgo stage to train and the best not to change before it; the
/// cpu stage starts it beside its level's build. When the best does change (`native` is
/// kept), it is a build nobody asks for, kept in the build cache.
pub(crate) fn ahead(
    ctx: &Context,
    expected: &[StageName],
    settings: &crate::cargo::BuildSettings,
) -> Vec<(String, crate::cargo::BuildSettings)> {
    if !expected.contains(&StageName::Pgo) || ctx.plan.pgo_profile.is_some() {
        return Vec::new();
    }
    let gen_dir = ctx.plan.optimize_dir.join("pgo-default");
    let instrumented = instrumented_settings(ctx, settings, None, &gen_dir);
    vec![("pgo: instrumented".to_string(), instrumented)]
}

/// The pgo stage's work on `best` begun before the stage, when the ladder expects (`expected`)
/// it: the instrumented build built and trained now (the profile is remembered for the
/// stage: `train_profile`), and the optimized build started ahead, as the stage will ask
/// for it while the best stays `best`. The profile stage calls it once `max` is kept,
/// before its search's point is built and measured: the optimized build (under fat LTO,
/// one core for as long as a whole build) then runs beside the point's build and
/// its comparison (on the CPUs the timing leaves, or paused: `Ahead::quiet`), instead of
/// after them with a core idle. When the best changes (the point or a CPU level is kept),
/// nobody asks for it.
/// A failure is left for the stage, which meets it again and reports it.
pub(crate) fn speculate(ctx: &Context, expected: &[StageName], best: &crate::cargo::BuildSettings) {
    if !expected.contains(&StageName::Pgo) || ctx.plan.pgo_profile.is_some() {
        return;
    }
    let Ok(profile) = super::train_profile(ctx, best, "pgo", "pgo") else {
        return;
    };
    let settings = twinned(ctx, best, expected);
    let optimized = use_settings(ctx, &settings, &profile, false);
    ctx.build_ahead_urgent("pgo: optimized", optimized);
}

/// The builds the stages after this one will ask for when the PGO build is kept, started
/// on their own (`ctx.build_ahead`; the pgo build's own portable sibling comes first):
/// each allocator's candidate on it when the alloc stage follows, and BOLT's input when
/// BOLT follows and its build has LTO across crates. Why beside, not after: a build
/// started once the PGO build is built takes a core this stage's timings or builds would
/// use, and one started after them holds up the next stage's (its allocator's build),
/// while fat LTO leaves a core idle for the build beside. When PGO is not kept, those on it
/// are stopped (`Context::build_ahead_on`).
/// Figures: docs/src/decisions.md, "BOLT's input is built beside the PGO build".
///
/// Without LTO, BOLT's input is returned, for the caller to start once the stage's timings
/// are done (`ctx.build_after_stage`, when the PGO build was built): its relink then
/// compiles the package's crate alone, where one beside the PGO build (its base not built
/// yet) compiles every crate and holds up the PGO build's timing far longer.
///
/// With a twin (`settings.relocs_twin`, see [`twinned`]) BOLT's input is linked by the PGO
/// build itself (and by the allocator's, which inherits it): nothing to build for it.
pub(super) fn start_after(
    ctx: &Context,
    standing: &Standing,
    settings: &crate::cargo::BuildSettings,
    p: &TrainedProfile,
    beside: Vec<(String, crate::cargo::BuildSettings)>,
) -> Vec<(String, crate::cargo::BuildSettings)> {
    let pgo = use_settings(ctx, settings, p, false);
    let mut on_pgo = Vec::new();
    if standing.expected.contains(&changing(Changes::Allocator)) {
        on_pgo.extend(crate::stage::alloc::ahead(ctx, &pgo, standing.screened));
    }
    let input = bolt_input(ctx, standing, p).filter(|_| !settings.relocs_twin);
    let later = match crate::cargo::uses_lto(&ctx.plan.project, &pgo) == Some(true) {
        true => {
            on_pgo.extend(input);
            Vec::new()
        }
        false => input.into_iter().collect(),
    };
    ctx.build_ahead_groups(vec![(None, beside), (Some(pgo), on_pgo)]);
    later
}

/// BOLT's input to build beside the pgo build with `profile`: that build linked with the
/// relocations BOLT needs (the flag for the final link alone: `cargo::relink`; started
/// before the pgo build is built, it compiles its crates in its own build dir), when the
/// ladder expects the BOLT stage next and it would take the pgo build as is. What is
/// measured, and ships unless BOLT does, carries none.
fn bolt_input(
    ctx: &Context,
    standing: &Standing,
    profile: &TrainedProfile,
) -> Option<(String, crate::cargo::BuildSettings)> {
    bolt_input_wanted(ctx, &standing.best.settings, standing.expected).then(|| {
        let input = use_settings(ctx, &standing.best.settings, profile, true);
        (crate::stage::bolt::INPUT_LABEL.to_string(), input)
    })
}

/// The best's settings for the PGO build: with [`relocs_twin`] when BOLT's input will be
/// asked for and can be linked beside it (`Plan::twin_links`), so its final link also
/// writes that input (`cargo::twin`) instead of a build of its own.
///
/// [`relocs_twin`]: crate::cargo::BuildSettings::relocs_twin
pub(super) fn twinned(
    ctx: &Context,
    best: &crate::cargo::BuildSettings,
    expected: &[StageName],
) -> crate::cargo::BuildSettings {
    let mut settings = best.clone();
    settings.relocs_twin = ctx.plan.twin_links && bolt_input_wanted(ctx, best, expected);
    settings
}

/// Whether the ladder expects (`expected`) the BOLT stage after this one, on the PGO build of
/// `best` as it is.
fn bolt_input_wanted(
    ctx: &Context,
    best: &crate::cargo::BuildSettings,
    expected: &[StageName],
) -> bool {
    expected.contains(&changing(Changes::CodeLayout))
        && bolt_takes_as_is(ctx, &with_host_target(ctx, best))
}
