//! The output folder: each artifact as a plain binary and a `.tar.gz` (byte-for-byte the
//! same for the same binary: fixed owner, mode and time stamp), their SHA-256 sums in
//! `SHA256SUMS` (the `sha256sum -c` format), and the folder put in place at the end as a
//! whole — only over an earlier release (a folder with our `manifest.json`) or an empty one.
//!
//! Must not: build or run anything.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};

use crate::store::file_sha256;

/// The release's description in the output folder (written by `manifest`).
pub(crate) const MANIFEST: &str = "manifest.json";
/// Marks a folder as a release this tool may replace.
pub(crate) const CREATED_BY: &str = "cargo optimize release";

/// One artifact in the output folder.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Packaged {
    pub(crate) file: String,
    pub(crate) size_bytes: u64,
    pub(crate) sha256: String,
    /// The `.tar.gz` of it (none for a wheel, itself an archive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) archive: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) archive_sha256: Option<String>,
}

/// Copy `binary` to `<staging>/<name>` and pack it as `<name>.tar.gz` holding
/// `<name>/<bin>`, stamped with `mtime`.
pub(crate) fn package(
    binary: &Path,
    staging: &Path,
    name: &str,
    bin: &str,
    mtime: u64,
) -> std::io::Result<Packaged> {
    std::fs::create_dir_all(staging)?;
    let file = staging.join(name);
    std::fs::copy(binary, &file)
        .map_err(|e| crate::util::io_error(e, "cannot copy the artifact to", &file))?;
    let archive = staging.join(format!("{name}.tar.gz"));
    write_archive(&file, &archive, &format!("{name}/{bin}"), mtime)?;
    Ok(Packaged {
        file: name.to_string(),
        size_bytes: std::fs::metadata(&file)?.len(),
        sha256: file_sha256(&file)?,
        archive: Some(format!("{name}.tar.gz")),
        archive_sha256: Some(file_sha256(&archive)?),
    })
}

/// A reproducible `.tar.gz` of one executable file.
fn write_archive(file: &Path, archive: &Path, inner: &str, mtime: u64) -> std::io::Result<()> {
    let bytes = std::fs::read(file)?;
    let mut header = tar::Header::new_gnu();
    header.set_size(bytes.len() as u64);
    header.set_mode(0o755);
    header.set_uid(0);
    header.set_gid(0);
    header.set_mtime(mtime);
    header.set_entry_type(tar::EntryType::Regular);
    let out = std::fs::File::create(archive)?;
    // No file name or time in the gzip header: the same input, the same bytes.
    let gz = flate2::GzBuilder::new()
        .mtime(0)
        .write(out, flate2::Compression::best());
    let mut tar = tar::Builder::new(gz);
    tar.mode(tar::HeaderMode::Deterministic);
    tar.append_data(&mut header, inner, bytes.as_slice())?;
    let gz = tar.into_inner()?;
    let mut out = gz.finish()?;
    out.flush()?;
    out.sync_all()
}

/// `SHA256SUMS`: every artifact and archive, sorted by file name.
pub(crate) fn sums(packaged: &[&Packaged]) -> String {
    let mut lines: Vec<(String, String)> = packaged
        .iter()
        .flat_map(|p| {
            let archive = p.archive.clone().zip(p.archive_sha256.clone());
            std::iter::once((p.file.clone(), p.sha256.clone())).chain(archive)
        })
        .collect();
    lines.sort();
    lines
        .iter()
        .map(|(file, sum)| format!("{sum}  {file}\n"))
        .collect()
}

/// The folder a release named `out` is put in place at: `out` made absolute, or, when it is
/// a symlink (a chain of them), the folder it points to — the link stays, the release lands
/// where it leads (renaming over the link would replace it with a folder).
pub(crate) fn out_dir(out: &Path) -> anyhow::Result<PathBuf> {
    let out = crate::util::absolute(out);
    let target = crate::util::atomic::resolve(&out)?;
    Ok(if target.is_absolute() {
        target
    } else {
        crate::util::absolute(&target)
    })
}

/// Whether `out` may be replaced by a release: it does not exist, is empty, or holds an
/// earlier release (our manifest). Checked before anything is built.
pub(crate) fn check_replaceable(out: &Path) -> anyhow::Result<()> {
    let entries = match std::fs::read_dir(out) {
        Ok(e) => e.count(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => bail!(
            "{} is a file, not a folder\n  fix: give another --out-dir, or move the file",
            out.display()
        ),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", out.display())),
    };
    if entries > 0 && !is_release(out) {
        bail!(
            "{} holds files that are not a release of cargo optimize (no {MANIFEST} written by it); a release replaces the whole folder\n  fix: give another --out-dir (or [release] out-dir), or move those files away",
            out.display()
        );
    }
    Ok(())
}

fn is_release(dir: &Path) -> bool {
    std::fs::read(dir.join(MANIFEST))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .is_some_and(|v| v.get("created_by").and_then(|c| c.as_str()) == Some(CREATED_BY))
}

/// Put `staging` in place as `out`: the earlier release is renamed away first and removed
/// after, so `out` is always either the old release or the new one.
pub(crate) fn put_in_place(staging: &Path, out: &Path) -> anyhow::Result<()> {
    check_replaceable(out)?;
    let old: Option<PathBuf> = out.exists().then(|| {
        let mut name = out.as_os_str().to_owned();
        name.push(format!(".old-{}", std::process::id()));
        PathBuf::from(name)
    });
    if let Some(old) = &old {
        std::fs::rename(out, old)
            .with_context(|| format!("cannot move the earlier release {} aside", out.display()))?;
    }
    if let Err(e) = std::fs::rename(staging, out) {
        if let Some(old) = &old {
            let _ = std::fs::rename(old, out);
        }
        return Err(e).with_context(|| {
            format!(
                "cannot move the release into {} (it is in {})",
                out.display(),
                staging.display()
            )
        });
    }
    if let Some(old) = old {
        let _ = std::fs::remove_dir_all(old);
    }
    Ok(())
}

/// Where a release's artifacts are while it runs, this release's alone: a new folder
/// `.<out name>.partial-<pid>[-<random>]` beside `out` (`util::create_fresh_dir`; never one
/// that exists, which may be another release's of the same pid in another PID namespace).
pub(crate) fn create_staging(out: &Path) -> anyhow::Result<PathBuf> {
    let parent = out.parent().unwrap_or(Path::new(""));
    let stem = format!("{}{}", staging_prefix(out), std::process::id());
    let (_, staging) = crate::util::create_fresh_dir(parent, &stem)
        .map_err(|e| crate::util::io_error(e, "cannot create", &parent.join(&stem)))?;
    Ok(staging)
}

fn staging_prefix(out: &Path) -> String {
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "dist".into());
    format!(".{name}.partial-")
}

