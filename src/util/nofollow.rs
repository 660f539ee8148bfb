//! Writing into a copy the tool made of a user's tree (the alloc stage's mirror of the
//! workspace, a workload's private copy), where a symlink or a special file may have come
//! from the user's tree: nothing is written through a link, nothing is opened but a
//! regular file, and a failed write leaves no partial file.
//!
//! - [`copy_file`]: a regular file's bytes, permission bits and modification time put at
//!   a new path. The source is opened without waiting and checked on the open descriptor
//!   to be a regular file (`sys::open_regular`: a named pipe, socket or device swapped in
//!   since its type was looked at is refused, never read or waited on), through no link
//!   unless asked; the copy is created new (`sys::create_new`: never over an existing
//!   file, never through a link). On any error the partial copy is removed and the error
//!   names the file, its copy and the step (reading, creating, writing), with the fix for
//!   a full disk.
//! - [`replace`]: a file the tool writes in its copy (an edited manifest, a lock file):
//!   what is at the path (a link the copy took from the user's tree, an older file)
//!   unlinked, then the file created anew as [`copy_file`] creates it. `util::atomic`
//!   follows links on purpose, for the files a user names (`-o FILE`); this is its
//!   counterpart for the tool's own copies.
//! - [`read`]: a user's file read through its links, refused unless it is a regular file
//!   (a named pipe there would make a read wait for good).
//! - [`fifo`]: a named pipe recreated as one, never opened.
//!
//! Tests fail writes deterministically through a seam ([`fail_writes_after`], this
//! thread's copies only); a real write failure (past `ulimit -f`) is tested by
//! `util::mirror`.

use std::io::{Read as _, Write as _};
use std::path::Path;

/// Copy the regular file `from` (through its links when `follow`) to `to`, which must not
/// exist, with its permission bits and modification time; the bytes copied. See the module
/// doc for what is refused and what an error says.
pub(crate) fn copy_file(from: &Path, to: &Path, follow: bool) -> std::io::Result<u64> {
    let failed = |e, step: &str| {
        super::io_error(
            e,
            &format!("cannot copy {} ({step}) to", from.display()),
            to,
        )
    };
    let mut src = crate::sys::open_regular(from, follow).map_err(|e| failed(e, "opening"))?;
    let meta = src.metadata().map_err(|e| failed(e, "reading"))?;
    let mut dst = crate::sys::create_new(to, crate::sys::mode(&meta))
        .map_err(|e| failed(e, "creating the copy"))?;
    let done = pump(&mut src, &mut dst).and_then(|(n, step)| {
        let kept = dst
            .set_permissions(meta.permissions())
            .and_then(|()| dst.set_modified(meta.modified()?));
        kept.map(|()| n).map_err(|e| (e, step))
    });
    done.map_err(|(e, step)| {
        drop(dst);
        let _ = std::fs::remove_file(to);
        failed(e, step)
    })
}

/// Every byte of `src` written to `dst`: the count, or the error and the step it failed in.
fn pump(
    src: &mut std::fs::File,
    dst: &mut std::fs::File,
) -> Result<(u64, &'static str), (std::io::Error, &'static str)> {
    let mut buf = vec![0u8; 256 << 10];
    let mut total = 0u64;
    loop {
        let n = match src.read(&mut buf) {
            Ok(0) => return Ok((total, "keeping its mode and time")),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err((e, "reading")),
        };
        fault::check(n).map_err(|e| (e, "writing"))?;
        dst.write_all(&buf[..n]).map_err(|e| (e, "writing"))?;
        total += n as u64;
    }
}

/// Make `path` a new regular file holding `bytes` (see the module doc): what is there is
/// unlinked first (a folder is an error), so a link the copy holds is replaced, never
/// written through. A file that was there keeps its permission bits; a new one gets
/// `0o644` (less the umask). A failed write leaves nothing at `path`.
pub(crate) fn replace(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut mode = 0o644;
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => {
            return Err(super::io_error(
                std::io::Error::other("it is a folder"),
                "cannot replace",
                path,
            ))
        }
        Ok(m) => {
            if m.is_file() {
                mode = crate::sys::mode(&m);
            }
            std::fs::remove_file(path).map_err(|e| super::io_error(e, "cannot remove", path))?;
        }
        Err(_) => {}
    }
    let mut file = crate::sys::create_new(path, mode)
        .map_err(|e| super::io_error(e, "cannot create", path))?;
    let written = fault::check(bytes.len()).and_then(|()| file.write_all(bytes));
    written.map_err(|e| {
        drop(file);
        let _ = std::fs::remove_file(path);
        super::io_error(e, "cannot write", path)
    })
}

