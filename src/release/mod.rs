//! `cargo optimize release`: the release matrix — targets × flavors (feature sets) × CPU
//! levels — each artifact PGO-trained on its own build (never with a profile trained under
//! other settings), BOLTed when asked, verified against its flavor's portable baseline, and
//! packaged into the output folder with `SHA256SUMS` and `manifest.json`. The work is a
//! graph of jobs run by `jobs` with `-j` workers sharing the CPUs through cargo's jobserver.
//!
//! - `matrix`: what to build (`[release]`, the flags, the last run's choices);
//! - `work`: the job graph and what each job does;
//! - `package`: the output folder (binaries, reproducible archives, checksums, put in place
//!   whole at the end);
//! - `manifest`: `manifest.json`;
//! - `ci`: `--emit-ci github`, the matrix as a GitHub workflow that builds each cell on a
//!   runner of its target (a profile is trained only where its target runs);
//! - `gather`: `--gather DIR…`, the cells' folders merged into one release.
//! - `library`: a library a host program loads (the workloads give `command`): one artifact
//!   of what the last run chose, a wheel built by maturin whose module is checked to be the
//!   measured file, or the measured `cdylib` itself.
//!
//! Artifacts this machine cannot run (another target, a CPU level it lacks, a flavor with
//! `run = false`) are built without PGO and BOLT and are not verified; the manifest and the
//! summary say so. Targets whose standard library is not installed are skipped with the
//! fix, and the release is partial (exit 1).
//!
//! A release, top to bottom: `Matrix::resolve` (`[release]`, `--targets/--flavors/--cpu/
//! --stages`, else what the last run's report kept; a target whose standard library is not in
//! rustc's sysroot skipped with `rustup target add`), `Matrix::artifacts` (each artifact's
//! settings: the user's profile + the overrides, the flavor's features, `--target` always
//! named, `-Ctarget-cpu` for a level; `stage::cpu::cannot_run`: whether this machine runs it),
//! `work::graph`; `--dry-run` prints the graph (the tools found and each target's rustflags
//! read as for a run, `context::plan`). Else the output folder is checked (only an earlier
//! release or nothing is replaced), `jobs::run` runs the graph, each job in a `Context` of its
//! own (its flavor's spec: its workloads only; a folder per artifact), and `finish` writes
//! `SHA256SUMS` and `manifest.json` into the staging folder and renames it into place. The
//! jobs are the ladder's own code: `stage::pgo::{instrument, train_instrumented,
//! build_with}`, `stage::bolt::prepare`, `verify::{record_baseline, check_candidate}`. Exit 1
//! when a target was skipped or an artifact failed. `--no-portable` leaves the portable
//! artifact out (a CI cell building one CPU level). `--emit-ci github` stops after
//! `Matrix::resolve` (every target counted as installed: the cell's runner installs it) and
//! `check_cpu_names`; `--gather DIR…` runs before anything is located (the project only for
//! a default `--out-dir`), and on an error its staging folder is removed and the output
//! folder left untouched.
//!
//! Scaling (on paper: 100 targets × 10 flavors × 2 CPU levels = 2 000 artifacts). One
//! machine's graph has 5–6 jobs per artifact and 2 per target × flavor (≈ 14 000 jobs,
//! ≈ 5 000 cargo builds: days), so it is meant to be split: `--emit-ci github` makes each
//! cell a CI job (≈ 2 builds + a baseline: minutes; cells of one target × flavor repeat the
//! baseline build, the price of independence) and `--gather` joins their folders, so wall
//! time is the slowest cell plus the gather, bounded by the CI's concurrency. A re-run of an
//! unchanged cell is free when CI restores `target/` (`target/optimize/cache/`); sccache
//! shares compiled dependencies across cells; fleet profiles (`profile merge`) replace
//! training where production profiles exist. A dead runner fails only its cell
//! (`fail-fast: false`); `gather` needs every cell, so the release is never assembled mixed
//! or incomplete, and "re-run failed jobs" runs only the failed cells. Limits: a target no
//! runner executes gets no PGO (the manifest says so) and is not verified; the gather is
//! O(artifacts) copies and hashes (minutes), the manifest ≈ 2 KB per artifact.
//!
//! Must not: measure (a release ships what `cargo optimize` measured), or write into the
//! project anywhere but the output folder and (`--emit-ci`) its workflow file.

mod ci;
mod gather;
mod library;
mod manifest;
mod matrix;
mod package;
mod work;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::bail;

