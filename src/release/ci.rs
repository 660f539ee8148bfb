//! `cargo optimize release --emit-ci github`: the release matrix as a GitHub Actions
//! workflow, `.github/workflows/release.yml` at the repository's root. A PGO profile is
//! valid only for the target it was trained on, and training needs a machine that runs
//! that target: so each cell of the matrix — target × flavor × CPU level — is a job on a
//! runner of its target (`runners`), which installs the target and cargo-optimize and runs
//! `cargo optimize release` for that cell alone; a final job gathers the cells' folders
//! into one release (`release --gather`, see `gather`). A target with no known runner is
//! cross-built on ubuntu-latest without PGO, and the workflow and the command say so.
//!
//! Written through `propose` (a diff first, atomic, never over a different file
//! without `--force`, nothing with `--dry-run`). Must not: build or run anything (rustc
//! is asked only which CPU names it knows).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::bail;

use super::matrix::{Base, Matrix, PORTABLE};
use crate::cargo::Project;
use crate::cli::{GlobalArgs, ReleaseArgs};
use crate::propose::{propose, Proposal};
use crate::workflow::{env_lines, repo_root, yaml_string};

/// The workflow file, relative to the repository root.
pub(crate) const WORKFLOW: &str = ".github/workflows/release.yml";

/// GitHub-hosted runners that run each target natively. (`macos-13`, the older Intel
/// image, is retired; actionlint no longer knows the label.)
const KNOWN_RUNNERS: [(&str, &str); 5] = [
    ("x86_64-unknown-linux-gnu", "ubuntu-latest"),
    ("aarch64-unknown-linux-gnu", "ubuntu-24.04-arm"),
    ("aarch64-apple-darwin", "macos-14"),
    ("x86_64-apple-darwin", "macos-15-intel"),
    ("x86_64-pc-windows-msvc", "windows-latest"),
];

/// Where a target without a runner is cross-built.
const CROSS_RUNNER: &str = "ubuntu-latest";

/// The runner of each target: the known table, overridden or extended by `--runner
/// TRIPLE=LABEL`; targets absent from the map have no runner.
pub(crate) fn runners(
    flags: &[String],
    targets: &[&str],
) -> anyhow::Result<BTreeMap<String, String>> {
    let mut map: BTreeMap<String, String> = KNOWN_RUNNERS
        .iter()
        .map(|(t, l)| (t.to_string(), l.to_string()))
        .collect();
    for flag in flags {
        let Some((triple, label)) = flag
            .split_once('=')
            .map(|(t, l)| (t.trim(), l.trim()))
            .filter(|(t, l)| !t.is_empty() && !l.is_empty())
        else {
            bail!("--runner {flag}: expected TRIPLE=LABEL\n  fix: e.g. --runner aarch64-unknown-linux-gnu=ubuntu-24.04-arm");
        };
        if !targets.contains(&triple) {
            bail!(
                "--runner {flag}: {triple} is not a target of the release\n  fix: the targets are {} ([release] targets, or --targets)",
                targets.join(", ")
            );
        }
        map.insert(triple.to_string(), label.to_string());
    }
    map.retain(|t, _| targets.contains(&t.as_str()));
    Ok(map)
}

/// One job of the build matrix: one artifact.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Cell {
    /// `<target>[-<flavor>][-<cpu>]`: the job's and the uploaded artifact's name.
    pub(crate) name: String,
    pub(crate) target: String,
    /// Empty when the release has no `[release.flavors]`.
    pub(crate) flavor: String,
    /// The `--cpu` the cell passes: `none` for the portable artifact, else its level.
    pub(crate) cpu: String,
    /// The `--stages` the cell passes.
    pub(crate) stages: String,
    pub(crate) runner: String,
    /// Whether the runner runs the target (else: cross-built without PGO).
    pub(crate) native: bool,
}

