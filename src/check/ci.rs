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
/// The workflow hands every one of them to its `run:` scripts through `env:` (YAML
/// double-quoted values, see [`env_lines`]), and the scripts use them only quoted: a path
/// is never shell text.
#[derive(Debug, Clone, PartialEq)]
pub struct Shape {
    /// The package's manifest (`Cargo.toml` at the root, `app/Cargo.toml` in a subfolder).
    pub manifest: String,
    pub package: String,
    pub bin: String,
    /// The package's folder (`.` at the root): what the profile's staleness counts.
    pub package_dir: String,
    /// `pgo/<bin>.profdata` in the package's folder.
    pub profile: String,
    /// The cargo profile to build releases with (`optimized` when `apply` wrote it).
    pub cargo_profile: String,
    /// The workspace's target dir (where `check` writes `optimize/check/latest/`).
    pub target: String,
}

impl Shape {
    /// The workflow's `env:` entries: what its `run:` scripts read.
    fn env(&self) -> Vec<(&'static str, &str, &'static str)> {
        vec![
            ("CRATE_MANIFEST", &self.manifest, "the package's manifest"),
            ("CRATE_PACKAGE", &self.package, "the package's name"),
            ("CRATE_BIN", &self.bin, "the binary's name"),
            ("CRATE_DIR", &self.package_dir, "the package's folder"),
            ("CRATE_TARGET_DIR", &self.target, "the target dir"),
            ("PGO_PROFILE", &self.profile, "the PGO profile"),
            ("BUILD_PROFILE", &self.cargo_profile, "the cargo profile"),
        ]
    }
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
        text: workflow(&shape)?,
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
        let r = abs
            .strip_prefix(root)
            .map(|r| r.display().to_string())
            .unwrap_or_else(|_| abs.display().to_string());
        if r.is_empty() {
            ".".to_string()
        } else {
            r
        }
    };
    let package_dir = rel(&project.package_dir);
    let profile = match package_dir.as_str() {
        "." => format!("pgo/{}.profdata", project.bin),
        dir => format!("{dir}/pgo/{}.profdata", project.bin),
    };
    let cargo_profile = if has_profile(&project.workspace_root.join("Cargo.toml"), "optimized") {
        "optimized"
    } else {
        "release"
    };
    Shape {
        manifest: rel(&project.manifest_path),
        package: project.package.clone(),
        bin: project.bin.clone(),
        package_dir,
        profile,
        cargo_profile: cargo_profile.to_string(),
        target: rel(&project.workspace_root.join("target")),
    }
}

