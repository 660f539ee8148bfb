//! C and C++ that build scripts compile through the `cc` crate (and `cmake`, which asks
//! `cc` for its compiler and flags): which packages of the build graph do it
//! ([`c_packages`], from Cargo.lock), the compiler and flags a build gives them
//! ([`CBuild`]: `CC`/`CXX` and `CFLAGS`/`CXXFLAGS` for the build's target triple, the names
//! `cc` reads first), and the functions a build's C objects define, per package
//! ([`c_functions`]: the archives and objects in the build scripts' `OUT_DIR`s).
//!
//! Why per-triple names: `cc` reads `CC_<triple>` (dashes, then underscores — we set the
//! underscore spelling, which a shell can assign) before `HOST_CC`/`TARGET_CC` and `CC`, so
//! the user's plain `CC`/`CFLAGS` stay in the environment for every other build. The
//! user's flags are kept: ours are appended to the value `cc` would have taken (old `cc`
//! versions take the first name set; new ones join them all, and a repeated flag is
//! harmless). Build scripts that compile C for the host with the same triple (no
//! `--target`, or a build dependency) get it too: `cc` cannot tell them apart.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The compiler `cc` uses for a build and the flags added for its target.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct CBuild {
    /// The triple whose `CC_<triple>` and `CFLAGS_<triple>` are set.
    pub target: String,
    /// The triple is not the host's (`cc` then reads `TARGET_CC`, else `HOST_CC`).
    pub cross: bool,
    pub cc: PathBuf,
    /// `None`: C++ keeps the default compiler (no clang++ beside the clang).
    pub cxx: Option<PathBuf>,
    /// Appended to the target's `CFLAGS` and `CXXFLAGS` (`-fprofile-generate=DIR`,
    /// `-fprofile-use=FILE`).
    pub flags: Vec<String>,
}

/// The profile-use flag a whole-program PGO build gives C and C++.
pub(crate) fn profile_use_flag(profile: &Path) -> String {
    format!("-fprofile-use={}", profile.display())
}

/// The profile-generate flag an instrumented build gives C and C++ (the same folder as
/// rustc's `-Cprofile-generate`: one runtime writes one file for both).
pub(crate) fn profile_generate_flag(dir: &Path) -> String {
    format!("-fprofile-generate={}", dir.display())
}

impl CBuild {
    /// The variables a build sets, in a stable order: the compiler names, then the flags
    /// (each the value `cc` would have taken from `env` with ours appended).
    pub fn vars(&self, env: &dyn Fn(&str) -> Option<String>) -> Vec<(String, String)> {
        // The underscore spelling: a name a shell can assign (`CC_x86_64_unknown_linux_gnu=…
        // cargo build`), so the printed command is the build.
        let t = &self.target;
        let u = t.replace('-', "_");
        let mut vars = vec![(format!("CC_{u}"), self.cc.display().to_string())];
        if let Some(cxx) = &self.cxx {
            vars.push((format!("CXX_{u}"), cxx.display().to_string()));
        }
        if !self.flags.is_empty() {
            for base in ["CFLAGS", "CXXFLAGS"] {
                let mut value: Vec<String> = user_value(base, t, self.cross, env)
                    .map(|v| v.split_whitespace().map(str::to_string).collect())
                    .unwrap_or_default();
                value.extend(self.flags.iter().cloned());
                vars.push((format!("{base}_{u}"), value.join(" ")));
            }
        }
        vars
    }

    /// [`CBuild::vars`] from this process's environment.
    pub fn env_vars(&self) -> Vec<(String, String)> {
        self.vars(&|k| std::env::var(k).ok())
    }

    /// The user's compiler setting for the target that this build replaces (`CC=gcc-13`),
    /// said on the row; `None` when the user set none.
    pub fn replaced(&self, env: &dyn Fn(&str) -> Option<String>) -> Option<String> {
        let name = names("CC", &self.target, self.cross)
            .into_iter()
            .find(|n| env(n).is_some_and(|v| !v.is_empty()))?;
        let value = env(&name)?;
        (!crate::toolchain::clang::is_clang(Path::new(&value))).then(|| format!("{name}={value}"))
    }
}

/// The names `cc` reads a variable under for `target`, first taken first.
fn names(base: &str, target: &str, cross: bool) -> [String; 4] {
    let kind = if cross { "TARGET" } else { "HOST" };
    [
        format!("{base}_{target}"),
        format!("{base}_{}", target.replace('-', "_")),
        format!("{kind}_{base}"),
        base.to_string(),
    ]
}

