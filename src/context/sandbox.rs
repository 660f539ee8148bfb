//! A fresh copy of a workload's working directory, for workloads that declare output
//! `files`: each run writes into its own copy, so a file left over from an earlier run (or
//! from the other binary) can never make two runs look alike, and the user's tree is not
//! written to by verification.
//!
//! Filesystem only: runs nothing. Skips what must not be copied: cargo target dirs (they
//! hold `CACHEDIR.TAG`), `.git`, the given excluded folders, and any folder that contains
//! the copy itself (the run folder usually lives inside the project).

use std::path::{Component, Path, PathBuf};

/// A copy of a working directory; removed when dropped.
#[derive(Debug)]
pub struct Sandbox {
    root: PathBuf,
    /// What was copied, for the record.
    pub bytes: u64,
    pub files: u64,
}

impl Sandbox {
    /// Copy `source` (a directory) to `dest` (which must not exist yet), skipping
    /// `exclude` and the folders described in the module doc.
    pub fn create(source: &Path, dest: &Path, exclude: &[PathBuf]) -> std::io::Result<Sandbox> {
        if dest.exists() {
            std::fs::remove_dir_all(dest)?;
        }
        std::fs::create_dir_all(dest)?;
        let mut sb = Sandbox {
            root: dest.to_path_buf(),
            bytes: 0,
            files: 0,
        };
        let dest_canon = dest.canonicalize()?;
        let exclude: Vec<PathBuf> = exclude
            .iter()
            .filter_map(|p| p.canonicalize().ok())
            .collect();
        copy_tree(source, dest, &dest_canon, &exclude, &mut sb)?;
        Ok(sb)
    }

    /// Files of the copy that are new or differ from their original in `source` (what a
    /// run wrote into its working directory), relative to it; at most `limit`.
    pub fn changes(&self, source: &Path, limit: usize) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut stack = vec![PathBuf::new()];
        while let Some(rel) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(self.root.join(&rel)) else {
                continue;
            };
            for e in entries.flatten() {
                let rel = rel.join(e.file_name());
                match e.file_type() {
                    Ok(t) if t.is_dir() => stack.push(rel),
                    Ok(t) if t.is_file() => {
                        let same = match (std::fs::read(e.path()), std::fs::read(source.join(&rel)))
                        {
                            (Ok(a), Ok(b)) => a == b,
                            _ => false,
                        };
                        if !same {
                            out.push(rel);
                        }
                    }
                    _ => {}
                }
                if out.len() >= limit {
                    return out;
                }
            }
        }
        out.sort();
        out
    }

    /// The copy of the working directory.
    pub fn cwd(&self) -> &Path {
        &self.root
    }

    /// Where a declared output file lands in this copy: relative paths and absolute paths
    /// inside `source` map into the copy; other absolute paths are left as they are.
    pub fn locate(&self, source: &Path, declared: &Path) -> PathBuf {
        if declared.is_absolute() {
            match declared.strip_prefix(source) {
                Ok(rel) => self.root.join(rel),
                Err(_) => declared.to_path_buf(),
            }
        } else {
            self.root.join(declared)
        }
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn copy_tree(
    from: &Path,
    to: &Path,
    dest_canon: &Path,
    exclude: &[PathBuf],
    sb: &mut Sandbox,
) -> std::io::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let path = entry.path();
        let target = to.join(entry.file_name());
        let kind = entry.file_type()?;
        if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&path)?, &target)?;
        } else if kind.is_dir() {
            if skip_dir(&path, dest_canon, exclude) {
                continue;
            }
            std::fs::create_dir(&target)?;
            copy_tree(&path, &target, dest_canon, exclude, sb)?;
        } else if kind.is_file() {
            sb.bytes += std::fs::copy(&path, &target)?;
            sb.files += 1;
        }
    }
    Ok(())
}

/// Whether copying `source` (with the same skips as [`Sandbox::create`]) would take more
/// than `max_bytes` or `max_files`; stops counting as soon as it would.
pub fn larger_than(source: &Path, exclude: &[PathBuf], max_bytes: u64, max_files: u64) -> bool {
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
                        return true;
                    }
                }
                _ => {}
            }
        }
    }
    false
}

fn skip_dir(dir: &Path, dest_canon: &Path, exclude: &[PathBuf]) -> bool {
    if dir.file_name().is_some_and(|n| n == ".git") || dir.join("CACHEDIR.TAG").exists() {
        return true;
    }
    let Ok(canon) = dir.canonicalize() else {
        return true;
    };
    dest_canon.starts_with(&canon) || exclude.iter().any(|e| canon.starts_with(e))
}

/// A declared output path as a safe relative path under `outputs/<stage>/<w>.files/`:
/// relative to `cwd` when it is inside it, without its root otherwise, `..` spelled `__`.
pub fn saved_name(cwd: &Path, declared: &Path) -> PathBuf {
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
        std::fs::create_dir_all(src.join(".git")).unwrap();
        std::fs::create_dir_all(src.join("big")).unwrap();
        std::fs::write(src.join("big/blob"), "x").unwrap();
        std::os::unix::fs::symlink("top.txt", src.join("link")).unwrap();
        // The copy goes inside the source (as the run folder does), in a non-target dir.
        let dest = src.join("work/runs/1/sandbox/w");
        let sb = Sandbox::create(&src, &dest, &[src.join("big")]).unwrap();
        assert_eq!(
            std::fs::read_to_string(dest.join("data/deep/in.txt")).unwrap(),
            "input"
        );
        assert_eq!(std::fs::read_to_string(dest.join("link")).unwrap(), "top");
        assert!(!dest.join("target").exists());
        assert!(!dest.join(".git").exists());
        assert!(!dest.join("big").exists());
        assert!(!dest.join("work").exists(), "copied itself");
        assert_eq!((sb.files, sb.bytes), (2, 8));
        assert_eq!(
            sb.locate(&src, Path::new("out/r.txt")),
            dest.join("out/r.txt")
        );
        assert_eq!(
            sb.locate(&src, &src.join("out/r.txt")),
            dest.join("out/r.txt")
        );
        assert_eq!(
            sb.locate(&src, Path::new("/elsewhere/r")),
            Path::new("/elsewhere/r")
        );
        drop(sb);
        assert!(!dest.exists(), "removed on drop");
    }

    #[test]
    fn changes_are_new_or_different_files() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("proj");
        std::fs::create_dir_all(src.join("d")).unwrap();
        std::fs::write(src.join("d/keep.txt"), "same").unwrap();
        std::fs::write(src.join("edit.txt"), "before").unwrap();
        let sb = Sandbox::create(&src, &tmp.path().join("copy"), &[]).unwrap();
        assert!(sb.changes(&src, 10).is_empty());
        std::fs::write(sb.cwd().join("edit.txt"), "after").unwrap();
        std::fs::write(sb.cwd().join("d/new.txt"), "x").unwrap();
        assert_eq!(
            sb.changes(&src, 10),
            [Path::new("d/new.txt"), Path::new("edit.txt")]
        );
        assert_eq!(sb.changes(&src, 1).len(), 1);
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
}
