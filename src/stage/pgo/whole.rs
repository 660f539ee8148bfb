//! Whole-program PGO: the C and C++ that build scripts compile through `cc` trained and
//! optimized with the Rust code, on one profile. The instrumented build gives them clang of
//! rustc's LLVM with `-fprofile-generate` into the folder rustc's counters go to
//! ([`instrumented`]: one runtime, one `.profraw` holding both); the merged profile is then
//! read by both compilers — `-Cprofile-use` and `-fprofile-use` — in `pgo (whole-program)`,
//! built on the best so far when the ladder reaches it: the Rust-only pgo build when it
//! was kept, so what is measured is what the profile gives the C code. Its row says how
//! many of the C functions the profile covers, from which packages, and the hottest.
//!
//! Without a clang of rustc's LLVM, PGO stays Rust-only and the pgo row says what was left
//! out and how to get it.

use super::{build_with, TrainedProfile};
use crate::cargo::cc::{profile_generate_flag, profile_use_flag};
use crate::cargo::BuildSettings;
use crate::stage::ccompiler::{self, CProgram};
use crate::stage::{Build, Candidate, Context, Offer, Rival, StageError};
use crate::toolchain::clang::Clang;

/// The variant of the whole-program candidate.
pub(crate) const WHOLE: &str = "whole-program";

/// `instrumented` with its C and C++ instrumented too, writing into `gen_dir`, when the
/// program compiles C and a clang of rustc's LLVM is here. Only a build for the host:
/// another target's C would need clang to cross-compile.
pub(crate) fn instrumented(
    ctx: &Context,
    built: &BuildSettings,
    mut instrumented: BuildSettings,
    gen_dir: &std::path::Path,
) -> BuildSettings {
    if instrumented.target.as_deref() != Some(&ctx.plan.rustc.host) {
        return instrumented;
    }
    if let CProgram::Clang { clang, .. } = CProgram::of(ctx, built) {
        let flags = vec![profile_generate_flag(gen_dir)];
        instrumented.c = Some(ccompiler::c_build(ctx, &instrumented, &clang, flags));
    }
    instrumented
}

/// `offers` (the pgo offer first) with the whole-program offer after it, or the pgo row's
/// note saying why there is none.
pub(crate) fn extend<'c>(
    ctx: &'c Context,
    built: &BuildSettings,
    profile: &TrainedProfile,
    offers: &mut Vec<Offer<'c>>,
) {
    let (whole, note) = offer(ctx, built, profile);
    if let (Some(note), Some(Build::Now(Ok(c)))) =
        (note, offers.first_mut().map(|o| &mut o.candidate))
    {
        c.notes.push(note);
    }
    offers.extend(whole);
}

/// The whole-program offer for `profile`, or the pgo row's note saying why there is none
/// (C left out: no clang of rustc's LLVM). `None` and no note for a program without C.
fn offer<'c>(
    ctx: &'c Context,
    built: &BuildSettings,
    profile: &TrainedProfile,
) -> (Option<Offer<'c>>, Option<String>) {
    match CProgram::of(ctx, built) {
        CProgram::None => (None, None),
        CProgram::NoClang { packages, why } => (
            None,
            Some(format!(
                "C/C++ of {} got no profile, PGO is Rust-only: {}",
                packages.join(", "),
                why.to_string().replace('\n', ";")
            )),
        ),
        CProgram::Clang { packages, clang } => {
            let profile = profile.clone();
            let build = move |best: &Candidate, _: Option<&_>| {
                build(ctx, best, &profile, &clang, &packages)
            };
            let offer = Offer {
                variant: Some(WHOLE.into()),
                rival: Rival::Best,
                candidate: Build::OnBest(Box::new(build)),
            };
            (Some(offer), None)
        }
    }
}

/// The best so far with the profile given to its C too (and to its Rust, when the
/// Rust-only build was not kept).
fn build(
    ctx: &Context,
    best: &Candidate,
    profile: &TrainedProfile,
    clang: &Clang,
    packages: &[String],
) -> Result<Candidate, StageError> {
    let mut base = without_profile_use(&best.settings, profile);
    base.target
        .get_or_insert_with(|| ctx.plan.rustc.host.clone());
    let flags = vec![profile_use_flag(&profile.stable)];
    let switched = base.c.is_none();
    base.c = Some(ccompiler::c_build(ctx, &base, clang, flags));
    let mut cand = build_with(ctx, &base, profile, Some(WHOLE), false)?;
    let names = c_names(ctx, profile)?;
    let code = ccompiler::c_code(ctx, clang, &cand.settings, Some(&names));
    cand.notes.push(ccompiler::describe(&code, packages));
    if switched {
        cand.notes.push(format!(
            "C/C++: compiled by clang here, in the {} build by cc's default compiler: the gain includes the switch (the c-compiler stage did not keep clang, or was not tried)",
            best.label()
        ));
    }
    cand.facts.c_code = Some(code);
    Ok(cand)
}

/// `settings`, whose C is compiled by clang, with `profile` given to its C too (a release's
/// whole-program PGO build).
pub(crate) fn with_c_profile(settings: &BuildSettings, profile: &TrainedProfile) -> BuildSettings {
    let mut s = settings.clone();
    if let Some(c) = s.c.as_mut() {
        c.flags = vec![profile_use_flag(&profile.stable)];
    }
    s
}

/// `settings` without the pgo build's `-Cprofile-use` flags for `profile` (they are given
/// again with the C part).
fn without_profile_use(settings: &BuildSettings, profile: &TrainedProfile) -> BuildSettings {
    let mut s = settings.clone();
    let ours = super::use_flags(profile);
    s.stage_rustflags.retain(|f| !ours.contains(f));
    s
}

/// The functions of `profile` rustc did not compile (C and C++, and rustc's `main` shim)
/// that have counts, hottest first, by the name their object gives them.
fn c_names(ctx: &Context, profile: &TrainedProfile) -> Result<Vec<String>, StageError> {
    let tool = super::profdata(ctx)?;
    let counts = crate::toolchain::profdata::function_counts(&tool.path, &profile.stable)
        .map_err(|e| StageError::Failed(e.to_string()))?;
    let mut c: Vec<_> = (counts.into_iter())
        .filter(|f| !f.is_rust() && f.total > 0)
        .collect();
    c.sort_by_key(|f| std::cmp::Reverse(f.total));
    let name = |f: &crate::toolchain::profdata::FunctionCounts| {
        crate::cargo::cc::symbol_of(&f.symbol).to_string()
    };
    Ok(c.iter().map(name).collect())
}
