//! The keys of what later runs may reuse, and the verdict cache:
//! - [`key_of`] / [`run_key`]: the tool's version, binaries' bytes, each workload's
//!   definition and input files (and any settings as text) — what the PGO and BOLT stages'
//!   trainings and `verify`'s checks are kept under;
//! - verdicts ([`VerdictCache`]): the comparison of two binaries on one workload — both
//!   binaries' bytes, the workload's definition and its input files, the measuring options
//!   (not the seed), the machine (CPU model, logical CPUs, kernel); `--fresh` ignores them;
//! - how much is kept ([`usage`]) and trimming it ([`gc`]), across every kind and the
//!   per-settings cargo target dirs — `check`'s too: its revisions' records
//!   (`cache/revs/`; their binaries are blobs) and its revision builds (`check/build/`).
//!
//! Entries are `store::Store` entries: written whole, checked when read.
//!
//! Must not: measure or decide anything (the pipeline does).

use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::bench::{BenchOptions, Comparison};
use crate::spec::Workload;
pub(crate) use crate::store::Store;
use crate::store::{file_digest, hex};

/// Input files at most this large are hashed into the key (a larger one counts by its
/// size and modification time).
const HASHED_INPUT_LIMIT: u64 = 256 << 20;

pub(crate) struct VerdictCache {
    store: Store,
    /// `--fresh`: look nothing up (still store what is measured).
    fresh: bool,
    machine: String,
    hits: Cell<u32>,
    misses: Cell<u32>,
    /// Workloads already warned about having no key (said once a run).
    unkeyed: RefCell<std::collections::BTreeSet<String>>,
}

/// The fix for a workload whose inputs are too large to key (see [`DIR_ENTRIES_LIMIT`]).
pub(crate) fn unkeyed_fix() -> String {
    format!(
        "point it at fewer files (at most {DIR_ENTRIES_LIMIT} entries and {} in a folder), or at one file",
        crate::util::human_bytes(DIR_BYTES_LIMIT)
    )
}

/// The key of running `workloads` on `binary`: the tool's version, the binary's bytes, and
/// each workload's definition and input files.
pub(crate) fn run_key(binary: &Path, workloads: &[&Workload]) -> std::io::Result<String> {
    key_of(&[binary], workloads, "")
}

/// The key of anything decided by `binaries`, `workloads` and `extra` (settings as text):
/// the tool's version, the binaries' bytes, each workload's definition and input files.
pub(crate) fn key_of(
    binaries: &[&Path],
    workloads: &[&Workload],
    extra: &str,
) -> std::io::Result<String> {
    let mut h = Sha256::new();
    h.update(env!("CARGO_PKG_VERSION"));
    for b in binaries {
        h.update(file_digest(b)?);
    }
    for w in workloads {
        workload_digest(&mut h, w)?;
    }
    h.update(extra);
    Ok(hex(&h.finalize()[..16]))
}

/// A folder a workload names is hashed by content up to this many entries (files, folders,
/// links) …
///
/// Why this many: a training corpus is often a source tree or a mirror of documents (tens
/// of thousands of entries; the Linux kernel's tree has ~90 000). Past the bound a run
/// keeps nothing it decided on that workload, so an unchanged re-run trains, rebuilds and
/// measures again: minutes instead of seconds. Each file is read once a run
/// (`store::file_digest` remembers it by size and time); every later key costs a walk of
/// the folder's entries.
/// Figures: docs/src/decisions.md, "A workload's folder is keyed up to 200 000 entries".
const DIR_ENTRIES_LIMIT: usize = 200_000;
/// … and this many bytes of files. Past either there is no key: nothing decided by that
/// workload is kept or reused (each run does it again).
const DIR_BYTES_LIMIT: u64 = 1 << 30;

/// How much of a folder [`dir_digest`] hashes before it gives up: entries, bytes.
type DirBounds = (usize, u64);

