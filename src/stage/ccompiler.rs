//! The c-compiler stage: the C and C++ that build scripts compile through `cc` (or `cmake`)
//! given to the clang of rustc's LLVM instead of `cc`'s default compiler (gcc on Linux) —
//! one candidate, `c-compiler (clang)`, the best so far with `CC`/`CXX` set for its target
//! (`cargo::cc::CBuild`). It runs before pgo so that switching compilers is measured on
//! its own: whole-program PGO (`pgo (whole-program)`, the pgo stage) then gains only what
//! the profile gives the C code, and both steps say what they bought.
//!
//! A program whose build graph compiles no C (no package reached from it depends on `cc`
//! or `cmake`, as Cargo.lock says, or none whose build script the best so far's build ran)
//! has no row: it builds exactly as before. One that does,
//! without a clang of rustc's LLVM major, is a skipped row naming the packages, what was
//! found and the Debian package that fixes it (`toolchain::clang`).
//!
//! Must not: measure, verify or decide (the pipeline does).

use std::collections::{BTreeMap, BTreeSet};

use super::{Candidate, Context, Offer, StageError, Standing};
use crate::cargo::cc::{self, CBuild};
use crate::cargo::BuildSettings;
use crate::context::facts::{CCode, StageFacts};
use crate::stages::StageName;
use crate::toolchain::clang::Clang;
use crate::toolchain::ToolError;

/// The variant of the stage's one candidate.
pub(crate) const CLANG: &str = "clang";

/// What the program's build graph compiles besides Rust, and with what it can.
pub(crate) enum CProgram {
    /// No package reached from the program compiles C or C++.
    None,
    /// Some do (`packages`), and no clang of rustc's LLVM is here.
    NoClang {
        packages: Vec<String>,
        why: ToolError,
    },
    Clang {
        packages: Vec<String>,
        clang: Clang,
    },
}

impl CProgram {
    /// The program's C packages and the clang of rustc's LLVM (Cargo.lock read now: the run
    /// made one when the project has none), less those whose build script the build of
    /// `built` (one that was made: the best so far) never ran — optional dependencies left
    /// off; each would have cost a byte-identical build.
    /// Figures: docs/src/decisions.md, "Packages whose build script never ran compile no C".
    pub(crate) fn of(ctx: &Context, built: &BuildSettings) -> CProgram {
        let mut packages = cc::packages_of(&ctx.plan.project);
        let output_dir = built.output_dir(&ctx.build_dir(built));
        if let Some(ran) = cc::ran_build_scripts(&output_dir, &packages) {
            packages = ran;
        }
        if packages.is_empty() {
            return CProgram::None;
        }
        match crate::toolchain::clang::find(&ctx.plan.rustc) {
            Ok(clang) => CProgram::Clang { packages, clang },
            Err(why) => CProgram::NoClang { packages, why },
        }
    }
}

/// The c-compiler stage's contract.
pub(crate) struct CCompiler;

impl super::Stage for CCompiler {
    fn offers<'c>(&self, ctx: &'c Context, standing: &Standing) -> Vec<Offer<'c>> {
        offers(ctx, standing)
    }

    /// One candidate when the program's build graph compiles C or C++ and rustc's clang is
    /// there, else none.
    fn count(&self, plan: &crate::context::Plan) -> super::Count {
        let c = !cc::packages_of(&plan.project).is_empty()
            && crate::toolchain::clang::find(&plan.rustc).is_ok();
        super::Count::exactly(usize::from(c))
    }
}

/// `c-compiler (clang)` on the best so far, when the program compiles C.
pub(crate) fn offers<'c>(ctx: &'c Context, standing: &Standing) -> Vec<Offer<'c>> {
    let (packages, clang) = match CProgram::of(ctx, &standing.best.settings) {
        CProgram::None => return Vec::new(),
        CProgram::NoClang { packages, why } => {
            let why = format!(
                "C/C++ compiled by {} is left to cc's default compiler: {why}",
                packages.join(", ")
            );
            let mut offer = Offer::against_best(Err(StageError::NotAvailable(why)));
            offer.variant = Some(CLANG.into());
            return vec![offer];
        }
        CProgram::Clang { packages, clang } => (packages, clang),
    };
    let mut offer = Offer::against_best(build(ctx, standing.best, &packages, &clang));
    offer.variant = Some(CLANG.into());
    vec![offer]
}

