//! A fresh copy of a workload's working directory, for workloads that declare output
//! `files`: each run writes into its own copy, so a file left over from an earlier run (or
//! from the other binary) can never make two runs look alike, and the user's tree is not
//! written to by verification.
//!
//! Filesystem only: runs nothing. Skips what must not be copied: cargo target dirs (they
//! hold `CACHEDIR.TAG`), `.git`, the given excluded folders, and any folder that contains
//! the copy itself (the run folder usually lives inside the project).
//!
//! The copy never writes through a link to the user's tree: a symlink that leads into the
//! copied folder (absolute, or relative through `..`) is pointed at the same place in the
//! copy. One that leads out of it is *copied*: what it leads to (a file, or a folder,
//! copied with the same rules) is put in the copy in its place while all such copies
//! together stay under [`SNAPSHOT_BYTES`] and [`SNAPSHOT_FILES`], so a run reads the same
//! bytes and what it writes through the link lands in the copy, where [`Sandbox::changes`]
//! sees it. A link out to something larger (or to a folder holding the cwd, a cargo target
//! dir, a special file) is kept leading to its target, made absolute so it still leads
//! there from the copy, and named in [`Sandbox::outside`]: the caller warns that writes
//! through it are not seen (no mount or user namespace isolates a run: that is the
//! fallback). A link out to nothing leads to a name beside the copy, so a write through it
//! is seen as one to the link. A declared output path through a link out of the cwd is
//! refused before anything runs ([`escapes`]). The copy sits in a folder of its own, so
//! what a run writes beside its cwd (`../x`) is seen too.
//!
//! Nothing of the user's is opened but a regular file, and nothing in the copy is written
//! through a link (`util::nofollow`): a file is opened without waiting and checked on its
//! descriptor to be a regular file, its copy created new; a named pipe is made anew in the
//! copy, never opened (an open waits for a writer); a socket or device is left out, never
//! opened, and named ([`Sandbox::left_out`], a warning). A copy that fails (a full disk, a
//! file that cannot be read) is an error naming the file, its copy and what failed, and
//! nothing of the copy is left (the folder goes with the `Sandbox`).
//!
//! Every entry made in the copy is recorded (its kind, what a link says, its permission
//! bits): [`Sandbox::changes`] compares the copy after a run with that record, so a file
//! written or deleted, a new folder (even empty), link or special file, a link repointed
//! and a `chmod` are all seen (file contents are compared with their originals).
//!
//! `{root}` expands to an absolute path, so a workload in a copy would still write
//! `{root}/results.log` into the user's tree: [`Sandbox::moved`] rewrites every argument and
//! environment value naming a path in the folder copied into the copy, and
//! [`copied_folder`] copies the spec's folder instead of the cwd when one names it outside
//! a cwd inside it. A path named any other way (outside the spec's folder, built at run
//! time) is not moved: without a mount or user namespace, which this does not use, a run
//! can reach any path it names.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

use crate::sys::Special;
use crate::util::{io_error, nofollow};

/// A copy of a working directory, in a folder of its own; both removed when dropped.
#[derive(Debug)]
pub(crate) struct Sandbox {
    /// The folder holding the copy (and whatever a run writes beside it).
    root: PathBuf,
    /// The folder copied, as given.
    source: PathBuf,
    /// The copy of the working directory, `root/<its name>`.
    cwd: PathBuf,
    /// What was copied, for the record.
    pub bytes: u64,
    pub files: u64,
    /// Every entry the copy held when it was made, relative to `cwd`: what a run changed
    /// is what differs from it ([`Sandbox::changes`]).
    made: BTreeMap<PathBuf, Made>,
    /// Folders copied (canonical) and where their copies are: the cwd, and each folder a
    /// link out of it led to and that was copied. A link into one leads into its copy.
    mapped: Vec<(PathBuf, PathBuf)>,
    /// What is left of [`SNAPSHOT_BYTES`] and [`SNAPSHOT_FILES`].
    budget: (u64, u64),
    /// Links out of the cwd to what was too large to copy (or is a folder holding the cwd,
    /// a cargo target dir, a special file): kept leading to their target (absolute), so a
    /// run writes through them into it. Relative to the cwd, with where each leads.
    pub outside: Vec<(PathBuf, PathBuf)>,
    /// Links out of the cwd to nothing, pointed at a name beside the copy (`..`-level name,
    /// the link relative to the cwd): what a run writes through one is seen there.
    dangling: Vec<(std::ffi::OsString, PathBuf)>,
    /// Sockets and devices in the cwd, left out of the copy (never opened), relative to it.
    pub left_out: Vec<(PathBuf, Special)>,
    /// Removes `root` if a signal ends the run while the copy exists.
    _on_interrupt: crate::sys::interrupt::PathGuard,
}

/// One entry of the copy as it was made: its kind (a link with what it says) and its
/// permission bits (none for a link).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Made {
    kind: EntryKind,
    mode: u32,
    /// A file's modification time (a workload setting it back is a change too).
    mtime: Option<std::time::SystemTime>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum EntryKind {
    File,
    Dir,
    Link(PathBuf),
    Other,
}

impl EntryKind {
    fn of(path: &Path) -> Option<(EntryKind, u32)> {
        let meta = std::fs::symlink_metadata(path).ok()?;
        let t = meta.file_type();
        let mode = crate::sys::mode(&meta) & 0o7777;
        Some(if t.is_symlink() {
            (EntryKind::Link(std::fs::read_link(path).ok()?), 0)
        } else if t.is_dir() {
            (EntryKind::Dir, mode)
        } else if t.is_file() {
            (EntryKind::File, mode)
        } else {
            (EntryKind::Other, mode)
        })
    }

    fn name(&self) -> &'static str {
        match self {
            EntryKind::File => "file",
            EntryKind::Dir => "folder",
            EntryKind::Link(_) => "symlink",
            EntryKind::Other => "special file",
        }
    }
}

