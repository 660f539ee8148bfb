//! Each subcommand's own options (clap types only); the groups they share are in `opts`.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

use super::opts::{
    BenchFormat, BuildOpts, MessageFormat, PackageOpts, RunLookupOpts, SpecOpt, TermJson,
};

/// The output formats of `report`, `hotspots` and `check` (one per family, in `render`).
pub(crate) use crate::render::{CheckFormat, HotspotsFormat, ReportFormat};

/// Make a Rust binary faster, measured and verified: baseline, release-profile tuning,
/// CPU level, PGO and BOLT, each checked for identical outputs and benchmarked with
/// confidence intervals; only what measurably helps is kept.
#[derive(Debug, Clone, Args)]
pub struct ProfileArgs {
    #[command(subcommand)]
    pub action: ProfileAction,
}

#[derive(Debug, Clone, Subcommand)]
pub enum ProfileAction {
    /// Build the instrumented binary to deploy: the PGO stage's instrumented build of the
    /// project's settings (profile, features, target, your rustflags), writing its profile
    /// into DIR/default_%m.profraw (every process of the binary merges into that one file as
    /// it exits). Prints where it writes and the settings a profile from it is valid for.
    Collect(CollectArgs),
    /// Merge the profiles your hosts wrote (.profraw) or merged before (.profdata) with
    /// the llvm-profdata of rustc's LLVM; a file it cannot read is dropped and named, one
    /// from another LLVM version refuses the merge (exit 2). Prints the merged profile's
    /// functions and its 5 hottest.
    Merge(MergeArgs),
}

#[derive(Debug, Clone, Args)]
pub struct CollectArgs {
    #[command(flatten)]
    pub build: BuildOpts,
    /// Where to copy the instrumented binary (default:
    /// target/optimize/collect/<bin>-instrumented).
    #[arg(short, long, value_name = "PATH")]
    pub output: Option<PathBuf>,
    /// The folder the deployed binary writes its profile into (default: a private folder of
    /// yours, $XDG_STATE_HOME/cargo-optimize/<bin>-pgo, else ~/.local/state/cargo-optimize/<bin>-pgo).
    /// Absolute: it is compiled into the binary. LLVM_PROFILE_FILE overrides it at run time.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct MergeArgs {
    /// The profiles: .profraw files from your hosts, .profdata files merged before, or
    /// folders (every .profraw and .profdata file in them).
    #[arg(value_name = "INPUTS")]
    pub inputs: Vec<PathBuf>,
    /// The merged profile to write (written whole, only when the merge succeeds).
    #[arg(short, long, value_name = "OUT")]
    pub output: PathBuf,
    /// Count FILE's profile N times (an integer ≥ 1; other inputs count once), e.g. the
    /// hosts whose traffic matters most. FILE (or a folder) may also be among INPUTS.
    #[arg(long = "weight", value_name = "FILE=N")]
    pub weights: Vec<String>,
    /// What to print about the merge: lines for a person (term) or JSON.
    #[arg(long, value_enum, default_value_t = TermJson::Term)]
    pub format: TermJson,
}

#[derive(Debug, Clone, Args)]
pub struct CacheArgs {
    /// Directory for all generated artifacts (default: cargo's target directory).
    #[arg(long, global = true, value_name = "DIRECTORY", help_heading = super::opts::COMPILATION)]
    pub target_dir: Option<PathBuf>,
    #[command(subcommand)]
    pub action: CacheAction,
}

