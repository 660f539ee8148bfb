//! `optimize.toml` (spec v1): the public types, loading and parsing, defaults, and the
//! commented skeleton `init` writes.
//!
//! Owns: what a spec *is* once read. The file as written lives in `raw`; turning it into
//! a [`Spec`], with file:line:col errors and fixes, is `validate`'s job (the `Validator`);
//! `matrix` and placeholder expansion live in `matrix`; `[check]` and `[release]` have their
//! own submodules (`check`, `release`). Must not: run anything or touch cargo.

pub(crate) mod bounds;
pub(crate) use metric::{Better, Metric};
mod check;
mod harness;
pub(crate) mod host;
mod matrix;
mod metric;
mod raw;
mod release;
mod validate;

#[cfg(test)]
mod fixture;
#[cfg(test)]
mod reference;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub(crate) use check::{CheckConfig, WorkloadLimit};
pub(crate) use raw::PROFILE_KEYS;
pub(crate) use release::Flavor;
pub(crate) use release::ReleaseSpec;
use validate::Validator;

use crate::stages::StageName;
/// File name looked up next to the package's Cargo.toml.
pub(crate) const SPEC_FILE: &str = "optimize.toml";

/// A validated spec with every workload expanded (matrix) and every path made absolute.
#[derive(Debug, Clone)]
pub(crate) struct Spec {
    /// The file it was read from.
    pub path: PathBuf,
    pub bin: Option<String>,
    pub package: Option<String>,
    /// The harness the workloads run (`cargo = "bench" | "test"`), instead of a binary.
    pub harness: Option<Harness>,
    pub stages: Stages,
    pub bench: BenchConfig,
    pub verify: VerifyConfig,
    /// `[cache] max-size`: what later runs reuse is trimmed to this at the end of a run.
    pub cache_max_bytes: u64,
    /// `[check]` and the workloads' `budget`s: what `cargo optimize check` fails on.
    pub check: CheckConfig,
    /// `[release]`: what `cargo optimize release` builds (`Default` when absent).
    pub release: ReleaseSpec,
    pub workloads: Vec<Workload>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ProfileChoice {
    /// A named preset: "max", "balanced", "size".
    Preset(String),
    /// Inline overrides, key (cargo profile key such as "lto") to TOML value.
    Overrides(BTreeMap<String, toml::Value>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BoltMode {
    Auto,
    Instrument,
    Perf,
}

#[derive(Debug, Clone)]
pub(crate) struct Stages {
    /// Stages to try, in order (baseline is implicit and always first).
    pub try_: Vec<StageName>,
    /// `try` was written in the spec (not the default list): its stages were asked for.
    pub try_explicit: bool,
    pub profile: ProfileChoice,
    /// `None`: choose automatically (highest x86-64 level, then native).
    pub cpu: Option<Vec<String>>,
    /// The spec line of each `cpu` entry (for messages about a name rustc does not know).
    pub cpu_lines: Vec<usize>,
    pub allow_panic_abort: bool,
    /// `[stages] fp`: the LLVM floating-point flags the fp stage tries (`None`: the
    /// default ones this rustc's LLVM accepts, `stage::fp::DEFAULT_FLAGS`).
    pub fp: Option<Vec<String>>,
    /// The spec line of each `fp` entry (for messages about a flag LLVM does not accept).
    pub fp_lines: Vec<usize>,
    /// `[stages] alloc`: the allocators the alloc stage tries (`cargo::alloc::ALLOCATORS`
    /// names), in order; empty: none.
    pub alloc: Vec<String>,
    /// The spec line of each `alloc` entry.
    pub alloc_lines: Vec<usize>,
    pub bolt_mode: BoltMode,
    /// `None`: the built-in BOLT optimization flags.
    pub bolt_args: Option<Vec<String>>,
    /// `--thorough` (not a spec key): the profile stage searches its whole space, and the
    /// alloc stage builds every allocator, previewed or not.
    pub thorough: bool,
}

#[derive(Debug, Clone)]
pub struct BenchConfig {
    /// Per workload per comparison.
    pub max_time: Duration,
    /// Equivalence margin for verdicts (0.01 = 1 %).
    pub margin: f64,
    pub warmup: u32,
    /// Pairs of runs before a workload's first look at the data (`min-runs`); `None` when
    /// the spec leaves it to the comparison (see `bench::BenchOptions::from_config` and
    /// `::for_ladder`).
    pub min_runs: Option<u32>,
    /// `budget`: the wall time a whole run may take (`pipeline::budget`); `None`: the
    /// default.
    pub budget: Option<Duration>,
    /// `runner-is-native`: cargo's runner for the target (`target.<triple>.runner`) runs
    /// the binaries on real hardware of that target, so timing through it means something
    /// (else the ladder refuses to time through a runner: an emulator's times are not the
    /// target's).
    pub runner_is_native: bool,
    /// `objective = "size"`: among candidates within the margin of each other, the ladder
    /// keeps the smaller binary (`false`: time only, the default).
    pub objective_size: bool,
    /// `max-slowdown-per-workload`: what ships may be surely slower than the baseline on
    /// no workload by more than this fraction (`0.05`: a workload's whole interval above
    /// 1.05 refuses it); `None`: any workload may be slower while the geometric mean is
    /// faster (the ship line names it).
    pub max_slowdown_per_workload: Option<f64>,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct VerifyConfig {
    /// Run the crate's own tests with each candidate's settings.
    pub tests: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Expect {
    /// stdout and exit status equal.
    Exact,
    /// exit status only.
    ExitCode,
    /// the run succeeds (exit 0), its output not compared: a harness's (`cargo = "bench"`
    /// or `"test"`) default, since it prints its own timings. A non-zero exit on the
    /// baseline is a failure, as for `Exact`, never a status to reproduce.
    Success,
    /// numbers agree within this relative tolerance; other tokens equal.
    Numeric(f64),
    /// numbers agree within this absolute tolerance; other tokens equal.
    NumericAbs(f64),
    /// lines matching the regex are masked, the rest compared exactly.
    Ignore(String),
}

impl Expect {
    /// Whether a run's outputs are compared (else only its exit status).
    pub(crate) fn compares_outputs(&self) -> bool {
        !matches!(self, Expect::ExitCode | Expect::Success)
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Workload {
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
    /// `pin = false`: its timed runs are never pinned to one CPU (`bench::pin`; by default
    /// a workload that keeps one core busy at a time is).
    pub pin: bool,
    /// How each run starts: with the program and its inputs in the page cache as a previous
    /// run left them (`warm`, the default), or evicted from it first (`cold`).
    pub start: Start,
    /// `cargo = "bench" | "test"`: run the package's harness (with `--bench` first for a
    /// bench) instead of its binary.
    pub cargo: Option<HarnessKind>,
    /// `metric = { … }`: the figure read from each timed run's output, compared instead of
    /// its wall time.
    pub metric: Option<Metric>,
    /// 1-based line of the `[[workload]]` header in the spec, for messages.
    pub line: usize,
    /// `writes = [...]`: places outside its run folder it may write (absolute, existing):
    /// the kernel's confinement refuses every other (`sys::confine`).
    pub writes: Vec<PathBuf>,
    /// `env-pass = [...]`: variables of the caller's environment it sees besides
    /// [`PASS_THROUGH`] (their values are keyed like `env`).
    pub env_pass: Vec<String>,
    /// `command = [...]`: the host program (and its first arguments) run instead of the
    /// crate's binary, loading the library being optimized (`host`).
    pub host: Option<Vec<String>>,
}

/// A workload's `cargo = "bench" | "test"`: it runs the package's bench or test harness
/// (the executable `cargo bench`/`cargo test` builds) instead of its binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HarnessKind {
    Bench,
    Test,
}

/// The harness a spec's `cargo` workloads run: its kind and target (the top-level
/// `bench-target` / `test-target`; `None`: the package's only bench target, or its
/// library's unit tests).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Harness {
    pub kind: HarnessKind,
    pub target: Option<String>,
}

/// `start = "warm" | "cold"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Start {
    #[default]
    Warm,
    /// Before every run, the binary and the workload's input files are dropped from the
    /// page cache (`posix_fadvise(DONTNEED)`, no root needed): a first start as users feel
    /// it after a reboot or an install, for startup-dominated programs.
    Cold,
}

/// Everything that can be wrong with a spec. Display gives `file:line:col: what — fix`.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SpecError {
    #[error("no {SPEC_FILE} at {path}\n  fix: run `cargo optimize init` to write a commented one, pass --spec PATH, or give the program's arguments after `--` (`cargo optimize -- ARGS`) to use them as the one workload")]
    Missing { path: PathBuf },
    #[error("{path} {what}\n  fix: {fix}")]
    NotAFile {
        path: PathBuf,
        what: String,
        fix: String,
    },
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
pub(crate) fn load(path: &Path) -> Result<Spec, SpecError> {
    not_a_file(path)?;
    let text = match std::fs::read(path) {
        Ok(bytes) => utf8(bytes, path)?,
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

/// A spec that is not a regular file is refused before it is opened: opening a named
/// pipe nobody writes waits forever, a folder or a device is no spec.
fn not_a_file(path: &Path) -> Result<(), SpecError> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(()); // missing or unreadable: said when it is read
    };
    let refuse = |what: &str, fix: String| SpecError::NotAFile {
        path: path.to_path_buf(),
        what: what.to_owned(),
        fix,
    };
    if meta.is_dir() {
        return Err(refuse(
            "is a folder, not a spec file",
            format!(
                "pass the spec file itself: --spec {}",
                shell_words::quote(&path.join(SPEC_FILE).to_string_lossy())
            ),
        ));
    }
    if !meta.is_file() {
        return Err(refuse(
            "is not a regular file (a named pipe, a device or a socket): a spec is read whole from a file, and a pipe nobody writes would be waited on forever",
            format!("write the spec into a file and pass that: --spec {SPEC_FILE}"),
        ));
    }
    Ok(())
}

/// The file's text, or an error at the line and column of the first byte that is not UTF-8.
fn utf8(bytes: Vec<u8>, path: &Path) -> Result<String, SpecError> {
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let bytes = e.as_bytes();
        // The valid prefix holds every line break before the bad byte.
        let prefix = std::str::from_utf8(&bytes[..at]).unwrap_or_default();
        let (line, col) = validate::line_col(prefix, at);
        SpecError::Invalid {
            path: path.to_path_buf(),
            line,
            col,
            message: format!(
                "the file is not UTF-8: byte 0x{:02x} (byte offset {at}) starts no UTF-8 character",
                bytes[at]
            ),
            fix: Some(format!(
                "save {SPEC_FILE} as UTF-8 (TOML files must be), e.g. `iconv -f latin1 -t utf-8`, or retype the character at {line}:{col}"
            )),
        }
    })
}

/// Parse spec text; `path` is used for messages and to resolve relative paths.
///
/// Checks everything that can be checked without running anything: unknown keys, types,
/// values, placeholders, that `stdin` files exist and `cwd`s are folders. Matrix workloads are
/// expanded and every path is made absolute against [`spec_root`]`(path)`.
pub(crate) fn parse(text: &str, path: &Path) -> Result<Spec, SpecError> {
    let cx = Validator::new(text, path);
    let raw: raw::RawSpec = toml::from_str(text).map_err(|e| cx.toml_error(&e))?;
    let root = spec_root(path);
    let stages = cx.stages(raw.stages.unwrap_or_default())?;
    let bench = cx.bench(raw.bench.unwrap_or_default())?;
    let verify = VerifyConfig {
        tests: raw.verify.and_then(|v| v.tests).unwrap_or(false),
    };
    let cache_max_bytes = match raw.cache.and_then(|c| c.max_size) {
        Some(v) => crate::util::parse_size(v.get_ref()).map_err(|e| {
            cx.at(
                &v,
                format!("`max-size`: {e}"),
                Some("write a size such as max-size = \"5G\" or \"500M\"".into()),
            )
        })?,
        None => DEFAULT_CACHE_MAX_BYTES,
    };
    let bin = raw.bin.map(|b| cx.non_empty(b, "bin")).transpose()?;
    let package = raw
        .package
        .map(|p| cx.non_empty(p, "package"))
        .transpose()?;
    let mut check = cx.check(raw.check.unwrap_or_default())?;
    let (workloads, limits) = cx.workloads(raw.workload.unwrap_or_default(), &root, &stages)?;
    check.limits = limits;
    let harness = cx.harness(raw.bench_target, raw.test_target, bin.is_some(), &workloads)?;
    cx.hosts_agree(&workloads, bin.is_some())?;
    let release = cx.release(
        raw.release.unwrap_or_default(),
        &root,
        &workloads,
        stages.allow_panic_abort,
    )?;
    Ok(Spec {
        path: path.to_path_buf(),
        bin,
        package,
        harness,
        stages,
        bench,
        verify,
        cache_max_bytes,
        check,
        release,
        workloads,
    })
}

/// The folder a spec at `path` resolves relative paths and `{root}` against: its parent,
/// absolute (canonical when it exists, else joined with the current directory).
pub(crate) fn spec_root(path: &Path) -> PathBuf {
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
    /// A workload for unit tests: `w`, no args, run in `cwd` for at most 5 s, train and
    /// eval, `exact`, declared at line 1 (tests change what they need).
    #[cfg(test)]
    pub(crate) fn for_tests(cwd: &Path) -> Workload {
        Workload {
            name: "w".into(),
            args: vec![],
            stdin: None,
            env: Default::default(),
            cwd: cwd.to_path_buf(),
            timeout: Duration::from_secs(5),
            train: true,
            eval: true,
            expect: Expect::Exact,
            files: vec![],
            sort_lines: false,
            stderr: false,
            pin: true,
            start: Default::default(),
            cargo: None,
            metric: None,
            line: 1,
            writes: vec![],
            env_pass: vec![],
            host: None,
        }
    }

    /// The command that runs `binary` as this workload describes: its args, stdin, env,
    /// cwd and timeout, confined to `jail` (`process::Jail::confine`: the kernel refuses
    /// writes outside it and `writes`; the environment is what is keyed). Every run of a
    /// workload (training, verifying, timing) goes through here.
    pub(crate) fn command(
        &self,
        binary: &Path,
        jail: &crate::process::Jail,
    ) -> crate::process::Command {
        // A bench harness (libtest's or criterion's) runs its benchmarks only with `--bench`,
        // as `cargo bench` passes it.
        let bench_flag = (self.cargo == Some(HarnessKind::Bench)).then_some("--bench");
        // A host program (`command`) loads `binary`, a library, from its folder.
        let (program, lead) = match &self.host {
            Some(words) => (PathBuf::from(&words[0]), &words[1..]),
            None => (binary.to_path_buf(), &[][..]),
        };
        let mut cmd = crate::process::Command::new(program)
            .args(bench_flag)
            .args(lead)
            .args(&self.args)
            .cwd(&self.cwd)
            .timeout(self.timeout)
            .stdin_file(self.stdin.clone())
            .label(format!("workload `{}`", self.name))
            .workload()
            .pinnable(self.pin);
        for (k, v) in &self.env {
            cmd = cmd.env(k, v);
        }
        if self.host.is_some() {
            let folder = binary.parent().unwrap_or(Path::new("."));
            for (k, v) in host::library_env(self, folder) {
                cmd = cmd.env(k, v);
            }
        }
        if self.start == Start::Cold {
            let mut files = vec![binary.to_path_buf()];
            files.extend(self.input_paths().into_iter().filter(|p| p.is_file()));
            cmd = cmd.evict_before(files);
        }
        jail.confine(cmd, &self.cwd, &self.env_pass, &self.writes)
    }

    /// What it reads that the spec names: `stdin`, and every argument (a host `command`'s
    /// too: its script) that is an existing
    /// path, or whose value after `=` is (`--input=FILE`), relative to `cwd`
    /// (`process::named_files`).
    pub(crate) fn input_paths(&self) -> Vec<PathBuf> {
        let host = self.host.iter().flatten().skip(1);
        crate::process::named_files(
            &self.cwd,
            host.chain(&self.args).map(Path::new),
            self.stdin.as_deref(),
        )
    }

    /// The workload's name made safe as a file name (for `outputs/<stage>/<name>.stdout`):
    /// characters other than ASCII letters, digits and `-_.,=[]+` become `_`.
    pub(crate) fn file_stem(&self) -> String {
        let stem = crate::util::file_safe(&self.name, "-_.,=[]+");
        let stem = if stem.starts_with('.') {
            format!("_{stem}")
        } else {
            stem
        };
        if stem.len() <= MAX_STEM {
            return stem;
        }
        // A long name is cut (file systems take 255 bytes a name, and suffixes such as
        // `.stdout` and `.profdata` come on top) and made unique again by its digest.
        let digest = crate::util::short_digest(self.name.as_bytes());
        format!("{}~{digest}", crate::util::clip(&stem, 80))
    }
}

/// The longest file stem a workload name keeps whole.
const MAX_STEM: usize = 100;

impl Stages {
    /// Whether `stage` is to be tried (baseline always is).
    pub(crate) fn tries(&self, stage: StageName) -> bool {
        stage == StageName::BASELINE || self.try_.contains(&stage)
    }
}

impl Default for Stages {
    fn default() -> Self {
        Stages {
            try_: crate::stages::by_default(),
            try_explicit: false,
            profile: ProfileChoice::Preset("max".to_owned()),
            cpu: None,
            cpu_lines: Vec::new(),
            allow_panic_abort: false,
            fp: None,
            fp_lines: Vec::new(),
            alloc: DEFAULT_ALLOC.iter().map(|s| s.to_string()).collect(),
            alloc_lines: Vec::new(),
            bolt_mode: BoltMode::Auto,
            bolt_args: None,
            thorough: false,
        }
    }
}

impl Default for BenchConfig {
    fn default() -> Self {
        BenchConfig {
            max_time: Duration::from_secs(30),
            margin: 0.01,
            warmup: 0,
            min_runs: None,
            budget: None,
            runner_is_native: false,
            objective_size: false,
            max_slowdown_per_workload: None,
        }
    }
}

/// Default `[[workload]] timeout`.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// Default `[stages] alloc`: mimalloc only. jemalloc is one line away, but its build
/// (jemalloc's own configure and make) costs many times mimalloc's, more than the rest of
/// a small program's run, and mimalloc was the faster of the two where both were measured.
/// Figures: docs/src/decisions.md, "jemalloc is not a default allocator".
pub(crate) const DEFAULT_ALLOC: [&str; 1] = ["mimalloc"];

/// The names `[stages] alloc` may list.
pub(crate) const ALLOC_NAMES: [&str; 2] = ["mimalloc", "jemalloc"];

/// `[cache] max-size` when the spec does not say.
pub(crate) const DEFAULT_CACHE_MAX_BYTES: u64 = 10 << 30;

/// The stage list that asks for no stage: the baseline only.
pub(crate) const NO_STAGES: &str = "none";

/// A stage list (`[stages] try` or `--stages`) that cannot be used: the offending item's
/// index (`len` when the list as a whole is wrong), what is wrong, and the fix.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TryListError {
    pub index: usize,
    pub message: String,
    pub fix: String,
}

/// The one parser of stage lists, for the spec's `[stages] try` and `--stages` alike:
/// known names, each once, in the order the stages run, at least one — or `none` alone,
/// which asks for the baseline only (built, verified for determinism, nothing measured).
pub(crate) fn parse_try(names: &[&str]) -> Result<Vec<StageName>, TryListError> {
    if names == [NO_STAGES] {
        return Ok(Vec::new());
    }
    let err = |index, message: String, fix: String| TryListError {
        index,
        message,
        fix,
    };
    let mut out: Vec<StageName> = Vec::new();
    for (i, &name) in names.iter().enumerate() {
        if name == "baseline" {
            return Err(err(
                i,
                "`baseline` cannot be listed: it always runs first".into(),
                "remove \"baseline\" from the list".into(),
            ));
        }
        let Some(stage) = StageName::tried(name) else {
            return Err(err(
                i,
                format!("unknown stage \"{name}\""),
                validate::choices_fix(name, &validate::STAGE_NAMES, "stages"),
            ));
        };
        if out.contains(&stage) {
            return Err(err(
                i,
                format!("stage \"{stage}\" is listed twice"),
                "remove the second one".into(),
            ));
        }
        if let Some(later) = out.iter().find(|s| **s > stage) {
            let mut sorted = out.clone();
            sorted.push(stage);
            sorted.sort();
            let list: Vec<&str> = sorted.iter().map(|s| s.as_str()).collect();
            return Err(err(
                i,
                format!(
                    "stage \"{stage}\" must come before \"{later}\": stages run in the order {}",
                    validate::STAGE_NAMES.join(", ")
                ),
                format!("write them in that order: {}", list.join(", ")),
            ));
        }
        out.push(stage);
    }
    if out.is_empty() {
        return Err(err(
            names.len(),
            "no stage to try: the run would only build and measure the baseline".into(),
            format!("name at least one of \"profile\", \"cpu\", \"fp\", \"pgo\", \"alloc\", \"bolt\" (the baseline always runs first), or \"{NO_STAGES}\" alone for the baseline only"),
        ));
    }
    Ok(out)
}

/// Names accepted by `[stages] profile = "…"`.
pub(crate) const PROFILE_PRESETS: [&str; 3] = ["max", "balanced", "size"];

/// The spec of `cargo optimize -- ARGS` without an optimize.toml: one workload, `ARGS`,
/// used for training and timing, run in `dir` (the current directory).
pub(crate) fn from_args(args: &[String], dir: &Path) -> Result<Spec, SpecError> {
    let text = format!(
        "[[workload]]\nname = \"command-line\"\nargs = {}\n",
        toml_list(args)
    );
    parse(&text, &dir.join("(the command line after --)"))
}

/// `spec` with its workloads replaced by the one `ARGS` workload of [`from_args`].
pub(crate) fn with_args(mut spec: Spec, args: &[String], dir: &Path) -> Result<Spec, SpecError> {
    spec.workloads = from_args(args, dir)?.workloads;
    Ok(spec)
}

/// A TOML list of literal strings (braces doubled: `{x}` would be a placeholder).
fn toml_list(items: &[String]) -> String {
    let quoted: Vec<String> = items
        .iter()
        .map(|a| crate::util::toml_string(&a.replace('{', "{{").replace('}', "}}")))
        .collect();
    format!("[{}]", quoted.join(", "))
}

/// The skeleton with `args` in both workloads instead of the `--help` placeholders.
pub(crate) fn skeleton_with_args(bin: &str, args: &[String]) -> String {
    skeleton(bin)
        .replace("args = [\"--help\"]", &format!("args = {}", toml_list(args)))
        .replace(
            "# REPLACE the \"--help\" placeholders below with real arguments and inputs.",
            "# Both workloads run the arguments given to `init`: train on other inputs than the timed\n# runs if you can, so the profile generalizes.",
        )
}

/// The skeleton of a package without a binary: its workloads run the bench harness
/// (`target`: the bench target, named when the package has several).
pub(crate) fn skeleton_for_bench(target: &str, several: bool) -> String {
    let text = skeleton("x");
    let bin_line = text
        .lines()
        .find(|l| l.starts_with("bin = "))
        .unwrap_or_default();
    let quoted = crate::util::toml_string(target);
    let target_line = match several {
        true => format!(
            "{:<33} # the bench target the workloads run",
            format!("bench-target = {quoted}")
        ),
        false => format!(
            "# {:<31} # the only bench target: no need to name it",
            format!("bench-target = {quoted}")
        ),
    };
    let args_lines: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("args = [\"--help\"]"))
        .collect();
    let mut text = text.replace(bin_line, &target_line);
    for l in args_lines {
        text = text.replace(
            l,
            "cargo = \"bench\"                   # run the bench harness (`cargo bench`'s executable)\nargs = []                         # a filter: only the benchmarks whose names contain it",
        );
    }
    text
        .replace("expect = \"exact\"                  # how", "expect = \"exit-code\"              # a harness prints timings; how")
        .replace(
            "# REPLACE the \"--help\" placeholders below with real arguments and inputs.",
            "# This package has no binary: its workloads run the bench harness. Train and time on\n# different benchmarks (filters) if you can, so the profile generalizes.",
        )
}