/// What a run changed in its copy, against the copy as it was made.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Change {
    /// A file written: new, or with other content (`../name`: beside the cwd).
    Written(PathBuf),
    /// An entry that is gone.
    Deleted(PathBuf),
    /// A new folder (an empty one: one with files in it is named by them), symlink or
    /// special file; or an entry now of another kind than it was (`was`).
    Made {
        path: PathBuf,
        kind: &'static str,
        was: Option<&'static str>,
    },
    /// A symlink that now says something else.
    Relinked(PathBuf, PathBuf),
    /// Permission bits changed (from, to).
    Mode(PathBuf, u32, u32),
    /// A file's modification time changed, its bytes the same (`touch -d`: what build
    /// tools judge freshness by).
    Touched(PathBuf),
}

impl Change {
    /// Whether this is a file written, the one change a workload may declare (`files`).
    pub(crate) fn is_written(&self) -> bool {
        matches!(self, Change::Written(_))
    }

    pub(crate) fn path(&self) -> &Path {
        match self {
            Change::Written(p) | Change::Deleted(p) | Change::Relinked(p, _) => p,
            Change::Made { path, .. } | Change::Mode(path, ..) | Change::Touched(path) => path,
        }
    }
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let p = self.path().display();
        match self {
            Change::Written(_) => write!(f, "{p}"),
            Change::Deleted(_) => write!(f, "{p} deleted"),
            Change::Made {
                kind, was: None, ..
            } => write!(f, "{p}: a new {kind}"),
            Change::Made {
                kind,
                was: Some(was),
                ..
            } => write!(f, "{p}: a {kind}, was a {was}"),
            Change::Relinked(_, to) => write!(f, "{p}: a symlink now to {}", to.display()),
            Change::Mode(_, a, b) => write!(f, "{p}: mode {a:o} -> {b:o}"),
            Change::Touched(_) => write!(f, "{p}: modification time changed"),
        }
    }
}

/// At most this much of what links out of the cwd lead to is copied into a sandbox, in
/// all; past it (or [`SNAPSHOT_FILES`]) a link is kept leading to its target.
pub(crate) const SNAPSHOT_BYTES: u64 = 4 << 20;
pub(crate) const SNAPSHOT_FILES: u64 = 1000;

/// Where a copy is made from, for repointing links.
struct Roots {
    /// The source folder, canonical.
    source: PathBuf,
    /// The folder the copy is in, canonical (never copied into itself).
    dest_canon: PathBuf,
    exclude: Vec<PathBuf>,
}

impl Sandbox {
    /// Copy `source` (a directory) into `dest/<source's name>` (`dest` is removed first if
    /// it exists), skipping `exclude` and the folders described in the module doc.
    pub(crate) fn create(
        source: &Path,
        dest: &Path,
        exclude: &[PathBuf],
    ) -> std::io::Result<Sandbox> {
        if dest.exists() {
            std::fs::remove_dir_all(dest)?;
        }
        let name = source.file_name().unwrap_or(std::ffi::OsStr::new("cwd"));
        let cwd = dest.join(name);
        let on_interrupt = crate::sys::interrupt::remove_on_interrupt(dest.to_path_buf());
        std::fs::create_dir_all(&cwd).map_err(|e| io_error(e, "cannot create", &cwd))?;
        let canon = source
            .canonicalize()
            .map_err(|e| io_error(e, "cannot read", source))?;
        let mut sb = Sandbox {
            root: dest.to_path_buf(),
            source: source.to_path_buf(),
            cwd: cwd.clone(),
            bytes: 0,
            files: 0,
            made: BTreeMap::new(),
            mapped: vec![(canon.clone(), cwd)],
            budget: (SNAPSHOT_BYTES, SNAPSHOT_FILES),
            outside: Vec::new(),
            dangling: Vec::new(),
            left_out: Vec::new(),
            _on_interrupt: on_interrupt,
        };
        let roots = Roots {
            source: canon,
            dest_canon: dest.canonicalize()?,
            exclude: exclude
                .iter()
                .filter_map(|p| p.canonicalize().ok())
                .collect(),
        };
        copy_tree(source, Path::new(""), &roots, &mut sb)?;
        sb.outside.sort();
        Ok(sb)
    }

