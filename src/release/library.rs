//! `release` of a library a host program loads (the workloads give `command`): one
//! artifact, for this machine's target, of what the last `cargo optimize` run ships — its
//! final choice, or that choice's portable alternative when it picks a CPU (a wheel's
//! platform tag names no CPU level). A Python extension module ships as a wheel built by
//! maturin with that choice's settings (`cargo::wheel`: the profile and its overrides, the
//! rustflags — `-Cprofile-use` of the run's merged PGO profile among them), whose module is
//! then compared with the file the run measured: the same bytes, else the same defined
//! function symbols, else it is refused (exit 2, nothing replaced). A plain `cdylib` ships
//! as the measured file itself, beside a `.tar.gz` of it. The other axes of a release's
//! matrix (targets, flavors, CPU levels, stages, `--no-portable`, `--emit-ci`, `[release]`
//! lists and profile) are refused with the fix before anything is built.
//!
//! Must not: measure, train or verify (the run did), or write outside the output folder,
//! the release's folder under `target/optimize/releases/` and its cargo target directory.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};

use super::manifest::{self, Applied, ArtifactEntry, LibraryShipped, Pgo};
use super::package::{self, Packaged};
use crate::cargo::wheel::{self, Identity, Maturin};
use crate::cargo::BuildSettings;
use crate::cli::ReleaseArgs;
use crate::context::{DirLock, Plan, RunDir};
use crate::report::{self, FinalChoice, Report};
use crate::stages::{label_of, Changes};

/// What the last run ships.
struct Shipping {
    report: Report,
    choice: FinalChoice,
    settings: BuildSettings,
    measured: PathBuf,
}

/// The artifact made, and whether its library is the measured one.
struct Made {
    packaged: Packaged,
    identity: Identity,
    built_by: Option<String>,
}

pub(super) fn run(args: &ReleaseArgs, plan: &Plan) -> anyhow::Result<i32> {
    let (project, ui) = (&plan.project, &plan.ui);
    let library = project.library.as_ref().expect("a library project");
    refuse_matrix(args, plan)?;
    // maturin is looked for first: missing, nothing else is read or built.
    let maturin = (library.interpreter.as_deref())
        .map(Maturin::find)
        .transpose()?;
    let ship = shipping(&plan.optimize_dir)?;
    let out = package::out_dir(&match &args.out_dir {
        Some(out) => out.clone(),
        None => super::default_out(&plan.spec, project),
    })?;
    let kind = match library.python_module {
        Some(_) => "wheel",
        None => "cdylib",
    };
    ui.step(&format!(
        "release of `{}` {}: one {kind} of the `{}` choice of run {} → {}",
        project.package,
        project.version,
        ship.choice.stage,
        ship.report.run_id,
        out.display()
    ));
    if args.dry_run {
        println!("{}", dry_run_text(plan, &ship, &out));
        return Ok(0);
    }
    package::check_replaceable(&out)?;
    let _lock = DirLock::for_run(&plan.optimize_dir)?;
    let _lockfile = crate::cargo::RunLockfile::for_run(project, &plan.optimize_dir, ui)?;
    let folder = RunDir::create_in(&plan.optimize_dir.join("releases"))?;
    package::sweep_stale(&out);
    let staging = package::create_staging(&out)?;
    let made = match make(plan, maturin.as_ref(), &ship, &folder.root, &staging) {
        Ok(m) => m,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(e.context(format!("{} is unchanged", out.display())));
        }
    };
    let entry = entry_of(plan, &ship, &made);
    std::fs::write(
        staging.join("SHA256SUMS"),
        package::sums(&[&entry.packaged]),
    )?;
    let m = manifest_of(plan, &ship, entry);
    let json = serde_json::to_string_pretty(&m)? + "\n";
    std::fs::write(staging.join(manifest::MANIFEST), json)?;
    package::put_in_place(&staging, &out)?;
    println!("{}", super::shipped_table(&m));
    println!("{}: {}", library.file, made.identity.text());
    println!(
        "→ {} (1 artifact, SHA256SUMS, {})",
        out.display(),
        manifest::MANIFEST
    );
    Ok(0)
}

