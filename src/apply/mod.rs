//! `cargo optimize apply [RUN]`: write a run's winning settings into the project so a plain
//! cargo build reproduces them.
//!
//! - Profile overrides go into the Cargo.toml where cargo reads profiles (the workspace
//!   root's) as a named profile, `[profile.optimized]` by default, inheriting the profile
//!   the run was based on. Edited with toml_edit: comments and formatting survive.
//! - `-Ctarget-cpu` goes into `.cargo/config.toml` only with `--cpu`: a global
//!   `target-cpu=native` builds binaries that crash on other machines (cargo-wizard #17).
//! - A PGO profile is copied to `pgo/<bin>.profdata` in the package, and the exact command
//!   that builds with it is printed (cargo has no profile key for `-Cprofile-use`). Only a
//!   profile the run made is copied (`profile`): any other file a report names is refused.
//! - Without `--cpu`, a winner that picks a CPU gives way to its portable alternative; a
//!   winner that changes no profile key writes no `[profile.<name>]`.
//! - The c-compiler stage's compiler and the C profile go into the printed build command as
//!   `CC_<triple>`/`CFLAGS_<triple>` (not cargo's `[env]`, which every build would see); the
//!   alloc stage's allocator is written by `allocator`.
//!
//! One apply at a time per target dir (`DirLock::for_apply`, a bounded wait): the files are
//! read, compared and written under the lock, so concurrent applies serialise and the later
//! ones find nothing to do.
//!
//! Every change is shown as a unified diff first; `--dry-run` stops there. Applying the same
//! run again changes nothing and says so. The parts, one job each:
//! - `manifest`: the toml_edit edits (whose keys are whose in a profile; what is replaced);
//! - `text`: UTF-8, line endings kept line by line, the diff;
//! - `profile`: which PGO profile may be copied (the run's own, its recorded digest);
//! - `write`: all-or-nothing writes: through symlinks, atomic, a backup of every file that
//!   existed that never overwrites a file (`<file>.bak`, `.bak.1`, …; not `.orig`, a name
//!   `cargo package` reserves), everything undone on failure.
//!
//! Must not: build, run or measure anything (it reads report.json).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::cargo::Workspace;
use crate::cli::{ApplyArgs, GlobalArgs};
use crate::context::DirLock;
use crate::report::{self, Report, Status};
use crate::stages::{label_of, Changes};

mod allocator;
mod library;
mod manifest;
mod pgo_profile;

use crate::propose::{text, unified_diff, write};
pub(crate) use manifest::{edit_config, edit_manifest, Edited};

/// Names cargo reserves and rejects as custom profiles.
const RESERVED_PROFILES: &[&str] = &["doc", "check", "build", "debug", "default"];

const PGO_WARN: &str = "-Cllvm-args=-pgo-warn-missing-function";

/// What a run's report says to ship (the parts `apply` needs).
#[derive(Debug, Clone)]
pub(crate) struct Winner {
    pub crate_name: String,
    pub bin: String,
    pub host: String,
    pub stage: String,
    pub variant: Option<String>,
    pub binary: String,
    /// The profile the run was based on (`--profile`).
    pub base_profile: String,
    /// Key → TOML literal.
    pub overrides: BTreeMap<String, String>,
    /// The flags the stages added (not the user's).
    pub stage_rustflags: Vec<String>,
    pub user_rustflags: Vec<String>,
    pub target: Option<String>,
    pub features: crate::cargo::Features,
    pub speedup: Option<f64>,
    /// The global allocator the alloc stage swapped in.
    pub allocator: Option<String>,
    /// The C compiler and flags `cc` was given (c-compiler, whole-program PGO).
    pub c: Option<crate::cargo::cc::CBuild>,
}