/// Commented workloads for a package's benches, appended to a binary's skeleton: they can
/// make a spec of their own (one spec times one executable).
pub(crate) fn bench_proposals(benches: &[String]) -> String {
    let mut s = String::from("\n# Your benches could train and time the library code too, in a spec of their own (one\n# spec times one executable; pick it with --spec):\n");
    for b in benches {
        s.push_str(&format!(
            "#   bench-target = {}\n#   [[workload]]\n#   name = \"bench-{b}\"\n#   cargo = \"bench\"\n#   args = []                     # a filter\n",
            crate::util::toml_string(b)
        ));
    }
    s
}

/// A commented skeleton for `cargo optimize init` (the asset `skeleton.toml`, its
/// `@BIN_LINE@` the binary's line).
pub(crate) fn skeleton(bin: &str) -> String {
    // Always a basic ("…") string, as `init` has always written it.
    let bin_line = format!("bin = {}", toml::Value::String(bin.to_owned()));
    let bin_line = format!("{bin_line:<33} # the binary to optimize");
    include_str!("skeleton.toml").replace("@BIN_LINE@", &bin_line)
}

/// Drops `.` components (lexically; `..` is kept).
pub(crate) fn clean_path(p: &Path) -> PathBuf {
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

#[cfg(test)]
mod tests {
    use super::fixture::{Fixture, ONE};
    use super::*;

    /// A folder or a named pipe as the spec is refused before it is opened (a pipe
    /// nobody writes blocked the run with no message).
    #[test]
    fn a_spec_that_is_not_a_regular_file_is_refused_before_it_is_opened() {
        let f = Fixture::new();
        let e = load(&f.root()).unwrap_err();
        assert!(matches!(e, SpecError::NotAFile { .. }), "{e:?}");
        let shown = e.to_string();
        assert!(
            shown.contains("is a folder")
                && shown.contains("\n  fix: pass the spec file itself: --spec "),
            "{shown}"
        );
        #[cfg(unix)]
        {
            let fifo = f.root().join("pipe.toml");
            crate::sys::testing::mkfifo(&fifo).unwrap();
            // A writer, so that a load that opened the pipe would read its end, not hang.
            let writer = {
                let p = fifo.clone();
                std::thread::spawn(move || drop(std::fs::OpenOptions::new().write(true).open(p)))
            };
            let e = load(&fifo).unwrap_err();
            // Read-write never blocks: held open, it lets the writer go (whenever it
            // opens) when load did not open the pipe.
            let unblock = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(&fifo);
            writer.join().unwrap();
            drop(unblock);
            let shown = e.to_string();
            assert!(matches!(e, SpecError::NotAFile { .. }), "{shown}");
            assert!(
                shown.contains("pipe.toml is not a regular file (a named pipe"),
                "{shown}"
            );
            assert!(
                shown.contains("\n  fix: write the spec into a file"),
                "{shown}"
            );
        }
        let file = f.root().join(SPEC_FILE);
        std::fs::write(&file, ONE).unwrap();
        load(&file).unwrap();
    }

    #[test]
    fn cache_max_size() {
        let f = Fixture::new();
        assert_eq!(f.ok(ONE).cache_max_bytes, DEFAULT_CACHE_MAX_BYTES);
        let spec = f.ok(&format!("[cache]\nmax-size = \"500M\"\n{ONE}"));
        assert_eq!(spec.cache_max_bytes, 500 << 20);
        let (line, _, msg, fix) = f.err(&format!("[cache]\nmax-size = \"big\"\n{ONE}"));
        assert_eq!(line, 2);
        assert!(msg.contains("`max-size`"), "{msg}");
        assert!(fix.contains("max-size = \"5G\""), "{fix}");
    }

    #[test]
    fn defaults() {
        let f = Fixture::new();
        let spec = f.ok(ONE);
        assert_eq!(spec_root(&spec.path), f.root());
        assert_eq!(spec.path, f.dir.path().join(SPEC_FILE));
        assert_eq!(spec.bin, None);
        assert_eq!(spec.package, None);
        assert_eq!(spec.stages.try_, crate::stages::by_default());
        assert_eq!(spec.stages.profile, ProfileChoice::Preset("max".into()));
        assert_eq!(spec.stages.cpu, None);
        assert!(!spec.stages.allow_panic_abort);
        assert_eq!(spec.stages.bolt_mode, BoltMode::Auto);
        assert_eq!(spec.stages.bolt_args, None);
        assert_eq!(spec.bench.max_time, Duration::from_secs(30));
        assert_eq!(spec.bench.margin, 0.01);
        assert_eq!(spec.bench.warmup, 0);
        assert_eq!(spec.bench.min_runs, None);
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
        assert!(w.pin);
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
pin = false

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
        assert_eq!((spec.bench.warmup, spec.bench.min_runs), (3, Some(10)));
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
        assert!(w.sort_lines && w.stderr && !w.pin);
        assert!(
            !w.command(
                Path::new("/bin/true"),
                &crate::process::Jail::new(Path::new("/nonexistent"))
            )
            .pinnable
        );
        assert_eq!(w.line, 22);
        assert!(spec.workloads[1].train && !spec.workloads[1].eval);
        assert_eq!(spec.workloads[1].line, 36);
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
            "budget",
            "runner-is-native",
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
            .replace("# margin = ", "margin = ")
            .replace("# budget = ", "budget = ")
            .replace("# runner-is-native = ", "runner-is-native = ")
            .replace("# [release]", "[release]")
            .replace(
                "# cpu = [\"x86-64-v3\"]             #",
                "cpu = [\"x86-64-v3\"] #",
            )
            .replace("# stages = [\"pgo\"]", "stages = [\"pgo\"]")
            .replace("# [release.flavors.default]", "[release.flavors.default]")
            .replace("# no-default-features = ", "no-default-features = ");
        f.ok(&uncommented);
        // Names that need escaping stay valid TOML.
        assert_eq!(f.ok(&skeleton("a\"b")).bin.as_deref(), Some("a\"b"));
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
    fn non_utf8_names_the_line_and_column() {
        let f = Fixture::new();
        let path = f.dir.path().join(SPEC_FILE);
        std::fs::write(&path, b"bin = \"x\"\n[[workload]]\nname = \"caf\xe9\"\n").unwrap();
        let e = load(&path).unwrap_err();
        let SpecError::Invalid {
            line,
            col,
            message,
            fix,
            ..
        } = &e
        else {
            panic!("{e:?}")
        };
        assert_eq!((*line, *col), (3, 12));
        assert!(message.contains("byte 0xe9 (byte offset 34)"), "{message}");
        assert!(fix.as_deref().unwrap().contains("as UTF-8"));
        assert!(e
            .to_string()
            .contains("optimize.toml:3:12: the file is not UTF-8"));
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