/// The matrix's other axes, refused with the fix: a library's release is one artifact.
fn refuse_matrix(args: &ReleaseArgs, plan: &Plan) -> anyhow::Result<()> {
    let host = &plan.rustc.host;
    let r = &plan.spec.release;
    let other_target = |ts: &[String]| ts.iter().any(|t| t != host);
    let cpu_level = |c: &[String]| c.iter().any(|c| c != "none");
    let refused = [
        (
            args.targets.as_deref().is_some_and(other_target),
            "--targets",
        ),
        (other_target(&r.targets), "[release] targets"),
        (args.flavors.is_some(), "--flavors"),
        (!r.flavors.is_empty(), "[release.flavors]"),
        (args.cpu.as_deref().is_some_and(cpu_level), "--cpu"),
        (r.cpu.as_deref().is_some_and(cpu_level), "[release] cpu"),
        (args.stages.is_some(), "--stages"),
        (r.stages.is_some(), "[release] stages"),
        (r.profile.is_some(), "[release] profile"),
        (args.no_portable, "--no-portable"),
        (args.emit_ci.is_some(), "--emit-ci"),
    ];
    if let Some((_, what)) = refused.iter().find(|(on, _)| *on) {
        bail!(
            "{what}: the release of a library a host program loads (the workloads give `command`) is one artifact for now: this machine's target ({host}), shipping what the last `cargo optimize` run chose, with its settings (no other targets, flavors, CPU levels or stages)\n  fix: leave out {what}; to ship other settings, run `cargo optimize` with them (e.g. --stages) and release that run"
        );
    }
    Ok(())
}

/// What the newest run under `optimize_dir` ships, and the file it measured.
fn shipping(optimize_dir: &Path) -> anyhow::Result<Shipping> {
    let path = report::locate(optimize_dir, None).map_err(|e| {
        anyhow::anyhow!(
            "no run to release ({e}): a library ships what a `cargo optimize` run measured\n  fix: run `cargo optimize` first"
        )
    })?;
    let report = report::load(&path)?;
    let best = (report.final_.as_ref())
        .with_context(|| format!("{}: the run chose nothing to ship", path.display()))?;
    let choice = best.to_ship(false).clone();
    let s = (choice.settings.as_ref())
        .with_context(|| format!("{}: the final choice has no settings", path.display()))?;
    let settings = BuildSettings {
        profile: s.profile.clone(),
        profile_overrides: s.profile_overrides.clone(),
        user_rustflags: s.user_rustflags.clone(),
        stage_rustflags: s.stage_rustflags.clone(),
        target: s.target.clone(),
        features: s.features.clone(),
        allocator: s.allocator.clone(),
        c: s.c.clone(),
        relocs_twin: false,
    };
    let measured = PathBuf::from(&choice.binary);
    if !measured.is_file() {
        bail!(
            "the file run {} measured, {}, is gone (target/optimize trimmed or cleaned?)\n  fix: run `cargo optimize` again, then release",
            report.run_id,
            measured.display()
        );
    }
    Ok(Shipping {
        report,
        choice,
        settings,
        measured,
    })
}