#[derive(Debug, Clone, Args)]
pub struct CacheStatsArgs {
    /// What to print: a table (term) or JSON.
    #[arg(long, value_enum, default_value_t = TermJson::Term)]
    pub format: TermJson,
    /// Write the result to FILE (atomically) instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Clone, Subcommand)]
pub enum CacheAction {
    /// Entries and sizes per kind.
    Stats(CacheStatsArgs),
    /// Remove the least recently used entries until the cache fits in --max-size.
    Gc {
        /// The size to trim to (e.g. 500M, 5G).
        #[arg(long, value_name = "SIZE", default_value = "10G")]
        max_size: String,
    },
    /// Remove every cached entry (runs and their reports stay).
    Clear,
}

#[derive(Debug, Clone, Args, Default)]
pub struct RunArgs {
    /// Stages to try, overriding optimize.toml's `[stages] try` (e.g. pgo,bolt; `none`).
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "STAGES",
        long_help = crate::stages::flag_help()
    )]
    pub stages: Option<Vec<String>>,
    /// Upper bound of benchmarking time per workload per comparison (e.g. 20s).
    ///
    /// The comparison that decides what ships still runs its first 4 pairs when the
    /// budget pays for them.
    #[arg(long, value_name = "DURATION")]
    pub max_time: Option<String>,
    /// The wall time the whole run may take, builds included (default 15m).
    ///
    /// Overrides [bench] budget. Comparisons share what is left, the final one first; a
    /// stage that does not fit is not tried, and the output says how to try it.
    #[arg(long, value_name = "DURATION")]
    pub budget: Option<String>,
    /// Print the plan and what an earlier run of it cost; build nothing.
    ///
    /// The plan: stages, workloads, budget. Nothing is built or run.
    #[arg(long)]
    pub dry_run: bool,
    /// Also measure each profile setting alone and report what each is worth.
    ///
    /// One build and measurement per setting, against the baseline.
    #[arg(long)]
    pub explain: bool,
    /// Reuse nothing kept from earlier runs: build, train, verify and measure again.
    ///
    /// Builds, profiles, checks and verdicts are otherwise reused only while everything that
    /// decides them is unchanged.
    #[arg(long)]
    pub fresh: bool,
    /// Build the pgo candidate with this merged profile instead of training here.
    ///
    /// Profiles collected in production (`profile collect`) and merged (`profile merge`);
    /// also used for `pgo (portable)`. It is verified and measured like any candidate; the
    /// report says where the profile came from and how many of its functions changed since.
    #[arg(long, value_name = "FILE")]
    pub pgo_profile: Option<PathBuf>,
    /// A quick run, for iteration, not shipping: pgo only, one eval workload per name, a
    /// budget of 2m (unless --budget), everything cached reused; `apply` refuses its winner
    /// unless given --allow-quick.
    #[arg(long, conflicts_with_all = ["stages", "fresh"])]
    pub quick: bool,
    /// Let the profile stage search its whole space (LTO fat/thin × codegen-units 1/16 ×
    /// opt-level 3/2: 8 builds) instead of `max`, and three more only when `max` is kept
    /// and measured to within ±5 %; and build every allocator of the alloc stage, even one
    /// whose preview (its shared library preloaded) showed no gain.
    #[arg(long, conflicts_with = "quick")]
    pub thorough: bool,
    /// How to report progress: human, or json (one JSON object per line on stdout).
    ///
    /// `json`: an event per line for each stage started, build, verification, look's
    /// estimate, verdict, and the ship; the schema is in docs/src/message-format.md. Human
    /// progress lines stay on stderr; the ladder is not printed.
    #[arg(long, value_enum, value_name = "FMT", default_value_t = MessageFormat::Human)]
    pub message_format: MessageFormat,
    #[command(flatten)]
    pub build: BuildOpts,
    /// The binary's arguments (after `--`) as the one workload.
    ///
    /// Run the binary with these arguments as the one train + eval workload: no
    /// optimize.toml needed; with one, these replace its workloads.
    #[arg(last = true, value_name = "ARGS")]
    pub args: Vec<String>,
}

#[derive(Debug, Clone, Args)]
pub struct InitArgs {
    #[command(flatten)]
    pub package: PackageOpts,
    #[command(flatten)]
    pub spec: SpecOpt,
    /// The binary's arguments for the spec's workloads (after `--`), instead of the
    /// `--help` placeholders.
    #[arg(last = true, value_name = "ARGS")]
    pub args: Vec<String>,
}

