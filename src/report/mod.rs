//! The run record: `report.json`'s schema (docs/src/report-json.md), its one reader
//! ([`load`], [`locate`]) and its renderings, one module per format behind the one render
//! trait ([`crate::render::Render`], [`Format`]): [`terminal`] (the ladder), [`markdown`]
//! (GitHub-flavoured, for a PR or `$GITHUB_STEP_SUMMARY`), [`html`] (one self-contained page,
//! a maud template with `render::svg`'s charts) and JSON (the file itself); [`text`] holds
//! what they share. Renderings are deterministic: the same
//! report gives the same bytes (no clock, no hash-map order).
//!
//! `report.json` is a contract (`apply`, the CI gate and other tools read it): add fields
//! freely, never rename or drop one without bumping [`SCHEMA`]. Every type here derives
//! both `Serialize` and `Deserialize`, and a test checks that each report the integration
//! tests write reads back and re-serialises to the same JSON. The schema is typed here
//! ([`Report`]), in `context::facts` (a row's `facts`) and in `bench::comparison` (a workload's
//! `Comparison`, its `Estimate` flattened into it); every field is described in
//! docs/src/report-json.md, which the integration test
//! `docs::the_report_schema_names_every_field` checks against the frozen demo report
//! (`tests/fixtures/reports/demo/`). A NaN or infinite float is written as `null` and read
//! back as NaN (`util::lenient_f64`).
//!
//! Must not: build, run or measure anything.

pub(crate) mod hotspots;
pub(crate) mod html;
pub(crate) mod markdown;
pub(crate) mod shipped;
pub(crate) mod terminal;
pub(crate) mod text;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::bench::{Comparison, Estimate};
use crate::cargo::{BuildSettings, Features};
pub(crate) use crate::context::facts::StageFacts;
pub use crate::context::facts::{PgoProfileQuality, UntrainedHot};
pub(crate) use crate::context::PipelineStep;
use crate::render::Render;
use crate::verify::Nondeterminism;
pub(crate) use hotspots::{HotFunction, Hotspots};

pub(crate) const SCHEMA: u32 = 1;

/// The file every run writes into its folder.
pub(crate) const FILE: &str = "report.json";

/// The `pipeline[]` step of the wait, before a comparison is timed, for the builds started
/// ahead to finish (nothing timed shares the machine with them): counted as building.
pub(crate) const AHEAD_WAIT_STEP: &str = "builds ahead: finishing before timing";

/// The formats a report renders to (`cargo optimize report --format`), and what renders each.
pub use crate::render::ReportFormat as Format;

impl Format {
    pub fn renderer(self) -> Box<dyn Render<Report>> {
        match self {
            Format::Term => Box::new(terminal::TerminalRenderer),
            Format::Json => Box::new(crate::render::Json),
            Format::Markdown => Box::new(markdown::MarkdownRenderer { hotspots: false }),
            Format::Html => Box::new(html::HtmlRenderer),
        }
    }

    /// The file a run writes in this format next to report.json.
    pub fn file_name(self) -> &'static str {
        match self {
            Format::Term => "report.txt",
            Format::Json => FILE,
            Format::Markdown => "report.md",
            Format::Html => "report.html",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub schema: u32,
    #[serde(default)]
    pub tool_version: String,
    pub run_id: String,
    #[serde(rename = "crate")]
    pub crate_name: String,
    pub bin: String,
    pub toolchain: ToolchainInfo,
    #[serde(default)]
    pub stages: Vec<StageReport>,
    #[serde(default)]
    pub workloads: Vec<WorkloadReport>,
    #[serde(rename = "final")]
    pub final_: Option<FinalChoice>,
    #[serde(default)]
    pub pipeline: Vec<PipelineStep>,
    /// The machine the run measured on (absent in reports of older versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<MachineInfo>,
    /// Comparisons reused from the verdict cache, and measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict_cache: Option<CacheCounts>,
    /// Builds reused (no input changed since an earlier run built them), and run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_cache: Option<CacheCounts>,
    /// The hottest functions of the run's merged PGO profile (absent when no PGO profile
    /// was made, and in older reports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hotspots: Option<Hotspots>,
    /// What the user's sccache (`RUSTC_WRAPPER`) did during the run (absent without one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compile_cache: Option<CompileCache>,
    /// The run's time budget, what the run was projected to cost, and the stages it did not
    /// try for lack of time (absent in older reports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<RunBudget>,
    /// A quick run (`--quick`: pgo only, one eval workload per name, a short budget):
    /// `apply` refuses its winner without `--allow-quick` (absent when false).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub quick: bool,
    /// When the run started, from which source tree and revision (absent in older reports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<RunSource>,
    /// What kept the workloads from the user's files: `landlock` (the kernel refused their
    /// writes outside the run folder) or `copy-check` (a private copy checked after the
    /// fact, where the kernel offers nothing); absent in older reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confinement: Option<String>,
}

/// When a run started and what it measured: the workspace, its git commit and whether the
/// work tree had changes (`None`: not a git work tree, or git is not installed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSource {
    /// UTC, RFC 3339 (`2026-11-24T18:38:38Z`).
    pub started: String,
    /// The workspace root: the renderings name files relative to it.
    pub workspace: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_commit: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_dirty: Option<bool>,
}

