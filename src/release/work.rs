//! The release's jobs: the graph made from the artifacts (each artifact's chain —
//! instrumented build → train + merge → PGO build → BOLT → verify → package — and each
//! group's portable baseline and its recorded outputs), and what each job does. Jobs run on
//! worker threads: each makes its own [`Context`] over its flavor's spec and its own folder
//! (`releases/<id>/<artifact>/`), and hands what it made to the jobs after it through
//! [`State`].
//!
//! Must not: decide what the matrix is (`matrix`), or write outside the release's folder
//! and the staging output folder (`package` does that).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;

use super::matrix::{Artifact, Group};
use super::package::{self, Packaged};
use crate::cargo::runner::Runner;
use crate::cargo::{BuildSettings, Built};
use crate::context::Plan;
use crate::context::{Candidate, Context, RunDir};
use crate::jobs::{Graph, JobOutcome};
use crate::spec::Spec;
use crate::stage::{self, pgo, StageError};
use crate::stages::{changing, label_of, Changes};
use crate::verify::Reference;

/// One job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// A group's portable baseline.
    Baseline(usize),
    /// A group's baseline outputs, recorded for verifying its artifacts.
    Record(usize),
    Instrument(usize),
    Train(usize),
    /// The `-Cprofile-use` build.
    Optimize(usize),
    /// An artifact built without PGO.
    Build(usize),
    Bolt(usize),
    Verify(usize),
    Package(usize),
}

/// The job graph. Each artifact's first build comes first (the longest chains start
/// first: ready jobs start in this order), then the baselines, then the rest.
pub(crate) fn graph(artifacts: &[Artifact], groups: &[Group]) -> Graph<Step> {
    let mut g = Graph::new();
    let heads: Vec<_> = artifacts
        .iter()
        .enumerate()
        .map(|(ai, a)| match a.pgo {
            true => g.add(
                "build",
                format!("{} instrumented", a.label),
                &[],
                Step::Instrument(ai),
            ),
            false => g.add(
                "build",
                format!("{} (no PGO)", a.label),
                &[],
                Step::Build(ai),
            ),
        })
        .collect();
    let records: Vec<_> = groups
        .iter()
        .enumerate()
        .map(|(gi, group)| {
            group.verified.then(|| {
                let name = format!("{} baseline", group.label);
                let b = g.add("build", name, &[], Step::Baseline(gi));
                let name = format!("{} baseline outputs", group.label);
                g.add("record", name, &[b], Step::Record(gi))
            })
        })
        .collect();
    for (ai, a) in artifacts.iter().enumerate() {
        let mut last = heads[ai];
        if a.pgo {
            let t = g.add(
                "train",
                format!("{} train + merge", a.label),
                &[last],
                Step::Train(ai),
            );
            last = g.add(
                "build",
                format!("{} PGO", a.label),
                &[t],
                Step::Optimize(ai),
            );
        }
        if a.bolt {
            let bolt = label_of(Changes::CodeLayout);
            last = g.add(bolt, format!("{} BOLT", a.label), &[last], Step::Bolt(ai));
        }
        if let (None, Some(r)) = (&a.cannot_run, records[a.group]) {
            last = g.add(
                "verify",
                format!("{} verify", a.label),
                &[last, r],
                Step::Verify(ai),
            );
        }
        g.add("package", a.name.clone(), &[last], Step::Package(ai));
    }
    g
}

/// What the jobs made, for the jobs after them and the manifest.
#[derive(Default)]
pub(crate) struct State {
    pub(crate) baselines: Vec<Option<Candidate>>,
    instrumented: Vec<Option<(BuildSettings, Built)>>,
    pub(crate) profiles: Vec<Option<pgo::TrainedProfile>>,
    /// Each artifact's binary so far (the PGO build, then the BOLTed one).
    pub(crate) binaries: Vec<Option<Candidate>>,
    /// Why BOLT was not applied after all (BOLT cannot run on this binary here).
    pub(crate) bolt_skipped: Vec<Option<String>>,
    /// How it was verified.
    pub(crate) verified: Vec<Option<String>>,
    pub(crate) packaged: Vec<Option<Packaged>>,
    /// Builds reused and run.
    pub(crate) builds: (u32, u32),
}

