//! A build whose inputs have not changed is not run again, not even as a cargo no-op.
//!
//! After each build, `cache/builds/<key>.json` keeps what the binary was made from: every
//! file of cargo's dep-info (`<bin>.d` beside the binary: the package's sources and those
//! of path dependencies) with its digest, and the binary's own digest; the binary itself is
//! kept in `cache/blobs/`. The key holds the settings, the target dir, the toolchain, this
//! tool's version and the build's context: the lock file, the manifests, cargo's config
//! files and the environment cargo and rustc read. Registry dependencies are immutable
//! under the lock file, so their sources need no digest. A key keeps its last
//! [`KEPT_PER_KEY`] builds, so going back to an earlier version of the sources (a reverted
//! edit) builds nothing either. A build is reused when every input of one of them still
//! has its digest, with its binary from the target dir when that is still the one it
//! built, else from its kept copy (checked against its digest); anything else builds.
//! When cargo calls a build fresh but the target dir's binary is no longer the one a kept
//! record of the same inputs says it built (truncated or edited: cargo judges freshness by
//! file times, not bytes), the binary and its `deps/` original are removed and cargo links
//! it again ([`tampered`], [`remove_output`]), so a damaged output is never kept or reused.
//! A record is trusted only when the binary it names lies inside the target dir its key
//! holds and its blob's name is a digest ([`trusted`]), and handed out only when its binary
//! is a whole executable for the target (`executable::check`); any other is dropped from the
//! entry, so an edited record can make us neither run nor remove a file elsewhere. A binary
//! that is not a whole executable is never kept.
//!
//! Not seen (and why `--fresh` rebuilds everything): files a build script reads without
//! declaring them, and environment variables outside the prefixes below.

use std::path::{Component, Path, PathBuf};

use sha2::{Digest, Sha256};

use super::{BuildSettings, Built, Project};
use crate::store::{file_digest, file_hash, hex, is_blob_name, Blobs, Store};

/// Environment variables that can change what cargo or rustc produce.
const ENV_PREFIXES: &[&str] = &[
    "CARGO_",
    "RUSTC",
    "RUSTFLAGS",
    "RUSTDOC",
    "CC",
    "CXX",
    "CFLAGS",
    "CXXFLAGS",
    "LDFLAGS",
    "AR",
    "TARGET_",
];

/// Set by cargo (through rustup) for `cargo optimize` but not for `cargo-optimize`, and
/// deciding nothing the key does not hold already: which cargo runs shows in the
/// toolchain's version line, and where the registry lives does not change sources the lock
/// file pins.
const NOT_DECIDING: &[&str] = &["CARGO", "CARGO_HOME"];

/// What a reusable build left behind.
#[derive(serde::Serialize, serde::Deserialize)]
struct BuildRecord {
    binary: PathBuf,
    digest: String,
    /// Every input file of the dep-info with its digest.
    inputs: Vec<(PathBuf, String)>,
    stderr: String,
    command: String,
    seconds: f64,
}

/// The key of building `settings` into `target_dir` with `toolchain` here and now.
pub(super) fn key(
    project: &Project,
    settings: &BuildSettings,
    target_dir: &Path,
    toolchain: &str,
) -> String {
    let mut h = Sha256::new();
    h.update(env!("CARGO_PKG_VERSION"));
    h.update(toolchain);
    h.update(serde_json::to_vec(settings).unwrap_or_default());
    // The package and target built (`--bin a` and `--bin b` share a target dir). Not where a
    // relink's crates are compiled: its base's build dir once the base is built, else its
    // own, the same binary either way (with it in the key, a re-run whose base is built
    // would relink again a binary it keeps).
    let args = super::relink::without_build_dir(settings.cargo_args(project, target_dir));
    h.update(args.join("\x1f"));
    h.update(target_dir.as_os_str().as_encoded_bytes());
    let mut files = vec![
        project.workspace_root.join("Cargo.lock"),
        project.workspace_root.join("Cargo.toml"),
        project.manifest_path.clone(),
    ];
    files.extend(
        super::config_dirs(project)
            .iter()
            .flat_map(|d| [d.join("config.toml"), d.join("config")]),
    );
    for f in files {
        h.update(f.as_os_str().as_encoded_bytes());
        if let Ok(d) = file_digest(&f) {
            h.update(d);
        }
    }
    let mut env: Vec<(String, String)> = std::env::vars()
        .filter(|(k, _)| ENV_PREFIXES.iter().any(|p| k.starts_with(p)))
        .filter(|(k, _)| !NOT_DECIDING.contains(&k.as_str()))
        .collect();
    env.sort();
    h.update(format!("{env:?}"));
    hex(&h.finalize()[..16])
}