use crate::cargo::runner::Runner;
use crate::cli::{GlobalArgs, ReleaseArgs};
use crate::context::plan::{target_cfg, Plan};
use crate::context::{DirLock, RunDir};
use crate::jobs::{self, JobOutcome};
use crate::pipeline::plan;
use crate::toolchain::Rustc;
use crate::ui::Ui;
use matrix::{Artifact, Base, Inputs, LastRun, Matrix};
use work::Release;

pub(crate) fn run(g: &GlobalArgs, args: &ReleaseArgs) -> anyhow::Result<i32> {
    if let Some(dirs) = &args.gather {
        return gather_into(g, args, dirs);
    }
    let (spec, project) = locate_shipped(g)?;
    let mut plan = plan::located(g, spec, project)?;
    if plan.project.library.is_some() {
        plan.resolve_library()?;
        return library::run(args, &plan);
    }
    let ui = plan.ui.clone();
    let (spec, project, rustc) = (&plan.spec, &plan.project, &plan.rustc);
    let optimize_dir = plan.optimize_dir.clone();
    // A CI cell's runner installs its target: none is skipped.
    let emit = args.emit_ci.is_some();
    let installed = |t: &str| emit || installed(rustc, t);
    let matrix = Matrix::resolve(&Inputs {
        spec: &spec.release,
        args,
        last: LastRun::read(&optimize_dir),
        host: &rustc.host,
        selection: &project.features,
        installed: &installed,
        allow_panic_abort: spec.stages.allow_panic_abort,
    })?;
    check_cpu_names(&matrix)?;
    if emit {
        return ci::emit(g, args, project, spec, &matrix);
    }
    let runners = runners_of(&matrix, &plan.rustc)?;
    let (artifacts, groups) = artifacts_of(&matrix, &plan, &g.selection.profile, &runners)?;
    let out = package::out_dir(&match &args.out_dir {
        Some(out) => out.clone(),
        None => default_out(spec, project),
    })?;
    let graph = work::graph(&artifacts, &groups);
    announce(&ui, project, &matrix, &artifacts, &graph, &out);
    if args.dry_run {
        print!("{}", dry_run_text(&artifacts, &matrix, &graph, &out));
        return Ok(0);
    }
    if graph.is_empty() {
        bail!("nothing to build: {}", skipped_text(&matrix));
    }
    package::check_replaceable(&out)?;
    let job_ui = Ui {
        quiet: g.quiet || g.verbose == 0,
        animate: false,
        ..ui.clone()
    };
    let flavor_specs = (matrix.flavors.iter())
        .map(|f| flavor_spec(spec, f))
        .collect();
    complete_for_jobs(&mut plan, &artifacts, &groups, job_ui)?;
    plan.fresh = args.fresh;
    let _lock = DirLock::for_run(&optimize_dir)?;
    let _lockfile = crate::cargo::RunLockfile::for_run(&plan.project, &optimize_dir, &ui)?;
    let folder = RunDir::create_in(&optimize_dir.join("releases"))?;
    package::sweep_stale(&out);
    let staging = package::create_staging(&out)?;
    let release = Release {
        plan: &plan,
        artifacts: &artifacts,
        groups: &groups,
        specs: flavor_specs,
        root: folder.root.clone(),
        staging: staging.clone(),
        state: Mutex::new(Release::new_state(artifacts.len(), groups.len())),
        references: groups.iter().map(|_| Mutex::new(None)).collect(),
        mtime: source_date_epoch(),
        runners,
    };
    let options = jobs::Options::for_machine(args.jobs);
    let summary = jobs::run(&graph, &options, &ui, |_, job| release.execute(job.payload));
    finish(&ui, &release, &matrix, &graph, &summary, &out, &staging)
}

/// `--gather DIR…` into `--out-dir`, else the default output folder.
fn gather_into(g: &GlobalArgs, args: &ReleaseArgs, dirs: &[PathBuf]) -> anyhow::Result<i32> {
    let out = match &args.out_dir {
        Some(out) => out.clone(),
        None => {
            let (spec, project) = plan::locate(g)?;
            default_out(&spec, &project)
        }
    };
    gather::run(dirs, &package::out_dir(&out)?)
}

