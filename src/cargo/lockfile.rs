//! The `Cargo.lock` of a project that has none. cargo writes one on the first build and
//! leaves it in the user's tree; a run must not. So every command that builds (a run,
//! `check`, `release`, `profile collect`: [`RunLockfile::for_run`]) makes one up front
//! (`cargo generate-lockfile`, bounded like `cargo metadata`), builds with that same one —
//! every build's reuse key sees the same lock file, and a rerun makes the same one again
//! while the registry's index is unchanged — and removes it when it ends, on an error or a
//! signal too (`sys::interrupt::call_on_interrupt`).
//!
//! The lock file is the tool's only while it is the one the tool made: its digest, size,
//! device and inode and modification time are recorded when it is made
//! (`target/optimize/lockfile/<workspace>/made.json`), and it is removed only while the
//! file at `Cargo.lock` has all of them still. One the user wrote meanwhile (`cargo
//! generate-lockfile`, a `cargo build` that changed it, an editor that replaced it) is
//! theirs: it is kept, with a one-line note. Removal checks, then removes: a file the
//! user writes between the two (microseconds) is removed — the one window left (and a
//! signal while `cargo generate-lockfile` runs removes whatever is at `Cargo.lock` then:
//! nothing was there before it, and no other run uses it yet). A lock file that was there
//! before the command (even one that cannot be read) is the project's own and is never
//! touched.
//!
//! Runs share the lock file one of them made. Every run that uses it holds a shared OS
//! file lock on `users` beside `made.json`, released when it ends or dies; every decision
//! (make one, join, leave) is taken under the exclusive lock `gate`. The rule: a run that
//! finds a `Cargo.lock` matching `made.json` uses it and joins; the last one out (no other
//! holder of `users`) removes it while it still matches, and `made.json` with it; any
//! other run leaves it. So no run removes what another still builds with, and no
//! workload's writes-nothing check sees it come or go. A lock file matching `made.json`
//! that no run uses is one a killed run (SIGKILL) left: the next run takes it over and
//! removes it at its end. Runs of one project with two different target dirs do not see
//! each other's record: the one that did not make the lock file takes it for the user's.
//!
//! Also the one reader of a `Cargo.lock`'s packages (`packages`, `locked`): their names,
//! versions and the names they depend on (the C packages of the build graph, criterion's
//! version).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::{child, CargoError, Project};

/// How long a run waits for another to decide: one that makes the lock file holds the
/// gate while `cargo generate-lockfile` runs (bounded by `child::METADATA_TIMEOUT`).
const GATE_WAIT: Duration = Duration::from_secs(child::METADATA_TIMEOUT.as_secs() + 60);
/// How long a run that ends waits for the gate (others hold it only to decide, when a
/// lock file exists: moments).
const LEAVE_WAIT: Duration = Duration::from_secs(30);

/// The lock file of a command that builds: the project's own, left alone; or one the tool
/// made (this run or another), which this run leaves when it ends ([`RunLockfile::finish`],
/// or when dropped).
pub(crate) struct RunLockfile {
    path: PathBuf,
    /// The run's use of a lock file the tool made, taken by whichever ends it first: the
    /// run, or a signal's clean-up.
    state: Arc<Mutex<Phase>>,
    /// Whether the lock file is one the tool made.
    made: bool,
    /// The signal's clean-up; unregistered after the run has left.
    on_interrupt: Option<crate::sys::interrupt::PathGuard>,
    ui: crate::ui::Ui,
}

/// Where the run is with a lock file the tool makes or made.
enum Phase {
    Idle,
    /// `cargo generate-lockfile` is writing it (under the gate: nobody else uses it).
    Making(PathBuf),
    Using(Share),
}

