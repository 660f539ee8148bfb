//! The library a host program loads, resolved before anything is built: the target is
//! Linux (other systems name and load libraries otherwise: refused, with the fix), the
//! host program the workloads' `command` names is there (on the `PATH` the workloads see,
//! or a path relative to their `cwd`; a Python host's script too), and for a Python
//! extension module the file name the interpreter imports, `<module><EXT_SUFFIX>`, asked of
//! that interpreter as the workload runs it (its `cwd`, its `env`, the environment built
//! from nothing as the jail builds it), bounded by [`ASK_TIMEOUT`].

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::cargo::Project;
use crate::process;
use crate::spec::{Spec, Workload};

/// The bound of the question put to the interpreter.
pub(super) const ASK_TIMEOUT: Duration = Duration::from_secs(60);

/// What the interpreter is asked to print: the suffix of the extension modules it imports.
const EXT_SUFFIX_QUESTION: &str = "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))";

/// `project`'s library checked for `triple` and `spec`'s host, its installed file name
/// completed; nothing for a project that is no library.
pub(super) fn resolve(project: &mut Project, spec: &Spec, triple: &str) -> anyhow::Result<()> {
    let Some(library) = project.library.take() else {
        return Ok(());
    };
    if !triple.contains("-linux") {
        anyhow::bail!(
            "package `{}`: a library a host program loads (the workloads give `command`) is optimized on Linux targets only for now, and the target is {triple}\n  fix: run on Linux (or build for a Linux target), or give the workloads a binary to run instead of `command`",
            project.package
        );
    }
    let w = &spec.workloads[0];
    let host = host_program(spec)?;
    let library = match &library.python_module {
        Some(module) => {
            let suffix = ext_suffix(&host, w).map_err(|why| {
                anyhow::anyhow!(
                    "{}:{}: workload `{}`: the Python extension module `{module}` is imported by the host `{}`, which did not say the file name it imports modules under ({why})\n  fix: make `command` start with the Python interpreter that imports the module (`python3`, or a virtualenv's `.venv/bin/python`)",
                    spec.path.display(),
                    w.line,
                    w.name,
                    host.display()
                )
            })?;
            library.with_suffix(&suffix, &host)
        }
        None => library,
    };
    project.library = Some(library);
    Ok(())
}

/// The host program every workload runs (each checked: a spec may give several), found
/// as a run finds it; else exit 2 naming the workload, its line and the fix.
fn host_program(spec: &Spec) -> anyhow::Result<PathBuf> {
    let mut first = None;
    for w in &spec.workloads {
        let Some(name) = w.host.as_ref().map(|h| h[0].as_str()) else {
            continue;
        };
        let found = match name.contains('/') {
            true => Some(w.cwd.join(name)).filter(|p| p.is_file()),
            false => crate::toolchain::find_on_path(name),
        };
        let Some(path) = found else {
            let where_ = match name.contains('/') {
                true => format!("is no file (relative to its cwd {})", w.cwd.display()),
                false => "is not found on PATH".to_string(),
            };
            anyhow::bail!(
                "{}:{}: workload `{}`: its host program `{name}` (`command`) {where_}\n  fix: install it, or give its path in `command` (absolute, or relative to the workload's `cwd`)",
                spec.path.display(),
                w.line,
                w.name
            );
        };
        if let Some(script) = missing_script(w) {
            anyhow::bail!(
                "{}:{}: workload `{}`: the script `{script}` its host `{name}` runs (`command`) is no file (relative to its cwd {})\n  fix: write it: it loads the library, runs a representative workload on the input its arguments name, and prints a result (`cargo optimize init` writes a spec whose comments show one), or correct its path in `command`",
                spec.path.display(),
                w.line,
                w.name,
                w.cwd.display()
            );
        }
        first.get_or_insert(path);
    }
    first.ok_or_else(|| anyhow::anyhow!("no workload gives `command`"))
}

/// The script a Python host of `w` runs (`python3 bench/run.py`: the word after the
/// interpreter, when no option comes first), when it is no file.
fn missing_script(w: &Workload) -> Option<&str> {
    let words = w.host.as_deref()?;
    let program = Path::new(&words[0]).file_name()?.to_str()?;
    let script = words.get(1).filter(|s| !s.starts_with('-'))?;
    let python = program.starts_with("python") || program.starts_with("pypy");
    (python && !w.cwd.join(script).is_file()).then_some(script.as_str())
}

/// The interpreter's `EXT_SUFFIX` (`.cpython-311-x86_64-linux-gnu.so`), asked as `w` runs
/// it; else what went wrong.
fn ext_suffix(host: &Path, w: &Workload) -> Result<String, String> {
    let mut cmd = process::Command::new(host)
        .args(["-c", EXT_SUFFIX_QUESTION])
        .cwd(&w.cwd)
        .timeout(ASK_TIMEOUT)
        .label(format!("the host of workload `{}`", w.name));
    cmd.env = (process::passed(&w.env_pass).into_iter())
        .map(|(k, v)| (k.into(), v))
        .chain(w.env.iter().map(|(k, v)| (k.into(), v.into())))
        .collect();
    cmd.env_clear = true;
    let out = process::run(&cmd).map_err(|e| e.to_string())?;
    if out.timed_out || !out.status.success() {
        return Err(format!(
            "`{} -c \"{EXT_SUFFIX_QUESTION}\"` failed: {}",
            host.display(),
            out.stderr_tail(3).trim()
        ));
    }
    suffix_of(&String::from_utf8_lossy(&out.stdout))
}

/// The suffix in the interpreter's answer: one word, starting with `.`, ending in `.so`.
fn suffix_of(answer: &str) -> Result<String, String> {
    let s = answer.trim();
    let word = !s.is_empty() && !s.contains(char::is_whitespace);
    match word && s.starts_with('.') && s.ends_with(".so") {
        true => Ok(s.to_string()),
        false => Err(format!(
            "it printed {s:?}, not a suffix such as \".cpython-311-x86_64-linux-gnu.so\""
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_suffix_is_one_word_of_a_shared_object() {
        assert_eq!(
            suffix_of(".cpython-311-x86_64-linux-gnu.so\n").as_deref(),
            Ok(".cpython-311-x86_64-linux-gnu.so")
        );
        assert_eq!(suffix_of(".abi3.so").as_deref(), Ok(".abi3.so"));
        for bad in ["None", "", ".pyd", "a .so"] {
            assert!(suffix_of(bad).is_err(), "{bad:?}");
        }
    }
}
