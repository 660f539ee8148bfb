//! Writing files into the user's project, all or nothing.
//!
//! - Symlinks are written through: the link's target is replaced, the link stays a link.
//!   A link into a folder that does not exist is refused.
//! - Each file is replaced atomically: a temp file in the target's own folder, then a
//!   rename (with the old file's permissions, and its owner where we may set it).
//! - Every file that existed is first backed up next to the name the user knows
//!   (`<file>.bak`, else `<file>.bak.1`, `.bak.2`, …): opened with create-new, so a backup
//!   never overwrites any file, not even under a concurrent run.
//! - All files are prepared (folders, temp files with the new content) before any is
//!   touched; a failure then, or while committing, undoes everything done so far: the
//!   written files get their old bytes back, and the backups, temp files and folders this
//!   call created are removed. The user's files are exactly as before.
//! - A file that changed since it was read (another editor, another apply) is not
//!   overwritten.

use std::io::Write as _;
use std::path::{Path, PathBuf};

/// One file to write: `path` as the user names it, the bytes it had when read (`None`: it
/// did not exist) and the bytes to write.
#[derive(Debug, Clone)]
pub(crate) struct FileWrite {
    pub path: PathBuf,
    pub old: Option<Vec<u8>>,
    pub new: Vec<u8>,
}

/// What was done for one [`FileWrite`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Written {
    pub path: PathBuf,
    /// The file written when `path` is a symlink (its resolved target).
    pub through: Option<PathBuf>,
    pub backup: Option<PathBuf>,
    /// Backup names that were taken already (left as they are).
    pub taken: Vec<PathBuf>,
}

/// A write that failed (nothing changed), or failed and could not be fully undone.
#[derive(Debug)]
pub(crate) struct WriteError {
    pub path: PathBuf,
    pub why: String,
    pub fix: Option<String>,
    /// What could not be undone (empty: every file is as it was).
    pub not_undone: Vec<String>,
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot write {}: {}", self.path.display(), self.why)?;
        if let Some(fix) = &self.fix {
            write!(f, "\n  fix: {fix}")?;
        }
        if self.not_undone.is_empty() {
            write!(f, "\n  nothing was written: your files are as they were")
        } else {
            write!(
                f,
                "\n  and undoing the files already written failed: {}",
                self.not_undone.join("; ")
            )
        }
    }
}

impl std::error::Error for WriteError {}

/// The point just before a file's rename, where tests inject a failure.
pub(crate) type Hook<'a> = &'a mut dyn FnMut(&Path) -> std::io::Result<()>;

/// Write every file (see the module doc): all or nothing.
pub(crate) fn write_all(files: &[FileWrite]) -> Result<Vec<Written>, WriteError> {
    write_all_with(files, &mut |_| Ok(()))
}

/// [`write_all`], calling `before_rename` with each target just before it is replaced.
pub(crate) fn write_all_with(
    files: &[FileWrite],
    before_rename: Hook<'_>,
) -> Result<Vec<Written>, WriteError> {
    let mut undo = Undo::default();
    let result = (|| -> Result<Vec<Written>, WriteError> {
        let mut prepared = Vec::new();
        for f in files {
            prepared.push(prepare(f, &mut undo)?);
        }
        let mut done = Vec::new();
        for (f, p) in files.iter().zip(prepared) {
            done.push(commit(f, p, &mut undo, before_rename)?);
        }
        Ok(done)
    })();
    match result {
        Ok(done) => {
            undo.forget();
            Ok(done)
        }
        Err(mut e) => {
            e.not_undone = undo.run();
            Err(e)
        }
    }
}

fn fail(path: &Path, why: impl Into<String>, fix: Option<String>) -> WriteError {
    WriteError {
        path: path.to_path_buf(),
        why: why.into(),
        fix,
        not_undone: Vec::new(),
    }
}

/// A file ready to be committed: its temp file holds the new bytes.
struct Prepared {
    target: PathBuf,
    linked: bool,
    tmp: PathBuf,
}

/// What to undo on failure, in reverse order of doing.
#[derive(Default)]
struct Undo {
    steps: Vec<WriteStep>,
}

enum WriteStep {
    /// A folder this call created.
    Dir(PathBuf),
    /// A temp file (removed on success too: renamed away by then).
    Tmp(PathBuf),
    /// A backup this call created.
    Backup(PathBuf),
    /// A file replaced (`Some(old bytes)`) or created (`None`).
    Replaced(PathBuf, Option<Vec<u8>>),
}

impl Undo {
    fn forget(&mut self) {
        self.steps.clear();
    }

