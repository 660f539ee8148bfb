//! A package optimized as a library that a host program loads (the spec's workloads give
//! `command`): its `cdylib` target, found in cargo's metadata (`crate-type`), and what the
//! host loads it as — a Python extension module when the package depends on pyo3 (its name
//! from `[tool.maturin] module-name` in pyproject.toml, the last component of the dotted
//! path, else the lib target's name), else a plain C-ABI library under cargo's file name
//! (`lib<name>.so`). Built with `cargo build --lib`; the artifact is the `filenames` entry
//! of the lib target's `compiler-artifact` message (its `executable` is null).
//!
//! The file name each candidate is installed as (`Library::file`) needs the interpreter's
//! extension suffix for a module: the plan asks the host for it and fills it in
//! ([`Library::with_suffix`]). Linux only for now: other systems name and load libraries
//! otherwise, and the plan refuses them.

use std::path::{Path, PathBuf};

use super::CargoError;

/// The library a host program loads, as the candidates are built and installed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Library {
    /// The lib target's name as cargo names its crate (`pyo3_module`).
    pub target: String,
    /// The Python module's name, when the package is a pyo3 extension module (`hotpath`).
    pub python_module: Option<String>,
    /// The file name every candidate is installed as in its `bin/<tag>/` folder:
    /// `<module><EXT_SUFFIX>` for a module (once the plan asked the interpreter), else
    /// `lib<target>.so`.
    pub file: String,
    /// pyo3's features ask for the stable ABI (`abi3`, `abi3-py38`): the module imports in
    /// any CPython from that version on.
    pub abi3: bool,
    /// The interpreter a module's host runs (the one that gave the suffix): the one a
    /// wheel is built for.
    pub interpreter: Option<PathBuf>,
}

impl Library {
    /// The file name of a module whose interpreter gives `ext_suffix`
    /// (`.cpython-311-x86_64-linux-gnu.so`) as `interpreter` imports it; a plain library
    /// keeps its own.
    pub fn with_suffix(mut self, ext_suffix: &str, interpreter: &Path) -> Library {
        if let Some(m) = &self.python_module {
            self.file = format!("{m}{ext_suffix}");
            self.interpreter = Some(interpreter.to_path_buf());
        }
        self
    }
}

/// The library of `pkg` a host loads, and its root file: its `cdylib` target, else an error
/// with the fix.
pub(super) fn of(pkg: &cargo_metadata::Package) -> Result<(Library, PathBuf), CargoError> {
    let Some(lib) = pkg.targets.iter().find(|t| t.is_cdylib()) else {
        return Err(CargoError::NoHarness {
            package: pkg.name.to_string(),
            kind: "cdylib",
            which: "for the host program the workloads' `command` runs to load".into(),
            fix: "add `[lib] crate-type = [\"cdylib\"]` to its Cargo.toml (a pyo3 module: `crate-type = [\"cdylib\"]` and pyo3's `extension-module` feature), or remove `command` from the workloads to optimize its binary".into(),
        });
    };
    let target = lib.name.replace('-', "_");
    let pyo3 = pkg.dependencies.iter().find(|d| d.name == "pyo3");
    let abi3 = pyo3.is_some_and(|d| d.features.iter().any(|f| f.starts_with("abi3")));
    let pyo3 = pyo3.is_some();
    let dir = pkg.manifest_path.parent().map(|d| d.as_std_path());
    let python_module = pyo3.then(|| {
        dir.and_then(maturin_module_name)
            .unwrap_or_else(|| target.clone())
    });
    let library = Library {
        file: format!("lib{target}.so"),
        target,
        python_module,
        abi3,
        interpreter: None,
    };
    Ok((library, lib.src_path.clone().into_std_path_buf()))
}

/// `[tool.maturin] module-name` of `dir/pyproject.toml`, its last dotted component
/// (`pkg.sub._native` is imported as `_native` from the folder it is placed in).
fn maturin_module_name(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join("pyproject.toml")).ok()?;
    module_name_in(&text)
}

fn module_name_in(pyproject: &str) -> Option<String> {
    let doc: toml::Table = toml::from_str(pyproject).ok()?;
    let name = doc
        .get("tool")?
        .get("maturin")?
        .get("module-name")?
        .as_str()?;
    let last = name.rsplit('.').next()?.trim();
    (!last.is_empty()).then(|| last.to_string())
}

/// Whether `path` is the file of a `cdylib` artifact of a build for a Linux target.
pub(super) fn is_shared_object(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "so")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_maturin_module_name_is_its_last_dotted_component() {
        let text = "[project]\nname = \"x\"\n[tool.maturin]\nmodule-name = \"pkg.sub._native\"\n";
        assert_eq!(module_name_in(text).as_deref(), Some("_native"));
        assert_eq!(
            module_name_in("[tool.maturin]\nmodule-name = \"plain\"\n").as_deref(),
            Some("plain")
        );
        assert_eq!(module_name_in("[tool.maturin]\nfeatures = []\n"), None);
        assert_eq!(module_name_in("not toml ["), None);
    }

    #[test]
    fn a_module_is_installed_under_the_interpreter_s_suffix_a_library_under_its_own_name() {
        let module = Library {
            target: "pyo3_module".into(),
            python_module: Some("hotpath".into()),
            file: "libpyo3_module.so".into(),
            abi3: false,
            interpreter: None,
        };
        let suffix = ".cpython-311-x86_64-linux-gnu.so";
        let python = Path::new("/usr/bin/python3");
        let module = module.with_suffix(suffix, python);
        assert_eq!(module.file, "hotpath.cpython-311-x86_64-linux-gnu.so");
        assert_eq!(module.interpreter.as_deref(), Some(python));
        let plain = Library {
            target: "fast".into(),
            python_module: None,
            file: "libfast.so".into(),
            abi3: false,
            interpreter: None,
        };
        let plain = plain.with_suffix(suffix, python);
        assert_eq!(
            (plain.file.as_str(), plain.interpreter),
            ("libfast.so", None)
        );
        assert!(is_shared_object(Path::new("/t/release/libfast.so")));
        assert!(!is_shared_object(Path::new("/t/release/libfast.rlib")));
    }

    /// A `cdylib`'s artifact message has no executable: its `.so` among `filenames` is the
    /// build's file; a build script's (no executable, not a cdylib) is nothing.
    #[test]
    fn a_cdylib_s_artifact_is_its_shared_object() {
        use super::super::{build_event, BuildEvent};
        let artifact = |kind: &str, files: &[&str]| {
            serde_json::json!({
                "reason": "compiler-artifact",
                "package_id": "path+file:///p#fast@0.1.0",
                "manifest_path": "/p/Cargo.toml",
                "target": {
                    "kind": [kind], "crate_types": [kind], "name": "fast",
                    "src_path": "/p/src/lib.rs", "edition": "2021",
                    "doc": true, "doctest": false, "test": true
                },
                "profile": {
                    "opt_level": "3", "debuginfo": 0, "debug_assertions": false,
                    "overflow_checks": false, "test": false
                },
                "features": [],
                "filenames": files,
                "executable": null,
                "fresh": true
            })
            .to_string()
        };
        let lib = artifact("cdylib", &["/t/release/libfast.so"]);
        assert_eq!(
            build_event(&lib),
            Some(BuildEvent::Executable("/t/release/libfast.so".into(), true))
        );
        let script = artifact(
            "custom-build",
            &["/t/release/build/fast-1/build-script-build"],
        );
        assert_eq!(build_event(&script), None);
    }
}
