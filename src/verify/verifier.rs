//! What the pipeline holds: the baseline and its [`Reference`], recorded the first time a
//! check needs it — and the checks an earlier run already made. A check is kept
//! (`cache/checks/<key>.json`) under the key of both binaries' bytes, every workload's
//! definition and input files, and this tool's version; so is what the baseline's
//! determinism check found. An unchanged re-run therefore runs no workload to verify.
//! Checks are not kept with `[verify] tests = true` (the tests' own sources are not in the
//! key), and `--fresh` looks nothing up.
//!
//! A candidate is verified in three phases, one entry each (`verify_*`; "check" is kept
//! for `cargo optimize check`, the CI gate, and for the on-disk store kind `checks`), so
//! that its eval workloads are not run once more just to be compared: before it is measured
//! ([`Verifier::verify_untimed`]: the workloads that are not timed and the crate's tests, or
//! nothing when an earlier run verified it all), on its first timed run of each eval
//! workload ([`Verifier::verify_timed`], the hook the bench engine calls), and after it is
//! measured ([`Verifier::verify_finish`]: the eval workloads no timed run verified, then
//! the verification kept). What the phases share is a [`TimedVerification`] the pipeline
//! only passes along.

use std::cell::{OnceCell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::candidate::{check_candidate_on, Checked};
use super::{Compared, Mismatch, Nondeterminism, Reference, Rejection};
use crate::bench::CheckRun;
use crate::context::sandbox::Sandbox;
use crate::context::{Candidate, Context};
use crate::process::{Outcome, Spool};
use crate::spec::Workload;
use crate::store::Store;

/// Before measuring: what a candidate's untimed check found ([`Verifier::verify_untimed`]).
#[must_use]
#[allow(clippy::large_enum_variant)] // one per candidate: boxing buys nothing
pub(crate) enum Untimed {
    /// An earlier run checked the same binaries and workloads: nothing is left to check,
    /// and its timed runs are not checked.
    AllChecked,
    /// The workloads that are not timed and the crate's tests passed; the eval workloads are
    /// checked on the candidate's timed runs, through this.
    Passed(TimedVerification),
    /// Its outputs differ on an untimed workload, or the crate's tests fail.
    Rejected(Rejection),
}

/// After measuring: how a candidate's check ended ([`Verifier::verify_finish`]).
#[must_use]
#[allow(clippy::large_enum_variant)] // one per candidate: boxing buys nothing
pub(crate) enum Concluded {
    /// Every workload agrees with the baseline's; the check is kept for later runs.
    Passed,
    /// A timed run, or a run of an eval workload no timed run checked, differs.
    Rejected(Rejection),
    /// Measuring failed and no timed run differed: nothing more is checked or kept.
    Unmeasured,
}

/// A candidate checked by its timed runs: made by [`Verifier::verify_untimed`], handed to
/// each timed run's hook ([`Verifier::verify_timed`]), ended by [`Verifier::verify_finish`].
/// It holds the eval workloads a timed run checked and the difference that rejected it.
pub(crate) struct TimedVerification {
    cand: Candidate,
    /// Where the candidate's outputs are saved (`outputs/<tag>/`).
    outputs: PathBuf,
    checked: RefCell<BTreeSet<String>>,
    rejected: RefCell<Option<Mismatch>>,
}

impl TimedVerification {
    /// Where the candidate's checked first run of `w` writes its outputs: where its
    /// verification runs' are saved.
    pub(crate) fn spool(&self, w: &Workload) -> Spool {
        super::spool_for(&self.outputs, w)
    }
}

/// What the baseline's determinism check found, as kept.
#[derive(serde::Serialize, serde::Deserialize)]
struct KeptBaseline {
    nondeterministic: BTreeMap<String, Nondeterminism>,
}

pub(crate) struct Verifier<'c> {
    ctx: &'c Context<'c>,
    baseline: Candidate,
    reference: OnceCell<Reference>,
    kept: Option<KeptBaseline>,
    store: Store,
}

