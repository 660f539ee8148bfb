//! Kept results on disk, and the digests that name them:
//! - [`Store`]: one kind of kept result, `<dir>/<key>.json`, written whole (temporary file +
//!   rename) and checked when read (the key stored inside must be the one asked for and the
//!   entry must parse; anything else is removed and never used);
//! - [`Blobs`]: files kept by their content digest (`<dir>/<digest>`: binaries in
//!   `cache/blobs/`; merged PGO profiles as `cache/<digest>.profdata`, the name the PGO
//!   build's `-Cprofile-use` gives), checked against the digest before they are handed out
//!   and before an existing copy is trusted; a name read from a cache entry is used only when
//!   it is a digest as [`file_hash`] writes it ([`is_blob_name`]), so an entry naming
//!   `../../x` or `/x` reaches nothing outside the cache (neither read nor removed);
//!
//! every write through `util::atomic` (temporary file + rename).
//! - [`file_digest`]: SHA-256 of a file, remembered per path while its size, times, device
//!   and inode hold (`digests`: in the process, and across runs in `cache/digests.json`
//!   once a run asks), so a file that several keys name is read once; [`same_bytes`] on it:
//!   whether two files are byte-identical.
//!
//! Must not: know what is kept (builds, verdicts, trainings: `cache`, `cargo`, the stages).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use sha2::{Digest, Sha256};

mod digests;
pub(crate) use digests::{
    keep as keep_digests, remember_in as remember_digests_in, stamp, written,
};

#[derive(serde::Serialize, serde::Deserialize)]
struct Entry<T> {
    key: String,
    value: T,
}

/// One kind of kept result: `<dir>/<key>.json`.
pub(crate) struct Store {
    dir: PathBuf,
}

impl Store {
    /// `target/optimize/cache/<kind>/`.
    pub(crate) fn new(optimize_dir: &Path, kind: &str) -> Self {
        Store {
            dir: optimize_dir.join("cache").join(kind),
        }
    }

    /// The value kept under `key`, when its entry is sound (else the entry is removed).
    pub(crate) fn get<T: serde::de::DeserializeOwned>(&self, key: &str) -> Option<T> {
        let path = self.path(key);
        let bytes = std::fs::read(&path).ok()?;
        match serde_json::from_slice::<Entry<T>>(&bytes) {
            Ok(e) if e.key == key => {
                touch(&path);
                Some(e.value)
            }
            _ => {
                // Partial, corrupt or misfiled: never used.
                let _ = std::fs::remove_file(&path);
                None
            }
        }
    }

    /// Keep `value` under `key` (best effort: a cache that cannot be written is no error).
    /// Remove the entry under `key`, if any (one that parsed but is not to be trusted).
    pub(crate) fn remove(&self, key: &str) {
        let _ = std::fs::remove_file(self.path(key));
    }

    pub(crate) fn put<T: serde::Serialize>(&self, key: &str, value: &T) {
        let entry = Entry {
            key: key.to_string(),
            value,
        };
        let Ok(json) = serde_json::to_vec(&entry) else {
            return;
        };
        let _ = write_whole(&self.dir, &self.path(key), &json);
    }

    pub(crate) fn path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.json"))
    }
}

/// Files kept by content: `<dir>/<digest><suffix>`.
pub(crate) struct Blobs {
    dir: PathBuf,
    suffix: &'static str,
    /// Binaries are made executable: a kept build is run from its copy.
    executable: bool,
}

/// A file just kept ([`Blobs::keep`]).
pub(crate) struct KeptBlob {
    pub path: PathBuf,
    pub digest: String,
    /// A copy under that digest was there with other bytes (a partial write, a corruption)
    /// and was replaced: whatever used it must be redone.
    pub repaired: bool,
}

impl Blobs {
    /// Executables in `target/optimize/cache/<kind>/`.
    pub(crate) fn new(optimize_dir: &Path, kind: &str) -> Self {
        Blobs {
            dir: optimize_dir.join("cache").join(kind),
            suffix: "",
            executable: true,
        }
    }

