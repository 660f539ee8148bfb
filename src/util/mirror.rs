//! A folder kept in step with another ([`mirror`]): what a private copy of a source tree
//! needs — every file copied when its size or modification time differs (and given the
//! source's time, so a build tool judging freshness by times sees what it saw in the
//! source), symlinks recreated as they are, entries gone from the source removed — with
//! version-control and build-output folders left out, and a bound on what is copied.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// At most this many entries and bytes are mirrored; a larger tree is refused.
pub(crate) const MAX_ENTRIES: usize = 50_000;
pub(crate) const MAX_BYTES: u64 = 2 << 30;

/// Make `dest` a copy of `src`, leaving out `.git`, every folder holding a `CACHEDIR.TAG`
/// (cargo's target dirs), `skip` and `dest` itself; the files in `own` (paths in `src`)
/// are not copied: the caller writes their copies. What `dest` held that `src` does not
/// is removed (but `own`'s copies).
pub(crate) fn mirror(src: &Path, dest: &Path, skip: &Path, own: &[PathBuf]) -> std::io::Result<()> {
    let skip = [canonical(skip), canonical(dest)];
    let mut seen = BTreeSet::new();
    let mut budget = (MAX_ENTRIES, MAX_BYTES);
    let mut dirs = vec![PathBuf::new()];
    std::fs::create_dir_all(dest)?;
    while let Some(rel) = dirs.pop() {
        for entry in std::fs::read_dir(src.join(&rel))? {
            let entry = entry?;
            let name = entry.file_name();
            let (from, rel) = (entry.path(), rel.join(&name));
            let kind = entry.file_type()?;
            if kind.is_dir() && left_out(&from, &name, &skip) {
                continue;
            }
            take(&mut budget, &from, &kind)?;
            seen.insert(rel.clone());
            let to = dest.join(&rel);
            if kind.is_dir() {
                if !to.is_dir() {
                    let _ = std::fs::remove_file(&to);
                    std::fs::create_dir_all(&to)?;
                }
                dirs.push(rel);
            } else if kind.is_symlink() {
                copy_link(&from, &to)?;
            } else if !own.contains(&from) {
                copy_file(&from, &to)?;
            }
        }
    }
    let own_rel: Vec<PathBuf> = (own.iter())
        .filter_map(|p| p.strip_prefix(src).ok().map(Path::to_path_buf))
        .collect();
    remove_extra(dest, Path::new(""), &seen, &own_rel)
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// A folder not mirrored: `.git`, a build tool's cache (`CACHEDIR.TAG`), or a `skip` one.
fn left_out(dir: &Path, name: &std::ffi::OsStr, skip: &[PathBuf]) -> bool {
    name == ".git" || dir.join("CACHEDIR.TAG").is_file() || skip.contains(&canonical(dir))
}

/// Count an entry against the bound; past it, the error says how large the tree is.
fn take(budget: &mut (usize, u64), path: &Path, kind: &std::fs::FileType) -> std::io::Result<()> {
    let size = match kind.is_file() {
        true => std::fs::metadata(path).map(|m| m.len()).unwrap_or(0),
        false => 0,
    };
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

/// `from` copied to `to` unless it already has `from`'s size and time; then `from`'s time.
fn copy_file(from: &Path, to: &Path) -> std::io::Result<()> {
    let meta = std::fs::metadata(from)?;
    let modified = meta.modified()?;
    if let Ok(m) = std::fs::symlink_metadata(to) {
        if m.is_file() && m.len() == meta.len() && m.modified().ok() == Some(modified) {
            return Ok(());
        }
        remove_any(to)?;
    }
    std::fs::copy(from, to)?;
    std::fs::File::options()
        .write(true)
        .open(to)?
        .set_modified(modified)
}

/// The link `from` recreated at `to` with the same target (relative stays relative).
fn copy_link(from: &Path, to: &Path) -> std::io::Result<()> {
    let target = std::fs::read_link(from)?;
    if std::fs::read_link(to).is_ok_and(|t| t == target) {
        return Ok(());
    }
    if std::fs::symlink_metadata(to).is_ok() {
        remove_any(to)?;
    }
    crate::sys::symlink(&target, to)
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
            remove_any(&entry.path())?;
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
}
