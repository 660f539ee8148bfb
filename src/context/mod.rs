//! The run context: the resolved [`Plan`] (project, spec, toolchain, options, UI), the
//! spec this context times, the run folder, and the state the run gathers (step timings,
//! warnings given, build counts, PGO profiles trained, builds started ahead) — and the
//! [`Candidate`] a stage produces (and the pgo stage's [`TrainedProfile`]). Builds go through
//! [`Context::build`] (the `cargo` module), workload runs through [`Context::run_workload`]
//! (`process`), each workload that writes files in a private copy of its cwd ([`sandbox`]).
//!
//! Must not: decide, verify or measure (the pipeline, verify and bench do).

pub(crate) mod ahead;
mod dir_lock;
pub(crate) mod facts;
pub(crate) mod plan;
pub(crate) mod sandbox;

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::cargo::{self, BuildSettings};
use crate::process::{self, Outcome};
use crate::spec::{Spec, Workload};
use crate::stages::StageName;
use crate::ui::Ui;
use facts::{PgoProfileQuality, PgoProfileStats, StageFacts};
pub(crate) use plan::Plan;
use sandbox::Sandbox;

pub(crate) use dir_lock::DirLock;

/// Above this many bytes copied for one sandbox, say that `cwd` could be smaller.
const LARGE_SANDBOX: u64 = 64 << 20;

/// A built binary and how it was made.
#[derive(Debug, Clone)]
pub(crate) struct Candidate {
    pub stage: StageName,
    /// The binary, copied into the run folder (`runs/<id>/bin/<tag>/<binary's file name>`).
    pub binary: PathBuf,
    pub settings: BuildSettings,
    pub size_bytes: u64,
    pub build_seconds: f64,
    /// Things the user should know (retries, overrides, counts).
    pub notes: Vec<String>,
    /// Stage-specific facts for report.json.
    pub facts: StageFacts,
}

impl Candidate {
    /// The stage's variant (e.g. the cpu stage's `x86-64-v3`), if any.
    pub(crate) fn variant(&self) -> Option<&str> {
        self.facts.variant.as_deref()
    }

    /// For messages: `cpu (x86-64-v3)`, or the stage name.
    pub(crate) fn label(&self) -> String {
        label(self.stage.as_str(), self.variant())
    }

    /// For file names: `cpu-x86-64-v3`, or the stage name.
    pub(crate) fn tag(&self) -> String {
        match self.variant() {
            Some(v) => format!("{}-{}", self.stage, crate::util::file_safe(v, "-_.")),
            None => self.stage.to_string(),
        }
    }

    /// Whether the stage flags pick a CPU (`-Ctarget-cpu=…`): such a binary may not run on
    /// other machines.
    pub(crate) fn targets_cpu(&self) -> bool {
        cargo::target_cpu_of(&self.settings.stage_rustflags).is_some()
    }
}

/// A merged PGO profile from training (here, or elsewhere and given), and how it was made:
/// the pgo stage's, kept by the run once
/// trained ([`Context::keep_trained_profile`]).
#[derive(Clone)]
pub(crate) struct TrainedProfile {
    /// The profile in the content-addressed cache (`cache/<sha256>.profdata`).
    pub stable: PathBuf,
    pub stats: PgoProfileStats,
    /// A bad cache entry was replaced: the build that used it must be redone.
    pub repaired: bool,
    pub notes: Vec<String>,
    /// The settings of the instrumented build it was trained on (`None`: given, not
    /// trained here).
    pub instrumented: Option<BuildSettings>,
    /// The instrumented binary it was trained on (`None`: given).
    pub instrumented_binary: Option<PathBuf>,
    /// The value-profiling counters per site its training needed (`None`: the default).
    pub vp_counters: Option<u32>,
    /// How well it covers the eval workloads (the pgo stage's eval pass; not in releases).
    pub quality: Option<PgoProfileQuality>,
    /// The file given with `--pgo-profile` it was copied from, instead of training.
    pub source: Option<PathBuf>,
}

/// `cpu (x86-64-v3)` for a stage with a variant, else the stage's name.
pub(crate) fn label(stage: &str, variant: Option<&str>) -> String {
    match variant {
        Some(v) => format!("{stage} ({v})"),
        None => stage.to_string(),
    }
}

