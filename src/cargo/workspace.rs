//! Which package and binary a command works on: cargo's selection flags as plain data
//! (`Selection`, `Features`), the workspace's metadata (`Workspace`: `cargo metadata` once),
//! and the `Project` resolved from them — a binary, or with a spec's harness the bench or
//! test target of a package.

use std::path::{Path, PathBuf};

use super::flags::flags;
use super::{CargoError, Flags};

/// The package and binary being optimized, and where things live.
#[derive(Debug, Clone)]
pub struct Project {
    /// The package's own Cargo.toml.
    pub manifest_path: PathBuf,
    pub package: String,
    pub package_dir: PathBuf,
    pub version: String,
    pub bin: String,
    /// The binary's root file (`src/main.rs`), as cargo names it; `None` for a harness.
    pub bin_root: Option<PathBuf>,
    /// Every binary target of the package.
    pub bins: Vec<String>,
    /// Every bench target of the package (what `cargo = "bench"` workloads can run).
    pub benches: Vec<String>,
    pub workspace_root: PathBuf,
    /// Root for everything we write: `--target-dir`, else cargo's target directory.
    pub target_dir: PathBuf,
    /// The features flags the user chose; every build uses them.
    pub features: Features,
    /// The bench or test harness the workloads run instead of a binary (`bin` is then its
    /// target's name); its `target` is resolved (`None` only for the library's unit tests).
    pub harness: Option<crate::spec::Harness>,
    /// The benchmark framework among the package's dependencies (`criterion`, `divan`),
    /// when its bench harness is what runs.
    pub bench_framework: Option<String>,
    /// The version the manifest asks of that framework (`^0.5`), as `cargo metadata` gives it.
    pub bench_framework_req: Option<String>,
    /// The library a host program loads, when the workloads run one (`command`): the
    /// candidates are that library (`bin` is then its target's name, `bin_root` its root).
    pub library: Option<super::library::Library>,
}

#[cfg(test)]
impl Project {
    /// A project at `/p` with one binary, for unit tests that need one.
    pub(crate) fn for_tests(bin: &str, version: &str) -> Project {
        Project {
            manifest_path: "/p/Cargo.toml".into(),
            package: "p".into(),
            package_dir: "/p".into(),
            version: version.into(),
            bin: bin.into(),
            bin_root: None,
            bins: vec![bin.into()],
            benches: vec![],
            workspace_root: "/p".into(),
            target_dir: "/p/target".into(),
            features: Features::default(),
            harness: None,
            bench_framework: None,
            bench_framework_req: None,
            library: None,
        }
    }
}

/// Which package, binary, features, target, profile and target dir to use, and the flags
/// every cargo call gets: cargo's own selection and build flags as plain data (the command
/// line fills it in).
#[derive(Debug, Clone, Default)]
pub struct Selection {
    pub manifest_path: Option<PathBuf>,
    pub package: Option<String>,
    pub bin: Option<String>,
    pub features: Vec<String>,
    pub all_features: bool,
    pub no_default_features: bool,
    pub target: Option<String>,
    /// `--profile` (default `release`).
    pub profile: String,
    pub target_dir: Option<PathBuf>,
    /// `-j N`.
    pub jobs: Option<usize>,
    pub locked: bool,
    pub frozen: bool,
    pub offline: bool,
    /// `--config KEY=VALUE|PATH`, in order.
    pub config: Vec<String>,
}