#[derive(Debug, Clone, Args)]
pub struct ApplyArgs {
    #[command(flatten)]
    pub lookup: RunLookupOpts,
    /// The run: an id under target/optimize/runs, a run folder or a report.json
    /// (default: the latest run).
    #[arg(value_name = "RUN")]
    pub run: Option<String>,
    /// The cargo profile to write (it inherits the profile the run was based on).
    #[arg(long, value_name = "NAME", default_value = "optimized")]
    pub profile_name: String,
    /// Also write the winner's -Ctarget-cpu into .cargo/config.toml (binaries then need
    /// that CPU's features).
    #[arg(long)]
    pub cpu: bool,
    /// Show what would change; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Apply the winner of a quick run (`run --quick`) too.
    #[arg(long)]
    pub allow_quick: bool,
}

#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    #[command(flatten)]
    pub lookup: RunLookupOpts,
    /// The run: an id under target/optimize/runs, a run folder or a report.json
    /// (default: the latest run).
    #[arg(value_name = "RUN")]
    pub run: Option<String>,
    /// What to render.
    #[arg(long, value_enum, default_value_t = ReportFormat::Term)]
    pub format: ReportFormat,
    /// Write the result to FILE (atomically) instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Open the HTML page with xdg-open (implies --format html; written to -o FILE, or to
    /// report.html in the run folder).
    #[arg(long)]
    pub open: bool,
    /// Markdown: include the hottest functions of the PGO profile (left out by default).
    #[arg(long)]
    pub hotspots: bool,
}

#[derive(Debug, Clone, Args)]
pub struct HotspotsArgs {
    #[command(flatten)]
    pub lookup: RunLookupOpts,
    /// The run: an id under target/optimize/runs, a run folder or a report.json
    /// (default: the latest run). It needs a PGO profile (`cargo optimize --stages pgo`).
    #[arg(value_name = "RUN")]
    pub run: Option<String>,
    /// How many functions to list.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 20,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..)
    )]
    pub top: usize,
    /// What to print.
    #[arg(long, value_enum, default_value_t = HotspotsFormat::Term)]
    pub format: HotspotsFormat,
    /// Also sample the run's shipped binary on WORKLOAD (default: the first eval workload
    /// of optimize.toml) with `perf record -e cpu-clock -g` and draw a flamegraph SVG into
    /// the run folder's hotspots/. Needs perf and kernel.perf_event_paranoid ≤ 2 (or root).
    #[arg(
        long,
        value_name = "WORKLOAD",
        num_args = 0..=1,
        require_equals = true
    )]
    pub flamegraph: Option<Option<String>>,
    /// Write the result to FILE (atomically) instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub build: BuildOpts,
    /// Compare with this git revision (a branch, tag, `HEAD~1`, `origin/main`, a commit),
    /// built in a temporary worktree with the same settings; kept by commit for later checks.
    #[arg(long, value_name = "REV", conflicts_with = "baseline")]
    pub against: Option<String>,
    /// Compare with a saved baseline: a NAME saved with --save-baseline, or a
    /// baseline.json FILE. Paired when its binary was kept, else its statistics only
    /// (weaker; the output says so).
    #[arg(long, value_name = "NAME|FILE")]
    pub baseline: Option<String>,
    /// Save the working tree's results (time, user+sys, peak RSS per workload, binary size)
    /// and its binary as target/optimize/baselines/NAME.
    #[arg(long, value_name = "NAME")]
    pub save_baseline: Option<String>,
    /// What to print: term, md, json, or github (annotations for a GitHub Actions log).
    #[arg(long, value_enum, default_value_t = CheckFormat::Term)]
    pub format: CheckFormat,
    /// Write the result to FILE (atomically) instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Only these workloads (comma separated; default: the eval workloads).
    #[arg(long, value_delimiter = ',')]
    pub workloads: Option<Vec<String>>,
    /// Upper bound of time per workload (e.g. 20s), overriding [bench] max-time.
    #[arg(long, value_name = "DURATION")]
    pub max_time: Option<String>,
    /// Measure again even when the same two binaries were compared before on this machine.
    #[arg(long)]
    pub fresh: bool,
    /// Time a workload whose output changed anyway (it is still reported, and still fails).
    #[arg(long)]
    pub allow_changed_output: bool,
}