/// The folder of one pipeline run: `target/optimize/runs/<id>/`.
#[derive(Debug, Clone)]
pub(crate) struct RunDir {
    pub id: String,
    pub root: PathBuf,
}

impl RunDir {
    /// A new run folder under `<optimize_dir>/runs/`, named `<timestamp>-<pid>`: sortable
    /// and unique on this machine.
    /// `latest` must be ours to replace (a link, or nothing): checked here, before any
    /// build, not when the run ends.
    pub(crate) fn create(optimize_dir: &Path) -> std::io::Result<RunDir> {
        let latest = optimize_dir.join("latest");
        if let Ok(m) = std::fs::symlink_metadata(&latest) {
            if !m.file_type().is_symlink() {
                let what = if m.is_dir() { "a folder" } else { "a file" };
                return Err(std::io::Error::other(format!(
                    "{} is {what}, not the link to the newest run this tool keeps there\n  fix: move it away (e.g. `mv {} {}.mine`); nothing was built",
                    latest.display(),
                    latest.display(),
                    latest.display()
                )));
            }
        }
        Self::create_in(&optimize_dir.join("runs"))
    }

    /// A new folder `<parent>/<timestamp>-<pid>[-<random>]` (a run's, a release's).
    pub(crate) fn create_in(parent: &Path) -> std::io::Result<RunDir> {
        let ts = humantime::format_rfc3339_seconds(std::time::SystemTime::now())
            .to_string()
            .replace([':', '-'], "")
            .replace('T', "-")
            .trim_end_matches('Z')
            .to_string();
        Self::create_named(parent, &format!("{ts}-{}", std::process::id()))
    }

    /// A new folder `<parent>/<stem>`, or `<stem>-<random>` when that one exists
    /// (`util::create_fresh_dir`): a run never shares another's folder.
    fn create_named(parent: &Path, stem: &str) -> std::io::Result<RunDir> {
        let (id, root) = crate::util::create_fresh_dir(parent, stem).map_err(|e| {
            crate::util::io_error(e, "cannot create the run folder", &parent.join(stem))
        })?;
        Ok(RunDir { id, root })
    }

    /// Point `<optimize_dir>/latest` at this run (atomically: a new link renamed over it).
    pub(crate) fn point_latest(&self, optimize_dir: &Path) -> std::io::Result<()> {
        let link = optimize_dir.join("latest");
        let to = Path::new("runs").join(&self.id);
        crate::util::atomic::with_temp(&link, |tmp| crate::sys::symlink(&to, tmp))
            .map_err(|e| crate::util::io_error(e, "cannot point to the newest run", &link))
    }

    /// A candidate's binary: `bin/<tag>/<file>`, a folder per candidate holding the
    /// program under its own file name (`demo`), so its `argv[0]` is the user's.
    pub(crate) fn candidate(&self, tag: &str, file: &str) -> PathBuf {
        self.root.join("bin").join(tag).join(file)
    }
    pub(crate) fn profiles(&self, kind: &str) -> PathBuf {
        self.root.join("profiles").join(kind)
    }
    pub(crate) fn outputs(&self, tag: &str) -> PathBuf {
        self.root.join("outputs").join(tag)
    }
}

/// How long one step of the pipeline took (report.json's `pipeline`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PipelineStep {
    pub step: String,
    pub seconds: f64,
    pub peak_rss_bytes: Option<u64>,
}

/// A workload could not be run.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RunError {
    #[error(transparent)]
    Process(#[from] process::ProcessError),
    #[error("cannot prepare the workload's private working directory: {0}")]
    Io(#[from] std::io::Error),
}

/// What every stage may use: the run's resolved configuration, the spec it times, its
/// folder, and the state the run gathers as it goes.
pub(crate) struct Context<'a> {
    /// What the run does, resolved once (project, tools, target, options, `ui`).
    pub plan: &'a Plan,
    /// The workloads this context times and checks: the plan's spec, or `check`'s subset.
    pub spec: &'a Spec,
    pub run: &'a RunDir,
    /// cargo's runner for the target being built (another architecture's binaries run
    /// through it: `qemu-aarch64`); `None`: binaries run natively. The plan's, or a release
    /// job's target's.
    pub runner: Option<cargo::runner::Runner>,
    /// Builds started ahead of need ([`Context::build_ahead`]).
    pub ahead: ahead::Ahead,
    /// Where the user's code may write: the run folder (`process::Jail`).
    pub jail: process::Jail,
    /// What the run gathers as it goes.
    state: State,
}