impl Selection {
    /// The flags every cargo call gets ([`set_flags`]).
    pub fn flags(&self) -> Flags {
        Flags {
            jobs: self.jobs,
            locked: self.locked,
            frozen: self.frozen,
            offline: self.offline,
            config: self.config.clone(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Features {
    pub features: Vec<String>,
    pub all_features: bool,
    pub no_default_features: bool,
}

impl Features {
    pub fn from_selection(sel: &Selection) -> Self {
        Features {
            features: sel
                .features
                .iter()
                .flat_map(|f| f.split([',', ' ']))
                .filter(|f| !f.is_empty())
                .map(str::to_string)
                .collect(),
            all_features: sel.all_features,
            no_default_features: sel.no_default_features,
        }
    }
    pub(super) fn cargo_args(&self) -> Vec<String> {
        let mut v = Vec::new();
        if !self.features.is_empty() {
            v.push("--features".to_string());
            v.push(self.features.join(","));
        }
        if self.all_features {
            v.push("--all-features".into());
        }
        if self.no_default_features {
            v.push("--no-default-features".into());
        }
        v
    }
}

/// Cargo metadata for the selection: the workspace and the package that `-p`,
/// `--manifest-path` or the current directory designate (`None` in a virtual workspace
/// without `-p`).
pub(crate) struct Workspace {
    meta: cargo_metadata::Metadata,
    manifest_arg: Option<PathBuf>,
}

impl Workspace {
    pub(crate) fn load(sel: &Selection) -> Result<Self, CargoError> {
        let mut cmd = cargo_metadata::MetadataCommand::new();
        cmd.no_deps();
        if let Some(m) = &sel.manifest_path {
            cmd.manifest_path(m);
        }
        let f = flags();
        cmd.other_options([f.network_args(), f.config_args()].concat());
        let manifest = (sel.manifest_path.as_ref())
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "the current directory".into());
        let failed = |message: String| CargoError::Metadata {
            manifest: manifest.clone(),
            message,
        };
        let mut std_cmd = cmd.cargo_command();
        std_cmd
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let (mut json, mut stderr) = (None, String::new());
        let outcome = super::child::run(
            &mut std_cmd,
            "`cargo metadata`",
            super::child::METADATA_TIMEOUT,
            "cargo reads the manifests and, when it needs to, the registry's index: check \
             that `cargo metadata --no-deps` answers here, or pass --offline",
            &mut |stream, line| match stream {
                super::child::Pipe::Stdout if json.is_none() && line.starts_with('{') => {
                    json = Some(line.to_string())
                }
                super::child::Pipe::Stdout => {}
                super::child::Pipe::Stderr => {
                    stderr.push_str(line);
                    stderr.push('\n');
                }
            },
        )?;
        if !outcome.status.success() {
            return Err(failed(stderr.trim().to_string()));
        }
        let json = json.ok_or_else(|| failed("cargo metadata printed no JSON".into()))?;
        let meta =
            cargo_metadata::MetadataCommand::parse(json).map_err(|e| failed(e.to_string()))?;
        Ok(Workspace {
            meta,
            manifest_arg: sel.manifest_path.clone(),
        })
    }

    pub(crate) fn root(&self) -> PathBuf {
        self.meta.workspace_root.clone().into_std_path_buf()
    }

    /// Where builds go and everything we write: `--target-dir`, else cargo's target
    /// directory (`CARGO_TARGET_DIR`, `build.target-dir`, else the workspace's `target/`).
    pub(crate) fn target_dir(&self, sel: &Selection) -> PathBuf {
        match &sel.target_dir {
            Some(d) => crate::util::absolute(d),
            None => self.meta.target_directory.clone().into_std_path_buf(),
        }
    }

    /// The folder whose optimize.toml applies: the named package's, else the package
    /// [`Workspace::only_package`] picks (the one `init` writes into), else the workspace
    /// root.
    pub(crate) fn spec_dir(&self, package: Option<&str>) -> Result<PathBuf, CargoError> {
        if let Some(name) = package {
            return Ok(package_dir(self.find_package(name)?));
        }
        Ok(self
            .only_package()
            .map(package_dir)
            .unwrap_or_else(|_| self.root()))
    }

    fn find_package(&self, name: &str) -> Result<&cargo_metadata::Package, CargoError> {
        self.members()
            .find(|p| p.name.as_str() == name)
            .ok_or_else(|| {
                CargoError::UnknownPackage(
                    name.to_string(),
                    self.members()
                        .map(|p| p.name.to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                )
            })
    }

    fn members(&self) -> impl Iterator<Item = &cargo_metadata::Package> {
        self.meta.workspace_packages().into_iter()
    }

    /// The package of `--manifest-path`, else of the nearest Cargo.toml at or above the
    /// current directory (cargo's own rule: run inside a workspace member, it selects that
    /// member), when it is a member.
    fn default_package(&self) -> Option<&cargo_metadata::Package> {
        let manifest = match &self.manifest_arg {
            Some(m) => m.clone(),
            None => nearest_manifest(&std::env::current_dir().ok()?)?,
        };
        let m = manifest.canonicalize().ok()?;
        self.members()
            .find(|p| p.manifest_path.as_std_path().canonicalize().ok() == Some(m.clone()))
    }

    /// Resolve the package and binary: flags first, then the spec's `package`/`bin`,
    /// then the only candidate. Every ambiguity is an error that says how to choose.
    pub(crate) fn project(
        &self,
        sel: &Selection,
        spec_package: Option<&str>,
        spec_bin: Option<&str>,
    ) -> Result<Project, CargoError> {
        let pkg = self.package_for(sel, spec_package)?;
        let bins = bin_names(pkg);
        let bin = choose_bin(pkg, &bins, sel.bin.as_deref().or(spec_bin))?;
        Ok(self.project_of(sel, pkg, bin))
    }

    /// The package to use when none is named: cargo's default one (of the current
    /// directory or `--manifest-path`), else the only member with a binary, as `cargo run`
    /// picks at a virtual workspace's root.
    fn only_package(&self) -> Result<&cargo_metadata::Package, CargoError> {
        if let Some(p) = self.default_package() {
            return Ok(p);
        }
        let names = |ps: &[&cargo_metadata::Package]| {
            (ps.iter().map(|p| p.name.to_string()))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let with_bins: Vec<_> = (self.members())
            .filter(|p| !bin_names(p).is_empty())
            .collect();
        let choices = match with_bins.as_slice() {
            [one] => return Ok(*one),
            [] => format!(
                "members: {} (none has a binary)",
                names(&self.members().collect::<Vec<_>>())
            ),
            several => format!("packages with binaries: {}", names(several)),
        };
        Err(CargoError::AmbiguousPackage(
            format!(
                "{} is a workspace with several packages",
                self.root().display()
            ),
            choices,
        ))
    }

    /// [`Workspace::project`], or with `harness`, the package whose bench or test harness
    /// the workloads run (a library-only package is fine then).
    pub(crate) fn project_for(
        &self,
        sel: &Selection,
        spec_package: Option<&str>,
        spec_bin: Option<&str>,
        harness: Option<&crate::spec::Harness>,
    ) -> Result<Project, CargoError> {
        let Some(h) = harness else {
            return self.project(sel, spec_package, spec_bin);
        };
        let pkg = self.package_for(sel, spec_package)?;
        let (bin, target) = harness_target(pkg, h)?;
        let mut project = self.project_of(sel, pkg, bin);
        project.harness = Some(crate::spec::Harness {
            kind: h.kind,
            target,
        });
        Ok(project)
    }

    /// The package whose `cdylib` a host program loads (the workloads give `command`): the
    /// library is what is built, installed and timed (`cargo::library`).
    pub(crate) fn library_project(
        &self,
        sel: &Selection,
        spec_package: Option<&str>,
    ) -> Result<Project, CargoError> {
        let pkg = self.package_for(sel, spec_package)?;
        let (library, root) = super::library::of(pkg)?;
        let mut project = self.project_of(sel, pkg, library.target.clone());
        project.bin_root = Some(root);
        project.library = Some(library);
        Ok(project)
    }

    /// The selected package, whatever its targets (its name stands in for `bin`; its
    /// `cdylib`, if it has one, is `library`): for `init` and `doctor`, which look at what
    /// the package has.
    pub(crate) fn package_project(&self, sel: &Selection) -> Result<Project, CargoError> {
        let pkg = self.package_for(sel, None)?;
        let mut project = self.project_of(sel, pkg, pkg.name.to_string());
        project.library = super::library::of(pkg).ok().map(|(l, _)| l);
        Ok(project)
    }

    /// The package `-p` (or the spec) names, else [`Workspace::only_package`].
    fn package_for(
        &self,
        sel: &Selection,
        spec_package: Option<&str>,
    ) -> Result<&cargo_metadata::Package, CargoError> {
        match sel.package.as_deref().or(spec_package) {
            Some(name) => self.find_package(name),
            None => self.only_package(),
        }
    }

    fn project_of(&self, sel: &Selection, pkg: &cargo_metadata::Package, bin: String) -> Project {
        let framework = ["criterion", "divan"]
            .into_iter()
            .find_map(|f| pkg.dependencies.iter().find(|d| d.name == f));
        Project {
            manifest_path: pkg.manifest_path.clone().into_std_path_buf(),
            package: pkg.name.to_string(),
            package_dir: package_dir(pkg),
            version: pkg.version.to_string(),
            bin_root: pkg
                .targets
                .iter()
                .find(|t| t.is_bin() && t.name == bin)
                .map(|t| t.src_path.clone().into_std_path_buf()),
            bin,
            bins: bin_names(pkg),
            benches: target_names(pkg, "bench"),
            workspace_root: self.root(),
            target_dir: self.target_dir(sel),
            features: Features::from_selection(sel),
            harness: None,
            bench_framework: framework.map(|d| d.name.to_string()),
            bench_framework_req: framework.map(|d| d.req.to_string()),
            library: None,
        }
    }
}

/// The harness's target in `pkg`: its name (for messages and files) and the target to
/// build (`None`: the library's unit tests).
fn harness_target(
    pkg: &cargo_metadata::Package,
    h: &crate::spec::Harness,
) -> Result<(String, Option<String>), CargoError> {
    use crate::spec::HarnessKind;
    let kind = match h.kind {
        HarnessKind::Bench => "bench",
        HarnessKind::Test => "test",
    };
    let names = target_names(pkg, kind);
    let err = |which: String, fix: String| CargoError::NoHarness {
        package: pkg.name.to_string(),
        kind,
        which,
        fix,
    };
    let listed = if names.is_empty() {
        "(none)".to_string()
    } else {
        names.join(", ")
    };
    match (&h.target, h.kind, names.as_slice()) {
        (Some(t), _, _) if names.contains(t) => Ok((t.clone(), Some(t.clone()))),
        (Some(t), _, _) => Err(err(
            format!("named `{t}`"),
            format!("set `{kind}-target` to one of: {listed}"),
        )),
        (None, HarnessKind::Bench, [one]) => Ok((one.clone(), Some(one.clone()))),
        (None, HarnessKind::Bench, []) => Err(err(
            String::new(),
            "add a bench under benches/ (with `harness = false` for criterion or divan)".into(),
        )),
        (None, HarnessKind::Bench, _) => Err(err(
            "chosen".into(),
            format!("set `bench-target` in optimize.toml to one of: {listed}"),
        )),
        (None, HarnessKind::Test, _) => match pkg.targets.iter().find(|t| t.is_lib()) {
            Some(lib) => Ok((lib.name.clone(), None)),
            None => Err(err(
                "for the library (there is no library)".into(),
                format!("set `test-target` to one of: {listed}"),
            )),
        },
    }
}

/// The names of `pkg`'s targets of `kind` (`bench`, `test`, `example`).
fn target_names(pkg: &cargo_metadata::Package, kind: &str) -> Vec<String> {
    pkg.targets
        .iter()
        .filter(|t| t.kind.iter().any(|k| k.to_string() == kind))
        .map(|t| t.name.clone())
        .collect()
}

fn package_dir(p: &cargo_metadata::Package) -> PathBuf {
    p.manifest_path
        .parent()
        .map(|d| d.to_path_buf().into_std_path_buf())
        .unwrap_or_default()
}

fn bin_names(p: &cargo_metadata::Package) -> Vec<String> {
    p.targets
        .iter()
        .filter(|t| t.is_bin())
        .map(|t| t.name.clone())
        .collect()
}

/// The binary of `pkg` to use: the one named (it must exist), else the only one, else
/// cargo's `default-run`.
fn choose_bin(
    pkg: &cargo_metadata::Package,
    bins: &[String],
    named: Option<&str>,
) -> Result<String, CargoError> {
    match named {
        Some(b) if bins.iter().any(|x| x == b) => Ok(b.to_string()),
        Some(b) => Err(CargoError::UnknownBin {
            package: pkg.name.to_string(),
            bin: b.to_string(),
            available: if bins.is_empty() {
                "(none)".into()
            } else {
                bins.join(", ")
            },
        }),
        None => match bins {
            [] => Err(CargoError::NoBinary(pkg.name.to_string())),
            [one] => Ok(one.clone()),
            // cargo's own rule: `default-run` picks one.
            _ => pkg
                .default_run
                .clone()
                .ok_or_else(|| CargoError::AmbiguousBin {
                    package: pkg.name.to_string(),
                    available: bins.join(", "),
                }),
        },
    }
}

/// The first `Cargo.toml` in `dir` or its ancestors (how cargo finds the manifest).
fn nearest_manifest(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .map(|d| d.join("Cargo.toml"))
        .find(|m| m.is_file())
}
