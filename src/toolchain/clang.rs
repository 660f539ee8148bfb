//! The clang whose LLVM is rustc's: the compiler the `c-compiler` stage gives the C and C++
//! that build scripts compile through `cc`, and the one whose `-fprofile-generate` counters
//! and `-fprofile-use` reading share rustc's profile format, so one merged profile serves
//! both compilers. Looked for as `CARGO_OPTIMIZE_CLANG` (alone, when set), else `clang-N`
//! on PATH, `/usr/lib/llvm-N/bin/clang`, plain `clang` — each version-checked (`clang
//! version 22.1.8` must be LLVM N). clang++ is the file beside it with the same suffix.
//! Asked once per process (`find`), as every stage and `doctor` ask the same question.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use super::{env_override, first_match, join_reasons, Rustc, Search, Tool, ToolError};

/// Override for the clang to use (still version-checked against rustc's LLVM).
pub(crate) const CLANG_ENV: &str = "CARGO_OPTIMIZE_CLANG";

/// A clang of rustc's LLVM major and its clang++.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub(crate) struct Clang {
    pub cc: PathBuf,
    /// `None` when no clang++ sits beside it (C++ then keeps the default compiler).
    pub cxx: Option<PathBuf>,
    /// Its version line, e.g. "Debian clang version 22.1.8 (1~deb12u1)".
    pub version: String,
}

/// The Debian command that installs the clang of LLVM `major`.
pub(crate) fn clang_fix(major: u32) -> String {
    format!("apt-get update && apt-get install -y clang-{major}   # as root, on Debian/Ubuntu; or set {CLANG_ENV} to a clang of LLVM {major}")
}

/// The clang of rustc's LLVM major, or what is wrong with the ones found and the fix
/// (another major is refused: its profile format differs). Asked once per process.
pub(crate) fn find(rustc: &Rustc) -> Result<Clang, ToolError> {
    type Probed = Vec<(u32, Result<Clang, ToolError>)>;
    static FOUND: OnceLock<Mutex<Probed>> = OnceLock::new();
    let memo = FOUND.get_or_init(Default::default);
    let mut memo = memo.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, found)) = memo.iter().find(|(m, _)| *m == rustc.llvm_major) {
        return found.clone();
    }
    let found = find_in(
        rustc.llvm_major,
        &Search::from_env(),
        env_override(CLANG_ENV),
    );
    memo.push((rustc.llvm_major, found.clone()));
    found
}

pub(crate) fn find_in(
    n: u32,
    search: &Search,
    override_path: Option<PathBuf>,
) -> Result<Clang, ToolError> {
    let fix = clang_fix(n);
    let candidates: Vec<(PathBuf, bool)> = match &override_path {
        Some(p) => vec![(p.clone(), false)],
        None => [
            search.which(&format!("clang-{n}")),
            search.versioned_dir_tool(n, "clang"),
            search.which("clang"),
        ]
        .into_iter()
        .flatten()
        .map(|p| (p, false))
        .collect(),
    };
    let tool = first_match(candidates, n, &[&["--version"]]).map_err(|rejected| {
        let problem = match (&override_path, rejected.is_empty()) {
            (Some(p), _) if !p.exists() => format!("{CLANG_ENV}={} does not exist", p.display()),
            (_, true) => format!(
                "no clang found (C and C++ share rustc's profile only when clang of LLVM {n} compiles them); looked for clang-{n} and clang on PATH, {}",
                search.llvm_root.join(format!("llvm-{n}/bin/clang")).display()
            ),
            (_, false) => format!(
                "no clang of rustc's LLVM {n} found (another major writes and reads another profile format): {}",
                join_reasons(&rejected)
            ),
        };
        ToolError { problem, fix: fix.clone() }
    })?;
    Ok(with_cxx(tool))
}

/// `tool` with the clang++ beside it: `clang-22` → `clang++-22`, `clang` → `clang++`.
fn with_cxx(tool: Tool) -> Clang {
    let cxx = tool
        .path
        .file_name()
        .and_then(|f| f.to_str())
        .and_then(|name| {
            let file = name.replacen("clang", "clang++", 1);
            let beside = tool.path.with_file_name(file);
            super::is_executable(&beside).then_some(beside)
        });
    Clang {
        cc: tool.path,
        cxx,
        version: tool.version,
    }
}

/// Whether `path` names a clang (by its file name): a user's `CC` that already is one.
pub(crate) fn is_clang(path: &Path) -> bool {
    path.file_name()
        .and_then(|f| f.to_str())
        .is_some_and(|f| f.starts_with("clang"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    fn fake_tool(dir: &Path, name: &str, version_line: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, format!("#!/bin/sh\necho '{version_line}'\n")).unwrap();
        crate::sys::set_mode(&p, 0o755).unwrap();
        p
    }

    #[cfg(unix)]
    #[test]
    fn clang_of_another_llvm_major_is_refused_naming_both_versions() {
        let dir = tempfile::tempdir().unwrap();
        fake_tool(dir.path(), "clang", "Debian clang version 19.1.7 (3)");
        let search = Search {
            path_dirs: vec![dir.path().to_path_buf()],
            llvm_root: dir.path().join("none"),
        };
        let e = find_in(22, &search, None).unwrap_err();
        assert!(e.problem.contains("LLVM 19"), "{e}");
        assert!(e.problem.contains("LLVM 22"), "{e}");
        assert!(e.fix.contains("clang-22"), "{e}");
    }

    #[cfg(unix)]
    #[test]
    fn the_versioned_clang_is_taken_with_its_clang_plus_plus() {
        let dir = tempfile::tempdir().unwrap();
        fake_tool(dir.path(), "clang", "clang version 19.1.7");
        let cc = fake_tool(dir.path(), "clang-22", "Debian clang version 22.1.8 (1)");
        let cxx = fake_tool(dir.path(), "clang++-22", "Debian clang version 22.1.8 (1)");
        let search = Search {
            path_dirs: vec![dir.path().to_path_buf()],
            llvm_root: dir.path().join("none"),
        };
        let c = find_in(22, &search, None).unwrap();
        assert_eq!((c.cc, c.cxx), (cc, Some(cxx)));
        assert!(c.version.contains("22.1.8"), "{}", c.version);
    }

    #[test]
    fn none_at_all_says_where_it_looked_and_the_package() {
        let dir = tempfile::tempdir().unwrap();
        let search = Search {
            path_dirs: vec![dir.path().to_path_buf()],
            llvm_root: dir.path().join("lib"),
        };
        let e = find_in(22, &search, None).unwrap_err();
        assert!(e.problem.contains("no clang found"), "{e}");
        assert!(e.fix.contains("apt-get install -y clang-22"), "{e}");
    }
}
