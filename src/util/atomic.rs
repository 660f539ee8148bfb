//! Writing a file the user named (`-o FILE`, `--export-json FILE`, a report beside a run):
//! what is there decides how.
//!
//! - nothing, or a regular file: a temporary file beside it, then a rename — a reader sees
//!   the old bytes or the new, never half; a replaced file keeps its permissions;
//! - a symlink (a chain of them): written through to the file it ends at, the link kept —
//!   renaming over the link would replace it with a file (`apply` writes the same way);
//! - a character or block device, a named pipe: written to as a stream (they cannot be
//!   replaced, only written to; `/dev/stdout`, a FIFO a viewer reads). A pipe nobody reads is
//!   refused at once instead of waiting for a reader;
//! - a directory: refused, with the fix.
//!
//! [`emit`] is the one `-o FILE` of every command: the result to FILE, else to stdout;
//! [`write_by`] the same for a file a tool makes (`profile merge -o`) and [`write_file`] for
//! a file copied (`profile collect -o`).
//!
//! Below that, the one temp-then-rename path every atomic write in the crate takes
//! ([`with_temp`]: a fresh temporary name beside the target, filled by the caller, renamed
//! over the target, removed on failure): [`replace`] (bytes, the old file's mode kept),
//! [`copy`] (a file's bytes and mode), a symlink (`RunDir::point_latest`). Not through it, and why: `propose::write` prepares every temp
//! file before renaming any (all or nothing across files), and a release folder is a
//! directory put in place by `release::package`.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A command's result (`-o FILE`): written to `out` as [`write`] does (then named on
/// stderr unless `quiet`), else to stdout. A stdout whose reader has gone is the error
/// `BrokenPipe`, which `main` ends quietly on with exit 0.
pub(crate) fn emit(out: Option<&Path>, text: &str, quiet: bool) -> std::io::Result<()> {
    match out {
        Some(o) => {
            write(o, text.as_bytes())?;
            if !quiet {
                eprintln!("wrote {}", o.display());
            }
            Ok(())
        }
        None => {
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(text.as_bytes())?;
            stdout.flush()
        }
    }
}

/// Write `bytes` to `path` as described in the module doc.
pub(crate) fn write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    match dest(path)? {
        WriteDest::Stream(target) => {
            let mut file = open_stream(path, &target)?;
            file.write_all(bytes)
                .and_then(|()| file.flush())
                .map_err(|e| super::io_error(e, "cannot write", path))
        }
        WriteDest::File(target) => {
            replace(&target, bytes).map_err(|e| super::io_error(e, "cannot write", path))
        }
    }
}

/// A file `fill` makes at a temporary path, put at `path` as [`write`] puts bytes: renamed
/// over a regular file (or where there is none) through a symlink chain, streamed into a
/// device or named pipe (made in a private temporary folder: nothing is created beside a
/// device; a pipe without a reader refused before `fill` runs), a directory refused. A tool's
/// output (`profile merge`), a file copied (`profile collect`'s binary: [`write_file`]).
pub(crate) fn write_by(
    path: &Path,
    fill: impl FnOnce(&Path) -> std::io::Result<()>,
) -> std::io::Result<()> {
    match dest(path)? {
        WriteDest::File(target) => {
            with_temp(&target, fill).map_err(|e| super::io_error(e, "cannot write", path))
        }
        WriteDest::Stream(target) => {
            let mut stream = open_stream(path, &target)?;
            let dir = tempfile::tempdir()?;
            let name = target.file_name().unwrap_or("out".as_ref());
            let tmp = dir.path().join(name);
            fill(&tmp)?;
            std::io::copy(&mut std::fs::File::open(&tmp)?, &mut stream)
                .and_then(|_| stream.flush())
                .map_err(|e| super::io_error(e, "cannot write", path))
        }
    }
}

/// The file `from` put at `path` as [`write`] puts bytes (a new or replaced file gets
/// `from`'s mode; synced before the rename).
pub(crate) fn write_file(path: &Path, from: &Path) -> std::io::Result<()> {
    write_by(path, |tmp| {
        std::fs::copy(from, tmp)?;
        std::fs::File::open(tmp)?.sync_all()
    })
}

/// What a write to a path lands on: a file replaced whole, or a device or pipe written to.
enum WriteDest {
    File(PathBuf),
    Stream(PathBuf),
}

