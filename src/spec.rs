//! `optimize.toml` (spec v1): the types, parsing and validation.
//!
//! Owns: reading the file, reporting every problem with file:line:col and a fix, expanding
//! `{root}` and `matrix`, defaults. Must not: run anything or touch cargo.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use toml::Spanned;

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
    #[error("cannot read {path}: {error}")]
    Read {
        path: PathBuf,
        error: std::io::Error,
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
                error: source,
            })
        }
    };
    parse(&text, path)
}

/// Parse spec text; `path` is used for messages and to resolve relative paths.
///
/// Checks everything that can be checked without running anything: unknown keys, types,
/// values, placeholders, that `stdin` files exist and `cwd`s are folders. Matrix workloads are
/// expanded and every path is made absolute against [`spec_root`]`(path)`.
pub fn parse(text: &str, path: &Path) -> Result<Spec, SpecError> {
    let cx = Cx { text, path };
    let raw: RawSpec = toml::from_str(text).map_err(|e| cx.toml_error(&e))?;
    let root = spec_root(path);
    let stages = cx.stages(raw.stages.unwrap_or_default())?;
    let bench = cx.bench(raw.bench.unwrap_or_default())?;
    let verify = VerifyConfig {
        tests: raw.verify.and_then(|v| v.tests).unwrap_or(false),
    };
    let bin = raw.bin.map(|b| cx.non_empty(b, "bin")).transpose()?;
    let package = raw
        .package
        .map(|p| cx.non_empty(p, "package"))
        .transpose()?;
    let workloads = cx.workloads(raw.workload.unwrap_or_default(), &root, &stages)?;
    Ok(Spec {
        path: path.to_path_buf(),
        root,
        bin,
        package,
        stages,
        bench,
        verify,
        workloads,
    })
}

/// The folder a spec at `path` resolves relative paths and `{root}` against: its parent,
/// absolute (canonical when it exists, else joined with the current directory).
pub fn spec_root(path: &Path) -> PathBuf {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if let Ok(canonical) = parent.canonicalize() {
        return canonical;
    }
    let joined = if parent.is_absolute() {
        parent
    } else {
        match std::env::current_dir() {
            Ok(cwd) => cwd.join(parent),
            Err(_) => parent,
        }
    };
    clean_path(&joined)
}

impl Workload {
    /// The workload's name made safe as a file name (for `outputs/<stage>/<name>.stdout`):
    /// characters other than ASCII letters, digits and `-_.,=[]+` become `_`.
    pub fn file_stem(&self) -> String {
        let stem: String = self
            .name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "-_.,=[]+".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        if stem.starts_with('.') {
            format!("_{stem}")
        } else {
            stem
        }
    }
}

impl Stages {
    /// Whether `stage` is to be tried (baseline always is).
    pub fn tries(&self, stage: StageName) -> bool {
        stage == StageName::Baseline || self.try_.contains(&stage)
    }
}

impl Default for Stages {
    fn default() -> Self {
        Stages {
            try_: DEFAULT_TRY.to_vec(),
            profile: ProfileChoice::Preset("max".to_owned()),
            cpu: None,
            allow_panic_abort: false,
            bolt_mode: BoltMode::Auto,
            bolt_args: None,
        }
    }
}

impl Default for BenchConfig {
    fn default() -> Self {
        BenchConfig {
            max_time: Duration::from_secs(30),
            margin: 0.01,
            warmup: 1,
            min_runs: 5,
        }
    }
}

/// Default `[[workload]] timeout`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// Default `[stages] try`, in pipeline order.
pub const DEFAULT_TRY: [StageName; 4] = [
    StageName::Profile,
    StageName::Cpu,
    StageName::Pgo,
    StageName::Bolt,
];

/// Names accepted by `[stages] profile = "…"`.
pub const PROFILE_PRESETS: [&str; 3] = ["max", "balanced", "size"];

/// A commented skeleton for `cargo optimize init`.
pub fn skeleton(bin: &str) -> String {
    let bin_line = format!("bin = {}", toml_string(bin));
    let bin_line = format!("{bin_line:<33} # the binary to optimize");
    format!(
        r#"# optimize.toml: what `cargo optimize` builds, runs and measures (spec v1).
# Relative paths are relative to this file's folder, and "{{root}}" expands to that folder.
# Unknown keys are errors, so a typo is reported instead of silently ignored.

{bin_line}
# package = "my-package"          # needed in a workspace with several packages

# Stages tried after the baseline (your binary built as you build it today). A stage's
# candidate is kept only when its outputs match the baseline's and it is measurably faster.
# [stages]
# try = ["profile", "cpu", "pgo", "bolt"]   # default: all four, in this order
# profile = "max"                 # max | balanced | size, or a table of cargo profile overrides:
#                                 #   profile = {{ lto = "fat", codegen-units = 1, opt-level = 3 }}
# cpu = ["x86-64-v3", "native"]   # -Ctarget-cpu candidates (default: chosen for this machine)
# allow-panic-abort = false       # may the profile stage try panic = "abort"?
# bolt-mode = "auto"              # auto | instrument | perf

# How two binaries are compared.
# [bench]
# max-time = "30s"                # time budget per workload per comparison ("500ms", "30s", "2m")
# margin = 0.01                   # differences within 1 % count as "equivalent"

# [verify]
# tests = false                   # also run the crate's own tests with each candidate's settings

# Workloads are runs of your binary. "train" workloads are run to collect PGO and BOLT profiles;
# "eval" workloads are timed to decide what to keep. Make both look like real use: the
# optimizations only help what the training runs exercise.
# REPLACE the "--help" placeholders below with real arguments and inputs.

[[workload]]
name = "train-example"            # unique; used in reports
args = ["--help"]                 # e.g. ["--input", "{{root}}/data/large.json"]
use = ["train"]                   # train = profiling only (default: ["train", "eval"])
# stdin = "data/input.txt"        # file fed to stdin (must exist)
# env = {{ RUST_LOG = "off" }}      # extra environment variables
# cwd = "."                       # working directory (default: this folder)
# timeout = "10m"                 # a run taking longer fails
# matrix = {{ size = ["1", "100"] }}  # one workload per value: "{{size}}" in args, stdin, env, cwd
#                                 # and files is replaced; the name becomes train-example[size=1]

[[workload]]
name = "eval-example"
args = ["--help"]
use = ["eval"]                    # eval = timed against the best candidate so far
expect = "exact"                  # how outputs are compared with the baseline's:
#   "exact"                       stdout and exit status equal (the default)
#   "exit-code"                   exit status only
#   {{ numeric = 0.01 }}            numbers within 1 % (relative), other text equal
#   {{ numeric-abs = 1e-9 }}        numbers within an absolute tolerance, other text equal
#   {{ ignore = "^took [0-9.]+s$" }}  lines matching the regex are masked, the rest equal
# files = ["out.json"]            # output files compared too (relative to cwd)
# sort-lines = false              # sort stdout lines before comparing (unordered output)
# stderr = false                  # compare stderr too
"#
    )
}

// ---------------------------------------------------------------------------------------------
// The file as written. Every table denies unknown keys; values that need a position in an error
// message are `Spanned`.

const TOP_KEYS: &[&str] = &["bin", "package", "stages", "bench", "verify", "workload"];
const STAGES_KEYS: &[&str] = &[
    "try",
    "profile",
    "cpu",
    "allow-panic-abort",
    "bolt-mode",
    "bolt-args",
];
const BENCH_KEYS: &[&str] = &["max-time", "margin", "warmup", "min-runs"];
const VERIFY_KEYS: &[&str] = &["tests"];
const WORKLOAD_KEYS: &[&str] = &[
    "name",
    "args",
    "stdin",
    "env",
    "cwd",
    "timeout",
    "use",
    "expect",
    "files",
    "sort-lines",
    "stderr",
    "matrix",
];
/// Cargo profile keys a spec may override (and `apply` manages).
pub const PROFILE_KEYS: &[&str] = &[
    "opt-level",
    "lto",
    "codegen-units",
    "panic",
    "debug",
    "strip",
    "incremental",
    "overflow-checks",
    "debug-assertions",
];
const EXPECT_KEYS: &[&str] = &["numeric", "numeric-abs", "ignore"];

/// Every table with its keys, to name the table in "unknown key" messages.
const TABLES: &[(&str, &[&str])] = &[
    ("at the top level", TOP_KEYS),
    ("in [stages]", STAGES_KEYS),
    ("in [bench]", BENCH_KEYS),
    ("in [verify]", VERIFY_KEYS),
    ("in [[workload]]", WORKLOAD_KEYS),
    ("in the [stages] profile table", PROFILE_KEYS),
    ("in the expect table", EXPECT_KEYS),
];

const STAGE_NAMES: &[&str] = &["profile", "cpu", "pgo", "bolt"];
const BOLT_MODES: &[&str] = &["auto", "instrument", "perf"];
const USES: &[&str] = &["train", "eval"];
const EXPECT_MODES: &[&str] = &["exact", "exit-code"];
/// A matrix expanding into more workloads than this is almost certainly a mistake.
const MAX_MATRIX: usize = 1000;

const EXAMPLE_WORKLOAD: &str =
    "[[workload]]\nname = \"typical\"\nargs = [\"--input\", \"{root}/data/input.txt\"]";

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawSpec {
    bin: Option<Spanned<String>>,
    package: Option<Spanned<String>>,
    stages: Option<RawStages>,
    bench: Option<RawBench>,
    verify: Option<RawVerify>,
    workload: Option<Vec<Spanned<RawWorkload>>>,
}

