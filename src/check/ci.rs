//! `cargo optimize ci --github`: a GitHub Actions workflow, `.github/workflows/optimize.yml`
//! at the repository's root, that installs the tool and runs `check --against` the PR's
//! base branch on pull requests (annotations, and the Markdown in the job summary), and on
//! tags builds the release with the committed PGO profile (`apply`'s
//! `pgo/<bin>.profdata`), warning when that profile is older than the code it profiles.
//!
//! Shown as a diff first; an existing, different file is replaced only with `--force`
//! (through `apply`'s writer: atomic, with a backup) — `propose`, which `release
//! --emit-ci` writes its workflow with too. Must not: build, run or measure (git is asked
//! only how old the profile is).

use std::path::{Path, PathBuf};

use anyhow::bail;

use crate::apply::{unified_diff, write_all, FileWrite};
use crate::cargo::{Project, Workspace};
use crate::cli::{CiArgs, GlobalArgs};

/// The workflow file, relative to the repository root.
pub const WORKFLOW: &str = ".github/workflows/optimize.yml";

/// What the workflow needs to know about the project, as paths relative to the repo root.
#[derive(Debug, Clone, PartialEq)]
pub struct Shape {
    /// `--manifest-path …` and `-p …` flags for `check`, when the package is not the root's.
    pub select: String,
    pub package: String,
    pub bin: String,
    /// `pgo/<bin>.profdata` relative to the root.
    pub profile: String,
    /// The cargo profile to build releases with (`optimized` when `apply` wrote it).
    pub cargo_profile: String,
    /// The release binary, relative to the root.
    pub binary: String,
}

/// `cargo optimize ci --github`.
pub fn run(g: &GlobalArgs, args: &CiArgs) -> anyhow::Result<i32> {
    let ws = Workspace::load(&g.selection.cargo())?;
    let project = ws.project(&g.selection.cargo(), None, None)?;
    let root = repo_root(&project);
    let shape = shape(&project, &root);
    propose(&Proposal {
        root: &root,
        file: WORKFLOW,
        text: workflow(&shape),
        warnings: stale_profile(&root, &project, &shape).into_iter().collect(),
        force: args.force,
        dry_run: args.dry_run,
    })
}

/// The root of the git repository holding the project (where `.github/` goes), else the
/// workspace root.
pub(crate) fn repo_root(project: &Project) -> PathBuf {
    super::rev::Repo::of(&project.workspace_root)
        .map(|r| r.root)
        .unwrap_or_else(|_| project.workspace_root.clone())
}

/// A file the tool writes into the repository for the user (a CI workflow).
pub(crate) struct Proposal<'a> {
    pub(crate) root: &'a Path,
    /// Relative to `root`, as the diff names it.
    pub(crate) file: &'a str,
    pub(crate) text: String,
    /// Printed after the diff, when there is one.
    pub(crate) warnings: Vec<String>,
    /// Replace an existing, different file.
    pub(crate) force: bool,
    /// Show the diff, write nothing.
    pub(crate) dry_run: bool,
}

