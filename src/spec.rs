//! `optimize.toml` (spec v1): the types, parsing and validation.
//!
//! Owns: reading the file, reporting every problem with file:line:col and a fix, expanding
//! `{root}` and `matrix`, defaults. Must not: run anything or touch cargo.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// File name looked up next to the package's Cargo.toml.
pub const SPEC_FILE: &str = "optimize.toml";

/// A validated spec with every workload expanded (matrix) and every path made absolute.
#[derive(Debug, Clone)]
pub struct Spec {
    /// The file it was read from.
    pub path: PathBuf,
    /// The folder holding it: relative paths and `{root}` resolve against this.
    pub root: PathBuf,
    pub bin: Option<String>,
    pub package: Option<String>,
    pub stages: Stages,
    pub bench: BenchConfig,
    pub verify: VerifyConfig,
    pub workloads: Vec<Workload>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StageName {
    Baseline,
    Profile,
    Cpu,
    Pgo,
    Bolt,
}

impl StageName {
    pub fn as_str(&self) -> &'static str {
        match self {
            StageName::Baseline => "baseline",
            StageName::Profile => "profile",
            StageName::Cpu => "cpu",
            StageName::Pgo => "pgo",
            StageName::Bolt => "bolt",
        }
    }
}

impl std::fmt::Display for StageName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum ProfileChoice {
    /// A named preset: "max", "balanced", "size".
    Preset(String),
    /// Inline overrides, key (cargo profile key such as "lto") to TOML value.
    Overrides(BTreeMap<String, toml::Value>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoltMode {
    Auto,
    Instrument,
    Perf,
}

#[derive(Debug, Clone)]
pub struct Stages {
    /// Stages to try, in order (baseline is implicit and always first).
    pub try_: Vec<StageName>,
    pub profile: ProfileChoice,
    /// `None`: choose automatically (highest x86-64 level, then native).
    pub cpu: Option<Vec<String>>,
    pub allow_panic_abort: bool,
    pub bolt_mode: BoltMode,
    /// `None`: the built-in BOLT optimization flags.
    pub bolt_args: Option<Vec<String>>,
}

#[derive(Debug, Clone)]
pub struct BenchConfig {
    /// Per workload per comparison.
    pub max_time: Duration,
    /// Equivalence margin for verdicts (0.01 = 1 %).
    pub margin: f64,
    pub warmup: u32,
    /// Minimum number of pairs before a verdict is considered.
    pub min_runs: u32,
}

#[derive(Debug, Clone, Default)]
pub struct VerifyConfig {
    /// Run the crate's own tests with each candidate's settings.
    pub tests: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Expect {
    /// stdout and exit status equal.
    Exact,
    /// exit status only.
    ExitCode,
    /// numbers agree within this relative tolerance; other tokens equal.
    Numeric(f64),
    /// numbers agree within this absolute tolerance; other tokens equal.
    NumericAbs(f64),
    /// lines matching the regex are masked, the rest compared exactly.
    Ignore(String),
}

#[derive(Debug, Clone)]
pub struct Workload {
    /// Unique; for matrix workloads the expanded name, e.g. `parse[size=10]`.
    pub name: String,
    /// Arguments with `{root}` and matrix variables expanded.
    pub args: Vec<String>,
    /// Absolute path of the stdin file.
    pub stdin: Option<PathBuf>,
    pub env: BTreeMap<String, String>,
    /// Absolute working directory (default: the spec's folder).
    pub cwd: PathBuf,
    pub timeout: Duration,
    pub train: bool,
    pub eval: bool,
    pub expect: Expect,
    /// Output files the workload writes, relative to `cwd`.
    pub files: Vec<PathBuf>,
    pub sort_lines: bool,
    /// Compare stderr too.
    pub stderr: bool,
    /// 1-based line of the `[[workload]]` header in the spec, for messages.
    pub line: usize,
}

/// Everything that can be wrong with a spec. Display gives `file:line:col: what — fix`.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    #[error("no {SPEC_FILE} at {path}\n  fix: run `cargo optimize init` to write a commented one, or pass --spec PATH")]
    Missing { path: PathBuf },
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}:{line}:{col}: {message}{}", fix.as_ref().map(|f| format!("\n  fix: {f}")).unwrap_or_default())]
    Invalid {
        path: PathBuf,
        line: usize,
        col: usize,
        message: String,
        fix: Option<String>,
    },
}

/// Read, validate and expand a spec file.
pub fn load(path: &Path) -> Result<Spec, SpecError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(SpecError::Missing {
                path: path.to_path_buf(),
            })
        }
        Err(source) => {
            return Err(SpecError::Read {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    parse(&text, path)
}

/// Parse spec text; `path` is used for messages and to resolve relative paths.
pub fn parse(_text: &str, _path: &Path) -> Result<Spec, SpecError> {
    unimplemented!("spec parsing lands with the spec helper")
}

/// A commented skeleton for `cargo optimize init`.
pub fn skeleton(bin: &str) -> String {
    format!("bin = \"{bin}\"\n\n[[workload]]\nname = \"default\"\nargs = []\n")
}
