//! The clang whose LLVM is rustc's: the compiler the `c-compiler` stage gives the C and C++
//! that build scripts compile through `cc`, and the one whose `-fprofile-generate` counters
//! and `-fprofile-use` reading share rustc's profile format, so one merged profile serves
//! both compilers. Looked for as `CARGO_OPTIMIZE_CLANG` (alone, when set), else `clang-N`
//! on PATH, `/usr/lib/llvm-N/bin/clang`, plain `clang` — each version-checked (`clang
//! version 22.1.8` must be LLVM N) and checked to be clang by what it is: a probe compile
//! of an empty C file with `-fprofile-instr-generate -dM -E` must succeed and define
//! `__clang__` and `__clang_major__ N` (asked once per path), so a script answering a clang
//! version while running gcc is refused, the next candidate tried, and the reason named
//! where the c-compiler stage is skipped and PGO stays Rust-only. clang++ is the file
//! beside it with the same suffix.
//! Asked once per process (`find`), as every stage and `doctor` ask the same question.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use super::{env_override, first_match, join_reasons, Rejected, Rustc, Search, Tool, ToolError};

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
    let tool = first_clang(candidates, n).map_err(|rejected| {
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

/// The first candidate of LLVM `n` by its `--version` that is clang by what it compiles
/// ([`is_really_clang`]), or every rejection.
fn first_clang(candidates: Vec<(PathBuf, bool)>, n: u32) -> Result<Tool, Vec<Rejected>> {
    let mut rejected = Vec::new();
    for candidate in candidates {
        match first_match(vec![candidate], n, &[&["--version"]]) {
            Ok(tool) => match is_really_clang(&tool.path, n) {
                Ok(()) => return Ok(tool),
                Err(reason) => rejected.push(Rejected { reason }),
            },
            Err(r) => rejected.extend(r),
        }
    }
    Err(rejected)
}

/// The arguments of the probe compile: the predefined macros of an empty C file, compiled
/// with clang's own instrumentation flag (gcc refuses it; `-fprofile-generate` both take).
const PROBE_ARGS: [&str; 6] = ["-x", "c", "-fprofile-instr-generate", "-dM", "-E", "-"];

/// Whether `path`, which answers `--version` as a clang of LLVM `n`, is one by what it
/// is: a probe compile ([`PROBE_ARGS`]) must succeed and define `__clang__` and
/// `__clang_major__ n` (a script answering a clang version while running gcc does not).
/// Asked once per path and process.
fn is_really_clang(path: &Path, n: u32) -> Result<(), String> {
    type Probed = Vec<(PathBuf, u32, Result<(), String>)>;
    static PROBED: OnceLock<Mutex<Probed>> = OnceLock::new();
    let memo = PROBED.get_or_init(Default::default);
    let mut memo = memo.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, _, r)) = memo.iter().find(|(p, m, _)| p == path && *m == n) {
        return r.clone();
    }
    let cmd = crate::process::Command::new(path)
        .args(PROBE_ARGS)
        .timeout(super::VERSION_TIMEOUT);
    let judged = match crate::process::run(&cmd) {
        Ok(out) if out.status.success() && !out.timed_out => {
            judge_macros(&String::from_utf8_lossy(&out.stdout), n)
        }
        Ok(out) => Err(format!(
            "a probe compile with `{}` failed ({}{})",
            PROBE_ARGS.join(" "),
            out.status,
            first_words(&String::from_utf8_lossy(&out.stderr))
        )),
        Err(e) => Err(format!("a probe compile could not run: {e}")),
    };
    let r = judged.map_err(|why| {
        format!(
            "{} answers `--version` as a clang of LLVM {n} but is not clang: {why}",
            path.display()
        )
    });
    memo.push((path.to_path_buf(), n, r.clone()));
    r
}

