//! The stages of the ladder: one module each, behind one contract, [`Stage`]; what the rest
//! of the tool knows of a stage is its row of `stages::TABLE`. [`contract`] is the one
//! exhaustive `match` from a stage's name to its module. A stage's [`Stage::offers`]:
//!
//! It builds one or more candidates on top of the ladder's standing (the best so far and
//! the best portable one) and returns them as [`Offer`]s, each with the candidate
//! it must beat; the pipeline then verifies and measures each offer in order. A candidate
//! worth building only when the one before it won ([`Build::IfPreviousKept`]: the cpu
//! stage's `native` after the x86-64 level) is built when the ladder reaches it, and so is
//! one built on the best so far as it is then ([`Build::OnBest`]: the fp stage's flags, each
//! on the ones kept before it). Offers independent of each other that share a rival are
//! [`Build::Raced`]: built together, then measured together in one race.
//!
//! Two tracks: an offer's rival is the best so far ([`Rival::Best`]) or the best portable
//! one ([`Rival::Portable`]): pgo offers a second, portable candidate when the best picks a
//! CPU and the portable best does not (one instrumented build and training serve both when
//! the portable best is the best without `-Ctarget-cpu`). The PGO build is what is measured
//! and ships unless BOLT does, so it carries no relocations; when BOLT comes next
//! ([`Standing`]'s `expected`: the stages still `to_come` the budget pays for), can run and the
//! profile keeps symbols, BOLT's input (the PGO build linked with
//! `cargo::EMIT_RELOCS_FLAG`) is built ahead: beside the PGO build under LTO, else once the
//! stage's timings are done; the alloc stage's candidate, when it follows, beside it. A BOLT input passes the flag to the final link alone
//! (`cargo::relink`): a relink of its base when the base is built, else its own build. What
//! ships is what `apply`'s printed command builds.
//!
//! Must not: measure, verify or decide (the pipeline does); run cargo or a workload other
//! than through the [`Context`]; run a tool other than through `process` with a bound
//! (`bolt::TOOL_TIMEOUT`, `process::run_tool`), or read a profile other than through
//! `toolchain::profdata`.

use crate::context::{ahead::Wanted, Plan, RunError};
pub(crate) use crate::context::{Candidate, Context};
use crate::stages::{Refines, StageName};
use crate::{cargo, process};

/// The one contract of a stage. Its facts (name, order, priority, what it refines, who
/// verifies it) are its row of `stages::TABLE`; this is what it does.
pub(crate) trait Stage: Sync {
    /// Its candidates, each with the candidate it must beat, built on the standing.
    fn offers<'c>(&self, ctx: &'c Context, standing: &Standing) -> Vec<Offer<'c>>;

    /// How many candidates it builds, for the budget.
    fn count(&self, _plan: &Plan) -> Count {
        Count { least: 1, most: 1 }
    }

    /// The builds it will most likely ask for on `best`, started ahead beside the baseline's
    /// (`stages`: those the run tries).
    fn ahead(&self, _ctx: &Context, _stages: &[StageName], _best: &cargo::BuildSettings) -> Ahead {
        Ahead::default()
    }

    /// Its spec keys checked against the toolchain and the target (`triple`) before
    /// anything is built: an error names the spec's line.
    fn check(&self, _plan: &Plan, _triple: &str) -> anyhow::Result<()> {
        Ok(())
    }
}

/// Each stage's module, and [`contract`], from `stages::each_stage`'s one list.
macro_rules! modules_and_contract {
    ($($variant:ident => $module:ident::$contract:ident,)*) => {
        $(pub(crate) mod $module;)*

        /// The contract of stage `name`: every stage has an arm, so a new one cannot be
        /// left out.
        pub(crate) fn contract(name: StageName) -> &'static dyn Stage {
            match name {
                $(StageName::$variant => &$module::$contract,)*
            }
        }
    };
}
crate::stages::each_stage!(modules_and_contract);

/// How many candidates a stage builds: at least (its offers after the first may depend on
/// the first being kept) and at most.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Count {
    pub least: usize,
    pub most: usize,
}

impl Count {
    pub(crate) const fn exactly(n: usize) -> Count {
        Count { least: n, most: n }
    }
}