/// The state a [`Context`] gathers as the run goes, changed through `&Context`; a context
/// made by [`Context::with_spec`] starts its own.
#[derive(Default)]
struct State {
    /// Time and memory of every step, for the report's `pipeline` section.
    steps: RefCell<Vec<PipelineStep>>,
    /// Warnings already given (each is given once per run).
    warned: RefCell<BTreeSet<String>>,
    /// Builds reused and builds run (`Context::build`).
    builds: Cell<(u32, u32)>,
    /// The pgo stage's profiles trained so far, by instrumented build
    /// ([`Context::keep_trained_profile`]).
    profiles: RefCell<BTreeMap<String, TrainedProfile>>,
    /// When the run's budget is spent ([`Context::set_deadline`]): no build starts after it,
    /// and one running (the run's own, or one ahead waited for) is killed at it.
    deadline: Cell<Option<Instant>>,
}

impl<'a> Context<'a> {
    /// The context of a run of `plan` over `spec` (the plan's own, or `check`'s subset of
    /// its workloads) in the folder `run`.
    pub(crate) fn new(plan: &'a Plan, spec: &'a Spec, run: &'a RunDir) -> Context<'a> {
        Context {
            plan,
            spec,
            run,
            runner: plan.runner.clone(),
            ahead: Default::default(),
            jail: process::Jail::new(&run.root),
            state: State::default(),
        }
    }

    /// From now on, builds end at `at` (the baseline's are done: it is built whatever the
    /// budget): [`Context::build`] starts none after it, kills its own at it, and waits for
    /// one ahead until then.
    pub(crate) fn set_deadline(&self, at: Instant) {
        self.state.deadline.set(Some(at));
    }

    /// Keep the pgo stage's `profile`, trained on the instrumented build `key` names, for
    /// the rest of this run (trained ahead of the stage, while the profile stage searched:
    /// `stage::pgo::speculate`). In memory only: unlike the kept results on disk, `--fresh`
    /// does not pass it by, as nothing here came from an earlier run.
    pub(crate) fn keep_trained_profile(&self, key: String, profile: TrainedProfile) {
        self.state.profiles.borrow_mut().insert(key, profile);
    }

    /// The profile [`Context::keep_trained_profile`] kept under `key`.
    pub(crate) fn trained_profile(&self, key: &str) -> Option<TrainedProfile> {
        self.state.profiles.borrow().get(key).cloned()
    }

    /// The steps recorded so far ([`Context::record`]), for the report's `pipeline`.
    pub(crate) fn steps(&self) -> Vec<PipelineStep> {
        self.state.steps.borrow().clone()
    }

    /// Builds reused and builds run so far ([`Context::build`]).
    pub(crate) fn build_counts(&self) -> (u32, u32) {
        self.state.builds.get()
    }

    /// The same run over another spec (`check` times a subset of the workloads), with
    /// step timings, warnings and counts of its own.
    pub(crate) fn with_spec(&self, spec: &'a Spec) -> Context<'a> {
        Context {
            runner: self.runner.clone(),
            ..Context::new(self.plan, spec, self.run)
        }
    }

    /// The run's output.
    pub(crate) fn ui(&self) -> &'a Ui {
        &self.plan.ui
    }

    /// The target dir a build of `settings` uses: `target/optimize/build/<hash>`.
    pub(crate) fn build_dir(&self, settings: &BuildSettings) -> PathBuf {
        self.plan.optimize_dir.join("build").join(settings.hash())
    }

    /// Whether asking for a build of `settings` costs no build of its own: it was started
    /// ahead, or the build cache holds it (and the run may reuse it).
    pub(crate) fn has_build(&self, settings: &BuildSettings) -> bool {
        self.ahead.has(settings)
            || (!self.plan.fresh
                && (self.build_cache())
                    .reusable(&self.plan.project, settings, &self.build_dir(settings))
                    .is_some())
    }

    /// Where this run's builds are kept for reuse.
    fn build_cache(&self) -> cargo::BuildCache<'_> {
        cargo::BuildCache {
            optimize_dir: &self.plan.optimize_dir,
            toolchain: &self.plan.rustc.version,
        }
    }

