//! A build whose inputs have not changed is not run again, not even as a cargo no-op.
//!
//! After each build, `cache/builds/<key>.json` keeps what the binary was made from: every
//! file of cargo's dep-info (`<bin>.d` beside the binary: the package's sources and those
//! of path dependencies) with its digest, and the binary's own digest. The key holds the
//! settings, the target dir, the toolchain, this tool's version and the build's context:
//! the lock file, the manifests, cargo's config files and the environment cargo and rustc
//! read. Registry dependencies are immutable under the lock file, so their sources need no
//! digest. The next build under the same key reuses the binary in the target dir when every
//! input still has its digest and the binary still has its own; anything else builds.
//!
//! Not seen (and why `--fresh` rebuilds everything): files a build script reads without
//! declaring them, and environment variables outside the prefixes below.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::{BuildSettings, Built, Project};
use crate::store::{file_digest, file_hash, hex, Store};

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
struct Record {
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

/// The build kept under `key`, when every input and the binary are still what they were.
pub(super) fn reusable(store: &Store, key: &str) -> Option<Built> {
    let r: Record = store.get(key)?;
    let unchanged =
        |(path, digest): &(PathBuf, String)| file_hash(path).is_ok_and(|d| d == *digest);
    if !unchanged(&(r.binary.clone(), r.digest.clone())) || !r.inputs.iter().all(unchanged) {
        return None;
    }
    Some(Built {
        binary: r.binary,
        // What building it took: the row describes the candidate, not this run's work
        // (the run's own step records the time it spent).
        seconds: r.seconds,
        stderr: r.stderr,
        command: r.command,
    })
}

/// Keep `built` under `key` with the inputs its dep-info names (nothing is kept when the
/// dep-info is missing or names a file that cannot be read).
pub(super) fn keep(store: &Store, key: &str, built: &Built, root: &Path) {
    let Some(inputs) = dep_info_inputs(&built.binary, root) else {
        return;
    };
    let inputs: Option<Vec<_>> = inputs
        .into_iter()
        .map(|p| file_hash(&p).ok().map(|d| (p, d)))
        .collect();
    let (Some(inputs), Ok(digest)) = (inputs, file_hash(&built.binary)) else {
        return;
    };
    let record = Record {
        binary: built.binary.clone(),
        digest,
        inputs,
        stderr: built.stderr.clone(),
        command: built.command.clone(),
        seconds: built.seconds,
    };
    store.put(key, &record);
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

    #[test]
    fn make_words_keep_escaped_spaces() {
        assert_eq!(
            split_make_words("/a/src/main.rs /a/my\\ dir/x.rs  /b.txt"),
            ["/a/src/main.rs", "/a/my dir/x.rs", "/b.txt"]
        );
    }

    #[test]
    fn a_kept_build_is_reused_until_an_input_or_the_binary_changes() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let bin = root.join("prog");
        let src = root.join("main.rs");
        std::fs::write(&src, "fn main() {}").unwrap();
        std::fs::write(&bin, "ELF one").unwrap();
        std::fs::write(root.join("prog.d"), format!("{}: main.rs\n", bin.display())).unwrap();
        let store = Store::new(root, "builds");
        let built = Built {
            binary: bin.clone(),
            seconds: 3.0,
            stderr: "warning: x".into(),
            command: "cargo build".into(),
        };
        keep(&store, "k", &built, root);
        let again = reusable(&store, "k").expect("unchanged inputs are reused");
        assert_eq!(again.seconds, 3.0, "the row keeps what building it took");
        assert_eq!(again.stderr, "warning: x");
        std::fs::write(&src, "fn main() { loop {} }").unwrap();
        assert!(reusable(&store, "k").is_none(), "a changed source builds");
        std::fs::write(&src, "fn main() {}").unwrap();
        assert!(reusable(&store, "k").is_some());
        std::fs::write(&bin, "ELF two").unwrap();
        assert!(reusable(&store, "k").is_none(), "a changed binary builds");
    }
}