/// What a stage builds ahead: groups of builds, each with the candidate it builds on when
/// that one is not decided yet (when the ladder drops it, its group is stopped); and the
/// settings the next stages' builds ahead are guessed on, when they can be guessed at all.
#[derive(Default)]
pub(crate) struct Ahead {
    pub groups: Vec<(Option<cargo::BuildSettings>, Wanted)>,
    pub next_on: Option<cargo::BuildSettings>,
}

/// What the ladder holds when a stage starts.
pub(crate) struct Standing<'a> {
    /// The best candidate so far.
    pub best: &'a Candidate,
    /// The best candidate without a stage `-Ctarget-cpu` (the baseline at least).
    pub portable: &'a Candidate,
    /// The stages the ladder expects to climb after this one: those of `[stages] try` still
    /// to come that the budget pays for after this one, as far as it can tell (a build for
    /// one of them may start ahead).
    pub expected: &'a [StageName],
    /// The allocators of `[stages] alloc` not to build, each with why: preloaded into the
    /// best so far, they did not make it faster (the ladder's preview).
    pub screened: &'a std::collections::BTreeMap<String, String>,
}

/// Which candidate of the standing an offer must beat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rival {
    /// The best so far: the usual case.
    Best,
    /// The portable best: an offer that stays portable while the best picks a CPU.
    Portable,
}

/// One candidate a stage offers, or why it could not make it.
pub(crate) struct Offer<'c> {
    /// The variant's name (a target-cpu, `portable`), for rows without a candidate.
    pub variant: Option<String>,
    pub rival: Rival,
    pub candidate: Build<'c>,
}

/// A build on top of the best so far as the ladder stands when it reaches the offer; it is
/// also given the latest row's estimate against its rival (how precisely the offer before
/// it was measured), when that row was measured.
pub(crate) type OnBest<'c> = Box<
    dyn FnOnce(&Candidate, Option<&crate::bench::Estimate>) -> Result<Candidate, StageError> + 'c,
>;

/// An offer's candidate: built when offered, or only once the ladder reaches it and the
/// offer before it in the same stage was kept.
#[allow(clippy::large_enum_variant)] // a handful per stage: boxing buys nothing
pub(crate) enum Build<'c> {
    Now(Result<Candidate, StageError>),
    /// Built when the ladder reaches it, on top of the best so far then (which an earlier
    /// offer of the same stage may have replaced): the fp stage's flags, one on another.
    OnBest(OnBest<'c>),
    /// Built as [`Build::OnBest`] is, with the stage's other raced offers next to it (all on
    /// the best so far when the ladder reaches the first), and measured with them in one race
    /// against their rival: the profile search's points, an explicit `[stages] cpu` list.
    Raced(OnBest<'c>),
    IfPreviousKept {
        build: Box<dyn FnOnce() -> Result<Candidate, StageError> + 'c>,
        /// Why it is not built otherwise (the dropped row's reason).
        why_not: String,
    },
}

impl Offer<'_> {
    /// The usual offer: one candidate against the best so far.
    pub(crate) fn against_best(candidate: Result<Candidate, StageError>) -> Self {
        Offer {
            variant: None,
            rival: Rival::Best,
            candidate: Build::Now(candidate),
        }
    }
}

/// Whether `stage`'s candidate (`variant`) refines the stage it climbs on (`on`), as its
/// row says: `native` on top of a kept x86-64 level (this CPU's extra features and tuning),
/// BOLT on top of PGO, and the profile search's settings after `max` (cheaper builds, rarely
/// faster than it). A refinement usually gains a few percent at most and costs size or
/// portability, so it is timed for less (`pipeline::measure`) and kept only when *faster*
/// (`pipeline::ladder`). BOLT on a build without PGO is no refinement: it lays out code no
/// profile has laid out yet, and a gain of a few percent there is worth keeping.
pub(crate) fn refines(stage: StageName, variant: Option<&str>, on: StageName) -> bool {
    match stage.row().refines {
        Refines::Nothing => false,
        Refines::ItsOwn(named) => {
            on == stage && variant.is_some_and(|v| named.is_none_or(|n| n == v))
        }
        Refines::Kept(what) => on.row().changes == what,
    }
}