    /// What a run changed in the copy against the copy as it was made (the source's tree
    /// less what is never copied): files new or with other content, entries deleted, new
    /// folders, symlinks and special files, entries of another kind, links that say
    /// something else, permission bits — and what it wrote beside the cwd, as `../name`;
    /// at most `limit`, sorted. File contents are compared with their originals in
    /// `source`.
    pub(crate) fn changes(&self, limit: usize) -> Vec<Change> {
        let source = &self.source;
        let mut out: Vec<Change> = std::fs::read_dir(&self.root)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.path() != self.cwd)
            .map(|e| {
                // A write through a link out of the cwd to nothing is named by the link.
                let link = self.dangling.iter().find(|(n, _)| *n == e.file_name());
                Change::Written(match link {
                    Some((_, rel)) => rel.clone(),
                    None => Path::new("..").join(e.file_name()),
                })
            })
            .take(limit)
            .collect();
        let mut seen = BTreeSet::new();
        self.walk(source, Path::new(""), &mut seen, &mut out, limit);
        if out.len() < limit {
            // Gone: what was made and not seen, named at its top (a folder, not its files).
            for rel in self.made.keys().filter(|r| !seen.contains(*r)) {
                let parent_gone = rel
                    .parent()
                    .is_some_and(|p| !p.as_os_str().is_empty() && !seen.contains(p));
                if !parent_gone && out.len() < limit {
                    out.push(Change::Deleted(rel.clone()));
                }
            }
        }
        out.sort();
        out
    }

    /// [`Sandbox::changes`] under `rel`; whether it found any.
    fn walk(
        &self,
        source: &Path,
        rel: &Path,
        seen: &mut BTreeSet<PathBuf>,
        out: &mut Vec<Change>,
        limit: usize,
    ) -> bool {
        let Ok(entries) = std::fs::read_dir(self.cwd.join(rel)) else {
            return false;
        };
        let before = out.len();
        let mut names: Vec<_> = entries.flatten().map(|e| e.file_name()).collect();
        names.sort();
        for name in names {
            if out.len() >= limit {
                break;
            }
            let rel = rel.join(name);
            let Some((kind, mode)) = EntryKind::of(&self.cwd.join(&rel)) else {
                continue;
            };
            seen.insert(rel.clone());
            let made = self.made.get(&rel);
            if kind == EntryKind::Dir {
                let inside = self.walk(source, &rel, seen, out, limit);
                if made.is_none() && !inside {
                    out.push(Change::Made {
                        path: rel.clone(),
                        kind: kind.name(),
                        was: None,
                    });
                }
            }
            if let Some(c) = self.changed(source, &rel, made, &kind, mode) {
                out.push(c);
            }
        }
        out.len() > before
    }

    /// What differs at `rel`, now `kind` with `mode`, from what was `made` there (a new
    /// folder is named by [`Sandbox::walk`]).
    fn changed(
        &self,
        source: &Path,
        rel: &Path,
        made: Option<&Made>,
        kind: &EntryKind,
        mode: u32,
    ) -> Option<Change> {
        let path = rel.to_path_buf();
        let Some(made) = made else {
            return match kind {
                EntryKind::File => Some(Change::Written(path)),
                EntryKind::Dir => None,
                _ => Some(Change::Made {
                    path,
                    kind: kind.name(),
                    was: None,
                }),
            };
        };
        match (&made.kind, kind) {
            (EntryKind::Link(a), EntryKind::Link(b)) if a != b => {
                Some(Change::Relinked(path, b.clone()))
            }
            (EntryKind::Link(_), EntryKind::Link(_)) => None,
            (EntryKind::File, EntryKind::File)
                if !same_content(&self.cwd.join(rel), &source.join(rel)) =>
            {
                Some(Change::Written(path))
            }
            (a, b) if a != b => Some(Change::Made {
                path,
                kind: b.name(),
                was: Some(a.name()),
            }),
            _ if made.mode != mode => Some(Change::Mode(path, made.mode, mode)),
            _ if made.mtime != file_mtime(&self.cwd.join(rel), kind) => Some(Change::Touched(path)),
            _ => None,
        }
    }

    /// The warning for workload `name` when a link out of its cwd was kept leading out
    /// ([`Sandbox::outside`]): writes through it are not seen.
    pub(crate) fn outside_warning(&self, name: &str) -> Option<String> {
        let (link, to) = self.outside.first()?;
        Some(format!(
            "workload `{name}`: {} in its cwd is a symlink to {}, outside it and too large to copy into its private copy (over {} MiB or {} files, a folder holding the cwd, a cargo target dir, or not a regular file or folder): a run that writes through it writes there, and the check that a workload writes nothing into its cwd does not see it\n  fix: if the workload writes through the link, point `cwd` at a folder without links out of it",
            link.display(),
            to.display(),
            SNAPSHOT_BYTES >> 20,
            SNAPSHOT_FILES
        ))
    }

    /// The warning for workload `name` when its cwd holds a socket or device
    /// ([`Sandbox::left_out`]): its private copy has none there.
    pub(crate) fn left_out_warning(&self, name: &str) -> Option<String> {
        let (path, kind) = self.left_out.first()?;
        Some(format!(
            "workload `{name}`: {} in its cwd is a {}, left out of its private copy (a copy never opens one){}\n  fix: if the workload uses it, point `cwd` at a folder without it and name it by an absolute path",
            path.display(),
            kind.name(),
            match self.left_out.len() {
                1 => String::new(),
                n => format!(", with {} more", n - 1),
            }
        ))
    }

    /// The copy of the working directory.
    pub(crate) fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// Where a declared output file of a workload whose cwd is `cwd` lands in this copy:
    /// paths inside the folder copied map into the copy (relative ones from `cwd`); other
    /// absolute paths are left as they are.
    pub(crate) fn locate(&self, cwd: &Path, declared: &Path) -> PathBuf {
        let path = cwd.join(declared);
        match path.strip_prefix(&self.source) {
            Ok(rel) => self.cwd.join(rel),
            Err(_) => path,
        }
    }

    /// `w` as it runs in this copy: its cwd, and every argument and environment value
    /// that names a path in the folder copied by its absolute path (what `{root}/…`
    /// expands to), moved into the copy — so a run that writes `{root}/x` writes there.
    pub(crate) fn moved(&self, w: &crate::spec::Workload) -> crate::spec::Workload {
        let from = self.source.to_string_lossy();
        let to = self.cwd().to_string_lossy();
        let mut copy = w.clone();
        copy.cwd = self.locate(&w.cwd, Path::new(""));
        for a in copy.args.iter_mut().chain(copy.env.values_mut()) {
            *a = replace_path(a, &from, &to);
        }
        copy
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// The largest cwd a `files` workload's private copy is made of (every run makes one).
const MAX_FILES_COPY_BYTES: u64 = 1 << 30;
const MAX_FILES_COPY_FILES: u64 = 100_000;

/// A private copy of `w`'s cwd in `dest` when it declares output `files` (`None`: it
/// declares none and runs in place): the one rule of every command that runs such a
/// workload — the ladder (`Context::sandboxed`), `bench`, `hotspots --flamegraph`. A
/// declared path through a symlink out of the cwd is refused (naming `spec`, where it is
/// declared); the declared outputs are removed from the copy, so one left in the tree by
/// an earlier run never stands in for one this run did not write.
pub(crate) fn for_files(
    w: &crate::spec::Workload,
    spec: &Path,
    dest: &Path,
    exclude: &[PathBuf],
) -> std::io::Result<Option<(crate::spec::Workload, Sandbox)>> {
    if w.files.is_empty() {
        return Ok(None);
    }
    for f in &w.files {
        if let Some((link, to)) = escapes(&w.cwd, f) {
            return Err(std::io::Error::other(format!(
                "{}:{}: workload `{}` declares the output file {}, but {} is a symlink to {}, outside its cwd: a run would write your file there\n  fix: declare a path inside the cwd that no link leads out of, or point `cwd` at the folder the link leads to",
                spec.display(),
                w.line,
                w.name,
                f.display(),
                link.display(),
                to.display()
            )));
        }
    }
    let root = crate::spec::spec_root(spec);
    let source = copied_folder(w, &root);
    // Every run of such a workload copies its cwd: one as large as `/` would copy the
    // whole filesystem, run after run.
    if larger_than(&source, exclude, MAX_FILES_COPY_BYTES, MAX_FILES_COPY_FILES) {
        return Err(std::io::Error::other(format!(
            "{}:{}: workload `{}` declares output `files`, so every run works in a private copy of {}, which holds more than {} or {} files (cargo target dirs and .git left out)\n  fix: point `cwd` at a folder holding only what the workload reads and writes",
            spec.display(),
            w.line,
            w.name,
            source.display(),
            crate::util::human_bytes(MAX_FILES_COPY_BYTES),
            MAX_FILES_COPY_FILES
        )));
    }
    let sb = Sandbox::create(&source, dest, exclude)?;
    for f in &w.files {
        let p = sb.locate(&w.cwd, f);
        if std::fs::symlink_metadata(&p).is_ok_and(|m| !m.is_dir()) {
            std::fs::remove_file(&p)?;
        }
    }
    Ok(Some((sb.moved(w), sb)))
}

/// The folder a private copy of `w` is made of: its cwd; or `root`, the spec's folder
/// (what `{root}` expands to), when the cwd is inside it and an argument or environment
/// value names a path in `root` outside the cwd (`args = ["{root}/results.log"]` with
/// `cwd = "work"`), so that a run writing there writes into the copy, and is seen.
pub(crate) fn copied_folder(w: &crate::spec::Workload, root: &Path) -> PathBuf {
    let root_str = root.to_string_lossy();
    let outside_cwd = w.args.iter().chain(w.env.values()).any(|v| {
        let moved = replace_path(v, &w.cwd.to_string_lossy(), "");
        replace_path(&moved, &root_str, "\0") != moved
    });
    match w.cwd.starts_with(root) && outside_cwd {
        true => root.to_path_buf(),
        false => w.cwd.clone(),
    }
}

/// `value` with each `from` that starts a path (ends the value or is followed by `/`)
/// replaced by `to`.
fn replace_path(value: &str, from: &str, to: &str) -> String {
    if from.is_empty() {
        return value.to_string();
    }
    let mut out = String::new();
    let mut rest = value;
    while let Some(i) = rest.find(from) {
        let after = &rest[i + from.len()..];
        let whole = after.is_empty() || after.starts_with('/') || after.starts_with('\\');
        out.push_str(&rest[..i]);
        out.push_str(if whole { to } else { from });
        rest = after;
    }
    out.push_str(rest);
    out
}

/// Copy `from` into the copy's `rel` (relative to its cwd), recording each entry made: a
/// regular file copied (opened without waiting, checked on its descriptor, its copy created
/// new: `util::nofollow`), a named pipe made anew (never opened), a socket or device left
/// out ([`Sandbox::left_out`]).
fn copy_tree(from: &Path, rel: &Path, roots: &Roots, sb: &mut Sandbox) -> std::io::Result<()> {
    let entries = std::fs::read_dir(from).map_err(|e| io_error(e, "cannot read", from))?;
    for entry in entries {
        let entry = entry.map_err(|e| io_error(e, "cannot read", from))?;
        let path = entry.path();
        let rel = rel.join(entry.file_name());
        let target = sb.cwd.join(&rel);
        let kind = entry.file_type()?;
        if kind.is_symlink() {
            copy_link(&path, &rel, roots, sb)?;
        } else if kind.is_dir() {
            if skip_dir(&path, &roots.dest_canon, &roots.exclude) {
                continue;
            }
            std::fs::create_dir(&target).map_err(|e| io_error(e, "cannot create", &target))?;
            copy_tree(&path, &rel, roots, sb)?;
        } else if kind.is_file() {
            sb.bytes += nofollow::copy_file(&path, &target, false)?;
            sb.files += 1;
        } else if let Some(Special::Fifo) = crate::sys::special_kind(&kind) {
            let meta =
                std::fs::symlink_metadata(&path).map_err(|e| io_error(e, "cannot read", &path))?;
            nofollow::fifo(&path, &target, &meta)?;
        } else {
            let special = crate::sys::special_kind(&kind).unwrap_or(Special::Device);
            sb.left_out.push((rel, special));
            continue;
        }
        if let Some((kind, mode)) = EntryKind::of(&target) {
            let mtime = file_mtime(&target, &kind);
            sb.made.insert(rel, Made { kind, mode, mtime });
        }
    }
    Ok(())
}

/// A file's modification time (`None` for anything else, or when it cannot be read).
fn file_mtime(path: &Path, kind: &EntryKind) -> Option<std::time::SystemTime> {
    (*kind == EntryKind::File)
        .then(|| std::fs::symlink_metadata(path).ok()?.modified().ok())
        .flatten()
}

/// Whether two files hold the same bytes (an unreadable one differs).
fn same_content(a: &Path, b: &Path) -> bool {
    let len = |p: &Path| std::fs::metadata(p).map(|m| m.len()).ok();
    match (len(a), len(b)) {
        (Some(x), Some(y)) if x == y => {}
        _ => return false,
    }
    match (std::fs::read(a), std::fs::read(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// The copy of the symlink `link`, at `rel` in the copy: a link to the same place in a
/// copy when it leads into a folder copied (the cwd; a folder a link led to); else a copy
/// of what it leads to while that fits in the sandbox's budget — so a run that writes
/// through it writes into the sandbox, where [`Sandbox::changes`] sees it; else a link to
/// its target (absolute: a relative one would lead elsewhere from the copy), named in
/// [`Sandbox::outside`]. A link to nothing leads to a name beside the copy.
fn copy_link(link: &Path, rel: &Path, roots: &Roots, sb: &mut Sandbox) -> std::io::Result<()> {
    let target = sb.cwd.join(rel);
    let leads = leads_to(link, &std::fs::read_link(link)?);
    let into = sb.mapped.iter().find_map(|(from, to)| {
        let inside = leads.strip_prefix(from).ok()?;
        Some(to.join(inside))
    });
    if let Some(p) = into {
        return make_link(&p, &target);
    }
    let Ok(meta) = std::fs::metadata(&leads) else {
        let name = std::ffi::OsString::from(format!(".link-{}", sb.dangling.len()));
        sb.dangling.push((name.clone(), rel.to_path_buf()));
        return make_link(&sb.root.join(name), &target);
    };
    let (bytes, files) = sb.budget;
    if meta.is_file() && meta.len() <= bytes && files > 0 {
        sb.budget = (bytes - meta.len(), files - 1);
        sb.bytes += nofollow::copy_file(&leads, &target, true)?;
        sb.files += 1;
        return Ok(());
    }
    let holds_copy = roots.source.starts_with(&leads) || roots.dest_canon.starts_with(&leads);
    if meta.is_dir() && !holds_copy && !skip_dir(&leads, &roots.dest_canon, &roots.exclude) {
        if let Some((b, f)) = count(&leads, &roots.exclude, bytes, files) {
            sb.budget = (bytes - b, files - f);
            std::fs::create_dir(&target).map_err(|e| io_error(e, "cannot create", &target))?;
            sb.mapped.push((leads.clone(), target));
            return copy_tree(&leads, rel, roots, sb);
        }
    }
    sb.outside.push((rel.to_path_buf(), leads.clone()));
    make_link(&leads, &target)
}

/// A symlink at `at` to `to`; an error names it.
fn make_link(to: &Path, at: &Path) -> std::io::Result<()> {
    crate::sys::symlink(to, at).map_err(|e| io_error(e, "cannot make the link", at))
}

/// Where a link at `link` saying `to` leads: canonical where it exists, else lexically
/// (`a/../b` → `b`) from the canonical folder of the link.
fn leads_to(link: &Path, to: &Path) -> PathBuf {
    let dir = link.parent().unwrap_or(Path::new("/"));
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let joined = dir.join(to);
    if let Ok(c) = joined.canonicalize() {
        return c;
    }
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

/// The first symlink on the way to `declared` (an output path, relative to `cwd` or inside
/// it) that leads outside `cwd`, and where it leads: a run in a private copy would write
/// through it into the user's files.
pub(crate) fn escapes(cwd: &Path, declared: &Path) -> Option<(PathBuf, PathBuf)> {
    let source = cwd.canonicalize().ok()?;
    let rel = declared.strip_prefix(cwd).unwrap_or(declared);
    let mut at = cwd.to_path_buf();
    for c in rel.components() {
        at.push(c);
        let meta = std::fs::symlink_metadata(&at).ok()?;
        if meta.file_type().is_symlink() {
            let to = leads_to(&at, &std::fs::read_link(&at).ok()?);
            if !to.starts_with(&source) {
                return Some((at, to));
            }
        }
    }
    None
}

/// Whether copying `source` (with the same skips as [`Sandbox::create`]) would take more
/// than `max_bytes` or `max_files`; stops counting as soon as it would.
pub(crate) fn larger_than(
    source: &Path,
    exclude: &[PathBuf],
    max_bytes: u64,
    max_files: u64,
) -> bool {
    count(source, exclude, max_bytes, max_files).is_none()
}

/// The bytes and files copying `source` takes (with the same skips as
/// [`Sandbox::create`], links not followed), or `None` once past `max_bytes` or
/// `max_files`.
fn count(source: &Path, exclude: &[PathBuf], max_bytes: u64, max_files: u64) -> Option<(u64, u64)> {
    let exclude: Vec<PathBuf> = exclude
        .iter()
        .filter_map(|p| p.canonicalize().ok())
        .collect();
    let (mut bytes, mut files) = (0u64, 0u64);
    let mut stack = vec![source.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            match e.file_type() {
                Ok(t) if t.is_dir() && !skip_dir(&e.path(), Path::new("/"), &exclude) => {
                    stack.push(e.path());
                }
                Ok(t) if t.is_file() => {
                    files += 1;
                    bytes += e.metadata().map_or(0, |m| m.len());
                    if bytes > max_bytes || files > max_files {
                        return None;
                    }
                }
                _ => {}
            }
        }
    }
    Some((bytes, files))
}

fn skip_dir(dir: &Path, dest_canon: &Path, exclude: &[PathBuf]) -> bool {
    // A cargo target dir — the one in use, or an old `target/` when `--target-dir` points
    // elsewhere — holds `CACHEDIR.TAG`, or at least cargo's `.rustc_info.json`.
    let cargo_target = ["CACHEDIR.TAG", ".rustc_info.json"]
        .iter()
        .any(|f| dir.join(f).exists());
    if dir.file_name().is_some_and(|n| n == ".git") || cargo_target {
        return true;
    }
    let Ok(canon) = dir.canonicalize() else {
        return true;
    };
    dest_canon.starts_with(&canon) || exclude.iter().any(|e| canon.starts_with(e))
}

/// A declared output path as a safe relative path under `outputs/<stage>/<w>.files/`:
/// relative to `cwd` when it is inside it, without its root otherwise, `..` spelled `__`.
pub(crate) fn saved_name(cwd: &Path, declared: &Path) -> PathBuf {
    let rel = if declared.is_absolute() {
        declared.strip_prefix(cwd).unwrap_or(declared)
    } else {
        declared
    };
    rel.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(PathBuf::from(n)),
            Component::ParentDir => Some(PathBuf::from("__")),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_the_tree_but_not_targets_git_or_itself() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("proj");
        std::fs::create_dir_all(src.join("data/deep")).unwrap();
        std::fs::write(src.join("data/deep/in.txt"), "input").unwrap();
        std::fs::write(src.join("top.txt"), "top").unwrap();
        std::fs::create_dir_all(src.join("target/debug")).unwrap();
        std::fs::write(src.join("target/CACHEDIR.TAG"), "").unwrap();
        // An old target dir of a cargo that wrote no CACHEDIR.TAG (--target-dir elsewhere).
        std::fs::create_dir_all(src.join("old-target/release")).unwrap();
        std::fs::write(src.join("old-target/.rustc_info.json"), "{}").unwrap();
        std::fs::create_dir_all(src.join(".git")).unwrap();
        std::fs::create_dir_all(src.join("big")).unwrap();
        std::fs::write(src.join("big/blob"), "x").unwrap();
        crate::sys::symlink("top.txt", src.join("link")).unwrap();
        // The copy goes inside the source (as the run folder does), in a non-target dir.
        let dest = src.join("work/runs/1/sandbox/w");
        let sb = Sandbox::create(&src, &dest, &[src.join("big")]).unwrap();
        let copy = sb.cwd().to_path_buf();
        assert_eq!(copy, dest.join("proj"));
        assert_eq!(
            std::fs::read_to_string(copy.join("data/deep/in.txt")).unwrap(),
            "input"
        );
        assert_eq!(std::fs::read_to_string(copy.join("link")).unwrap(), "top");
        assert!(!copy.join("target").exists() && !copy.join("old-target").exists());
        assert!(!copy.join(".git").exists());
        assert!(!copy.join("big").exists());
        assert!(!copy.join("work").exists(), "copied itself");
        assert_eq!((sb.files, sb.bytes), (2, 8));
        assert_eq!(
            sb.locate(&src, Path::new("out/r.txt")),
            copy.join("out/r.txt")
        );
        assert_eq!(
            sb.locate(&src, &src.join("out/r.txt")),
            copy.join("out/r.txt")
        );
        assert_eq!(
            sb.locate(&src, Path::new("/elsewhere/r")),
            Path::new("/elsewhere/r")
        );
        drop(sb);
        assert!(!dest.exists(), "removed on drop");
    }

    fn workload(cwd: &Path) -> crate::spec::Workload {
        crate::spec::Workload {
            line: 7,
            ..crate::spec::Workload::for_tests(cwd)
        }
    }

    fn paths(changes: Vec<Change>) -> Vec<PathBuf> {
        changes.iter().map(|c| c.path().to_path_buf()).collect()
    }

    #[test]
    fn changes_are_new_or_different_files() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("proj");
        std::fs::create_dir_all(src.join("d")).unwrap();
        std::fs::write(src.join("d/keep.txt"), "same").unwrap();
        std::fs::write(src.join("edit.txt"), "before").unwrap();
        let sb = Sandbox::create(&src, &tmp.path().join("copy"), &[]).unwrap();
        assert!(sb.changes(10).is_empty());
        std::fs::write(sb.cwd().join("edit.txt"), "after").unwrap();
        std::fs::write(sb.cwd().join("d/new.txt"), "x").unwrap();
        std::fs::create_dir_all(sb.cwd().join("out/deep")).unwrap();
        std::fs::write(sb.cwd().join("out/deep/r.txt"), "x").unwrap();
        let changes = sb.changes(10);
        assert!(changes.iter().all(Change::is_written), "{changes:?}");
        // A new folder with files in it is named by its files.
        assert_eq!(
            paths(changes),
            [
                Path::new("d/new.txt"),
                Path::new("edit.txt"),
                Path::new("out/deep/r.txt")
            ]
        );
        assert_eq!(sb.changes(1).len(), 1);
        // What a run writes beside its cwd is seen as `../name`.
        std::fs::write(sb.cwd().join("../beside.txt"), "x").unwrap();
        assert!(sb
            .changes(10)
            .contains(&Change::Written(PathBuf::from("../beside.txt"))));
    }

    #[test]
    fn a_modification_time_set_back_is_a_change() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("proj");
        std::fs::create_dir_all(&src).unwrap();
        std::fs::write(src.join("a.rs"), "fn a() {}").unwrap();
        let sb = Sandbox::create(&src, &tmp.path().join("copy"), &[]).unwrap();
        let f = std::fs::File::options()
            .write(true)
            .open(sb.cwd().join("a.rs"))
            .unwrap();
        f.set_modified(std::time::SystemTime::UNIX_EPOCH).unwrap();
        let said: Vec<String> = sb.changes(10).iter().map(|c| c.to_string()).collect();
        assert_eq!(said, ["a.rs: modification time changed"]);
    }

    #[test]
    fn deletions_new_folders_links_and_modes_are_changes() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("proj");
        std::fs::create_dir_all(src.join("gone/deep")).unwrap();
        std::fs::write(src.join("gone/deep/a.txt"), "a").unwrap();
        std::fs::write(src.join("Cargo.toml"), "[package]").unwrap();
        std::fs::write(src.join("del.txt"), "x").unwrap();
        crate::sys::set_mode(src.join("Cargo.toml"), 0o644).unwrap();
        crate::sys::symlink("Cargo.toml", src.join("link")).unwrap();
        let sb = Sandbox::create(&src, &tmp.path().join("copy"), &[]).unwrap();
        assert_eq!(sb.changes(10), []);
        let c = sb.cwd();
        std::fs::remove_file(c.join("del.txt")).unwrap();
        std::fs::remove_dir_all(c.join("gone")).unwrap();
        std::fs::create_dir(c.join("newdir")).unwrap();
        crate::sys::symlink("x", c.join("y")).unwrap();
        crate::sys::set_mode(c.join("Cargo.toml"), 0o600).unwrap();
        std::fs::remove_file(c.join("link")).unwrap();
        crate::sys::symlink("del.txt", c.join("link")).unwrap();
        let changes = sb.changes(10);
        let said: Vec<String> = changes.iter().map(|c| c.to_string()).collect();
        assert_eq!(
            said,
            [
                "del.txt deleted",
                "gone deleted",
                "newdir: a new folder",
                "y: a new symlink",
                "link: a symlink now to del.txt",
                "Cargo.toml: mode 644 -> 600",
            ],
            "{changes:?}"
        );
        assert!(changes.iter().all(|c| !c.is_written()));
        // A folder where a file was.
        std::fs::remove_file(c.join("Cargo.toml")).unwrap();
        std::fs::create_dir(c.join("Cargo.toml")).unwrap();
        assert!(sb
            .changes(10)
            .iter()
            .any(|c| c.to_string() == "Cargo.toml: a folder, was a file"));
        assert_eq!(sb.changes(2).len(), 2);
    }

    #[test]
    fn links_into_the_tree_lead_into_the_copy_and_links_out_are_named() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("proj");
        std::fs::create_dir_all(src.join("realout")).unwrap();
        std::fs::create_dir_all(tmp.path().join("elsewhere")).unwrap();
        crate::sys::symlink(src.join("realout"), src.join("abs")).unwrap();
        crate::sys::symlink("../proj/realout", src.join("rel")).unwrap();
        crate::sys::symlink(tmp.path().join("elsewhere"), src.join("out")).unwrap();
        let sb = Sandbox::create(&src, &tmp.path().join("copy"), &[]).unwrap();
        for link in ["abs", "rel"] {
            std::fs::write(sb.cwd().join(link).join("res.txt"), link).unwrap();
            assert!(
                !src.join("realout/res.txt").exists(),
                "{link} wrote the user's file"
            );
            let in_copy = sb.cwd().join("realout/res.txt");
            assert_eq!(std::fs::read_to_string(in_copy).unwrap(), link);
        }
        assert_eq!(escapes(&src, Path::new("abs/res.txt")), None);
        assert_eq!(escapes(&src, Path::new("realout/res.txt")), None);
        let (link, to) = escapes(&src, Path::new("out/res.txt")).unwrap();
        assert_eq!(link, src.join("out"));
        assert_eq!(to, tmp.path().join("elsewhere").canonicalize().unwrap());
        assert!(escapes(&src, &src.join("out/res.txt")).is_some());
    }

    #[test]
    fn links_out_of_the_tree_are_copied_when_small_so_writes_through_them_stay_in_the_copy() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("proj");
        let out = tmp.path().join("outside");
        std::fs::create_dir_all(&src).unwrap();
        std::fs::create_dir_all(out.join("d")).unwrap();
        std::fs::create_dir_all(out.join("big")).unwrap();
        std::fs::write(out.join("shared.txt"), "user's").unwrap();
        std::fs::write(out.join("d/in.txt"), "in d").unwrap();
        std::fs::write(out.join("big/blob"), vec![0u8; SNAPSHOT_BYTES as usize + 1]).unwrap();
        crate::sys::symlink(out.join("d"), out.join("d/again")).unwrap();
        crate::sys::symlink(out.join("shared.txt"), src.join("abs")).unwrap();
        crate::sys::symlink("../outside/shared.txt", src.join("rel")).unwrap();
        crate::sys::symlink(out.join("d"), src.join("dir")).unwrap();
        crate::sys::symlink("../outside/big", src.join("big")).unwrap();
        crate::sys::symlink(out.join("new.log"), src.join("dangling")).unwrap();
        crate::sys::symlink("..", src.join("up")).unwrap();
        let sb = Sandbox::create(&src, &tmp.path().join("copy"), &[]).unwrap();
        let c = sb.cwd();
        assert_eq!(sb.changes(10), []);
        // Read through: the relative link works from the copy, which is elsewhere.
        assert_eq!(std::fs::read_to_string(c.join("rel")).unwrap(), "user's");
        assert_eq!(
            std::fs::read_to_string(c.join("dir/in.txt")).unwrap(),
            "in d"
        );
        assert_eq!(
            std::fs::read_to_string(c.join("dir/again/in.txt")).unwrap(),
            "in d"
        );
        assert_eq!(
            std::fs::read(c.join("big/blob")).unwrap().len() as u64,
            SNAPSHOT_BYTES + 1
        );
        // Too large, or holding the copy: kept, absolute, and named.
        let canon = |p: &Path| p.canonicalize().unwrap();
        assert_eq!(
            sb.outside,
            [
                (PathBuf::from("big"), canon(&out.join("big"))),
                (PathBuf::from("up"), canon(tmp.path())),
            ]
        );
        // Writes through the others stay in the copy, and are changes.
        for link in ["abs", "rel", "dir/in.txt", "dir/again/in.txt", "dangling"] {
            std::fs::write(c.join(link), "written").unwrap();
        }
        assert_eq!(
            std::fs::read_to_string(out.join("shared.txt")).unwrap(),
            "user's"
        );
        assert_eq!(
            std::fs::read_to_string(out.join("d/in.txt")).unwrap(),
            "in d"
        );
        assert!(!out.join("new.log").exists());
        assert_eq!(
            paths(sb.changes(10)),
            [
                Path::new("abs"),
                Path::new("dangling"),
                Path::new("dir/in.txt"),
                Path::new("rel")
            ]
        );
    }

    #[test]
    fn a_files_workload_gets_a_copy_without_its_outputs_and_a_link_out_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("proj");
        std::fs::create_dir_all(src.join("out")).unwrap();
        std::fs::write(src.join("out/r.txt"), "left over").unwrap();
        let mut w = workload(&src);
        let spec = Path::new("/p/optimize.toml");
        let dest = tmp.path().join("copy");
        assert!(for_files(&w, spec, &dest, &[]).unwrap().is_none());
        w.files = vec![PathBuf::from("out/r.txt")];
        let (copy, sb) = for_files(&w, spec, &dest, &[]).unwrap().unwrap();
        assert_eq!(copy.cwd, sb.cwd());
        assert!(sb.cwd().join("out").is_dir() && !sb.cwd().join("out/r.txt").exists());
        assert!(src.join("out/r.txt").exists());
        drop(sb);
        crate::sys::symlink(tmp.path(), src.join("away")).unwrap();
        w.files = vec![PathBuf::from("away/r.txt")];
        let e = for_files(&w, spec, &dest, &[]).expect_err("refused");
        assert!(
            e.to_string().starts_with(
                "/p/optimize.toml:7: workload `w` declares the output file away/r.txt"
            ),
            "{e}"
        );
    }

    #[test]
    fn a_files_workload_whose_cwd_is_too_large_to_copy_is_refused_before_copying() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("proj");
        std::fs::create_dir_all(&src).unwrap();
        // Sparse: 2 GiB as its size says, nothing written.
        let big = std::fs::File::create(src.join("big.img")).unwrap();
        big.set_len(2 << 30).unwrap();
        let mut w = workload(&src);
        w.files = vec![PathBuf::from("out.txt")];
        let dest = tmp.path().join("copy");
        let e = for_files(&w, Path::new("/p/optimize.toml"), &dest, &[]).expect_err("refused");
        let e = e.to_string();
        assert!(
            e.starts_with("/p/optimize.toml:7: workload `w` declares output `files`"),
            "{e}"
        );
        assert!(e.contains("fix: point `cwd` at a folder"), "{e}");
        assert!(!dest.exists(), "copying started");
    }

    #[test]
    fn root_paths_in_args_and_env_lead_into_the_copy() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap().join("proj");
        std::fs::create_dir_all(root.join("work")).unwrap();
        std::fs::write(root.join("work/in.txt"), "in").unwrap();
        let r = root.display().to_string();
        let mut w = workload(&root);
        w.args = vec![
            format!("{r}/results.log"),
            format!("--in={r}/work/in.txt"),
            format!("{r}x/y"),
        ];
        w.env.insert("OUT".into(), format!("{r}/env.log"));
        // The cwd is the root (the default): `{root}/…` leads into the copy.
        assert_eq!(copied_folder(&w, &root), root);
        let sb = Sandbox::create(&root, &tmp.path().join("c1"), &[]).unwrap();
        let m = sb.moved(&w);
        let c = sb.cwd().display().to_string();
        assert_eq!(m.cwd, sb.cwd());
        assert_eq!(
            m.args,
            [
                format!("{c}/results.log"),
                format!("--in={c}/work/in.txt"),
                format!("{r}x/y")
            ]
        );
        assert_eq!(m.env["OUT"], format!("{c}/env.log"));
        std::fs::write(&m.args[0], "x").unwrap();
        assert!(!root.join("results.log").exists());
        assert_eq!(sb.changes(10), [Change::Written("results.log".into())]);
        // A cwd inside the root, an argument naming the root outside it: the root is copied.
        w.cwd = root.join("work");
        assert_eq!(copied_folder(&w, &root), root);
        let sb = Sandbox::create(&root, &tmp.path().join("c2"), &[]).unwrap();
        let m = sb.moved(&w);
        assert_eq!(m.cwd, sb.cwd().join("work"));
        assert_eq!(std::fs::read_to_string(m.cwd.join("in.txt")).unwrap(), "in");
        assert!(m.args[0].starts_with(&sb.cwd().display().to_string()));
        assert_eq!(
            sb.locate(&w.cwd, Path::new("o.txt")),
            sb.cwd().join("work/o.txt")
        );
        // Only paths in the cwd: the cwd alone is copied.
        w.args = vec![format!("{r}/work/in.txt")];
        w.env.clear();
        assert_eq!(copied_folder(&w, &root), root.join("work"));
    }

    #[test]
    fn size_is_counted_with_the_same_skips_and_stops_early() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path();
        std::fs::write(src.join("a"), vec![0u8; 1000]).unwrap();
        std::fs::create_dir_all(src.join("target")).unwrap();
        std::fs::write(src.join("target/CACHEDIR.TAG"), "").unwrap();
        std::fs::write(src.join("target/big"), vec![0u8; 10_000]).unwrap();
        assert!(
            !larger_than(src, &[], 5000, 10),
            "the target dir is not copied"
        );
        assert!(larger_than(src, &[], 500, 10));
        assert!(larger_than(src, &[], 5000, 0));
    }

    #[test]
    fn saved_names_are_relative_and_safe() {
        let cwd = Path::new("/p");
        assert_eq!(
            saved_name(cwd, Path::new("out/r.txt")),
            Path::new("out/r.txt")
        );
        assert_eq!(
            saved_name(cwd, Path::new("/p/out/r.txt")),
            Path::new("out/r.txt")
        );
        assert_eq!(saved_name(cwd, Path::new("/tmp/x")), Path::new("tmp/x"));
        assert_eq!(saved_name(cwd, Path::new("../x")), Path::new("__/x"));
        assert_eq!(saved_name(cwd, Path::new("./a/./b")), Path::new("a/b"));
    }

    /// A named pipe in the cwd is made anew in the copy, never opened (an open waits for a
    /// writer); a socket is left out, named; neither is a change.
    #[cfg(unix)]
    #[test]
    fn a_named_pipe_is_made_anew_and_a_socket_left_out_neither_opened() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("proj");
        std::fs::create_dir_all(&src).unwrap();
        std::fs::write(src.join("in.txt"), "in").unwrap();
        crate::sys::testing::mkfifo(&src.join("pipe")).unwrap();
        let _socket = crate::sys::testing::socket(&src.join("sock")).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let (s, d) = (src.clone(), tmp.path().join("copy"));
        std::thread::spawn(move || {
            let _ = tx.send(Sandbox::create(&s, &d, &[]).map_err(|e| e.to_string()));
        });
        let sb = rx.recv_timeout(std::time::Duration::from_secs(10));
        let sb = sb.expect("the copy opened the named pipe").unwrap();
        let kind = std::fs::symlink_metadata(sb.cwd().join("pipe"))
            .unwrap()
            .file_type();
        assert!(crate::sys::testing::is_fifo(&kind));
        assert!(std::fs::symlink_metadata(sb.cwd().join("sock")).is_err());
        assert_eq!(sb.left_out, [(PathBuf::from("sock"), Special::Socket)]);
        let said = sb.left_out_warning("w").unwrap();
        assert!(
            said.contains("sock in its cwd is a socket, left out"),
            "{said}"
        );
        assert_eq!(sb.changes(10), []);
    }

    /// A write that fails as on a full disk (the copy's writer seam) ends the copy with an
    /// error naming the file, its copy and the fix, and nothing of the copy is left.
    #[test]
    fn a_full_disk_names_the_file_and_leaves_no_partial_copy() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("proj");
        std::fs::create_dir_all(src.join("d")).unwrap();
        std::fs::write(src.join("d/big.bin"), vec![3u8; 1 << 20]).unwrap();
        let dest = tmp.path().join("copy");
        crate::util::nofollow::fail_writes_after(Some(100 << 10));
        let e = Sandbox::create(&src, &dest, &[]).expect_err("the disk is full");
        crate::util::nofollow::fail_writes_after(None);
        let said = e.to_string();
        let (from, to) = (src.join("d/big.bin"), dest.join("proj/d/big.bin"));
        let names = format!(
            "cannot copy {} (writing) to {}",
            from.display(),
            to.display()
        );
        assert!(said.starts_with(&names), "{said}");
        assert!(said.contains("fix: free space"), "{said}");
        assert!(!dest.exists(), "the partial copy is left");
    }
}
