//! Command-line types (clap) and their resolution into plain values: no behaviour lives
//! here. `args` holds each subcommand's options, `opts` the option groups they share
//! under cargo's headings, `help` the `--help` texts (examples, exit codes), `parse` the
//! parse itself: options given before the subcommand handed to it, deprecated spellings
//! turned into their replacements with a warning. The commands (`commands/`) and the run
//! plan (`pipeline::plan`) read the result; lower layers take their own types.

mod args;
mod help;
mod opts;
mod parse;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

pub(crate) use args::*;
pub(crate) use opts::*;
pub(crate) use parse::{command, parse_from_env, Parsed};

/// Make a Rust binary faster, measured and verified.
///
/// Baseline, release-profile tuning, CPU level, PGO and BOLT, each checked for identical
/// outputs and benchmarked with confidence intervals; only what measurably helps is kept.
/// Without a subcommand, `cargo optimize` is `cargo optimize run`.
#[derive(Debug, Parser)]
#[command(name = "cargo-optimize", bin_name = "cargo optimize", version)]
#[command(after_long_help = help::RUN)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Action>,

    /// Options of `run` (the default command).
    #[command(flatten)]
    pub run: RunArgs,

    #[command(flatten)]
    pub global: GlobalOpts,
}

#[derive(Debug, Subcommand)]
pub enum Action {
    /// Run the pipeline (the default): baseline → stages → verify → bench → report.
    #[command(after_long_help = help::RUN)]
    Run(RunArgs),
    /// Write a commented optimize.toml for the package's binary.
    ///
    /// Never overwrites an existing file.
    #[command(after_long_help = help::INIT)]
    Init(InitArgs),
    /// Show the toolchain, LLVM tools, CPU and perf facts, and how to fix what is missing.
    #[command(after_long_help = help::DOCTOR)]
    Doctor(DoctorArgs),
    /// Compare two binaries or two commands, interleaved, with a confidence interval.
    ///
    /// Two binaries run over optimize.toml's eval workloads; two commands (`--cmd` twice)
    /// need no spec. Each workload gets a ratio B/A with its interval and a verdict.
    #[command(after_long_help = help::BENCH)]
    Bench(BenchArgs),
    /// Write a run's winning settings into the project.
    ///
    /// A named cargo profile in Cargo.toml, the PGO profile under pgo/, and (with --cpu) the
    /// target-cpu in .cargo/config.toml. Shows a diff first; keeps a backup of every file
    /// it changes (<file>.bak, or .bak.1, .bak.2, … when that name is taken); all or nothing.
    #[command(after_long_help = help::APPLY)]
    Apply(ApplyArgs),
    /// Render a past run: the terminal ladder, JSON, Markdown or an HTML page.
    ///
    /// Reads the run's report.json; Markdown suits a PR or $GITHUB_STEP_SUMMARY, the HTML
    /// page is self-contained with charts.
    #[command(after_long_help = help::REPORT)]
    Report(ReportArgs),
    /// The hottest functions of a run's merged PGO profile.
    ///
    /// Each function's share of all counts, the cumulative share, crate, and calls where
    /// the profile counts them; then the counts by crate and by module. With --flamegraph,
    /// the run's shipped binary sampled by `perf record -e cpu-clock -g` on a workload and
    /// drawn as <run folder>/hotspots/<workload>.svg.
    #[command(after_long_help = help::HOTSPOTS)]
    Hotspots(HotspotsArgs),
    /// A performance gate for CI: the working tree against a git revision or a baseline.
    ///
    /// The revision is built in a temporary worktree; old and new run interleaved on the
    /// eval workloads after their outputs are verified; fails on a regression beyond
    /// [check] max-regression, a changed output, a workload's budget or max-binary-size.
    #[command(after_long_help = help::CHECK)]
    Check(CheckArgs),
    /// Write a CI workflow that gates pull requests and builds releases.
    ///
    /// .github/workflows/optimize.yml runs `check --against origin/main` on pull requests
    /// and builds releases with the committed PGO profile on tags; shown as a diff first,
    /// never overwriting without --force.
    #[command(after_long_help = help::CI)]
    Ci(CiArgs),
    /// Build the release matrix: targets × flavors × CPU levels, packaged with checksums.
    ///
    /// Each artifact is PGO-trained on its own build (BOLTed when asked), verified against
    /// its flavor's portable baseline, packaged into dist/ with SHA256SUMS and
    /// manifest.json; the jobs run in parallel (-j) and share the cores through cargo's
    /// jobserver. With --emit-ci github, a workflow that builds each cell on a runner of
    /// its own target; with --gather, those cells' folders merged into one release.
    #[command(after_long_help = help::RELEASE)]
    Release(ReleaseArgs),
    /// Profiles from production: build an instrumented binary, merge what it writes.
    ///
    /// Deploy the instrumented binary (`collect`) on your hosts, merge the profiles they
    /// write (`merge`), then build with the result:
    /// `cargo optimize --stages pgo --pgo-profile merged.profdata`.
    #[command(after_long_help = help::PROFILE)]
    Profile(ProfileArgs),
    /// Remove target/optimize (refused while a run is using it).
    #[command(after_long_help = help::CLEAN)]
    Clean(CleanArgs),
    /// What later runs reuse: how much there is, trim it, or clear it.
    ///
    /// Builds, binaries, merged profiles, trainings, eval coverage, output checks, verdicts.
    #[command(after_long_help = help::CACHE)]
    Cache(CacheArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) to stdout.
    #[command(after_long_help = help::COMPLETIONS)]
    Completions(CompletionsArgs),
    /// Print the man page (roff) to stdout.
    #[command(hide = true)]
    Man,
}

/// What every command reads once the command line is parsed: the global options and the
/// package, feature and compilation options, wherever they were given.
#[derive(Debug, Clone, Default)]
pub(crate) struct GlobalArgs {
    pub selection: Selection,
    /// `--spec`: the spec file (default: optimize.toml next to the package's Cargo.toml).
    pub spec: Option<PathBuf>,
    pub verbose: u8,
    pub quiet: bool,
    pub color: Color,
}

/// Cargo's selection and build flags as given (`-p`, `-F`, `--profile`, `-j`, `--locked`, …):
/// the cargo layer's own type, filled in by the parser.
pub(crate) use crate::cargo::Selection;

impl RunArgs {
    /// What a run was asked, in the plan's terms (`context::plan::Asked`), with the global
    /// options `g`: the command line's side of `Plan::resolve`.
    pub(crate) fn asked(&self, g: &GlobalArgs) -> crate::context::plan::Asked {
        let mut ui = crate::ui::Ui::new(g.quiet, g.verbose, g.color.forced());
        ui.events = self.message_format == MessageFormat::Json;
        crate::context::plan::Asked {
            selection: g.selection.clone(),
            spec: g.spec.clone(),
            ui,
            args: self.args.clone(),
            stages: self.stages.clone(),
            max_time: self.max_time.clone(),
            budget: self.budget.clone(),
            pgo_profile: self.pgo_profile.clone(),
            quick: self.quick,
            thorough: self.thorough,
            explain: self.explain,
            fresh: self.fresh,
            dry_run: self.dry_run,
        }
    }
}