/// A workload's definition and the bytes of the input files it names (args — `--flag=PATH`
/// too —, stdin; `process::named_files`): a file by content, a folder by every entry's
/// relative path and content ([`dir_digest`]).
fn workload_digest(h: &mut Sha256, w: &Workload) -> std::io::Result<()> {
    h.update(format!("{w:?}"));
    // What it sees of the caller's environment (`process::Jail::environment`): a change
    // there (`MYV=1` → `MYV=2` with `env-pass = ["MYV"]`, another `LANG`) is another run.
    h.update(format!("{:?}", crate::process::passed(&w.env_pass)));
    for path in w.input_paths() {
        if let Ok(meta) = std::fs::metadata(&path) {
            h.update(path.as_os_str().as_encoded_bytes());
            if meta.is_dir() {
                h.update(folder_digest(&path)?);
            } else if meta.is_file() && meta.len() <= HASHED_INPUT_LIMIT {
                h.update(file_digest(&path)?);
            } else {
                h.update(format!("{:?}{:?}", meta.len(), meta.modified().ok()));
            }
        }
    }
    Ok(())
}

/// Folder digests taken in this process, by folder: the workload runs made when each was
/// taken (`process::workload_runs`), and the digest.
type Folders = std::collections::HashMap<std::path::PathBuf, (u64, [u8; 32])>;
static FOLDERS: std::sync::Mutex<Option<Folders>> = std::sync::Mutex::new(None);

/// The digest of `dir`'s entries ([`dir_digest`] within [`DIR_ENTRIES_LIMIT`] and
/// [`DIR_BYTES_LIMIT`]), remembered while no workload has run since it was taken.
///
/// Why: a run computes a folder's key for every comparison it keeps or looks up, dozens of
/// walks of the same large folder, a good share of an unchanged re-run. Nothing of this
/// tool writes into a workload's inputs; the user's program may (a formatter run in place),
/// so any workload run since forgets it. A folder the user edits by hand during a run is
/// keyed as it was when the run first read it.
/// Figures: docs/src/decisions.md, "A folder's digest is remembered until a workload runs".
fn folder_digest(dir: &Path) -> std::io::Result<[u8; 32]> {
    folder_digest_given(dir, &crate::process::workload_runs)
}

/// [`folder_digest`] with the workload runs read from `workload_runs`.
fn folder_digest_given(
    dir: &Path,
    workload_runs: &dyn Fn() -> Option<u64>,
) -> std::io::Result<[u8; 32]> {
    let runs = workload_runs();
    let mut folders = FOLDERS.lock().unwrap_or_else(|e| e.into_inner());
    let folders = folders.get_or_insert_with(Default::default);
    if let Some((at, d)) = folders.get(dir) {
        if Some(*at) == runs {
            return Ok(*d);
        }
    }
    let mut h = Sha256::new();
    dir_digest(&mut h, dir, (DIR_ENTRIES_LIMIT, DIR_BYTES_LIMIT))?;
    let d: [u8; 32] = h.finalize().into();
    match runs.filter(|r| workload_runs() == Some(*r)) {
        Some(r) => folders.insert(dir.to_path_buf(), (r, d)),
        None => folders.remove(dir),
    };
    Ok(d)
}

/// Forget every remembered folder digest, as a later run starts without them (tests).
#[cfg(test)]
fn forget_folders() {
    *FOLDERS.lock().unwrap_or_else(|e| e.into_inner()) = None;
}