    /// Merged PGO profiles: `target/optimize/cache/<digest>.profdata`.
    pub(crate) fn profiles(optimize_dir: &Path) -> Self {
        Blobs {
            dir: optimize_dir.join("cache"),
            suffix: ".profdata",
            executable: false,
        }
    }

    /// Where the blob `digest` is (or would be) kept; `None` when `digest` is not a blob's
    /// name ([`is_blob_name`]): a cache entry naming anything else is not to be trusted.
    pub(crate) fn path_of(&self, digest: &str) -> Option<PathBuf> {
        is_blob_name(digest).then(|| self.dir.join(format!("{digest}{}", self.suffix)))
    }

    /// Keep a copy of `file`; returns its digest (the name to ask for it by).
    pub(crate) fn put(&self, file: &Path) -> std::io::Result<String> {
        Ok(self.keep(file)?.digest)
    }

    /// Keep a copy of `file` unless a sound one is there already.
    pub(crate) fn keep(&self, file: &Path) -> std::io::Result<KeptBlob> {
        let digest = file_hash(file)?;
        let path = self.dir.join(format!("{digest}{}", self.suffix));
        let (sound, repaired) = match file_hash(&path) {
            Ok(d) => (d == digest, d != digest),
            Err(_) => (false, false),
        };
        if !sound {
            std::fs::create_dir_all(&self.dir)?;
            crate::util::atomic::copy(file, &path)?;
        }
        if self.executable {
            crate::sys::set_mode(&path, 0o755)?;
        }
        Ok(KeptBlob {
            path,
            digest,
            repaired,
        })
    }

    /// The kept file named `digest`, when its content still has that digest (else it is
    /// removed). A `digest` that is no blob's name is nothing kept: no file is looked at.
    pub(crate) fn get(&self, digest: &str) -> Option<PathBuf> {
        let path = self.path_of(digest)?;
        match file_hash(&path) {
            Ok(d) if d == digest => {
                touch(&path);
                Some(path)
            }
            Ok(_) => {
                let _ = std::fs::remove_file(&path);
                None
            }
            Err(_) => None,
        }
    }
}

/// Recently used: `cache gc` removes the least recently used first.
fn touch(path: &Path) {
    let _ = std::fs::File::options()
        .write(true)
        .open(path)
        .and_then(|f| f.set_modified(SystemTime::now()));
}

/// Write `bytes` to `path` whole (its folder made first).
fn write_whole(dir: &Path, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    crate::util::atomic::replace(path, bytes)
}

/// The SHA-256 of `path`'s bytes (remembered: [`digests`]).
pub(crate) fn file_digest(path: &Path) -> std::io::Result<[u8; 32]> {
    file_digest_as(path, &std::fs::metadata(path)?)
}

/// [`file_digest`] of a file whose metadata the caller just read (a folder's walk has it
/// from its entries, without resolving each path again).
pub(crate) fn file_digest_as(path: &Path, meta: &std::fs::Metadata) -> std::io::Result<[u8; 32]> {
    digests::digest(path, meta, || read_digest(path))
}

/// Forget every remembered digest, as a later run starts without them (tests of what a
/// later run sees).
#[cfg(test)]
pub(crate) fn forget_digests() {
    digests::forget();
}

fn read_digest(path: &Path) -> std::io::Result<[u8; 32]> {
    let mut f = std::fs::File::open(path)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(h.finalize().into())
}

/// How many bytes of a file's SHA-256 name it: [`file_hash`] writes twice as many hex digits.
const HASH_BYTES: usize = 12;

/// A file's digest as 24 hex digits (names blobs and content-addressed profiles).
pub(crate) fn file_hash(path: &Path) -> std::io::Result<String> {
    Ok(hex(&file_digest(path)?[..HASH_BYTES]))
}