#[derive(Debug, Clone, Args, Default)]
pub struct ReleaseArgs {
    #[command(flatten)]
    pub build: BuildOpts,
    /// Only these target triples (comma separated), instead of [release] targets (default:
    /// the host).
    #[arg(long, value_delimiter = ',', value_name = "TRIPLES")]
    pub targets: Option<Vec<String>>,
    /// Only these flavors of [release.flavors] (comma separated).
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    pub flavors: Option<Vec<String>>,
    /// CPU levels besides `portable` (comma separated, e.g. x86-64-v3), instead of
    /// [release] cpu (default: the level the last run chose, if any). `none`: portable only.
    #[arg(long, value_delimiter = ',', value_name = "LEVELS")]
    pub cpu: Option<Vec<String>>,
    /// Stages to apply: pgo, bolt (comma separated), or `none`, instead of [release]
    /// stages (default: what the last run kept).
    #[arg(long, value_delimiter = ',', value_name = "STAGES")]
    pub stages: Option<Vec<String>>,
    /// `-j`: jobs run at once (default: the number of CPUs). Compilation inside them shares
    /// that many CPU slots through cargo's jobserver.
    #[arg(skip)]
    pub jobs: Option<usize>,
    /// Print the job graph and what each artifact will be, build nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Where the artifacts go (default: [release] out-dir, else dist/ in the workspace).
    /// Replaced as a whole at the end, only if it holds an earlier release (or nothing).
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
    /// Reuse nothing earlier runs kept (builds, trainings, BOLT outputs).
    #[arg(long)]
    pub fresh: bool,
    /// Leave out the portable artifact: build only the --cpu levels (a CI cell that builds
    /// one level while another cell builds the portable one).
    #[arg(long)]
    pub no_portable: bool,
    /// Write a CI workflow (.github/workflows/release.yml at the repository root) that
    /// builds each cell of this matrix — target × flavor × CPU level — on a runner that
    /// can run its target (so its PGO profile is trained there), then gathers the cells
    /// into one release. Shown as a diff first; builds nothing; never replaces a different
    /// file without --force; with --dry-run, writes nothing.
    #[arg(long, value_enum, value_name = "CI", conflicts_with_all = ["jobs", "fresh", "out_dir", "no_portable"])]
    pub emit_ci: Option<CiKind>,
    /// With --emit-ci: the runner label for a target (repeatable), e.g.
    /// aarch64-unknown-linux-gnu=my-arm-runner. Known: x86_64-unknown-linux-gnu →
    /// ubuntu-latest, aarch64-unknown-linux-gnu → ubuntu-24.04-arm, aarch64-apple-darwin →
    /// macos-14, x86_64-apple-darwin → macos-15-intel, x86_64-pc-windows-msvc →
    /// windows-latest; another target is cross-built on ubuntu-latest without PGO.
    #[arg(long, value_name = "TRIPLE=LABEL", requires = "emit_ci")]
    pub runner: Vec<String>,
    /// With --emit-ci: replace an existing, different workflow file (a backup is kept).
    #[arg(long, requires = "emit_ci")]
    pub force: bool,
    /// Merge the output folders of several releases (the cells of a CI matrix, each with
    /// its manifest.json and SHA256SUMS) into --out-dir: every file checked against its
    /// folder's SHA256SUMS (a mismatch is an error naming the file), one SHA256SUMS, one
    /// manifest.json (the artifacts of all; the same crate and source revision required).
    /// Builds nothing.
    #[arg(
        long,
        value_name = "DIR",
        num_args = 1..,
        conflicts_with_all = ["targets", "flavors", "cpu", "stages", "jobs", "dry_run", "fresh", "no_portable", "emit_ci"]
    )]
    pub gather: Option<Vec<PathBuf>>,
}

/// The CI systems `release --emit-ci` writes a workflow for.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum CiKind {
    /// GitHub Actions.
    Github,
}

