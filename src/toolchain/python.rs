//! The Python interpreter a library's host workloads run, for `doctor`: asked (bounded by
//! [`ASK_TIMEOUT`]) for its implementation, version and `EXT_SUFFIX`; the Python versions
//! a pyo3 release builds for (the range its `pyo3-ffi` build script enforces); and whether
//! a module built for the interpreter pyo3 finds (`PYO3_PYTHON`, else an active
//! virtualenv's or conda's, else `python3` on `PATH`) imports in the one the workloads run.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use super::ToolError;
use crate::process;

/// The bound of each question put to an interpreter.
const ASK_TIMEOUT: Duration = Duration::from_secs(30);

/// One line: the implementation, `major.minor`, and the suffix of the modules it imports.
const QUESTION: &str = "import sys, sysconfig; print(sys.implementation.name, '%d.%d' % sys.version_info[:2], sysconfig.get_config_var('EXT_SUFFIX'))";

/// What `doctor` is asked about: a package whose `cdylib` a host program loads.
#[derive(Debug, Clone)]
pub(crate) struct HostQuery {
    /// The module's name, when the library is a pyo3 extension module.
    pub python_module: Option<String>,
    /// The program the workloads run (`command`'s first word), else `python3`.
    pub host: String,
    /// Where a relative `host` is found (the workloads' `cwd`).
    pub cwd: PathBuf,
    /// The pyo3 version of the package's `Cargo.lock`.
    pub pyo3: Option<String>,
    /// The pyo3 dependency asks for the stable ABI (an `abi3` feature).
    pub abi3: bool,
}

/// An interpreter's answer to [`QUESTION`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Interpreter {
    pub path: PathBuf,
    /// `cpython`, `pypy`, `graalpy`.
    pub implementation: String,
    pub version: (u32, u32),
    pub ext_suffix: String,
}

impl Interpreter {
    fn describe(&self) -> String {
        format!(
            "{}  ({} {}.{}, EXT_SUFFIX {})",
            self.path.display(),
            self.implementation,
            self.version.0,
            self.version.1,
            self.ext_suffix
        )
    }

    /// A free-threaded build (`.cpython-313t-…`).
    fn free_threaded(&self) -> bool {
        let tag = self.ext_suffix.split('-').nth(1).unwrap_or_default();
        tag.starts_with("3") && tag.ends_with('t')
    }
}

/// How a line of the section reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum HostMark {
    Ok,
    Problem,
    Info,
}

/// One line of `doctor`'s host section.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct HostLine {
    pub label: &'static str,
    pub mark: HostMark,
    pub detail: String,
    pub fix: Option<String>,
}

/// `doctor`'s host section: the interpreter the workloads run, and whether the module
/// pyo3 builds matches it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct HostFacts {
    pub host: String,
    pub lines: Vec<HostLine>,
    /// The problem lines, each with its fix (they make doctor's verdict "not ready").
    #[serde(skip)]
    pub problems: Vec<ToolError>,
}

impl HostFacts {
    fn of(host: &str, lines: Vec<HostLine>) -> HostFacts {
        let problems = (lines.iter())
            .filter(|l| l.mark == HostMark::Problem)
            .map(|l| ToolError {
                problem: format!("{}: {}", l.label, l.detail),
                fix: l.fix.clone().unwrap_or_default(),
            })
            .collect();
        HostFacts {
            host: host.to_string(),
            lines,
            problems,
        }
    }
}

fn line(label: &'static str, mark: HostMark, detail: String, fix: Option<String>) -> HostLine {
    HostLine {
        label,
        mark,
        detail,
        fix,
    }
}

/// The host section for `q`: the host found and asked; for a pyo3 module, pyo3's range
/// and the interpreter its build uses.
pub(crate) fn gather(q: &HostQuery) -> HostFacts {
    let mut lines = Vec::new();
    let found = match q.host.contains('/') {
        true => Some(q.cwd.join(&q.host)).filter(|p| p.is_file()),
        false => super::find_on_path(&q.host),
    };
    let facts = |lines| HostFacts::of(&q.host, lines);
    let Some(path) = found else {
        lines.push(line("host", HostMark::Problem, format!("`{}` (the workloads' `command`) is not found", q.host), Some("install Python 3 (Debian/Ubuntu: `apt install python3`), or give the interpreter's path as the first word of the workloads' `command`".into())));
        return facts(lines);
    };
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let python = name.starts_with("python") || name.starts_with("pypy");
    if q.python_module.is_none() && !python {
        lines.push(line("host", HostMark::Ok, path.display().to_string(), None));
        return facts(lines);
    }
    let interpreter = match ask(&path) {
        Ok(i) => i,
        Err(why) => {
            lines.push(line(
                "interpreter",
                HostMark::Problem,
                format!(
                    "{} did not say its version and EXT_SUFFIX: {why}",
                    path.display()
                ),
                Some("make the workloads' `command` start with a Python 3 interpreter".into()),
            ));
            return facts(lines);
        }
    };
    lines.push(line(
        "interpreter",
        HostMark::Ok,
        interpreter.describe(),
        None,
    ));
    if q.python_module.is_some() {
        lines.push(pyo3_line(q, &interpreter));
        lines.push(build_line(q, &interpreter));
    }
    facts(lines)
}

