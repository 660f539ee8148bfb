//! Who may use `target/optimize` at once ([`DirLock`]): any number of runs or one `clean`
//! (or one `apply` of a project), through OS file locks, with bounded waits and messages
//! naming the holder and the fix.

use std::path::{Path, PathBuf};
use std::time::Instant;

/// Who may use `target/optimize` at once: any number of runs (each has its own run folder)
/// or one `clean`. Held through an OS file lock on `target/optimize.lock` (outside the
/// folder `clean` removes), released when dropped or when the process dies.
pub(crate) struct DirLock {
    file: std::fs::File,
    /// The holder wrote who it is into the file ([`DirLock::for_apply`]): emptied on release,
    /// so a waiter never names a holder that has gone.
    says_holder: bool,
    /// A run's: the files' digests it used are kept for the next run on release
    /// (`store::remember_digests_in`).
    keeps_digests: bool,
}

impl Drop for DirLock {
    fn drop(&mut self) {
        if self.says_holder {
            let _ = self.file.set_len(0);
        }
        if self.keeps_digests {
            crate::store::keep_digests();
        }
    }
}

/// The tool's folder is in use by the other kind of holder.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LockError {
    #[error("{dir} is in use by a running `cargo optimize`; `{doing}` would delete the files it is working on\n  fix: wait for that run to finish (or stop it), then run `cargo optimize {doing}` again")]
    RunInProgress { dir: PathBuf, doing: &'static str },
    #[error("{dir} is being removed by `cargo optimize clean` (waited {waited_secs} s)\n  fix: run again when it has finished")]
    CleanInProgress { dir: PathBuf, waited_secs: u64 },
    #[error("another `cargo optimize apply` is writing into this project: {lock} is held by {holder} (waited {waited_secs} s)\n  fix: wait for that apply to finish (or stop it), then run `cargo optimize apply` again")]
    ApplyInProgress {
        lock: PathBuf,
        holder: String,
        waited_secs: f64,
    },
    #[error("cannot lock {path}: {error}\n  fix: {}", lock_fix(path, error))]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
}

impl DirLock {
    /// How long a run waits for a `clean` to finish.
    const WAIT_FOR_CLEAN: std::time::Duration = std::time::Duration::from_secs(60);

    fn open(optimize_dir: &Path) -> Result<(std::fs::File, PathBuf), LockError> {
        Self::open_at(optimize_dir.with_extension("lock"))
    }