/// How many builds one key keeps, newest first: enough to go back and forth between a few
/// versions of the sources without building.
const KEPT_PER_KEY: usize = 4;

/// Where a build goes: its target dir, and the `--target` its binary is for (`None`: this
/// host).
#[derive(Clone, Copy)]
pub(super) struct CopyDest<'a> {
    pub target_dir: &'a Path,
    pub target: Option<&'a str>,
}

/// The records kept under `key` (builds into `target_dir`) that can be trusted; the others
/// are dropped from the entry.
fn trusted(store: &Store, key: &str, target_dir: &Path) -> Vec<BuildRecord> {
    let mut records: Vec<BuildRecord> = store.get(key).unwrap_or_default();
    let before = records.len();
    records.retain(|r| is_blob_name(&r.digest) && in_target_dir(&r.binary, target_dir));
    if records.len() != before {
        store.put(key, &records);
    }
    records
}

/// Whether `binary` is a file of `target_dir`: resolved (symlinks followed) when it exists,
/// else named below it without `..`.
fn in_target_dir(binary: &Path, target_dir: &Path) -> bool {
    if std::fs::symlink_metadata(binary).is_ok() {
        return crate::util::lies_inside(binary, target_dir);
    }
    binary.strip_prefix(target_dir).is_ok_and(|rest| {
        rest.components().next().is_some()
            && rest.components().all(|c| matches!(c, Component::Normal(_)))
    })
}

/// A build kept under `key` (built to `dest`) whose inputs all still have their digests,
/// and whose binary is a whole executable for the target (else the record is dropped).
pub(super) fn reusable(store: &Store, blobs: &Blobs, key: &str, dest: CopyDest) -> Option<Built> {
    let unchanged =
        |(path, digest): &(PathBuf, String)| file_hash(path).is_ok_and(|d| d == *digest);
    let r = trusted(store, key, dest.target_dir)
        .into_iter()
        .find(|r| r.inputs.iter().all(unchanged))?;
    // The target dir holds only the newest build of these settings.
    let binary = if unchanged(&(r.binary.clone(), r.digest.clone())) {
        r.binary
    } else {
        blobs.get(&r.digest)?
    };
    if super::executable::check(&binary, dest.target).is_err() {
        // A record of something that is no executable for the target: never run it.
        let mut records = trusted(store, key, dest.target_dir);
        records.retain(|k| k.inputs != r.inputs);
        store.put(key, &records);
        return None;
    }
    Some(Built {
        binary,
        // What building it took: the row describes the candidate, not this run's work
        // (the run's own step records the time it spent).
        seconds: r.seconds,
        stderr: r.stderr,
        command: r.command,
        peak_rss_bytes: None,
    })
}

/// When `binary` is the target dir's binary of a build kept under `key` whose inputs all
/// still have their digests, but no longer has that build's digest (truncated, edited):
/// the recorded digest. Cargo cannot see this (a fresh artifact is judged by file times).
pub(super) fn tampered(
    store: &Store,
    key: &str,
    target_dir: &Path,
    binary: &Path,
) -> Option<String> {
    let unchanged =
        |(path, digest): &(PathBuf, String)| file_hash(path).is_ok_and(|d| d == *digest);
    let r = trusted(store, key, target_dir)
        .into_iter()
        .find(|r| r.binary == binary && r.inputs.iter().all(unchanged))?;
    (!unchanged(&(r.binary, r.digest.clone()))).then_some(r.digest)
}

