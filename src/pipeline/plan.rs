//! Everything a run needs, resolved once from the command line, the spec and the toolchain
//! before anything is built (ripgrep's lowargs → hiargs split, on a small scale): later
//! code reads the [`Plan`] and never goes back to flags, files or the environment.
//!
//! Every command that builds gets its `Plan` here: `run` and `profile collect` from a
//! [`Request`] ([`Plan::resolve`], [`Plan::for_request`]; `check` asks for no stage),
//! `release` through the same [`Resolver`] with the tools its artifacts need and its first
//! group's baseline. The [`Resolver`] is the one place rustc, llvm-profdata and llvm-bolt
//! are found and the user's rustflags (cargo's config and environment) are read.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::cargo::{self, BuildSettings, CargoError, Project, Workspace};
use crate::cli::{GlobalArgs, RunArgs};
use crate::process;
use crate::spec::{self, Spec, StageName};
use crate::toolchain::{self, BoltTools, Rustc, Tool, ToolError};
use crate::ui::Ui;

/// `target/optimize` of the selection (`--target-dir`, else cargo's target directory), for
/// the commands that read what runs left there without a spec or a binary of their own
/// (`apply`, `clean`, `cache`).
pub fn optimize_dir(g: &GlobalArgs) -> anyhow::Result<PathBuf> {
    let target = match &g.selection.target_dir {
        Some(d) => crate::util::absolute(d),
        None => Workspace::load(&g.selection)?.target_dir(&g.selection),
    };
    Ok(target.join("optimize"))
}

/// The spec and the project it designates.
pub struct Located {
    pub spec: Spec,
    pub project: Project,
}

/// Find the spec (`--spec`, else optimize.toml next to the package's Cargo.toml), read it,
/// and resolve the package and binary (flags first, then the spec).
pub fn locate(g: &GlobalArgs) -> anyhow::Result<Located> {
    locate_with_args(g, &[])
}