/// The project and spec, which must ship a binary or a library a host loads (not a bench
/// or test harness).
fn locate_shipped(g: &GlobalArgs) -> anyhow::Result<(crate::spec::Spec, crate::cargo::Project)> {
    let (spec, project) = plan::locate(g)?;
    if project.harness.is_some() {
        bail!(
            "{}: the workloads run the package's bench or test harness (`cargo = …`), and a release ships binaries\n  fix: release a package with a binary, or give a spec whose workloads run it with --spec",
            spec.path.display()
        );
    }
    Ok((spec, project))
}

/// `--dry-run`: what each artifact is, the job graph, and where the release would go.
fn dry_run_text(
    artifacts: &[Artifact],
    matrix: &Matrix,
    graph: &jobs::Graph<work::Step>,
    out: &Path,
) -> String {
    format!(
        "{}\n{}then: SHA256SUMS and {} into {}\n",
        what_each_is(artifacts, matrix),
        graph.render(),
        manifest::MANIFEST,
        out.display()
    )
}

/// The matrix's artifacts and groups, with what this machine cannot run said per artifact.
/// Another target's binaries run through cargo's runner for it when it has one (trained and
/// verified there, as `cargo run` would run them; an emulator's CPU runs every level).
fn artifacts_of(
    matrix: &Matrix,
    plan: &Plan,
    profile: &str,
    runners: &BTreeMap<String, Runner>,
) -> anyhow::Result<(Vec<Artifact>, Vec<matrix::Group>)> {
    let host = &plan.rustc.host;
    let cannot_run = |triple: &str, cpu: Option<&str>| {
        match cpu {
        _ if triple != host && runners.contains_key(triple) => None,
        _ if triple != host => Some(format!(
            "built for {triple}, not this machine ({host}), and cargo has no runner for it (target.{triple}.runner)"
        )),
        None => None,
        Some(cpu) => crate::stage::cpu::cannot_run(host, triple, cpu),
    }
    };
    let (mut artifacts, groups) = matrix.artifacts(&Base {
        project: &plan.project,
        profile,
        user_rustflags: &|triple| plan.user_rustflags(triple),
        cannot_run: &cannot_run,
    })?;
    for a in &mut artifacts {
        a.runner = runners.get(&a.target).map(Runner::name);
    }
    Ok((artifacts, groups))
}

/// cargo's runner for each target to build that is not this machine's, when it has one;
/// a runner whose program does not exist is an error with the fix (before anything is
/// built).
fn runners_of(matrix: &Matrix, rustc: &Rustc) -> anyhow::Result<BTreeMap<String, Runner>> {
    let mut map = BTreeMap::new();
    for triple in matrix.buildable().filter(|t| *t != rustc.host) {
        let cfg = target_cfg(triple);
        if let Some(r) = crate::cargo::runner::target_runner_here(triple, &cfg)? {
            r.check_exists(triple).map_err(anyhow::Error::msg)?;
            map.insert(triple.to_string(), r);
        }
    }
    Ok(map)
}

/// The plan every job's `Context` shares, completed: the tools the artifacts need
/// (llvm-profdata for PGO, llvm-bolt for BOLT), the first group's baseline settings, the
/// jobs' `ui`. A release is not a ladder: its jobs are bounded by their own timeouts, not
/// a budget.
fn complete_for_jobs(
    plan: &mut Plan,
    artifacts: &[Artifact],
    groups: &[matrix::Group],
    ui: Ui,
) -> anyhow::Result<()> {
    plan.find_tools(
        artifacts.iter().any(|a| a.pgo),
        artifacts.iter().any(|a| a.bolt),
    )?;
    plan.ui = ui;
    plan.baseline = groups
        .first()
        .map(|g| g.baseline.clone())
        .unwrap_or_else(|| artifacts[0].settings.clone());
    Ok(())
}

/// `[release] out-dir`, else `dist/` in the workspace.
fn default_out(spec: &crate::spec::Spec, project: &crate::cargo::Project) -> std::path::PathBuf {
    let out = (spec.release.out_dir.clone()).unwrap_or_else(|| project.workspace_root.join("dist"));
    crate::util::absolute(&out)
}

