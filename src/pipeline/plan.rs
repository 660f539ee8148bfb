//! What resolving a [`Plan`] takes from the layers above `context` (which defines and
//! resolves it; its `//!` doc says why there), as values: the [`RULES`]; and the plan of a
//! located spec ([`located`]). Also the look-ups of commands that make no plan: `target/optimize`
//! ([`optimize_dir`]), the spec and project ([`locate`], [`load_spec`]).

use std::path::PathBuf;

use crate::cargo::{Project, Workspace};
use crate::cli::{GlobalArgs, RunArgs};
use crate::context::plan::{self, Plan, Rules};
use crate::spec::{self, Spec};

/// What resolving a plan takes from the stages and the budget.
pub(crate) const RULES: Rules = Rules {
    default_budget: super::budget::DEFAULT,
    check_stage: |plan, stage, triple| crate::stage::contract(stage).check(plan, triple),
};

/// The plan of the located `spec` and `project` under the global flags `g`, every run
/// option off ([`Plan::located`]).
pub(crate) fn located(g: &GlobalArgs, spec: Spec, project: Project) -> anyhow::Result<Plan> {
    Plan::located(&RunArgs::default().asked(g), spec, project, &RULES)
}

/// `target/optimize` of the selection (`--target-dir`, else cargo's target directory), for
/// the commands that read what runs left there without a spec or a binary of their own
/// (`apply`, `clean`, `cache`).
pub(crate) fn optimize_dir(g: &GlobalArgs) -> anyhow::Result<PathBuf> {
    let target = match &g.selection.target_dir {
        Some(d) => crate::util::absolute(d),
        None => Workspace::load(&g.selection)?.target_dir(&g.selection),
    };
    Ok(target.join("optimize"))
}

/// The spec and the project it designates ([`plan::locate`]), of the global flags `g`.
pub(crate) fn locate(g: &GlobalArgs) -> anyhow::Result<(Spec, Project)> {
    plan::locate(&g.selection, g.spec.as_deref(), &[])
}

/// The spec for the selected package (used by `bench`).
/// With `--spec` no cargo project is needed: comparing two binaries needs only the workloads.
pub(crate) fn load_spec(g: &GlobalArgs) -> anyhow::Result<Spec> {
    match &g.spec {
        Some(path) => Ok(spec::load(path)?),
        None => {
            // Measured as a run measures it: a criterion harness by its own estimates.
            let (mut spec, project) = locate(g)?;
            if let Err(warning) = plan::criterion::measure_by_estimates(&project, &mut spec) {
                eprintln!("warning: {warning}");
            }
            Ok(spec)
        }
    }
}