/// Show `p`'s file as a unified diff against what is there, then write it through
/// `apply`'s writer (atomic, a backup of a replaced file) — unless it is already up to
/// date, it is a dry run, or a different file is there and `force` is not set (an error
/// with the fix).
pub(crate) fn propose(p: &Proposal) -> anyhow::Result<i32> {
    let path = p.root.join(p.file);
    let old = match std::fs::read(&path) {
        Ok(b) => Some(b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => bail!("cannot read {}: {e}", path.display()),
    };
    if old.as_deref() == Some(p.text.as_bytes()) {
        println!("{}: already up to date", p.file);
        return Ok(0);
    }
    let old_text = String::from_utf8_lossy(old.as_deref().unwrap_or_default()).into_owned();
    print!("{}", unified_diff(&old_text, &p.text, p.file));
    for warning in &p.warnings {
        eprintln!("warning: {warning}");
    }
    if p.dry_run {
        println!("dry run: nothing written");
        return Ok(0);
    }
    if old.is_some() && !p.force {
        bail!(
            "{} exists and differs (the diff above)\n  fix: pass --force to replace it (the old file is kept as a .bak), or edit it by hand",
            path.display()
        );
    }
    write_file(path, old, p.text.clone())
}

fn write_file(path: PathBuf, old: Option<Vec<u8>>, text: String) -> anyhow::Result<i32> {
    let files = [FileWrite {
        path,
        old,
        new: text.into_bytes(),
    }];
    for w in write_all(&files)? {
        let backup = w
            .backup
            .map(|b| format!(" (previous version in {})", b.display()))
            .unwrap_or_default();
        eprintln!("wrote {}{backup}", w.path.display());
    }
    Ok(0)
}

/// Where things are, relative to the repository root.
pub fn shape(project: &Project, root: &Path) -> Shape {
    let rel = |p: &Path| {
        let abs = p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        abs.strip_prefix(root)
            .map(|r| r.display().to_string())
            .unwrap_or_else(|_| abs.display().to_string())
    };
    let manifest = rel(&project.manifest_path);
    let mut select = String::new();
    if manifest != "Cargo.toml" {
        select.push_str(&format!(" --manifest-path {manifest}"));
    }
    select.push_str(&format!(" -p {} --bin {}", project.package, project.bin));
    let pkg_dir = rel(&project.package_dir);
    let profile = if pkg_dir.is_empty() {
        format!("pgo/{}.profdata", project.bin)
    } else {
        format!("{pkg_dir}/pgo/{}.profdata", project.bin)
    };
    let cargo_profile = if has_profile(&project.workspace_root.join("Cargo.toml"), "optimized") {
        "optimized"
    } else {
        "release"
    };
    let target = rel(&project.workspace_root.join("target"));
    Shape {
        select,
        package: project.package.clone(),
        bin: project.bin.clone(),
        profile,
        cargo_profile: cargo_profile.to_string(),
        binary: format!("{target}/{cargo_profile}/{}", project.bin),
    }
}

/// Whether the manifest defines `[profile.<name>]`.
fn has_profile(manifest: &Path, name: &str) -> bool {
    std::fs::read_to_string(manifest)
        .ok()
        .and_then(|t| t.parse::<toml::Table>().ok())
        .and_then(|t| t.get("profile")?.get(name).cloned())
        .is_some()
}

/// The workflow's text.
pub fn workflow(s: &Shape) -> String {
    WORKFLOW_TEMPLATE
        .replace("{version}", env!("CARGO_PKG_VERSION"))
        .replace("{select}", &s.select)
        .replace("{package}", &s.package)
        .replace("{bin}", &s.bin)
        .replace("{profile}", &s.profile)
        .replace("{cargo_profile}", &s.cargo_profile)
        .replace("{binary}", &s.binary)
}

const WORKFLOW_TEMPLATE: &str = r#"# Written by `cargo optimize ci --github` (cargo-optimize {version}); edit freely.
# Pull requests: the PR's build against its base branch, old and new binaries run
# interleaved on optimize.toml's eval workloads; the job fails on a regression beyond
# [check] max-regression, a changed output, a budget or max-binary-size.
# Tags: the release built with the committed PGO profile ({profile}, written by
# `cargo optimize apply`).
name: optimize

on:
  pull_request:
  push:
    tags: ["v*"]

permissions:
  contents: read

env:
  CARGO_TERM_COLOR: always

jobs:
  check:
    if: github.event_name == 'pull_request'
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v5
        with:
          fetch-depth: 0 # the base branch's commits, to build it
      - name: Install Rust and cargo-optimize
        run: |
          rustup toolchain install stable --profile minimal
          cargo install --locked cargo-optimize@{version}
      - name: cargo optimize check
        run: cargo optimize check --against "origin/${{ github.base_ref }}"{select} --format github
      - name: Summary
        if: always()
        run: cat target/optimize/check/latest/check.md >> "$GITHUB_STEP_SUMMARY" || true

  release:
    if: startsWith(github.ref, 'refs/tags/')
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v5
        with:
          fetch-depth: 0 # to tell how old the PGO profile is
      - name: Install Rust
        run: rustup toolchain install stable --profile minimal
      - name: Is the PGO profile older than the code?
        run: |
          profile="{profile}"
          if [ ! -f "$profile" ]; then
            echo "::warning title=no PGO profile::$profile is not committed: building without PGO (run cargo optimize, then cargo optimize apply, and commit it)"
            exit 0
          fi
          since=$(git log -1 --format=%H -- "$profile")
          changed=$(git rev-list --count "$since..HEAD" -- . ":(exclude)$profile")
          if [ "$changed" -gt 0 ]; then
            echo "::warning title=stale PGO profile::$changed commits changed the code since $profile was committed; run cargo optimize and cargo optimize apply again"
          fi
      - name: Build the release with the PGO profile
        run: |
          profile="$PWD/{profile}"
          if [ -f "$profile" ]; then
            export RUSTFLAGS="-Cprofile-use=$profile -Cllvm-args=-pgo-warn-missing-function"
          fi
          cargo build --locked --profile {cargo_profile} -p {package} --bin {bin}
      - uses: actions/upload-artifact@v6
        with:
          name: {bin}
          path: {binary}
"#;

/// A warning when the committed PGO profile is older than the last change to the code
/// (cheap: two git commands), else `None`.
fn stale_profile(root: &Path, project: &Project, s: &Shape) -> Option<String> {
    let profile = root.join(&s.profile);
    if !profile.is_file() {
        return Some(format!(
            "{} does not exist: tag builds will be built without PGO until `cargo optimize` then `cargo optimize apply` write it and you commit it",
            s.profile
        ));
    }
    let git = |args: &[&str]| {
        crate::process::run(
            &crate::process::Command::new("git")
                .args(args)
                .cwd(root)
                .timeout(std::time::Duration::from_secs(60)),
        )
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let since = git(&["log", "-1", "--format=%H", "--", &s.profile]).filter(|c| !c.is_empty())?;
    let exclude = format!(":(exclude){}", s.profile);
    let dir = project.package_dir.display().to_string();
    let n: u32 = git(&[
        "rev-list",
        "--count",
        &format!("{since}..HEAD"),
        "--",
        &dir,
        &exclude,
    ])?
    .parse()
    .ok()?;
    (n > 0).then(|| {
        format!(
            "{} is stale: {n} commit(s) changed the package since it was committed; run `cargo optimize` and `cargo optimize apply` again, then commit it",
            s.profile
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape() -> Shape {
        Shape {
            select: " --manifest-path tools/x/Cargo.toml -p x --bin xt".into(),
            package: "x".into(),
            bin: "xt".into(),
            profile: "tools/x/pgo/xt.profdata".into(),
            cargo_profile: "optimized".into(),
            binary: "target/optimized/xt".into(),
        }
    }

    #[test]
    fn the_workflow_checks_prs_and_builds_tags_with_the_profile() {
        let w = workflow(&shape());
        assert!(
            !w.contains('{') || !w.contains("{select}"),
            "a placeholder left: {w}"
        );
        for p in [
            "{version}",
            "{select}",
            "{package}",
            "{bin}",
            "{profile}",
            "{cargo_profile}",
            "{binary}",
        ] {
            assert!(!w.contains(p), "{p} left in:\n{w}");
        }
        assert!(w.contains("cargo optimize check --against \"origin/${{ github.base_ref }}\" --manifest-path tools/x/Cargo.toml -p x --bin xt --format github"), "{w}");
        assert!(w.contains("fetch-depth: 0"), "{w}");
        assert!(
            w.contains(&format!(
                "cargo install --locked cargo-optimize@{}",
                env!("CARGO_PKG_VERSION")
            )),
            "{w}"
        );
        assert!(
            w.contains("profile=\"$PWD/tools/x/pgo/xt.profdata\""),
            "{w}"
        );
        assert!(w.contains("-Cprofile-use=$profile"), "{w}");
        assert!(
            w.contains("cargo build --locked --profile optimized -p x --bin xt"),
            "{w}"
        );
        assert!(w.contains("path: target/optimized/xt"), "{w}");
        assert!(
            w.contains("check/latest/check.md >> \"$GITHUB_STEP_SUMMARY\""),
            "{w}"
        );
        // It is YAML GitHub can read: the keys a workflow needs, no tabs.
        assert!(!w.contains('\t'));
        assert!(
            w.contains("\non:\n  pull_request:\n  push:\n    tags: [\"v*\"]\n"),
            "{w}"
        );
    }
}