/// The cells of `matrix`, in its artifacts' order (targets, then flavors, then levels).
pub(crate) fn cells(
    matrix: &Matrix,
    project: &Project,
    profile: &str,
    runners: &BTreeMap<String, String>,
) -> anyhow::Result<Vec<Cell>> {
    let no_flags = |_: &str| Ok(Vec::new());
    let runs_anywhere = |_: &str, _: Option<&str>| None;
    let (artifacts, _) = matrix.artifacts(&Base {
        project,
        profile,
        user_rustflags: &no_flags,
        cannot_run: &runs_anywhere,
    })?;
    let prefix = format!("{}-{}-", project.bin, project.version);
    let stages = stages_flag(matrix);
    Ok(artifacts
        .iter()
        .map(|a| {
            let runner = runners.get(&a.target);
            Cell {
                // Without the version: the workflow stays the same from one version to
                // the next.
                name: a.name.strip_prefix(&prefix).unwrap_or(&a.name).to_string(),
                target: a.target.clone(),
                flavor: match matrix.implicit_flavor {
                    true => String::new(),
                    false => matrix.flavors[a.flavor].name.clone(),
                },
                cpu: match a.cpu.as_str() {
                    PORTABLE => "none".to_string(),
                    level => level.to_string(),
                },
                stages: match runner {
                    Some(_) if a.target.contains("-linux-") => stages.clone(),
                    Some(_) => without_bolt(&stages),
                    None => "none".to_string(),
                },
                runner: runner.cloned().unwrap_or_else(|| CROSS_RUNNER.to_string()),
                native: runner.is_some(),
            }
        })
        .collect())
}

/// A cell's stages off Linux: BOLT rewrites Linux ELF binaries only.
fn without_bolt(stages: &str) -> String {
    let bolt = crate::stages::label_of(crate::stages::Changes::CodeLayout);
    let kept: Vec<&str> = stages.split(',').filter(|s| *s != bolt).collect();
    match kept.is_empty() {
        true => "none".into(),
        false => kept.join(","),
    }
}

/// The matrix's stages as `--stages` takes them.
fn stages_flag(matrix: &Matrix) -> String {
    if matrix.stages.is_empty() {
        return "none".into();
    }
    let names: Vec<&str> = matrix.stages.iter().map(|s| s.as_str()).collect();
    names.join(",")
}

/// `release --emit-ci github`: the workflow of `matrix`, proposed for the repository.
pub(crate) fn emit(
    g: &GlobalArgs,
    args: &ReleaseArgs,
    project: &Project,
    spec: &crate::spec::Spec,
    matrix: &Matrix,
) -> anyhow::Result<i32> {
    let targets: Vec<&str> = matrix.targets.iter().map(|t| t.triple.as_str()).collect();
    let runners = runners(&args.runner, &targets)?;
    let cells = cells(matrix, project, &g.selection.profile, &runners)?;
    let root = repo_root(project);
    let select = select(g, project, matrix, &root);
    let warnings = notes(&cells, matrix, spec);
    let text = workflow(&cells, &select)?;
    eprintln!(
        "{WORKFLOW}: {} cell(s) — {} target(s) × {} flavor(s) × {} CPU level(s)",
        cells.len(),
        targets.len(),
        matrix.flavors.len(),
        matrix.cpus.len()
    );
    for t in runnerless(&cells) {
        eprintln!("{t}: no known runner: its cells are cross-built on {CROSS_RUNNER} without PGO (--stages none), not verified\n  fix: name a runner that runs it with --runner {t}=LABEL");
    }
    propose(&Proposal {
        root: &root,
        file: WORKFLOW,
        text,
        warnings,
        force: args.force,
        dry_run: args.dry_run,
    })
}

/// The targets without a runner, once each.
fn runnerless(cells: &[Cell]) -> Vec<&str> {
    let mut targets: Vec<&str> = Vec::new();
    for c in cells.iter().filter(|c| !c.native) {
        if !targets.contains(&c.target.as_str()) {
            targets.push(&c.target);
        }
    }
    targets
}