/// Everything the jobs share.
pub(crate) struct Release<'a> {
    pub(crate) plan: &'a Plan,
    pub(crate) artifacts: &'a [Artifact],
    pub(crate) groups: &'a [Group],
    /// Each flavor's spec: its workloads only.
    pub(crate) specs: Vec<Spec>,
    /// `target/optimize/releases/<id>/`.
    pub(crate) root: PathBuf,
    /// The output folder being filled (renamed into place at the end).
    pub(crate) staging: PathBuf,
    pub(crate) state: Mutex<State>,
    /// Each group's recorded outputs; a verify job holds its group's lock while it checks.
    pub(crate) references: Vec<Mutex<Option<Reference>>>,
    /// `SOURCE_DATE_EPOCH`, else 0: the time stamped into archives.
    pub(crate) mtime: u64,
    /// cargo's runner of each target whose binaries run through one (`qemu-aarch64`).
    pub(crate) runners: BTreeMap<String, Runner>,
}

impl Release<'_> {
    pub(crate) fn new_state(artifacts: usize, groups: usize) -> State {
        State {
            baselines: vec![None; groups],
            instrumented: (0..artifacts).map(|_| None).collect(),
            profiles: (0..artifacts).map(|_| None).collect(),
            binaries: vec![None; artifacts],
            bolt_skipped: vec![None; artifacts],
            verified: vec![None; artifacts],
            packaged: vec![None; artifacts],
            builds: (0, 0),
        }
    }

    /// Do one job.
    pub(crate) fn execute(&self, step: Step) -> JobOutcome {
        match self.try_execute(step) {
            Ok(()) => JobOutcome::Done,
            Err(e) => {
                let target = self.target_of(step);
                let why = link_fix(&e.to_string(), target, &self.plan.rustc.host);
                JobOutcome::Failed(runner_fix(why, step, self.runners.get(target)))
            }
        }
    }

    fn target_of(&self, step: Step) -> &str {
        match step {
            Step::Baseline(g) | Step::Record(g) => self.groups[g]
                .baseline
                .target
                .as_deref()
                .unwrap_or_default(),
            Step::Instrument(a)
            | Step::Train(a)
            | Step::Optimize(a)
            | Step::Build(a)
            | Step::Bolt(a)
            | Step::Verify(a)
            | Step::Package(a) => &self.artifacts[a].target,
        }
    }

    fn try_execute(&self, step: Step) -> Result<(), StageError> {
        match step {
            Step::Baseline(g) => self.in_group(g, |group, ctx| {
                let cand = stage::baseline::build(ctx, group.baseline.clone());
                self.count(ctx);
                self.state().baselines[g] = Some(cand?);
                Ok(())
            }),
            Step::Record(g) => self.in_group(g, |_, ctx| {
                let baseline = self.state().baselines[g].clone().ok_or_else(missing)?;
                let reference = crate::verify::record_baseline(ctx, &baseline)
                    .map_err(|e| StageError::Failed(format!("{e:#}")))?;
                *lock(&self.references[g]) = Some(reference);
                Ok(())
            }),
            Step::Instrument(a) => self.in_artifact(a, |art, ctx| {
                let built = pgo::instrument(ctx, &art.settings, &art.label, None);
                self.count(ctx);
                self.state().instrumented[a] = Some(built?);
                Ok(())
            }),
            Step::Train(a) => self.in_artifact(a, |art, ctx| {
                let built = self.state().instrumented[a].take().ok_or_else(missing)?;
                let pgo_label = label_of(Changes::TrainingProfile);
                let profile =
                    pgo::train_instrumented(ctx, &art.settings, built, pgo_label, &art.label);
                self.count(ctx);
                self.state().profiles[a] = Some(profile?);
                Ok(())
            }),
            Step::Optimize(a) => self.in_artifact(a, |art, ctx| self.optimize(a, art, ctx)),
            Step::Build(a) => self.in_artifact(a, |art, ctx| {
                let settings = art.settings.clone();
                let name = changing(Changes::ProfileSettings);
                let built = stage::build_candidate(ctx, name, settings, Default::default());
                self.count(ctx);
                self.state().binaries[a] = Some(built?.0);
                Ok(())
            }),
            Step::Bolt(a) => self.in_artifact(a, |_, ctx| self.bolt(a, ctx)),
            Step::Verify(a) => self.in_artifact(a, |art, ctx| self.verify(a, art, ctx)),
            Step::Package(a) => {
                let art = &self.artifacts[a];
                let cand = self.state().binaries[a].clone().ok_or_else(missing)?;
                let bin = &self.plan.project.bin;
                let packaged =
                    package::package(&cand.binary, &self.staging, &art.name, bin, self.mtime)?;
                self.state().packaged[a] = Some(packaged);
                Ok(())
            }
        }
    }

    /// `f` with group `g` and a `Context` over its flavor and its baseline's folder.
    fn in_group(
        &self,
        g: usize,
        f: impl FnOnce(&Group, &Context) -> Result<(), StageError>,
    ) -> Result<(), StageError> {
        let group = &self.groups[g];
        let run = self.folder(&format!("{}-baseline", group_dir(&group.label)));
        let target = group.baseline.target.as_deref().unwrap_or_default();
        f(group, &self.context(group.flavor, &run, target))
    }

    /// `f` with artifact `a` and a `Context` over its flavor and its own folder.
    fn in_artifact(
        &self,
        a: usize,
        f: impl FnOnce(&Artifact, &Context) -> Result<(), StageError>,
    ) -> Result<(), StageError> {
        let art = &self.artifacts[a];
        let run = self.folder(&art.name);
        f(art, &self.context(art.flavor, &run, &art.target))
    }

    /// The PGO build with the artifact's own profile (linked with relocations when BOLT
    /// follows and takes it as is).
    fn optimize(&self, a: usize, art: &Artifact, ctx: &Context) -> Result<(), StageError> {
        let relocs = art.bolt && pgo::bolt_takes_as_is(ctx, &art.settings);
        let cand = {
            let state = self.state();
            let profile = state.profiles[a].as_ref().ok_or_else(missing)?;
            // The lock is not held across the build: copy what it needs.
            let profile = pgo::TrainedProfile::clone(profile);
            drop(state);
            let settings = match art.c_profile {
                true => pgo::whole::with_c_profile(&art.settings, &profile),
                false => art.settings.clone(),
            };
            pgo::build_with(ctx, &settings, &profile, None, relocs)
        };
        self.count(ctx);
        self.state().binaries[a] = Some(cand?);
        Ok(())
    }

    fn bolt(&self, a: usize, ctx: &Context) -> Result<(), StageError> {
        let input = self.state().binaries[a].clone().ok_or_else(missing)?;
        let bolted = stage::bolt::prepare(ctx, &input);
        self.count(ctx);
        match bolted {
            Ok(c) => self.state().binaries[a] = Some(c),
            // BOLT cannot run on this binary here: it ships without, and says so.
            Err(StageError::NotAvailable(why)) => self.state().bolt_skipped[a] = Some(why),
            Err(e) => return Err(e),
        }
        Ok(())
    }

    /// The artifact's outputs against its group's portable baseline; a difference fails
    /// the job (the artifact is not packaged).
    fn verify(&self, a: usize, art: &Artifact, ctx: &Context) -> Result<(), StageError> {
        let cand = self.state().binaries[a].clone().ok_or_else(missing)?;
        let reference = lock(&self.references[art.group]);
        let reference = reference.as_ref().ok_or_else(missing)?;
        let checked = crate::verify::check_candidate(ctx, &cand, reference)
            .map_err(|e| StageError::Failed(format!("{e:#}")))?;
        if let crate::verify::Checked::Rejected(rejection) = checked {
            return Err(StageError::Failed(format!(
                "{}: not packaged\n{}",
                rejection.headline(),
                rejection
            )));
        }
        let n = ctx.spec.workloads.len();
        self.state().verified[a] = Some(format!(
            "outputs match the portable baseline's on {n} workload(s)"
        ));
        Ok(())
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// A run folder of this release.
    fn folder(&self, name: &str) -> RunDir {
        RunDir {
            id: name.to_string(),
            root: self.root.join(name),
        }
    }

    /// A `Context` whose workloads run through `target`'s runner when it has one.
    fn context<'c>(&'c self, flavor: usize, run: &'c RunDir, target: &str) -> Context<'c> {
        let mut ctx = Context::new(self.plan, &self.specs[flavor], run);
        ctx.runner = self.runners.get(target).cloned();
        ctx
    }

    /// Add a job's build counts to the release's.
    fn count(&self, ctx: &Context) {
        let (reused, run) = ctx.build_counts();
        let mut state = self.state();
        state.builds.0 += reused;
        state.builds.1 += run;
    }
}