/// [`locate`] for `cargo optimize -- ARGS`: with `args`, the spec's workloads are replaced by
/// the one workload `ARGS` (run in the current directory), and no spec file is needed.
pub fn locate_with_args(g: &GlobalArgs, args: &[String]) -> anyhow::Result<Located> {
    let workspace = Workspace::load(&g.selection)?;
    let spec_path = match &g.spec {
        Some(p) => p.clone(),
        None => workspace
            .spec_dir(g.selection.package.as_deref())?
            .join(spec::SPEC_FILE),
    };
    let cwd = std::env::current_dir()?;
    let spec = match (spec::load(&spec_path), args.is_empty()) {
        (Ok(spec), true) => spec,
        (Ok(spec), false) => spec::with_args(spec, args, &cwd)?,
        (Err(spec::SpecError::Missing { .. }), false) => spec::from_args(args, &cwd)?,
        (Err(e), _) => return Err(e.into()),
    };
    let sel = g.selection.clone();
    let project = workspace
        .project_for(
            &sel,
            spec.package.as_deref(),
            spec.bin.as_deref(),
            spec.harness.as_ref(),
        )
        .map_err(|e| {
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
    Ok(Located { spec, project })
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

/// The spec for the selected package (used by `bench`).
/// With `--spec` no cargo project is needed: comparing two binaries needs only the workloads.
pub fn load_spec(g: &GlobalArgs) -> anyhow::Result<Spec> {
    match &g.spec {
        Some(path) => Ok(spec::load(path)?),
        None => {
            // Measured as a run measures it: a criterion harness by its own estimates.
            let Located { mut spec, project } = locate(g)?;
            if let Err(warning) = super::criterion::measure_by_estimates(&project, &mut spec) {
                eprintln!("warning: {warning}");
            }
            Ok(spec)
        }
    }
}

/// One run, resolved.
pub struct Plan {
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
    /// `--quick`: pgo only, one eval workload per name, a short budget (see [`quick`]).
    pub quick: bool,
    pub ui: Ui,
    /// cargo's runner for `--target`, which the user said is real hardware
    /// (`[bench] runner-is-native`; `super::runner::for_ladder`).
    pub runner: Option<crate::cargo::runner::Runner>,
}

/// What a command asks of the plan beyond the global flags: `run`'s flags
/// (`From<&RunArgs>`), `check`'s subset, nothing for `profile collect`.
#[derive(Default)]
pub struct Request<'a> {
    /// `cargo optimize -- ARGS`: the one workload.
    pub args: &'a [String],
    /// `--stages`: replaces `[stages] try`.
    pub stages: Option<&'a [String]>,
    pub max_time: Option<&'a str>,
    pub budget: Option<&'a str>,
    pub pgo_profile: Option<&'a Path>,
    pub explain: bool,
    pub fresh: bool,
    pub dry_run: bool,
    /// `--message-format json`: events on stdout.
    pub events: bool,
    /// `--quick`: pgo only, one eval workload per name, a short budget.
    pub quick: bool,
    /// `--thorough`: the profile stage searches its whole space.
    pub thorough: bool,
}

impl<'a> From<&'a RunArgs> for Request<'a> {
    fn from(a: &'a RunArgs) -> Self {
        Request {
            args: &a.args,
            stages: a.stages.as_deref(),
            max_time: a.max_time.as_deref(),
            budget: a.budget.as_deref(),
            pgo_profile: a.pgo_profile.as_deref(),
            explain: a.explain,
            fresh: a.fresh,
            dry_run: a.dry_run,
            events: a.message_format == crate::cli::MessageFormat::Json,
            quick: a.quick,
            thorough: a.thorough,
        }
    }
}

/// A plan on its way: the spec and project located, rustc found; then the LLVM tools the
/// command needs ([`Resolver::find_tools`]) and the baseline's settings
/// ([`Resolver::user_rustflags`]), and [`Resolver::finish`].
pub struct Resolver {
    pub spec: Spec,
    pub project: Project,
    pub rustc: Rustc,
    pub ui: Ui,
    llvm_profdata: Option<Tool>,
    bolt_tools: Option<Result<BoltTools, ToolError>>,
}

impl Resolver {
    /// Find rustc for the located project.
    pub fn new(g: &GlobalArgs, located: Located) -> anyhow::Result<Resolver> {
        Self::with_ui(Ui::new(g.quiet, g.verbose, g.color.forced()), located)
    }

    fn with_ui(ui: Ui, Located { spec, project }: Located) -> anyhow::Result<Resolver> {
        Ok(Resolver {
            rustc: toolchain::rustc()?,
            spec,
            project,
            ui,
            llvm_profdata: None,
            bolt_tools: None,
        })
    }

    /// `target/optimize`.
    pub fn optimize_dir(&self) -> PathBuf {
        self.project.target_dir.join("optimize")
    }

    /// llvm-profdata, required when `pgo` (otherwise only read for a stale profile's size,
    /// so looked for without failing), and llvm-bolt's tools when `bolt`.
    pub fn find_tools(&mut self, pgo: bool, bolt: bool) -> anyhow::Result<()> {
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
    pub fn user_rustflags(&self, triple: &str) -> anyhow::Result<Vec<String>> {
        Ok(cargo::user_rustflags_here(triple, &target_cfg(triple))?)
    }

    /// The plan, with `baseline` as its baseline's settings; the options a command chooses
    /// (`explain`, `fresh`, `pgo_profile`, `budget`, `dry_run`) off or default, for it to
    /// set (`Plan { fresh, ..resolver.finish(baseline) }`).
    pub fn finish(self, baseline: BuildSettings) -> Plan {
        Plan {
            optimize_dir: self.optimize_dir(),
            project: self.project,
            spec: self.spec,
            rustc: self.rustc,
            llvm_profdata: self.llvm_profdata,
            bolt_tools: self.bolt_tools,
            baseline,
            explain: false,
            fresh: false,
            pgo_profile: None,
            budget: super::budget::DEFAULT,
            dry_run: false,
            ui: self.ui,
            runner: None,
            quick: false,
        }
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
pub fn llvm_profdata() -> anyhow::Result<(Rustc, Tool)> {
    let rustc = toolchain::rustc()?;
    let tool = toolchain::llvm_profdata(&rustc)?;
    Ok((rustc, tool))
}

impl Plan {
    /// `cargo optimize [run]`'s plan.
    pub fn resolve(g: &GlobalArgs, args: &RunArgs) -> anyhow::Result<Plan> {
        Self::for_request(g, &Request::from(args))
    }

    pub fn for_request(g: &GlobalArgs, req: &Request) -> anyhow::Result<Plan> {
        let mut ui = Ui::new(g.quiet, g.verbose, g.color.forced());
        ui.events = req.events;
        let mut located = locate_with_args(g, req.args)?;
        apply_overrides(&mut located.spec, req)?;
        if req.quick {
            quick(&mut located.spec, req.budget.is_some());
        }
        located.spec.stages.thorough = req.thorough;
        let mut r = Resolver::with_ui(ui, located)?;
        match super::criterion::measure_by_estimates(&r.project, &mut r.spec) {
            Ok(Some(info)) => r.ui.info(&info),
            Ok(None) => {}
            Err(warning) => r.ui.warn(&warning),
        }
        let stages = &r.spec.stages.try_;
        let (pgo, bolt) = (
            stages.contains(&StageName::Pgo),
            stages.contains(&StageName::Bolt),
        );
        r.find_tools(pgo, bolt)?;
        let pgo_profile = match req.pgo_profile {
            Some(file) => Some(given_profile(
                file,
                &r.spec,
                r.llvm_profdata.as_ref(),
                &r.rustc,
            )?),
            None => None,
        };
        let target = build_target(g)?;
        let triple =
            (target.as_ref().map(|t| t.triple.clone())).unwrap_or_else(|| r.rustc.host.clone());
        let spec = &r.spec;
        if let (true, Some(names)) = (spec.stages.try_.contains(&StageName::Cpu), &spec.stages.cpu)
        {
            if let Some((i, why)) = crate::stage::cpu::unknown_name(&triple, names) {
                let line = spec.stages.cpu_lines.get(i).copied().unwrap_or(0);
                anyhow::bail!("{}:{line}: [stages] cpu: {why}", spec.path.display());
            }
        }
        let cfg = target_cfg(&triple);
        let user_rustflags = cargo::user_rustflags_here(&triple, &cfg)?;
        let from = target.as_ref().map_or("", |t| t.from.as_str());
        let runner = super::runner::for_ladder(spec, &r.rustc.host, &triple, from, &cfg)?;
        check_fp_flags(&r.spec, &r.rustc, &r.optimize_dir())?;
        let baseline = BuildSettings {
            profile: g.selection.profile.clone(),
            profile_overrides: BTreeMap::new(),
            user_rustflags,
            rustflags: Vec::new(),
            target: target.map(|t| t.triple),
            features: r.project.features.clone(),
            allocator: None,
            c: None,
        };
        let budget = spec.bench.budget.unwrap_or(super::budget::DEFAULT);
        Ok(Plan {
            explain: req.explain,
            fresh: req.fresh,
            pgo_profile,
            budget,
            dry_run: req.dry_run,
            runner,
            quick: req.quick,
            ..r.finish(baseline)
        })
    }
}

/// The target every build of the plan names explicitly: `--target`, else cargo's own
/// (`--config build.target`, `CARGO_BUILD_TARGET`, `build.target` of the nearest config
/// file); `None`: the host, as a plain `cargo build` builds.
fn build_target(g: &GlobalArgs) -> anyhow::Result<Option<cargo::BuildTarget>> {
    Ok(match &g.selection.target {
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
    if !spec.stages.try_.contains(&StageName::Pgo) {
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

/// `[stages] fp`, when the fp stage is tried: each flag one this rustc's LLVM accepts
/// (`toolchain::llvm_args`), else exit 2 naming the spec's line.
fn check_fp_flags(spec: &Spec, rustc: &Rustc, optimize_dir: &Path) -> anyhow::Result<()> {
    let (true, Some(flags)) = (spec.stages.tries(StageName::Fp), &spec.stages.fp) else {
        return Ok(());
    };
    let Ok(options) = toolchain::llvm_args::llvm_options(rustc, optimize_dir) else {
        return Ok(()); // the stage's rows say so
    };
    for (i, flag) in flags.iter().enumerate() {
        if let Err(why) = options.accepts(flag) {
            let line = spec.stages.fp_lines.get(i).copied().unwrap_or(0);
            anyhow::bail!(
                "{}:{line}: [stages] fp: \"{flag}\": {why}\n  fix: list options from `rustc -Cllvm-args=--help-hidden`, e.g. {}",
                spec.path.display(),
                crate::stage::fp::DEFAULT_FLAGS.join(", ")
            );
        }
    }
    Ok(())
}

/// A quick run's default budget (`--quick` without `--budget`).
pub const QUICK_BUDGET: std::time::Duration = std::time::Duration::from_secs(120);

/// `--quick`: the pgo stage only, asked for by name; the first eval workload of each name
/// (a matrix's other combinations still train, but are not timed); a budget of
/// [`QUICK_BUDGET`] unless `--budget` gave one.
fn quick(spec: &mut Spec, budget_given: bool) {
    spec.stages.try_ = vec![StageName::Pgo];
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
fn apply_overrides(spec: &mut Spec, args: &Request) -> anyhow::Result<()> {
    if let Some(list) = args.stages {
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
    if let Some(t) = args.max_time {
        spec.bench.max_time = crate::spec::bounds::parse_flag_duration(t, "--max-time")?;
    }
    if let Some(t) = args.budget {
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
        assert_eq!(s.stages.try_, [StageName::Pgo]);
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