    /// Build `settings` into its own target dir (`target/optimize/build/<hash>`), showing
    /// cargo's progress, and record the step.
    pub(crate) fn build(
        &self,
        label: &str,
        settings: &BuildSettings,
    ) -> Result<cargo::Built, cargo::CargoError> {
        let target_dir = self.build_dir(settings);
        let started = Instant::now();
        if self.ahead.has(settings) {
            if let Some(done) = self.ahead_result(label, settings, started) {
                return done;
            }
        }
        if self
            .state
            .deadline
            .get()
            .is_some_and(|d| Instant::now() >= d)
        {
            return Err(cargo::CargoError::OutOfBudget);
        }
        let cache = self.build_cache();
        let kept = cache.reusable(&self.plan.project, settings, &target_dir);
        let (reused, run) = self.state.builds.get();
        if let Some(kept) = kept.filter(|_| !self.plan.fresh) {
            self.state.builds.set((reused + 1, run));
            self.ui().info(&format!(
                "{label}: build reused (no input changed since it was built)"
            ));
            self.record(
                &format!("{label} build"),
                started.elapsed().as_secs_f64(),
                None,
            );
            built_event(self.ui(), label, &kept, true);
            return Ok(kept);
        }
        self.state.builds.set((reused, run + 1));
        // A terminal gets the spinner below; a log the one line when it is built.
        let spinner = self.ui().spinner(format!("{label}: cargo build"));
        // Killed when the run's budget is spent ([`Context::set_deadline`]).
        let built = ahead::until(self.state.deadline.get(), || {
            cache.build(&self.plan.project, settings, &target_dir, &mut |line| {
                let line = line.trim();
                if line.starts_with("Compiling") || line.starts_with("Finished") {
                    spinner.set_message(format!("{label}: {line}"));
                }
            })
        });
        spinner.finish_and_clear();
        let (built, warning) = built?;
        if let Some(warning) = warning {
            self.ui().warn(&format!("{label}: {warning}"));
        }
        self.ui().done(&format!("{label} built"), built.seconds);
        self.ui().detail(&format!("{label}: {}", built.command));
        self.record(
            &format!("{label} build"),
            built.seconds,
            built.peak_rss_bytes,
        );
        built_event(self.ui(), label, &built, false);
        Ok(built)
    }

    /// The build of `settings` started ahead, once it is finished (`None`: its thread is
    /// gone, so the caller builds it itself).
    fn ahead_result(
        &self,
        label: &str,
        settings: &BuildSettings,
        started: Instant,
    ) -> Option<Result<cargo::Built, cargo::CargoError>> {
        let spinner = self
            .ui()
            .spinner(format!("{label}: waiting for its build started ahead"));
        let done = self.ahead.take(settings, self.state.deadline.get());
        spinner.finish_and_clear();
        let (built, warning) = match done? {
            Ok(done) => done,
            Err(e) => return Some(Err(e)),
        };
        let (reused, run) = self.state.builds.get();
        self.state.builds.set((reused, run + 1));
        if let Some(warning) = warning {
            self.ui().warn(&format!("{label}: {warning}"));
        }
        let waited = started.elapsed().as_secs_f64();
        self.ui().done(
            &format!("{label} built ahead in {:.1}s; waited", built.seconds),
            waited,
        );
        self.ui().detail(&format!("{label}: {}", built.command));
        self.record(&format!("{label} build"), waited, built.peak_rss_bytes);
        Some(Ok(built))
    }

    /// Copy a built binary into the run folder as `bin/<name>/<file>`: `name` the
    /// candidate's tag, `file` the program's own file name ([`Context::exe_file_name`]).
    pub(crate) fn install_as(&self, name: &str, built: &Path) -> std::io::Result<(PathBuf, u64)> {
        let dest = self.run.candidate(name, &self.exe_file_name(built));
        let copy = || -> std::io::Result<u64> {
            std::fs::create_dir_all(dest.parent().unwrap_or(Path::new(".")))?;
            let mut size = 0;
            crate::util::atomic::with_temp(&dest, |tmp| {
                size = std::fs::copy(built, tmp)?;
                // Executable whatever it was copied from: a kept copy in the cache's blobs
                // was not, and a reused BOLTed binary then failed to start when measured.
                crate::sys::set_mode(tmp, 0o755)
            })?;
            Ok(size)
        };
        // The copy's digest is its source's when the source did not change across the copy
        // (its size and times held): keys name the copy, and nothing else writes it.
        let before = crate::store::stamp(built);
        let digest = crate::store::file_digest(built).ok();
        let copied = copy();
        let unchanged = before.is_some() && crate::store::stamp(built) == before;
        if let (Ok(_), Some(digest), true) = (&copied, digest, unchanged) {
            crate::store::written(&dest, digest);
        }
        copied.map(|size| (dest.clone(), size)).map_err(|e| {
            let doing = format!("cannot copy the {name} binary into the run folder at");
            crate::util::io_error(e, &doing, &dest)
        })
    }

