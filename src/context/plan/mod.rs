//! [`Plan`]: what a run does, resolved once from what the user said, the spec and the
//! toolchain before anything is built (low-level arguments → high-level ones, on a small scale):
//! later code reads the plan and never goes back to flags, files or the environment.
//!
//! Configuration types: what the user said (the command line, `cli`'s, and the spec as
//! parsed), the command line in this layer's terms ([`Asked`]), and what the run does
//! ([`Plan`]). Every command that builds gets its `Plan` here: `run`, `check` (no stage) and
//! `profile collect` from their flags ([`Plan::resolve`]), `release` from [`Plan::located`]
//! completed with the tools its artifacts need and its first group's baseline. This is the
//! one place rustc, llvm-profdata and llvm-bolt are found and the user's rustflags (cargo's
//! config and environment) are read.
//!
//! Why here: the [`Context`](super::Context) of this layer holds `&Plan`, so the type cannot
//! live above it, and its resolution lives beside it. Resolving reads lower layers (cargo,
//! spec, toolchain, process, ui; the criterion harnesses and the runner rule are its own
//! [`criterion`] and [`runner`]), except for what the caller passes in as values: the
//! command line (`cli`, above this layer), read into [`Asked`] by `cli::RunArgs::asked`, and
//! the stages' checks of the spec and the budget's default ([`Rules`]: `pipeline::plan`). The least that
//! moves: moving `cli` below this layer would renumber every layer above `cargo`, and
//! moving the stages' checks down would take them from the stages that own them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::cargo::{self, BuildSettings, CargoError, Project, Selection, Workspace};
use crate::process;
use crate::spec::{self, Spec};
use crate::stages::{changing, Changes, StageName};
use crate::toolchain::{self, BoltTools, Rustc, Tool, ToolError};
use crate::ui::Ui;

pub(crate) mod criterion;
mod library;
mod runner;

/// One run, resolved.
pub(crate) struct Plan {
    pub project: Project,
    /// The spec with the command line's overrides (`--stages`, `--max-time`) applied.
    pub spec: Spec,
    pub rustc: Rustc,
    /// Looked for only when the pgo stage is tried.
    pub llvm_profdata: Option<Tool>,
    /// Looked for only when the bolt stage is tried.
    pub bolt_tools: Option<Result<BoltTools, ToolError>>,
    /// The baseline's settings: the user's profile, features, target and rustflags.
    pub baseline: BuildSettings,
    /// `target/optimize`.
    pub optimize_dir: PathBuf,
    /// `--explain`: measure each profile setting alone.
    pub explain: bool,
    /// `--fresh`: look up no kept verdict.
    pub fresh: bool,
    /// `--pgo-profile FILE` (absolute, checked): the pgo stage builds with it instead of
    /// training.
    pub pgo_profile: Option<PathBuf>,
    /// The wall time the whole run may take (`--budget`, `[bench] budget`, the default).
    pub budget: std::time::Duration,
    /// `--dry-run`: print the plan and what an earlier run of it cost; build nothing.
    pub dry_run: bool,
    /// `--quick`: pgo only, one eval workload per name, a short budget ([`QUICK_BUDGET`]).
    pub quick: bool,
    pub ui: Ui,
    /// cargo's runner for `--target`, which the user said is real hardware
    /// (`[bench] runner-is-native`; [`runner::for_ladder`]).
    pub runner: Option<cargo::runner::Runner>,
    /// A build whose BOLT input will be asked for can link that input beside itself
    /// (`cargo::twin`): the target is GNU Linux and its linker is rustc's own.
    pub twin_links: bool,
}