/// Remove `binary` and cargo's own copy of it in `deps` (the file it is a hard link of, or
/// one with the same bytes; `None`: the `deps/` beside it), so the next build links it
/// again: cargo rebuilds a unit whose output is missing. Says what was removed.
pub(super) fn remove_output(binary: &Path, deps: Option<&Path>) -> String {
    let mut removed = Vec::new();
    let same = std::fs::metadata(binary)
        .ok()
        .and_then(|m| crate::sys::file_id(&m));
    let digest = file_hash(binary).ok();
    let stem = binary
        .file_stem()
        .map(|s| format!("{}-", s.to_string_lossy()));
    let deps = deps
        .map(Path::to_path_buf)
        .or_else(|| binary.parent().map(|d| d.join("deps")));
    let entries = deps.and_then(|d| std::fs::read_dir(d).ok());
    for e in entries.into_iter().flatten().flatten() {
        let path = e.path();
        // `deps/` names a binary with `_` for `-`: `my-bin` is `deps/my_bin-<hash>`.
        let named = stem.as_ref().is_some_and(|s| {
            let name = e.file_name().to_string_lossy().replace('-', "_");
            name.starts_with(&s.replace('-', "_")) && path.extension().is_none()
        });
        let meta = e.metadata().ok();
        let linked = same.is_some() && meta.and_then(|m| crate::sys::file_id(&m)) == same;
        let copied = named && digest.is_some() && file_hash(&path).ok() == digest;
        if (linked || copied) && std::fs::remove_file(&path).is_ok() {
            removed.push(path.display().to_string());
        }
    }
    if std::fs::remove_file(binary).is_ok() {
        removed.insert(0, binary.display().to_string());
    }
    if removed.is_empty() {
        "nothing could be removed".into()
    } else {
        removed.join(", ")
    }
}

/// Keep `built` (built to `dest`) under `key` with the inputs its dep-info names, and a
/// copy of its binary (nothing is kept when the binary is not a whole executable for the
/// target, or the dep-info is missing or names a file that cannot be read).
pub(super) fn keep(
    store: &Store,
    blobs: &Blobs,
    key: &str,
    built: &Built,
    dest: CopyDest,
    root: &Path,
) {
    // A binary that is not a whole executable (cut short, not for the target) is never kept.
    if super::executable::check(&built.binary, dest.target).is_err() {
        return;
    }
    let Some(inputs) = dep_info_inputs(&built.binary, root) else {
        return;
    };
    let inputs: Option<Vec<_>> = inputs
        .into_iter()
        .map(|p| file_hash(&p).ok().map(|d| (p, d)))
        .collect();
    let (Some(inputs), Ok(digest)) = (inputs, blobs.put(&built.binary)) else {
        return;
    };
    let record = BuildRecord {
        binary: built.binary.clone(),
        digest,
        inputs,
        stderr: built.stderr.clone(),
        command: built.command.clone(),
        seconds: built.seconds,
    };
    let mut records = trusted(store, key, dest.target_dir);
    records.retain(|r| r.inputs != record.inputs);
    records.insert(0, record);
    records.truncate(KEPT_PER_KEY);
    store.put(key, &records);
}

/// The files cargo's dep-info (`<binary>.d`) says the binary depends on; relative paths
/// are taken from `root` (cargo's `build.dep-info-basedir`).
fn dep_info_inputs(binary: &Path, root: &Path) -> Option<Vec<PathBuf>> {
    let text = std::fs::read_to_string(binary.with_extension("d")).ok()?;
    let (_, deps) = text.lines().next()?.split_once(": ")?;
    Some(
        split_make_words(deps)
            .into_iter()
            .map(|w| root.join(w))
            .collect(),
    )
}

