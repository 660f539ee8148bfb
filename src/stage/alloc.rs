//! The alloc stage: the global allocator swapped — one candidate per allocator of
//! `[stages] alloc` (default mimalloc), each the real build of the best so far with the
//! allocator's crate as a dependency and a `#[global_allocator]` item at the end of the
//! binary's root file, compiled from a private copy of the workspace (`cargo::alloc`;
//! nothing of the user's is touched). It comes after PGO, so the candidate is built with
//! the run's profile (the allocator's own code, C compiled by its build script, has none,
//! as before), and before BOLT, which then lays out the allocator's code too.
//!
//! A binary that cannot take one is a skipped row saying why (`cargo::alloc::refusal`: its
//! own `#[global_allocator]` compiled for the target at file:line — the root file parsed,
//! `cfg`/`cfg_attr` evaluated —, a root file that does not parse, `#![no_std]`, a target the crate does not build
//! for, no C compiler), and so is one whose copy cannot resolve the crate (offline without
//! it cached). The row says what the allocator trades: peak RSS and user/system time
//! against its rival (the ladder's note).
//!
//! Several allocators are raced against the best so far (`Build::Raced`); one is a duel.
//!
//! An allocator whose preview showed no gain (`Standing::screened`: the ladder preloaded
//! its shared build into the best so far, `pipeline::ladder::preview`) is neither built
//! ahead ([`ahead`]) nor offered: its row is dropped with the preview's figures.
//!
//! Must not: measure, verify or decide (the pipeline does).

use super::{Build, Candidate, Context, Offer, Rival, StageError, Standing};
use crate::cargo::alloc::{self, Allocator};
use crate::cargo::BuildSettings;
use crate::context::facts::{AllocRoot, StageFacts};
use crate::stages::StageName;

/// The alloc stage's contract.
pub(crate) struct Alloc;

impl super::Stage for Alloc {
    fn offers<'c>(&self, ctx: &'c Context, standing: &Standing) -> Vec<Offer<'c>> {
        offers(ctx, standing)
    }

    /// A candidate per allocator of `[stages] alloc`.
    fn count(&self, plan: &crate::context::Plan) -> super::Count {
        super::Count::exactly(plan.spec.stages.alloc.len())
    }
}

/// One offer per allocator of `[stages] alloc`, each built on the best so far.
pub(crate) fn offers<'c>(ctx: &'c Context, standing: &Standing) -> Vec<Offer<'c>> {
    if ctx.spec.stages.alloc.is_empty() {
        let why = "`[stages] alloc` lists no allocator".to_string();
        return vec![Offer::against_best(Err(StageError::NotAvailable(why)))];
    }
    ctx.ui().info(&format!(
        "alloc: candidates {} (each a real build with its crate and `#[global_allocator]`, from a private copy of the workspace)",
        ctx.spec.stages.alloc.join(", ")
    ));
    // Several allocators share the best so far as their rival: they are raced.
    let race = ctx.spec.stages.alloc.len() > 1;
    let best = standing.best;
    (ctx.spec.stages.alloc.iter())
        .map(|name| {
            if let Some(why) = standing.screened.get(name) {
                return Offer {
                    variant: Some(name.clone()),
                    rival: Rival::Best,
                    candidate: Build::Now(Err(StageError::Screened(why.clone()))),
                };
            }
            let Some(a) = alloc::named(name) else {
                let why = format!("unknown allocator `{name}`");
                return Offer::against_best(Err(StageError::NotAvailable(why)));
            };
            let candidate = match race {
                true => Build::Raced(Box::new(move |best: &Candidate, _: Option<&_>| {
                    build(ctx, best, a)
                })),
                false => Build::Now(build(ctx, best, a)),
            };
            Offer {
                variant: Some(name.clone()),
                rival: Rival::Best,
                candidate,
            }
        })
        .collect()
}

/// The settings [`offers`] would build on a best built with `best`, one per allocator the
/// program can take and the preview did not screen out, labelled as the stage labels them:
/// for the pgo stage to start beside its own build (`stage::pgo`), and the copy not
/// prepared here (the build prepares it).
pub(crate) fn ahead(
    ctx: &Context,
    best: &BuildSettings,
    screened: &std::collections::BTreeMap<String, String>,
) -> Vec<(String, BuildSettings)> {
    if best.allocator.is_some() {
        return Vec::new();
    }
    let target = (best.target.clone()).unwrap_or_else(|| ctx.plan.rustc.host.clone());
    (ctx.spec.stages.alloc.iter())
        .filter(|name| !screened.contains_key(*name))
        .filter_map(|name| alloc::named(name))
        .filter(|a| alloc::refusal(&ctx.plan.project, a, &target).is_none())
        .map(|a| {
            let mut settings = best.clone();
            settings.allocator = Some(a.name.to_string());
            let label = crate::context::label(StageName::Alloc.as_str(), Some(a.name));
            (label, settings)
        })
        .collect()
}

fn build(ctx: &Context, best: &Candidate, a: &Allocator) -> Result<Candidate, StageError> {
    if let Some(kept) = &best.settings.allocator {
        return Err(StageError::Redundant(format!(
            "the {} build already has {kept}",
            best.label()
        )));
    }
    let target = (best.settings.target.clone()).unwrap_or_else(|| ctx.plan.rustc.host.clone());
    if let Some(why) = alloc::refusal(&ctx.plan.project, a, &target) {
        return Err(StageError::NotAvailable(why));
    }
    let mut settings = best.settings.clone();
    settings.allocator = Some(a.name.to_string());
    // The copy resolves the allocator's crate before anything is built: a registry that
    // cannot be reached is a skipped stage, not a failed build.
    alloc::prepare(&ctx.plan.project, &settings)
        .map_err(|e| StageError::NotAvailable(e.to_string()))?;
    let root = ctx
        .plan
        .project
        .bin_root
        .as_deref()
        .expect("refusal checks it");
    let facts = StageFacts {
        variant: Some(a.name.to_string()),
        alloc_root: Some(AllocRoot {
            file: (root.strip_prefix(&ctx.plan.project.workspace_root))
                .unwrap_or(root)
                .to_path_buf(),
            sha256: crate::store::sha256_hex(&std::fs::read(root)?),
        }),
        ..Default::default()
    };
    let (cand, _) = super::build_candidate(ctx, StageName::Alloc, settings, facts)?;
    Ok(cand)
}