/// How a run's use of a lock file the tool made ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// It was still the file made, and no other run used it: removed.
    Removed,
    /// Another run still uses it: left to the last one out.
    InUse,
    /// Another file or other content than the one made: the user's now, kept.
    Kept,
    /// Someone removed it already.
    Gone,
    /// Another `cargo optimize` held the gate too long to tell whether it uses it: left.
    Undecided,
}

/// A lock file's content and identity.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Made {
    /// SHA-256 of its bytes, in hex.
    digest: String,
    len: u64,
    /// Device and inode (`None` where the platform does not say).
    id: Option<(u64, u64)>,
    /// Modification time, nanoseconds since the epoch.
    modified_ns: Option<u64>,
}

impl Made {
    /// The file at `path` (not through a link: a link in its place is another file).
    fn of(path: &Path) -> std::io::Result<Made> {
        use sha2::Digest as _;
        let meta = std::fs::symlink_metadata(path)?;
        let bytes = std::fs::read(path)?;
        let since = |t: std::time::SystemTime| t.duration_since(std::time::UNIX_EPOCH).ok();
        Ok(Made {
            digest: (sha2::Sha256::digest(&bytes).iter())
                .map(|b| format!("{b:02x}"))
                .collect(),
            len: bytes.len() as u64,
            id: crate::sys::file_id(&meta),
            modified_ns: (meta.modified().ok().and_then(since))
                .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)),
        })
    }
}

/// A project's lock file and the tool's record of it.
struct Place {
    lock: PathBuf,
    /// `target/optimize/lockfile/<digest of the workspace root>`: `made.json`, `gate`,
    /// `users`.
    folder: PathBuf,
}

impl Place {
    fn of(workspace_root: &Path, optimize_dir: &Path) -> Place {
        let key = crate::util::short_digest(workspace_root.to_string_lossy().as_bytes());
        Place {
            lock: workspace_root.join("Cargo.lock"),
            folder: optimize_dir.join("lockfile").join(key),
        }
    }

    fn marker(&self) -> PathBuf {
        self.folder.join("made.json")
    }

    /// What `made.json` records (`None`: nothing, or unreadable).
    fn recorded(&self) -> Option<Made> {
        let text = std::fs::read_to_string(self.marker()).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// The gate, held exclusively; `Ok(None)` when another holder kept it past `wait`.
    fn gate(&self, wait: Duration) -> std::io::Result<Option<File>> {
        let file = crate::sys::open_lock(&self.folder.join("gate"))?;
        let start = Instant::now();
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(Some(file)),
                Err(std::fs::TryLockError::WouldBlock) if start.elapsed() < wait => {
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(std::fs::TryLockError::WouldBlock) => return Ok(None),
                Err(std::fs::TryLockError::Error(e)) => return Err(e),
            }
        }
    }
}

/// A run's use of a lock file the tool made: its shared lock on `users`.
struct Share {
    place: Place,
    users: File,
}

impl RunLockfile {
    /// The project's lock file, made when there is none, or shared with the run that made
    /// it (the command line's `--offline`, `--locked`, `--frozen` and `--config` apply:
    /// `--locked` then fails as cargo does). Its record goes in `optimize_dir`.
    pub(crate) fn for_run(
        project: &Project,
        optimize_dir: &Path,
        ui: &crate::ui::Ui,
    ) -> Result<RunLockfile, CargoError> {
        let place = Place::of(&project.workspace_root, optimize_dir);
        enter(place, ui, || generate(project))
    }

    /// Whether the lock file is one the tool made (this run or another).
    pub(crate) fn made(&self) -> bool {
        self.made
    }

    /// Leave the lock file the tool made (see the module doc); `None`: the project's own.
    pub(crate) fn finish(mut self) -> Option<Ending> {
        self.end()
    }

    fn end(&mut self) -> Option<Ending> {
        let phase = std::mem::replace(&mut *lock(&self.state), Phase::Idle);
        let ending = match phase {
            Phase::Using(share) => Some(leave(share)),
            _ => None,
        };
        // Only now: a signal's clean-up waits for `state` while holding the registry.
        self.on_interrupt.take();
        if let Some(note) = ending.and_then(|e| note(e, &self.path)) {
            self.ui.info(&note);
        }
        ending
    }
}

