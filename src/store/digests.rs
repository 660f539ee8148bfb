//! Files' SHA-256 digests, remembered by what their metadata says of them ([`Stamp`]):
//! within the process, and from one run to the next once a run names the file that keeps
//! them ([`remember_in`], then [`keep`]), so an unchanged re-run does not read its inputs
//! and binaries again.
//!
//! Why across runs: an unchanged re-run's keys name the same files, and reading them is
//! most of its time when the inputs are large. A digest is reused only while the file's
//! size, modification time, device, inode and status-change time all hold (any write moves
//! the last, and no user can set it back), and never for a file changed within two seconds
//! of its reading: git's "racily clean" rule, as a change in the same timestamp tick would
//! go unseen.
//! Figures: docs/src/decisions.md, "File digests are kept across runs".

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A file changed this recently may change again within the same timestamp tick (file
/// times are coarse), so its digest is not remembered.
const RACY: Duration = Duration::from_secs(2);

/// What a file's metadata says of its content: a remembered digest holds while it is equal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Stamp {
    len: u64,
    /// Modification time since the epoch (seconds, nanoseconds).
    modified: (u64, u32),
    /// `sys::change_stamp`: device, inode, status change (seconds, nanoseconds).
    change: [i64; 4],
}

impl Stamp {
    /// `meta`'s stamp; `None` when the file changed too recently to be remembered ([`RACY`],
    /// or its times are in the future or before the epoch).
    fn of(meta: &std::fs::Metadata, now: SystemTime) -> Option<Stamp> {
        let stamp = Stamp::read(meta)?;
        let [_, _, secs, nanos] = stamp.change;
        let changed = Duration::new(secs.max(0) as u64, nanos.clamp(0, 999_999_999) as u32);
        let modified = Duration::new(stamp.modified.0, stamp.modified.1);
        let now = now.duration_since(UNIX_EPOCH).ok()?;
        match now.saturating_sub(modified.max(changed)) < RACY {
            true => None,
            false => Some(stamp),
        }
    }

    /// `meta`'s stamp, however recent.
    fn read(meta: &std::fs::Metadata) -> Option<Stamp> {
        let modified = meta.modified().ok()?.duration_since(UNIX_EPOCH).ok()?;
        Some(Stamp {
            len: meta.len(),
            modified: (modified.as_secs(), modified.subsec_nanos()),
            change: crate::sys::change_stamp(meta),
        })
    }
}

struct Remembered {
    stamp: Stamp,
    digest: [u8; 32],
    /// Read or looked up by this process: what [`keep`] writes.
    used: bool,
}

#[derive(Default)]
struct Memo {
    files: HashMap<PathBuf, Remembered>,
    /// Where [`keep`] writes them ([`remember_in`]).
    keep_in: Option<PathBuf>,
}

static MEMO: Mutex<Option<Memo>> = Mutex::new(None);

fn with_memo<T>(f: impl FnOnce(&mut Memo) -> T) -> T {
    let mut memo = MEMO.lock().unwrap_or_else(|e| e.into_inner());
    f(memo.get_or_insert_with(Memo::default))
}

/// One line of the file [`keep`] writes.
#[derive(serde::Serialize, serde::Deserialize)]
struct Kept {
    path: String,
    stamp: Stamp,
    digest: String,
}

/// The digest of `path` (whose metadata is `meta`): remembered while its stamp holds, else
/// `read` and remembered.
pub(super) fn digest(
    path: &Path,
    meta: &std::fs::Metadata,
    read: impl FnOnce() -> std::io::Result<[u8; 32]>,
) -> std::io::Result<[u8; 32]> {
    digest_at(path, meta, SystemTime::now(), read)
}

/// [`digest`] as at `now` (what is racy depends on it).
fn digest_at(
    path: &Path,
    meta: &std::fs::Metadata,
    now: SystemTime,
    read: impl FnOnce() -> std::io::Result<[u8; 32]>,
) -> std::io::Result<[u8; 32]> {
    let Some(stamp) = Stamp::read(meta) else {
        return read();
    };
    // A remembered stamp was not racy when it was remembered (or the file was this
    // process's own, [`written`]): the same stamp now is the same file.
    let known = with_memo(|m| {
        let r = m.files.get_mut(path).filter(|r| r.stamp == stamp)?;
        r.used = true;
        Some(r.digest)
    });
    if let Some(d) = known {
        return Ok(d);
    }
    let digest = read()?;
    if Stamp::of(meta, now).is_some() {
        remember(path, stamp, digest);
    }
    Ok(digest)
}

/// `path` has `digest` while it keeps `stamp`, used by this process.
fn remember(path: &Path, stamp: Stamp, digest: [u8; 32]) {
    let r = Remembered {
        stamp,
        digest,
        used: true,
    };
    with_memo(|m| m.files.insert(path.to_path_buf(), r));
}

/// That `path`, a file this process just wrote whole with bytes whose digest is `digest`,
/// has it while its stamp holds, however recent: the run folder's copies of candidates'
/// binaries, which nothing else writes (else each was read again for every key naming it,
/// for two seconds after the copy in a run, and in every re-run, since each run copies
/// them anew: a large share of an unchanged re-run).
pub(crate) fn written(path: &Path, digest: [u8; 32]) {
    if let Some(stamp) = stamp(path) {
        remember(path, stamp, digest);
    }
}