/// Write the checksums and the manifest, put the folder in place, print what was made;
/// the exit code.
fn finish(
    ui: &Ui,
    release: &Release,
    matrix: &Matrix,
    graph: &jobs::Graph<work::Step>,
    summary: &jobs::JobsSummary,
    out: &Path,
    staging: &Path,
) -> anyhow::Result<i32> {
    let state = release.state.lock().unwrap_or_else(|p| p.into_inner());
    let entries: Vec<_> = release
        .artifacts
        .iter()
        .enumerate()
        .filter_map(|(a, art)| manifest::entry(a, art, matrix, &release.specs[art.flavor], &state))
        .collect();
    let failed = failures(release.artifacts, graph, summary);
    if entries.is_empty() {
        let _ = std::fs::remove_dir_all(staging);
        let why: Vec<String> = failed
            .iter()
            .map(|f| format!("{}: {}", f.artifact, f.reason))
            .collect();
        bail!(
            "no artifact could be built; {} is unchanged\n{}",
            out.display(),
            crate::util::indent(&why.join("\n"), "  ")
        );
    }
    let packaged: Vec<_> = entries.iter().map(|e| &e.packaged).collect();
    std::fs::write(staging.join("SHA256SUMS"), package::sums(&packaged))?;
    let m = manifest_of(release, matrix, summary, entries, failed)?;
    let json = serde_json::to_string_pretty(&m)? + "\n";
    std::fs::write(staging.join(manifest::MANIFEST), json)?;
    package::put_in_place(staging, out)?;
    println!("{}", shipped_table(&m));
    println!(
        "→ {} ({} artifact(s), SHA256SUMS, {})",
        out.display(),
        m.artifacts.len(),
        manifest::MANIFEST
    );
    let (reused, run) = state.builds;
    ui.info(&format!(
        "builds: {run} run, {reused} reused from earlier runs"
    ));
    if !ui.quiet {
        eprintln!("{}", summary.render());
    }
    let partial = !m.skipped.is_empty() || !m.failed.is_empty();
    if partial {
        ui.warn(&format!("partial release: {}", partial_text(&m, matrix)));
    }
    Ok(i32::from(partial))
}

/// What failed and what was skipped, for the closing warning of a partial release.
fn partial_text(m: &manifest::Manifest, matrix: &Matrix) -> String {
    let mut parts: Vec<String> = (m.failed.iter())
        .map(|f| format!("{} failed ({})", f.artifact, first_line(&f.reason)))
        .collect();
    if !m.skipped.is_empty() {
        parts.push(skipped_text(matrix));
    }
    parts.join("; ")
}

/// The release's manifest: the crate, the source revision, the toolchain, what was chosen
/// and skipped, what failed, the jobs, and an entry per packaged artifact.
fn manifest_of(
    release: &Release,
    matrix: &Matrix,
    summary: &jobs::JobsSummary,
    artifacts: Vec<manifest::ArtifactEntry>,
    failed: Vec<manifest::Failed>,
) -> anyhow::Result<manifest::Manifest> {
    let p = &release.plan;
    let source = crate::git::Repo::of(&p.project.workspace_root)
        .ok()
        .and_then(|r| r.head())
        .map(|(revision, dirty)| manifest::SourceRevision { revision, dirty });
    Ok(manifest::Manifest {
        schema: manifest::schema(),
        created_by: manifest::CREATED_BY,
        tool_version: env!("CARGO_PKG_VERSION"),
        crate_name: p.project.package.clone(),
        bin: p.project.bin.clone(),
        version: p.project.version.clone(),
        source,
        toolchain: Some(manifest::Toolchain {
            rustc: p.rustc.version.clone(),
            llvm: p.rustc.llvm_version.clone(),
            host: p.rustc.host.clone(),
        }),
        choices: matrix.origin.clone(),
        skipped: matrix
            .targets
            .iter()
            .filter_map(|t| {
                let (reason, fix) = t.skipped.clone()?;
                Some(manifest::Skipped {
                    target: t.triple.clone(),
                    reason,
                    fix,
                })
            })
            .collect(),
        failed,
        jobs: serde_json::to_value(summary)?,
        artifacts,
        cells: Vec::new(),
    })
}

/// The artifacts whose package job did not run, and why (the first job of its chain that
/// failed).
fn failures(
    artifacts: &[Artifact],
    graph: &jobs::Graph<work::Step>,
    summary: &jobs::JobsSummary,
) -> Vec<manifest::Failed> {
    summary
        .records
        .iter()
        .filter_map(|r| {
            let work::Step::Package(a) = graph.job(r.id).payload else {
                return None;
            };
            let reason = match &r.outcome {
                JobOutcome::Done => return None,
                JobOutcome::Failed(why) | JobOutcome::Skipped(why) => why.clone(),
            };
            Some(manifest::Failed {
                artifact: artifacts[a].name.clone(),
                reason,
            })
        })
        .collect()
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s)
}

