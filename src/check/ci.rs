//! `cargo optimize ci --github`: a GitHub Actions workflow, `.github/workflows/optimize.yml`
//! at the repository's root, that installs the tool and runs `check --against` the PR's
//! base branch on pull requests (annotations, and the Markdown in the job summary), and on
//! tags builds the release with the committed PGO profile (`apply`'s
//! `pgo/<bin>.profdata`), warning when that profile is older than the code it profiles.
//!
//! Shown as a diff first; an existing, different file is replaced only with `--force`
//! (`propose`: atomic, with a backup), as `release --emit-ci` writes its workflow; the
//! project's paths and names come from `workflow`. Must not: build, run or measure (git is asked
//! only how old the profile is).

use std::path::Path;

use crate::cargo::{Project, Workspace};
use crate::cli::{CiArgs, GlobalArgs};
use crate::propose::{propose, Proposal};
use crate::workflow::{env_lines, repo_root, shape, Shape};

/// The workflow file, relative to the repository root.
pub(crate) const WORKFLOW: &str = ".github/workflows/optimize.yml";

/// `cargo optimize ci --github`.
pub(crate) fn run(g: &GlobalArgs, args: &CiArgs) -> anyhow::Result<i32> {
    let ws = Workspace::load(&g.selection)?;
    let project = ws.project(&g.selection, None, None)?;
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

/// The workflow's text: the project's values in its workflow-level `env:`, its scripts
/// constant.
pub(crate) fn workflow(s: &Shape) -> anyhow::Result<String> {
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
    let repo = crate::git::Repo {
        root: root.to_path_buf(),
    };
    let n = repo.changes_since(&s.profile, &project.package_dir)?;
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