    /// Undo every step; returns what could not be undone.
    fn run(&mut self) -> Vec<String> {
        let mut failed = Vec::new();
        while let Some(step) = self.steps.pop() {
            let r = match &step {
                WriteStep::Dir(d) => std::fs::remove_dir(d).map_err(|e| (d, e)),
                WriteStep::Tmp(t) | WriteStep::Backup(t) => match std::fs::remove_file(t) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err((t, e)),
                    _ => Ok(()),
                },
                WriteStep::Replaced(p, None) => std::fs::remove_file(p).map_err(|e| (p, e)),
                WriteStep::Replaced(p, Some(old)) => restore(p, old).map_err(|e| (p, e)),
            };
            if let Err((p, e)) = r {
                failed.push(format!("{}: {e}", p.display()));
            }
        }
        failed
    }
}

/// Say what `w` wrote (stderr): the file (through which symlink), its backup, and the
/// backup names that were taken already.
pub(crate) fn tell(w: &Written) {
    let mut line = match &w.through {
        Some(real) => format!(
            "wrote {} through the symlink {}",
            real.display(),
            w.path.display()
        ),
        None => format!("wrote {}", w.path.display()),
    };
    if let Some(b) = &w.backup {
        line.push_str(&format!(" (previous version in {})", b.display()));
    }
    eprintln!("{line}");
    if !w.taken.is_empty() {
        let taken: Vec<String> = w.taken.iter().map(|t| t.display().to_string()).collect();
        let one = taken.len() == 1;
        eprintln!(
            "note: {} already {}, left as {}",
            taken.join(", "),
            if one { "exists" } else { "exist" },
            if one { "it is" } else { "they are" },
        );
    }
}

/// Put `old` back at `target` (temp + rename, like any write).
fn restore(target: &Path, old: &[u8]) -> std::io::Result<()> {
    let tmp = create_temp(target, old)?;
    std::fs::rename(&tmp, target).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// Where a write to `path` lands: `path` itself (`false`), or the file its symlink chain
/// ends at (`true`), with its folder canonical where it exists (`util::atomic::link_target`).
fn resolve(path: &Path) -> Result<(PathBuf, bool), WriteError> {
    match crate::util::atomic::link_target(path) {
        Ok(Some(target)) => Ok((target, true)),
        Ok(None) => Ok((path.to_path_buf(), false)),
        Err(e) => Err(fail(path, e.to_string(), None)),
    }
}

fn prepare(f: &FileWrite, undo: &mut Undo) -> Result<Prepared, WriteError> {
    let path = &f.path;
    let (target, linked) = resolve(path)?;
    let dir = target.parent().unwrap_or(Path::new(".")).to_path_buf();
    if linked && !dir.is_dir() {
        return Err(fail(
            path,
            format!(
                "it is a symlink to {}, and {} does not exist",
                target.display(),
                dir.display()
            ),
            Some(format!(
                "create {}, or replace the symlink {} with a file",
                dir.display(),
                path.display()
            )),
        ));
    }
    if target.is_dir() {
        return Err(fail(
            path,
            "it is a folder",
            Some(format!("move {} out of the way", target.display())),
        ));
    }
    // The folders to create, outermost first; the first existing ancestor must be a folder.
    let mut missing = Vec::new();
    let mut d = dir.as_path();
    loop {
        match std::fs::metadata(d) {
            Ok(m) if m.is_dir() => break,
            Ok(_) => {
                return Err(fail(
                    path,
                    format!("{} is not a folder", d.display()),
                    Some(format!(
                        "move or rename {}, then rerun `cargo optimize apply`",
                        d.display()
                    )),
                ));
            }
            Err(_) => {
                missing.push(d.to_path_buf());
                match d.parent() {
                    Some(p) if !p.as_os_str().is_empty() => d = p,
                    _ => break,
                }
            }
        }
    }
    for m in missing.iter().rev() {
        std::fs::create_dir(m)
            .map_err(|e| fail(path, format!("cannot create {}: {e}", m.display()), None))?;
        undo.steps.push(WriteStep::Dir(m.clone()));
    }
    let tmp = create_temp(&target, &f.new).map_err(|e| {
        fail(
            path,
            format!("cannot create a temp file in {}: {e}", dir.display()),
            None,
        )
    })?;
    undo.steps.push(WriteStep::Tmp(tmp.clone()));
    Ok(Prepared {
        target,
        linked,
        tmp,
    })
}

fn commit(
    f: &FileWrite,
    p: Prepared,
    undo: &mut Undo,
    before_rename: Hook<'_>,
) -> Result<Written, WriteError> {
    let path = &f.path;
    let now = match std::fs::read(&p.target) {
        Ok(b) => Some(b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(fail(path, format!("cannot read it again: {e}"), None)),
    };
    if now != f.old {
        return Err(fail(
            path,
            "it changed while apply was running",
            Some("rerun `cargo optimize apply` (it shows the diff again)".into()),
        ));
    }
    let mut backup = None;
    let mut taken = Vec::new();
    if let Some(old) = &f.old {
        let (b, t) = create_backup(path, &p.target, old)
            .map_err(|e| fail(path, format!("cannot back it up: {e}"), None))?;
        undo.steps.push(WriteStep::Backup(b.clone()));
        backup = Some(b);
        taken = t;
    }
    before_rename(&p.target)
        .and_then(|()| std::fs::rename(&p.tmp, &p.target))
        .map_err(|e| fail(path, e.to_string(), None))?;
    undo.steps
        .push(WriteStep::Replaced(p.target.clone(), f.old.clone()));
    sync_dir(&p.target);
    Ok(Written {
        path: path.clone(),
        through: p.linked.then(|| p.target.clone()),
        backup,
        taken,
    })
}

/// The backup names for `path`, in the order they are tried.
pub(crate) fn backup_names(path: &Path) -> impl Iterator<Item = PathBuf> + '_ {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    (0..).map(move |i| {
        path.with_file_name(match i {
            0 => format!("{name}.bak"),
            i => format!("{name}.bak.{i}"),
        })
    })
}