/// The table printed at the end: one line per artifact.
fn shipped_table(m: &manifest::Manifest) -> String {
    let width = m
        .artifacts
        .iter()
        .map(|a| a.name.len())
        .max()
        .unwrap_or(8)
        .max(8);
    let mut s = format!(
        "{:width$}  {:>9}  {:<8}  {:<5}  verified\n",
        "artifact", "size", "PGO", "BOLT"
    );
    for a in &m.artifacts {
        let yes = |b: bool| if b { "yes" } else { "no" };
        s.push_str(&format!(
            "{:width$}  {:>9}  {:<8}  {:<5}  {}\n",
            a.name,
            crate::util::human_bytes(a.packaged.size_bytes),
            if a.pgo.applied { "trained" } else { "no" },
            yes(a.bolt.applied),
            if a.verified {
                "yes".to_string()
            } else {
                a.verification.clone()
            }
        ));
    }
    s.trim_end().to_string()
}

fn skipped_text(matrix: &Matrix) -> String {
    matrix
        .targets
        .iter()
        .filter_map(|t| {
            let (reason, fix) = t.skipped.as_ref()?;
            Some(format!("{} skipped: {reason}\n  fix: {fix}", t.triple))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// What the release will do, on stderr.
fn announce(
    ui: &Ui,
    project: &crate::cargo::Project,
    matrix: &Matrix,
    artifacts: &[Artifact],
    graph: &jobs::Graph<work::Step>,
    out: &Path,
) {
    ui.step(&format!(
        "release of `{}` {}: {} artifact(s) — {} target(s) × {} flavor(s) × {} CPU level(s) — in {} jobs → {}",
        project.bin,
        project.version,
        artifacts.len(),
        matrix.buildable().count(),
        matrix.flavors.len(),
        matrix.cpus.len(),
        graph.len(),
        out.display()
    ));
    for o in &matrix.origin {
        ui.info(o);
    }
    for t in &matrix.targets {
        if let Some((reason, fix)) = &t.skipped {
            ui.warn(&format!("{} skipped: {reason}\n  fix: {fix}", t.triple));
        }
    }
}

/// For the dry run: each artifact and how it will be made.
fn what_each_is(artifacts: &[Artifact], matrix: &Matrix) -> String {
    let mut s = String::from("artifacts:\n");
    for a in artifacts {
        let flavor = &matrix.flavors[a.flavor];
        let mut how = Vec::new();
        match (flavor.features.is_empty(), flavor.no_default_features) {
            (true, true) => how.push("no default features".into()),
            (false, nd) => how.push(format!(
                "features {}{}",
                flavor.features.join(", "),
                if nd { " (no default features)" } else { "" }
            )),
            (true, false) => {}
        }
        how.push(match (a.pgo, &a.cannot_run) {
            (true, _) => "PGO trained on its own build".to_string(),
            (false, Some(why)) => format!("no PGO, not verified ({why})"),
            (false, None) => "no PGO".to_string(),
        });
        if a.bolt {
            how.push("BOLT".into());
        }
        s.push_str(&format!("  {}: {}\n", a.name, how.join(", ")));
    }
    s
}

/// The spec a flavor's jobs see: only the workloads that apply to it.
fn flavor_spec(spec: &crate::spec::Spec, flavor: &crate::spec::Flavor) -> crate::spec::Spec {
    let mut s = spec.clone();
    s.workloads.retain(|w| flavor.applies_to(&w.name));
    s
}

/// rustc names every CPU level of the matrix for every target (checked before building).
fn check_cpu_names(matrix: &Matrix) -> anyhow::Result<()> {
    for triple in matrix.buildable() {
        let levels: Vec<String> = matrix
            .cpus
            .iter()
            .filter(|c| *c != matrix::PORTABLE && matrix::level_applies(c, triple))
            .cloned()
            .collect();
        if let Some((_, why)) = crate::stage::cpu::unknown_name(triple, &levels) {
            bail!("release CPU levels: {why}");
        }
    }
    Ok(())
}

/// Whether `triple`'s standard library is installed in rustc's sysroot.
fn installed(rustc: &Rustc, triple: &str) -> bool {
    triple == rustc.host
        || rustc
            .sysroot
            .join("lib/rustlib")
            .join(triple)
            .join("lib")
            .is_dir()
}

/// The time stamped into archives: `SOURCE_DATE_EPOCH` (the reproducible-builds
/// convention), else 0, so the same binary always packs to the same bytes.
fn source_date_epoch() -> u64 {
    std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}