/// Every entry under `dir`, in order of its path relative to `dir`: a file by its content,
/// a symlink by where it points (not followed), a folder, device or pipe by its kind. An
/// error past `bounds` (entries, bytes of files): no key then.
fn dir_digest(h: &mut Sha256, dir: &Path, bounds: DirBounds) -> std::io::Result<()> {
    let (max_entries, max_bytes) = bounds;
    let too_big = |what: String| {
        std::io::Error::other(format!(
            "{} holds more than {what}: too much to hash, so nothing that reads it is kept or reused",
            dir.display()
        ))
    };
    // Each entry's metadata comes from its folder's listing (`DirEntry::metadata`, not
    // followed), not from its whole path resolved again: a key of a large folder is
    // computed for every comparison a run makes on its workload.
    let (mut entries, mut pending) = (Vec::new(), vec![dir.to_path_buf()]);
    while let Some(d) = pending.pop() {
        for e in std::fs::read_dir(&d)? {
            let e = e?;
            let kind = e.file_type()?;
            if kind.is_dir() {
                pending.push(e.path());
            }
            let meta = match kind.is_file() {
                true => Some(e.metadata()?),
                false => None,
            };
            entries.push((e.path(), kind, meta));
            if entries.len() > max_entries {
                return Err(too_big(format!("{max_entries} entries")));
            }
        }
    }
    // By the bytes of the path: the same order every time, and cheaper than comparing
    // paths component by component.
    entries.sort_by(|a, b| {
        a.0.as_os_str()
            .as_encoded_bytes()
            .cmp(b.0.as_os_str().as_encoded_bytes())
    });
    let mut bytes = 0u64;
    for (path, kind, meta) in entries {
        let rel = path.strip_prefix(dir).unwrap_or(&path);
        h.update(rel.as_os_str().as_encoded_bytes());
        h.update([0]);
        if let Some(meta) = meta {
            bytes += meta.len();
            if bytes > max_bytes {
                return Err(too_big(crate::util::human_bytes(max_bytes)));
            }
            h.update(b"file");
            h.update(crate::store::file_digest_as(&path, &meta)?);
        } else if kind.is_symlink() {
            h.update(b"link");
            h.update(std::fs::read_link(&path)?.as_os_str().as_encoded_bytes());
        } else {
            h.update(format!("{kind:?}"));
        }
    }
    Ok(())
}

impl VerdictCache {
    pub(crate) fn new(optimize_dir: &Path, fresh: bool, machine: String) -> Self {
        VerdictCache {
            store: Store::new(optimize_dir, "verdicts"),
            fresh,
            machine,
            hits: Cell::new(0),
            misses: Cell::new(0),
            unkeyed: RefCell::default(),
        }
    }

    /// The first time in a run that `workload` has no key (`why`: its input folder is too
    /// large to hash, say), the warning that what is measured on it is not kept; `None`
    /// after, so a run says it once per workload, not once per comparison.
    pub(crate) fn unkept_warning(&self, workload: &str, why: &std::io::Error) -> Option<String> {
        if !self.unkeyed.borrow_mut().insert(workload.to_string()) {
            return None;
        }
        Some(format!(
            "workload `{workload}`: nothing measured on it is kept for later runs, so an unchanged re-run measures it again: {why}\n  fix: {}",
            unkeyed_fix()
        ))
    }

    /// `(hits, misses)` so far.
    pub(crate) fn counts(&self) -> (u32, u32) {
        (self.hits.get(), self.misses.get())
    }

    /// The key of comparing `b` against `a` on `w` with `opts`, `b` run with the shared
    /// library `b_preload` preloaded when given (the alloc stage's preview): its bytes are
    /// part of the key.
    pub(crate) fn key(
        &self,
        (a, b): (&Path, &Path),
        b_preload: Option<&Path>,
        w: &Workload,
        opts: &BenchOptions,
    ) -> std::io::Result<String> {
        let mut h = Sha256::new();
        h.update(env!("CARGO_PKG_VERSION"));
        h.update(crate::bench::stats::ANALYSIS);
        h.update(&self.machine);
        for bin in [a, b] {
            h.update(file_digest(bin)?);
        }
        if let Some(lib) = b_preload {
            h.update("preloaded into b");
            h.update(file_digest(lib)?);
        }
        workload_digest(&mut h, w)?;
        let unseeded = BenchOptions {
            seed: 0,
            ..opts.clone()
        };
        h.update(serde_json::to_vec(&unseeded).unwrap_or_default());
        Ok(hex(&h.finalize()[..16]))
    }