/// The offers of stage `name` (none for the baseline, which the pipeline builds first).
pub(crate) fn offers<'c>(name: StageName, ctx: &'c Context, standing: &Standing) -> Vec<Offer<'c>> {
    contract(name).offers(ctx, standing)
}

/// What the ladder will most likely build after the baseline, for
/// [`Context::build_ahead`]: each tried stage's [`Stage::ahead`] in turn, on the settings
/// the one before it guessed, until one cannot guess what follows it. The profile stage's
/// candidates (and the pgo stage's instrumented build on its preset: the serial chain of
/// fat-LTO builds PGO is starts a build earlier), then the cpu stage's on that preset. In
/// groups, each with the candidate it builds on when that is not decided yet: when the
/// ladder drops it, its group is stopped ([`Context::build_ahead_groups`]).
pub(crate) fn ahead(
    ctx: &Context,
    stages: &[StageName],
    baseline: &cargo::BuildSettings,
) -> Vec<(Option<cargo::BuildSettings>, Wanted)> {
    let mut best = baseline.clone();
    let mut out = Vec::new();
    for &name in stages {
        let ahead = contract(name).ahead(ctx, stages, &best);
        out.extend(ahead.groups);
        match ahead.next_on {
            Some(on) => best = on,
            None => break,
        }
    }
    out
}

/// A stage could not produce a candidate.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StageError {
    #[error(transparent)]
    Cargo(#[from] cargo::CargoError),
    #[error(transparent)]
    Process(#[from] process::ProcessError),
    #[error("{0}")]
    Failed(String),
    /// The stage cannot run here (tool missing, not implemented): reported as skipped.
    #[error("{0}")]
    NotAvailable(String),
    /// The candidate would be the best so far again (its settings are already in effect):
    /// reported as dropped, without building it.
    #[error("{0}")]
    Redundant(String),
    /// Not built: a preview without a build showed it would not be faster (an allocator
    /// preloaded into the best so far: `Standing::screened`): reported as dropped.
    #[error("{0}")]
    Screened(String),
    /// Not worth building, given what the stage's earlier offers showed (the profile
    /// search when `max` was not kept): no row of its own, a note on the stage's row.
    #[error("{0}")]
    Pruned(String),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl From<RunError> for StageError {
    fn from(e: RunError) -> Self {
        match e {
            RunError::Process(p) => StageError::Process(p),
            RunError::Io(io) => StageError::Io(io),
        }
    }
}

/// Build `settings` as stage `stage` (binary installed as `bin/<tag>`) into a candidate.
pub(crate) fn build_candidate(
    ctx: &Context,
    stage: StageName,
    settings: cargo::BuildSettings,
    facts: crate::context::facts::StageFacts,
) -> Result<(Candidate, cargo::Built), StageError> {
    let label = crate::context::label(stage.as_str(), facts.variant.as_deref());
    let built = ctx.build(&label, &settings)?;
    let mut c = Candidate {
        stage,
        binary: Default::default(),
        settings,
        size_bytes: 0,
        build_seconds: built.seconds,
        notes: Vec::new(),
        facts,
    };
    let (binary, size_bytes) = ctx.install_as(&c.tag(), &built.binary)?;
    c.binary = binary;
    c.size_bytes = size_bytes;
    Ok((c, built))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refinements_are_native_over_a_level_bolt_over_pgo_and_the_search_after_max() {
        use StageName::{Baseline, Bolt, Cpu, Pgo, Profile};
        assert!(refines(Cpu, Some("native"), Cpu));
        assert!(refines(Bolt, None, Pgo));
        assert!(refines(Profile, Some("lto=thin cgu=16 O3"), Profile));
        assert!(!refines(Cpu, Some("x86-64-v3"), Profile));
        assert!(!refines(Pgo, None, Cpu));
        assert!(!refines(Pgo, Some("portable"), Baseline));
        assert!(!refines(Profile, None, Baseline));
        // Not on what they refine: BOLT without PGO, `native` listed without a kept level.
        assert!(!refines(Bolt, None, Baseline));
        assert!(!refines(Bolt, None, Cpu));
        assert!(!refines(Cpu, Some("native"), Profile));
    }
}