/// Make's words: separated by spaces, `\ ` is a space inside a word.
fn split_make_words(s: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&' ') => {
                cur.push(' ');
                chars.next();
            }
            ' ' => {
                if !cur.is_empty() {
                    words.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cargo::executable::{tiny_elf, TINY_TARGET};

    fn dest(target_dir: &Path) -> CopyDest<'_> {
        CopyDest {
            target_dir,
            target: Some(TINY_TARGET),
        }
    }

    #[test]
    fn make_words_keep_escaped_spaces() {
        assert_eq!(
            split_make_words("/a/src/main.rs /a/my\\ dir/x.rs  /b.txt"),
            ["/a/src/main.rs", "/a/my dir/x.rs", "/b.txt"]
        );
    }

    #[test]
    fn a_changed_target_dir_binary_is_found_and_removed_with_its_deps_link() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir(root.join("deps")).unwrap();
        let (bin, linked) = (root.join("my-prog"), root.join("deps/my_prog-0123abcd"));
        std::fs::write(&linked, tiny_elf(b"whole")).unwrap();
        std::fs::hard_link(&linked, &bin).unwrap();
        std::fs::write(root.join("deps/my_prog-0123abcd.d"), "x").unwrap();
        std::fs::write(
            root.join("my-prog.d"),
            format!("{}: main.rs\n", bin.display()),
        )
        .unwrap();
        std::fs::write(root.join("main.rs"), "fn main() {}").unwrap();
        let (store, blobs) = (Store::new(root, "builds"), Blobs::new(root, "blobs"));
        let built = Built {
            binary: bin.clone(),
            seconds: 1.0,
            stderr: String::new(),
            command: "cargo build".into(),
            peak_rss_bytes: None,
        };
        keep(&store, &blobs, "k", &built, dest(root), root);
        assert_eq!(tampered(&store, "k", root, &bin), None, "as built");
        std::fs::write(&bin, tiny_elf(b"edited")).unwrap();
        let recorded = tampered(&store, "k", root, &bin).expect("a changed binary is seen");
        let records: Vec<BuildRecord> = store.get("k").unwrap();
        assert_eq!(recorded, records[0].digest);
        let removed = remove_output(&bin, None);
        assert!(!bin.exists() && !linked.exists(), "{removed}");
        assert!(
            root.join("deps/my_prog-0123abcd.d").exists(),
            "only the binary goes"
        );
    }

    #[test]
    fn a_kept_build_is_reused_while_its_inputs_are_and_an_earlier_one_comes_back() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let bin = root.join("prog");
        let src = root.join("main.rs");
        std::fs::write(root.join("prog.d"), format!("{}: main.rs\n", bin.display())).unwrap();
        let (store, blobs) = (Store::new(root, "builds"), Blobs::new(root, "blobs"));
        let build = |source: &str, binary: &[u8]| {
            std::fs::write(&src, source).unwrap();
            std::fs::write(&bin, tiny_elf(binary)).unwrap();
            let built = Built {
                binary: bin.clone(),
                seconds: 3.0,
                stderr: "warning: x".into(),
                command: "cargo build".into(),
                peak_rss_bytes: None,
            };
            keep(&store, &blobs, "k", &built, dest(root), root);
        };
        let reused = |source: &str| {
            std::fs::write(&src, source).unwrap();
            reusable(&store, &blobs, "k", dest(root))
                .map(|b| (std::fs::read(&b.binary).unwrap(), b))
        };
        build("fn main() {}", b"one");
        let (content, again) = reused("fn main() {}").expect("unchanged inputs are reused");
        assert_eq!(content, tiny_elf(b"one"));
        assert_eq!(again.seconds, 3.0, "the row keeps what building it took");
        assert_eq!(again.stderr, "warning: x");
        assert_eq!(
            again.binary, bin,
            "the target dir's binary while it is this build's"
        );
        assert!(
            reused("fn main() { loop {} }").is_none(),
            "a changed source builds"
        );

        // A second version, then back to the first: its binary comes from its kept copy.
        build("fn main() { loop {} }", b"two");
        assert_eq!(reused("fn main() { loop {} }").unwrap().0, tiny_elf(b"two"));
        let (content, back) = reused("fn main() {}").expect("a reverted edit builds nothing");
        assert_eq!(content, tiny_elf(b"one"));
        assert_ne!(back.binary, bin);

        // A kept copy that no longer has its digest is never used.
        std::fs::write(&back.binary, tiny_elf(b"bad")).unwrap();
        assert!(reused("fn main() {}").is_none());
    }

    #[test]
    fn a_record_naming_a_file_outside_its_target_dir_or_no_blob_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::create_dir(&target).unwrap();
        let (store, blobs) = (
            Store::new(dir.path(), "builds"),
            Blobs::new(dir.path(), "blobs"),
        );
        let script = dir.path().join("evil.sh");
        std::fs::write(&script, "#!/bin/sh\necho owned\n").unwrap();
        let src = dir.path().join("main.rs");
        std::fs::write(&src, "fn main() {}").unwrap();
        let record = |binary: &Path, digest: String| BuildRecord {
            binary: binary.to_path_buf(),
            digest,
            inputs: vec![(src.clone(), file_hash(&src).unwrap())],
            stderr: String::new(),
            command: "cargo build".into(),
            seconds: 1.0,
        };
        let digest = file_hash(&script).unwrap();
        // Named outright, through `..` and with a blob name that climbs out of the cache.
        let escape = target.join("..").join("evil.sh");
        for r in [
            record(&script, digest.clone()),
            record(&escape, digest.clone()),
            record(&target.join("prog"), "../../evil.sh".into()),
        ] {
            store.put("k", &vec![r]);
            assert!(reusable(&store, &blobs, "k", dest(&target)).is_none());
            assert!(tampered(&store, "k", &target, &script).is_none());
            let left: Vec<BuildRecord> = store.get("k").unwrap();
            assert!(left.is_empty(), "the untrusted record is dropped");
            assert!(script.exists(), "and nothing outside is removed");
        }
    }

    /// A record of a file in the target dir whose digest matches but that is no executable
    /// (a script), or an executable cut short: dropped, never handed out; a cut binary is
    /// never kept.
    #[test]
    fn a_record_of_no_whole_executable_is_dropped_and_a_cut_binary_is_never_kept() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let (store, blobs) = (Store::new(root, "builds"), Blobs::new(root, "blobs"));
        let (bin, src) = (root.join("prog"), root.join("main.rs"));
        std::fs::write(&src, "fn main() {}").unwrap();
        std::fs::write(root.join("prog.d"), format!("{}: main.rs\n", bin.display())).unwrap();
        let whole = tiny_elf(b"one");
        for bytes in [
            b"#!/bin/sh\necho owned\n".to_vec(),
            whole[..whole.len() - 1].to_vec(),
        ] {
            std::fs::write(&bin, &bytes).unwrap();
            let record = BuildRecord {
                binary: bin.clone(),
                digest: file_hash(&bin).unwrap(),
                inputs: vec![(src.clone(), file_hash(&src).unwrap())],
                stderr: String::new(),
                command: "cargo build".into(),
                seconds: 1.0,
            };
            store.put("k", &vec![record]);
            assert!(reusable(&store, &blobs, "k", dest(root)).is_none());
            let left: Vec<BuildRecord> = store.get("k").unwrap();
            assert!(left.is_empty(), "the record is dropped");
            let built = Built {
                binary: bin.clone(),
                seconds: 1.0,
                stderr: String::new(),
                command: "cargo build".into(),
                peak_rss_bytes: None,
            };
            keep(&store, &blobs, "k", &built, dest(root), root);
            let left: Vec<BuildRecord> = store.get("k").unwrap();
            assert!(left.is_empty(), "nothing is kept of it");
            assert!(blobs.get(&file_hash(&bin).unwrap()).is_none(), "no blob");
        }
        std::fs::write(&bin, &whole).unwrap();
        let built = Built {
            binary: bin.clone(),
            seconds: 1.0,
            stderr: String::new(),
            command: "cargo build".into(),
            peak_rss_bytes: None,
        };
        keep(&store, &blobs, "k", &built, dest(root), root);
        assert!(
            reusable(&store, &blobs, "k", dest(root)).is_some(),
            "a whole one is"
        );
    }
}