/// Remove the staging folders of releases that were killed (their process is gone).
pub(crate) fn sweep_stale(out: &Path) {
    let (Some(parent), prefix) = (out.parent(), staging_prefix(out)) else {
        return;
    };
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let pid = name
            .strip_prefix(&prefix)
            .and_then(crate::util::pid_of_fresh_name);
        if pid.is_some_and(|p| !crate::sys::pid_alive(p)) {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_archive_is_the_same_bytes_every_time_and_holds_the_binary() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("b");
        std::fs::write(&bin, b"\x7fELF pretend").unwrap();
        let a = package(&bin, &dir.path().join("one"), "x-1.0-t", "x", 0).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(1100));
        let b = package(&bin, &dir.path().join("two"), "x-1.0-t", "x", 0).unwrap();
        assert_eq!(a.archive_sha256, b.archive_sha256);
        assert!(a.archive_sha256.is_some());
        assert_eq!(a.sha256, file_sha256(&bin).unwrap());
        let f = std::fs::File::open(dir.path().join("one/x-1.0-t.tar.gz")).unwrap();
        let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(f));
        let mut entries = ar.entries().unwrap();
        let mut e = entries.next().unwrap().unwrap();
        assert_eq!(e.path().unwrap().to_str(), Some("x-1.0-t/x"));
        assert_eq!(e.header().mode().unwrap(), 0o755);
        let mut content = Vec::new();
        std::io::Read::read_to_end(&mut e, &mut content).unwrap();
        assert_eq!(content, b"\x7fELF pretend");
        assert!(entries.next().is_none());
    }

    #[test]
    fn two_releases_of_the_same_pid_get_two_staging_folders() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("dist");
        let a = create_staging(&out).unwrap();
        std::fs::write(a.join("artifact"), "a's").unwrap();
        let b = create_staging(&out).unwrap();
        assert_ne!(a, b);
        assert!(
            a.join("artifact").is_file(),
            "the first release's files were removed"
        );
        assert!(b.is_dir() && std::fs::read_dir(&b).unwrap().next().is_none());
        // Both are this live process's: kept by a sweep.
        sweep_stale(&out);
        assert!(a.is_dir() && b.is_dir());
    }

    #[test]
    fn a_killed_release_s_staging_folder_is_swept_and_a_live_one_kept() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("dist");
        let live = create_staging(&out).unwrap();
        let dead = dir.path().join(".dist.partial-4000000000");
        let other = dir.path().join(".other.partial-4000000000");
        for d in [&dead, &other] {
            std::fs::create_dir(d).unwrap();
        }
        sweep_stale(&out);
        assert!(live.exists() && other.exists());
        assert!(!dead.exists(), "a dead release's staging folder was left");
    }

    #[test]
    fn sums_are_sorted_in_sha256sum_format() {
        let p = |f: &str, s: &str| Packaged {
            file: f.into(),
            size_bytes: 1,
            sha256: s.into(),
            archive: Some(format!("{f}.tar.gz")),
            archive_sha256: Some(format!("{s}z")),
        };
        let (b, a) = (p("b", "22"), p("a", "11"));
        assert_eq!(
            sums(&[&b, &a]),
            "11  a\n11z  a.tar.gz\n22  b\n22z  b.tar.gz\n"
        );
    }

    #[test]
    fn only_an_earlier_release_or_nothing_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("dist");
        assert!(check_replaceable(&out).is_ok());
        std::fs::create_dir(&out).unwrap();
        assert!(check_replaceable(&out).is_ok(), "an empty folder");
        std::fs::write(out.join("notes.txt"), "mine").unwrap();
        let e = check_replaceable(&out).unwrap_err().to_string();
        assert!(
            e.contains("not a release") && e.contains("--out-dir"),
            "{e}"
        );
        let staging = dir.path().join("staging");
        std::fs::create_dir(&staging).unwrap();
        std::fs::write(staging.join("a"), "new").unwrap();
        assert!(put_in_place(&staging, &out).is_err());
        assert_eq!(
            std::fs::read_to_string(out.join("notes.txt")).unwrap(),
            "mine"
        );
        // An earlier release is replaced whole.
        std::fs::remove_file(out.join("notes.txt")).unwrap();
        let manifest = format!("{{\"created_by\": \"{}\"}}", CREATED_BY);
        std::fs::write(out.join(MANIFEST), manifest).unwrap();
        std::fs::write(out.join("stale"), "old").unwrap();
        put_in_place(&staging, &out).unwrap();
        assert_eq!(std::fs::read_to_string(out.join("a")).unwrap(), "new");
        assert!(!out.join("stale").exists() && !staging.exists());
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no old folder left"
        );
    }
}