    /// The stored comparison for `key`, when there is a sound one: it parses under its
    /// key, has samples, and agrees with them (`Comparison::disagreement`). One that does
    /// not agree is removed, and `Err` says why, so the caller measures again saying so.
    pub(crate) fn get(&self, key: &str) -> Result<Option<Comparison>, String> {
        let found = match self.fresh {
            true => None,
            false => (self.store.get::<Comparison>(key)).filter(|c| !c.samples.is_empty()),
        };
        let disagrees = found.as_ref().and_then(Comparison::disagreement);
        let counter = match found.is_some() && disagrees.is_none() {
            true => &self.hits,
            false => &self.misses,
        };
        counter.set(counter.get() + 1);
        match disagrees {
            Some(why) => {
                self.store.remove(key);
                Err(why)
            }
            None => Ok(found),
        }
    }

    /// Keep `c` under `key`.
    pub(crate) fn put(&self, key: &str, c: &Comparison) {
        self.store.put(key, c);
    }
}

/// One kind of kept thing and how much of it there is.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub(crate) struct DiskUsage {
    pub kind: &'static str,
    pub entries: u64,
    pub bytes: u64,
}

/// A removable unit of the cache: a file, or a build's whole target dir.
struct Item {
    kind: &'static str,
    path: PathBuf,
    bytes: u64,
    used: std::time::SystemTime,
}

/// Every kind kept under `cache/` (docs/src/caching.md, "What is kept"), in the order `cache`
/// lists them: the kind and its folder (`""`: the merged profiles, `cache/*.profdata`).
const KINDS: &[(&str, &str)] = &[
    ("builds", "builds"),
    ("binaries", "blobs"),
    ("profiles", ""),
    ("trainings", "profiles"),
    ("trainings", "bolted"),
    ("coverage", "coverage"),
    ("checks", "checks"),
    ("verdicts", "verdicts"),
    ("revisions", "revs"),
];

/// Everything under `target/optimize` that only exists to be reused: kept verdicts,
/// trainings and eval coverage, merged profiles, and the per-settings cargo target dirs.
fn items(optimize_dir: &Path) -> Vec<Item> {
    let mut out = Vec::new();
    let cache = optimize_dir.join("cache");
    let mut add = |kind, path: PathBuf| {
        let (bytes, used) = tree_size_and_mtime(&path);
        out.push(Item {
            kind,
            path,
            bytes,
            used,
        });
    };
    for &(kind, dir) in KINDS {
        // Not `cache.join("")`: a trailing `/` would follow a linked `cache` folder.
        let folder = match dir {
            "" => cache.clone(),
            _ => cache.join(dir),
        };
        for path in entries(optimize_dir, &folder) {
            let profile = path.extension().is_some_and(|x| x == "profdata") || path == cache;
            if !dir.is_empty() || profile {
                add(kind, path);
            }
        }
    }
    // The files' digests runs read (`store::digests`): the next run reads them again.
    for path in entries(optimize_dir, &cache) {
        if path.file_name().is_some_and(|n| n == "digests.json") {
            add("digests", path);
        }
    }
    // The pipeline's target dirs, and `check`'s for revision builds.
    for dir in [optimize_dir.join("build"), optimize_dir.join("check/build")] {
        for path in entries(optimize_dir, &dir) {
            add("builds", path);
        }
    }
    // Run folders (the ladder's and `check`'s), but the one `latest` names: `report`,
    // `apply` and `hotspots` read it.
    for (runs, latest) in [("runs", "latest"), ("check/runs", "check/latest")] {
        let newest = std::fs::read_link(optimize_dir.join(latest)).ok();
        let newest = newest.and_then(|l| l.file_name().map(|n| n.to_os_string()));
        for path in entries(optimize_dir, &optimize_dir.join(runs)) {
            if path.file_name().map(|n| n.to_os_string()) != newest {
                add("runs", path);
            }
        }
    }
    out
}

/// The entries of the folder `dir`; a symlink on the way there (below `target/optimize`)
/// is one entry itself, never followed: clearing the cache removes the link, not what it
/// points to.
fn entries(optimize_dir: &Path, dir: &Path) -> Vec<PathBuf> {
    let linked = dir
        .ancestors()
        .take_while(|a| *a != optimize_dir)
        .find(|a| std::fs::symlink_metadata(a).is_ok_and(|m| m.file_type().is_symlink()));
    match linked {
        Some(link) if link == dir => vec![link.to_path_buf()],
        Some(_) => Vec::new(), // the link above it is an entry of its own folder
        None => std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .collect(),
    }
}