/// What the user should know about the workflow beyond the diff.
fn notes(cells: &[Cell], matrix: &Matrix, spec: &crate::spec::Spec) -> Vec<String> {
    let mut notes = Vec::new();
    if spec.release.profile.is_none() && !matrix.overrides.is_empty() {
        notes.push("the profile overrides come from the last `cargo optimize` run, which the CI runners do not have: their releases build without them\n  fix: set [release] profile in optimize.toml".to_string());
    }
    let mut foreign: Vec<&str> = cells
        .iter()
        .filter(|c| c.native && !c.target.contains("-linux-"))
        .map(|c| c.runner.as_str())
        .collect();
    foreign.dedup();
    if !foreign.is_empty() {
        notes.push(format!(
            "the cells on {} run cargo-optimize on macOS or Windows, where it builds (its platform layer) but its own tests run on Linux only: PGO is trained there; BOLT is not (Linux ELF only), so those cells leave it out",
            foreign.join(", ")
        ));
    }
    notes
}

/// What the cell step passes besides the cell's own flags: the package (as `ci --github`
/// selects it), the cargo profile, the spec file and — without `[release.flavors]` — the
/// features of the one flavor. Each value is a workflow-level `env:` entry (`env`), which
/// a line of the script appends to its `args` quoted (`args`): no value is shell text.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Select {
    /// Name, value, what it is (for an error).
    pub(crate) env: Vec<(&'static str, String, &'static str)>,
    /// `args+=(…)` lines of the cell's script.
    pub(crate) args: Vec<String>,
}

impl Select {
    fn value(&mut self, flag: &str, var: &'static str, value: String, what: &'static str) {
        self.args.push(format!("args+=({flag} \"${var}\")"));
        self.env.push((var, value, what));
    }
}

fn select(g: &GlobalArgs, project: &Project, matrix: &Matrix, root: &Path) -> Select {
    let shape = crate::workflow::shape(project, root);
    let mut s = Select::default();
    s.value(
        "--manifest-path",
        "CRATE_MANIFEST",
        shape.manifest,
        "the package's manifest",
    );
    s.value("-p", "CRATE_PACKAGE", shape.package, "the package's name");
    s.value("--bin", "CRATE_BIN", shape.bin, "the binary's name");
    if g.selection.profile != "release" {
        let profile = g.selection.profile.clone();
        s.value("--profile", "CRATE_PROFILE", profile, "the cargo profile");
    }
    if let Some(spec) = &g.spec {
        let abs = crate::util::absolute(spec);
        let rel = abs.strip_prefix(root).unwrap_or(&abs).display().to_string();
        s.value("--spec", "CRATE_SPEC", rel, "the spec file");
    }
    let features = &project.features;
    if matrix.implicit_flavor {
        if !features.features.is_empty() {
            let list = features.features.join(",");
            s.value("--features", "CRATE_FEATURES", list, "the features");
        }
        if features.all_features {
            s.args.push("args+=(--all-features)".into());
        }
        if features.no_default_features {
            s.args.push("args+=(--no-default-features)".into());
        }
    }
    s
}

/// The workflow's text.
pub(crate) fn workflow(cells: &[Cell], select: &Select) -> anyhow::Result<String> {
    let mut header = String::new();
    let mut seen: Vec<&str> = Vec::new();
    for c in cells {
        if seen.contains(&c.target.as_str()) {
            continue;
        }
        seen.push(&c.target);
        header.push_str(&match c.native {
            true => format!("#   {} on {}\n", c.target, c.runner),
            false => format!(
                "#   {}: no known runner, so cross-built on {} without PGO\n#     (--stages none) and not verified; name one with\n#     `--runner {}=LABEL`\n",
                c.target, c.runner, c.target
            ),
        });
    }
    let include: String = cells
        .iter()
        .map(|c| {
            format!(
                "          - {{\"name\": {}, \"target\": {}, \"flavor\": {}, \"cpu\": {}, \"stages\": {}, \"runner\": {}}}\n",
                yaml_string(&c.name),
                yaml_string(&c.target),
                yaml_string(&c.flavor),
                yaml_string(&c.cpu),
                yaml_string(&c.stages),
                yaml_string(&c.runner)
            )
        })
        .collect();
    let vars: Vec<(&str, &str, &str)> = select
        .env
        .iter()
        .map(|(n, v, w)| (*n, v.as_str(), *w))
        .collect();
    let args: String = select
        .args
        .iter()
        .map(|a| format!("          {a}\n"))
        .collect();
    Ok(WORKFLOW_TEMPLATE
        .replace("{version}", env!("CARGO_PKG_VERSION"))
        .replace("{cells}", &cells.len().to_string())
        .replace("{runners}\n", &header)
        .replace("{include}\n", &include)
        .replace("{env}\n", &env_lines("  ", &vars)?)
        .replace("{select}\n", &args))
}