/// What the user said that a plan reads, in this layer's terms: the command line is
/// `cli`'s, above this layer, and `cli::RunArgs::asked` reads it into this. The run's options
/// are those of `cargo optimize run` (`cli::RunArgs`); a command that takes fewer gives
/// their defaults for the rest.
#[derive(Debug, Clone)]
pub(crate) struct Asked {
    /// Cargo's selection and build flags (`-p`, `--bin`, `--profile`, `--target`, …).
    pub selection: Selection,
    /// `--spec`: the spec file (default: optimize.toml next to the package's Cargo.toml).
    pub spec: Option<PathBuf>,
    /// The output asked for (`-q`, `-v`, `--color`, `--message-format`).
    pub ui: Ui,
    /// The binary's arguments (after `--`) as the one workload.
    pub args: Vec<String>,
    /// `--stages`, `--max-time` and `--budget`, as given ([`apply_overrides`]).
    pub stages: Option<Vec<String>>,
    pub max_time: Option<String>,
    pub budget: Option<String>,
    /// `--pgo-profile FILE`, as given ([`given_profile`]).
    pub pgo_profile: Option<PathBuf>,
    /// `--quick` ([`quick`]), `--thorough`, `--explain`, `--fresh`, `--dry-run`.
    pub quick: bool,
    pub thorough: bool,
    pub explain: bool,
    pub fresh: bool,
    pub dry_run: bool,
}

/// A tried stage's own spec keys checked against the plan and the target triple, exit 2
/// naming the spec's line: `fn(plan, stage, triple)`.
pub(crate) type CheckStage = fn(&Plan, StageName, &str) -> anyhow::Result<()>;

/// What resolving a plan takes from the layers above this one, as values
/// (`pipeline::plan::RULES`).
pub(crate) struct Rules {
    /// The run's budget when neither `--budget` nor `[bench] budget` gives one
    /// (`pipeline::budget::DEFAULT`).
    pub default_budget: std::time::Duration,
    /// Each tried stage's own keys checked (`stage::Stage::check`, through its contract).
    pub check_stage: CheckStage,
}

/// Find the spec (`spec`, else optimize.toml next to the package's Cargo.toml), read it,
/// and resolve the package and binary (flags first, then the spec): the spec and the
/// project it designates. For `cargo optimize -- ARGS`: with `args`, the spec's workloads
/// are replaced by the one workload `ARGS` (run in the current directory), and no spec file
/// is needed.
pub(crate) fn locate(
    selection: &Selection,
    spec: Option<&Path>,
    args: &[String],
) -> anyhow::Result<(Spec, Project)> {
    let workspace = Workspace::load(selection)?;
    let spec_path = match spec {
        Some(p) => p.to_path_buf(),
        None => workspace
            .spec_dir(selection.package.as_deref())?
            .join(spec::SPEC_FILE),
    };
    let cwd = std::env::current_dir()?;
    let spec = match (spec::load(&spec_path), args.is_empty()) {
        (Ok(spec), true) => spec,
        (Ok(spec), false) => spec::with_args(spec, args, &cwd)?,
        (Err(spec::SpecError::Missing { .. }), false) => spec::from_args(args, &cwd)?,
        (Err(e), _) => return Err(e.into()),
    };
    let sel = selection.clone();
    // The workloads run a host program: the library it loads is what is optimized.
    let hosted = spec.workloads.first().is_some_and(|w| w.host.is_some());
    let project = match hosted {
        true => workspace.library_project(&sel, spec.package.as_deref()),
        false => workspace.project_for(
            &sel,
            spec.package.as_deref(),
            spec.bin.as_deref(),
            spec.harness.as_ref(),
        ),
    };
    let project = project.map_err(|e| {
        // A name that came from the spec is the spec's mistake: say where it is.
        let key = match e {
            CargoError::UnknownPackage(..) if sel.package.is_none() => "package",
            CargoError::UnknownBin { .. } if sel.bin.is_none() => "bin",
            _ => return anyhow::Error::from(e),
        };
        let line = std::fs::read_to_string(&spec.path)
            .ok()
            .and_then(|text| top_level_key_line(&text, key))
            .unwrap_or(1);
        anyhow::anyhow!("{}:{line}: `{key}`: {e}", spec.path.display())
    })?;
    Ok((spec, project))
}

/// The line of a top-level `key = …` in a TOML text (before the first table).
fn top_level_key_line(text: &str, key: &str) -> Option<usize> {
    text.lines()
        .take_while(|l| !l.trim_start().starts_with('['))
        .position(|l| {
            l.trim_start()
                .strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with('='))
        })
        .map(|i| i + 1)
}

