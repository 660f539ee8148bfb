//! A folder kept in step with another ([`mirror`]): what a private copy of a source tree
//! needs — every file copied when its size or modification time differs (and given the
//! source's time, so a build tool judging freshness by times sees what it saw in the
//! source), entries gone from the source removed — with version-control and build-output
//! folders left out, and a bound on what is copied.
//!
//! The copy is the tool's to edit, so nothing in it leads back into the user's files and
//! nothing of the user's is opened but a regular file (`util::nofollow`):
//! - a symlink that leads to a regular file outside the tree (or inside it, by an absolute
//!   path) is copied as a regular file holding that file's bytes (and time), so a write in
//!   the copy stays in the copy; a relative link that stays inside the tree is recreated as
//!   it is (it leads into the copy); a link to a folder leads to the same folder in the copy
//!   when it is in the tree, else to the folder (absolute, so it reads the same from the
//!   copy); a link to nothing is recreated as it is;
//! - the files the caller writes (`own`) are not copied at all, whatever they are: a link
//!   there is never recreated for the caller to write through (it writes with
//!   `nofollow::replace`);
//! - a named pipe is recreated as a named pipe, never opened (an open waits for a writer);
//!   a socket or a device is left out (a build reads neither);
//! - a regular file is opened without waiting and checked on its descriptor (a pipe
//!   swapped in is refused), and its copy is created new, never through a link.
//!
//! An error names the file, its copy and what failed (a full disk: with the fix), and
//! leaves no partial file: the copy holds whole files only.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use super::io_error;
use super::nofollow;

/// At most this many entries and bytes are mirrored; a larger tree is refused.
pub(crate) const MAX_ENTRIES: usize = 50_000;
pub(crate) const MAX_BYTES: u64 = 2 << 30;

/// The trees of one [`mirror`]: the source (as given and canonical) and the copy.
struct Trees<'a> {
    src_canon: PathBuf,
    dest: &'a Path,
    budget: (usize, u64),
}

/// Make `dest` a copy of `src` (see the module doc), leaving out `.git`, every folder
/// holding a `CACHEDIR.TAG` (cargo's target dirs), `skip` and `dest` itself; the files in
/// `own` (paths in `src`) are not copied: the caller writes their copies. What `dest` held
/// that `src` does not is removed (but `own`'s copies).
pub(crate) fn mirror(src: &Path, dest: &Path, skip: &Path, own: &[PathBuf]) -> std::io::Result<()> {
    let skip = [canonical(skip), canonical(dest)];
    let mut trees = Trees {
        src_canon: canonical(src),
        dest,
        budget: (MAX_ENTRIES, MAX_BYTES),
    };
    let mut seen = BTreeSet::new();
    let mut dirs = vec![PathBuf::new()];
    std::fs::create_dir_all(dest).map_err(|e| io_error(e, "cannot create", dest))?;
    while let Some(rel) = dirs.pop() {
        let dir = src.join(&rel);
        let entries = std::fs::read_dir(&dir).map_err(|e| io_error(e, "cannot read", &dir))?;
        for entry in entries {
            let entry = entry.map_err(|e| io_error(e, "cannot read", &dir))?;
            let name = entry.file_name();
            let (from, rel) = (entry.path(), rel.join(&name));
            let kind = entry
                .file_type()
                .map_err(|e| io_error(e, "cannot read", &from))?;
            if own.contains(&from) || (kind.is_dir() && left_out(&from, &name, &skip)) {
                continue;
            }
            let to = dest.join(&rel);
            if kind.is_dir() {
                take(&mut trees.budget, &from, 0)?;
                if !std::fs::symlink_metadata(&to).is_ok_and(|m| m.is_dir()) {
                    let _ = remove_any(&to);
                    std::fs::create_dir_all(&to).map_err(|e| io_error(e, "cannot create", &to))?;
                }
                seen.insert(rel.clone());
                dirs.push(rel);
            } else if copy_entry(&mut trees, &from, &rel, &kind)? {
                seen.insert(rel);
            }
        }
    }
    let own_rel: Vec<PathBuf> = (own.iter())
        .filter_map(|p| p.strip_prefix(src).ok().map(Path::to_path_buf))
        .collect();
    remove_extra(dest, Path::new(""), &seen, &own_rel)
}

