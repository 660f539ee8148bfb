//! The `Cargo.lock` of a project that has none. cargo writes one on the first build and
//! leaves it in the user's tree; a run must not. So a run of such a project makes one up
//! front (`cargo generate-lockfile`, bounded like `cargo metadata`), builds every candidate
//! with that same one — every build's reuse key sees the same lock file, and a rerun makes
//! the same one again while the registry's index is unchanged — and removes it when the
//! run ends, on an error or a signal too (`sys::interrupt::remove_on_interrupt`).
//!
//! Also the one reader of a `Cargo.lock`'s packages (`packages`, `locked`): their names,
//! versions and the names they depend on (the C packages of the build graph, criterion's
//! version).

use std::path::PathBuf;

use super::{child, CargoError, Project};

/// A `Cargo.lock` a run made, removed when dropped; or the project's own, left alone.
pub(crate) struct RunLockfile {
    path: PathBuf,
    made: Option<crate::sys::interrupt::PathGuard>,
}

impl RunLockfile {
    /// The project's lock file, made when there is none (the command line's `--offline`,
    /// `--locked`, `--frozen` and `--config` apply: `--locked` then fails as cargo does).
    pub(crate) fn for_run(project: &Project) -> Result<RunLockfile, CargoError> {
        let path = project.workspace_root.join("Cargo.lock");
        if path.exists() {
            return Ok(RunLockfile { path, made: None });
        }
        let guard = crate::sys::interrupt::remove_on_interrupt(path.clone());
        let f = super::flags::flags();
        let mut args = vec!["generate-lockfile".to_string(), "--manifest-path".into()];
        args.push(
            project
                .workspace_root
                .join("Cargo.toml")
                .display()
                .to_string(),
        );
        args.extend([f.network_args(), f.config_args()].concat());
        let (outcome, said) = child::run_quiet(
            &args,
            "`cargo generate-lockfile`",
            "cargo resolves the dependencies from the registry's index: check that `cargo generate-lockfile` answers here, or pass --offline",
        )?;
        let made = Some(guard);
        let lockfile = RunLockfile { path, made };
        if !outcome.status.success() {
            return Err(CargoError::Build {
                command: format!("cargo {}", args.join(" ")),
                status: outcome.status.to_string(),
                tail: said,
            });
        }
        Ok(lockfile)
    }

    /// Whether the run made it (and will remove it).
    pub(crate) fn made(&self) -> bool {
        self.made.is_some()
    }
}

impl Drop for RunLockfile {
    fn drop(&mut self) {
        if self.made.is_some() {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// One `[[package]]` of a `Cargo.lock`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Locked {
    pub name: String,
    pub version: String,
    /// The names of the packages it depends on (versions and sources left out).
    pub dependencies: Vec<String>,
}

/// The packages a `Cargo.lock`'s text lists (none when it does not parse).
pub(crate) fn packages(lock: &str) -> Vec<Locked> {
    let Ok(doc) = lock.parse::<toml::Table>() else {
        return Vec::new();
    };
    let list = doc.get("package").and_then(|p| p.as_array());
    let text = |v: Option<&toml::Value>| v.and_then(|v| v.as_str()).unwrap_or("").to_string();
    (list.into_iter().flatten())
        .map(|p| Locked {
            name: text(p.get("name")),
            version: text(p.get("version")),
            dependencies: (p.get("dependencies").and_then(|d| d.as_array()).into_iter())
                .flatten()
                .filter_map(|d| d.as_str()?.split_whitespace().next().map(str::to_string))
                .collect(),
        })
        .filter(|p| !p.name.is_empty())
        .collect()
}

/// The packages of `project`'s workspace `Cargo.lock` (none without one).
pub(crate) fn locked(project: &Project) -> Vec<Locked> {
    let text = std::fs::read_to_string(project.workspace_root.join("Cargo.lock"));
    packages(&text.unwrap_or_default())
}