/// What `path`'s metadata says of its content now (`None`: no such file): equal stamps
/// before and after, say, a copy from it mean it did not change meanwhile.
pub(crate) fn stamp(path: &Path) -> Option<Stamp> {
    Stamp::read(&std::fs::metadata(path).ok()?)
}

/// Remember digests across runs in `file`: those it holds are known from now on (each
/// still checked against its file's stamp), and [`keep`] writes this process's there. A
/// missing or unreadable file is no digest known. Unix only: elsewhere a stamp has no
/// status-change time, and a rewrite that restores the size and modification time would
/// go unseen by a later run.
pub(crate) fn remember_in(file: &Path) {
    if !cfg!(unix) {
        return;
    }
    let kept: Vec<Kept> = (std::fs::read(file).ok())
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default();
    with_memo(|m| {
        m.keep_in = Some(file.to_path_buf());
        for k in kept {
            let Some(digest) = from_hex(&k.digest) else {
                continue;
            };
            let r = Remembered {
                stamp: k.stamp,
                digest,
                used: false,
            };
            m.files.entry(PathBuf::from(k.path)).or_insert(r);
        }
    });
}

/// Write the digests this process used to the file [`remember_in`] named, whole (nothing
/// without one). Best effort: a digest not kept is read again by the next run.
pub(crate) fn keep() {
    let (file, kept) = with_memo(|m| {
        let kept: Vec<Kept> = (m.files.iter())
            .filter(|(_, r)| r.used)
            .filter_map(|(path, r)| {
                Some(Kept {
                    path: path.to_str()?.to_string(),
                    stamp: r.stamp,
                    digest: super::hex(&r.digest),
                })
            })
            .collect();
        (m.keep_in.clone(), kept)
    });
    let (Some(file), Ok(bytes)) = (file, serde_json::to_vec(&kept)) else {
        return;
    };
    if let Some(dir) = file.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let _ = crate::util::atomic::replace(&file, &bytes);
}

fn from_hex(s: &str) -> Option<[u8; 32]> {
    let mut out = [0u8; 32];
    if s.len() != 64 {
        return None;
    }
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// Held by a test that counts reads of the process-wide memo, and by [`forget`]: another
/// test's forgetting would change what it counts.
#[cfg(test)]
static SERIAL: Mutex<()> = Mutex::new(());

/// Forget every remembered digest and the file, as a later run starts (tests of what a
/// later run sees).
#[cfg(test)]
pub(crate) fn forget() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    clear();
}

#[cfg(test)]
fn clear() {
    *MEMO.lock().unwrap_or_else(|e| e.into_inner()) = None;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A digest kept by one run is the next run's without reading the file, while the file
    /// keeps its stamp; a rewrite with the same size and modification time still changes
    /// its status-change time, and is read again; a file just changed is never remembered,
    /// unless this process wrote it.
    #[test]
    fn a_kept_digest_serves_the_next_run_until_the_file_changes() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("input");
        std::fs::write(&file, "one").unwrap();
        let keep_in = dir.path().join("cache/digests.json");
        let reads = std::cell::Cell::new(0);
        // As a minute later: the file is no longer racy.
        let later = SystemTime::now() + Duration::from_secs(60);
        let digest_of = |path: &Path| {
            let meta = std::fs::metadata(path).unwrap();
            digest_at(path, &meta, later, || {
                reads.set(reads.get() + 1);
                Ok(super::super::read_digest(path).unwrap())
            })
            .unwrap()
        };
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        clear();
        remember_in(&keep_in);
        let first = digest_of(&file);
        keep();
        assert!(keep_in.is_file());
        // The next run: nothing in memory, the file read back.
        clear();
        remember_in(&keep_in);
        assert_eq!(digest_of(&file), first);
        assert_eq!(reads.get(), 1, "not read again");
        // The same size and modification time, other bytes.
        let mtime = std::fs::metadata(&file).unwrap().modified().unwrap();
        std::fs::write(&file, "two").unwrap();
        let f = std::fs::File::options().write(true).open(&file).unwrap();
        f.set_modified(mtime).unwrap();
        drop(f);
        let now = digest_of(&file);
        assert_ne!(now, first);
        assert_eq!(now, super::super::read_digest(&file).unwrap());
        // Just changed: read every time, never remembered.
        std::fs::write(&file, "three").unwrap();
        let meta = std::fs::metadata(&file).unwrap();
        for _ in 0..2 {
            let racy = digest(&file, &meta, || Ok([7; 32])).unwrap();
            assert_eq!(racy, [7; 32], "read, not remembered");
        }
        // Unless this process wrote it whole, knowing its digest.
        written(&file, [9; 32]);
        assert_eq!(digest(&file, &meta, || Ok([7; 32])).unwrap(), [9; 32]);
        clear();
    }

    /// A kept file that does not parse, or names a digest that is none, is nothing known.
    #[test]
    fn a_damaged_file_of_digests_is_nothing_known() {
        let dir = tempfile::tempdir().unwrap();
        let keep_in = dir.path().join("digests.json");
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        for text in [
            "{not json",
            r#"[{"path":"/x","stamp":{"len":1,"modified":[1,0],"change":[0,0,0,0]},"digest":"zz"}]"#,
        ] {
            std::fs::write(&keep_in, text).unwrap();
            clear();
            remember_in(&keep_in);
            assert_eq!(with_memo(|m| m.files.len()), 0, "{text}");
        }
        assert_eq!(from_hex(&"ab".repeat(32)), Some([0xab; 32]));
        assert_eq!(from_hex("ab"), None);
        clear();
    }
}
