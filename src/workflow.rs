//! What a GitHub Actions workflow this tool writes needs to know about the project, and
//! how a value gets into one safely: the project's paths and names relative to the
//! repository root ([`Shape`], [`shape`], [`repo_root`]), as YAML double-quoted `env:`
//! entries ([`env_lines`], [`yaml_string`]; a value with `${{` refused). Used by `ci
//! --github` (`check::ci`) and `release --emit-ci` (`release::ci`), which write their
//! workflows through `propose`.
//!
//! Must not: write files, build, run or measure (git is asked only where the repository is).

use std::path::{Path, PathBuf};

use anyhow::bail;

use crate::cargo::Project;

/// What the workflow needs to know about the project, as paths relative to the repo root.
/// The workflow hands every one of them to its `run:` scripts through `env:` (YAML
/// double-quoted values, see [`env_lines`]), and the scripts use them only quoted: a path
/// is never shell text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Shape {
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
    pub(crate) fn env(&self) -> Vec<(&'static str, &str, &'static str)> {
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

/// The root of the git repository holding the project (where `.github/` goes), else the
/// workspace root.
pub(crate) fn repo_root(project: &Project) -> PathBuf {
    crate::git::Repo::of(&project.workspace_root)
        .map(|r| r.root)
        .unwrap_or_else(|_| project.workspace_root.clone())
}

/// Where things are, relative to the repository root.
pub(crate) fn shape(project: &Project, root: &Path) -> Shape {
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