/// The entry `from` (not a folder) copied at `rel` in the copy; whether it is there (a
/// socket or device is not).
fn copy_entry(
    trees: &mut Trees,
    from: &Path,
    rel: &Path,
    kind: &std::fs::FileType,
) -> std::io::Result<bool> {
    let to = trees.dest.join(rel);
    if kind.is_symlink() {
        copy_link(trees, from, rel)?;
    } else if kind.is_file() {
        let size = std::fs::symlink_metadata(from).map_or(0, |m| m.len());
        take(&mut trees.budget, from, size)?;
        copy_file(from, &to, false)?;
    } else if crate::sys::special_kind(kind) == Some(crate::sys::Special::Fifo) {
        take(&mut trees.budget, from, 0)?;
        copy_fifo(from, &to)?;
    } else {
        return Ok(false);
    }
    Ok(true)
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// A folder not mirrored: `.git`, a build tool's cache (`CACHEDIR.TAG`), or a `skip` one.
fn left_out(dir: &Path, name: &std::ffi::OsStr, skip: &[PathBuf]) -> bool {
    name == ".git" || dir.join("CACHEDIR.TAG").is_file() || skip.contains(&canonical(dir))
}

/// Count an entry of `size` bytes against the bound; past it, the error says how large the
/// tree is.
fn take(budget: &mut (usize, u64), path: &Path, size: u64) -> std::io::Result<()> {
    if budget.0 == 0 || budget.1 < size {
        return Err(std::io::Error::other(format!(
            "the tree holds more than {MAX_ENTRIES} entries or {} (at {})",
            super::human_bytes(MAX_BYTES),
            path.display()
        )));
    }
    budget.0 -= 1;
    budget.1 -= size;
    Ok(())
}

/// The regular file `from` (through its links when `follow`) copied to `to` unless `to`
/// already is a regular file of its size and time (see the module doc).
fn copy_file(from: &Path, to: &Path, follow: bool) -> std::io::Result<()> {
    let meta = match follow {
        true => std::fs::metadata(from),
        false => std::fs::symlink_metadata(from),
    };
    let meta = meta.map_err(|e| io_error(e, "cannot read", from))?;
    if let Ok(m) = std::fs::symlink_metadata(to) {
        if m.is_file() && m.len() == meta.len() && m.modified().ok() == meta.modified().ok() {
            return Ok(());
        }
        remove_any(to).map_err(|e| io_error(e, "cannot remove", to))?;
    }
    nofollow::copy_file(from, to, follow).map(drop)
}

/// The named pipe `from` made at `to` (kept when one is there), never opened.
fn copy_fifo(from: &Path, to: &Path) -> std::io::Result<()> {
    let meta = std::fs::symlink_metadata(from).map_err(|e| io_error(e, "cannot read", from))?;
    if let Ok(m) = std::fs::symlink_metadata(to) {
        if crate::sys::special_kind(&m.file_type()) == Some(crate::sys::Special::Fifo) {
            return Ok(());
        }
        remove_any(to).map_err(|e| io_error(e, "cannot remove", to))?;
    }
    nofollow::fifo(from, to, &meta)
}

/// The link `from` (at `rel`) in the copy, as the module doc says: a relative link that
/// stays in the tree as it is; one to a regular file elsewhere, that file's copy; one to a
/// folder, a link to its copy in the tree or to it (absolute) outside.
fn copy_link(trees: &mut Trees, from: &Path, rel: &Path) -> std::io::Result<()> {
    let to = trees.dest.join(rel);
    let said = std::fs::read_link(from).map_err(|e| io_error(e, "cannot read the link", from))?;
    let Ok(leads) = std::fs::canonicalize(from) else {
        take(&mut trees.budget, from, 0)?;
        return make_link(&said, &to);
    };
    let inside = leads
        .strip_prefix(&trees.src_canon)
        .ok()
        .map(Path::to_path_buf);
    if inside.is_some() && stays_inside(rel, &said) {
        take(&mut trees.budget, from, 0)?;
        return make_link(&said, &to);
    }
    let meta = std::fs::metadata(&leads).map_err(|e| io_error(e, "cannot read", &leads))?;
    take(
        &mut trees.budget,
        from,
        if meta.is_file() { meta.len() } else { 0 },
    )?;
    match inside {
        _ if meta.is_file() => copy_file(from, &to, true),
        Some(r) => make_link(&trees.dest.join(r), &to),
        None => make_link(&leads, &to),
    }
}

/// Whether the relative link `said` at `rel` (relative to the tree's root) leads, read as
/// written, to a path in the tree: it never climbs above the root with `..`.
fn stays_inside(rel: &Path, said: &Path) -> bool {
    let mut depth = rel.components().count() as i64 - 1;
    for c in said.components() {
        match c {
            Component::ParentDir => depth -= 1,
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => return false,
        }
        if depth < 0 {
            return false;
        }
    }
    true
}

/// A link at `to` saying `target` (kept when one says it already).
fn make_link(target: &Path, to: &Path) -> std::io::Result<()> {
    if std::fs::read_link(to).is_ok_and(|t| t == target) {
        return Ok(());
    }
    if std::fs::symlink_metadata(to).is_ok() {
        remove_any(to).map_err(|e| io_error(e, "cannot remove", to))?;
    }
    crate::sys::symlink(target, to).map_err(|e| io_error(e, "cannot make the link", to))
}

fn remove_any(p: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(p)?.is_dir() {
        true => std::fs::remove_dir_all(p),
        false => std::fs::remove_file(p),
    }
}

/// What `dest/rel` holds that the source does not (`seen`), removed; `own` kept.
fn remove_extra(
    dest: &Path,
    rel: &Path,
    seen: &BTreeSet<PathBuf>,
    own: &[PathBuf],
) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dest.join(rel))? {
        let entry = entry?;
        let r = rel.join(entry.file_name());
        if own.contains(&r) {
            continue;
        }
        if !seen.contains(&r) {
            remove_any(&entry.path()).map_err(|e| io_error(e, "cannot remove", &entry.path()))?;
        } else if entry.file_type()?.is_dir() {
            remove_extra(dest, &r, seen, own)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mirror_follows_its_source_leaving_out_git_and_target_dirs() {
        let dir = tempfile::tempdir().unwrap();
        let (src, dest) = (dir.path().join("src"), dir.path().join("src/target/copy"));
        std::fs::create_dir_all(src.join("a/.git")).unwrap();
        std::fs::create_dir_all(src.join("target")).unwrap();
        std::fs::write(src.join("target/CACHEDIR.TAG"), "x").unwrap();
        std::fs::write(src.join("a/one.rs"), "1").unwrap();
        std::fs::write(src.join("a/.git/HEAD"), "x").unwrap();
        std::fs::write(src.join("Cargo.toml"), "mine").unwrap();
        crate::sys::symlink("a/one.rs", src.join("link")).unwrap();
        let own = [src.join("Cargo.toml")];
        mirror(&src, &dest, &src.join("target"), &own).unwrap();
        assert_eq!(std::fs::read_to_string(dest.join("a/one.rs")).unwrap(), "1");
        assert_eq!(
            std::fs::read_link(dest.join("link")).unwrap(),
            Path::new("a/one.rs")
        );
        assert!(!dest.join("a/.git").exists() && !dest.join("target").exists());
        assert!(
            !dest.join("Cargo.toml").exists(),
            "the caller writes its own files"
        );
        let t = std::fs::metadata(src.join("a/one.rs"))
            .unwrap()
            .modified()
            .unwrap();
        assert_eq!(
            std::fs::metadata(dest.join("a/one.rs"))
                .unwrap()
                .modified()
                .unwrap(),
            t
        );
        // An edit, a removal and the caller's file: followed, removed, kept.
        std::fs::write(dest.join("Cargo.toml"), "edited").unwrap();
        std::fs::write(src.join("a/one.rs"), "22").unwrap();
        std::fs::remove_file(src.join("link")).unwrap();
        mirror(&src, &dest, &src.join("target"), &own).unwrap();
        assert_eq!(
            std::fs::read_to_string(dest.join("a/one.rs")).unwrap(),
            "22"
        );
        assert!(std::fs::symlink_metadata(dest.join("link")).is_err());
        assert_eq!(
            std::fs::read_to_string(dest.join("Cargo.toml")).unwrap(),
            "edited"
        );
    }

    /// The files the caller edits in the copy (`own`) are never recreated as links to the
    /// user's files, and a symlink to a file outside the tree is copied as that file's
    /// bytes, so nothing written in the copy lands in the user's file.
    #[cfg(unix)]
    #[test]
    fn links_to_files_outside_and_the_caller_s_files_are_never_links_in_the_copy() {
        let dir = tempfile::tempdir().unwrap();
        let (src, dest) = (dir.path().join("ws"), dir.path().join("copy"));
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(src.join("src")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("main.rs"), "fn main() {}\n").unwrap();
        std::fs::write(outside.join("data.txt"), "data").unwrap();
        crate::sys::symlink(outside.join("main.rs"), src.join("src/main.rs")).unwrap();
        crate::sys::symlink("../../outside/data.txt", src.join("src/data.txt")).unwrap();
        let own = [src.join("src/main.rs")];
        for _ in 0..2 {
            mirror(&src, &dest, &src.join("target"), &own).unwrap();
            let main = std::fs::symlink_metadata(dest.join("src/main.rs"));
            assert!(main.is_err(), "the caller writes its own files: {main:?}");
            let data = std::fs::symlink_metadata(dest.join("src/data.txt")).unwrap();
            assert!(data.is_file(), "a link out is copied as a file");
            assert_eq!(
                std::fs::read_to_string(dest.join("src/data.txt")).unwrap(),
                "data"
            );
            std::fs::write(dest.join("src/data.txt"), "written in the copy").unwrap();
        }
        assert_eq!(
            std::fs::read_to_string(outside.join("data.txt")).unwrap(),
            "data"
        );
    }

    /// A named pipe in the tree is recreated as a named pipe, never opened (an open would
    /// wait for a writer for good); a socket is left out.
    #[cfg(unix)]
    #[test]
    fn a_named_pipe_is_recreated_without_being_opened_and_a_socket_is_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let (src, dest) = (dir.path().join("ws"), dir.path().join("copy"));
        std::fs::create_dir_all(&src).unwrap();
        std::fs::write(src.join("a.rs"), "a").unwrap();
        crate::sys::testing::mkfifo(&src.join("pipe")).unwrap();
        let _socket = crate::sys::testing::socket(&src.join("sock")).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let (s, d) = (src.clone(), dest.clone());
        std::thread::spawn(move || {
            let _ = tx.send(mirror(&s, &d, &s.join("target"), &[]).map_err(|e| e.to_string()));
        });
        let done = rx.recv_timeout(std::time::Duration::from_secs(10));
        let done = done.expect("the mirror opened the named pipe and waits for a writer");
        done.unwrap();
        let kind = std::fs::symlink_metadata(dest.join("pipe"))
            .unwrap()
            .file_type();
        assert!(crate::sys::testing::is_fifo(&kind));
        assert!(std::fs::symlink_metadata(dest.join("sock")).is_err());
        assert_eq!(std::fs::read_to_string(dest.join("a.rs")).unwrap(), "a");
    }

    /// A write that fails for real (past the file size limit, `ulimit -f`, in a child
    /// process: the limit is process-wide) ends the copy with an error naming the file
    /// copied and its copy, and leaves no partial file.
    #[cfg(unix)]
    #[test]
    fn a_failing_write_names_the_file_and_leaves_no_partial_copy() {
        const CHILD: &str = "CARGO_OPTIMIZE_TEST_MIRROR_FSIZE";
        if let Ok(dir) = std::env::var(CHILD) {
            let dir = Path::new(&dir);
            let r = mirror(&dir.join("ws"), &dir.join("copy"), &dir.join("none"), &[]);
            println!(
                "MIRROR:{}",
                r.map_or_else(|e| e.to_string(), |_| "ok".into())
            );
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("ws");
        std::fs::create_dir_all(&src).unwrap();
        std::fs::write(src.join("big.bin"), vec![7u8; 4 << 20]).unwrap();
        let script =
            "trap '' XFSZ; ulimit -f 512; exec \"$0\" --exact \"$1\" --nocapture --test-threads=1";
        let out = std::process::Command::new("sh")
            .args(["-c", script])
            .arg(std::env::current_exe().unwrap())
            .arg("util::mirror::tests::a_failing_write_names_the_file_and_leaves_no_partial_copy")
            .env(CHILD, dir.path())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let at = text.find("MIRROR:").unwrap_or_else(|| panic!("{text}"));
        let said = text[at + 7..].lines().next().unwrap_or_default();
        let copy = dir.path().join("copy/big.bin");
        assert!(
            said.contains(&src.join("big.bin").display().to_string()),
            "{said}"
        );
        assert!(said.contains(&copy.display().to_string()), "{said}");
        assert!(
            std::fs::symlink_metadata(&copy).is_err(),
            "a partial copy is left: {said}"
        );
    }
}