/// `--budget` / `[bench] budget`: the whole run's wall time, and what it bought.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunBudget {
    #[serde(deserialize_with = "crate::util::lenient_f64::one")]
    pub budget_secs: f64,
    /// Printed before the first candidate was built (absent when the baseline's outputs were
    /// reused, so no run time was measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub projection: Option<Projection>,
    /// Stages not tried because what was left of the budget could not pay for them.
    #[serde(default)]
    pub not_tried: Vec<String>,
}

/// What a run was expected to cost, by part, in seconds (see `pipeline::budget`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Projection {
    /// Builds when every stage builds all it may (the profile search, `native`).
    pub builds: f64,
    pub build_secs: f64,
    /// Builds when every stage builds the fewest it may: the profile search not run,
    /// `native` not built after a level that was not kept (absent in older reports: as
    /// many as `builds`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub least_builds: Option<[f64; 2]>,
    pub verify_secs: f64,
    pub training_secs: f64,
    /// Measuring when every comparison settles at its first look, and when every one runs
    /// to its share of the budget.
    pub measure_secs: [f64; 2],
    /// Pairs per workload a comparison's share buys, and pairs a ±1 % interval needs.
    pub pairs_bought: f64,
    pub pairs_for_1pct: f64,
}

impl Projection {
    /// The whole run: at least, at most.
    pub fn total(&self) -> [f64; 2] {
        let work = self.build_secs + self.verify_secs + self.training_secs;
        let least = self.least_build_secs() + self.verify_secs + self.training_secs;
        [least + self.measure_secs[0], work + self.measure_secs[1]]
    }

    /// The fewest builds' time (`least_builds`' seconds, else `build_secs`).
    pub fn least_build_secs(&self) -> f64 {
        self.least_builds.map_or(self.build_secs, |[_, secs]| secs)
    }
}

/// The compilations of a run as the user's sccache counted them (its server's counters
/// before and after the run: builds elsewhere on the machine at the same time count too).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompileCache {
    pub wrapper: String,
    #[serde(flatten)]
    pub counts: crate::cargo::wrapper::CompileCounts,
}

/// The machine a run measured on.
/// How many comparisons of a run came from the verdict cache (`hits`) and how many were
/// measured (`misses`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheCounts {
    pub hits: u32,
    pub misses: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MachineInfo {
    /// "model name" from /proc/cpuinfo.
    pub cpu_model: Option<String>,
    pub logical_cpus: Option<usize>,
    /// `x86-64-v3`, …; `None` off x86-64.
    pub x86_64_level: Option<String>,
    /// A hardware cycles counter can be opened and read (perf_event_open).
    pub hardware_counters: bool,
    /// Why or why not.
    pub hardware_counters_detail: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolchainInfo {
    #[serde(default)]
    pub rustc: String,
    #[serde(default)]
    pub llvm: String,
    pub llvm_profdata: Option<String>,
    pub llvm_bolt: Option<String>,
    pub host: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Kept,
    Dropped,
    Rejected,
    Skipped,
    Failed,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Kept => "kept",
            Status::Dropped => "dropped",
            Status::Rejected => "rejected",
            Status::Skipped => "skipped",
            Status::Failed => "failed",
        }
    }
}