/// Ask `program` [`QUESTION`], bounded.
fn ask(program: &Path) -> Result<Interpreter, String> {
    let cmd = process::Command::new(program)
        .args(["-c", QUESTION])
        .timeout(ASK_TIMEOUT)
        .label(format!("the interpreter {}", program.display()));
    let out = process::run(&cmd).map_err(|e| e.to_string())?;
    if out.timed_out || !out.status.success() {
        return Err(format!("it failed: {}", out.stderr_tail(3).trim()));
    }
    answer(program, &String::from_utf8_lossy(&out.stdout))
}

/// The interpreter in `program`'s answer (`cpython 3.11 .cpython-311-x86_64-linux-gnu.so`).
fn answer(program: &Path, text: &str) -> Result<Interpreter, String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let bad = || format!("it printed {:?}", text.trim());
    let [implementation, version, suffix] = words[..] else {
        return Err(bad());
    };
    let (major, minor) = version.split_once('.').ok_or_else(bad)?;
    let number = |s: &str| s.parse::<u32>().map_err(|_| bad());
    if !suffix.starts_with('.') {
        return Err(bad());
    }
    Ok(Interpreter {
        path: program.to_path_buf(),
        implementation: implementation.to_string(),
        version: (number(major)?, number(minor)?),
        ext_suffix: suffix.to_string(),
    })
}

/// The Python versions a pyo3 release builds for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Support {
    cpython: (u32, u32),
    /// `None`: no maximum enforced (before pyo3 0.21).
    max: Option<u32>,
    pypy: u32,
    /// The first minor whose free-threaded build it supports.
    free_threaded: Option<u32>,
}

/// pyo3 `0.<minor>`'s range, as `pyo3-ffi/build.rs` of that release enforces it.
fn support(pyo3_minor: u32) -> Option<Support> {
    let s = |min, max, pypy, free_threaded| Support {
        cpython: (3, min),
        max,
        pypy,
        free_threaded,
    };
    Some(match pyo3_minor {
        16..=20 => s(7, None, 7, None),
        21 => s(7, Some(12), 7, None),
        22 => s(7, Some(13), 7, None),
        23 | 24 => s(7, Some(13), 9, Some(13)),
        25 | 26 => s(7, Some(14), 9, Some(13)),
        27 | 28 => s(7, Some(14), 11, Some(13)),
        29 => s(8, Some(15), 11, Some(14)),
        _ => return None,
    })
}

/// Whether the locked pyo3 builds for `i`, else the fix.
fn pyo3_line(q: &HostQuery, i: &Interpreter) -> HostLine {
    let Some(version) = &q.pyo3 else {
        return line(
            "pyo3",
            HostMark::Info,
            "not in Cargo.lock: its Python range is not checked".into(),
            Some("`cargo generate-lockfile`".into()),
        );
    };
    let minor = version.split('.').nth(1).and_then(|m| m.parse().ok());
    let Some(s) = minor.and_then(support) else {
        return line(
            "pyo3",
            HostMark::Info,
            format!("{version} (Cargo.lock): its Python range is not known here, not checked"),
            None,
        );
    };
    let (major, minor) = i.version;
    let min = match i.implementation.as_str() {
        "pypy" => s.pypy,
        _ => s.cpython.1,
    };
    let range = match s.max {
        Some(max) => format!("3.{min} to 3.{max}"),
        None => format!("3.{min} and later"),
    };
    let said = format!(
        "{version} (Cargo.lock) builds for {} {range}",
        i.implementation
    );
    let too_new = s.max.is_some_and(|max| minor > max) && !q.abi3;
    let free = i.free_threaded() && s.free_threaded.is_none_or(|f| minor < f);
    if major == 3 && minor >= min && !too_new && !free {
        return line(
            "pyo3",
            HostMark::Ok,
            format!("{said}: {major}.{minor} is one"),
            None,
        );
    }
    let why = match free {
        true => format!("{said}, and not the free-threaded {major}.{minor}t the workloads run"),
        false => format!("{said}, and the workloads run {major}.{minor}"),
    };
    let fix = format!("run the workloads with a Python it supports: install one, set PYO3_PYTHON to it (the build's) and start `command` with it; or move to a pyo3 release that supports {major}.{minor} (`cargo update -p pyo3`, or raise its version in Cargo.toml)");
    line("pyo3", HostMark::Problem, why, Some(fix))
}

/// The interpreter pyo3's build script configures the module for, and what says so.
fn build_interpreter() -> (Option<PathBuf>, &'static str) {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    if let Some(p) = var("PYO3_PYTHON") {
        let p = PathBuf::from(p);
        let found = match p.components().count() > 1 {
            true => Some(p),
            false => super::find_on_path(&p.to_string_lossy()),
        };
        return (found, "PYO3_PYTHON");
    }
    for (k, what) in [
        ("VIRTUAL_ENV", "VIRTUAL_ENV"),
        ("CONDA_PREFIX", "CONDA_PREFIX"),
    ] {
        if let Some(dir) = var(k) {
            return (Some(PathBuf::from(dir).join("bin/python")), what);
        }
    }
    (super::find_on_path("python3"), "python3 on PATH")
}