/// The artifact in `staging`: the wheel maturin builds (its module checked), or the
/// measured `cdylib` itself.
fn make(
    plan: &Plan,
    maturin: Option<&Maturin>,
    ship: &Shipping,
    root: &Path,
    staging: &Path,
) -> anyhow::Result<Made> {
    let library = plan.project.library.as_ref().expect("a library project");
    let (Some(interpreter), Some(maturin)) = (library.interpreter.as_deref(), maturin) else {
        let name = cdylib_name(plan, ship);
        let mtime = super::source_date_epoch();
        let packaged = package::package(&ship.measured, staging, &name, &library.file, mtime)?;
        return Ok(Made {
            packaged,
            identity: Identity::SameBytes,
            built_by: None,
        });
    };
    let out = root.join("wheel");
    std::fs::create_dir_all(&out)?;
    let target_dir = plan.optimize_dir.join("wheel-build");
    let args = wheel::build_args(
        &ship.settings,
        &plan.project,
        interpreter,
        &out,
        &target_dir,
    );
    plan.ui
        .info(&format!("building the wheel with {}", maturin.line()));
    let ui = &plan.ui;
    let built = wheel::build(maturin, &args, &ship.settings, &out, &mut |l| ui.detail(l))?;
    let module = wheel::module_in(&built.path, &library.file)?;
    let measured = std::fs::read(&ship.measured)?;
    let identity = wheel::identity(&module, &measured);
    if let Identity::Differs(_) = &identity {
        bail!(
            "the wheel's {} is {}\n  built by: {}\n  measured: {}{}\n  fix: build with the settings the run used (`cargo optimize apply` prints them); if the project changed since the run, run `cargo optimize` again",
            library.file,
            identity.text(),
            built.command,
            ship.measured.display(),
            allocator_hint(&ship.settings)
        );
    }
    let name = built.path.file_name().unwrap_or_default().to_string_lossy();
    let file = staging.join(&*name);
    std::fs::copy(&built.path, &file)
        .map_err(|e| crate::util::io_error(e, "cannot copy the wheel to", &file))?;
    Ok(Made {
        packaged: Packaged {
            file: name.to_string(),
            size_bytes: std::fs::metadata(&file)?.len(),
            sha256: crate::store::file_sha256(&file)?,
            archive: None,
            archive_sha256: None,
        },
        identity,
        built_by: Some(built.command),
    })
}

/// A choice built with a global allocator compiled a private copy of the source with it.
fn allocator_hint(settings: &BuildSettings) -> String {
    match &settings.allocator {
        Some(a) => format!("\n  the run's choice was built with the global allocator {a}, which the run added to its own copy of the source: `cargo optimize apply` writes it into the project"),
        None => String::new(),
    }
}

/// `lib<name>-<version>-<target>.so`.
fn cdylib_name(plan: &Plan, ship: &Shipping) -> String {
    let stem = plan
        .project
        .library
        .as_ref()
        .map_or("lib", |l| l.file.strip_suffix(".so").unwrap_or(&l.file));
    format!(
        "{stem}-{}-{}.so",
        plan.project.version,
        target_of(plan, ship)
    )
}

fn target_of<'a>(plan: &'a Plan, ship: &'a Shipping) -> &'a str {
    ship.settings.target.as_deref().unwrap_or(&plan.rustc.host)
}

/// `--dry-run`: what would be built, and how.
fn dry_run_text(plan: &Plan, ship: &Shipping, out: &Path) -> String {
    let library = plan.project.library.as_ref().expect("a library project");
    let how = match &library.interpreter {
        Some(i) => format!(
            "a wheel: maturin {} (rustflags: {}); its {} compared with {}",
            wheel::build_args(
                &ship.settings,
                &plan.project,
                i,
                Path::new("<release>/wheel"),
                &plan.optimize_dir.join("wheel-build")
            )
            .join(" "),
            match ship.settings.all_rustflags() {
                f if f.is_empty() => "none".to_string(),
                f => f.join(" "),
            },
            library.file,
            ship.measured.display()
        ),
        None => format!(
            "{} itself, the file the run measured",
            ship.measured.display()
        ),
    };
    format!(
        "artifact: {how}\nthen: SHA256SUMS and {} into {}",
        manifest::MANIFEST,
        out.display()
    )
}