fn build(
    ctx: &Context,
    best: &Candidate,
    packages: &[String],
    clang: &Clang,
) -> Result<Candidate, StageError> {
    if best.settings.c.is_some() {
        return Err(StageError::Redundant(format!(
            "the {} build already compiles C with clang",
            best.label()
        )));
    }
    if best
        .settings
        .target
        .as_ref()
        .is_some_and(|t| *t != ctx.plan.rustc.host)
    {
        return Err(StageError::NotAvailable(
            "C for another target than the host's keeps cc's default compiler (clang would have to cross-compile it)".into(),
        ));
    }
    let mut settings = best.settings.clone();
    settings.c = Some(c_build(ctx, &settings, clang, Vec::new()));
    let facts = StageFacts {
        variant: Some(CLANG.into()),
        ..Default::default()
    };
    let (mut cand, _) = super::build_candidate(ctx, StageName::CCompiler, settings, facts)?;
    let code = c_code(ctx, clang, &cand.settings, None);
    cand.notes.push(describe(&code, packages));
    if let Some(user) = cand.settings.c.as_ref().and_then(|c| c.replaced(&env)) {
        cand.notes.push(format!(
            "C/C++: your {user} is replaced for this candidate's target: the profile C shares with Rust needs clang of rustc's LLVM"
        ));
    }
    cand.facts.c_code = Some(code);
    Ok(cand)
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// `cc`'s compiler for `settings`' target set to `clang`, with `flags` for C and C++.
pub(crate) fn c_build(
    ctx: &Context,
    settings: &crate::cargo::BuildSettings,
    clang: &Clang,
    flags: Vec<String>,
) -> CBuild {
    let target = settings
        .target
        .clone()
        .unwrap_or_else(|| ctx.plan.rustc.host.clone());
    CBuild {
        cross: target != ctx.plan.rustc.host,
        target,
        cc: clang.cc.clone(),
        cxx: clang.cxx.clone(),
        flags,
    }
}

/// The C of the build of `settings`, and with a profile's C function names (those with
/// counts), what it covered.
pub(crate) fn c_code(
    ctx: &Context,
    clang: &Clang,
    settings: &crate::cargo::BuildSettings,
    profiled: Option<&[String]>,
) -> CCode {
    let defined = cc::c_functions(&settings.output_dir(&ctx.build_dir(settings)));
    let all: BTreeSet<&String> = defined.values().flatten().collect();
    let covered = profiled.map(|names| {
        let names: BTreeSet<&String> = names.iter().collect();
        (defined.iter())
            .map(|(pkg, fns)| {
                (
                    pkg.clone(),
                    fns.iter().filter(|f| names.contains(f)).count(),
                )
            })
            .filter(|(_, n)| *n > 0)
            .collect::<BTreeMap<_, _>>()
    });
    // The hottest of the C functions defined (rustc's own `main` shim is no C).
    let hottest = profiled.into_iter().flatten().filter(|n| all.contains(n));
    CCode {
        compiler: clang.version.clone(),
        hottest: hottest.take(10).cloned().collect(),
        defined: defined.into_iter().map(|(p, f)| (p, f.len())).collect(),
        profiled: covered,
    }
}

/// The row's note: what was compiled by whom, and what the profile covered.
pub(crate) fn describe(code: &CCode, packages: &[String]) -> String {
    let defined: usize = code.defined.values().sum();
    let from = match code.defined.is_empty() {
        true => packages.join(", "),
        false => (code.defined.keys().cloned())
            .collect::<Vec<_>>()
            .join(", "),
    };
    let mut out = format!(
        "C/C++ of {from} compiled by {} ({defined} functions in its objects)",
        code.compiler
    );
    if let Some(p) = &code.profiled {
        let n: usize = p.values().sum();
        out.push_str(&format!("; the profile has counts for {n} of them"));
        if !code.hottest.is_empty() {
            let hottest = code.hottest.iter().take(3).cloned().collect::<Vec<_>>();
            out.push_str(&format!(" (hottest: {})", hottest.join(", ")));
        }
    }
    out
}