/// A build for another target that failed to link gets the fix: a linker for that target.
fn link_fix(error: &str, target: &str, host: &str) -> String {
    let linking = error.contains("error: linking with") || error.contains("linker `");
    if target == host || target.is_empty() || !linking {
        return error.to_string();
    }
    format!(
        "{error}\n  fix: this machine has no linker for {target}: install one (on Debian, e.g. `gcc-{}-linux-gnu`) and name it in .cargo/config.toml:\n    [target.{target}]\n    linker = \"{}-linux-gnu-gcc\"",
        target.split('-').next().unwrap_or(target).replace('_', "-"),
        target.split('-').next().unwrap_or(target)
    )
}

/// A job that ran workloads through a runner and failed gets the runner named, with the
/// fix for the usual cause (an emulator that cannot find the target's libraries).
fn runner_fix(error: String, step: Step, runner: Option<&Runner>) -> String {
    let runs = matches!(step, Step::Record(_) | Step::Train(_) | Step::Verify(_));
    let Some(r) = runner.filter(|_| runs) else {
        return error;
    };
    format!(
        "{error}\n  the workloads ran through cargo's runner `{}` ({})\n  fix: check that the runner starts the binary: `{} <binary> <args>`; qemu-user needs the target's libraries (on Debian `-L /usr/aarch64-linux-gnu`, from `gcc-aarch64-linux-gnu`)",
        r.line(),
        r.from,
        r.line()
    )
}