/// Whether the module pyo3 builds imports in `run` (the workloads' interpreter): the
/// build's interpreter is the same one, or gives the same `EXT_SUFFIX` (or, with abi3, is
/// a CPython no newer); else the fix.
fn build_line(q: &HostQuery, run: &Interpreter) -> HostLine {
    let module = q.python_module.as_deref().unwrap_or_default();
    let (path, source) = build_interpreter();
    let imported = format!("imported as {module}{}", run.ext_suffix);
    let same = |p: &Path| p.canonicalize().ok() == run.path.canonicalize().ok();
    let built = match path {
        Some(p) if same(&p) => {
            return line(
                "module ABI",
                HostMark::Ok,
                format!("built for the interpreter the workloads run ({source}): {imported}"),
                None,
            )
        }
        Some(p) => {
            ask(&p).map_err(|why| format!("{} ({source}) did not answer: {why}", p.display()))
        }
        None => Err(format!("no interpreter for the build ({source} not found)")),
    };
    let fix = format!("set PYO3_PYTHON={} (the interpreter the workloads run), or start the workloads' `command` with the build's interpreter", run.path.display());
    let b = match built {
        Ok(b) => b,
        Err(why) => return line("module ABI", HostMark::Problem, why, Some(fix)),
    };
    let abi3 = q.abi3 && b.implementation == "cpython" && run.implementation == "cpython";
    if b.ext_suffix == run.ext_suffix || (abi3 && b.version <= run.version) {
        return line("module ABI", HostMark::Ok, format!("built for {} ({source}), whose modules the workloads' interpreter imports: {imported}", b.path.display()), None);
    }
    let why = format!("built for {} ({source}, EXT_SUFFIX {}), which the workloads' interpreter (EXT_SUFFIX {}) does not import", b.path.display(), b.ext_suffix, run.ext_suffix);
    line("module ABI", HostMark::Problem, why, Some(fix))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interpreter(implementation: &str, version: (u32, u32), suffix: &str) -> Interpreter {
        Interpreter {
            path: "/usr/bin/python3".into(),
            implementation: implementation.into(),
            version,
            ext_suffix: suffix.into(),
        }
    }

    #[test]
    fn the_answer_is_implementation_version_and_suffix() {
        let i = answer(
            Path::new("/usr/bin/python3"),
            "cpython 3.11 .cpython-311-x86_64-linux-gnu.so\n",
        )
        .unwrap();
        assert_eq!(
            i,
            interpreter("cpython", (3, 11), ".cpython-311-x86_64-linux-gnu.so")
        );
        assert!(!i.free_threaded());
        let t = interpreter("cpython", (3, 13), ".cpython-313t-x86_64-linux-gnu.so");
        assert!(t.free_threaded());
        for bad in ["", "cpython 3.11 None", "cpython three .so", "a b c d"] {
            assert!(answer(Path::new("p"), bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn pyo3_s_range_decides_and_says_the_fix() {
        let q = |version: &str, abi3| HostQuery {
            python_module: Some("hotpath".into()),
            host: "python3".into(),
            cwd: "/".into(),
            pyo3: Some(version.into()),
            abi3,
        };
        let py = |minor| interpreter("cpython", (3, minor), ".cpython-3x-x86_64-linux-gnu.so");
        let ok = pyo3_line(&q("0.28.3", false), &py(11));
        assert_eq!(ok.mark, HostMark::Ok, "{ok:?}");
        assert!(
            ok.detail
                .contains("0.28.3 (Cargo.lock) builds for cpython 3.7 to 3.14: 3.11 is one"),
            "{ok:?}"
        );
        let new = pyo3_line(&q("0.21.2", false), &py(13));
        assert_eq!(new.mark, HostMark::Problem, "{new:?}");
        assert!(new.fix.unwrap().contains("PYO3_PYTHON"));
        assert_eq!(pyo3_line(&q("0.21.2", true), &py(13)).mark, HostMark::Ok);
        assert_eq!(
            pyo3_line(&q("0.29.0", false), &py(7)).mark,
            HostMark::Problem
        );
        let pypy = interpreter("pypy", (3, 10), ".pypy310-pp73-x86_64-linux-gnu.so");
        assert_eq!(
            pyo3_line(&q("0.28.0", false), &pypy).mark,
            HostMark::Problem
        );
        let free = interpreter("cpython", (3, 13), ".cpython-313t-x86_64-linux-gnu.so");
        assert_eq!(
            pyo3_line(&q("0.22.0", false), &free).mark,
            HostMark::Problem
        );
        assert_eq!(pyo3_line(&q("0.23.0", false), &free).mark, HostMark::Ok);
        assert_eq!(pyo3_line(&q("0.99.0", false), &py(11)).mark, HostMark::Info);
    }
}