/// The value of `base` (`CFLAGS`) that `cc` takes first for `target`.
fn user_value(
    base: &str,
    target: &str,
    cross: bool,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<String> {
    names(base, target, cross).iter().find_map(|n| env(n))
}

/// The packages of the build graph under `root` (a package name of the workspace) whose
/// build scripts compile C or C++: those that depend on `cc` or `cmake`, as `lock` (the
/// text of Cargo.lock) records the graph; sorted. A package that uses them only on another
/// platform is listed too: its build then compiles no C, and the candidate is byte-identical.
pub(crate) fn c_packages(lock: &str, root: &str) -> Vec<String> {
    // name → (its dependencies' names), every version of a name merged: enough to tell
    // which packages can be reached, and a false positive costs one byte-identical build.
    let mut deps: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for p in super::lockfile::packages(lock) {
        deps.entry(p.name).or_default().extend(p.dependencies);
    }
    let mut seen = BTreeSet::new();
    let mut todo = vec![root.to_string()];
    while let Some(name) = todo.pop() {
        if let Some(d) = deps.get(&name).filter(|_| !seen.contains(&name)) {
            todo.extend(d.iter().cloned());
        }
        seen.insert(name);
    }
    let compiles_c = |n: &String| {
        deps.get(n)
            .is_some_and(|d| d.contains("cc") || d.contains("cmake"))
    };
    seen.into_iter().filter(compiles_c).collect()
}

/// [`c_packages`] of `project`'s package, from the workspace's Cargo.lock (none without one).
pub(crate) fn packages_of(project: &super::Project) -> Vec<String> {
    let lock = std::fs::read_to_string(project.workspace_root.join("Cargo.lock"));
    c_packages(&lock.unwrap_or_default(), &project.package)
}

/// Of `packages`, those whose build script ran in the build whose output dir is
/// `output_dir` (it has a `build/<package>-<hash>/` folder); `None` when that build's
/// `build/` folder is not there to tell (a build reused from its kept binary alone). A
/// package in Cargo.lock that the build never compiled (an optional dependency left off, a
/// `-sys` crate behind a feature) compiles no C.
pub(crate) fn ran_build_scripts(output_dir: &Path, packages: &[String]) -> Option<Vec<String>> {
    let entries = std::fs::read_dir(output_dir.join("build")).ok()?;
    let ran: BTreeSet<String> = entries
        .flatten()
        .filter_map(|e| {
            let dir = e.file_name().to_string_lossy().into_owned();
            dir.rsplit_once('-').map(|(pkg, _hash)| pkg.to_string())
        })
        .collect();
    Some(
        packages
            .iter()
            .filter(|p| ran.contains(*p))
            .cloned()
            .collect(),
    )
}

/// The C and C++ functions a build's objects define, by package: every `.a` and `.o` in
/// the `OUT_DIR`s of its build scripts (`<output dir>/build/<pkg>-<hash>/out`, the output
/// dir [`super::BuildSettings::output_dir`]), their defined text symbols. Bounded: at most
/// [`MAX_FILES`] files are read.
pub(crate) fn c_functions(output_dir: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let build = output_dir.join("build");
    let mut files = Vec::new();
    for entry in std::fs::read_dir(&build).into_iter().flatten().flatten() {
        let dir = entry.file_name().to_string_lossy().into_owned();
        let Some((pkg, _hash)) = dir.rsplit_once('-') else {
            continue;
        };
        objects_under(&entry.path().join("out"), 0, &mut |f| {
            files.push((pkg.to_string(), f))
        });
    }
    for (pkg, file) in files.into_iter().take(MAX_FILES) {
        let names = defined_functions(&file);
        if !names.is_empty() {
            out.entry(pkg).or_default().extend(names);
        }
    }
    out
}

/// How many object files [`c_functions`] reads at most (a large C library has hundreds).
pub(crate) const MAX_FILES: usize = 4096;

/// Every `.a` and `.o` under `dir`, at most 6 folders deep (cmake's build trees).
fn objects_under(dir: &Path, depth: u32, found: &mut dyn FnMut(PathBuf)) {
    if depth > 6 {
        return;
    }
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            objects_under(&path, depth + 1, found);
        } else if kind.is_file()
            && path
                .extension()
                .is_some_and(|e| e == "a" || e == "o" || e == "lib" || e == "obj")
        {
            found(path);
        }
    }
}

/// The text symbols an object or archive defines (local ones too: a `static` C function
/// is in the profile as well).
fn defined_functions(file: &Path) -> BTreeSet<String> {
    use object::read::archive::ArchiveFile;
    use object::{Object, ObjectSymbol, SymbolKind};
    let mut names = BTreeSet::new();
    let Ok(data) = std::fs::read(file) else {
        return names;
    };
    let mut add = |bytes: &[u8]| {
        if let Ok(obj) = object::File::parse(bytes) {
            for s in obj.symbols() {
                if s.is_definition() && s.kind() == SymbolKind::Text {
                    if let Ok(n) = s.name() {
                        names.insert(n.to_string());
                    }
                }
            }
        }
    };
    match ArchiveFile::parse(&*data) {
        Ok(archive) => {
            for member in archive.members().flatten() {
                if let Ok(bytes) = member.data(&*data) {
                    add(bytes);
                }
            }
        }
        Err(_) => add(&data),
    }
    names
}

