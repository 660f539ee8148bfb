//! The old binary of `check --against REV`: the package built at a commit, in a temporary
//! worktree, with the same settings as the working tree's build (profile, features, target,
//! the user's rustflags). Kept by commit and settings: the record in
//! `target/optimize/cache/revs/<key>.json` (a `store::Store` entry), the binary a blob of
//! `cache/blobs/` by its digest; reused by the next check of the same commit — only when
//! the entry parses, names the same commit, settings, rustc and binary, and its blob is
//! named by a digest (`store::Blobs` checks the name) and still has it (else it is built
//! again).
//!
//! Must not: measure or verify; run cargo other than through `crate::cargo`.

use std::path::PathBuf;

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

use crate::cargo::{self, Workspace};
use crate::context::Plan;
use crate::git::{Repo, Worktree};
use crate::store::{Blobs, Store};

/// A binary of the package at some commit.
pub(crate) struct RevBinary {
    pub binary: PathBuf,
    pub size: u64,
    /// Taken from the cache (not built by this check).
    pub reused: bool,
}

/// What the cache holds for one commit and settings.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct KeptBuild {
    commit: String,
    settings: String,
    rustc: String,
    package: String,
    bin: String,
    /// The binary's name in `cache/blobs/`.
    blob: String,
    size: u64,
}

/// The binary of `commit`, from the cache when it is sound there, else built.
pub(crate) fn binary_at(plan: &Plan, repo: &Repo, commit: &str) -> anyhow::Result<RevBinary> {
    let want = KeptBuild {
        commit: commit.to_string(),
        settings: plan.baseline.hash(),
        rustc: plan.rustc.version.clone(),
        package: plan.project.package.clone(),
        bin: plan.project.bin.clone(),
        blob: String::new(),
        size: 0,
    };
    let key = format!("{}-{}", crate::util::clip(commit, 16), want.settings);
    let store = Store::new(&plan.optimize_dir, "revs");
    let blobs = Blobs::new(&plan.optimize_dir, "blobs");
    if let Some(kept) = store.get::<KeptBuild>(&key) {
        let same = (
            &kept.commit,
            &kept.settings,
            &kept.rustc,
            &kept.package,
            &kept.bin,
        ) == (
            &want.commit,
            &want.settings,
            &want.rustc,
            &want.package,
            &want.bin,
        );
        // A blob name that is no digest (`../../x`) names nothing: the entry is not
        // trusted, and nothing outside the cache is looked at or removed.
        let bin_path = blobs.path_of(&kept.blob);
        if let Some(binary) = bin_path
            .as_ref()
            .filter(|_| same)
            .and(blobs.get(&kept.blob))
        {
            return Ok(RevBinary {
                binary,
                size: kept.size,
                reused: true,
            });
        }
        let what = match &bin_path {
            Some(path) => path.display().to_string(),
            None => format!(
                "its record names the blob {:?}, which is no digest",
                kept.blob
            ),
        };
        plan.ui.warn(&format!(
            "the kept build of {} ({what}) does not match its record; building it again",
            crate::util::clip(commit, 12),
        ));
    }
    let built = build(plan, repo, commit)?;
    let kept = blobs.keep(&built);
    let kept = kept
        .map_err(|e| crate::util::io_error(e, "cannot keep the revision's binary from", &built))?;
    let size = std::fs::metadata(&kept.path)?.len();
    store.put(
        &key,
        &KeptBuild {
            blob: kept.digest,
            size,
            ..want
        },
    );
    Ok(RevBinary {
        binary: kept.path,
        size,
        reused: false,
    })
}

/// Build the package at `commit` in a temporary worktree; the binary is returned from the
/// revision's own target dir (`target/optimize/check/build/<settings>`), which the
/// worktree does not hold, so it outlives it.
fn build(plan: &Plan, repo: &Repo, commit: &str) -> anyhow::Result<PathBuf> {
    let short = crate::util::clip(commit, 12);
    let check_dir = plan.optimize_dir.join("check");
    let wt = Worktree::add(repo, &check_dir.join("worktrees"), commit)?;
    let submodules = wt.init_submodules();
    // When the build fails and the submodules could not be checked out: say so, last.
    let hint = |e: anyhow::Error| {
        match &submodules {
        None => e,
        Some(said) => anyhow::anyhow!(
            "{e:#}\n  {short}'s git submodules could not be checked out in its temporary worktree, and a path dependency may be in one (`git submodule update --init` said: {said})\n  fix: make `git submodule update --init` work in a fresh checkout of the repository (git clones a submodule from a folder on this disk only when allowed, e.g. for one run: `GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=protocol.file.allow GIT_CONFIG_VALUE_0=always cargo optimize check …`), or compare with a saved baseline instead (`cargo optimize check --save-baseline NAME` on the old build, then `--baseline NAME`)"
        ),
    }
    };
    let manifest = wt.path.join(repo.relative(&plan.project.manifest_path)?);
    let target_dir = check_dir.join("build").join(plan.baseline.hash());
    let sel = cargo::Selection {
        manifest_path: Some(manifest.clone()),
        package: Some(plan.project.package.clone()),
        bin: Some(plan.project.bin.clone()),
        target_dir: Some(target_dir.clone()),
        ..Default::default()
    };
    // A library a host program loads is built as the run builds it, installed under the
    // same file name (the module's suffix was asked of the host's interpreter once).
    let project = Workspace::load(&sel)
        .and_then(|ws| match &plan.project.library {
            Some(library) => ws.library_project(&sel, None).map(|mut p| {
                p.library = Some(library.clone());
                p
            }),
            None => ws.project(&sel, None, None),
        })
        .with_context(|| {
            format!(
                "the package `{}` at {short} ({})",
                plan.project.package,
                manifest.display()
            )
        })
        .map_err(hint)?;
    let label = format!("{short}: cargo build");
    plan.ui
        .step(&format!("building {} at {short}", plan.project.bin));
    let spinner = plan.ui.spinner(label.clone());
    let built = cargo::build(&project, &plan.baseline, &target_dir, &mut |line| {
        let line = line.trim();
        if line.starts_with("Compiling") || line.starts_with("Finished") {
            spinner.set_message(format!("{short}: {line}"));
        }
    });
    spinner.finish_and_clear();
    let (built, warning) = built
        .with_context(|| format!("building the package at {short}"))
        .map_err(hint)?;
    if let Some(warning) = warning {
        plan.ui.warn(&format!("{short}: {warning}"));
    }
    plan.ui.done(&format!("{short} built"), built.seconds);
    Ok(built.binary)
}