    /// The file name cargo gives the program (`demo`, `demo.exe`), which every candidate
    /// runs under: `built`'s own when it is that name, else (a kept blob named by its
    /// digest, BOLT's output) the binary's name, with `.exe` for a PE file. A library a
    /// host loads: the name the host loads it under (`cargo::library::Library::file`).
    pub(crate) fn exe_file_name(&self, built: &Path) -> String {
        match &self.plan.project.library {
            Some(library) => library.file.clone(),
            None => exe_file_name(&self.plan.project.bin, built),
        }
    }

    /// Run `workload` on `binary` with extra environment variables, in a private copy of
    /// its cwd when it writes files.
    pub(crate) fn run_workload(
        &self,
        binary: &Path,
        workload: &Workload,
        extra_env: &[(&str, &Path)],
    ) -> Result<Outcome, RunError> {
        let (w, _sandbox) = self.sandboxed(workload, "run")?;
        Ok(self.run_in_place(binary, &w, extra_env, None)?)
    }

    /// Run `workload` on `binary` in its own cwd, as given (the caller isolated it); with
    /// `spool`, its stdout and stderr are written there as they arrive
    /// ([`process::Command::spool`]).
    pub(crate) fn run_in_place(
        &self,
        binary: &Path,
        workload: &Workload,
        extra_env: &[(&str, &Path)],
        spool: Option<process::Spool>,
    ) -> Result<Outcome, process::ProcessError> {
        let mut cmd = self.command(workload, binary);
        for (k, v) in extra_env {
            cmd = cmd.env(k, v);
        }
        cmd.spool = spool;
        self.ui()
            .detail(&format!("running `{}`: {}", workload.name, cmd.display()));
        let out = process::run(&cmd)?;
        if let Some(w) = out.lingering.warning() {
            self.warn_once(&format!("workload `{}` {w}", workload.name));
        }
        Ok(out)
    }

    /// The command that runs `workload` on `binary`: through the target's runner when it
    /// has one (see [`Context::runner`]).
    pub(crate) fn command(&self, workload: &Workload, binary: &Path) -> process::Command {
        let cmd = workload.command(binary, &self.jail);
        match &self.runner {
            Some(r) => cmd.through(&r.program, &r.args),
            None => cmd,
        }
    }

    /// A warning, unless the same one was already given in this run.
    pub(crate) fn warn_once(&self, msg: &str) {
        if self.state.warned.borrow_mut().insert(msg.to_string()) {
            self.ui().warn(msg);
        }
    }

    /// A workload that declares output `files` gets a fresh private copy of its cwd
    /// (under `runs/<id>/sandbox/`, removed when the returned guard drops), so no run —
    /// training, verifying or timing — ever writes into the user's tree, and no run sees
    /// files an earlier one left (`sandbox::for_files`, the rule `bench` and `hotspots`
    /// share). Other workloads are returned as they are.
    pub(crate) fn sandboxed(
        &self,
        workload: &Workload,
        tag: &str,
    ) -> std::io::Result<(Workload, Option<Sandbox>)> {
        let dest = self.sandbox_dest(workload, tag);
        let exclude = [
            self.plan.project.target_dir.clone(),
            self.plan.optimize_dir.clone(),
        ];
        let Some((w, sb)) = sandbox::for_files(workload, &self.spec.path, &dest, &exclude)? else {
            return Ok((workload.clone(), None));
        };
        let warnings = [
            sb.outside_warning(&workload.name),
            sb.left_out_warning(&workload.name),
        ];
        for warning in warnings.into_iter().flatten() {
            self.warn_once(&warning);
        }
        if sb.bytes > LARGE_SANDBOX {
            self.ui().warn(&format!(
                "workload `{}` declares output files, so each run gets a fresh copy of its cwd {} ({} MiB in {} files)\n  fix: point `cwd` at a smaller folder holding only what the workload reads",
                workload.name,
                workload.cwd.display(),
                sb.bytes >> 20,
                sb.files
            ));
        }
        Ok((w, Some(sb)))
    }

