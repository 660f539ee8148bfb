//! What the pipeline holds: the baseline and its [`Reference`], recorded the first time a
//! check needs it — and the checks an earlier run already made. A check is kept
//! (`cache/checks/<key>.json`) under the key of both binaries' bytes, every workload's
//! definition and input files, and this tool's version; so is what the baseline's
//! determinism check found. An unchanged re-run therefore runs no workload to verify.
//! Checks are not kept with `[verify] tests = true` (the tests' own sources are not in the
//! key), and `--fresh` looks nothing up.

use std::cell::OnceCell;
use std::collections::BTreeMap;
use std::path::Path;

use super::{Nondeterminism, Reference, Rejection};
use crate::context::{Candidate, Context};
use crate::store::Store;

/// What the baseline's determinism check found, as kept.
#[derive(serde::Serialize, serde::Deserialize)]
struct KeptBaseline {
    nondeterministic: BTreeMap<String, Nondeterminism>,
}

pub struct Verifier<'c> {
    ctx: &'c Context<'c>,
    baseline: Candidate,
    reference: OnceCell<Reference>,
    kept: Option<KeptBaseline>,
    store: Store,
}

impl<'c> Verifier<'c> {
    /// A verifier for `baseline`; its reference is recorded now unless an earlier run
    /// recorded it for the same binary and workloads.
    pub fn new(ctx: &'c Context<'c>, baseline: Candidate) -> anyhow::Result<Self> {
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
    pub fn reference(&self) -> anyhow::Result<&Reference> {
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
    pub fn run_times(&self) -> Option<BTreeMap<String, f64>> {
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
    pub fn nondeterministic(&self) -> BTreeMap<String, Nondeterminism> {
        match (self.reference.get(), &self.kept) {
            (Some(r), _) => r.nondeterministic(),
            (None, Some(k)) => k.nondeterministic.clone(),
            (None, None) => BTreeMap::new(),
        }
    }

    /// The part of checking `cand` that comes before it is measured: nothing when an
    /// earlier run checked the same binaries and workloads (`Ok(true)`: all checked), else
    /// every workload that is not timed (not eval) and the crate's own tests — the eval
    /// workloads are checked on the candidate's first timed run of each ([`check_timed`]),
    /// and [`finish_check`] completes it (`Ok(false)`).
    ///
    /// [`check_timed`]: Self::check_timed
    /// [`finish_check`]: Self::finish_check
    pub fn check_untimed(&self, cand: &Candidate) -> anyhow::Result<Result<bool, Rejection>> {
        if self.kept_check(cand) {
            return Ok(Ok(true));
        }
        let reference = self.reference()?;
        let untimed =
            super::candidate::check_candidate_on(self.ctx, cand, reference, &|w| !w.eval, true)?;
        Ok(untimed.map(|()| false))
    }

    /// A candidate's first timed run of the eval workload `w` (its outcome, and the private
    /// copy it ran in), checked as a verification run is; its outputs are saved with the
    /// candidate's.
    pub fn check_timed(
        &self,
        cand: &Candidate,
        w: &crate::spec::Workload,
        outcome: &crate::process::Outcome,
        sandbox: Option<&crate::context::sandbox::Sandbox>,
    ) -> anyhow::Result<Result<(), super::Mismatch>> {
        let outputs = self.ctx.run.outputs(&cand.tag());
        let obs = super::observed_from(w, outcome.clone(), sandbox, &outputs)?;
        Ok(self
            .reference()?
            .check_settled(self.ctx, w, &cand.label(), &obs)?)
    }

    /// After measuring: the eval workloads no timed run checked (their verdicts were kept
    /// from an earlier run, so none ran) are run and checked now; then the candidate's check
    /// is kept for later runs.
    pub fn finish_check(
        &self,
        cand: &Candidate,
        checked: &std::collections::BTreeSet<String>,
    ) -> anyhow::Result<Result<(), Rejection>> {
        let rest = |w: &crate::spec::Workload| w.eval && !checked.contains(&w.name);
        if self.ctx.spec.workloads.iter().any(rest) {
            let r = super::candidate::check_candidate_on(
                self.ctx,
                cand,
                self.reference()?,
                &rest,
                false,
            )?;
            if r.is_err() {
                return Ok(r);
            }
        }
        if let Some(k) = self.check_key(cand) {
            self.store.put(&k, &true);
        }
        self.keep_baseline();
        Ok(Ok(()))
    }

    /// How far `cand`'s outputs moved from the baseline's (`verify::drift`): after its
    /// check, from what the check saved.
    pub fn drift(&self, cand: &Candidate) -> anyhow::Result<crate::context::facts::OutputDrift> {
        super::drift::drift(self.ctx, self.reference()?, cand)
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
