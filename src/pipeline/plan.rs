//! The command line's side of the [`Plan`], which `context::plan` defines and resolves (its
//! `//!` doc says why there): what the user said (`cli`'s types) read into
//! [`Asked`], and the [`RULES`] of the layers above `context` that resolving takes as
//! values. Also the look-ups of commands that make no plan: `target/optimize`
//! ([`optimize_dir`]), the spec and project ([`locate`], [`load_spec`]).

use std::path::PathBuf;

use crate::cargo::{Project, Workspace};
use crate::cli::{GlobalArgs, RunArgs};
use crate::context::plan::{self, Asked, Plan, Rules};
use crate::spec::{self, Spec};
use crate::ui::Ui;

/// What resolving a plan takes from the stages and the budget.
pub(crate) const RULES: Rules = Rules {
    default_budget: super::budget::DEFAULT,
    check_stage: |plan, stage, triple| crate::stage::contract(stage).check(plan, triple),
};

/// The plan of the global flags `g` and a run's flags `args` ([`Plan::resolve`]).
pub(crate) fn resolve(g: &GlobalArgs, args: &RunArgs) -> anyhow::Result<Plan> {
    Plan::resolve(&asked(g, args), &RULES)
}

/// The plan of the located `spec` and `project` under the global flags `g`, every run
/// option off ([`Plan::located`]).
pub(crate) fn located(g: &GlobalArgs, spec: Spec, project: Project) -> anyhow::Result<Plan> {
    Plan::located(&asked(g, &RunArgs::default()), spec, project, &RULES)
}

/// `g` and `args` in the plan's terms.
fn asked(g: &GlobalArgs, args: &RunArgs) -> Asked {
    let mut ui = Ui::new(g.quiet, g.verbose, g.color.forced());
    ui.events = args.message_format == crate::cli::MessageFormat::Json;
    Asked {
        selection: g.selection.clone(),
        spec: g.spec.clone(),
        ui,
        args: args.args.clone(),
        stages: args.stages.clone(),
        max_time: args.max_time.clone(),
        budget: args.budget.clone(),
        pgo_profile: args.pgo_profile.clone(),
        quick: args.quick,
        thorough: args.thorough,
        explain: args.explain,
        fresh: args.fresh,
        dry_run: args.dry_run,
    }
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