impl<'c> Verifier<'c> {
    /// A verifier for `baseline`; its reference is recorded now unless an earlier run
    /// recorded it for the same binary and workloads.
    pub(crate) fn new(ctx: &'c Context<'c>, baseline: Candidate) -> anyhow::Result<Self> {
        let store = Store::new(&ctx.plan.optimize_dir, "checks");
        let mut v = Verifier {
            ctx,
            baseline,
            reference: OnceCell::new(),
            kept: None,
            store,
        };
        if !ctx.plan.fresh {
            v.kept = v.key(None).and_then(|k| v.store.get(&k));
        }
        match &v.kept {
            Some(_) => ctx.ui().info(
                "baseline: outputs recorded by an earlier run (same binary and workloads); they are recorded again only if a candidate needs checking",
            ),
            None => {
                v.reference()?;
            }
        }
        Ok(v)
    }

    /// The baseline's outputs, recorded on first use.
    pub(crate) fn reference(&self) -> anyhow::Result<&Reference> {
        if let Some(r) = self.reference.get() {
            return Ok(r);
        }
        let r = super::record_baseline(self.ctx, &self.baseline)?;
        let r = self.reference.get_or_init(|| r);
        self.keep_baseline();
        Ok(r)
    }

    /// Keep what the determinism check found so far for later runs (again after a
    /// candidate's check, which may have settled a deferred workload).
    fn keep_baseline(&self) {
        if let (Some(r), Some(k)) = (self.reference.get(), self.key(None)) {
            let kept = KeptBaseline {
                nondeterministic: r.nondeterministic(),
            };
            self.store.put(&k, &kept);
        }
    }

    /// Each workload's wall time on the baseline, in seconds, when this run recorded the
    /// reference (an earlier run's kept one holds no times).
    pub(crate) fn run_times(&self) -> Option<BTreeMap<String, f64>> {
        let r = self.reference.get()?;
        Some(
            r.observed
                .iter()
                .map(|(name, o)| {
                    let first = o.outcome.wall.as_secs_f64();
                    (name.clone(), *r.warm_secs.get(name).unwrap_or(&first))
                })
                .collect(),
        )
    }

    /// The workloads whose baseline disagreed with itself.
    pub(crate) fn nondeterministic(&self) -> BTreeMap<String, Nondeterminism> {
        match (self.reference.get(), &self.kept) {
            (Some(r), _) => r.nondeterministic(),
            (None, Some(k)) => k.nondeterministic.clone(),
            (None, None) => BTreeMap::new(),
        }
    }

    /// Before measuring `cand`: nothing when an earlier run checked the same binaries and
    /// workloads (`AllChecked`), else every workload that is not timed (not eval) and the
    /// crate's own tests; when they pass, the eval workloads are checked on the candidate's
    /// first timed run of each ([`verify_timed`]) and [`verify_finish`] completes it. An
    /// error is a fault (a workload could not be run), not a rejection.
    ///
    /// [`verify_timed`]: Self::verify_timed
    /// [`verify_finish`]: Self::verify_finish
    pub(crate) fn verify_untimed(&self, cand: &Candidate) -> anyhow::Result<Untimed> {
        if self.kept_check(cand) {
            return Ok(Untimed::AllChecked);
        }
        let reference = self.reference()?;
        Ok(
            match check_candidate_on(self.ctx, cand, reference, &|w| !w.eval, true)? {
                Checked::Passed => Untimed::Passed(TimedVerification {
                    cand: cand.clone(),
                    outputs: self.ctx.run.outputs(&cand.tag()),
                    checked: RefCell::default(),
                    rejected: RefCell::default(),
                }),
                Checked::Rejected(r) => Untimed::Rejected(r),
            },
        )
    }