impl Winner {
    /// What the report says to ship: without `cpu`, its portable alternative when the
    /// winner picks a CPU and the run found one (a binary built for one CPU can crash on
    /// others); the CPU-specific winner with `cpu`, or when the report has no alternative.
    pub(crate) fn from_report(report: &Report, cpu: bool) -> anyhow::Result<Winner> {
        let best = report
            .final_
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("the report has no `final` choice"))?;
        Self::of_choice(report, best.to_ship(cpu))
    }

    fn of_choice(report: &Report, fin: &report::FinalChoice) -> anyhow::Result<Winner> {
        // Newer reports carry the settings in `final`; older ones only in the stage row.
        let settings = fin
            .settings
            .as_ref()
            .or_else(|| {
                report
                    .stages
                    .iter()
                    .rev()
                    .find(|s| s.name == fin.stage && s.status == Status::Kept)?
                    .settings
                    .as_ref()
            })
            .ok_or_else(|| anyhow::anyhow!("the report has no settings for `{}`", fin.stage))?;
        let (stage_rustflags, user_rustflags) =
            if settings.stage_rustflags.is_empty() && settings.user_rustflags.is_empty() {
                // Older reports: all flags in one list; keep the ones stages add.
                settings.rustflags.iter().cloned().partition(|f| {
                    f.starts_with("-Ctarget-cpu=")
                        || f.starts_with("-Cprofile-use=")
                        || f.as_str() == PGO_WARN
                })
            } else {
                (
                    settings.stage_rustflags.clone(),
                    settings.user_rustflags.clone(),
                )
            };
        Ok(Winner {
            crate_name: report.crate_name.clone(),
            bin: report.bin.clone(),
            host: report.toolchain.host.clone(),
            stage: fin.stage.clone(),
            variant: fin.variant.clone(),
            binary: fin.binary.clone(),
            base_profile: settings.profile.clone(),
            overrides: settings.profile_overrides.clone(),
            stage_rustflags,
            user_rustflags,
            target: settings.target.clone(),
            features: settings.features.clone(),
            speedup: fin.speedup_vs_baseline,
            allocator: settings.allocator.clone(),
            c: settings.c.clone(),
        })
    }

    /// Whether this winner is the portable alternative of one that picks a CPU.
    pub(crate) fn is_portable_alternative(&self, report: &Report) -> bool {
        report
            .final_
            .as_ref()
            .is_some_and(|f| f.binary != self.binary && f.picks_cpu())
    }

    pub(crate) fn target_cpu(&self) -> Option<String> {
        crate::cargo::target_cpu_of(&self.stage_rustflags)
    }

    pub(crate) fn profile_use(&self) -> Option<PathBuf> {
        crate::cargo::codegen_option(&self.stage_rustflags, "profile-use").map(PathBuf::from)
    }

    /// Stage flags `apply` cannot write anywhere (nor fold into the printed command). The
    /// relocations a PGO build links with, ready for a BOLT stage, are not wanted in a build
    /// without BOLT, so they are not among them.
    fn other_flags(&self) -> Vec<String> {
        let bolt = label_of(Changes::CodeLayout);
        self.stage_rustflags
            .iter()
            .filter(|f| {
                !(f.starts_with("-Ctarget-cpu=")
                    || f.starts_with("-Cprofile-use=")
                    || f.as_str() == PGO_WARN
                    || (f.as_str() == crate::cargo::EMIT_RELOCS_FLAG && self.stage != bolt))
            })
            .cloned()
            .collect()
    }
}

/// One file `apply` would write.
#[derive(Debug)]
struct ManifestEdit {
    path: PathBuf,
    old: Option<Vec<u8>>,
    /// The bytes to write (line endings and byte-order mark as the file had them).
    new: Vec<u8>,
    /// Text files: the old and new text with LF endings, for the diff, and whether the
    /// file's lines end in CRLF. Binary files are shown as a copy.
    diff: Option<(String, String, bool)>,
    what: String,
}

impl ManifestEdit {
    fn changes(&self) -> bool {
        self.old.as_deref() != Some(self.new.as_slice())
    }