/// The bytes of the regular file at the end of `path`'s links; a named pipe, socket,
/// device or folder is an error naming `path`, never read.
pub(crate) fn read(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    crate::sys::open_regular(path, true)
        .and_then(|mut f| f.read_to_end(&mut bytes))
        .map_err(|e| super::io_error(e, "cannot read", path))?;
    Ok(bytes)
}

/// [`read`] as text (not UTF-8: an error naming `path`).
pub(crate) fn read_to_string(path: &Path) -> std::io::Result<String> {
    String::from_utf8(read(path)?).map_err(|e| {
        super::io_error(
            std::io::Error::new(std::io::ErrorKind::InvalidData, e.utf8_error()),
            "cannot read",
            path,
        )
    })
}

/// A named pipe made at `to` with `from`'s permission bits (`meta`), neither opened.
pub(crate) fn fifo(from: &Path, to: &Path, meta: &std::fs::Metadata) -> std::io::Result<()> {
    crate::sys::mkfifo(to, crate::sys::mode(meta)).map_err(|e| {
        super::io_error(
            e,
            &format!("cannot copy the named pipe {} to", from.display()),
            to,
        )
    })
}

/// The test seam: this thread's writes into copies fail as a full disk does once a number
/// of bytes is written. Under `cfg(test)` only; elsewhere every write may go on.
mod fault {
    #[cfg(test)]
    thread_local! {
        static LEFT: std::cell::Cell<Option<u64>> = const { std::cell::Cell::new(None) };
    }

    #[cfg(test)]
    pub(super) fn set(bytes: Option<u64>) {
        LEFT.with(|l| l.set(bytes));
    }

    /// An error (`ENOSPC`) when `n` more bytes go past what is left.
    #[cfg(test)]
    pub(super) fn check(n: usize) -> std::io::Result<()> {
        LEFT.with(|l| match l.get() {
            Some(left) if (n as u64) > left => {
                l.set(Some(0));
                Err(std::io::Error::from_raw_os_error(28))
            }
            Some(left) => {
                l.set(Some(left - n as u64));
                Ok(())
            }
            None => Ok(()),
        })
    }

    #[cfg(not(test))]
    #[inline(always)]
    pub(super) fn check(_n: usize) -> std::io::Result<()> {
        Ok(())
    }
}

/// Make this thread's writes into copies fail with `ENOSPC` (a full disk) once `bytes` more
/// are written (`None`: never). For tests.
#[cfg(test)]
pub(crate) fn fail_writes_after(bytes: Option<u64>) {
    fault::set(bytes);
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_copy_never_opens_a_pipe_nor_writes_through_a_link() {
        let d = tempfile::tempdir().unwrap();
        let (pipe, file, link) = (d.path().join("p"), d.path().join("f"), d.path().join("l"));
        crate::sys::testing::mkfifo(&pipe).unwrap();
        std::fs::write(&file, "user's").unwrap();
        crate::sys::symlink(&file, &link).unwrap();
        // Blocking opens would wait for a writer for good: these answer at once.
        let e = copy_file(&pipe, &d.path().join("c"), true).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        assert!(read(&pipe).is_err());
        let e = copy_file(&link, &d.path().join("c"), false).unwrap_err();
        assert!(e.to_string().contains(&link.display().to_string()), "{e}");
        assert!(!d.path().join("c").exists());
        assert_eq!(copy_file(&link, &d.path().join("c"), true).unwrap(), 6);
        let e = copy_file(&file, &link, false).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists, "{e}");
        replace(&link, b"mine").unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "user's");
        assert!(std::fs::symlink_metadata(&link).unwrap().is_file());
        assert_eq!(read_to_string(&link).unwrap(), "mine");
    }

    #[test]
    fn a_full_disk_names_both_files_and_leaves_no_partial_copy() {
        let d = tempfile::tempdir().unwrap();
        let (from, to) = (d.path().join("big"), d.path().join("copy"));
        std::fs::write(&from, vec![1u8; 600 << 10]).unwrap();
        fail_writes_after(Some(300 << 10));
        let e = copy_file(&from, &to, false).unwrap_err();
        fail_writes_after(None);
        let said = e.to_string();
        assert!(
            said.contains(&format!(
                "cannot copy {} (writing) to {}",
                from.display(),
                to.display()
            )),
            "{said}"
        );
        assert!(said.contains("fix: free space"), "{said}");
        assert!(!to.exists());
        fail_writes_after(Some(2));
        assert!(replace(&to, b"three").is_err());
        fail_writes_after(None);
        assert!(!to.exists());
    }
}