    /// While measuring: the hook the bench engine calls with `check`'s candidate's first
    /// timed run of the eval workload `w` (in its private copy `sandbox`, when the workload
    /// writes files). The run is checked as a verification run is, its outputs saved with
    /// the candidate's; a pass is remembered in `check`, a difference kept there too and
    /// returned as the reason the comparison ends.
    pub(crate) fn verify_timed<'a>(
        &'a self,
        check: &'a TimedVerification,
        w: &'a Workload,
        sandbox: Option<&'a Sandbox>,
    ) -> Box<CheckRun<'a>> {
        Box::new(
            move |out| match self.compare_timed(check, w, out, sandbox) {
                Ok(Compared::Same) => {
                    check.checked.borrow_mut().insert(w.name.clone());
                    Ok(())
                }
                Ok(Compared::Differs(m)) => {
                    let said = m.to_string();
                    *check.rejected.borrow_mut() = Some(m);
                    Err(said)
                }
                Err(e) => Err(format!("{e:#}")),
            },
        )
    }

    /// A timed run of `w` (its outcome, and the private copy it ran in) against the
    /// baseline's.
    fn compare_timed(
        &self,
        check: &TimedVerification,
        w: &Workload,
        outcome: &Outcome,
        sandbox: Option<&Sandbox>,
    ) -> anyhow::Result<Compared> {
        let obs = super::observed_from(w, outcome.clone(), sandbox, &check.outputs)?;
        Ok(self
            .reference()?
            .check_settled(self.ctx, w, &check.cand.label(), &obs)?)
    }

    /// After measuring (`measured`: it completed): rejected when a timed run differed;
    /// else the eval workloads no timed run checked (their verdicts were kept from an
    /// earlier run, so none ran) are run and checked now, then the candidate's check is
    /// kept for later runs. An error is a fault, not a rejection.
    pub(crate) fn verify_finish(
        &self,
        check: TimedVerification,
        measured: bool,
    ) -> anyhow::Result<Concluded> {
        if let Some(m) = check.rejected.into_inner() {
            return Ok(Concluded::Rejected(Rejection::Outputs(m)));
        }
        if !measured {
            return Ok(Concluded::Unmeasured);
        }
        let (cand, checked) = (&check.cand, check.checked.into_inner());
        let rest = |w: &Workload| w.eval && !checked.contains(&w.name);
        if self.ctx.spec.workloads.iter().any(rest) {
            let reference = self.reference()?;
            if let Checked::Rejected(r) =
                check_candidate_on(self.ctx, cand, reference, &rest, false)?
            {
                return Ok(Concluded::Rejected(r));
            }
        }
        if let Some(k) = self.check_key(cand) {
            self.store.put(&k, &true);
        }
        self.keep_baseline();
        Ok(Concluded::Passed)
    }

    /// How far `cand`'s outputs moved from the baseline's (`verify::deviation`): after its
    /// check, from what the check saved.
    pub(crate) fn deviation(
        &self,
        cand: &Candidate,
    ) -> anyhow::Result<crate::context::facts::OutputDeviation> {
        super::deviation::deviation(self.ctx, self.reference()?, cand)
    }

    /// Whether an earlier run checked `cand` on the same binaries and workloads (said so).
    fn kept_check(&self, cand: &Candidate) -> bool {
        let key = self.check_key(cand).filter(|_| !self.ctx.plan.fresh);
        let kept = key.is_some_and(|k| self.store.get::<bool>(&k) == Some(true));
        if kept {
            self.ctx.ui().info(&format!(
                "{}: outputs match the baseline's (checked by an earlier run on the same binaries and workloads)",
                cand.label()
            ));
        }
        kept
    }

    /// The key of `cand`'s check (none with `[verify] tests = true`: tests are run again).
    fn check_key(&self, cand: &Candidate) -> Option<String> {
        self.key(Some(&cand.binary))
            .filter(|_| !self.ctx.spec.verify.tests)
    }

    /// The key of checking `cand` (the baseline itself for `None`).
    fn key(&self, cand: Option<&Path>) -> Option<String> {
        let workloads: Vec<_> = self.ctx.spec.workloads.iter().collect();
        let mut binaries = vec![self.baseline.binary.as_path()];
        binaries.extend(cand);
        crate::cache::key_of(&binaries, &workloads, "check").ok()
    }
}