    /// A text file edited by `edit` (on its text with LF endings).
    fn text(
        path: PathBuf,
        what: String,
        edit: impl FnOnce(&str) -> anyhow::Result<Edited>,
        notes: &mut Vec<String>,
    ) -> anyhow::Result<ManifestEdit> {
        let old = read_existing(&path)?;
        let text = text::Text::decode(old.as_deref().unwrap_or_default(), &path)?;
        let old_lf = text.lf();
        let edited = edit(&old_lf).with_context(|| format!("cannot edit {}", path.display()))?;
        notes.extend(edited.notes);
        Ok(ManifestEdit {
            new: text.encode(&edited.text),
            diff: Some((old_lf, edited.text, text.crlf())),
            path,
            old,
            what,
        })
    }
}

/// The bytes of `path`, `None` when there is no such file (or its folder is not one: the
/// write says so).
fn read_existing(path: &Path) -> anyhow::Result<Option<Vec<u8>>> {
    match std::fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// How long `apply` waits for another `apply` on the same target dir.
const APPLY_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// `cargo optimize apply`.
pub(crate) fn run(g: &GlobalArgs, args: &ApplyArgs) -> anyhow::Result<i32> {
    validate_profile_name(&args.profile_name)?;
    let report_path = find_report(g, args.run.as_deref())?;
    let report = report::load(&report_path)?;
    refuse_quick(&report, &report_path, args.allow_quick)?;
    let win = Winner::from_report(&report, args.cpu)
        .with_context(|| format!("in {}", report_path.display()))?;
    eprintln!("applying run {} ({})", report.run_id, report_path.display());
    let portable = win.is_portable_alternative(&report);
    if win.stage == "baseline" {
        println!(
            "{}",
            if portable {
                "nothing to apply without --cpu: the winner picks a CPU, and no candidate that runs on any machine was measurably faster than the baseline (--cpu applies the winner, for this machine's CPU only)"
            } else {
                "nothing to apply: no stage of this run was measurably faster than the baseline, so your current build is already the one to ship"
            }
        );
        return Ok(0);
    }
    if portable {
        eprintln!(
            "applying the portable alternative `{}` (no target-cpu: it runs on any {} machine); --cpu applies the winner, built for this machine's CPU only",
            label(&win),
            win.target.as_deref().unwrap_or(&win.host)
        );
    }
    let ws = Workspace::load(&g.selection)?;
    let package = g.selection.package.as_deref().unwrap_or(&win.crate_name);
    let bin = g.selection.bin.as_deref().unwrap_or(&win.bin);
    let (project, builds) = library::project_of(g, &ws, package, bin)?;
    // One apply at a time per target dir: the files are read, compared and written under
    // the lock, so a second apply finds the first one's result (nothing to do).
    let optimize_dir = project.target_dir.join("optimize");
    let _lock = DirLock::for_apply(&optimize_dir, APPLY_WAIT, &mut |holder| {
        eprintln!(
            "waiting for another `cargo optimize apply` to finish ({holder}; at most {} s)",
            APPLY_WAIT.as_secs()
        )
    })?;
    let run_dir = report_path.parent().unwrap_or(Path::new("."));
    let caches = profile_caches(&optimize_dir, run_dir);
    let planned = plan(&project, &win, args, &report, run_dir, &caches)?;
    let mut notes = planned.notes;
    let any = show(&planned.changes, &project.workspace_root);
    if !any {
        println!("already applied: nothing to change");
    } else if args.dry_run {
        println!("dry run: nothing written");
    } else {
        write_changes(&planned.changes)?;
    }
    let cpu = win.target_cpu();
    if let (Some(cpu), true, false) = (&cpu, args.cpu, args.dry_run) {
        if let Some(why) = cpu_flag_not_in_effect(&project.workspace_root, &win.host, cpu) {
            notes.push(why);
        }
    }
    for n in &notes {
        eprintln!("note: {n}");
    }
    println!();
    let profile = match win.overrides.is_empty() {
        true => &win.base_profile,
        false => &args.profile_name,
    };
    let (manifest, pgo) = (&project.manifest_path, planned.pgo_dest.as_deref());
    let portable = cpu.is_some() && !args.cpu;
    print!(
        "{}",
        build_instructions(&win, &builds, profile, manifest, pgo, portable)
    );
    Ok(0)
}

/// A quick run's winner is for iteration: applied only with `--allow-quick`.
fn refuse_quick(report: &Report, path: &Path, allowed: bool) -> anyhow::Result<()> {
    if report.quick && !allowed {
        anyhow::bail!(
            "run {} ({}) was a quick run (--quick: pgo only, one eval workload per name, a short budget): its winner is for iteration, not for shipping\n  fix: run `cargo optimize` without --quick and apply that run, or pass --allow-quick to apply this one anyway",
            report.run_id,
            path.display()
        );
    }
    Ok(())
}

/// `pgo (portable)`, or the stage's name.
fn label(win: &Winner) -> String {
    crate::context::label(&win.stage, win.variant.as_deref())
}

/// The profile caches a run's `-Cprofile-use` may name: the project's, and the one of the
/// target dir the run folder is in (`<optimize>/runs/<id>`) when that is another.
fn profile_caches(optimize_dir: &Path, run_dir: &Path) -> Vec<PathBuf> {
    let mut caches = vec![optimize_dir.join("cache")];
    let real = run_dir
        .canonicalize()
        .unwrap_or_else(|_| run_dir.to_path_buf());
    if let Some(runs) = real
        .parent()
        .filter(|p| p.file_name() == Some("runs".as_ref()))
    {
        if let Some(theirs) = runs.parent().map(|o| o.join("cache")) {
            if !caches.contains(&theirs) {
                caches.push(theirs);
            }
        }
    }
    caches
}

/// What `apply` would write, and the notes about it.
struct Planned {
    changes: Vec<ManifestEdit>,
    notes: Vec<String>,
    /// Where the PGO profile goes, when the winner has one.
    pgo_dest: Option<PathBuf>,
}

/// The changes that put `win` into the project (read under the apply lock).
fn plan(
    project: &crate::cargo::Project,
    win: &Winner,
    args: &ApplyArgs,
    report: &Report,
    run_dir: &Path,
    caches: &[PathBuf],
) -> anyhow::Result<Planned> {
    let mut changes = Vec::new();
    let mut notes = Vec::new();

    // 1. The named profile, where cargo reads profiles: the workspace root manifest. None
    //    when the winner changes no profile key (it would only say `inherits`): the build
    //    uses the run's base profile.
    let manifest = project.workspace_root.join("Cargo.toml");
    if !manifest.exists() {
        anyhow::bail!("cannot read {}: no such file", manifest.display());
    }
    let alloc = allocator::of(win)?;
    let alloc_here = alloc.filter(|_| project.manifest_path == manifest);
    changes.extend(manifest_change(
        manifest,
        win,
        &args.profile_name,
        alloc_here,
        &mut notes,
    )?);

    // 2. target-cpu, only when asked.
    changes.extend(cpu_change(project, win, args.cpu, &mut notes)?);

    // 3. The PGO profile, at a stable path in the package: only one the run made.
    let mut pgo_dest = None;
    if let Some(src) = win.profile_use() {
        let dest = project
            .package_dir
            .join(label_of(Changes::TrainingProfile))
            .join(format!("{}.profdata", win.bin));
        let new = pgo_profile::checked(report, run_dir, caches, &src)?;
        changes.push(ManifestEdit {
            old: read_existing(&dest)?,
            path: dest.clone(),
            new,
            diff: None,
            what: "the PGO profile".into(),
        });
        pgo_dest = Some(dest);
    }
    // 4. The global allocator: its item in the binary's root file (and its dependency in a
    //    member's manifest).
    if let Some(a) = alloc {
        changes.extend(allocator::changes(
            project,
            a,
            report,
            alloc_here.is_none(),
            &mut notes,
        )?);
    }
    if win.stage == label_of(Changes::CodeLayout) {
        notes.push(format!(
            "the winner was post-processed by BOLT, which no cargo setting reproduces: the settings written here are those of the build BOLT started from; the BOLT-optimized binary is {}",
            win.binary
        ));
    }
    let other = win.other_flags();
    if !other.is_empty() {
        notes.push(format!(
            "stage rustflags not written anywhere: {}",
            other.join(" ")
        ));
    }
    Ok(Planned {
        changes,
        notes,
        pgo_dest,
    })
}

/// The workspace root manifest's change: the named profile (none when the winner changes no
/// profile key: it would only say `inherits`) and, when the package is the root, the global
/// allocator's dependency, one edit after the other in the one file.
fn manifest_change(
    manifest: PathBuf,
    win: &Winner,
    profile_name: &str,
    alloc: Option<&crate::cargo::alloc::Allocator>,
    notes: &mut Vec<String>,
) -> anyhow::Result<Option<ManifestEdit>> {
    if win.overrides.is_empty() && alloc.is_none() {
        return Ok(None);
    }
    let what = match win.overrides.is_empty() {
        true => "the global allocator's crate".to_string(),
        false => format!("[profile.{profile_name}]"),
    };
    let change = ManifestEdit::text(
        manifest,
        what,
        |text| {
            let mut e = match win.overrides.is_empty() {
                true => Edited::unchanged(text),
                false => edit_manifest(text, profile_name, &win.base_profile, &win.overrides)?,
            };
            allocator::add_dependency(&mut e, alloc)?;
            Ok(e)
        },
        notes,
    )?;
    Ok(Some(change))
}

/// `.cargo/config.toml`'s `-Ctarget-cpu` with `--cpu`; without it, a note.
fn cpu_change(
    project: &crate::cargo::Project,
    win: &Winner,
    write_cpu: bool,
    notes: &mut Vec<String>,
) -> anyhow::Result<Option<ManifestEdit>> {
    match (win.target_cpu(), write_cpu) {
        (Some(cpu), true) => {
            // The file cargo reads there (`config` when it exists), not one it would ignore.
            let path = crate::cargo::config_file(&project.workspace_root.join(".cargo"));
            let change = ManifestEdit::text(
                path,
                format!("-Ctarget-cpu={cpu}"),
                |text| edit_config(text, &cpu, &win.host, &host_cfg(&win.host)),
                notes,
            )?;
            notes.push(format!(
                "-Ctarget-cpu={cpu} now applies to every build of this workspace (all profiles): the binaries may crash with `illegal instruction` on CPUs that lack its features"
            ));
            return Ok(Some(change));
        }
        (Some(cpu), false) => notes.push(format!(
            "the winner was also built with -Ctarget-cpu={cpu}; not written, because binaries built for one CPU can crash on others. Pass --cpu to write it to .cargo/config.toml, or add it to RUSTFLAGS only where you build for this machine"
        )),
        (None, true) => notes.push(
            "--cpu: the winner does not pick a CPU; nothing to write to .cargo/config.toml".into(),
        ),
        (None, false) => {}
    }
    Ok(None)
}

/// Print each change (a diff, or what a binary copy replaces); whether any changes a file.
fn show(changes: &[ManifestEdit], root: &Path) -> bool {
    let mut any = false;
    for c in changes {
        if !c.changes() {
            eprintln!("{}: {} already up to date", c.path.display(), c.what);
            continue;
        }
        any = true;
        match &c.diff {
            Some((old, new, crlf)) => {
                let shown = c.path.strip_prefix(root).unwrap_or(&c.path);
                print!("{}", unified_diff(old, new, &shown.display().to_string()));
                if *crlf {
                    eprintln!("{}: CRLF line endings kept", c.path.display());
                }
            }
            None => println!(
                "{} {} ({} bytes)",
                if c.old.is_some() { "replace" } else { "create" },
                c.path.display(),
                c.new.len()
            ),
        }
    }
    any
}

/// Write the changes that change a file (all or nothing) and say what was written.
fn write_changes(changes: &[ManifestEdit]) -> anyhow::Result<()> {
    let files: Vec<write::FileWrite> = changes
        .iter()
        .filter(|c| c.changes())
        .map(|c| write::FileWrite {
            path: c.path.clone(),
            old: c.old.clone(),
            new: c.new.clone(),
        })
        .collect();
    write::write_all(&files)?.iter().for_each(write::tell);
    Ok(())
}

/// `rustc --print cfg` for `host` (none when rustc does not answer): what decides which
/// `[target.'cfg(…)']` tables apply.
fn host_cfg(host: &str) -> Vec<String> {
    crate::process::tool_stdout(
        crate::toolchain::rustc_program(),
        ["--print", "cfg", "--target", host],
    )
    .unwrap_or_default()
    .lines()
    .map(str::to_string)
    .collect()
}

/// Cargo takes rustflags from one place only (RUSTFLAGS, else target tables, else
/// `[build]`): say so when the flag just written is not the one cargo will use here.
fn cpu_flag_not_in_effect(root: &Path, host: &str, cpu: &str) -> Option<String> {
    let cfg = host_cfg(host);
    let cargo_home = crate::cargo::cargo_home();
    let flags = crate::cargo::user_rustflags(
        &|k| std::env::var(k).ok(),
        root,
        cargo_home.as_deref(),
        &crate::cargo::cli_config(),
        host,
        &cfg,
    )
    .ok()?;
    let want = format!("-Ctarget-cpu={cpu}");
    (crate::cargo::target_cpu_of(&flags).as_deref() != Some(cpu)).then(|| {
        format!(
            "cargo will not use the {want} just written from {}: rustflags come from one place only (RUSTFLAGS or CARGO_ENCODED_RUSTFLAGS, else [target] tables, else [build]); the effective flags here are: {}",
            root.display(),
            if flags.is_empty() { "(none)".to_string() } else { flags.join(" ") }
        )
    })
}

fn validate_profile_name(name: &str) -> anyhow::Result<()> {
    let ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        && !RESERVED_PROFILES.contains(&name);
    if !ok {
        anyhow::bail!(
            "--profile-name `{name}` is not a usable cargo profile name\n  fix: use letters, digits, `-` and `_` (not one of {}), e.g. `optimized`",
            RESERVED_PROFILES.join(", ")
        );
    }
    Ok(())
}

/// RUN: a report.json, a run folder, a run id under target/optimize/runs, or (default) the
/// latest run.
pub(crate) fn find_report(g: &GlobalArgs, run: Option<&str>) -> anyhow::Result<PathBuf> {
    if let Some(r) = run.filter(|r| Path::new(r).exists()) {
        return Ok(report::locate(Path::new("."), Some(r))?);
    }
    Ok(report::locate(
        &crate::pipeline::plan::optimize_dir(g)?,
        run,
    )?)
}

/// How to build what was applied.
fn build_instructions(
    win: &Winner,
    builds: &library::Builds,
    profile: &str,
    manifest: &Path,
    pgo: Option<&Path>,
    cpu_not_written: bool,
) -> String {
    let mut s = String::new();
    let features = features_args(&win.features);
    let target_arg = win
        .target
        .as_ref()
        .map(|t| format!(" --target {t}"))
        .unwrap_or_default();
    let manifest = shell_quote(&manifest.display().to_string());
    let c_env = win.c.as_ref().map(|c| c_env(c, pgo)).unwrap_or_default();
    match pgo {
        None => {
            let flags = cpu_not_written
                .then(|| win.target_cpu())
                .flatten()
                .map(|c| format!("(this machine only: RUSTFLAGS=\"-Ctarget-cpu={c}\")\n"))
                .unwrap_or_default();
            let command = builds.command(&manifest, profile, &format!("{target_arg}{features}"));
            s.push_str(&format!("build it with:\n  {c_env}{command}\n{flags}"));
        }
        Some(p) => {
            // RUSTFLAGS replaces every rustflags of the cargo config, so the command repeats
            // the user's own flags (and the target-cpu the winner was built with).
            let mut flags = win.user_rustflags.clone();
            let cpu = win.target_cpu();
            if let Some(c) = cpu.as_ref().filter(|_| !cpu_not_written) {
                flags.push(format!("-Ctarget-cpu={c}"));
            }
            flags.push(format!("-Cprofile-use={}", p.display()));
            flags.push(PGO_WARN.to_string());
            let target = win.target.clone().unwrap_or_else(|| win.host.clone());
            let command =
                builds.command(&manifest, profile, &format!(" --target {target}{features}"));
            s.push_str(&format!(
                "build it with the PGO profile (RUSTFLAGS replaces your cargo config's rustflags, so yours are repeated; --target keeps build scripts uninstrumented):\n  {c_env}RUSTFLAGS={} {command}\n  → {}\n(the profile matches this source code: after larger changes, rerun `cargo optimize` and `cargo optimize apply` to refresh it)\n",
                shell_quote(&flags.join(" ")),
                builds.output(&target, profile, &win.bin)
            ));
            if let Some(c) = cpu.filter(|_| cpu_not_written) {
                s.push_str(&format!("(the run measured it with -Ctarget-cpu={c}: add it to RUSTFLAGS only where you build for this machine)\n"));
            }
        }
    }
    if let Some(x) = win.speedup {
        s.push_str(&format!(
            "(the run measured a time ratio of {:.3} against the baseline for `{}`; below 1 is faster)\n",
            1.0 / x,
            label(win)
        ));
    }
    s
}

/// The variables that give `cc`'s C and C++ the compiler the run gave them, and with a PGO
/// profile, that profile (`-fprofile-use`, the copy `apply` made: one file for both
/// compilers). Printed in the command rather than written into `[env]` of
/// `.cargo/config.toml`: `[env]` would reach every build of the project (a debug build's
/// C with a release profile), and the clang's path is this machine's.
fn c_env(c: &crate::cargo::cc::CBuild, pgo: Option<&Path>) -> String {
    let mut c = c.clone();
    let use_flag = pgo.map(crate::cargo::cc::profile_use_flag);
    c.flags = (c.flags.iter())
        .filter_map(|f| match f.starts_with("-fprofile-use=") {
            true => use_flag.clone(),
            false => Some(f.clone()),
        })
        .collect();
    (c.vars(&|k| std::env::var(k).ok()).iter())
        .map(|(k, v)| format!("{k}={} ", shell_quote(v)))
        .collect()
}

fn features_args(f: &crate::cargo::Features) -> String {
    let mut s = String::new();
    if !f.features.is_empty() {
        s.push_str(&format!(
            " --features {}",
            shell_quote(&f.features.join(","))
        ));
    }
    if f.all_features {
        s.push_str(" --all-features");
    }
    if f.no_default_features {
        s.push_str(" --no-default-features");
    }
    s
}

fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=,:+@%".contains(c))
    {
        s.to_string()
    } else {
        let mut q = String::from("\"");
        for c in s.chars() {
            if matches!(c, '\\' | '"' | '$' | '`') {
                q.push('\\');
            }
            q.push(c);
        }
        q.push('"');
        q
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_names_cargo_rejects_are_refused() {
        assert!(validate_profile_name("doc").is_err());
        assert!(validate_profile_name("a b").is_err());
        assert!(validate_profile_name("optimized").is_ok());
    }

    #[test]
    fn winner_from_a_report() {
        let report = serde_json::json!({
            "schema": 1, "tool_version": "0", "run_id": "r",
            "crate": "demo", "bin": "demo",
            "toolchain": {"rustc": "1", "llvm": "22", "host": "x86_64-unknown-linux-gnu"},
            "stages": [], "workloads": [], "pipeline": [],
            "final": {
                "stage": "pgo", "binary": "/r/bin/pgo", "speedup_vs_baseline": 1.5,
                "settings": {
                    "profile": "release",
                    "profile_overrides": {"lto": "\"fat\""},
                    "rustflags": [],
                    "stage_rustflags": ["-Ctarget-cpu=x86-64-v3", "-Cprofile-use=/c/x.profdata", PGO_WARN],
                    "user_rustflags": ["--cfg", "user_flag"],
                    "target": "x86_64-unknown-linux-gnu",
                    "features": {"features": [], "all_features": false, "no_default_features": false}
                }
            }
        });
        let report: Report = serde_json::from_value(report).unwrap();
        let w = Winner::from_report(&report, true).unwrap();
        assert_eq!(w.target_cpu().as_deref(), Some("x86-64-v3"));
        assert_eq!(w.profile_use(), Some(PathBuf::from("/c/x.profdata")));
        assert!(w.other_flags().is_empty());
        let text = build_instructions(
            &w,
            &library::Builds::Binary,
            "optimized",
            Path::new("/p/Cargo.toml"),
            Some(Path::new("/p/pgo/demo.profdata")),
            false,
        );
        assert!(
            text.contains("RUSTFLAGS=\"--cfg user_flag -Ctarget-cpu=x86-64-v3 -Cprofile-use=/p/pgo/demo.profdata -Cllvm-args=-pgo-warn-missing-function\" cargo build --manifest-path /p/Cargo.toml --profile optimized --target x86_64-unknown-linux-gnu"),
            "{text}"
        );
        // Not written (no --cpu): not in the command either, said beside it.
        let text = build_instructions(
            &w,
            &library::Builds::Binary,
            "optimized",
            Path::new("/p/Cargo.toml"),
            Some(Path::new("/p/pgo/demo.profdata")),
            true,
        );
        assert!(
            text.contains("RUSTFLAGS=\"--cfg user_flag -Cprofile-use=/p/pgo/demo.profdata -Cllvm-args=-pgo-warn-missing-function\" cargo build"),
            "{text}"
        );
        assert!(
            text.contains("measured it with -Ctarget-cpu=x86-64-v3"),
            "{text}"
        );
    }

    #[test]
    fn without_cpu_the_portable_alternative_is_applied() {
        let settings = |flags: &[&str]| {
            serde_json::json!({
                "profile": "release", "profile_overrides": {}, "rustflags": [],
                "stage_rustflags": flags, "user_rustflags": [], "target": null,
                "features": {"features": [], "all_features": false, "no_default_features": false}
            })
        };
        let report = serde_json::json!({
            "schema": 1, "tool_version": "0", "run_id": "r",
            "crate": "demo", "bin": "demo",
            "toolchain": {"rustc": "1", "llvm": "22", "host": "x86_64-unknown-linux-gnu"},
            "stages": [], "workloads": [], "pipeline": [],
            "final": {
                "stage": "pgo", "binary": "/r/bin/pgo", "speedup_vs_baseline": 1.34,
                "settings": settings(&["-Ctarget-cpu=x86-64-v3", "-Cprofile-use=/c/x.profdata"]),
                "portable": {
                    "stage": "pgo", "variant": "portable", "binary": "/r/bin/pgo-portable",
                    "speedup_vs_baseline": 1.09,
                    "settings": settings(&["-Cprofile-use=/c/x.profdata"]),
                }
            }
        });
        let report: Report = serde_json::from_value(report).unwrap();
        let w = Winner::from_report(&report, false).unwrap();
        assert_eq!(w.binary, "/r/bin/pgo-portable");
        assert_eq!(w.target_cpu(), None);
        assert_eq!(w.speedup, Some(1.09));
        assert!(w.is_portable_alternative(&report));
        let w = Winner::from_report(&report, true).unwrap();
        assert_eq!(w.binary, "/r/bin/pgo");
        assert!(!w.is_portable_alternative(&report));
    }
}