    fn open_at(path: PathBuf) -> Result<(std::fs::File, PathBuf), LockError> {
        let io = |error| LockError::Io {
            path: path.clone(),
            error,
        };
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(io)?;
        }
        let file = crate::sys::open_lock(&path).map_err(io)?;
        Ok((file, path))
    }

    /// A run's share of the folder; waits (bounded) while a `clean` holds it. The digests
    /// of files an earlier run read are known to this one, and those this one uses are kept
    /// for the next when it is released (`cache/digests.json`).
    pub(crate) fn for_run(optimize_dir: &Path) -> Result<DirLock, LockError> {
        let (file, path) = Self::open(optimize_dir)?;
        let start = Instant::now();
        loop {
            match file.try_lock_shared() {
                Ok(()) => {
                    crate::store::remember_digests_in(&optimize_dir.join("cache/digests.json"));
                    return Ok(DirLock {
                        file,
                        says_holder: false,
                        keeps_digests: true,
                    });
                }
                Err(std::fs::TryLockError::WouldBlock)
                    if start.elapsed() < Self::WAIT_FOR_CLEAN =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(100));
                }
                Err(std::fs::TryLockError::WouldBlock) => {
                    return Err(LockError::CleanInProgress {
                        dir: optimize_dir.to_path_buf(),
                        waited_secs: Self::WAIT_FOR_CLEAN.as_secs(),
                    })
                }
                Err(std::fs::TryLockError::Error(error)) => {
                    return Err(LockError::Io { path, error })
                }
            }
        }
    }

    /// One `cargo optimize apply` at a time per target dir: `target/optimize-apply.lock`
    /// (beside `optimize.lock`, outside the folder `clean` removes), held exclusively for
    /// the whole read–diff–write. While another apply holds it, `on_wait` is told who (once),
    /// and after `wait` the error names the holder. The holder's pid and command line are
    /// written into the file for whoever waits.
    pub(crate) fn for_apply(
        optimize_dir: &Path,
        wait: std::time::Duration,
        on_wait: &mut dyn FnMut(&str),
    ) -> Result<DirLock, LockError> {
        let mut name = optimize_dir
            .file_name()
            .unwrap_or(std::ffi::OsStr::new("optimize"))
            .to_os_string();
        name.push("-apply.lock");
        let (mut file, path) = Self::open_at(optimize_dir.with_file_name(name))?;
        let start = Instant::now();
        let mut told = false;
        loop {
            match file.try_lock() {
                Ok(()) => break,
                Err(std::fs::TryLockError::WouldBlock) => {
                    let holder = lock_holder(&path);
                    if start.elapsed() >= wait {
                        return Err(LockError::ApplyInProgress {
                            lock: path,
                            holder,
                            waited_secs: wait.as_secs_f64(),
                        });
                    }
                    if !std::mem::replace(&mut told, true) {
                        on_wait(&holder);
                    }
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                Err(std::fs::TryLockError::Error(error)) => {
                    return Err(LockError::Io { path, error })
                }
            }
        }
        // Who holds it, for whoever waits (best effort: the lock is what counts).
        use std::io::Write as _;
        let args: Vec<String> = std::env::args().collect();
        let _ = file
            .set_len(0)
            .and_then(|()| write!(file, "pid {}: {}", std::process::id(), args.join(" ")));
        Ok(DirLock {
            file,
            says_holder: true,
            keeps_digests: false,
        })
    }

    /// The whole folder, for `clean`; refused at once while a run holds it.
    pub(crate) fn for_clean(optimize_dir: &Path) -> Result<DirLock, LockError> {
        Self::exclusive(optimize_dir, "clean")
    }

    /// The whole folder, for a command that removes from it (`doing`: `clean`, `cache
    /// clear`); refused at once while a run holds it.
    pub(crate) fn exclusive(
        optimize_dir: &Path,
        doing: &'static str,
    ) -> Result<DirLock, LockError> {
        let (file, path) = Self::open(optimize_dir)?;
        match file.try_lock() {
            Ok(()) => Ok(DirLock {
                file,
                says_holder: false,
                keeps_digests: false,
            }),
            Err(std::fs::TryLockError::WouldBlock) => Err(LockError::RunInProgress {
                doing,
                dir: optimize_dir.to_path_buf(),
            }),
            Err(std::fs::TryLockError::Error(error)) => Err(LockError::Io { path, error }),
        }
    }
}

/// What to do when the lock file `path` cannot be made: its folder is a file, or may not
/// be written.
fn lock_fix(path: &Path, error: &std::io::Error) -> String {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return format!(
            "remove it (`rm {}`): {} is a symlink, and a lock is never taken through one (the lock file is written to); the next command makes it again",
            path.display(),
            path.display()
        );
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    let file_on_the_way = dir.ancestors().find(|a| a.exists()).filter(|a| !a.is_dir());
    if let Some(file) = file_on_the_way {
        return format!(
            "{} is a file, not a folder: point --target-dir (or CARGO_TARGET_DIR) at a folder",
            file.display()
        );
    }
    match error.kind() {
        std::io::ErrorKind::PermissionDenied => format!(
            "{} may not be written (its permissions, or an immutable attribute: `lsattr -d {}`); make it writable or point --target-dir at a folder you can write",
            dir.display(),
            dir.display()
        ),
        _ => "point --target-dir at a folder you can write".to_string(),
    }
}

/// Who holds a lock, as the holder wrote it into the file (`pid N: COMMAND`).
fn lock_holder(path: &Path) -> String {
    match std::fs::read_to_string(path) {
        Ok(s) if !s.trim().is_empty() => s.trim().to_string(),
        _ => "another process (it has not written who it is)".to_string(),
    }
}