/// Write `old` to the first free backup name of `path` (create-new: never over a file),
/// with `target`'s permissions. Returns it and the names that were taken.
fn create_backup(
    path: &Path,
    target: &Path,
    old: &[u8],
) -> std::io::Result<(PathBuf, Vec<PathBuf>)> {
    let mut taken = Vec::new();
    for b in backup_names(path).take(1000) {
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&b)
        {
            Ok(mut file) => {
                let r = file
                    .write_all(old)
                    .and_then(|()| copy_owner_and_mode(&file, target))
                    .and_then(|()| file.sync_all());
                if let Err(e) = r {
                    let _ = std::fs::remove_file(&b);
                    return Err(e);
                }
                return Ok((b, taken));
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => taken.push(b),
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other(format!(
        "{} and 999 more backup names are taken",
        path.with_extension("bak").display()
    )))
}

/// A new temp file next to `target` holding `content`, with `target`'s permissions.
fn create_temp(target: &Path, content: &[u8]) -> std::io::Result<PathBuf> {
    let dir = target.parent().unwrap_or(Path::new("."));
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    for i in 0..1000 {
        let tmp = dir.join(format!(".{name}.optimize-{}-{i}.tmp", std::process::id()));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
        {
            Ok(mut file) => {
                let r = file
                    .write_all(content)
                    .and_then(|()| copy_owner_and_mode(&file, target))
                    .and_then(|()| file.sync_all());
                if let Err(e) = r {
                    let _ = std::fs::remove_file(&tmp);
                    return Err(e);
                }
                return Ok(tmp);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("no free temp file name"))
}

/// Give `file` the permissions of `like` (when it exists), and its owner when this process
/// may (root writing a user's file); an owner it may not set is left as is.
fn copy_owner_and_mode(file: &std::fs::File, like: &Path) -> std::io::Result<()> {
    let Ok(meta) = std::fs::metadata(like) else {
        return Ok(());
    };
    crate::sys::copy_owner(file, &meta);
    file.set_permissions(meta.permissions())
}

/// Make a rename in `file`'s folder durable (best effort).
fn sync_dir(file: &Path) {
    if let Some(dir) = file.parent() {
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every file and symlink under `dir`, not following links.
    fn tree(dir: &Path) -> Vec<(PathBuf, String)> {
        let mut out = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                let m = std::fs::symlink_metadata(&p).unwrap();
                let rel = p.strip_prefix(dir).unwrap().to_path_buf();
                if m.file_type().is_symlink() {
                    out.push((
                        rel,
                        format!("-> {}", std::fs::read_link(&p).unwrap().display()),
                    ));
                } else if m.is_dir() {
                    out.push((rel, "/".into()));
                    stack.push(p);
                } else {
                    out.push((
                        rel,
                        String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into(),
                    ));
                }
            }
        }
        out.sort();
        out
    }

    fn w(path: PathBuf, old: Option<&str>, new: &str) -> FileWrite {
        FileWrite {
            path,
            old: old.map(|s| s.as_bytes().to_vec()),
            new: new.as_bytes().to_vec(),
        }
    }

    #[test]
    fn backup_names_go_bak_then_numbered() {
        let names: Vec<PathBuf> = backup_names(Path::new("/p/Cargo.toml")).take(3).collect();
        assert_eq!(
            names,
            [
                "/p/Cargo.toml.bak",
                "/p/Cargo.toml.bak.1",
                "/p/Cargo.toml.bak.2"
            ]
            .map(PathBuf::from)
        );
    }

    #[test]
    fn a_backup_takes_the_first_free_name() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        std::fs::write(d.join("a"), "old").unwrap();
        std::fs::write(d.join("a.bak"), "mine").unwrap();
        std::fs::create_dir(d.join("a.bak.1")).unwrap();
        let done = write_all(&[w(d.join("a"), Some("old"), "new")]).unwrap();
        assert_eq!(done[0].backup, Some(d.join("a.bak.2")));
        assert_eq!(done[0].taken, vec![d.join("a.bak"), d.join("a.bak.1")]);
        assert_eq!(std::fs::read_to_string(d.join("a")).unwrap(), "new");
        assert_eq!(std::fs::read_to_string(d.join("a.bak")).unwrap(), "mine");
        assert_eq!(std::fs::read_to_string(d.join("a.bak.2")).unwrap(), "old");
    }

    #[test]
    fn writes_through_a_symlink_chain() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        std::fs::create_dir(d.join("real")).unwrap();
        std::fs::write(d.join("real/f"), "old").unwrap();
        crate::sys::symlink("real/f", d.join("mid")).unwrap();
        crate::sys::symlink("mid", d.join("f")).unwrap();
        let done = write_all(&[w(d.join("f"), Some("old"), "new")]).unwrap();
        assert_eq!(done[0].through, Some(d.join("real/f")));
        assert_eq!(
            tree(d),
            [
                ("f", "-> mid"),
                ("f.bak", "old"),
                ("mid", "-> real/f"),
                ("real", "/"),
                ("real/f", "new"),
            ]
            .map(|(a, b)| (PathBuf::from(a), b.to_string()))
        );
    }

    #[test]
    fn a_failed_rename_undoes_every_file_backup_temp_and_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        std::fs::write(d.join("a"), "old a").unwrap();
        std::fs::write(d.join("a.bak"), "mine").unwrap();
        let before = tree(d);
        let files = [
            w(d.join("a"), Some("old a"), "new a"),
            w(d.join("new/dir/b"), None, "new b"),
            w(d.join("c"), None, "new c"),
        ];
        // The third rename fails, after two files were written.
        let mut n = 0;
        let e = write_all_with(&files, &mut |_| {
            n += 1;
            if n == 3 {
                Err(std::io::Error::other("injected"))
            } else {
                Ok(())
            }
        })
        .unwrap_err();
        assert_eq!(e.path, d.join("c"));
        assert!(e.not_undone.is_empty(), "{e}");
        assert!(e.to_string().contains("nothing was written"), "{e}");
        assert_eq!(tree(d), before);
    }

    #[test]
    fn refuses_what_it_cannot_write_before_touching_anything() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        std::fs::write(d.join("a"), "old a").unwrap();
        std::fs::write(d.join("notdir"), "x").unwrap();
        crate::sys::symlink("gone/l", d.join("link")).unwrap();
        std::fs::create_dir(d.join("folder")).unwrap();
        let before = tree(d);
        for (second, says) in [
            (w(d.join("notdir/x"), None, "n"), "notdir is not a folder"),
            (w(d.join("link"), None, "n"), "gone does not exist"),
            (w(d.join("folder"), None, "n"), "it is a folder"),
            (w(d.join("other"), Some("was"), "n"), "changed while apply"),
        ] {
            let e = write_all(&[w(d.join("a"), Some("old a"), "new a"), second]).unwrap_err();
            assert!(e.to_string().contains(says), "{e}");
            assert_eq!(tree(d), before, "{e}");
        }
    }

    #[test]
    fn keeps_the_permissions() {
        let tmp = tempfile::tempdir().unwrap();
        let f = tmp.path().join("x");
        std::fs::write(&f, "old").unwrap();
        crate::sys::set_mode(&f, 0o640).unwrap();
        write_all(&[w(f.clone(), Some("old"), "new")]).unwrap();
        let mode = |p: &Path| crate::sys::testing::mode(&std::fs::metadata(p).unwrap()) & 0o777;
        assert_eq!(mode(&f), 0o640);
        assert_eq!(mode(&tmp.path().join("x.bak")), 0o640);
    }
}