    /// Whether a private copy of the workload's cwd would be larger than this run should
    /// make just to look (`LARGE_SANDBOX` bytes, or 20 000 files).
    pub(crate) fn cwd_too_large_to_copy(&self, workload: &Workload) -> bool {
        let exclude = [
            self.plan.project.target_dir.clone(),
            self.plan.optimize_dir.clone(),
        ];
        sandbox::larger_than(&workload.cwd, &exclude, LARGE_SANDBOX, 20_000)
    }

    /// A fresh folder for a private copy of `workload`'s cwd in this run.
    fn sandbox_dest(&self, workload: &Workload, tag: &str) -> PathBuf {
        static SEQ: AtomicU32 = AtomicU32::new(0);
        self.run.root.join("sandbox").join(format!(
            "{tag}-{}-{}",
            workload.file_stem(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ))
    }

    /// A private copy of the workload's cwd whatever it declares (to see what a run
    /// writes there); removed when the returned guard drops.
    pub(crate) fn private_copy(
        &self,
        workload: &Workload,
        tag: &str,
    ) -> std::io::Result<(Workload, Sandbox)> {
        let dest = self.sandbox_dest(workload, tag);
        let exclude = [
            self.plan.project.target_dir.clone(),
            self.plan.optimize_dir.clone(),
        ];
        let root = crate::spec::spec_root(&self.spec.path);
        let sb = Sandbox::create(&sandbox::copied_folder(workload, &root), &dest, &exclude)?;
        let warnings = [
            sb.outside_warning(&workload.name),
            sb.left_out_warning(&workload.name),
        ];
        for warning in warnings.into_iter().flatten() {
            self.warn_once(&warning);
        }
        Ok((sb.moved(workload), sb))
    }

    /// Remember how long a step took (and its peak RSS when known).
    pub(crate) fn record(&self, step: &str, seconds: f64, peak_rss_bytes: Option<u64>) {
        self.state.steps.borrow_mut().push(PipelineStep {
            step: step.to_string(),
            seconds,
            peak_rss_bytes,
        });
    }

    /// The seconds of every step recorded so far: a step that may record others inside it
    /// (a comparison that first records the baseline's outputs) takes this at its start
    /// and records only its own time ([`Context::record_own`]).
    pub(crate) fn recorded_secs(&self) -> f64 {
        self.state.steps.borrow().iter().map(|s| s.seconds).sum()
    }

    /// Record a step that began at `start`, when [`Context::recorded_secs`] was
    /// `recorded_then`, without the steps recorded inside it: each second is counted once in
    /// the time by part (an unchanged re-run's baseline outputs, recorded inside the
    /// comparison that needed them, counted twice: 138 % in all).
    pub(crate) fn record_own(&self, step: &str, start: Instant, recorded_then: f64) {
        let inside = self.recorded_secs() - recorded_then;
        let own = (start.elapsed().as_secs_f64() - inside).max(0.0);
        self.record(step, own, None);
    }

    /// Time a closure as a named step.
    pub(crate) fn timed<T>(&self, step: &str, f: impl FnOnce() -> T) -> T {
        let start = Instant::now();
        let out = f();
        self.record(step, start.elapsed().as_secs_f64(), None);
        out
    }
}

/// The `built` event: what was built (or reused), where, how long it took.
fn built_event(ui: &Ui, label: &str, built: &crate::cargo::Built, reused: bool) {
    ui.event(
        "built",
        serde_json::json!({
            "candidate": label,
            "binary": built.binary,
            "seconds": built.seconds,
            "reused": reused,
        }),
    );
}
/// [`Context::exe_file_name`] for the binary named `bin`.
fn exe_file_name(bin: &str, built: &Path) -> String {
    let exe = format!("{bin}.exe");
    match built.file_name().and_then(|n| n.to_str()) {
        Some(n) if n == bin || n == exe => n.to_string(),
        _ if is_pe(built) => exe,
        _ => bin.to_string(),
    }
}

/// Whether `path` begins as a Windows executable does (`MZ`).
fn is_pe(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 2];
    std::fs::File::open(path).is_ok_and(|mut f| f.read_exact(&mut head).is_ok() && head == *b"MZ")
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_candidate_keeps_the_program_s_own_file_name() {
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str, bytes: &[u8]| {
            let p = dir.path().join(name);
            std::fs::write(&p, bytes).unwrap();
            p
        };
        // Cargo's own output keeps its name; a kept blob (named by its digest) or BOLT's
        // output gets the binary's, `.exe` for a PE file.
        assert_eq!(exe_file_name("demo", &file("demo", b"\x7fELF")), "demo");
        assert_eq!(exe_file_name("demo", &file("demo.exe", b"MZ")), "demo.exe");
        assert_eq!(exe_file_name("demo", &file("0a1b2c", b"\x7fELF")), "demo");
        assert_eq!(
            exe_file_name("demo", &file("3d4e5f", b"MZ\x90")),
            "demo.exe"
        );
        let run = RunDir {
            id: "1".into(),
            root: "/t/runs/1".into(),
        };
        assert_eq!(
            run.candidate("pgo", "demo"),
            Path::new("/t/runs/1/bin/pgo/demo")
        );
    }