/// A profile's function name as the object defines it: a `static` function's name is
/// `<file>;<name>` (or `<file>:<name>` in older formats) in the profile.
pub(crate) fn symbol_of(profile_name: &str) -> &str {
    profile_name
        .rsplit_once(';')
        .map(|(_, n)| n)
        .unwrap_or(profile_name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A C package whose build script ran (its `build/<pkg>-<hash>` folder) is kept; one
    /// Cargo.lock names but the build never compiled is not; no `build/` folder tells
    /// nothing.
    #[test]
    fn only_packages_whose_build_script_ran_compile_c() {
        let dir = tempfile::tempdir().unwrap();
        let packages = vec!["zstd-sys".to_string(), "pcre2-sys".to_string()];
        assert_eq!(ran_build_scripts(dir.path(), &packages), None);
        std::fs::create_dir_all(dir.path().join("build/zstd-sys-0123abcd/out")).unwrap();
        std::fs::create_dir_all(dir.path().join("build/memchr-89ab/out")).unwrap();
        assert_eq!(
            ran_build_scripts(dir.path(), &packages),
            Some(vec!["zstd-sys".to_string()])
        );
        std::fs::remove_dir_all(dir.path().join("build/zstd-sys-0123abcd")).unwrap();
        assert_eq!(ran_build_scripts(dir.path(), &packages), Some(vec![]));
    }

    const LOCK: &str = r#"
version = 4

[[package]]
name = "app"
version = "0.1.0"
dependencies = ["zstd", "serde"]

[[package]]
name = "zstd"
version = "0.13.0"
dependencies = ["zstd-safe"]

[[package]]
name = "zstd-safe"
version = "7.0.0"
dependencies = ["zstd-sys"]

[[package]]
name = "zstd-sys"
version = "2.0.0"
dependencies = ["cc 1.2.0 (registry+https://github.com/rust-lang/crates.io-index)", "pkg-config"]

[[package]]
name = "cc"
version = "1.2.0"

[[package]]
name = "serde"
version = "1.0.0"

[[package]]
name = "other-tool"
version = "0.1.0"
dependencies = ["cmake"]
"#;

    #[test]
    fn packages_reached_from_the_root_that_depend_on_cc_or_cmake() {
        assert_eq!(c_packages(LOCK, "app"), ["zstd-sys"]);
        assert_eq!(c_packages(LOCK, "other-tool"), ["other-tool"]);
        assert!(c_packages(LOCK, "serde").is_empty());
        assert!(c_packages("not toml [", "app").is_empty());
    }

    #[test]
    fn the_target_s_variables_keep_the_user_s_flags_and_append_ours() {
        let c = CBuild {
            target: "aarch64-unknown-linux-gnu".into(),
            cross: true,
            cc: "/usr/bin/clang-22".into(),
            cxx: Some("/usr/bin/clang++-22".into()),
            flags: vec!["-fprofile-use=/p.profdata".into()],
        };
        let env = |k: &str| match k {
            "CFLAGS" => Some("-O3 -g".to_string()),
            "CXXFLAGS_aarch64_unknown_linux_gnu" => Some("-Wall".to_string()),
            "TARGET_CXXFLAGS" => Some("-never-read".to_string()),
            "CC" => Some("gcc-13".to_string()),
            _ => None,
        };
        let vars = c.vars(&env);
        let get = |k: &str| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(
            get("CC_aarch64_unknown_linux_gnu"),
            Some("/usr/bin/clang-22")
        );
        assert_eq!(
            get("CXX_aarch64_unknown_linux_gnu"),
            Some("/usr/bin/clang++-22")
        );
        assert_eq!(
            get("CFLAGS_aarch64_unknown_linux_gnu"),
            Some("-O3 -g -fprofile-use=/p.profdata")
        );
        assert_eq!(
            get("CXXFLAGS_aarch64_unknown_linux_gnu"),
            Some("-Wall -fprofile-use=/p.profdata")
        );
        assert_eq!(c.replaced(&env).as_deref(), Some("CC=gcc-13"));
        let clang_already = |k: &str| (k == "CC").then(|| "clang-22".to_string());
        assert_eq!(c.replaced(&clang_already), None);
    }

    #[test]
    fn no_flags_sets_only_the_compilers() {
        let c = CBuild {
            target: "x86_64-unknown-linux-gnu".into(),
            cross: false,
            cc: "clang-22".into(),
            cxx: None,
            flags: vec![],
        };
        assert_eq!(
            c.vars(&|_| Some("-O1".into())),
            [(
                "CC_x86_64_unknown_linux_gnu".to_string(),
                "clang-22".to_string()
            )]
        );
    }

    #[test]
    fn a_static_function_s_profile_name_is_its_symbol_after_the_file() {
        assert_eq!(symbol_of("csrc/vm.c;rare"), "rare");
        assert_eq!(symbol_of("vm_run"), "vm_run");
    }
}
