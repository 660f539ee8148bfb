//! The `Cargo.lock` of a project that has none. cargo writes one on the first build and
//! leaves it in the user's tree; a run must not. So a run of such a project makes one up
//! front (`cargo generate-lockfile`, bounded like `cargo metadata`), builds every candidate
//! with that same one — every build's reuse key sees the same lock file, and a rerun makes
//! the same one again while the registry's index is unchanged — and removes it when the
//! run ends, on an error or a signal too (`sys::interrupt::remove_on_interrupt`).

use std::path::PathBuf;

use super::{child, CargoError, Project};

/// A `Cargo.lock` a run made, removed when dropped; or the project's own, left alone.
pub struct RunLockfile {
    path: PathBuf,
    made: Option<crate::sys::interrupt::PathGuard>,
}

impl RunLockfile {
    /// The project's lock file, made when there is none (the command line's `--offline`,
    /// `--locked`, `--frozen` and `--config` apply: `--locked` then fails as cargo does).
    pub fn for_run(project: &Project) -> Result<RunLockfile, CargoError> {
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
    pub fn made(&self) -> bool {
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