    use super::*;

    #[test]
    fn two_runs_of_the_same_second_and_pid_get_two_folders() {
        // Two runs in separate PID namespaces sharing a target dir: same second, same pid.
        let tmp = tempfile::tempdir().unwrap();
        let runs = tmp.path().join("runs");
        let a = RunDir::create_named(&runs, "20260101-000000-42").unwrap();
        let b = RunDir::create_named(&runs, "20260101-000000-42").unwrap();
        assert_ne!(a.root, b.root);
        assert_ne!(a.id, b.id);
        assert_eq!(a.root, runs.join("20260101-000000-42"));
        assert!(b.id.starts_with("20260101-000000-42-"), "{}", b.id);
        assert_eq!(b.root, runs.join(&b.id));
        assert!(a.root.is_dir() && b.root.is_dir());
    }

    #[test]
    fn a_lock_file_that_is_a_symlink_is_refused_never_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("optimize");
        let victim = tmp.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        for lock in ["optimize-apply.lock", "optimize.lock"] {
            crate::sys::symlink(&victim, tmp.path().join(lock)).unwrap();
        }
        let wait = std::time::Duration::from_millis(100);
        let e = DirLock::for_apply(&dir, wait, &mut |_| ())
            .err()
            .expect("refused");
        let msg = e.to_string();
        assert!(
            msg.contains("optimize-apply.lock is a symlink") && msg.contains("fix: remove it"),
            "{msg}"
        );
        let e = DirLock::for_run(&dir).err().expect("refused");
        assert!(e.to_string().contains("optimize.lock is a symlink"), "{e}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    }

    #[test]
    fn a_second_apply_lock_waits_bounded_and_names_the_holder() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("optimize");
        let wait = std::time::Duration::from_millis(300);
        let first = DirLock::for_apply(&dir, wait, &mut |_| panic!("nobody holds it")).unwrap();
        let lock = tmp.path().join("optimize-apply.lock");
        let holder = std::fs::read_to_string(&lock).unwrap();
        assert!(
            holder.starts_with(&format!("pid {}: ", std::process::id())),
            "{holder}"
        );
        // flock locks belong to an open file: a second open in this process conflicts.
        let mut told = Vec::new();
        let start = Instant::now();
        let e = DirLock::for_apply(&dir, wait, &mut |h| told.push(h.to_string()))
            .err()
            .expect("the lock is held");
        assert!(start.elapsed() >= wait && start.elapsed() < wait * 10);
        assert_eq!(told, std::slice::from_ref(&holder));
        let msg = e.to_string();
        for part in [
            lock.display().to_string(),
            holder,
            "waited 0.3 s".into(),
            "fix: wait for that apply".into(),
        ] {
            assert!(msg.contains(&part), "no {part:?} in {msg}");
        }
        drop(first);
        assert_eq!(
            std::fs::read_to_string(&lock).unwrap(),
            "",
            "emptied on release"
        );
        // Released: taken again. Not at once, always: a child another test thread forked
        // shares the open file (and its lock) until its exec closes it.
        let again = std::time::Duration::from_secs(10);
        DirLock::for_apply(&dir, again, &mut |_| {}).expect("it was released");
    }
}