impl Plan {
    /// The plan of the located `spec` and `project`, rustc found; the LLVM tools none yet
    /// ([`Plan::find_tools`]), the baseline the user's profile and features without their
    /// rustflags, every option off: for a command to complete (`release`), or
    /// [`Plan::resolve`]'s start.
    pub(crate) fn located(
        asked: &Asked,
        spec: Spec,
        project: Project,
        rules: &Rules,
    ) -> anyhow::Result<Plan> {
        let baseline = BuildSettings {
            profile: asked.selection.profile.clone(),
            profile_overrides: BTreeMap::new(),
            user_rustflags: Vec::new(),
            stage_rustflags: Vec::new(),
            target: None,
            features: project.features.clone(),
            allocator: None,
            c: None,
            relocs_twin: false,
        };
        Ok(Plan {
            optimize_dir: project.target_dir.join("optimize"),
            rustc: toolchain::rustc()?,
            spec,
            project,
            llvm_profdata: None,
            bolt_tools: None,
            baseline,
            explain: false,
            fresh: false,
            pgo_profile: None,
            budget: rules.default_budget,
            dry_run: false,
            quick: false,
            ui: asked.ui.clone(),
            runner: None,
            twin_links: false,
        })
    }

    /// The library a host program loads, resolved for this machine's target as a run
    /// resolves it (`release`: the file name the host imports, its interpreter).
    pub(crate) fn resolve_library(&mut self) -> anyhow::Result<()> {
        let host = self.rustc.host.clone();
        library::resolve(&mut self.project, &self.spec, &host)
    }

    /// llvm-profdata, required when `pgo` (otherwise only read for a stale profile's size,
    /// so looked for without failing), and llvm-bolt's tools when `bolt`.
    pub(crate) fn find_tools(&mut self, pgo: bool, bolt: bool) -> anyhow::Result<()> {
        self.llvm_profdata = if pgo {
            Some(toolchain::llvm_profdata(&self.rustc)?)
        } else {
            toolchain::llvm_profdata(&self.rustc).ok()
        };
        self.bolt_tools = bolt.then(|| toolchain::bolt_tools(&self.rustc));
        Ok(())
    }

    /// The user's rustflags for `triple` as cargo will pass them (`[target.'cfg(…)']`
    /// matched against rustc's cfg for that target).
    pub(crate) fn user_rustflags(&self, triple: &str) -> anyhow::Result<Vec<String>> {
        Ok(cargo::user_rustflags_here(triple, &target_cfg(triple))?)
    }
}

