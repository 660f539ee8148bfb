//! The option groups commands share, under cargo's help headings: the global options
//! (accepted before or after any subcommand), Package Selection, Feature Selection,
//! Compilation Options, Manifest Options, and the one `-o FILE`. A subcommand flattens the
//! groups it uses, so its `--help` lists only those.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

pub(crate) const PACKAGE: &str = "Package Selection";
pub(crate) const FEATURES: &str = "Feature Selection";
pub(crate) const COMPILATION: &str = "Compilation Options";
pub(crate) const MANIFEST: &str = "Manifest Options";

/// Options every command takes, before or after the subcommand.
#[derive(Debug, Clone, Args, Default)]
pub struct GlobalOpts {
    /// Use verbose output (-vv very verbose).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Do not print progress, only results and errors.
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// Coloring: auto, always, never (default: CARGO_TERM_COLOR, else auto; auto honours
    /// NO_COLOR and CLICOLOR_FORCE).
    #[arg(long, global = true, value_enum, value_name = "WHEN")]
    pub color: Option<Color>,
    /// Override a cargo configuration value (KEY=VALUE or a PATH to a config file), passed
    /// to every cargo command.
    #[arg(long, global = true, value_name = "KEY=VALUE|PATH")]
    pub config: Vec<String>,
    /// Path to Cargo.toml.
    #[arg(long, global = true, value_name = "PATH", help_heading = MANIFEST)]
    pub manifest_path: Option<PathBuf>,
    /// Assert that `Cargo.lock` will remain unchanged (passed to every cargo command).
    #[arg(long, global = true, help_heading = MANIFEST)]
    pub locked: bool,
    /// Run without accessing the network (passed to every cargo command).
    #[arg(long, global = true, help_heading = MANIFEST)]
    pub offline: bool,
    /// Equivalent to specifying both --locked and --offline.
    #[arg(long, global = true, help_heading = MANIFEST)]
    pub frozen: bool,
}

/// `-p` and `--bin`.
#[derive(Debug, Clone, Args, Default)]
pub struct PackageOpts {
    /// Package to optimize.
    #[arg(short, long, value_name = "SPEC", help_heading = PACKAGE)]
    pub package: Option<String>,
    /// Binary target to optimize.
    #[arg(long, value_name = "NAME", help_heading = PACKAGE)]
    pub bin: Option<String>,
}

/// `-F`, `--all-features`, `--no-default-features`.
#[derive(Debug, Clone, Args, Default)]
pub struct FeatureOpts {
    /// Space or comma separated list of features to activate.
    #[arg(short = 'F', long, value_name = "FEATURES", help_heading = FEATURES)]
    pub features: Vec<String>,
    /// Activate all available features.
    #[arg(long, help_heading = FEATURES)]
    pub all_features: bool,
    /// Do not activate the `default` feature.
    #[arg(long, help_heading = FEATURES)]
    pub no_default_features: bool,
}

/// `--profile`, `--target`, `-j`.
#[derive(Debug, Clone, Args, Default)]
pub struct CompileOpts {
    /// The cargo profile the baseline is built with [default: release].
    #[arg(long, value_name = "PROFILE-NAME", help_heading = COMPILATION)]
    pub profile: Option<String>,
    /// Build for the target triple (default: the host).
    #[arg(long, value_name = "TRIPLE", help_heading = COMPILATION)]
    pub target: Option<String>,
    /// Number of parallel jobs (default: the number of CPUs), passed to every cargo build.
    #[arg(short, long, value_name = "N", help_heading = COMPILATION,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub jobs: Option<usize>,
}

/// `--target-dir`.
#[derive(Debug, Clone, Args, Default)]
pub struct TargetDirOpt {
    /// Directory for all generated artifacts (default: cargo's target directory).
    #[arg(long, value_name = "DIRECTORY", help_heading = COMPILATION)]
    pub target_dir: Option<PathBuf>,
}

/// `--spec`.
#[derive(Debug, Clone, Args, Default)]
pub struct SpecOpt {
    /// The spec file (default: optimize.toml next to the package's Cargo.toml).
    #[arg(long, value_name = "PATH", help_heading = MANIFEST)]
    pub spec: Option<PathBuf>,
}

/// Everything a command that builds the project takes.
#[derive(Debug, Clone, Args, Default)]
pub struct BuildOpts {
    #[command(flatten)]
    pub package: PackageOpts,
    #[command(flatten)]
    pub features: FeatureOpts,
    #[command(flatten)]
    pub compile: CompileOpts,
    #[command(flatten)]
    pub target_dir: TargetDirOpt,
    #[command(flatten)]
    pub spec: SpecOpt,
}

/// What a command that reads a past run takes: the package (whose target dir holds the
/// runs), the target dir, the spec.
#[derive(Debug, Clone, Args, Default)]
pub struct RunLookupOpts {
    #[command(flatten)]
    pub package: PackageOpts,
    #[command(flatten)]
    pub target_dir: TargetDirOpt,
    #[command(flatten)]
    pub spec: SpecOpt,
}

/// The one `-o`: the result goes to FILE instead of stdout.
#[derive(Debug, Clone, Args, Default)]
pub(crate) struct OutputOpt {
    /// Write the result to FILE (atomically) instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, ValueEnum, Default, PartialEq, Eq)]
pub enum Color {
    #[default]
    Auto,
    Always,
    Never,
}

impl Color {
    /// `Some(on)` when forced, `None` for auto (see `ui::Ui::new`).
    pub fn forced(self) -> Option<bool> {
        match self {
            Color::Auto => None,
            Color::Always => Some(true),
            Color::Never => Some(false),
        }
    }
}

/// `--message-format`: how the run reports its progress.
#[derive(Debug, Clone, Copy, ValueEnum, Default, PartialEq, Eq)]
pub enum MessageFormat {
    /// Lines for a person on stderr, the ladder on stdout.
    #[default]
    Human,
    /// One JSON object per line on stdout for each event (docs/src/message-format.md).
    Json,
}

/// `--format` of `doctor`, `cache stats` and `profile merge`: for a person, or JSON.
#[derive(Debug, Clone, Copy, ValueEnum, Default, PartialEq, Eq)]
pub enum TermJson {
    #[default]
    Term,
    Json,
}

/// `bench --format`: the lines for a person, or one of the export formats.
#[derive(Debug, Clone, Copy, ValueEnum, Default, PartialEq, Eq)]
pub enum BenchFormat {
    #[default]
    Term,
    Json,
    Md,
    Csv,
    Html,
}

impl BenchFormat {
    /// The export format (`None` for `term`).
    pub fn export(self) -> Option<crate::render::ExportFormat> {
        use crate::render::ExportFormat as E;
        match self {
            BenchFormat::Term => None,
            BenchFormat::Json => Some(E::Json),
            BenchFormat::Md => Some(E::Markdown),
            BenchFormat::Csv => Some(E::Csv),
            BenchFormat::Html => Some(E::Html),
        }
    }
}

/// `cargo optimize completions SHELL`.
#[derive(Debug, Clone, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// `cargo optimize clean`.
#[derive(Debug, Clone, Args, Default)]
pub struct CleanArgs {
    #[command(flatten)]
    pub target_dir: TargetDirOpt,
}