/// A candidate's build settings as the report stores them: `rustflags` is everything
/// rustc sees, `stage_rustflags` what the stages added (what `apply` writes),
/// `user_rustflags` the user's own.
/// Lists default to empty when absent (older and hand-written reports).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    pub profile: String,
    /// Profile key → TOML literal (`"\"fat\""`, `"1"`).
    #[serde(default)]
    pub profile_overrides: BTreeMap<String, String>,
    #[serde(default)]
    pub rustflags: Vec<String>,
    #[serde(default)]
    pub stage_rustflags: Vec<String>,
    #[serde(default)]
    pub user_rustflags: Vec<String>,
    pub target: Option<String>,
    #[serde(default)]
    pub features: Features,
    /// The global allocator the alloc stage swapped in (`cargo::alloc::ALLOCATORS`' name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocator: Option<String>,
    /// The compiler and flags `cc` was given for C and C++ (the c-compiler stage's clang,
    /// whole-program PGO's `-fprofile-use`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub c: Option<crate::cargo::cc::CBuild>,
}

impl From<&BuildSettings> for Settings {
    fn from(s: &BuildSettings) -> Self {
        Settings {
            profile: s.profile.clone(),
            profile_overrides: s.profile_overrides.clone(),
            rustflags: s.all_rustflags(),
            stage_rustflags: s.stage_rustflags.clone(),
            user_rustflags: s.user_rustflags.clone(),
            target: s.target.clone(),
            features: s.features.clone(),
            allocator: s.allocator.clone(),
            c: s.c.clone(),
        }
    }
}

impl Settings {
    /// The `-Ctarget-cpu` the stages chose, if any.
    pub fn target_cpu(&self) -> Option<String> {
        crate::cargo::target_cpu_of(&self.stage_rustflags)
    }
}

/// One row of the ladder: a candidate (or a stage that produced none) and its verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageReport {
    pub name: String,
    pub status: Status,
    pub reason: String,
    pub binary: Option<String>,
    pub size_bytes: Option<u64>,
    pub build_seconds: Option<f64>,
    pub settings: Option<Settings>,
    pub verified: Option<bool>,
    /// Against the candidate it had to beat (the best so far, or the portable best).
    pub vs_best: Option<Estimate>,
    pub vs_baseline: Option<Estimate>,
    pub notes: Vec<String>,
    pub facts: StageFacts,
}

/// The tag of the candidate whose binary is `binary`: the name of its folder
/// (`runs/<id>/bin/<tag>/<file>`), or in an older run folder, which held each candidate as
/// `bin/<tag>`, the file's own name.
pub(crate) fn binary_tag(binary: &str) -> Option<String> {
    let path = Path::new(binary);
    let dir = path.parent().and_then(Path::file_name);
    let named = match dir {
        Some(d) if d != "bin" => d,
        _ => path.file_name()?,
    };
    Some(named.to_string_lossy().into_owned())
}

impl StageReport {
    /// A stage that produced nothing (skipped or failed before a candidate existed).
    pub fn without_candidate(name: &str, status: Status, reason: impl Into<String>) -> Self {
        StageReport {
            name: name.to_string(),
            status,
            reason: reason.into(),
            binary: None,
            size_bytes: None,
            build_seconds: None,
            settings: None,
            verified: None,
            vs_best: None,
            vs_baseline: None,
            notes: Vec::new(),
            facts: Default::default(),
        }
    }