/// A YAML double-quoted scalar holding exactly `s` (JSON's string syntax is YAML's).
pub(crate) fn yaml_string(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

/// `NAME: "value"` lines of a workflow's `env:` block, indented by `indent`: how a value
/// (a path, a name) reaches a `run:` script, which reads it quoted (`"$NAME"`) and never as
/// shell text. A value holding `${{` is refused: GitHub would evaluate it as an expression.
/// `what` names each value in that error.
pub(crate) fn env_lines(indent: &str, vars: &[(&str, &str, &str)]) -> anyhow::Result<String> {
    let mut out = String::new();
    for (name, value, what) in vars {
        if value.contains("${{") {
            bail!(
                "{what} `{value}` contains `${{{{`, which GitHub Actions evaluates as an expression wherever it appears in a workflow\n  fix: rename the folder (or file) so that its path has no `${{{{`, or write the workflow by hand"
            );
        }
        out.push_str(&format!("{indent}{name}: {}\n", yaml_string(value)));
    }
    Ok(out)
}

/// Whether the manifest defines `[profile.<name>]`.
fn has_profile(manifest: &Path, name: &str) -> bool {
    std::fs::read_to_string(manifest)
        .ok()
        .and_then(|t| t.parse::<toml::Table>().ok())
        .and_then(|t| t.get("profile")?.get(name).cloned())
        .is_some()
}

/// The workflow's text: the project's values in its workflow-level `env:`, its scripts
/// constant.
pub fn workflow(s: &Shape) -> anyhow::Result<String> {
    Ok(WORKFLOW_TEMPLATE
        .replace("{version}", env!("CARGO_PKG_VERSION"))
        .replace("{profile}", &s.profile.replace(['\n', '\r'], " "))
        .replace("{env}\n", &env_lines("  ", &s.env())?))
}

const WORKFLOW_TEMPLATE: &str = r#"# Written by `cargo optimize ci` (cargo-optimize {version}); edit freely.
# Pull requests: the PR's build against its base branch, old and new binaries run
# interleaved on optimize.toml's eval workloads; the job fails on a regression beyond
# [check] max-regression, a changed output, a budget or max-binary-size.
# Tags: the release built with the committed PGO profile ({profile}, written by
# `cargo optimize apply`).
# Every step runs at the repository's root; the crate's paths and names are in `env:`
# below, and the scripts use them only quoted.
name: optimize

on:
  pull_request:
  push:
    tags: ["v*"]

permissions:
  contents: read

env:
  CARGO_TERM_COLOR: always
{env}
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
        run: cargo optimize check --against "origin/$BASE_REF" --manifest-path "$CRATE_MANIFEST" -p "$CRATE_PACKAGE" --bin "$CRATE_BIN" --format github
        env:
          BASE_REF: ${{ github.base_ref }}
      - name: Summary
        if: always()
        run: cat "$CRATE_TARGET_DIR/optimize/check/latest/check.md" >> "$GITHUB_STEP_SUMMARY" || true

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
          if [ ! -f "$PGO_PROFILE" ]; then
            echo "::warning title=no PGO profile::$PGO_PROFILE is not committed: building without PGO (run cargo optimize, then cargo optimize apply, and commit it)"
            exit 0
          fi
          since=$(git log -1 --format=%H -- ":(literal)$PGO_PROFILE")
          changed=$(git rev-list --count "$since..HEAD" -- ":(literal)$CRATE_DIR" ":(exclude,literal)$PGO_PROFILE")
          if [ "$changed" -gt 0 ]; then
            echo "::warning title=stale PGO profile::$changed commits changed the code since $PGO_PROFILE was committed; run cargo optimize and cargo optimize apply again"
          fi
      - name: Build the release with the PGO profile
        run: |
          profile="$PWD/$PGO_PROFILE"
          if [ -f "$profile" ]; then
            # Not RUSTFLAGS, which splits on spaces: one flag per \x1f-separated field.
            CARGO_ENCODED_RUSTFLAGS="-Cprofile-use=$profile"$'\x1f'"-Cllvm-args=-pgo-warn-missing-function"
            export CARGO_ENCODED_RUSTFLAGS
          fi
          cargo build --locked --profile "$BUILD_PROFILE" --manifest-path "$CRATE_MANIFEST" -p "$CRATE_PACKAGE" --bin "$CRATE_BIN"
      - uses: actions/upload-artifact@v6
        with:
          name: ${{ env.CRATE_BIN }}
          path: ${{ env.CRATE_TARGET_DIR }}/${{ env.BUILD_PROFILE }}/${{ env.CRATE_BIN }}
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
    // Literal pathspecs: a folder's name is not a glob.
    let literal = format!(":(literal){}", s.profile);
    let since = git(&["log", "-1", "--format=%H", "--", &literal]).filter(|c| !c.is_empty())?;
    let exclude = format!(":(exclude,literal){}", s.profile);
    let dir = format!(":(literal){}", project.package_dir.display());
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
            manifest: "tools/x/Cargo.toml".into(),
            package: "x".into(),
            bin: "xt".into(),
            package_dir: "tools/x".into(),
            profile: "tools/x/pgo/xt.profdata".into(),
            cargo_profile: "optimized".into(),
            target: "tools/x/target".into(),
        }
    }

    /// The `run:` lines and block lines of a workflow (its scripts).
    fn scripts(w: &str) -> String {
        let mut out = String::new();
        let mut block: Option<usize> = None;
        for line in w.lines() {
            let indent = line.len() - line.trim_start().len();
            if let Some(at) = block {
                if indent > at || line.trim().is_empty() {
                    out.push_str(line);
                    out.push('\n');
                    continue;
                }
                block = None;
            }
            if let Some(rest) = line.trim_start().strip_prefix("run: ") {
                if rest == "|" {
                    block = Some(indent);
                } else {
                    out.push_str(rest);
                    out.push('\n');
                }
            }
        }
        out
    }

    #[test]
    fn the_workflow_checks_prs_and_builds_tags_with_the_profile() {
        let w = workflow(&shape()).unwrap();
        for p in ["{version}", "{env}", "{profile}"] {
            assert!(!w.contains(p), "{p} left in:\n{w}");
        }
        for needed in [
            "\n  CRATE_MANIFEST: \"tools/x/Cargo.toml\"\n",
            "\n  CRATE_PACKAGE: \"x\"\n  CRATE_BIN: \"xt\"\n  CRATE_DIR: \"tools/x\"\n",
            "\n  CRATE_TARGET_DIR: \"tools/x/target\"\n",
            "\n  PGO_PROFILE: \"tools/x/pgo/xt.profdata\"\n  BUILD_PROFILE: \"optimized\"\n",
            "cargo optimize check --against \"origin/$BASE_REF\" --manifest-path \"$CRATE_MANIFEST\" -p \"$CRATE_PACKAGE\" --bin \"$CRATE_BIN\" --format github",
            "BASE_REF: ${{ github.base_ref }}",
            "fetch-depth: 0",
            "profile=\"$PWD/$PGO_PROFILE\"",
            "-Cprofile-use=$profile",
            "cargo build --locked --profile \"$BUILD_PROFILE\" --manifest-path \"$CRATE_MANIFEST\" -p \"$CRATE_PACKAGE\" --bin \"$CRATE_BIN\"",
            "path: ${{ env.CRATE_TARGET_DIR }}/${{ env.BUILD_PROFILE }}/${{ env.CRATE_BIN }}",
            "cat \"$CRATE_TARGET_DIR/optimize/check/latest/check.md\" >> \"$GITHUB_STEP_SUMMARY\"",
        ] {
            assert!(w.contains(needed), "no `{needed}` in:\n{w}");
        }
        assert!(
            w.contains(&format!(
                "cargo install --locked cargo-optimize@{}",
                env!("CARGO_PKG_VERSION")
            )),
            "{w}"
        );
        // It is YAML GitHub can read: the keys a workflow needs, no tabs.
        assert!(!w.contains('\t'));
        assert!(
            w.contains("\non:\n  pull_request:\n  push:\n    tags: [\"v*\"]\n"),
            "{w}"
        );
    }

    #[test]
    fn a_hostile_path_reaches_the_scripts_only_through_env() {
        let hostile = "my tool $(touch PWNED) `id` \"q\" 'a'";
        let s = Shape {
            manifest: format!("{hostile}/Cargo.toml"),
            package_dir: hostile.into(),
            profile: format!("{hostile}/pgo/xt.profdata"),
            target: format!("{hostile}/target"),
            ..shape()
        };
        let w = workflow(&s).unwrap();
        let run = scripts(&w);
        assert!(run.contains("cargo build --locked"), "{run}");
        for part in ["my tool", "touch", "PWNED", "`id`"] {
            assert!(!run.contains(part), "`{part}` in a run: script:\n{run}");
        }
        assert!(
            w.contains(
                "\n  CRATE_MANIFEST: \"my tool $(touch PWNED) `id` \\\"q\\\" 'a'/Cargo.toml\"\n"
            ),
            "{w}"
        );
        // `${{` would be evaluated by GitHub, even in env: refused, naming the path and the fix.
        let s = Shape {
            manifest: "a${{ secrets.TOKEN }}/Cargo.toml".into(),
            ..shape()
        };
        let e = workflow(&s).unwrap_err().to_string();
        assert!(
            e.contains("the package's manifest `a${{ secrets.TOKEN }}/Cargo.toml` contains `${{`")
                && e.contains("\n  fix: rename the folder"),
            "{e}"
        );
    }
}
