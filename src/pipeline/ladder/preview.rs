//! The allocators previewed before they are built: the best so far timed with the
//! system's shared build of each allocator preloaded (`LD_PRELOAD`, `cargo::alloc::
//! preloadable`) against itself, nothing built. An allocator the preview shows not to make
//! the program faster is screened out: its candidate (a whole build of every crate, and
//! the allocator's C, under fat LTO as long as the program's own build) is not built, and
//! its row is dropped saying why. One that may be faster is built and measured as before:
//! only the real build can ship.
//!
//! Why the preview stands for the build: the `mimalloc` crate's `GlobalAlloc` calls the
//! same allocator the shared library's `malloc` is (no LTO crosses into C), so what the
//! preview measures is the allocator's own effect on this program: where both were
//! measured, the preview and the real build agreed on the direction and roughly the size.
//! Figures: docs/src/decisions.md, "The allocators are previewed before they are built".
//!
//! When: at the start of the first stage that builds an allocator's candidate (the pgo
//! stage, which starts them beside its own build; else the alloc stage), once a run, and
//! not under `--thorough`, which builds every allocator, nor for a library a host program
//! loads (preloaded, the allocator would serve the host too). Where no shared build is found
//! (another target, a runner, a static C runtime, not Linux) nothing is previewed.

use super::Ladder;
use crate::bench::{Estimate, Verdict};
use crate::cargo::alloc;
use crate::pipeline::budget::Decides;
use crate::pipeline::measure;
use crate::stages::{changing, label_of, Changes, StageName};

impl Ladder<'_> {
    /// Whether `name`'s climb begins with the allocators' preview.
    pub(super) fn previews_allocators(&self, name: StageName) -> bool {
        let alloc = changing(Changes::Allocator);
        let builds_them = name == alloc
            || name.row().beside.contains(&Changes::Allocator) && self.to_come.contains(&alloc);
        // A library a host loads: preloaded, the allocator would serve the host's own
        // allocations too, which the library's `#[global_allocator]` never does.
        let library = self.ctx.plan.project.library.is_some();
        builds_them && !self.previewed && !self.ctx.spec.stages.thorough && !library
    }

    /// Preview each allocator of `[stages] alloc` that can be preloaded into the best so
    /// far; those that would not make it faster go into `screened`, with why.
    pub(super) fn preview_allocators(&mut self) -> anyhow::Result<()> {
        self.previewed = true;
        let best = self.best.candidate.clone();
        for name in self.ctx.spec.stages.alloc.clone() {
            let Some(lib) = self.preloadable(&name, &best) else {
                continue;
            };
            let label = format!("{} + {name} preloaded", best.label());
            let share = self.share(Decides::Keep);
            let (ctx, v, cache) = (self.ctx, &self.verifier, self.cache);
            let m = measure::preview(ctx, &best, (&label, &lib), v, share, cache)?;
            let what = format!(
                "{name} preloaded into the {} binary ({}={}, nothing built): {}",
                best.label(),
                crate::sys::PRELOAD_VAR.unwrap_or_default(),
                lib.display(),
                m.estimate
            );
            // Kept per workload under its label, for the report's per-workload table.
            for (w, c) in m.per_workload {
                let by_label = self.preview_per_workload.entry(w).or_default();
                by_label.insert(label.clone(), c);
            }
            let row = crate::context::label(label_of(Changes::Allocator), Some(&name));
            if worth_building(&m.estimate) {
                let ui = self.ctx.ui();
                ui.info(&format!("{row}: previewed, {what}: built and measured"));
                continue;
            }
            let why = format!("not built: previewed, {what}: this allocator does not make the program faster (--thorough builds it anyway)");
            self.ctx.ui().info(&format!("{row}: {why}"));
            self.screened.insert(name, why);
        }
        Ok(())
    }

    /// The shared build of allocator `name` that can be preloaded into `best`, when the
    /// stage could build it at all (`alloc::refusal`: the stage's row then says why not)
    /// and no eval workload sets the loader's variable itself.
    fn preloadable(
        &self,
        name: &str,
        best: &crate::context::Candidate,
    ) -> Option<std::path::PathBuf> {
        let (ctx, var) = (self.ctx, crate::sys::PRELOAD_VAR?);
        let a = alloc::named(name)?;
        let host = ctx.plan.rustc.host.as_str();
        let target = best.settings.target.as_deref().unwrap_or(host);
        let own = (ctx.spec.workloads.iter()).any(|w| w.eval && w.env.contains_key(var));
        if best.settings.allocator.is_some() || ctx.runner.is_some() || own {
            return None;
        }
        alloc::refusal(&ctx.plan.project, a, target)
            .is_none()
            .then(|| {
                let flags = best.settings.all_rustflags();
                alloc::preloadable(a, (target, host), &flags, &best.binary)
            })
            .flatten()
    }
}

/// Whether a preview's estimate leaves the allocator's build worth making: faster, or
/// not yet told apart from faster with its ratio below 1. Slower, equivalent, or
/// inconclusive at or above 1 is not — the keep-or-drop comparison the build would face
/// stops the same way (it is kept only when faster).
fn worth_building(e: &Estimate) -> bool {
    match e.verdict {
        Verdict::Faster | Verdict::SlightlyFaster => true,
        Verdict::Inconclusive => e.ratio < 1.0,
        Verdict::Slower | Verdict::SlightlySlower | Verdict::Equivalent => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est(ratio: f64, verdict: Verdict) -> Estimate {
        Estimate {
            ratio,
            ci_low: ratio * 0.9,
            ci_high: ratio * 1.1,
            verdict,
            confidence: 0.95,
        }
    }

    #[test]
    fn an_allocator_is_built_only_when_its_preview_may_be_faster() {
        assert!(worth_building(&est(0.6, Verdict::Faster)));
        assert!(worth_building(&est(0.99, Verdict::SlightlyFaster)));
        assert!(worth_building(&est(0.97, Verdict::Inconclusive)));
        assert!(!worth_building(&est(1.0, Verdict::Inconclusive)));
        assert!(!worth_building(&est(1.04, Verdict::Inconclusive)));
        assert!(!worth_building(&est(1.0, Verdict::Equivalent)));
        assert!(!worth_building(&est(1.01, Verdict::SlightlySlower)));
        assert!(!worth_building(&est(1.2, Verdict::Slower)));
    }
}