    /// `cpu (x86-64-v3)` for a row with a variant, else the stage name.
    pub fn label(&self) -> String {
        crate::context::label(&self.name, self.facts.variant.as_deref())
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkloadReport {
    pub name: String,
    /// `train`, `eval`.
    #[serde(rename = "use")]
    pub uses: Vec<String>,
    /// Per candidate tag: the comparison against the candidate it had to beat.
    pub per_stage: BTreeMap<String, Comparison>,
    /// Two runs of the baseline agreed. When false, candidates are held to the workload's
    /// exit status only, never rejected on its outputs.
    pub deterministic: bool,
    /// When not deterministic: the first difference between the two runs and the fix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nondeterminism: Option<Nondeterminism>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FinalChoice {
    pub stage: String,
    pub binary: String,
    /// baseline time / final time (above 1 is faster); `None` when not measured.
    pub speedup_vs_baseline: Option<f64>,
    pub speedup_ci: Option<(f64, f64)>,
    /// Its time ratio to the baseline when it was chosen (chained through the comparisons
    /// that chose it, or measured in one of them): biased towards fast by the choice, shown
    /// beside `speedup_vs_baseline`, which fresh pairs confirmed (absent: not confirmed —
    /// the baseline, or a report of an earlier version).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_selection: Option<crate::bench::Estimate>,
    /// The stage's variant, e.g. the cpu stage's target-cpu.
    pub variant: Option<String>,
    /// The candidate's build settings.
    pub settings: Option<Settings>,
    /// The best candidate without a stage `-Ctarget-cpu`: runs on any machine of the target
    /// (the same as the final choice when that one is portable; absent inside itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub portable: Option<Box<FinalChoice>>,
}

impl FinalChoice {
    /// What ships: without `cpu`, the portable alternative when this choice picks a CPU and
    /// the run found one (a build for one CPU can crash on others); else this choice.
    pub fn to_ship(&self, cpu: bool) -> &FinalChoice {
        match &self.portable {
            Some(p) if !cpu && p.binary != self.binary && self.picks_cpu() => p,
            _ => self,
        }
    }

    /// Whether it was built with a `-Ctarget-cpu` (a stage's, or in older reports' one list).
    pub fn picks_cpu(&self) -> bool {
        self.settings.as_ref().is_some_and(|s| {
            crate::cargo::target_cpu_of(&s.stage_rustflags).is_some()
                || crate::cargo::target_cpu_of(&s.rustflags).is_some()
        })
    }

    /// Whether `cargo optimize apply` has something to write (`None` for the baseline), and
    /// whether the choice picks a CPU (then `--cpu` is worth a word).
    pub fn apply_advice(&self) -> Option<bool> {
        (self.stage != "baseline").then(|| {
            self.settings
                .as_ref()
                .is_some_and(|v| v.target_cpu().is_some())
        })
    }

    /// `pgo (portable)`, or the stage name.
    pub fn label(&self) -> String {
        crate::context::label(&self.stage, self.variant.as_deref())
    }
}

/// The report could not be found or read.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("no run `{given}`: {tried} does not exist\n  fix: give a run id from {runs}, a run folder, or a report.json (or run `cargo optimize` first)")]
    NotFound {
        given: String,
        tried: PathBuf,
        runs: PathBuf,
    },
    #[error("cannot read {path}: {error}")]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{path} is not a report this version can read: {error}\n  fix: re-run `cargo optimize` to write a fresh report")]
    Parse {
        path: PathBuf,
        error: serde_json::Error,
    },
    #[error("{path} is not a report.json that cargo-optimize wrote (or it is damaged): {why}\n  fix: run `cargo optimize` again, or pass another run (a run id, a run folder or its report.json)")]
    NotAReport { path: PathBuf, why: String },
    #[error("{path} has report schema {schema}, newer than this cargo-optimize {ours} reads (schema {SCHEMA}); it was written by cargo-optimize {writer}\n  fix: upgrade cargo-optimize to {writer} or later (`cargo install cargo-optimize`), or run `cargo optimize` again with this version")]
    NewerSchema {
        path: PathBuf,
        schema: u64,
        ours: &'static str,
        writer: String,
    },
}

/// The report.json of a run: `None` → the latest run; else a run id (under
/// `<optimize_dir>/runs`), a run folder, or a report.json path.
pub(crate) fn locate(optimize_dir: &Path, run: Option<&str>) -> Result<PathBuf, LoadError> {
    let runs = optimize_dir.join("runs");
    let (given, path) = match run {
        None => ("latest".to_string(), optimize_dir.join("latest").join(FILE)),
        Some(r) => {
            let as_path = PathBuf::from(r);
            let path = if as_path.is_file() {
                as_path
            } else if as_path.join(FILE).is_file() {
                as_path.join(FILE)
            } else {
                runs.join(r).join(FILE)
            };
            (r.to_string(), path)
        }
    };
    if path.is_file() {
        Ok(path)
    } else {
        Err(LoadError::NotFound {
            given,
            tried: path,
            runs,
        })
    }
}

/// Read a report.json: refused, naming the file and the fix, when it is not a JSON
/// object with a `schema` this tool wrote, or has a schema newer than [`SCHEMA`].
pub fn load(path: &Path) -> Result<Report, LoadError> {
    let bytes = std::fs::read(path).map_err(|error| LoadError::Io {
        path: path.to_path_buf(),
        error,
    })?;
    let not_a_report = |why: String| LoadError::NotAReport {
        path: path.to_path_buf(),
        why,
    };
    let text = std::str::from_utf8(&bytes).map_err(|e| {
        not_a_report(format!(
            "it is not UTF-8 text (an invalid byte at offset {})",
            e.valid_up_to()
        ))
    })?;
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| not_a_report(format!("it is not JSON ({e})")))?;
    let schema = match value.get("schema") {
        Some(serde_json::Value::Number(n)) => n.as_u64().filter(|s| *s >= 1),
        _ => None,
    }
    .ok_or_else(|| not_a_report("it has no `schema` number".into()))?;
    if schema > u64::from(SCHEMA) {
        let writer = value.get("tool_version").and_then(|v| v.as_str());
        return Err(LoadError::NewerSchema {
            path: path.to_path_buf(),
            schema,
            ours: env!("CARGO_PKG_VERSION"),
            writer: writer.unwrap_or("a newer version").to_string(),
        });
    }
    serde_json::from_value(value).map_err(|error| LoadError::Parse {
        path: path.to_path_buf(),
        error,
    })
}