/// Whether `name` is a blob's name: a digest as [`file_hash`] writes it, 24 lowercase hex
/// digits. Every name a cache entry gives for a blob is checked with this before it
/// becomes a path (a path separator, `..` or an absolute path are never one).
pub(crate) fn is_blob_name(name: &str) -> bool {
    name.len() == 2 * HASH_BYTES && name.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// A file's full SHA-256 as 64 hex digits (what `sha256sum` prints).
pub(crate) fn file_sha256(path: &Path) -> std::io::Result<String> {
    Ok(hex(&file_digest(path)?))
}

/// Whether two files hold the same bytes: sizes first, then their SHA-256s ([`file_digest`],
/// remembered). A file that cannot be read counts as different. The one comparison of two
/// binaries: the ladder's byte-identical offer, `check`'s byte-identical old and new builds.
pub(crate) fn same_bytes(a: &Path, b: &Path) -> bool {
    let len = |p: &Path| std::fs::metadata(p).map(|m| m.len());
    match (len(a), len(b)) {
        (Ok(x), Ok(y)) if x == y => {}
        _ => return false,
    }
    match (file_digest(a), file_digest(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

/// The SHA-256 of bytes already read, as 64 hex digits (a file checked and then used
/// from the same bytes).
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_bytes_is_true_only_for_equal_contents() {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n);
        std::fs::write(p("a"), b"abc").unwrap();
        std::fs::write(p("b"), b"abc").unwrap();
        std::fs::write(p("c"), b"abd").unwrap();
        std::fs::write(p("d"), b"abcd").unwrap();
        assert!(same_bytes(&p("a"), &p("b")));
        assert!(!same_bytes(&p("a"), &p("c")));
        assert!(!same_bytes(&p("a"), &p("d")));
        assert!(!same_bytes(&p("a"), &p("missing")));
        assert!(!same_bytes(&p("missing"), &p("missing")));
    }

    #[test]
    fn a_blob_is_handed_out_only_while_it_has_its_digest() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("bin");
        std::fs::write(&src, b"binary one").unwrap();
        let blobs = Blobs::new(dir.path(), "blobs");
        let d = blobs.put(&src).unwrap();
        let kept = blobs.get(&d).unwrap();
        assert_eq!(std::fs::read(&kept).unwrap(), b"binary one");
        let mode = crate::sys::testing::mode(&std::fs::metadata(&kept).unwrap());
        assert_eq!(mode & 0o111, 0o111, "a kept binary can be run: {mode:o}");
        std::fs::write(&kept, b"binary two").unwrap();
        assert!(blobs.get(&d).is_none(), "a changed blob must not be used");
        assert!(!kept.exists(), "and is removed");
        assert!(blobs.get("0123").is_none());
    }

    #[test]
    fn a_blob_name_that_is_no_digest_reaches_nothing_outside_the_cache() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("precious");
        std::fs::write(&outside, b"user data").unwrap();
        let blobs = Blobs::new(&dir.path().join("optimize"), "blobs");
        // From `optimize/cache/blobs/`, three levels up is `dir`.
        let absolute = outside.display().to_string();
        for name in [
            "../../../precious",
            &absolute,
            "",
            "ABCDEF0123456789abcdef01",
        ] {
            assert!(blobs.get(name).is_none(), "{name:?}");
            assert!(
                outside.exists(),
                "{name:?} removed a file outside the cache"
            );
            assert!(blobs.path_of(name).is_none(), "{name:?}");
        }
        assert_eq!(std::fs::read(&outside).unwrap(), b"user data");
        assert!(is_blob_name(&file_hash(&outside).unwrap()));
    }

    #[test]
    fn a_digest_follows_the_file_when_it_changes() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        std::fs::write(&f, b"a").unwrap();
        let one = file_hash(&f).unwrap();
        assert_eq!(file_hash(&f).unwrap(), one);
        std::fs::write(&f, b"bb").unwrap();
        assert_ne!(file_hash(&f).unwrap(), one);
    }

    #[test]
    fn a_store_entry_under_another_key_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::new(dir.path(), "k");
        s.put("a", &5u32);
        assert_eq!(s.get::<u32>("a"), Some(5));
        std::fs::rename(
            dir.path().join("cache/k/a.json"),
            dir.path().join("cache/k/b.json"),
        )
        .unwrap();
        assert_eq!(s.get::<u32>("b"), None);
        assert!(!dir.path().join("cache/k/b.json").exists());
    }
}