#[derive(Debug, Clone, Args)]
pub struct CiArgs {
    #[command(flatten)]
    pub package: PackageOpts,
    #[command(flatten)]
    pub spec: SpecOpt,
    /// The CI system to write the workflow for (GitHub Actions, the only one so far).
    #[arg(long, value_enum, value_name = "CI", default_value_t = CiKind::Github)]
    pub emit_ci: CiKind,
    /// Deprecated spelling of `--emit-ci github`.
    #[arg(long, hide = true)]
    pub github: bool,
    /// Replace an existing workflow file (a backup is kept).
    #[arg(long)]
    pub force: bool,
    /// Show what would be written; write nothing.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Clone, Args)]
pub struct DoctorArgs {
    /// Install what can be installed (rustup components; as root, Debian's bolt-N).
    #[arg(long)]
    pub fix: bool,
    /// What to print: the facts for a person (term) or as JSON.
    #[arg(long, value_enum, default_value_t = TermJson::Term)]
    pub format: TermJson,
    /// Same as `--format json`.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// Write the result to FILE (atomically) instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    #[command(flatten)]
    pub package: PackageOpts,
    #[command(flatten)]
    pub spec: SpecOpt,
    /// Binary A (the reference) and binary B, run over optimize.toml's eval workloads.
    #[arg(value_name = "BINARY", num_args = 0..=2)]
    pub binaries: Vec<PathBuf>,
    /// A command instead of a binary (give it twice: A then B). Split like a shell would,
    /// without running a shell.
    #[arg(long = "cmd", value_name = "COMMAND", conflicts_with = "binaries")]
    pub commands: Vec<String>,
    /// Only these workloads (comma separated).
    #[arg(long, value_delimiter = ',')]
    pub workloads: Option<Vec<String>>,
    /// Minimum number of A/B pairs (more run until the verdict is clear or --max-time).
    #[arg(long, value_name = "N", value_parser = min_runs)]
    pub min_runs: Option<u32>,
    /// Deprecated spelling of --min-runs (a minimum, not hyperfine's exact --runs).
    #[arg(long, value_name = "N", hide = true, conflicts_with = "min_runs", value_parser = min_runs)]
    pub runs: Option<u32>,
    /// Warm-up runs of each side (default 0: both binaries and the files the workload
    /// names are read into the page cache instead).
    #[arg(long, value_name = "N")]
    pub warmup: Option<u32>,
    /// Upper bound of time per workload (e.g. 30s).
    #[arg(long, value_name = "DURATION")]
    pub max_time: Option<String>,
    /// Equivalence margin (0.01 = 1 %).
    #[arg(long, value_name = "FRACTION")]
    pub margin: Option<f64>,
    /// What to print: the lines for a person (term; on stderr with another format), or the
    /// results as json, md, csv or html.
    #[arg(long, value_enum, default_value_t = BenchFormat::Term)]
    pub format: BenchFormat,
    /// Write the result to FILE (atomically) instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Write the results as JSON.
    #[arg(long, value_name = "FILE")]
    pub export_json: Option<PathBuf>,
    /// Write the results as a Markdown table.
    #[arg(long, value_name = "FILE")]
    pub export_markdown: Option<PathBuf>,
    /// Write every run as CSV.
    #[arg(long, value_name = "FILE")]
    pub export_csv: Option<PathBuf>,
    /// Write a self-contained HTML page with charts (per-workload intervals, every pair).
    #[arg(long, value_name = "FILE")]
    pub export_html: Option<PathBuf>,
}

/// `--min-runs N`: a whole number, at least 2 — the spec's `min-runs` bound and words.
fn min_runs(text: &str) -> Result<u32, String> {
    let key = crate::spec::bounds::Key::Flag("--min-runs");
    let n: u32 = text
        .parse()
        .map_err(|_| format!("not a whole number\n  fix: write {}", key.written("6")))?;
    crate::spec::bounds::min_runs(n, key).map_err(|p| p.to_string())
}