impl Report {
    /// `text` with the workspace's path (the run's, `source.workspace`) left out of every
    /// path under it: `target/optimize/runs/…` instead of `/home/me/crate/target/…`.
    pub fn relative(&self, text: &str) -> String {
        match &self.source {
            Some(src) if !src.workspace.is_empty() => {
                let root = src.workspace.trim_end_matches('/');
                text.replace(&format!("{root}/"), "")
            }
            _ => text.to_string(),
        }
    }

    /// `656.2 KiB (baseline 644.4 KiB, +1.8 %)`: the size of a shipped binary (its row's)
    /// against the baseline's; `None` when no row names it.
    pub fn size_line(&self, binary: &str) -> Option<String> {
        let size = |pred: &dyn Fn(&StageReport) -> bool| {
            self.stages.iter().rev().find(|r| pred(r))?.size_bytes
        };
        let new = size(&|r| r.binary.as_deref() == Some(binary))?;
        let h = crate::util::human_bytes;
        Some(match size(&|r| r.name == "baseline") {
            Some(old) if old > 0 => format!(
                "{} (baseline {}, {:+.1} %)",
                h(new),
                h(old),
                100.0 * (new as f64 / old as f64 - 1.0)
            ),
            _ => h(new),
        })
    }

    /// The first row with the eval coverage of its PGO profile (the pgo row; a portable
    /// row built with the same profile carries the same numbers).
    pub fn profile_quality(&self) -> Option<(&StageReport, &PgoProfileQuality)> {
        self.stages
            .iter()
            .find_map(|st| Some((st, st.facts.profile_quality.as_ref()?)))
    }

    /// Write `report.json` into `dir` atomically.
    pub fn write_json(&self, dir: &Path) -> std::io::Result<()> {
        let json = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        crate::util::atomic::write(&dir.join(FILE), (json + "\n").as_bytes())
    }

    /// Write `report.md` and `report.html` into `dir` (beside report.json), atomically.
    pub fn write_renderings(&self, dir: &Path) -> std::io::Result<()> {
        for format in [Format::Markdown, Format::Html] {
            let text = format.renderer().render(self);
            crate::util::atomic::write(&dir.join(format.file_name()), text.as_bytes())?;
        }
        Ok(())
    }

    /// The last row of stage `name`.
    pub fn stage(&self, name: &str) -> Option<&StageReport> {
        self.stages.iter().rev().find(|s| s.name == name)
    }