fn tree_size_and_mtime(path: &Path) -> (u64, std::time::SystemTime) {
    let meta = std::fs::symlink_metadata(path);
    let mtime = meta
        .as_ref()
        .ok()
        .and_then(|m| m.modified().ok())
        .unwrap_or(std::time::UNIX_EPOCH);
    match meta {
        Ok(m) if m.is_dir() => {
            let mut total = 0;
            let mut newest = mtime;
            for e in std::fs::read_dir(path).into_iter().flatten().flatten() {
                let (b, t) = tree_size_and_mtime(&e.path());
                total += b;
                newest = newest.max(t);
            }
            (total, newest)
        }
        Ok(m) => (m.len(), mtime),
        Err(_) => (0, mtime),
    }
}

/// How much is kept, per kind.
pub(crate) fn usage(optimize_dir: &Path) -> Vec<DiskUsage> {
    let mut out: Vec<DiskUsage> = Vec::new();
    let kinds = KINDS.iter().map(|(k, _)| *k).chain(["digests", "runs"]);
    for kind in kinds {
        if !out.iter().any(|u| u.kind == kind) {
            let (entries, bytes) = (0, 0);
            out.push(DiskUsage {
                kind,
                entries,
                bytes,
            });
        }
    }
    for it in items(optimize_dir) {
        if let Some(u) = out.iter_mut().find(|u| u.kind == it.kind) {
            u.entries += 1;
            u.bytes += it.bytes;
        }
    }
    out
}

/// Remove the least recently used entries until what is kept fits in `max_bytes`;
/// returns how many were removed and how many bytes that freed.
pub(crate) fn gc(optimize_dir: &Path, max_bytes: u64) -> std::io::Result<(u64, u64)> {
    let mut all = items(optimize_dir);
    let mut total: u64 = all.iter().map(|i| i.bytes).sum();
    all.sort_by_key(|i| i.used);
    let (mut removed, mut freed) = (0, 0);
    for it in all {
        if total <= max_bytes {
            break;
        }
        // symlink_metadata: a link is removed as a link, whatever it points to.
        if std::fs::symlink_metadata(&it.path).is_ok_and(|m| m.is_dir()) {
            std::fs::remove_dir_all(&it.path)?;
        } else {
            std::fs::remove_file(&it.path)?;
        }
        total -= it.bytes;
        removed += 1;
        freed += it.bytes;
    }
    Ok((removed, freed))
}