const WORKFLOW_TEMPLATE: &str = r#"# Written by `cargo optimize release --emit-ci github` (cargo-optimize {version});
# edit freely, or write it again after changing [release] (with --force).
# A PGO profile is valid only for the target it was trained on, so each of the
# {cells} cells of the release matrix (target × flavor × CPU level) is built, trained
# and verified on a runner of its target:
{runners}
# Then `gather` merges the cells' folders (each file checked against its SHA256SUMS)
# into one release: the `dist` artifact, with one SHA256SUMS and one manifest.json.
# Each job installs cargo-optimize with $CARGO_OPTIMIZE_INSTALL: set the repository
# variable CARGO_OPTIMIZE_INSTALL to change how (a version, a git URL, a binary).
name: release

on:
  push:
    tags: ["v*"]
  workflow_dispatch:

permissions:
  contents: read

env:
  CARGO_TERM_COLOR: always
  CARGO_OPTIMIZE_INSTALL: ${{ vars.CARGO_OPTIMIZE_INSTALL || 'cargo install --locked cargo-optimize' }}
  # The package, as the cells select it (paths relative to the repository's root, where
  # every step runs); the scripts use these only quoted.
{env}
jobs:
  build:
    name: ${{ matrix.name }}
    runs-on: ${{ matrix.runner }}
    strategy:
      fail-fast: false
      matrix:
        include:
{include}
    defaults:
      run:
        shell: bash
    steps:
      - uses: actions/checkout@v5
      - uses: dtolnay/rust-toolchain@stable
        with:
          components: llvm-tools
      - name: Add the target
        run: rustup target add "$TARGET"
        env:
          TARGET: ${{ matrix.target }}
      - name: Install cargo-optimize
        run: eval "$CARGO_OPTIMIZE_INSTALL"
      - name: cargo optimize release (this cell)
        run: |
          args=()
{select}
          args+=(--targets "$TARGET" --cpu "$CPU" --stages "$STAGES" --out-dir dist-cell)
          if [ -n "$FLAVOR" ]; then args+=(--flavors "$FLAVOR"); fi
          if [ "$CPU" != none ]; then args+=(--no-portable); fi
          cargo optimize release "${args[@]}"
        env:
          TARGET: ${{ matrix.target }}
          FLAVOR: ${{ matrix.flavor }}
          CPU: ${{ matrix.cpu }}
          STAGES: ${{ matrix.stages }}
      - uses: actions/upload-artifact@v6
        with:
          name: ${{ matrix.name }}
          path: dist-cell/
          if-no-files-found: error

  gather:
    needs: build
    runs-on: ubuntu-latest
    steps:
      - uses: dtolnay/rust-toolchain@stable
      - name: Install cargo-optimize
        run: eval "$CARGO_OPTIMIZE_INSTALL"
      - uses: actions/download-artifact@v7
        with:
          path: cells
          merge-multiple: false
      - name: cargo optimize release --gather
        run: cargo optimize release --gather cells/* --out-dir dist
      - uses: actions/upload-artifact@v6
        with:
          name: dist
          path: dist/
          if-no-files-found: error
"#;

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(target: &str, flavor: &str, cpu: &str, runner: Option<&str>) -> Cell {
        Cell {
            name: format!("{target}-{flavor}"),
            target: target.into(),
            flavor: flavor.into(),
            cpu: cpu.into(),
            stages: if runner.is_some() { "pgo" } else { "none" }.into(),
            runner: runner.unwrap_or(CROSS_RUNNER).into(),
            native: runner.is_some(),
        }
    }

    #[test]
    fn cells_off_linux_leave_bolt_out() {
        assert_eq!(without_bolt("pgo,bolt"), "pgo");
        assert_eq!(without_bolt("bolt"), "none");
        assert_eq!(without_bolt("none"), "none");
    }

    #[test]
    fn runners_come_from_the_table_and_the_flags_override_them() {
        let targets = [
            "x86_64-unknown-linux-gnu",
            "aarch64-unknown-linux-gnu",
            "riscv64gc-unknown-linux-gnu",
        ];
        let map = runners(&[], &targets).unwrap();
        assert_eq!(map.len(), 2, "{map:?}");
        assert_eq!(map["aarch64-unknown-linux-gnu"], "ubuntu-24.04-arm");
        let flags = [
            "aarch64-unknown-linux-gnu=arm-box".to_string(),
            "riscv64gc-unknown-linux-gnu = rv".to_string(),
        ];
        let map = runners(&flags, &targets).unwrap();
        assert_eq!(map["aarch64-unknown-linux-gnu"], "arm-box");
        assert_eq!(map["riscv64gc-unknown-linux-gnu"], "rv");
        let e = runners(&["ubuntu-latest".to_string()], &targets)
            .unwrap_err()
            .to_string();
        assert!(e.contains("TRIPLE=LABEL"), "{e}");
        let e = runners(&["x86_64-apple-darwin=m".to_string()], &targets)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("not a target of the release") && e.contains("riscv64gc"),
            "{e}"
        );
    }

    #[test]
    fn the_workflow_has_one_matrix_row_per_cell_and_says_which_cells_cross_build() {
        let cells = [
            cell(
                "x86_64-unknown-linux-gnu",
                "fast",
                "none",
                Some("ubuntu-latest"),
            ),
            cell(
                "x86_64-unknown-linux-gnu",
                "fast",
                "x86-64-v3",
                Some("ubuntu-latest"),
            ),
            cell("riscv64gc-unknown-linux-gnu", "fast", "none", None),
        ];
        let mut select = Select::default();
        select.value("-p", "CRATE_PACKAGE", "x".into(), "the package's name");
        select.value(
            "--spec",
            "CRATE_SPEC",
            "a b/$(touch P).toml".into(),
            "the spec",
        );
        select.args.push("args+=(--all-features)".into());
        let w = workflow(&cells, &select).unwrap();
        for p in [
            "{version}",
            "{cells}",
            "{runners}",
            "{include}",
            "{select}",
            "{env}",
        ] {
            assert!(!w.contains(p), "{p} left in:\n{w}");
        }
        assert_eq!(w.matches("\n          - {\"name\": ").count(), 3, "{w}");
        assert!(
            w.contains(
                "\"cpu\": \"x86-64-v3\", \"stages\": \"pgo\", \"runner\": \"ubuntu-latest\"}"
            ),
            "{w}"
        );
        assert!(w.contains("\"target\": \"riscv64gc-unknown-linux-gnu\", \"flavor\": \"fast\", \"cpu\": \"none\", \"stages\": \"none\""), "{w}");
        assert!(w.contains("#   riscv64gc-unknown-linux-gnu: no known runner, so cross-built on ubuntu-latest without PGO"), "{w}");
        assert!(
            w.contains("#   x86_64-unknown-linux-gnu on ubuntu-latest\n"),
            "{w}"
        );
        // The values through env:, the script only quoted references.
        assert!(
            w.contains("\n  CRATE_PACKAGE: \"x\"\n  CRATE_SPEC: \"a b/$(touch P).toml\"\n"),
            "{w}"
        );
        assert!(
            w.contains("          args=()\n          args+=(-p \"$CRATE_PACKAGE\")\n          args+=(--spec \"$CRATE_SPEC\")\n          args+=(--all-features)\n          args+=(--targets "),
            "{w}"
        );
        assert!(w.contains("cargo optimize release \"${args[@]}\""), "{w}");
        assert_eq!(w.matches("touch P").count(), 1, "{w}");
        assert!(
            w.contains("cargo optimize release --gather cells/* --out-dir dist"),
            "{w}"
        );
        assert!(
            w.contains("\non:\n  push:\n    tags: [\"v*\"]\n  workflow_dispatch:\n"),
            "{w}"
        );
        assert!(!w.contains('\t'));
    }
}