    /// Where the run's time went, by kind of step (from `pipeline[]`), largest first, with
    /// the whole run's seconds.
    pub fn time_spent(&self) -> (f64, Vec<(&'static str, f64)>) {
        let mut kinds: Vec<(&'static str, f64)> =
            ["measuring", "building", "verifying", "training", "other"]
                .iter()
                .map(|k| (*k, 0.0))
                .collect();
        let mut total = 0.0;
        for step in &self.pipeline {
            let name = step.step.as_str();
            let kind = if name == "total" {
                total = step.seconds;
                continue;
            } else if name.ends_with(": measure") {
                "measuring"
            } else if name.ends_with(" build") || name == AHEAD_WAIT_STEP {
                "building"
            } else if name.ends_with(": verify")
                || name.ends_with(": crate tests")
                || name.starts_with("baseline: ")
            {
                "verifying"
            } else if name.ends_with(": training") || name.ends_with(": eval coverage") {
                "training"
            } else {
                "other"
            };
            if let Some(k) = kinds.iter_mut().find(|(k, _)| *k == kind) {
                k.1 += step.seconds;
            }
        }
        kinds.retain(|(_, s)| *s > 0.0);
        kinds.sort_by(|a, b| b.1.total_cmp(&a.1));
        (total, kinds)
    }

    /// Whether a row failed (the run's exit code is then 1).
    pub fn any_failed(&self) -> bool {
        self.stages.iter().any(|s| s.status == Status::Failed)
    }
}

impl StageReport {
    /// The candidate's tag (`cpu-x86-64-v4`): the key of its comparisons in
    /// `workloads[].per_stage`, its binary's folder ([`binary_tag`]).
    pub fn tag(&self) -> Option<String> {
        binary_tag(self.binary.as_deref()?)
    }

    /// What this row was measured against (`cpu (x86-64-v4)`), read from its reason
    /// (`pgo vs cpu (x86-64-v4): …`); `None` when the reason does not say.
    pub fn rival(&self) -> Option<String> {
        if let Some(r) = &self.facts.rival {
            return Some(r.clone());
        }
        let first = self.reason.lines().next()?;
        let (head, _) = first.split_once(": ")?;
        let (_, rival) = head.split_once(" vs ")?;
        Some(rival.to_string())
    }
}

pub use crate::bench::export::pair_ratios;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_binary_s_tag_is_its_folder_or_an_older_run_s_file_name() {
        let tag = |b: &str| binary_tag(b).unwrap();
        // A folder per candidate, the program under its own name (even one named `bin`).
        assert_eq!(tag("/t/runs/1/bin/cpu-x86-64-v3/demo"), "cpu-x86-64-v3");
        assert_eq!(tag("/t/runs/1/bin/pgo/demo.exe"), "pgo");
        assert_eq!(tag("/t/runs/1/bin/pgo/bin"), "pgo");
        // A run folder before that: `bin/<tag>`.
        assert_eq!(tag("/t/runs/1/bin/pgo"), "pgo");
        assert_eq!(tag("bin/baseline"), "baseline");
    }

    #[test]
    fn load_refuses_what_is_not_a_report_and_a_newer_schema_naming_the_file_and_fix() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join(FILE);
        let err = |bytes: &[u8]| {
            std::fs::write(&path, bytes).unwrap();
            load(&path).unwrap_err().to_string()
        };
        for (bytes, says) in [
            (&b"\x89PNG\r\n\x1a\n\xff\xfe\x00garbage"[..], "not UTF-8"),
            (b"hello", "not JSON"),
            (b"[1, 2]", "no `schema`"),
            (br#"{"schema": 0, "run_id": "r"}"#, "no `schema`"),
        ] {
            let e = err(bytes);
            for part in [
                &path.display().to_string(),
                "is not a report.json that cargo-optimize wrote",
                says,
                "fix: run `cargo optimize` again, or pass another run",
            ] {
                assert!(e.contains(part), "no {part:?} in {e}");
            }
        }
        let e = err(br#"{"schema": 7, "tool_version": "9.1.0", "run_id": "r"}"#);
        for part in [
            &path.display().to_string(),
            "schema 7, newer than this cargo-optimize",
            "written by cargo-optimize 9.1.0",
            "fix: upgrade cargo-optimize to 9.1.0 or later",
        ] {
            assert!(e.contains(part), "no {part:?} in {e}");
        }
    }

    #[test]
    fn time_is_summed_by_kind_of_step() {
        let step = |s: &str, secs: f64| PipelineStep {
            step: s.into(),
            seconds: secs,
            peak_rss_bytes: None,
        };
        let report = Report {
            schema: SCHEMA,
            tool_version: "0".into(),
            run_id: "r".into(),
            crate_name: "c".into(),
            bin: "c".into(),
            toolchain: ToolchainInfo {
                rustc: "1".into(),
                llvm: "22".into(),
                llvm_profdata: None,
                llvm_bolt: None,
                host: "h".into(),
            },
            stages: vec![],
            workloads: vec![],
            final_: None,
            machine: None,
            verdict_cache: None,
            build_cache: None,
            compile_cache: None,
            quick: false,
            budget: None,
            source: None,
            confinement: None,
            hotspots: None,
            pipeline: vec![
                step("baseline build", 2.0),
                step("baseline: workloads", 1.0),
                step("pgo: instrumented build", 3.0),
                step(AHEAD_WAIT_STEP, 4.0),
                step("pgo: training", 0.5),
                step("pgo: llvm-profdata merge", 0.25),
                step("pgo: verify", 1.0),
                step("pgo vs baseline: measure", 10.0),
                step("total", 20.0),
            ],
        };
        let (total, kinds) = report.time_spent();
        assert_eq!(total, 20.0);
        assert_eq!(
            kinds,
            [
                ("measuring", 10.0),
                ("building", 9.0),
                ("verifying", 2.0),
                ("training", 0.5),
                ("other", 0.25)
            ]
        );
    }
}