/// The manifest's entry of the one artifact.
fn entry_of(plan: &Plan, ship: &Shipping, made: &Made) -> ArtifactEntry {
    let s = &ship.settings;
    let row = (ship.report.stages.iter())
        .find(|r| r.binary.as_deref() == Some(ship.choice.binary.as_str()));
    let profile_use = crate::cargo::codegen_option(&s.stage_rustflags, "profile-use");
    let pgo = Pgo {
        applied: profile_use.is_some(),
        why_not: (profile_use.is_none()).then(|| {
            format!(
                "the run's choice (`{}`) has no PGO profile",
                ship.choice.stage
            )
        }),
        profile_sha256: row.and_then(|r| r.facts.profile_sha256.clone()),
        profile_functions: row.and_then(|r| r.facts.profile.as_ref().map(|p| p.functions)),
        trained_on: match profile_use {
            Some(_) => (plan.spec.workloads.iter())
                .filter(|w| w.train)
                .map(|w| w.name.clone())
                .collect(),
            None => Vec::new(),
        },
        trained_under: None,
    };
    let library = plan.project.library.as_ref().expect("a library project");
    let (kind, identity) = match (&made.identity, &library.interpreter) {
        (_, None) => ("cdylib", "measured-file"),
        (Identity::SameBytes, _) => ("wheel", "same-bytes"),
        _ => ("wheel", "same-symbols"),
    };
    ArtifactEntry {
        name: made.packaged.file.clone(),
        target: target_of(plan, ship).to_string(),
        flavor: "default".into(),
        cpu: crate::cargo::target_cpu_of(&s.stage_rustflags)
            .unwrap_or_else(|| super::matrix::PORTABLE.into()),
        features: s.features.features.clone(),
        no_default_features: s.features.no_default_features,
        profile: s.profile.clone(),
        profile_overrides: s.profile_overrides.clone(),
        rustflags: s.all_rustflags(),
        packaged: made.packaged.clone(),
        pgo,
        bolt: Applied {
            applied: false,
            why_not: Some(format!(
                "{} on a shared library is not supported yet",
                label_of(Changes::CodeLayout)
            )),
        },
        verified: matches!(made.identity, Identity::SameBytes),
        verification: match &made.identity {
            Identity::SameBytes => format!(
                "the file run {} measured and verified ({})",
                ship.report.run_id,
                made.identity.text()
            ),
            other => format!("not run again: {}", other.text()),
        },
        runner: None,
        toolchain: None,
        library: Some(LibraryShipped {
            kind: kind.into(),
            file: library.file.clone(),
            run: ship.report.run_id.clone(),
            measured: ship.measured.display().to_string(),
            identity: identity.into(),
            identity_detail: made.identity.text(),
            built_by: made.built_by.clone(),
        }),
    }
}

/// The release's manifest: as a matrix's, with the one artifact and no jobs.
fn manifest_of(plan: &Plan, ship: &Shipping, entry: ArtifactEntry) -> manifest::Manifest {
    let p = &plan.project;
    let source = crate::git::Repo::of(&p.workspace_root)
        .ok()
        .and_then(|r| r.head())
        .map(|(revision, dirty)| manifest::SourceRevision { revision, dirty });
    manifest::Manifest {
        schema: manifest::schema(),
        created_by: manifest::CREATED_BY,
        tool_version: env!("CARGO_PKG_VERSION"),
        crate_name: p.package.clone(),
        bin: p.bin.clone(),
        version: p.version.clone(),
        source,
        toolchain: Some(manifest::Toolchain {
            rustc: plan.rustc.version.clone(),
            llvm: plan.rustc.llvm_version.clone(),
            host: plan.rustc.host.clone(),
        }),
        choices: vec![format!(
            "what the last run, {}, ships: `{}` (its settings, its PGO profile when it has one)",
            ship.report.run_id,
            crate::context::label(&ship.choice.stage, ship.choice.variant.as_deref())
        )],
        artifacts: vec![entry],
        skipped: Vec::new(),
        failed: Vec::new(),
        jobs: serde_json::Value::Null,
        cells: Vec::new(),
    }
}