/// What identifies this machine for timing: CPU model, logical CPUs, kernel release.
pub(crate) fn machine_fingerprint(cpu_model: Option<&str>) -> String {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let kernel = crate::sys::kernel_release();
    format!("{}|{cpus}|{}", cpu_model.unwrap_or("?"), kernel.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A workload without a key is warned about once a run, with the fix, not once per
    /// comparison.
    #[test]
    fn a_workload_without_a_key_is_warned_about_once() {
        let dir = tempfile::tempdir().unwrap();
        let cache = VerdictCache::new(dir.path(), false, "m".into());
        let why = std::io::Error::other("/corpus holds more than 10000 entries");
        let first = cache.unkept_warning("todo", &why).expect("the first time");
        assert!(first.contains("workload `todo`") && first.contains("10000 entries"));
        assert!(first.contains("fix: point it at fewer files"), "{first}");
        assert_eq!(cache.unkept_warning("todo", &why), None);
        assert!(cache.unkept_warning("word", &why).is_some());
    }
    use std::time::Duration;

    fn workload(cwd: &Path, input: &str) -> Workload {
        Workload {
            args: vec![input.into()],
            train: false,
            ..Workload::for_tests(cwd)
        }
    }

    /// Set `path`'s modification time to `at` (restoring what an edit changed).
    fn set_mtime(path: &Path, at: std::time::SystemTime) {
        let f = std::fs::File::options().write(true).open(path).unwrap();
        f.set_modified(at).unwrap();
    }

    #[test]
    fn a_file_named_as_the_value_of_a_flag_is_in_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in.json");
        std::fs::write(&input, "[1]").unwrap();
        let bin = dir.path().join("bin");
        std::fs::write(&bin, "ELF").unwrap();
        let key = |w: &Workload| run_key(&bin, &[w]).unwrap();
        for arg in ["--input=in.json", "if=in.json"] {
            let w = workload(dir.path(), arg);
            let one = key(&w);
            std::fs::write(&input, "[1, 2]").unwrap();
            assert_ne!(key(&w), one, "{arg}: the file behind it changed");
            std::fs::write(&input, "[1]").unwrap();
        }
        // Not seen: a flag joined to its path without `=`.
        let joined = workload(dir.path(), "-iin.json");
        let same = key(&joined);
        std::fs::write(&input, "[4, 5]").unwrap();
        assert_eq!(key(&joined), same);
    }

    #[test]
    fn a_folder_is_in_the_key_by_content_not_by_size_and_time() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir_all(data.join("sub")).unwrap();
        let file = data.join("sub/a.txt");
        std::fs::write(&file, "aaaa").unwrap();
        std::fs::write(data.join("b.txt"), "b").unwrap();
        let old = std::time::SystemTime::now() - Duration::from_secs(3600);
        set_mtime(&file, old);
        let bin = dir.path().join("bin");
        std::fs::write(&bin, "ELF").unwrap();
        for arg in ["data", "--dir=data"] {
            let w = workload(dir.path(), arg);
            let key = || run_key(&bin, &[&w]).unwrap();
            let one = key();
            assert_eq!(key(), one);
            // Same size, modification time restored: only the content differs.
            std::fs::write(&file, "bbbb").unwrap();
            set_mtime(&file, old);
            let later_run = || {
                crate::store::forget_digests();
                forget_folders();
            };
            later_run();
            let two = key();
            assert_ne!(two, one, "{arg}: a changed file inside the folder");
            std::fs::write(data.join("c.txt"), "").unwrap();
            later_run();
            assert_ne!(key(), two, "{arg}: a new file inside the folder");
            std::fs::remove_file(data.join("c.txt")).unwrap();
            std::fs::write(&file, "aaaa").unwrap();
            set_mtime(&file, old);
            later_run();
            assert_eq!(key(), one, "{arg}: the same content again");
        }
    }

    /// A folder's digest is remembered while no workload has run since it was taken: a
    /// change is seen once one has, and none is remembered while one runs.
    #[test]
    fn a_folder_is_walked_again_once_a_workload_has_run() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        std::fs::write(data.join("a.txt"), "a").unwrap();
        let at = |runs: Option<u64>| folder_digest_given(&data, &move || runs).unwrap();
        let first = at(Some(5));
        std::fs::write(data.join("b.txt"), "b").unwrap();
        assert_eq!(at(Some(5)), first, "no workload ran since: remembered");
        let second = at(Some(6));
        assert_ne!(second, first, "a workload ran since: walked again");
        std::fs::write(data.join("c.txt"), "c").unwrap();
        let third = at(None);
        assert_ne!(third, second, "one is running: walked");
        std::fs::remove_file(data.join("c.txt")).unwrap();
        assert_ne!(at(Some(6)), third, "and not remembered then");
        assert_eq!(at(Some(6)), second);
    }

    #[test]
    fn a_folder_past_the_bound_gives_no_key() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir_all(data.join("sub")).unwrap();
        for i in 0..4 {
            std::fs::write(data.join("sub").join(i.to_string()), "ab").unwrap();
        }
        let digest = |bounds| dir_digest(&mut Sha256::new(), &data, bounds);
        // Five entries (the folder `sub` and its four files) and 8 bytes: within 5 and 8.
        assert!(digest((5, 8)).is_ok());
        for (bounds, what) in [((4, 8), "4 entries"), ((5, 7), "7 B")] {
            let e = digest(bounds).unwrap_err().to_string();
            assert!(e.contains("too much to hash") && e.contains(what), "{e}");
        }
        // Within the real bounds the same folder keys a workload.
        assert!(run_key(&data.join("sub/0"), &[&workload(dir.path(), "data")]).is_ok());
    }

    #[test]
    fn old_run_folders_are_counted_and_trimmed_but_never_the_latest() {
        let dir = tempfile::tempdir().unwrap();
        let opt = dir.path().join("optimize");
        for run in ["runs/1", "runs/2", "check/runs/a"] {
            std::fs::create_dir_all(opt.join(run)).unwrap();
            std::fs::write(opt.join(run).join("report.json"), "{}").unwrap();
        }
        crate::sys::symlink("runs/2", opt.join("latest")).unwrap();
        let runs = usage(&opt).into_iter().find(|u| u.kind == "runs").unwrap();
        assert_eq!((runs.entries, runs.bytes), (2, 4));
        gc(&opt, 0).unwrap();
        assert!(!opt.join("runs/1").exists() && !opt.join("check/runs/a").exists());
        assert!(
            opt.join("runs/2/report.json").exists(),
            "the latest run was removed"
        );
    }

    #[test]
    fn clearing_removes_a_linked_folder_as_a_link_and_never_what_it_points_to() {
        let dir = tempfile::tempdir().unwrap();
        let opt = dir.path().join("optimize");
        let away = dir.path().join("away");
        std::fs::create_dir_all(&away).unwrap();
        std::fs::write(away.join("canary"), "c").unwrap();
        std::fs::create_dir_all(opt.join("cache/verdicts")).unwrap();
        std::fs::write(opt.join("cache/verdicts/k.json"), "{}").unwrap();
        crate::sys::symlink(&away, opt.join("cache/builds")).unwrap();
        crate::sys::symlink(&away, opt.join("build")).unwrap();
        let entry = opt.join("cache/blobs/linked");
        std::fs::create_dir_all(entry.parent().unwrap()).unwrap();
        crate::sys::symlink(&away, &entry).unwrap();
        gc(&opt, 0).unwrap();
        assert_eq!(std::fs::read_to_string(away.join("canary")).unwrap(), "c");
        for gone in [
            "cache/builds",
            "build",
            "cache/blobs/linked",
            "cache/verdicts/k.json",
        ] {
            assert!(
                std::fs::symlink_metadata(opt.join(gone)).is_err(),
                "{gone} is left"
            );
        }
        // A linked `cache` folder: removed as one link too.
        crate::sys::symlink(&away, opt.join("cache2")).unwrap();
        std::fs::remove_dir_all(opt.join("cache")).unwrap();
        std::fs::rename(opt.join("cache2"), opt.join("cache")).unwrap();
        gc(&opt, 0).unwrap();
        assert_eq!(std::fs::read_to_string(away.join("canary")).unwrap(), "c");
        assert!(std::fs::symlink_metadata(opt.join("cache")).is_err());
    }

    #[test]
    fn gc_removes_the_least_recently_used_first() {
        let dir = tempfile::tempdir().unwrap();
        let opt = dir.path();
        let old = std::time::SystemTime::now() - Duration::from_secs(3600);
        std::fs::create_dir_all(opt.join("cache/verdicts")).unwrap();
        std::fs::create_dir_all(opt.join("build/aaaa")).unwrap();
        std::fs::write(opt.join("build/aaaa/bin"), vec![0u8; 1000]).unwrap();
        for (name, age) in [
            ("old.json", old),
            ("new.json", std::time::SystemTime::now()),
        ] {
            let p = opt.join("cache/verdicts").join(name);
            std::fs::write(&p, vec![0u8; 100]).unwrap();
            std::fs::File::options()
                .write(true)
                .open(&p)
                .unwrap()
                .set_modified(age)
                .unwrap();
        }
        let f = std::fs::File::options()
            .write(true)
            .open(opt.join("build/aaaa/bin"))
            .unwrap();
        f.set_modified(std::time::SystemTime::now()).unwrap();
        let u = usage(opt);
        let of = |k: &str| {
            u.iter()
                .find(|x| x.kind == k)
                .map(|x| (x.entries, x.bytes))
                .unwrap()
        };
        assert_eq!(of("verdicts"), (2, 200));
        assert_eq!(of("builds").0, 1);
        let (removed, freed) = gc(opt, 1150).unwrap();
        assert_eq!((removed, freed), (1, 100));
        assert!(!opt.join("cache/verdicts/old.json").exists());
        assert!(opt.join("cache/verdicts/new.json").exists());
        assert_eq!(gc(opt, 0).unwrap().0, 2);
        assert!(usage(opt).iter().all(|u| u.entries == 0));
    }

    #[test]
    fn a_verdict_is_found_again_only_for_the_same_inputs_and_never_when_corrupt() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for (f, bytes) in [("a", "A"), ("b", "B"), ("in.json", "[1]")] {
            std::fs::write(d.join(f), bytes).unwrap();
        }
        let cache = VerdictCache::new(d, false, machine_fingerprint(Some("cpu")));
        let w = workload(d, "in.json");
        let opts = BenchOptions::default();
        let key = cache
            .key((&d.join("a"), &d.join("b")), None, &w, &opts)
            .unwrap();
        // The seed is drawn per run: it is not part of the key.
        let reseeded = BenchOptions {
            seed: 1,
            ..opts.clone()
        };
        assert_eq!(
            cache
                .key((&d.join("a"), &d.join("b")), None, &w, &reseeded)
                .unwrap(),
            key
        );
        // A library preloaded into b is part of the key, by its bytes.
        let lib = d.join("in.json");
        let preloaded = cache.key((&d.join("a"), &d.join("b")), Some(&lib), &w, &opts);
        assert_ne!(preloaded.unwrap(), key);
        assert!(cache.get(&key).unwrap().is_none());
        let c = crate::bench::kept::agreeing(
            crate::bench::export::fixture::report().workloads[0]
                .comparison
                .clone(),
        );
        cache.put(&key, &c);
        assert_eq!(cache.get(&key).unwrap().map(|c| c.n), Some(c.n));
        assert_eq!(cache.counts(), (1, 1));
        // Another input file, another binary, other options: other keys.
        std::fs::write(d.join("in.json"), "[2]").unwrap();
        assert_ne!(
            cache
                .key((&d.join("a"), &d.join("b")), None, &w, &opts)
                .unwrap(),
            key
        );
        std::fs::write(d.join("in.json"), "[1]").unwrap();
        assert_ne!(
            cache
                .key((&d.join("b"), &d.join("a")), None, &w, &opts)
                .unwrap(),
            key
        );
        let wider = BenchOptions {
            margin: 0.02,
            ..opts.clone()
        };
        assert_ne!(
            cache
                .key((&d.join("a"), &d.join("b")), None, &w, &wider)
                .unwrap(),
            key
        );
        // A truncated entry is removed, not used; --fresh looks nothing up.
        let path = cache.store.path(&key);
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
        assert!(cache.get(&key).unwrap().is_none());
        assert!(!path.exists());
        cache.put(&key, &c);
        let fresh = VerdictCache::new(d, true, machine_fingerprint(Some("cpu")));
        assert!(fresh.get(&key).unwrap().is_none());
        // An entry filed under another key is not trusted either.
        std::fs::copy(&path, cache.store.path("0000")).unwrap();
        assert!(cache.get("0000").unwrap().is_none());
        // Issue 61: an entry whose estimate was edited (0.500 faster, its samples and log
        // estimate saying otherwise) is removed and not used: the caller measures again.
        let mut tampered: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let value = &mut tampered["value"];
        for (field, v) in [("ratio", 0.5), ("ci_low", 0.45), ("ci_high", 0.55)] {
            value[field] = serde_json::json!(v);
        }
        value["verdict"] = serde_json::json!("faster");
        std::fs::write(&path, serde_json::to_vec(&tampered).unwrap()).unwrap();
        let why = cache.get(&key).expect_err("a tampered verdict is not used");
        assert!(why.contains("time ratio 0.500"), "{why}");
        assert!(!path.exists());
        assert!(cache.get(&key).unwrap().is_none());
    }
}