impl Drop for RunLockfile {
    fn drop(&mut self) {
        self.end();
    }
}

fn lock(state: &Mutex<Phase>) -> MutexGuard<'_, Phase> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

/// The line that says a lock file was left: kept as the user's, or not known to be free.
fn note(ending: Ending, path: &Path) -> Option<String> {
    match ending {
        Ending::Kept => Some(format!("{} was kept: it changed during the run (not the file this tool made, or other content), so it is yours now", path.display())),
        Ending::Undecided => Some(format!("{} was left: another `cargo optimize` held its record's lock for {} s, so whether a run still uses it is unknown; remove it if you do not want it", path.display(), LEAVE_WAIT.as_secs())),
        _ => None,
    }
}

/// `cargo generate-lockfile` for `project`.
fn generate(project: &Project) -> Result<(), CargoError> {
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
    if !outcome.status.success() {
        return Err(CargoError::Build {
            command: format!("cargo {}", args.join(" ")),
            status: outcome.status.to_string(),
            tail: said,
        });
    }
    Ok(())
}

/// Under the gate: join the lock file the tool made, take over one a killed run left,
/// leave the project's own alone, or `make` one (see the module doc).
fn enter(
    place: Place,
    ui: &crate::ui::Ui,
    make: impl FnOnce() -> Result<(), CargoError>,
) -> Result<RunLockfile, CargoError> {
    let io = |e: std::io::Error, what: &Path| {
        CargoError::Lockfile(format!(
            "cannot use {}: {e}\n  fix: check that the target dir may be written (`cargo optimize clean` removes the record)",
            what.display()
        ))
    };
    std::fs::create_dir_all(&place.folder).map_err(|e| io(e, &place.folder))?;
    let gate = place.gate(GATE_WAIT).map_err(|e| io(e, &place.folder))?;
    let Some(_gate) = gate else {
        return Err(CargoError::Lockfile(format!(
            "another `cargo optimize` has held {} for {} s while making {}\n  fix: wait for it to finish (or stop it), then run again",
            place.folder.join("gate").display(),
            GATE_WAIT.as_secs(),
            place.lock.display()
        )));
    };
    let users_path = place.folder.join("users");
    let users = crate::sys::open_lock(&users_path).map_err(|e| io(e, &users_path))?;
    let alone = users.try_lock().is_ok();
    let recorded = place.recorded();
    let mut run = RunLockfile {
        path: place.lock.clone(),
        state: Arc::new(Mutex::new(Phase::Idle)),
        made: false,
        on_interrupt: None,
        ui: ui.clone(),
    };
    // One that cannot be read (or a link to nothing) is there all the same: never made over.
    let now = match Made::of(&place.lock) {
        Ok(m) => Some(m),
        Err(_) if std::fs::symlink_metadata(&place.lock).is_err() => None,
        Err(_) => return Ok(run),
    };
    if now.is_some() && now != recorded {
        // The project's own; a record no run uses any more is stale.
        if alone {
            let _ = std::fs::remove_file(place.marker());
        }
        return Ok(run);
    }
    run.on_interrupt = Some(crate::sys::interrupt::call_on_interrupt(on_signal(
        run.state.clone(),
    )));
    if now.is_none() {
        *lock(&run.state) = Phase::Making(place.lock.clone());
        let made = make().and_then(|()| Made::of(&place.lock).map_err(|e| io(e, &place.lock)));
        let record = made.and_then(|m| {
            let text = serde_json::to_string(&m).unwrap_or_default();
            crate::util::atomic::replace(&place.marker(), text.as_bytes())
                .map_err(|e| io(e, &place.marker()))
        });
        if let Err(e) = record {
            *lock(&run.state) = Phase::Idle;
            let _ = std::fs::remove_file(&place.lock);
            return Err(e);
        }
    }
    // Others hold `users` shared, never exclusively outside the gate: this never waits.
    let _ = users.unlock();
    users
        .try_lock_shared()
        .map_err(|e| io(e.into(), &users_path))?;
    run.made = true;
    *lock(&run.state) = Phase::Using(Share { place, users });
    Ok(run)
}

