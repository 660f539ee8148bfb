//! What a command reads, and the page cache: the files a command names (a cold start
//! evicts them, a warm comparison reads them in, cached results are keyed by them), and
//! priming and eviction of one file.

use std::path::{Path, PathBuf};

use crate::sys;

/// The files a command names: `stdin`, and each argument that names an existing file or
/// folder, or whose value after its first `=` does (`--input=FILE`, `if=FILE`); relative
/// ones under `cwd`. A flag joined to its path without `=` (`-iFILE`) is not seen. A cold
/// start evicts them; a warm comparison reads them in; cached results are keyed by them.
pub(crate) fn named_files<'a>(
    cwd: &Path,
    args: impl IntoIterator<Item = &'a Path>,
    stdin: Option<&'a Path>,
) -> Vec<PathBuf> {
    let resolve = |p: &Path| {
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            cwd.join(p)
        }
    };
    let mut files = Vec::new();
    for arg in args {
        let whole = resolve(arg);
        if whole.exists() {
            files.push(whole);
            continue;
        }
        let value = arg.to_str().and_then(|a| a.split_once('=')).map(|(_, v)| v);
        let named = value
            .filter(|v| !v.is_empty())
            .map(|v| resolve(Path::new(v)));
        files.extend(named.filter(|p| p.exists()));
    }
    files.extend(stdin.map(resolve).filter(|p| p.exists()));
    files
}

/// The most of one file [`prime`] reads; beyond it, the kernel is asked to read ahead.
const PRIME_MAX: u64 = 256 << 20;

/// Read a regular file into the page cache (best effort: anything else, or a file that
/// cannot be read, is left alone), so that the first timed run of a warm comparison does not
/// pay for the disk. Past [`PRIME_MAX`] only read-ahead is requested, so a huge input never
/// holds the comparison up for long.
pub(crate) fn prime(path: &Path) {
    use std::io::Read;
    // Look before opening: opening a named pipe waits for a writer that may never come.
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return;
    }
    let Ok(mut f) = std::fs::File::open(path) else {
        return;
    };
    match f.metadata() {
        Ok(m) if m.is_file() && m.len() <= PRIME_MAX => {
            let _ = std::io::copy(&mut (&mut f).take(PRIME_MAX), &mut std::io::sink());
        }
        Ok(m) if m.is_file() => sys::read_ahead(&f),
        _ => {}
    }
}

/// Drop `path`'s pages from the page cache (best effort: written back first; a file that
/// cannot be opened is left alone, and the run is then as warm as it is; so is a run where
/// the OS cannot drop pages: `sys::CAN_EVICT`).
pub(crate) fn evict(path: &Path) {
    let Ok(f) = std::fs::File::open(path) else {
        return;
    };
    let _ = sys::evict(&f);
}