/// rustc's cfg for `triple` (`target_arch="x86_64"`, …), one line each.
pub(crate) fn target_cfg(triple: &str) -> Vec<String> {
    process::tool_stdout("rustc", ["--print", "cfg", "--target", triple])
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// The llvm-profdata of rustc's LLVM, for commands without a project (`profile merge`,
/// `hotspots`).
pub(crate) fn llvm_profdata() -> anyhow::Result<(Rustc, Tool)> {
    let rustc = toolchain::rustc()?;
    let tool = toolchain::llvm_profdata(&rustc)?;
    Ok((rustc, tool))
}

impl Plan {
    /// The plan of what the user said (`asked`: the global flags and a run's; `check` and
    /// `profile collect` give the subset they take, the rest default) and the spec it
    /// locates, under the `rules` of the layers above. Everything below reads the plan,
    /// never the flags again.
    pub(crate) fn resolve(asked: &Asked, rules: &Rules) -> anyhow::Result<Plan> {
        let (mut spec, project) = locate(&asked.selection, asked.spec.as_deref(), &asked.args)?;
        apply_overrides(&mut spec, asked)?;
        if asked.quick {
            quick(&mut spec, asked.budget.is_some());
        }
        spec.stages.thorough = asked.thorough;
        let mut plan = Plan::located(asked, spec, project, rules)?;
        match criterion::measure_by_estimates(&plan.project, &mut plan.spec) {
            Ok(Some(info)) => plan.ui.info(&info),
            Ok(None) => {}
            Err(warning) => plan.ui.warn(&warning),
        }
        let stages = &plan.spec.stages;
        let (pgo, bolt) = (
            changing(Changes::TrainingProfile),
            changing(Changes::CodeLayout),
        );
        plan.find_tools(stages.tries(pgo), stages.tries(bolt))?;
        if let Some(file) = &asked.pgo_profile {
            let llvm_profdata = plan.llvm_profdata.as_ref();
            let checked = given_profile(file, &plan.spec, llvm_profdata, &plan.rustc)?;
            plan.pgo_profile = Some(checked);
        }
        plan.resolve_target(&asked.selection, rules.check_stage)?;
        plan.budget = plan.spec.bench.budget.unwrap_or(rules.default_budget);
        plan.explain = asked.explain;
        plan.fresh = asked.fresh;
        plan.dry_run = asked.dry_run;
        plan.quick = asked.quick;
        Ok(plan)
    }

    /// The build target (named in every build), the user's rustflags for it, and cargo's
    /// runner for it; each tried stage's own keys checked against it (`check_stage`).
    fn resolve_target(
        &mut self,
        selection: &Selection,
        check_stage: CheckStage,
    ) -> anyhow::Result<()> {
        let target = build_target(selection)?;
        let triple =
            (target.as_ref().map(|t| t.triple.clone())).unwrap_or_else(|| self.rustc.host.clone());
        let spec = &self.spec;
        for &stage in &spec.stages.try_ {
            check_stage(self, stage, &triple)?;
        }
        let cfg = target_cfg(&triple);
        self.baseline.user_rustflags = cargo::user_rustflags_here(&triple, &cfg)?;
        let linker_set = cargo::linker_set_here(&triple, &cfg, &self.baseline.user_rustflags)?;
        library::resolve(&mut self.project, spec, &triple)?;
        self.twin_links =
            cargo::twin::possible(&triple, linker_set) && self.project.library.is_none();
        let from = target.as_ref().map_or("", |t| t.from.as_str());
        self.runner = runner::for_ladder(spec, &self.rustc.host, &triple, from, &cfg)?;
        self.baseline.target = target.map(|t| t.triple);
        Ok(())
    }
}

/// The target every build of the plan names explicitly: `--target`, else cargo's own
/// (`--config build.target`, `CARGO_BUILD_TARGET`, `build.target` of the nearest config
/// file); `None`: the host, as a plain `cargo build` builds.
fn build_target(selection: &Selection) -> anyhow::Result<Option<cargo::BuildTarget>> {
    Ok(match &selection.target {
        Some(t) => Some(cargo::BuildTarget {
            triple: t.clone(),
            from: format!("--target {t}"),
        }),
        None => cargo::build_target_here()?,
    })
}

/// `--pgo-profile FILE`, checked before anything is built: a merged profile this
/// toolchain's llvm-profdata reads, for a run that tries the pgo stage. Its absolute path.
fn given_profile(
    file: &Path,
    spec: &Spec,
    profdata: Option<&Tool>,
    rustc: &Rustc,
) -> anyhow::Result<PathBuf> {
    let flag = format!("--pgo-profile {}", file.display());
    if !spec
        .stages
        .try_
        .contains(&changing(Changes::TrainingProfile))
    {
        anyhow::bail!("{flag}: this run does not try the pgo stage (--stages, [stages] try), so no build would use the profile\n  fix: add pgo to the stages, e.g. --stages pgo");
    }
    let path = crate::util::absolute(file);
    let raw = toolchain::profdata::is_raw(&path).map_err(|e| {
        anyhow::anyhow!("{flag}: cannot read it: {e}\n  fix: give the path of a merged profile (.profdata, from `cargo optimize profile merge`)")
    })?;
    if raw {
        anyhow::bail!("{flag}: this is a raw profile (.profraw, as a collector writes it), and rustc takes only merged ones\n  fix: cargo optimize profile merge -o merged.profdata {}, then --pgo-profile merged.profdata", file.display());
    }
    let tool = profdata.ok_or_else(|| anyhow::anyhow!("{flag}: no llvm-profdata to read it"))?;
    match toolchain::profdata::readable(&tool.path, &path) {
        Ok(()) => Ok(path),
        Err(toolchain::profdata::CountsError::Failed { stderr, tool, .. })
            if toolchain::profdata::version_mismatch(&stderr) =>
        {
            anyhow::bail!(
                "{flag}: the profile is in another LLVM version's format than this toolchain's ({}, LLVM {}); {tool} said:\n    {stderr}\n  fix: build with the toolchain whose LLVM wrote it, or rebuild the collector with this one (`cargo optimize profile collect`), collect again and merge with `cargo optimize profile merge`",
                rustc.version,
                rustc.llvm_version
            )
        }
        Err(e) => Err(anyhow::anyhow!("{flag}: {e}")),
    }
}

/// A quick run's default budget (`--quick` without `--budget`).
pub(crate) const QUICK_BUDGET: std::time::Duration = std::time::Duration::from_secs(120);

/// `--quick`: the pgo stage only, asked for by name; the first eval workload of each name
/// (a matrix's other combinations still train, but are not timed); a budget of
/// [`QUICK_BUDGET`] unless `--budget` gave one.
fn quick(spec: &mut Spec, budget_given: bool) {
    spec.stages.try_ = vec![changing(Changes::TrainingProfile)];
    spec.stages.try_explicit = true;
    if !budget_given {
        spec.bench.budget = Some(QUICK_BUDGET);
    }
    let mut timed: Vec<String> = Vec::new();
    for w in spec.workloads.iter_mut().filter(|w| w.eval) {
        let name = base_name(&w.name).to_string();
        if timed.contains(&name) {
            w.eval = false;
        } else {
            timed.push(name);
        }
    }
    spec.workloads.retain(|w| w.eval || w.train);
}

/// A matrix workload's name without its combination: `parse` of `parse[size=10]`.
fn base_name(name: &str) -> &str {
    name.split_once('[').map_or(name, |(base, _)| base)
}

/// `--stages`, `--max-time` and `--budget` replace the spec's `[stages] try`, `[bench]
/// max-time` and `[bench] budget`.
fn apply_overrides(spec: &mut Spec, args: &Asked) -> anyhow::Result<()> {
    if let Some(list) = &args.stages {
        let names: Vec<&str> = list
            .iter()
            .map(|s| s.trim())
            .filter(|s| !s.is_empty())
            .collect();
        spec.stages.try_explicit = true;
        spec.stages.try_ = spec::parse_try(&names).map_err(|e| {
            let item = names
                .get(e.index)
                .map(|n| format!(" (`{n}`)"))
                .unwrap_or_default();
            anyhow::anyhow!(
                "--stages {}{item}: {}\n  fix: {}",
                list.join(","),
                e.message,
                e.fix
            )
        })?;
    }
    if let Some(t) = &args.max_time {
        spec.bench.max_time = crate::spec::bounds::parse_flag_duration(t, "--max-time")?;
    }
    if let Some(t) = &args.budget {
        spec.bench.budget = Some(crate::spec::bounds::parse_flag_duration(t, "--budget")?);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quick_run_tries_pgo_on_one_eval_workload_per_name_within_a_short_budget() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(spec::SPEC_FILE);
        std::fs::write(
            &path,
            "[stages]\ntry = [\"cpu\"]\n[bench]\nbudget = \"10m\"\n\
             [[workload]]\nname = \"parse\"\nargs = [\"{n}\"]\nmatrix = { n = [\"1\", \"2\"] }\n\
             [[workload]]\nname = \"other\"\nargs = [\"x\"]\nuse = [\"eval\"]\n\
             [[workload]]\nname = \"learn\"\nargs = [\"y\"]\nuse = [\"train\"]\n",
        )
        .unwrap();
        let mut s = spec::load(&path).unwrap();
        quick(&mut s, false);
        assert_eq!(s.stages.try_, [crate::stages::StageName::Pgo]);
        assert!(s.stages.try_explicit);
        assert_eq!(s.bench.budget, Some(QUICK_BUDGET));
        let timed: Vec<&str> = (s.workloads.iter().filter(|w| w.eval))
            .map(|w| w.name.as_str())
            .collect();
        assert_eq!(timed.len(), 2, "{timed:?}");
        assert!(
            timed[0].starts_with("parse[") && timed[1] == "other",
            "{timed:?}"
        );
        // Every combination still trains.
        assert_eq!(s.workloads.iter().filter(|w| w.train).count(), 3);
        // --budget wins over the quick default.
        let mut s = spec::load(&path).unwrap();
        s.bench.budget = Some(std::time::Duration::from_secs(30));
        quick(&mut s, true);
        assert_eq!(s.bench.budget, Some(std::time::Duration::from_secs(30)));
        assert_eq!(base_name("parse[n=1]"), "parse");
        assert_eq!(base_name("plain"), "plain");
    }
}