/// What a signal does for a run's lock file: one being made removed; one in use left as
/// at the run's end ([`leave`]: removed only by the last run out, while unchanged).
fn on_signal(state: Arc<Mutex<Phase>>) -> impl FnMut() + Send + 'static {
    move || match std::mem::replace(&mut *lock(&state), Phase::Idle) {
        Phase::Making(path) => {
            let _ = std::fs::remove_file(path);
        }
        Phase::Using(share) => {
            let path = share.place.lock.clone();
            if let Some(note) = note(leave(share), &path) {
                eprintln!("  {note}");
            }
        }
        Phase::Idle => {}
    }
}

/// Under the gate: stop using the lock file; the last run out removes it while it is the
/// file recorded in `made.json`, with that content, and the record with it.
fn leave(share: Share) -> Ending {
    let Share { place, users } = share;
    let Ok(Some(_gate)) = place.gate(LEAVE_WAIT) else {
        return Ending::Undecided;
    };
    let _ = users.unlock();
    if users.try_lock().is_err() {
        return Ending::InUse;
    }
    let recorded = place.recorded();
    let _ = std::fs::remove_file(place.marker());
    match Made::of(&place.lock) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ending::Gone,
        Ok(now) if Some(&now) == recorded.as_ref() => match std::fs::remove_file(&place.lock) {
            Ok(()) => Ending::Removed,
            Err(_) => Ending::Gone,
        },
        _ => Ending::Kept,
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

#[cfg(test)]
mod tests {
    use super::*;

    const MADE: &str = "# the lock file the run made\nversion = 4\n";

    /// A workspace (`ws/`) and its target dir, in a fresh folder.
    fn place(dir: &Path) -> Place {
        std::fs::create_dir_all(dir.join("ws")).unwrap();
        Place::of(&dir.join("ws"), &dir.join("target/optimize"))
    }

    /// A run of the workspace in `dir` that makes the lock file when there is none (as
    /// `cargo generate-lockfile` would: [`MADE`]).
    fn run(dir: &Path) -> RunLockfile {
        let place = place(dir);
        let lock = place.lock.clone();
        enter(place, &crate::ui::Ui::plain(), || {
            std::fs::write(&lock, MADE).map_err(|e| CargoError::Lockfile(e.to_string()))
        })
        .unwrap()
    }

    /// A run that must find a lock file (it makes none).
    fn run_finding_one(dir: &Path) -> RunLockfile {
        enter(place(dir), &crate::ui::Ui::plain(), || {
            panic!("a lock file was there: none is made")
        })
        .unwrap()
    }

    fn lock(dir: &Path) -> PathBuf {
        dir.join("ws/Cargo.lock")
    }

    fn signal(run: &RunLockfile) {
        run.on_interrupt
            .as_ref()
            .expect("registered")
            .interrupt_now();
    }

    #[test]
    fn an_unchanged_lock_file_is_removed_and_the_project_s_own_is_left() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let first = run(dir);
        assert!(first.made());
        assert_eq!(std::fs::read_to_string(lock(dir)).unwrap(), MADE);
        assert_eq!(first.finish(), Some(Ending::Removed));
        assert!(!lock(dir).exists());
        assert!(!place(dir).marker().exists());
        // The project's own: never made, never removed.
        std::fs::write(lock(dir), "# the user's\n").unwrap();
        let own = run_finding_one(dir);
        assert!(!own.made());
        assert_eq!(own.finish(), None);
        assert_eq!(
            std::fs::read_to_string(lock(dir)).unwrap(),
            "# the user's\n"
        );
        // One that cannot be read is there all the same: never made over.
        crate::sys::set_mode(lock(dir), 0).unwrap();
        let unreadable = run_finding_one(dir);
        assert!(!unreadable.made());
        drop(unreadable);
        crate::sys::set_mode(lock(dir), 0o644).unwrap();
        let text = std::fs::read_to_string(lock(dir)).unwrap();
        assert_eq!(text, "# the user's\n");
        // Dropped on an error: the same as finishing.
        std::fs::remove_file(lock(dir)).unwrap();
        drop(run(dir));
        assert!(!lock(dir).exists());
    }

    #[test]
    fn a_lock_file_the_user_wrote_during_the_run_is_kept_and_is_theirs_afterwards() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        // Other content, written in place (`cargo generate-lockfile` after an index update).
        let r = run(dir);
        std::fs::write(lock(dir), "# the user's\n").unwrap();
        assert_eq!(r.finish(), Some(Ending::Kept));
        assert_eq!(
            std::fs::read_to_string(lock(dir)).unwrap(),
            "# the user's\n"
        );
        let later = run_finding_one(dir);
        assert!(!later.made(), "a later run takes it for the user's");
        drop(later);
        assert!(lock(dir).exists());
        // The same content in another file (an editor's save: a new file renamed over it).
        std::fs::remove_file(lock(dir)).unwrap();
        let r = run(dir);
        let new = dir.join("ws/Cargo.lock.new");
        std::fs::write(&new, MADE).unwrap();
        std::fs::rename(&new, lock(dir)).unwrap();
        assert_eq!(r.finish(), Some(Ending::Kept));
        assert_eq!(std::fs::read_to_string(lock(dir)).unwrap(), MADE);
    }

    #[test]
    fn a_signal_removes_the_lock_file_only_while_it_is_unchanged() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let r = run(dir);
        signal(&r);
        assert!(!lock(dir).exists());
        assert_eq!(r.finish(), None, "the signal's clean-up left it already");
        let r = run(dir);
        std::fs::write(lock(dir), "# the user's\n").unwrap();
        signal(&r);
        assert_eq!(
            std::fs::read_to_string(lock(dir)).unwrap(),
            "# the user's\n"
        );
        drop(r);
        assert!(lock(dir).exists());
    }

    #[test]
    fn a_second_run_shares_the_lock_file_and_the_last_one_out_removes_it() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        // The maker ends first, then on a signal: the other still uses it.
        for by_signal in [false, true] {
            let first = run(dir);
            let second = run_finding_one(dir);
            assert!(
                second.made(),
                "the lock file the first run made is the tool's"
            );
            match by_signal {
                true => signal(&first),
                false => assert_eq!(first.finish(), Some(Ending::InUse)),
            }
            assert_eq!(std::fs::read_to_string(lock(dir)).unwrap(), MADE);
            assert_eq!(second.finish(), Some(Ending::Removed));
            assert!(!lock(dir).exists());
        }
        // The joiner ends first.
        let first = run(dir);
        let second = run_finding_one(dir);
        assert_eq!(second.finish(), Some(Ending::InUse));
        assert_eq!(first.finish(), Some(Ending::Removed));
        assert!(!lock(dir).exists());
    }

    #[test]
    fn a_lock_file_a_killed_run_left_is_taken_over_and_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let killed = run(dir);
        // SIGKILL: its share of `users` goes with the process, the files stay.
        let phase = std::mem::replace(&mut *super::lock(&killed.state), Phase::Idle);
        drop(phase);
        drop(killed);
        assert!(lock(dir).exists());
        let next = run_finding_one(dir);
        assert!(next.made());
        assert_eq!(next.finish(), Some(Ending::Removed));
        assert!(!lock(dir).exists());
    }
}
