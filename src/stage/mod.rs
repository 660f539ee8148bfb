//! The stages. Every stage has one shape: `prepare(ctx, best) -> Candidate` builds a
//! candidate from the best candidate so far; the pipeline then verifies and measures it.
//!
//! This module holds what stages share: the [`Context`] (project, spec, toolchain, run
//! folder, UI, step timings) and the [`Candidate`] they produce. Stages never run cargo or
//! processes themselves: they go through `ctx.build` (cargo.rs) and `ctx.run_workload`
//! (process.rs).

pub mod baseline;
pub mod bolt;
pub mod cpu;
pub mod pgo;
pub mod profile;

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use crate::verify::sandbox::Sandbox;

/// Above this many bytes copied for one sandbox, say that `cwd` could be smaller.
const LARGE_SANDBOX: u64 = 64 << 20;

use crate::cargo::{self, BuildSettings, Project};
use crate::process::{self, Outcome};
use crate::report::terminal::Ui;
use crate::report::PipelineStep;
use crate::spec::{Spec, StageName, Workload};
use crate::toolchain::Rustc;

/// A built binary and how it was made.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub stage: StageName,
    /// The binary, copied into the run folder (`runs/<id>/bin/<stage>`).
    pub binary: PathBuf,
    pub settings: BuildSettings,
    pub size_bytes: u64,
    pub build_seconds: f64,
    /// Things the user should know (retries, overrides, counts).
    pub notes: Vec<String>,
    /// Stage-specific facts for report.json (profile stats, …).
    pub facts: serde_json::Map<String, serde_json::Value>,
}

impl Candidate {
    /// The stage's variant (`facts.variant`, e.g. the cpu stage's `x86-64-v3`), if any.
    pub fn variant(&self) -> Option<&str> {
        self.facts.get("variant").and_then(|v| v.as_str())
    }

    /// For messages: `cpu (x86-64-v3)`, or the stage name.
    pub fn label(&self) -> String {
        match self.variant() {
            Some(v) => format!("{} ({v})", self.stage),
            None => self.stage.to_string(),
        }
    }

    /// For file names: `cpu-x86-64-v3`, or the stage name.
    pub fn tag(&self) -> String {
        match self.variant() {
            Some(v) => format!("{}-{}", self.stage, file_safe(v)),
            None => self.stage.to_string(),
        }
    }

    /// Whether the stage flags pick a CPU (`-Ctarget-cpu=…`): such a binary may not run on
    /// other machines.
    pub fn targets_cpu(&self) -> bool {
        target_cpu_of(&self.settings.rustflags).is_some()
    }
}

/// The last `-Ctarget-cpu=X` (or `-C target-cpu=X`) in `flags`.
pub fn target_cpu_of(flags: &[String]) -> Option<String> {
    let mut found = None;
    let mut prev_c = false;
    for f in flags {
        let f = f.as_str();
        let opt = if prev_c {
            Some(f)
        } else {
            f.strip_prefix("-C")
        };
        prev_c = f == "-C";
        if let Some(v) = opt.and_then(|o| o.strip_prefix("target-cpu=")) {
            found = Some(v.to_string());
        }
    }
    found
}