/// What the probe's predefined macros say: clang defines `__clang__` and
/// `__clang_major__`, which must be `n`.
fn judge_macros(macros: &str, n: u32) -> Result<(), String> {
    let defined = |name: &str| {
        macros.lines().find_map(|l| {
            let rest = l.trim().strip_prefix("#define ")?.strip_prefix(name)?;
            rest.starts_with(' ').then(|| rest.trim().to_string())
        })
    };
    if defined("__clang__").is_none() {
        let what = match defined("__GNUC__") {
            Some(v) => format!(" (it defines `__GNUC__ {v}`: gcc)"),
            None => String::new(),
        };
        return Err(format!(
            "its preprocessor does not define `__clang__`{what}"
        ));
    }
    match defined("__clang_major__") {
        Some(m) if m == n.to_string() => Ok(()),
        Some(m) => Err(format!("it defines `__clang_major__ {m}`, not {n}")),
        None => Err("it does not define `__clang_major__`".into()),
    }
}

/// `: <first line of stderr>` clipped, or nothing.
fn first_words(stderr: &str) -> String {
    match stderr.lines().map(str::trim).find(|l| !l.is_empty()) {
        Some(l) => format!(": {}", crate::util::clip(l, 160)),
        None => String::new(),
    }
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

    /// A script answering `--version` with `version_line` and the probe compile as a clang
    /// of LLVM 22 does (its predefined macros).
    #[cfg(unix)]
    fn fake_tool(dir: &Path, name: &str, version_line: &str) -> PathBuf {
        let probe =
            "printf '#define __GNUC__ 4\\n#define __clang__ 1\\n#define __clang_major__ 22\\n'";
        fake_script(dir, name, version_line, probe)
    }

    /// A script answering `--version` with `version_line`, and anything else with `rest`.
    #[cfg(unix)]
    fn fake_script(dir: &Path, name: &str, version_line: &str, rest: &str) -> PathBuf {
        let p = dir.join(name);
        let script = format!(
            "#!/bin/sh\nif [ \"$1\" = --version ]; then echo '{version_line}'; exit 0; fi\n{rest}\n"
        );
        std::fs::write(&p, script).unwrap();
        crate::sys::set_mode(&p, 0o755).unwrap();
        p
    }

    /// Issue 61: a script answering a clang version while running gcc made the whole PGO
    /// stage fail with a raw link error. It is refused by its probe compile, the reason
    /// named, and the next candidate (here a real-looking `clang`) is taken.
    #[cfg(unix)]
    #[test]
    fn a_clang_that_is_gcc_underneath_is_refused_by_its_probe_compile() {
        let dir = tempfile::tempdir().unwrap();
        let version = "Debian clang version 22.1.8 (1)";
        // gcc's answer to the probe, as gcc gives it (whether or not gcc is installed).
        let gcc = "echo \"gcc: error: unrecognized command-line option '-fprofile-instr-generate'\" >&2; exit 1";
        fake_script(dir.path(), "clang-22", version, gcc);
        let search = Search {
            path_dirs: vec![dir.path().to_path_buf()],
            llvm_root: dir.path().join("none"),
        };
        let e = find_in(22, &search, None).unwrap_err();
        assert!(
            e.problem.contains("clang-22 answers `--version` as a clang of LLVM 22 but is not clang: a probe compile with `-x c -fprofile-instr-generate -dM -E -` failed (exit code 1: gcc: error: unrecognized"),
            "{e}"
        );
        assert!(e.fix.contains("clang-22"), "{e}");
        // A preprocessor that takes the flag but is not clang is refused too.
        let cpp = "printf '#define __GNUC__ 12\\n'";
        let other = fake_script(dir.path(), "cc-like", version, cpp);
        let e = find_in(22, &search, Some(other)).unwrap_err();
        assert!(
            e.problem
                .contains("does not define `__clang__` (it defines `__GNUC__ 12`: gcc)"),
            "{e}"
        );
        // The next candidate that is clang is taken.
        let real = fake_tool(dir.path(), "clang", version);
        assert_eq!(find_in(22, &search, None).unwrap().cc, real);
    }

    #[test]
    fn the_probe_s_macros_must_name_clang_of_the_major() {
        let clang = "#define __GNUC__ 4\n#define __clang__ 1\n#define __clang_major__ 22\n";
        assert_eq!(judge_macros(clang, 22), Ok(()));
        let e = judge_macros(clang, 21).unwrap_err();
        assert!(e.contains("`__clang_major__ 22`, not 21"), "{e}");
        let e = judge_macros("#define __clang_version__ \"x\"\n", 22).unwrap_err();
        assert!(e.contains("does not define `__clang__`"), "{e}");
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