/// The end of `path`'s symlink chain, refused when it is a directory.
fn dest(path: &Path) -> std::io::Result<WriteDest> {
    let target = resolve(path)?;
    match std::fs::metadata(&target) {
        Ok(m) if m.is_dir() => Err(refused(
            path,
            "it is a directory",
            &format!("name a file, e.g. {}", path.join("out").display()),
        )),
        Ok(m) if !m.is_file() => Ok(WriteDest::Stream(target)),
        _ => Ok(WriteDest::File(target)),
    }
}

/// Where a write to `path` lands: the file its symlink chain ends at (relative links read
/// against their own folder), or `path` itself.
pub(crate) fn resolve(path: &Path) -> std::io::Result<PathBuf> {
    let target = link_target(path)?;
    let p = target.as_deref().unwrap_or(path);
    let dir = p.parent().filter(|d| !d.as_os_str().is_empty());
    if let Some(dir) = dir.filter(|d| !d.is_dir()) {
        let why = match &target {
            None => format!("its folder {} does not exist", dir.display()),
            Some(t) => format!(
                "it is a symlink to {}, whose folder {} does not exist",
                t.display(),
                dir.display()
            ),
        };
        return Err(refused(
            path,
            &why,
            &format!("create {} first", dir.display()),
        ));
    }
    Ok(p.to_path_buf())
}

/// Where the symlink chain at `path` ends — relative links read against their own folder,
/// the deepest existing folder of the end made canonical (`proj/../shared/x` →
/// `/…/shared/x`) —, or `None` when `path` is not a symlink. `apply` writes through links the
/// same way.
pub(crate) fn link_target(path: &Path) -> std::io::Result<Option<PathBuf>> {
    let mut p = path.to_path_buf();
    let mut linked = false;
    for _ in 0..40 {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = std::fs::read_link(&p)
                    .map_err(|e| super::io_error(e, "cannot read the symlink", &p))?;
                p = match p.parent() {
                    Some(dir) => dir.join(to),
                    None => to,
                };
                linked = true;
            }
            _ => return Ok(linked.then(|| canonical_folder(&p))),
        }
    }
    Err(refused(
        path,
        "too many levels of symlinks",
        &format!("point {} at a file", path.display()),
    ))
}

/// `p` with its deepest existing folder canonical.
fn canonical_folder(p: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut d = p;
    loop {
        if let Ok(c) = d.canonicalize() {
            return rest.iter().rev().fold(c, |acc, r| acc.join(r));
        }
        match (d.parent(), d.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                d = parent;
            }
            _ => return p.to_path_buf(),
        }
    }
}

fn refused(path: &Path, why: &str, fix: &str) -> std::io::Error {
    std::io::Error::other(format!(
        "cannot write {}: {why}\n  fix: {fix}",
        path.display()
    ))
}

/// A device or named pipe: opened for writing without creating or truncating; a pipe
/// without a reader is an error at once (`O_NONBLOCK` open), not a wait.
fn open_stream(path: &Path, target: &Path) -> std::io::Result<std::fs::File> {
    match crate::sys::open_stream(target) {
        Ok(None) => Err(refused(
            path,
            "it is a named pipe that no process is reading",
            "start the reader first (e.g. `cat PIPE &`), or name a regular file",
        )),
        Err(e) => Err(super::io_error(e, "cannot open", path)),
        Ok(Some(f)) => Ok(f),
    }
}

/// `target` made by `fill` at a temporary path beside it (a name no other process or
/// thread uses, nothing there yet), then renamed over it; the temporary file is removed
/// when `fill` or the rename fails. The target's folder must exist.
pub(crate) fn with_temp(
    target: &Path,
    fill: impl FnOnce(&Path) -> std::io::Result<()>,
) -> std::io::Result<()> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = target.parent().filter(|d| !d.as_os_str().is_empty());
    let dir = dir.unwrap_or(Path::new("."));
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let tmp = dir.join(format!(".{name}.tmp-{}-{n}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let done = fill(&tmp).and_then(|()| std::fs::rename(&tmp, target));
    if done.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    done
}

/// `target` replaced whole by `bytes` (a replaced file keeps its permissions).
pub(crate) fn replace(target: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mode = std::fs::metadata(target).ok().map(|m| m.permissions());
    with_temp(target, |tmp| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(tmp)?;
        file.write_all(bytes)?;
        match mode {
            Some(m) => file.set_permissions(m),
            None => Ok(()),
        }
    })
}