fn file_safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// A stage could not produce a candidate.
#[derive(Debug, thiserror::Error)]
pub enum StageError {
    #[error(transparent)]
    Cargo(#[from] cargo::CargoError),
    #[error(transparent)]
    Process(#[from] process::ProcessError),
    #[error("{0}")]
    Failed(String),
    /// The stage cannot run here (tool missing, not implemented): reported as skipped.
    #[error("{0}")]
    NotAvailable(String),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// The folder of one pipeline run: `target/optimize/runs/<id>/`.
#[derive(Debug, Clone)]
pub struct RunDir {
    pub id: String,
    pub root: PathBuf,
}

impl RunDir {
    pub fn bin(&self, stage: StageName) -> PathBuf {
        self.root.join("bin").join(stage.as_str())
    }
    pub fn profiles(&self, kind: &str) -> PathBuf {
        self.root.join("profiles").join(kind)
    }
    pub fn outputs(&self, stage: StageName) -> PathBuf {
        self.root.join("outputs").join(stage.as_str())
    }
}

/// What every stage may use.
pub struct Context<'a> {
    pub project: &'a Project,
    pub spec: &'a Spec,
    pub rustc: &'a Rustc,
    pub run: &'a RunDir,
    pub ui: &'a Ui,
    /// `target/optimize`.
    pub optimize_dir: PathBuf,
    /// The host triple: instrumented builds pass `--target <host>` so build scripts and
    /// proc-macros are not instrumented.
    pub host: String,
    /// llvm-profdata of rustc's LLVM major, when found.
    pub llvm_profdata: Option<crate::toolchain::Tool>,
    /// llvm-bolt + merge-fdata of rustc's LLVM major (looked for only when the bolt stage
    /// is tried; `None` otherwise, the error when they are missing or mismatched).
    pub bolt_tools: Option<Result<crate::toolchain::BoltTools, crate::toolchain::ToolError>>,
    /// Time and memory of every step, for the report's `pipeline` section.
    pub steps: RefCell<Vec<PipelineStep>>,
}

impl Context<'_> {
    /// Build `settings` into its own target dir (`target/optimize/build/<hash>`), showing
    /// cargo's progress, and record the step.
    pub fn build(
        &self,
        label: &str,
        settings: &BuildSettings,
    ) -> Result<cargo::Built, cargo::CargoError> {
        let target_dir = self.optimize_dir.join("build").join(settings.hash());
        if !self.ui.animate {
            // Logs get a line per build; a terminal gets the spinner below.
            self.ui.step(&format!("{label}: building"));
        }
        let spinner = self.ui.spinner(format!("{label}: cargo build"));
        let built = cargo::build(self.project, settings, &target_dir, &mut |line| {
            let line = line.trim();
            if line.starts_with("Compiling") || line.starts_with("Finished") {
                spinner.set_message(format!("{label}: {line}"));
            }
        });
        spinner.finish_and_clear();
        let built = built?;
        self.ui.done(&format!("{label} built"), built.seconds);
        self.record(&format!("{label} build"), built.seconds, None);
        Ok(built)
    }

    /// Copy a built binary into the run folder as the stage's binary.
    pub fn install(&self, stage: StageName, built: &Path) -> std::io::Result<(PathBuf, u64)> {
        self.install_as(stage.as_str(), built)
    }

    /// Copy a built binary into the run folder as `bin/<name>` (a stage's variant, e.g.
    /// `cpu-x86-64-v3`).
    pub fn install_as(&self, name: &str, built: &Path) -> std::io::Result<(PathBuf, u64)> {
        let dest = self.run.root.join("bin").join(name);
        std::fs::create_dir_all(dest.parent().unwrap_or(Path::new(".")))?;
        let tmp = dest.with_extension("tmp");
        std::fs::copy(built, &tmp)?;
        std::fs::rename(&tmp, &dest)?;
        let size = std::fs::metadata(&dest)?.len();
        Ok((dest, size))
    }

    /// Run `workload` on `binary` with extra environment variables.
    pub fn run_workload(
        &self,
        binary: &Path,
        workload: &Workload,
        extra_env: &[(&str, &Path)],
    ) -> Result<Outcome, StageError> {
        let (w, _sandbox) = self.sandboxed(workload, "run")?;
        Ok(self.run_in_place(binary, &w, extra_env)?)
    }

    /// Run `workload` on `binary` in its own cwd, as given (the caller isolated it).
    pub fn run_in_place(
        &self,
        binary: &Path,
        workload: &Workload,
        extra_env: &[(&str, &Path)],
    ) -> Result<Outcome, process::ProcessError> {
        let mut cmd = process::Command::for_workload(binary, workload);
        for (k, v) in extra_env {
            cmd = cmd.env(k, v);
        }
        process::run(&cmd)
    }

    /// A workload that declares output `files` gets a fresh private copy of its cwd
    /// (under `runs/<id>/sandbox/`, removed when the returned guard drops), so no run —
    /// training, verifying or timing — ever writes into the user's tree, and no run sees
    /// files an earlier one left. Other workloads are returned as they are.
    pub fn sandboxed(
        &self,
        workload: &Workload,
        tag: &str,
    ) -> std::io::Result<(Workload, Option<Sandbox>)> {
        if workload.files.is_empty() {
            return Ok((workload.clone(), None));
        }
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let dest = self.run.root.join("sandbox").join(format!(
            "{tag}-{}-{}",
            workload.file_stem(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let exclude = [self.project.target_dir.clone(), self.optimize_dir.clone()];
        let sb = Sandbox::create(&workload.cwd, &dest, &exclude)?;
        if sb.bytes > LARGE_SANDBOX {
            self.ui.warn(&format!(
                "workload `{}` declares output files, so each run gets a fresh copy of its cwd {} ({} MiB in {} files)\n  fix: point `cwd` at a smaller folder holding only what the workload reads",
                workload.name,
                workload.cwd.display(),
                sb.bytes >> 20,
                sb.files
            ));
        }
        let mut w = workload.clone();
        w.cwd = sb.cwd().to_path_buf();
        Ok((w, Some(sb)))
    }

    /// Remember how long a step took (and its peak RSS when known).
    pub fn record(&self, step: &str, seconds: f64, peak_rss_bytes: Option<u64>) {
        self.steps.borrow_mut().push(PipelineStep {
            step: step.to_string(),
            seconds,
            peak_rss_bytes,
        });
    }

    /// Time a closure as a named step.
    pub fn timed<T>(&self, step: &str, f: impl FnOnce() -> T) -> T {
        let start = Instant::now();
        let out = f();
        self.record(step, start.elapsed().as_secs_f64(), None);
        out
    }
}