/// A group's folder name (`x86_64-unknown-linux-gnu/fast` → `x86_64-unknown-linux-gnu-fast`).
fn group_dir(label: &str) -> String {
    crate::util::file_safe(&label.replace('/', "-"), "-_.")
}

fn missing() -> StageError {
    StageError::Failed("what an earlier job should have made is missing".into())
}

/// A lock, even after a job panicked while holding it (the scheduler reports the panic;
/// the data is per job, so the others' stays good).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cross_link_failure_gets_the_linker_fix_and_nothing_else_does() {
        let err = "cargo build failed\nerror: linking with `cc` failed: exit status: 1";
        let fixed = link_fix(err, "aarch64-unknown-linux-gnu", "x86_64-unknown-linux-gnu");
        assert!(fixed.starts_with(err), "{fixed}");
        assert!(
            fixed.contains("gcc-aarch64-linux-gnu")
                && fixed.contains("[target.aarch64-unknown-linux-gnu]"),
            "{fixed}"
        );
        assert_eq!(
            link_fix(err, "x86_64-unknown-linux-gnu", "x86_64-unknown-linux-gnu"),
            err
        );
        assert_eq!(
            link_fix(
                "error[E0308]: mismatched types",
                "aarch64-unknown-linux-gnu",
                "x"
            ),
            "error[E0308]: mismatched types"
        );
    }
}