/// `to` replaced whole by a copy of `from` (its bytes and mode), synced before the rename.
pub(crate) fn copy(from: &Path, to: &Path) -> std::io::Result<u64> {
    let mut size = 0;
    with_temp(to, |tmp| {
        size = std::fs::copy(from, tmp)?;
        std::fs::File::open(tmp)?.sync_all()
    })?;
    Ok(size)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys;

    #[test]
    fn a_regular_file_is_replaced_whole_and_keeps_its_mode() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("r.md");
        std::fs::write(&f, "old").unwrap();
        sys::set_mode(&f, 0o640).unwrap();
        write(&f, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "new");
        let mode = sys::testing::mode(&std::fs::metadata(&f).unwrap()) & 0o777;
        assert_eq!(mode, 0o640);
        let left: Vec<_> = std::fs::read_dir(d.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file is left");
    }

    #[test]
    fn a_symlink_is_written_through_and_stays_a_link() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("real")).unwrap();
        std::fs::write(d.path().join("real/out.md"), "old").unwrap();
        let link = d.path().join("link");
        sys::symlink("real/out.md", &link).unwrap();
        write(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(
            std::fs::read_to_string(d.path().join("real/out.md")).unwrap(),
            "new"
        );
        // A dangling link into a folder that exists creates the file it names.
        let dangling = d.path().join("dangling");
        sys::symlink("real/new.md", &dangling).unwrap();
        write(&dangling, b"x").unwrap();
        assert_eq!(
            std::fs::read_to_string(d.path().join("real/new.md")).unwrap(),
            "x"
        );
        // One into a missing folder is refused with the fix.
        let broken = d.path().join("broken");
        sys::symlink("gone/x.md", &broken).unwrap();
        let e = write(&broken, b"x").unwrap_err().to_string();
        assert!(
            e.contains("does not exist") && e.contains("fix: create"),
            "{e}"
        );
    }

    #[test]
    fn a_device_is_written_to_not_replaced() {
        // /dev/null is a character device every machine has; replacing it needs root, so
        // check what stays: still a device, and the write succeeded.
        let null = Path::new("/dev/null");
        write(null, b"x").unwrap();
        assert!(sys::testing::is_char_device(
            &std::fs::metadata(null).unwrap().file_type()
        ));
        // /dev/full: written to (ENOSPC reported), never replaced.
        let full = Path::new("/dev/full");
        if full.exists() {
            let e = write(full, b"x").unwrap_err().to_string();
            assert!(e.contains("/dev/full"), "{e}");
            assert!(sys::testing::is_char_device(
                &std::fs::metadata(full).unwrap().file_type()
            ));
        }
    }

    #[test]
    fn a_named_pipe_is_streamed_to_its_reader_and_refused_without_one() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("p");
        sys::testing::mkfifo(&fifo).unwrap();
        let e = write(&fifo, b"x").unwrap_err().to_string();
        assert!(e.contains("no process is reading"), "{e}");
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        // The reader opens the pipe in its own time: retry for at most 5 s.
        let start = std::time::Instant::now();
        while let Err(e) = write(&fifo, b"through the pipe") {
            assert!(start.elapsed().as_secs() < 5, "no reader came: {e}");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(reader.join().unwrap(), b"through the pipe");
        assert!(sys::testing::is_fifo(
            &std::fs::metadata(&fifo).unwrap().file_type()
        ));
    }

    #[test]
    fn a_directory_is_refused_with_the_fix() {
        let d = tempfile::tempdir().unwrap();
        let e = write(d.path(), b"x").unwrap_err().to_string();
        assert!(
            e.contains("it is a directory") && e.contains("fix: name a file"),
            "{e}"
        );
        assert!(d.path().is_dir());
    }

    #[test]
    fn a_failed_fill_leaves_the_target_as_it_was_and_no_temporary_file() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("entry.json");
        std::fs::write(&f, b"old").unwrap();
        let failed = with_temp(&f, |tmp| {
            std::fs::write(tmp, b"half")?;
            Err(std::io::Error::other("killed"))
        });
        assert_eq!(failed.unwrap_err().to_string(), "killed");
        assert_eq!(std::fs::read(&f).unwrap(), b"old");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
        // Then a copy replaces it whole, with the source's mode.
        let src = d.path().join("bin");
        std::fs::write(&src, b"new bytes").unwrap();
        sys::set_mode(&src, 0o751).unwrap();
        assert_eq!(copy(&src, &f).unwrap(), 9);
        assert_eq!(std::fs::read(&f).unwrap(), b"new bytes");
        let mode = sys::testing::mode(&std::fs::metadata(&f).unwrap()) & 0o777;
        assert_eq!(mode, 0o751);
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 2);
    }
}