#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawStages {
    #[serde(rename = "try")]
    try_: Option<Vec<Spanned<String>>>,
    profile: Option<Spanned<StrOrTable<RawProfile>>>,
    cpu: Option<Spanned<Vec<Spanned<String>>>>,
    allow_panic_abort: Option<bool>,
    bolt_mode: Option<Spanned<String>>,
    bolt_args: Option<Vec<String>>,
}

type ProfileValue = Option<Spanned<toml::Value>>;

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawProfile {
    opt_level: ProfileValue,
    lto: ProfileValue,
    codegen_units: ProfileValue,
    panic: ProfileValue,
    debug: ProfileValue,
    strip: ProfileValue,
    incremental: ProfileValue,
    overflow_checks: ProfileValue,
    debug_assertions: ProfileValue,
}

impl Expecting for RawProfile {
    const EXPECTING: &'static str =
        "a preset name (\"max\", \"balanced\" or \"size\") or a table of cargo profile overrides";
}

#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawBench {
    max_time: Option<Spanned<String>>,
    margin: Option<Spanned<f64>>,
    warmup: Option<u32>,
    min_runs: Option<Spanned<u32>>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawVerify {
    tests: Option<bool>,
}

type Matrix = BTreeMap<Spanned<String>, Spanned<Vec<Spanned<MatrixValue>>>>;

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawWorkload {
    name: Spanned<String>,
    args: Option<Vec<Spanned<String>>>,
    stdin: Option<Spanned<String>>,
    env: Option<BTreeMap<Spanned<String>, Spanned<String>>>,
    cwd: Option<Spanned<String>>,
    timeout: Option<Spanned<String>>,
    #[serde(rename = "use")]
    use_: Option<Spanned<Vec<Spanned<String>>>>,
    expect: Option<Spanned<StrOrTable<RawExpect>>>,
    files: Option<Vec<Spanned<String>>>,
    sort_lines: Option<bool>,
    stderr: Option<bool>,
    matrix: Option<Spanned<Matrix>>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawExpect {
    numeric: Option<Spanned<f64>>,
    numeric_abs: Option<Spanned<f64>>,
    ignore: Option<Spanned<String>>,
}

impl Expecting for RawExpect {
    const EXPECTING: &'static str =
        "\"exact\", \"exit-code\" or a table such as { numeric = 0.01 } or { ignore = \"regex\" }";
}

/// What a [`StrOrTable`] says it expected, in type errors.
trait Expecting {
    const EXPECTING: &'static str;
}

/// A value that is either a string or a table deserialized as `T` (keeping `T`'s own checks,
/// such as unknown keys, and their positions).
enum StrOrTable<T> {
    Str(String),
    Table(T),
}

impl<'de, T: serde::Deserialize<'de> + Expecting> serde::Deserialize<'de> for StrOrTable<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: serde::Deserialize<'de> + Expecting> serde::de::Visitor<'de> for V<T> {
            type Value = StrOrTable<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(T::EXPECTING)
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(StrOrTable::Str(v.to_owned()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<Self::Value, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(StrOrTable::Table)
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// A matrix value: a string, or a number or boolean written without quotes (taken as text).
struct MatrixValue(String);

impl<'de> serde::Deserialize<'de> for MatrixValue {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = MatrixValue;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<MatrixValue, E> {
                Ok(MatrixValue(v.to_owned()))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<MatrixValue, E> {
                Ok(MatrixValue(v.to_string()))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<MatrixValue, E> {
                Ok(MatrixValue(v.to_string()))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<MatrixValue, E> {
                Ok(MatrixValue(v.to_string()))
            }
            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<MatrixValue, E> {
                Ok(MatrixValue(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

// ---------------------------------------------------------------------------------------------
// Validation: raw → Spec, with errors that point into the text.

/// The text being parsed, for turning byte offsets into `file:line:col` errors.
struct Cx<'a> {
    text: &'a str,
    path: &'a Path,
}

impl Cx<'_> {
    fn invalid(&self, offset: usize, message: impl Into<String>, fix: Option<String>) -> SpecError {
        let (line, col) = line_col(self.text, offset);
        SpecError::Invalid {
            path: self.path.to_path_buf(),
            line,
            col,
            message: message.into(),
            fix,
        }
    }

    fn at<T>(&self, v: &Spanned<T>, message: impl Into<String>, fix: Option<String>) -> SpecError {
        self.invalid(v.span().start, message, fix)
    }

    fn line(&self, offset: usize) -> usize {
        line_col(self.text, offset).0
    }

    /// A TOML syntax or type error, reworded where the library's wording is unfriendly.
    fn toml_error(&self, e: &toml::de::Error) -> SpecError {
        let offset = e.span().map_or(0, |s| s.start);
        let at_text = e.span().and_then(|s| self.text.get(s)).unwrap_or("");
        let (message, fix) = friendly_toml_message(e.message().trim(), at_text);
        self.invalid(offset, message, fix)
    }

    fn non_empty(&self, v: Spanned<String>, key: &str) -> Result<String, SpecError> {
        if v.get_ref().trim().is_empty() {
            return Err(self.at(
                &v,
                format!("`{key}` is empty"),
                Some(format!("write a name, or remove `{key}`")),
            ));
        }
        Ok(v.into_inner())
    }

    fn duration(&self, v: &Spanned<String>, key: &str) -> Result<Duration, SpecError> {
        let fix = || {
            Some(format!(
                "write a duration such as {key} = \"500ms\", \"30s\" or \"2m\""
            ))
        };
        match humantime::parse_duration(v.get_ref().trim()) {
            Ok(d) if d.is_zero() => {
                Err(self.at(v, format!("`{key}` must be longer than zero"), fix()))
            }
            Ok(d) => Ok(d),
            Err(e) => Err(self.at(
                v,
                format!("`{key}` is not a duration: \"{}\" ({e})", v.get_ref()),
                fix(),
            )),
        }
    }

    /// One of `choices`, or an error with "did you mean".
    fn choice<'c>(
        &self,
        v: &Spanned<String>,
        what: &str,
        choices: &[&'c str],
    ) -> Result<&'c str, SpecError> {
        match choices.iter().find(|c| **c == v.get_ref()) {
            Some(c) => Ok(c),
            None => Err(self.at(
                v,
                format!("unknown {what} \"{}\"", v.get_ref()),
                Some(choices_fix(v.get_ref(), choices, &format!("{what}s"))),
            )),
        }
    }

    fn stages(&self, raw: RawStages) -> Result<Stages, SpecError> {
        let mut stages = Stages::default();
        if let Some(list) = raw.try_ {
            stages.try_ = self.try_list(&list)?;
        }
        if let Some(profile) = raw.profile {
            stages.profile = self.profile(profile, raw.allow_panic_abort.unwrap_or(false))?;
        }
        if let Some(cpu) = raw.cpu {
            if cpu.get_ref().is_empty() {
                return Err(self.at(
                    &cpu,
                    "`cpu` is an empty list",
                    Some("list -Ctarget-cpu candidates such as [\"x86-64-v3\", \"native\"], or remove `cpu` to choose automatically".into()),
                ));
            }
            let mut seen: Vec<&str> = Vec::new();
            for c in cpu.get_ref() {
                if c.get_ref().trim().is_empty() {
                    return Err(self.at(
                        c,
                        "empty cpu name",
                        Some("write a target-cpu name such as \"x86-64-v3\" or \"native\"".into()),
                    ));
                }
                if seen.contains(&c.get_ref().as_str()) {
                    return Err(self.at(
                        c,
                        format!("cpu \"{}\" is listed twice", c.get_ref()),
                        Some("remove the second one".into()),
                    ));
                }
                seen.push(c.get_ref());
            }
            stages.cpu = Some(
                cpu.into_inner()
                    .into_iter()
                    .map(Spanned::into_inner)
                    .collect(),
            );
        }
        stages.allow_panic_abort = raw.allow_panic_abort.unwrap_or(false);
        if let Some(mode) = raw.bolt_mode {
            stages.bolt_mode = match self.choice(&mode, "bolt mode", BOLT_MODES)? {
                "instrument" => BoltMode::Instrument,
                "perf" => BoltMode::Perf,
                _ => BoltMode::Auto,
            };
        }
        stages.bolt_args = raw.bolt_args;
        Ok(stages)
    }

    fn try_list(&self, list: &[Spanned<String>]) -> Result<Vec<StageName>, SpecError> {
        let mut out: Vec<StageName> = Vec::new();
        for item in list {
            if item.get_ref() == "baseline" {
                return Err(self.at(
                    item,
                    "`baseline` cannot be listed in `try`: it always runs first",
                    Some("remove \"baseline\" from the list".into()),
                ));
            }
            let stage = match self.choice(item, "stage", STAGE_NAMES)? {
                "profile" => StageName::Profile,
                "cpu" => StageName::Cpu,
                "pgo" => StageName::Pgo,
                _ => StageName::Bolt,
            };
            if out.contains(&stage) {
                return Err(self.at(
                    item,
                    format!("stage \"{stage}\" is listed twice"),
                    Some("remove the second one".into()),
                ));
            }
            if let Some(later) = out.iter().find(|s| **s > stage) {
                return Err(self.at(
                    item,
                    format!("stage \"{stage}\" must come before \"{later}\": stages run in the order profile, cpu, pgo, bolt"),
                    Some(format!("write them in that order, e.g. try = [{}]", {
                        let mut sorted = out.clone();
                        sorted.push(stage);
                        sorted.sort();
                        sorted.iter().map(|s| format!("\"{s}\"")).collect::<Vec<_>>().join(", ")
                    })),
                ));
            }
            out.push(stage);
        }
        Ok(out)
    }

    fn profile(
        &self,
        raw: Spanned<StrOrTable<RawProfile>>,
        allow_panic_abort: bool,
    ) -> Result<ProfileChoice, SpecError> {
        let start = raw.span().start;
        match raw.into_inner() {
            StrOrTable::Str(name) => {
                let name = Spanned::new(start..start, name);
                Ok(ProfileChoice::Preset(
                    self.choice(&name, "profile preset", &PROFILE_PRESETS)?
                        .to_owned(),
                ))
            }
            StrOrTable::Table(t) => {
                let entries = [
                    ("opt-level", t.opt_level),
                    ("lto", t.lto),
                    ("codegen-units", t.codegen_units),
                    ("panic", t.panic),
                    ("debug", t.debug),
                    ("strip", t.strip),
                    ("incremental", t.incremental),
                    ("overflow-checks", t.overflow_checks),
                    ("debug-assertions", t.debug_assertions),
                ];
                let mut out = BTreeMap::new();
                for (key, value) in entries {
                    let Some(value) = value else { continue };
                    self.profile_value(key, &value, allow_panic_abort)?;
                    out.insert(key.to_owned(), value.into_inner());
                }
                Ok(ProfileChoice::Overrides(out))
            }
        }
    }

    /// Checks an override's type and value the way cargo would, so mistakes surface here.
    fn profile_value(
        &self,
        key: &str,
        v: &Spanned<toml::Value>,
        allow_panic_abort: bool,
    ) -> Result<(), SpecError> {
        use toml::Value as V;
        let ok = match (key, v.get_ref()) {
            ("opt-level", V::Integer(n)) => (0..=3).contains(n),
            ("opt-level", V::String(s)) => matches!(s.as_str(), "s" | "z"),
            ("lto", V::Boolean(_)) => true,
            ("lto", V::String(s)) => matches!(s.as_str(), "fat" | "thin" | "off"),
            ("codegen-units", V::Integer(n)) => *n >= 1,
            ("panic", V::String(s)) => matches!(s.as_str(), "unwind" | "abort"),
            ("debug", V::Boolean(_)) => true,
            ("debug", V::Integer(n)) => (0..=2).contains(n),
            ("debug", V::String(s)) => {
                matches!(
                    s.as_str(),
                    "none" | "line-directives-only" | "line-tables-only" | "limited" | "full"
                )
            }
            ("strip", V::Boolean(_)) => true,
            ("strip", V::String(s)) => matches!(s.as_str(), "none" | "debuginfo" | "symbols"),
            ("incremental" | "overflow-checks" | "debug-assertions", V::Boolean(_)) => true,
            _ => false,
        };
        if !ok {
            let allowed = match key {
                "opt-level" => "0, 1, 2, 3, \"s\" or \"z\"",
                "lto" => "true, false, \"fat\", \"thin\" or \"off\"",
                "codegen-units" => "a whole number of at least 1",
                "panic" => "\"unwind\" or \"abort\"",
                "debug" => {
                    "true, false, 0, 1, 2, \"none\", \"line-tables-only\", \"limited\" or \"full\""
                }
                "strip" => "true, false, \"none\", \"debuginfo\" or \"symbols\"",
                _ => "true or false",
            };
            return Err(self.at(
                v,
                format!("invalid profile value {key} = {}", v.get_ref()),
                Some(format!("{key} takes {allowed}")),
            ));
        }
        if key == "panic" && v.get_ref().as_str() == Some("abort") && !allow_panic_abort {
            return Err(self.at(
                v,
                "panic = \"abort\" changes behaviour (no unwinding, Drop does not run on panic) and is off unless allowed",
                Some("add allow-panic-abort = true to [stages] if your program does not rely on unwinding".into()),
            ));
        }
        Ok(())
    }

    fn bench(&self, raw: RawBench) -> Result<BenchConfig, SpecError> {
        let mut bench = BenchConfig::default();
        if let Some(t) = &raw.max_time {
            bench.max_time = self.duration(t, "max-time")?;
        }
        if let Some(m) = &raw.margin {
            let v = *m.get_ref();
            if !(v > 0.0 && v < 0.5) {
                return Err(self.at(
                    m,
                    format!("`margin` must be between 0 and 0.5 (exclusive), not {v}"),
                    Some("margin = 0.01 means differences within 1 % count as equivalent".into()),
                ));
            }
            bench.margin = v;
        }
        if let Some(w) = raw.warmup {
            bench.warmup = w;
        }
        if let Some(n) = &raw.min_runs {
            if *n.get_ref() < 2 {
                return Err(self.at(
                    n,
                    "`min-runs` must be at least 2",
                    Some(
                        "a confidence interval needs at least 2 pairs of runs; the default is 5"
                            .into(),
                    ),
                ));
            }
            bench.min_runs = *n.get_ref();
        }
        Ok(bench)
    }

    fn workloads(
        &self,
        raws: Vec<Spanned<RawWorkload>>,
        root: &Path,
        stages: &Stages,
    ) -> Result<Vec<Workload>, SpecError> {
        if raws.is_empty() {
            return Err(self.invalid(
                0,
                "no workloads: cargo-optimize needs at least one [[workload]] to train and measure",
                Some(format!(
                    "add one that runs your binary the way it is really used, e.g.\n\n{}",
                    indent(EXAMPLE_WORKLOAD, "      ")
                )),
            ));
        }
        let mut out = Vec::new();
        // name → line where first defined
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        for raw in raws {
            let header = raw.span().start;
            self.workload(raw.into_inner(), header, root, &mut seen, &mut out)?;
        }
        let first = line_start_offset(self.text, out[0].line);
        if !out.iter().any(|w| w.eval) {
            return Err(self.invalid(
                first,
                "no workload is used for \"eval\", so nothing would be measured",
                Some("add \"eval\" to `use` in at least one workload (the default is [\"train\", \"eval\"])".into()),
            ));
        }
        if !out.iter().any(|w| w.train)
            && (stages.tries(StageName::Pgo) || stages.tries(StageName::Bolt))
        {
            return Err(self.invalid(
                first,
                "no workload is used for \"train\", which the pgo and bolt stages need",
                Some("add \"train\" to `use` in at least one workload, or leave pgo and bolt out of [stages] try".into()),
            ));
        }
        Ok(out)
    }

    fn workload(
        &self,
        w: RawWorkload,
        header: usize,
        root: &Path,
        seen: &mut BTreeMap<String, usize>,
        out: &mut Vec<Workload>,
    ) -> Result<(), SpecError> {
        let line = self.line(header);
        let name = w.name.get_ref();
        if name.trim().is_empty() {
            return Err(self.at(
                &w.name,
                "workload `name` is empty",
                Some("give the workload a short unique name such as \"parse-large\"".into()),
            ));
        }
        if let Some(c) = name
            .chars()
            .find(|c| matches!(c, '/' | '\\') || c.is_control())
        {
            return Err(self.at(
                &w.name,
                format!("workload name \"{}\" contains {c:?}", name.escape_debug()),
                Some("names are used in file names: use letters, digits, '-' and '_'".into()),
            ));
        }
        let timeout = match &w.timeout {
            Some(t) => self.duration(t, "timeout")?,
            None => DEFAULT_TIMEOUT,
        };
        let (train, eval) = match &w.use_ {
            Some(u) => self.uses(u)?,
            None => (true, true),
        };
        let expect = match w.expect {
            Some(e) => self.expect(e)?,
            None => Expect::Exact,
        };
        let root_str = root.to_string_lossy().into_owned();
        let matrix = match &w.matrix {
            Some(m) => self.matrix(m, &root_str)?,
            None => Vec::new(),
        };
        let combos = combinations(&matrix);
        let mut used = vec![false; matrix.len()];
        for (i, combo) in combos.iter().enumerate() {
            let vars: Vec<(&str, &str)> = matrix
                .iter()
                .zip(combo)
                .map(|(k, &j)| (k.key.get_ref().as_str(), k.values[j].1.as_str()))
                .collect();
            let ex = Expander {
                cx: self,
                root: &root_str,
                vars: &vars,
            };
            // `{key}` in the name takes the value; keys the name does not mention are
            // appended as `[k=v,…]` so every expanded name stays unique and readable.
            let mut expanded = name.clone();
            let mut parts: Vec<String> = Vec::new();
            for (k, &j) in matrix.iter().zip(combo) {
                let placeholder = format!("{{{}}}", k.key.get_ref());
                if expanded.contains(&placeholder) {
                    expanded = expanded.replace(&placeholder, &k.values[j].0);
                } else {
                    parts.push(format!("{}={}", k.key.get_ref(), k.values[j].0));
                }
            }
            let name = if parts.is_empty() {
                expanded
            } else {
                format!("{expanded}[{}]", parts.join(","))
            };
            if let Some(first) = seen.get(&name) {
                return Err(self.at(
                    &w.name,
                    format!("duplicate workload name \"{name}\" (first defined on line {first})"),
                    Some("workload names must be unique: rename one of them".into()),
                ));
            }
            seen.insert(name.clone(), line);
            let mut args = Vec::new();
            for a in w.args.iter().flatten() {
                args.push(ex.expand(a, &mut used)?);
            }
            let stdin = match &w.stdin {
                Some(s) => {
                    let p = clean_path(&root.join(ex.expand(s, &mut used)?));
                    if !p.is_file() {
                        let what = if p.exists() {
                            "is not a file"
                        } else {
                            "does not exist"
                        };
                        return Err(self.at(
                            s,
                            format!("stdin file {} {what}", p.display()),
                            Some(format!(
                                "create it or correct the path (relative paths are relative to {})",
                                root.display()
                            )),
                        ));
                    }
                    Some(p)
                }
                None => None,
            };
            let mut env = BTreeMap::new();
            for (k, v) in w.env.iter().flatten() {
                if i == 0 && (k.get_ref().is_empty() || k.get_ref().contains(['=', '\0'])) {
                    return Err(self.at(
                        k,
                        format!(
                            "invalid environment variable name \"{}\"",
                            k.get_ref().escape_debug()
                        ),
                        Some("names must be non-empty and contain no '=' or NUL".into()),
                    ));
                }
                env.insert(k.get_ref().clone(), ex.expand(v, &mut used)?);
            }
            let cwd = match &w.cwd {
                Some(c) => {
                    let p = clean_path(&root.join(ex.expand(c, &mut used)?));
                    if !p.is_dir() {
                        let what = if p.exists() {
                            "is not a directory"
                        } else {
                            "does not exist"
                        };
                        return Err(self.at(
                            c,
                            format!("cwd {} {what}", p.display()),
                            Some(format!("create the directory or correct the path (relative paths are relative to {})", root.display())),
                        ));
                    }
                    p
                }
                None => root.to_path_buf(),
            };
            let mut files = Vec::new();
            for f in w.files.iter().flatten() {
                files.push(PathBuf::from(ex.expand(f, &mut used)?));
            }
            // Checked once: every combination expands the same templates.
            let unused = matrix.iter().zip(&used).find(|(_, u)| i == 0 && !**u);
            if let Some((k, _)) = unused {
                let key = k.key.get_ref();
                return Err(self.at(
                    &k.key,
                    format!("matrix key `{key}` is not used, so every expanded workload would be the same"),
                    Some(format!("use \"{{{key}}}\" in args, stdin, env, cwd or files, or remove `{key}` from the matrix")),
                ));
            }
            out.push(Workload {
                name,
                args,
                stdin,
                env,
                cwd,
                timeout,
                train,
                eval,
                expect: expect.clone(),
                files,
                sort_lines: w.sort_lines.unwrap_or(false),
                stderr: w.stderr.unwrap_or(false),
                line,
            });
        }
        Ok(())
    }

    fn uses(&self, u: &Spanned<Vec<Spanned<String>>>) -> Result<(bool, bool), SpecError> {
        if u.get_ref().is_empty() {
            return Err(self.at(
                u,
                "`use` is empty, so the workload would never run",
                Some(
                    "write use = [\"train\"], [\"eval\"] or [\"train\", \"eval\"] (the default)"
                        .into(),
                ),
            ));
        }
        let (mut train, mut eval) = (false, false);
        for item in u.get_ref() {
            let flag = match self.choice(item, "`use` value", USES)? {
                "train" => &mut train,
                _ => &mut eval,
            };
            if *flag {
                return Err(self.at(
                    item,
                    format!("\"{}\" is listed twice", item.get_ref()),
                    Some("remove the second one".into()),
                ));
            }
            *flag = true;
        }
        Ok((train, eval))
    }

    fn expect(&self, e: Spanned<StrOrTable<RawExpect>>) -> Result<Expect, SpecError> {
        let start = e.span().start;
        let forms = "expect takes \"exact\", \"exit-code\", { numeric = 0.01 }, { numeric-abs = 1e-9 } or { ignore = \"regex\" }";
        match e.into_inner() {
            StrOrTable::Str(s) => match s.as_str() {
                "exact" => Ok(Expect::Exact),
                "exit-code" => Ok(Expect::ExitCode),
                "numeric" | "numeric-abs" => Err(self.invalid(
                    start,
                    format!("expect = \"{s}\" needs a tolerance"),
                    Some(format!(
                        "write expect = {{ {s} = {} }}",
                        if s == "numeric" { "0.01" } else { "1e-9" }
                    )),
                )),
                "ignore" => Err(self.invalid(
                    start,
                    "expect = \"ignore\" needs a regex",
                    Some("write expect = { ignore = \"regex\" }".into()),
                )),
                _ => {
                    let fix = match did_you_mean(&s, EXPECT_MODES) {
                        Some(m) => format!("did you mean \"{m}\"? {forms}"),
                        None => forms.to_owned(),
                    };
                    Err(self.invalid(start, format!("unknown expect mode \"{s}\""), Some(fix)))
                }
            },
            StrOrTable::Table(t) => {
                let given = [
                    t.numeric.is_some(),
                    t.numeric_abs.is_some(),
                    t.ignore.is_some(),
                ];
                if given.iter().filter(|g| **g).count() != 1 {
                    let message = if given.contains(&true) {
                        "expect takes exactly one mode, found several"
                    } else {
                        "expect table is empty"
                    };
                    return Err(self.invalid(start, message, Some(forms.to_owned())));
                }
                if let Some(tol) = t.numeric.as_ref().or(t.numeric_abs.as_ref()) {
                    let v = *tol.get_ref();
                    if !(v.is_finite() && v >= 0.0) {
                        return Err(self.at(
                            tol,
                            format!("tolerance must be a finite number of at least 0, not {v}"),
                            Some("e.g. { numeric = 0.01 } for 1 %".into()),
                        ));
                    }
                }
                Ok(match (t.numeric, t.numeric_abs, t.ignore) {
                    (Some(n), _, _) => Expect::Numeric(n.into_inner()),
                    (_, Some(n), _) => Expect::NumericAbs(n.into_inner()),
                    (_, _, Some(re)) => {
                        if let Err(err) = regex::Regex::new(re.get_ref()) {
                            return Err(self.at(
                                &re,
                                format!("`ignore` is not a valid regular expression:\n{}", indent(&err.to_string(), "    ")),
                                Some("see https://docs.rs/regex/#syntax; in TOML, '…' strings need no backslash escaping".into()),
                            ));
                        }
                        Expect::Ignore(re.into_inner())
                    }
                    (None, None, None) => unreachable!("exactly one mode was checked above"),
                })
            }
        }
    }

    fn matrix(&self, m: &Spanned<Matrix>, root: &str) -> Result<Vec<MatrixKey>, SpecError> {
        if m.get_ref().is_empty() {
            return Err(self.at(m, "`matrix` is empty", Some("write e.g. matrix = { size = [\"1\", \"10\"] } and use \"{size}\" in args, or remove `matrix`".into())));
        }
        let mut keys: Vec<MatrixKey> = Vec::new();
        let mut total: usize = 1;
        for (key, values) in m.get_ref() {
            let k = key.get_ref();
            if !is_ident(k) {
                return Err(self.at(
                    key,
                    format!("matrix key `{k}` is not a valid placeholder name"),
                    Some("use letters, digits, '_' and '-', starting with a letter or '_'".into()),
                ));
            }
            if k == "root" {
                return Err(self.at(
                    key,
                    "`root` cannot be a matrix key: {root} is the spec's folder",
                    Some("rename the key".into()),
                ));
            }
            if values.get_ref().is_empty() {
                return Err(self.at(
                    values,
                    format!("matrix key `{k}` has no values"),
                    Some(format!(
                        "list at least one value, e.g. {k} = [\"1\", \"10\"]"
                    )),
                ));
            }
            let ex = Expander {
                cx: self,
                root,
                vars: &[],
            };
            let mut vals: Vec<(String, String)> = Vec::new();
            for v in values.get_ref() {
                let raw = &v.get_ref().0;
                if vals.iter().any(|(r, _)| r == raw) {
                    return Err(self.at(
                        v,
                        format!("matrix value \"{raw}\" is listed twice for `{k}`"),
                        Some("remove the second one".into()),
                    ));
                }
                let expanded = ex.expand(&Spanned::new(v.span(), raw.clone()), &mut [])?;
                vals.push((raw.clone(), expanded));
            }
            total = total.saturating_mul(vals.len());
            keys.push(MatrixKey {
                key: key.clone(),
                values: vals,
            });
        }
        if total > MAX_MATRIX {
            return Err(self.at(
                m,
                format!("matrix expands into {total} workloads (at most {MAX_MATRIX})"),
                Some("use fewer values per key".into()),
            ));
        }
        // The table's order, not the map's (sorted) order.
        keys.sort_by_key(|k| k.key.span().start);
        Ok(keys)
    }
}

/// One matrix key with its values: (as written, with `{root}` expanded).
struct MatrixKey {
    key: Spanned<String>,
    values: Vec<(String, String)>,
}

/// Every combination of value indices, first key outermost.
fn combinations(matrix: &[MatrixKey]) -> Vec<Vec<usize>> {
    let mut combos: Vec<Vec<usize>> = vec![Vec::new()];
    for k in matrix {
        combos = combos
            .into_iter()
            .flat_map(|c| {
                (0..k.values.len()).map(move |j| {
                    let mut c = c.clone();
                    c.push(j);
                    c
                })
            })
            .collect();
    }
    combos
}

/// Replaces `{root}` and matrix placeholders in one string value.
struct Expander<'a> {
    cx: &'a Cx<'a>,
    root: &'a str,
    vars: &'a [(&'a str, &'a str)],
}

impl Expander<'_> {
    /// `{name}` (a letter or `_`, then letters, digits, `_`, `-`) is a placeholder; `{{name}}`
    /// is a literal `{name}`; any other brace is literal text. `used[i]` is set when
    /// `vars[i]` is used.
    fn expand(&self, v: &Spanned<String>, used: &mut [bool]) -> Result<String, SpecError> {
        let s = v.get_ref();
        let mut out = String::with_capacity(s.len());
        let mut rest = s.as_str();
        while let Some(i) = rest.find('{') {
            out.push_str(&rest[..i]);
            let after = &rest[i + 1..];
            if let Some(inner) = after.strip_prefix('{') {
                let n = ident_len(inner);
                if n > 0 && inner[n..].starts_with("}}") {
                    out.push('{');
                    out.push_str(&inner[..n]);
                    out.push('}');
                    rest = &inner[n + 2..];
                    continue;
                }
            }
            let n = ident_len(after);
            if n == 0 || !after[n..].starts_with('}') {
                out.push('{');
                rest = after;
                continue;
            }
            let name = &after[..n];
            if name == "root" {
                out.push_str(self.root);
            } else if let Some(j) = self.vars.iter().position(|(k, _)| *k == name) {
                out.push_str(self.vars[j].1);
                if let Some(u) = used.get_mut(j) {
                    *u = true;
                }
            } else {
                return Err(self.unknown(v, name));
            }
            rest = &after[n + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }

    fn unknown(&self, v: &Spanned<String>, name: &str) -> SpecError {
        let placeholder = format!("{{{name}}}");
        // Point at the placeholder itself when the value is written literally.
        let span = v.span();
        let offset = self
            .cx
            .text
            .get(span.clone())
            .and_then(|t| t.find(&placeholder))
            .map_or(span.start, |i| span.start + i);
        let mut known: Vec<&str> = vec!["root"];
        known.extend(self.vars.iter().map(|(k, _)| *k));
        let listed = known
            .iter()
            .map(|k| format!("{{{k}}}"))
            .collect::<Vec<_>>()
            .join(", ");
        let mut fix = match did_you_mean(name, &known) {
            Some(k) => format!("did you mean {{{k}}}? known placeholders here: {listed}"),
            None => format!("known placeholders here: {listed}"),
        };
        if self.vars.is_empty() {
            fix.push_str(&format!("; to run once per value add matrix = {{ {name} = [\"a\", \"b\"] }} to the workload"));
        }
        fix.push_str(&format!(
            "; write {{{{{name}}}}} for a literal {placeholder}"
        ));
        self.cx.invalid(
            offset,
            format!("unknown placeholder {placeholder}"),
            Some(fix),
        )
    }
}

fn ident_len(s: &str) -> usize {
    let mut chars = s.char_indices();
    match chars.next() {
        Some((_, c)) if c.is_ascii_alphabetic() || c == '_' => {}
        _ => return 0,
    }
    chars
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
        .map_or(s.len(), |(i, _)| i)
}

fn is_ident(s: &str) -> bool {
    !s.is_empty() && ident_len(s) == s.len()
}

/// 1-based line and column (in characters) of a byte offset.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (
        before.matches('\n').count() + 1,
        before[line_start..].chars().count() + 1,
    )
}

/// Byte offset of the start of a 1-based line.
fn line_start_offset(text: &str, line: usize) -> usize {
    if line <= 1 {
        return 0;
    }
    text.match_indices('\n')
        .nth(line - 2)
        .map_or(text.len(), |(i, _)| i + 1)
}

/// Drops `.` components (lexically; `..` is kept).
fn clean_path(p: &Path) -> PathBuf {
    let cleaned: PathBuf = p
        .components()
        .filter(|c| !matches!(c, std::path::Component::CurDir))
        .collect();
    if cleaned.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        cleaned
    }
}

fn indent(text: &str, prefix: &str) -> String {
    text.lines()
        .map(|l| {
            if l.is_empty() {
                String::new()
            } else {
                format!("{prefix}{l}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A TOML basic string literal.
fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_owned()).to_string()
}

/// Rewords the toml/serde messages users see most into spec terms, with a fix.
fn friendly_toml_message(msg: &str, at_text: &str) -> (String, Option<String>) {
    if let Some(rest) = msg.strip_prefix("unknown field `") {
        let (key, tail) = rest.split_once('`').unwrap_or((rest, ""));
        // serde lists the valid keys between backticks after the unknown one.
        let listed: Vec<&str> = tail.split('`').skip(1).step_by(2).collect();
        let table = TABLES.iter().find(|(_, keys)| {
            let mut a = keys.to_vec();
            let mut b = listed.clone();
            a.sort_unstable();
            b.sort_unstable();
            a == b
        });
        let (place, valid): (&str, Vec<&str>) = match table {
            Some((place, keys)) => (place, keys.to_vec()),
            None => ("here", listed),
        };
        let mut fix = match did_you_mean(key, &valid) {
            Some(k) => format!("did you mean `{k}`? "),
            None => String::new(),
        };
        if let Some((home, _)) = TABLES
            .iter()
            .find(|(p, keys)| *p != place && keys.contains(&key))
        {
            fix.push_str(&format!("`{key}` belongs {home}; "));
        }
        fix.push_str(&format!("valid keys {place}: {}", valid.join(", ")));
        return (format!("unknown key `{key}` {place}"), Some(fix));
    }
    if let Some(rest) = msg.strip_prefix("missing field `") {
        let key = rest.split('`').next().unwrap_or(rest);
        let example = if key == "name" {
            "name = \"my-workload\""
        } else {
            key
        };
        return (
            format!("missing required key `{key}`"),
            Some(format!("add {example} to this table")),
        );
    }
    if msg == "invalid type: map, expected a sequence"
        && at_text.starts_with('[')
        && !at_text.starts_with("[[")
    {
        let name = at_text.trim_matches(['[', ']', ' ']);
        return (
            format!("`{name}` must be an array of tables"),
            Some(format!(
                "write [[{name}]] (double brackets) before each entry"
            )),
        );
    }
    if msg.starts_with("invalid type: string") && msg.ends_with("expected a sequence") {
        return (
            msg.replace("a sequence", "an array"),
            Some(format!("write a list: [{at_text}]")),
        );
    }
    let mut message = msg
        .replace("a sequence", "an array")
        .replace("a map", "a table")
        .replace("expected u32", "expected a whole number of at least 0")
        .replace("expected f64", "expected a number");
    if let Some(i) = message.find("expected struct ") {
        message.replace_range(i + "expected ".len().., "a table");
    }
    (message, None)
}

/// The closest of `candidates` to `word`, when close enough to be a likely typo.
fn did_you_mean<'c>(word: &str, candidates: &[&'c str]) -> Option<&'c str> {
    let word = word.to_ascii_lowercase().replace('_', "-");
    candidates
        .iter()
        .map(|c| (edit_distance(&word, c), *c))
        .filter(|(d, c)| *d <= (c.chars().count() / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

fn choices_fix(word: &str, choices: &[&str], what: &str) -> String {
    let listed = choices
        .iter()
        .map(|c| format!("\"{c}\""))
        .collect::<Vec<_>>()
        .join(", ");
    match did_you_mean(word, choices) {
        Some(c) => format!("did you mean \"{c}\"? {what}: {listed}"),
        None => format!("{what}: {listed}"),
    }
}

/// Edit distance counting a swap of two neighbouring characters as one edit
/// (optimal string alignment), so "bni" is one edit from "bin".
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // d[i][j]: distance between a[..i] and b[..j].
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A spec folder with `optimize.toml` parsed from `text`.
    struct Fixture {
        dir: tempfile::TempDir,
    }

    impl Fixture {
        fn new() -> Self {
            Fixture {
                dir: tempfile::tempdir().expect("tempdir"),
            }
        }
        fn root(&self) -> PathBuf {
            self.dir.path().canonicalize().expect("canonical tempdir")
        }
        fn file(&self, rel: &str) -> PathBuf {
            let p = self.dir.path().join(rel);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(&p, "input\n").expect("write");
            p
        }
        fn parse(&self, text: &str) -> Result<Spec, SpecError> {
            parse(text, &self.dir.path().join(SPEC_FILE))
        }
        fn ok(&self, text: &str) -> Spec {
            match self.parse(text) {
                Ok(s) => s,
                Err(e) => panic!("expected a valid spec, got:\n{e}"),
            }
        }
        /// (line, col, message, fix) of the error `text` must produce.
        fn err(&self, text: &str) -> (usize, usize, String, String) {
            match self.parse(text) {
                Ok(_) => panic!("expected an error for:\n{text}"),
                Err(SpecError::Invalid {
                    line,
                    col,
                    message,
                    fix,
                    ..
                }) => (line, col, message, fix.unwrap_or_default()),
                Err(e) => panic!("expected SpecError::Invalid, got {e:?}"),
            }
        }
    }

    const ONE: &str = "[[workload]]\nname = \"w\"\n";

    #[test]
    fn defaults() {
        let f = Fixture::new();
        let spec = f.ok(ONE);
        assert_eq!(spec.root, f.root());
        assert_eq!(spec.path, f.dir.path().join(SPEC_FILE));
        assert_eq!(spec.bin, None);
        assert_eq!(spec.package, None);
        assert_eq!(spec.stages.try_, DEFAULT_TRY.to_vec());
        assert_eq!(spec.stages.profile, ProfileChoice::Preset("max".into()));
        assert_eq!(spec.stages.cpu, None);
        assert!(!spec.stages.allow_panic_abort);
        assert_eq!(spec.stages.bolt_mode, BoltMode::Auto);
        assert_eq!(spec.stages.bolt_args, None);
        assert_eq!(spec.bench.max_time, Duration::from_secs(30));
        assert_eq!(spec.bench.margin, 0.01);
        assert_eq!(spec.bench.warmup, 1);
        assert_eq!(spec.bench.min_runs, 5);
        assert!(!spec.verify.tests);
        assert_eq!(spec.workloads.len(), 1);
        let w = &spec.workloads[0];
        assert_eq!(w.name, "w");
        assert!(w.args.is_empty());
        assert_eq!(w.stdin, None);
        assert!(w.env.is_empty());
        assert_eq!(w.cwd, f.root());
        assert_eq!(w.timeout, Duration::from_secs(600));
        assert!(w.train && w.eval);
        assert_eq!(w.expect, Expect::Exact);
        assert!(w.files.is_empty());
        assert!(!w.sort_lines && !w.stderr);
        assert_eq!(w.line, 1);
    }

    #[test]
    fn every_key_set() {
        let f = Fixture::new();
        f.file("data/in.txt");
        std::fs::create_dir(f.dir.path().join("work")).expect("mkdir");
        let spec = f.ok(r#"
bin = "tool"
package = "pkg"

[stages]
try = ["profile", "pgo"]
profile = { lto = "fat", codegen-units = 1, opt-level = 3, panic = "abort" }
cpu = ["x86-64-v3", "native"]
allow-panic-abort = true
bolt-mode = "instrument"
bolt-args = ["-reorder-blocks=ext-tsp"]

[bench]
max-time = "2m"
margin = 0.02
warmup = 3
min-runs = 10

[verify]
tests = true

[[workload]]
name = "big"
args = ["--in", "data/in.txt"]
stdin = "data/in.txt"
env = { RUST_LOG = "off" }
cwd = "work"
timeout = "500ms"
use = ["eval"]
expect = "exit-code"
files = ["out.json"]
sort-lines = true
stderr = true

[[workload]]
name = "train"
use = ["train"]
"#);
        let root = f.root();
        assert_eq!(spec.bin.as_deref(), Some("tool"));
        assert_eq!(spec.package.as_deref(), Some("pkg"));
        assert_eq!(spec.stages.try_, vec![StageName::Profile, StageName::Pgo]);
        assert!(spec.stages.tries(StageName::Baseline) && !spec.stages.tries(StageName::Cpu));
        let ProfileChoice::Overrides(o) = &spec.stages.profile else {
            panic!("expected overrides, got {:?}", spec.stages.profile)
        };
        assert_eq!(
            o.keys().collect::<Vec<_>>(),
            ["codegen-units", "lto", "opt-level", "panic"]
        );
        assert_eq!(o["lto"], toml::Value::String("fat".into()));
        assert_eq!(o["codegen-units"], toml::Value::Integer(1));
        assert_eq!(
            spec.stages.cpu,
            Some(vec!["x86-64-v3".to_owned(), "native".to_owned()])
        );
        assert!(spec.stages.allow_panic_abort);
        assert_eq!(spec.stages.bolt_mode, BoltMode::Instrument);
        assert_eq!(
            spec.stages.bolt_args,
            Some(vec!["-reorder-blocks=ext-tsp".to_owned()])
        );
        assert_eq!(spec.bench.max_time, Duration::from_secs(120));
        assert_eq!(spec.bench.margin, 0.02);
        assert_eq!((spec.bench.warmup, spec.bench.min_runs), (3, 10));
        assert!(spec.verify.tests);
        let w = &spec.workloads[0];
        assert_eq!(w.args, ["--in", "data/in.txt"]);
        assert_eq!(w.stdin, Some(root.join("data/in.txt")));
        assert_eq!(w.env.get("RUST_LOG").map(String::as_str), Some("off"));
        assert_eq!(w.cwd, root.join("work"));
        assert_eq!(w.timeout, Duration::from_millis(500));
        assert!(!w.train && w.eval);
        assert_eq!(w.expect, Expect::ExitCode);
        assert_eq!(w.files, [PathBuf::from("out.json")]);
        assert!(w.sort_lines && w.stderr);
        assert_eq!(w.line, 22);
        assert!(spec.workloads[1].train && !spec.workloads[1].eval);
        assert_eq!(spec.workloads[1].line, 35);
    }

    #[test]
    fn every_expect_form() {
        let f = Fixture::new();
        let cases: [(&str, Expect); 6] = [
            (r#""exact""#, Expect::Exact),
            (r#""exit-code""#, Expect::ExitCode),
            ("{ numeric = 0.01 }", Expect::Numeric(0.01)),
            ("{ numeric = 0 }", Expect::Numeric(0.0)),
            ("{ numeric-abs = 1e-9 }", Expect::NumericAbs(1e-9)),
            (
                r#"{ ignore = '^took \d+ms$' }"#,
                Expect::Ignore(r"^took \d+ms$".into()),
            ),
        ];
        for (text, want) in cases {
            let spec = f.ok(&format!("{ONE}expect = {text}\n"));
            assert_eq!(spec.workloads[0].expect, want, "expect = {text}");
        }
        // A table header works as well as an inline table.
        let spec = f.ok(&format!("{ONE}[workload.expect]\nnumeric = 0.5\n"));
        assert_eq!(spec.workloads[0].expect, Expect::Numeric(0.5));
    }

    #[test]
    fn bad_expect_forms() {
        let f = Fixture::new();
        let (line, col, msg, fix) = f.err(&format!("{ONE}expect = \"exakt\"\n"));
        assert_eq!((line, col), (3, 10));
        assert_eq!(msg, "unknown expect mode \"exakt\"");
        assert!(fix.starts_with("did you mean \"exact\"?"), "{fix}");
        let (line, col, msg, fix) = f.err(&format!("{ONE}expect = \"numeric\"\n"));
        assert_eq!((line, col), (3, 10));
        assert!(msg.contains("needs a tolerance"), "{msg}");
        assert_eq!(fix, "write expect = { numeric = 0.01 }");
        let (line, col, msg, _) = f.err(&format!(
            "{ONE}expect = {{ numeric = 0.1, ignore = \"x\" }}\n"
        ));
        assert_eq!((line, col), (3, 10));
        assert_eq!(msg, "expect takes exactly one mode, found several");
        let (line, col, msg, fix) = f.err(&format!("{ONE}expect = {{ numerik = 0.1 }}\n"));
        assert_eq!((line, col), (3, 12));
        assert_eq!(msg, "unknown key `numerik` in the expect table");
        assert!(fix.starts_with("did you mean `numeric`?"), "{fix}");
        let (line, col, msg, _) = f.err(&format!("{ONE}expect = {{ numeric = -1 }}\n"));
        assert_eq!((line, col), (3, 22));
        assert!(msg.starts_with("tolerance must be"), "{msg}");
        let (line, col, msg, _) = f.err(&format!("{ONE}expect = 3\n"));
        assert_eq!((line, col), (3, 10));
        assert!(
            msg.starts_with("invalid type: integer `3`, expected \"exact\""),
            "{msg}"
        );
    }

    #[test]
    fn unknown_top_level_key() {
        let f = Fixture::new();
        let (line, col, msg, fix) = f.err(&format!("bin = \"x\"\nbni = \"y\"\n{ONE}"));
        assert_eq!((line, col), (2, 1));
        assert_eq!(msg, "unknown key `bni` at the top level");
        assert_eq!(
            fix,
            "did you mean `bin`? valid keys at the top level: bin, package, stages, bench, verify, workload"
        );
        let e = f
            .parse(&format!("bin = \"x\"\nbni = \"y\"\n{ONE}"))
            .unwrap_err();
        let shown = e.to_string();
        assert!(shown.ends_with("optimize.toml:2:1: unknown key `bni` at the top level\n  fix: did you mean `bin`? valid keys at the top level: bin, package, stages, bench, verify, workload"), "{shown}");
        // A key from another table says where it belongs.
        let (line, col, _, fix) = f.err(&format!("margin = 0.1\n{ONE}"));
        assert_eq!((line, col), (1, 1));
        assert!(fix.starts_with("`margin` belongs in [bench];"), "{fix}");
    }

    #[test]
    fn unknown_key_in_workload() {
        let f = Fixture::new();
        let (line, col, msg, fix) =
            f.err("bin = \"x\"\n\n[[workload]]\nname = \"a\"\n  argz = [\"1\"]\n");
        assert_eq!((line, col), (5, 3));
        assert_eq!(msg, "unknown key `argz` in [[workload]]");
        assert!(
            fix.starts_with("did you mean `args`? valid keys in [[workload]]: name, args, stdin,"),
            "{fix}"
        );
        // snake_case instead of kebab-case
        let (line, col, _, fix) = f.err(&format!("{ONE}sort_lines = true\n"));
        assert_eq!((line, col), (3, 1));
        assert!(fix.starts_with("did you mean `sort-lines`?"), "{fix}");
        // Unknown keys in other tables.
        let (line, col, msg, fix) = f.err(&format!("[bench]\nmax_time = \"1s\"\n{ONE}"));
        assert_eq!((line, col), (2, 1));
        assert_eq!(msg, "unknown key `max_time` in [bench]");
        assert!(fix.starts_with("did you mean `max-time`?"), "{fix}");
        let (line, col, msg, _) = f.err(&format!(
            "[stages]\nprofile = {{ lto = true, opt = 3 }}\n{ONE}"
        ));
        assert_eq!((line, col), (2, 25));
        assert_eq!(msg, "unknown key `opt` in the [stages] profile table");
    }

    #[test]
    fn malformed_toml() {
        let f = Fixture::new();
        let (line, col, msg, _) = f.err("bin = \"x\"\n[[workload]]\nname = \"a\nargs = []\n");
        assert_eq!((line, col), (3, 10), "{msg}");
        let (line, col, msg, _) = f.err("bin = \"x\"\nbin = \"y\"\n");
        assert_eq!((line, col), (2, 1));
        assert!(msg.contains("duplicate key"), "{msg}");
        let (line, col, msg, _) = f.err("bin = 3\n[[workload]]\nname = \"a\"\n");
        assert_eq!((line, col), (1, 7));
        assert_eq!(msg, "invalid type: integer `3`, expected a string");
        let (line, col, msg, fix) = f.err(&format!("{ONE}args = \"--help\"\n"));
        assert_eq!((line, col), (3, 8));
        assert_eq!(msg, "invalid type: string \"--help\", expected an array");
        assert_eq!(fix, "write a list: [\"--help\"]");
        // [workload] instead of [[workload]]
        let (line, col, msg, fix) = f.err("bin = \"x\"\n[workload]\nname = \"a\"\n");
        assert_eq!((line, col), (2, 1));
        assert_eq!(msg, "`workload` must be an array of tables");
        assert_eq!(
            fix,
            "write [[workload]] (double brackets) before each entry"
        );
        let (line, col, msg, fix) = f.err("[[workload]]\nargs = []\n");
        assert_eq!((line, col), (1, 1));
        assert_eq!(msg, "missing required key `name`");
        assert_eq!(fix, "add name = \"my-workload\" to this table");
    }

    #[test]
    fn no_workloads() {
        let f = Fixture::new();
        let (line, col, msg, fix) = f.err("bin = \"x\"\n");
        assert_eq!((line, col), (1, 1));
        assert!(msg.starts_with("no workloads"), "{msg}");
        assert!(
            fix.contains("[[workload]]\n      name = \"typical\""),
            "{fix}"
        );
    }

    #[test]
    fn duplicate_workload_name() {
        let f = Fixture::new();
        let (line, col, msg, _) =
            f.err("[[workload]]\nname = \"a\"\n\n[[workload]]\nname = \"a\"\n");
        assert_eq!((line, col), (5, 8));
        assert_eq!(
            msg,
            "duplicate workload name \"a\" (first defined on line 1)"
        );
        let (line, col, msg, _) = f.err(&format!("{ONE}[[workload]]\nname = \"  \"\n"));
        assert_eq!((line, col), (4, 8));
        assert_eq!(msg, "workload `name` is empty");
    }

    #[test]
    fn bad_duration() {
        let f = Fixture::new();
        let (line, col, msg, fix) = f.err(&format!("{ONE}timeout = \"10 parsecs\"\n"));
        assert_eq!((line, col), (3, 11));
        assert!(
            msg.starts_with("`timeout` is not a duration: \"10 parsecs\""),
            "{msg}"
        );
        assert!(fix.contains("\"30s\""), "{fix}");
        let (line, col, msg, _) = f.err(&format!("[bench]\nmax-time = \"0s\"\n{ONE}"));
        assert_eq!((line, col), (2, 12));
        assert_eq!(msg, "`max-time` must be longer than zero");
        let (line, col, _, _) = f.err(&format!("[bench]\nmax-time = 30\n{ONE}"));
        assert_eq!((line, col), (2, 12));
    }

    #[test]
    fn bad_regex() {
        let f = Fixture::new();
        let (line, col, msg, _) = f.err(&format!("{ONE}expect = {{ ignore = \"a(b\" }}\n"));
        assert_eq!((line, col), (3, 21));
        assert!(
            msg.starts_with("`ignore` is not a valid regular expression"),
            "{msg}"
        );
    }

    #[test]
    fn bench_and_stage_values() {
        let f = Fixture::new();
        let (line, col, msg, _) = f.err(&format!("[bench]\nmargin = 0.5\n{ONE}"));
        assert_eq!((line, col), (2, 10));
        assert!(
            msg.starts_with("`margin` must be between 0 and 0.5"),
            "{msg}"
        );
        let (line, col, _, _) = f.err(&format!("[bench]\nmargin = 0\n{ONE}"));
        assert_eq!((line, col), (2, 10));
        let (line, col, msg, _) = f.err(&format!("[bench]\nwarmup = -1\n{ONE}"));
        assert_eq!((line, col), (2, 10));
        assert!(msg.contains("expected a whole number"), "{msg}");
        let (line, col, msg, _) = f.err(&format!(
            "[stages]\ntry = [\"profile\", \"baseline\"]\n{ONE}"
        ));
        assert_eq!((line, col), (2, 19));
        assert!(msg.starts_with("`baseline` cannot be listed"), "{msg}");
        let (line, col, msg, _) = f.err(&format!("[stages]\ntry = [\"pgo\", \"pgo\"]\n{ONE}"));
        assert_eq!((line, col), (2, 15));
        assert_eq!(msg, "stage \"pgo\" is listed twice");
        let (line, col, msg, fix) = f.err(&format!("[stages]\ntry = [\"pgo\", \"cpus\"]\n{ONE}"));
        assert_eq!((line, col), (2, 15));
        assert_eq!(msg, "unknown stage \"cpus\"");
        assert_eq!(
            fix,
            "did you mean \"cpu\"? stages: \"profile\", \"cpu\", \"pgo\", \"bolt\""
        );
        let (_, _, msg, fix) = f.err(&format!("[stages]\ntry = [\"bolt\", \"pgo\"]\n{ONE}"));
        assert!(
            msg.starts_with("stage \"pgo\" must come before \"bolt\""),
            "{msg}"
        );
        assert!(fix.ends_with("try = [\"pgo\", \"bolt\"]"), "{fix}");
        let spec = f.ok(&format!("[stages]\ntry = []\n{ONE}"));
        assert!(spec.stages.try_.is_empty());
        let (line, col, msg, _) = f.err(&format!("[stages]\nprofile = \"fast\"\n{ONE}"));
        assert_eq!((line, col), (2, 11));
        assert_eq!(msg, "unknown profile preset \"fast\"");
        for p in PROFILE_PRESETS {
            let spec = f.ok(&format!("[stages]\nprofile = \"{p}\"\n{ONE}"));
            assert_eq!(spec.stages.profile, ProfileChoice::Preset(p.into()));
        }
        let (line, col, msg, _) = f.err(&format!("[stages]\nprofile = {{ opt-level = 4 }}\n{ONE}"));
        assert_eq!((line, col), (2, 25));
        assert_eq!(msg, "invalid profile value opt-level = 4");
        let (line, col, _, fix) = f.err(&format!(
            "[stages]\nprofile = {{ panic = \"abort\" }}\n{ONE}"
        ));
        assert_eq!((line, col), (2, 21));
        assert!(fix.contains("allow-panic-abort = true"), "{fix}");
        let (line, col, msg, _) = f.err(&format!("[stages]\nbolt-mode = \"lbr\"\n{ONE}"));
        assert_eq!((line, col), (2, 13));
        assert_eq!(msg, "unknown bolt mode \"lbr\"");
        let (line, col, _, _) = f.err(&format!("[stages]\ncpu = []\n{ONE}"));
        assert_eq!((line, col), (2, 7));
    }

    #[test]
    fn use_values() {
        let f = Fixture::new();
        let (line, col, msg, _) = f.err(&format!("{ONE}use = []\n"));
        assert_eq!((line, col), (3, 7));
        assert!(msg.starts_with("`use` is empty"), "{msg}");
        let (line, col, msg, fix) = f.err(&format!("{ONE}use = [\"eval\", \"trian\"]\n"));
        assert_eq!((line, col), (3, 16));
        assert_eq!(msg, "unknown `use` value \"trian\"");
        assert!(fix.starts_with("did you mean \"train\"?"), "{fix}");
        // Nothing to measure.
        let (line, col, msg, _) = f.err(&format!("{ONE}use = [\"train\"]\n"));
        assert_eq!((line, col), (1, 1));
        assert!(msg.starts_with("no workload is used for \"eval\""), "{msg}");
        // Nothing to train pgo/bolt on, unless they are not tried.
        let (_, _, msg, _) = f.err(&format!("{ONE}use = [\"eval\"]\n"));
        assert!(
            msg.starts_with("no workload is used for \"train\""),
            "{msg}"
        );
        f.ok(&format!(
            "[stages]\ntry = [\"profile\", \"cpu\"]\n{ONE}use = [\"eval\"]\n"
        ));
    }

    #[test]
    fn matrix_expansion() {
        let f = Fixture::new();
        let spec = f.ok(
            "[[workload]]\nname = \"parse\"\nargs = [\"--size\", \"{size}\", \"--mode={mode}\"]\n\
             env = { MODE = \"{mode}\" }\nmatrix = { size = [\"1\", \"10\"], mode = [\"fast\", \"slow\"] }\n",
        );
        let names: Vec<&str> = spec.workloads.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "parse[size=1,mode=fast]",
                "parse[size=1,mode=slow]",
                "parse[size=10,mode=fast]",
                "parse[size=10,mode=slow]",
            ]
        );
        let args: Vec<Vec<String>> = spec.workloads.iter().map(|w| w.args.clone()).collect();
        assert_eq!(
            args,
            [
                ["--size", "1", "--mode=fast"],
                ["--size", "1", "--mode=slow"],
                ["--size", "10", "--mode=fast"],
                ["--size", "10", "--mode=slow"],
            ]
        );
        assert_eq!(spec.workloads[3].env["MODE"], "slow");
        assert!(spec.workloads.iter().all(|w| w.line == 1));
        // Keys follow the table's order, not alphabetical order; numbers are accepted as text.
        let spec = f.ok(
            "[[workload]]\nname = \"w\"\nargs = [\"{z}{a}\"]\n[workload.matrix]\nz = [1, 2]\na = [\"x\"]\n",
        );
        let names: Vec<&str> = spec.workloads.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(names, ["w[z=1,a=x]", "w[z=2,a=x]"]);
        assert_eq!(spec.workloads[1].args, ["2x"]);
        // A name that mentions a key takes its value; the other keys are appended.
        let spec = f.ok(
            "[[workload]]\nname = \"eval-{script}\"\nargs = [\"{script}.rhai\", \"{n}\"]\nmatrix = { script = [\"primes\", \"fib\"], n = [\"3\"] }\n",
        );
        let names: Vec<&str> = spec.workloads.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(names, ["eval-primes[n=3]", "eval-fib[n=3]"]);
        // A matrix name can clash with a plain workload.
        let (line, col, msg, _) = f.err(&format!(
            "{ONE}[[workload]]\nname = \"w\"\nargs = [\"{{n}}\"]\nmatrix = {{ n = [\"1\"] }}\n[[workload]]\nname = \"w[n=1]\"\n"
        ));
        assert_eq!((line, col), (8, 8));
        assert_eq!(
            msg,
            "duplicate workload name \"w[n=1]\" (first defined on line 3)"
        );
    }

    #[test]
    fn matrix_errors() {
        let f = Fixture::new();
        let (line, col, msg, _) = f.err(&format!(
            "{ONE}args = [\"{{a}}\"]\nmatrix = {{ a = [\"1\"], b = [\"2\"] }}\n"
        ));
        assert_eq!((line, col), (4, 23));
        assert!(msg.starts_with("matrix key `b` is not used"), "{msg}");
        let (line, col, msg, _) =
            f.err(&format!("{ONE}args = [\"{{a}}\"]\nmatrix = {{ a = [] }}\n"));
        assert_eq!((line, col), (4, 16));
        assert_eq!(msg, "matrix key `a` has no values");
        let (line, col, msg, _) = f.err(&format!(
            "{ONE}args = [\"{{a}}\"]\nmatrix = {{ a = [\"1\", \"1\"] }}\n"
        ));
        assert_eq!((line, col), (4, 22));
        assert_eq!(msg, "matrix value \"1\" is listed twice for `a`");
        let (line, col, _, _) = f.err(&format!("{ONE}matrix = {{ root = [\"1\"] }}\n"));
        assert_eq!((line, col), (3, 12));
    }

    #[test]
    fn root_expansion() {
        let f = Fixture::new();
        f.file("data/in.txt");
        let root = f.root();
        let r = root.display().to_string();
        let spec = f.ok(
            "[[workload]]\nname = \"w\"\nargs = [\"{root}/data/in.txt\", \"x{root}y\"]\n\
             stdin = \"{root}/data/in.txt\"\nenv = { DATA = \"{root}/data\" }\ncwd = \"{root}/data\"\n\
             files = [\"{root}/out.txt\"]\n",
        );
        let w = &spec.workloads[0];
        assert_eq!(w.args, [format!("{r}/data/in.txt"), format!("x{r}y")]);
        assert_eq!(w.stdin, Some(root.join("data/in.txt")));
        assert_eq!(w.env["DATA"], format!("{r}/data"));
        assert_eq!(w.cwd, root.join("data"));
        assert_eq!(w.files, [root.join("out.txt")]);
        // In matrix values too, and relative paths resolve against the spec's folder.
        let spec = f.ok(
            "[[workload]]\nname = \"w\"\nstdin = \"{f}\"\ncwd = \"./data\"\nmatrix = { f = [\"{root}/data/in.txt\", \"data/in.txt\"] }\n",
        );
        assert_eq!(spec.workloads[0].stdin, Some(root.join("data/in.txt")));
        assert_eq!(spec.workloads[1].stdin, Some(root.join("data/in.txt")));
        assert_eq!(spec.workloads[0].cwd, root.join("data"));
        assert_eq!(spec.workloads[0].name, "w[f={root}/data/in.txt]");
    }

    #[test]
    fn literal_braces() {
        let f = Fixture::new();
        let spec = f.ok(&format!(
            "{ONE}args = ['a{{3}}', '{{\"k\": 1}}', '{{}}', '{{{{size}}}}', 'x{{']\n"
        ));
        assert_eq!(
            spec.workloads[0].args,
            ["a{3}", "{\"k\": 1}", "{}", "{size}", "x{"]
        );
    }

    #[test]
    fn unknown_placeholder() {
        let f = Fixture::new();
        let (line, col, msg, fix) = f.err(&format!("{ONE}args = [\"--in\", \"{{roots}}/x\"]\n"));
        assert_eq!((line, col), (3, 18));
        assert_eq!(msg, "unknown placeholder {roots}");
        assert!(
            fix.starts_with("did you mean {root}? known placeholders here: {root};"),
            "{fix}"
        );
        let (line, col, msg, fix) = f.err(&format!(
            "{ONE}env = {{ A = \"1\", B = \"-{{sise}}\" }}\nargs = [\"{{size}}\"]\nmatrix = {{ size = [\"1\"] }}\n"
        ));
        assert_eq!((line, col), (3, 24));
        assert_eq!(msg, "unknown placeholder {sise}");
        assert!(
            fix.starts_with("did you mean {size}? known placeholders here: {root}, {size};"),
            "{fix}"
        );
    }

    #[test]
    fn missing_stdin_and_cwd() {
        let f = Fixture::new();
        let root = f.root();
        let (line, col, msg, fix) = f.err(&format!("{ONE}stdin = \"data/missing.txt\"\n"));
        assert_eq!((line, col), (3, 9));
        assert_eq!(
            msg,
            format!(
                "stdin file {} does not exist",
                root.join("data/missing.txt").display()
            )
        );
        assert!(fix.contains(&root.display().to_string()), "{fix}");
        let (line, col, msg, _) = f.err(&format!("{ONE}cwd = \"nowhere\"\n"));
        assert_eq!((line, col), (3, 7));
        assert_eq!(
            msg,
            format!("cwd {} does not exist", root.join("nowhere").display())
        );
        f.file("plain");
        let (_, _, msg, _) = f.err(&format!("{ONE}cwd = \"plain\"\n"));
        assert!(msg.ends_with("plain is not a directory"), "{msg}");
    }

    #[test]
    fn skeleton_parses() {
        let f = Fixture::new();
        let text = skeleton("my-tool");
        let spec = f.ok(&text);
        assert_eq!(spec.bin.as_deref(), Some("my-tool"));
        assert_eq!(spec.workloads.len(), 2);
        let (train, eval) = (&spec.workloads[0], &spec.workloads[1]);
        assert!(train.train && !train.eval);
        assert!(!eval.train && eval.eval);
        assert_eq!(train.args, ["--help"]);
        for key in [
            "try",
            "profile",
            "cpu",
            "allow-panic-abort",
            "bolt-mode",
            "max-time",
            "margin",
        ] {
            assert!(
                text.contains(&format!("# {key} = ")),
                "skeleton does not show `{key}`"
            );
        }
        // Uncommenting the commented tables must still parse.
        let uncommented = text
            .replace("# [stages]", "[stages]")
            .replace("# try = ", "try = ")
            .replace("# profile = \"max\"", "profile = \"max\"")
            .replace("# bolt-mode = ", "bolt-mode = ")
            .replace("# [bench]", "[bench]")
            .replace("# max-time = ", "max-time = ")
            .replace("# margin = ", "margin = ");
        f.ok(&uncommented);
        // Names that need escaping stay valid TOML.
        assert_eq!(f.ok(&skeleton("a\"b")).bin.as_deref(), Some("a\"b"));
    }

    #[test]
    fn key_lists_match_the_structs() {
        // Each table's "unknown key" message must list exactly the keys of its constant.
        let f = Fixture::new();
        for (text, place) in [
            (format!("zzz = 1\n{ONE}"), "at the top level"),
            (format!("[stages]\nzzz = 1\n{ONE}"), "in [stages]"),
            (format!("[bench]\nzzz = 1\n{ONE}"), "in [bench]"),
            (format!("[verify]\nzzz = 1\n{ONE}"), "in [verify]"),
            (format!("{ONE}zzz = 1\n"), "in [[workload]]"),
            (
                format!("[stages]\nprofile = {{ zzz = 1 }}\n{ONE}"),
                "in the [stages] profile table",
            ),
            (
                format!("{ONE}expect = {{ zzz = 1 }}\n"),
                "in the expect table",
            ),
        ] {
            let (_, _, msg, _) = f.err(&text);
            assert_eq!(msg, format!("unknown key `zzz` {place}"));
        }
    }

    #[test]
    fn spec_root_of_relative_path() {
        let cwd = std::env::current_dir()
            .expect("cwd")
            .canonicalize()
            .expect("canonical");
        assert_eq!(spec_root(Path::new("optimize.toml")), cwd);
        assert_eq!(
            spec_root(Path::new("no/such/dir/optimize.toml")),
            cwd.join("no/such/dir")
        );
    }

    #[test]
    fn line_col_counts_characters() {
        assert_eq!(line_col("ab\ncd", 0), (1, 1));
        assert_eq!(line_col("ab\ncd", 4), (2, 2));
        assert_eq!(line_col("é = 1\nx", 3), (1, 3));
        assert_eq!(line_col("ab", 99), (1, 3));
    }

    #[test]
    fn file_stem_is_safe() {
        let f = Fixture::new();
        let spec = f.ok(
            "[[workload]]\nname = \"w\"\nargs = [\"{p}\"]\nmatrix = { p = [\"a/b c\", \"..\"] }\n",
        );
        assert_eq!(spec.workloads[0].file_stem(), "w[p=a_b_c]");
        assert_eq!(spec.workloads[1].file_stem(), "w[p=..]");
    }
}
