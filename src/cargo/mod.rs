//! Everything that runs cargo: metadata (which package, which binary), builds, the
//! artifact path of a build, and the composition of rustflags.
//!
//! This is the ONLY module that runs cargo. It knows nothing about stages: it builds one
//! `BuildSettings` into one target dir and says where the binary is and how long it took.
//!
//! Rustflags: cargo takes `CARGO_ENCODED_RUSTFLAGS`, else `RUSTFLAGS`, else the config's
//! `target.<triple>.rustflags` / matching `target.'cfg(…)'.rustflags`, else
//! `build.rustflags`. Setting our own flags through any of these would silently replace
//! the user's, so [`user_rustflags`] reproduces cargo's choice and every build passes
//! `user flags + stage flags` as `CARGO_ENCODED_RUSTFLAGS`.

mod flags;
pub mod profile;
mod reuse;
pub mod runner;
pub mod wrapper;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use flags::flags;
pub use flags::{set_flags, Flags};

#[derive(Debug, thiserror::Error)]
pub enum CargoError {
    #[error("cargo metadata failed for {manifest}:\n{message}")]
    Metadata { manifest: String, message: String },
    #[error("package `{0}` is not in this workspace\n  fix: pick one of: {1}")]
    UnknownPackage(String, String),
    #[error("{0}\n  fix: pass -p/--package NAME (or set `package = \"NAME\"` in optimize.toml); packages with binaries: {1}")]
    AmbiguousPackage(String, String),
    #[error("package `{0}` has no binary target: cargo optimize optimizes programs\n  fix: add a [[bin]] target (src/main.rs), run the library through its benches (workloads with cargo = \"bench\"; `cargo optimize init` writes them when the package has a bench), or choose another package with -p")]
    NoBinary(String),
    #[error("package `{package}` has no binary named `{bin}`\n  fix: pick one of: {available}")]
    UnknownBin {
        package: String,
        bin: String,
        available: String,
    },
    #[error("package `{package}` has several binaries ({available}) and none was chosen\n  fix: pass --bin NAME, or set `bin = \"NAME\"` in optimize.toml")]
    AmbiguousBin { package: String, available: String },
    #[error("cannot run cargo: {0}")]
    Spawn(std::io::Error),
    #[error("`{command}` failed ({status}):\n{tail}")]
    Build {
        command: String,
        status: String,
        tail: String,
    },
    #[error("package `{package}` has no {kind} target {which}\n  fix: {fix}")]
    NoHarness {
        package: String,
        kind: &'static str,
        which: String,
        fix: String,
    },
    #[error("cargo built `{0}` but reported no executable for it")]
    NoArtifact(String),
    #[error("cannot read cargo config {path}: {message}")]
    Config { path: PathBuf, message: String },
}

/// The package and binary being optimized, and where things live.
#[derive(Debug, Clone)]
pub struct Project {
    /// The package's own Cargo.toml.
    pub manifest_path: PathBuf,
    pub package: String,
    pub package_dir: PathBuf,
    pub version: String,
    pub bin: String,
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
            bins: vec![bin.into()],
            benches: vec![],
            workspace_root: "/p".into(),
            target_dir: "/p/target".into(),
            features: Features::default(),
            harness: None,
            bench_framework: None,
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
    fn cargo_args(&self) -> Vec<String> {
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
pub struct Workspace {
    meta: cargo_metadata::Metadata,
    manifest_arg: Option<PathBuf>,
}

impl Workspace {
    pub fn load(sel: &Selection) -> Result<Self, CargoError> {
        let mut cmd = cargo_metadata::MetadataCommand::new();
        cmd.no_deps();
        if let Some(m) = &sel.manifest_path {
            cmd.manifest_path(m);
        }
        let f = flags();
        cmd.other_options([f.network_args(), f.config_args()].concat());
        let meta = cmd.exec().map_err(|e| CargoError::Metadata {
            manifest: sel
                .manifest_path
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| "the current directory".into()),
            message: match e {
                cargo_metadata::Error::CargoMetadata { stderr } => stderr.trim().to_string(),
                other => other.to_string(),
            },
        })?;
        Ok(Workspace {
            meta,
            manifest_arg: sel.manifest_path.clone(),
        })
    }

    pub fn root(&self) -> PathBuf {
        self.meta.workspace_root.clone().into_std_path_buf()
    }

    /// The folder whose optimize.toml applies: the named package's, else the package of
    /// the manifest in use, else the workspace root.
    pub fn spec_dir(&self, package: Option<&str>) -> Result<PathBuf, CargoError> {
        if let Some(name) = package {
            return Ok(package_dir(self.find_package(name)?));
        }
        Ok(self
            .default_package()
            .map(package_dir)
            .unwrap_or_else(|| self.root()))
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
    pub fn project(
        &self,
        sel: &Selection,
        spec_package: Option<&str>,
        spec_bin: Option<&str>,
    ) -> Result<Project, CargoError> {
        let pkg = match sel.package.as_deref().or(spec_package) {
            Some(name) => self.find_package(name)?,
            None => self.only_package()?,
        };
        let bins = bin_names(pkg);
        let bin = choose_bin(pkg, &bins, sel.bin.as_deref().or(spec_bin))?;
        let target_dir = match &sel.target_dir {
            Some(d) => crate::util::absolute(d),
            None => self.meta.target_directory.clone().into_std_path_buf(),
        };
        Ok(Project {
            manifest_path: pkg.manifest_path.clone().into_std_path_buf(),
            package: pkg.name.to_string(),
            package_dir: package_dir(pkg),
            version: pkg.version.to_string(),
            bin,
            benches: target_names(pkg, "bench"),
            bins,
            workspace_root: self.root(),
            target_dir,
            features: Features::from_selection(sel),
            harness: None,
            bench_framework: None,
        })
    }

    /// The package to use when none is named: cargo's default one, else the only member
    /// with a binary.
    fn only_package(&self) -> Result<&cargo_metadata::Package, CargoError> {
        if let Some(p) = self.default_package() {
            return Ok(p);
        }
        let with_bins: Vec<_> = (self.members())
            .filter(|p| !bin_names(p).is_empty())
            .collect();
        match with_bins.as_slice() {
            [one] => Ok(*one),
            _ => Err(CargoError::AmbiguousPackage(
                format!(
                    "{} is a workspace with several packages",
                    self.root().display()
                ),
                (with_bins.iter().map(|p| p.name.to_string()))
                    .collect::<Vec<_>>()
                    .join(", "),
            )),
        }
    }

    /// [`Workspace::project`], or with `harness`, the package whose bench or test harness
    /// the workloads run (a library-only package is fine then).
    pub fn project_for(
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
        project.bench_framework = ["criterion", "divan"]
            .into_iter()
            .find(|f| pkg.dependencies.iter().any(|d| d.name == *f))
            .map(str::to_string);
        project.harness = Some(crate::spec::Harness {
            kind: h.kind,
            target,
        });
        Ok(project)
    }

    /// The selected package, whatever its targets (its name stands in for `bin`): for
    /// `init`, which proposes workloads from what the package has.
    pub fn package_project(&self, sel: &Selection) -> Result<Project, CargoError> {
        let pkg = self.package_for(sel, None)?;
        Ok(self.project_of(sel, pkg, pkg.name.to_string()))
    }

    /// The package `-p` (or the spec) names, else the one of the current directory.
    fn package_for(
        &self,
        sel: &Selection,
        spec_package: Option<&str>,
    ) -> Result<&cargo_metadata::Package, CargoError> {
        match sel.package.as_deref().or(spec_package) {
            Some(name) => self.find_package(name),
            None => self.default_package().ok_or_else(|| {
                CargoError::AmbiguousPackage(
                    format!(
                        "{} is a workspace with several packages",
                        self.root().display()
                    ),
                    self.members()
                        .map(|p| p.name.to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                )
            }),
        }
    }

    fn project_of(&self, sel: &Selection, pkg: &cargo_metadata::Package, bin: String) -> Project {
        Project {
            manifest_path: pkg.manifest_path.clone().into_std_path_buf(),
            package: pkg.name.to_string(),
            package_dir: package_dir(pkg),
            version: pkg.version.to_string(),
            bin,
            bins: bin_names(pkg),
            benches: target_names(pkg, "bench"),
            workspace_root: self.root(),
            target_dir: match &sel.target_dir {
                Some(d) => crate::util::absolute(d),
                None => self.meta.target_directory.clone().into_std_path_buf(),
            },
            features: Features::from_selection(sel),
            harness: None,
            bench_framework: None,
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

/// Everything that determines one build. Two equal settings produce the same binary, so
/// the settings hash names the target dir.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
pub struct BuildSettings {
    /// The cargo profile (`--profile`).
    pub profile: String,
    /// Profile keys set on top of the user's profile (`--config profile.<p>.<key>=<value>`),
    /// values as TOML literals (`"\"fat\""`, `"1"`, `"true"`).
    pub profile_overrides: BTreeMap<String, String>,
    /// The user's own rustflags (see [`user_rustflags`]), kept first in every build.
    pub user_rustflags: Vec<String>,
    /// The stage's flags, after the user's.
    pub rustflags: Vec<String>,
    /// `--target`: `None` builds for the host the way a plain `cargo build` does.
    pub target: Option<String>,
    pub features: Features,
}

impl BuildSettings {
    /// The flags rustc will see: the user's, then ours.
    pub fn all_rustflags(&self) -> Vec<String> {
        compose_rustflags(&self.user_rustflags, &self.rustflags)
    }

    /// A short stable hash of the settings (names target dirs and cache entries).
    pub fn hash(&self) -> String {
        use sha2::Digest;
        let json = serde_json::to_vec(self).unwrap_or_default();
        let digest = sha2::Sha256::digest(&json);
        digest[..8].iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The same settings with extra rustflags appended.
    pub fn with_rustflags<I, S>(&self, flags: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut s = self.clone();
        s.rustflags.extend(flags.into_iter().map(Into::into));
        s
    }

    /// The cargo command line (without `cargo`) that reproduces this build: `build --bin`,
    /// or for a harness `bench --no-run --bench T` / `test --no-run --test T` (`--lib`).
    pub fn cargo_args(&self, project: &Project, target_dir: &Path) -> Vec<String> {
        use crate::spec::HarnessKind;
        let Some(h) = &project.harness else {
            return self.command_args(
                &["build"],
                Some(&project.bin),
                "--profile",
                project,
                target_dir,
            );
        };
        let sub = match h.kind {
            HarnessKind::Bench => ["bench", "--no-run"],
            HarnessKind::Test => ["test", "--no-run"],
        };
        let mut args = self.command_args(&sub, None, "--profile", project, target_dir);
        match (&h.target, h.kind) {
            (Some(t), HarnessKind::Bench) => args.extend(["--bench".into(), t.clone()]),
            (Some(t), HarnessKind::Test) => args.extend(["--test".into(), t.clone()]),
            (None, _) => args.push("--lib".into()),
        }
        args
    }

    /// `cargo_args` for any cargo subcommand (`["test"]`, `["nextest", "run"]`): the same
    /// package, profile, target, features and profile overrides; `bin` limits it to one
    /// binary; `profile_flag` is how the subcommand spells cargo's `--profile`.
    fn command_args(
        &self,
        subcommand: &[&str],
        bin: Option<&str>,
        profile_flag: &str,
        project: &Project,
        target_dir: &Path,
    ) -> Vec<String> {
        let mut args: Vec<String> = subcommand.iter().map(|s| s.to_string()).collect();
        args.extend([
            "--manifest-path".into(),
            project.manifest_path.display().to_string(),
            "--package".into(),
            project.package.clone(),
        ]);
        if let Some(b) = bin {
            args.extend(["--bin".to_string(), b.to_string()]);
        }
        args.extend([
            profile_flag.to_string(),
            self.profile.clone(),
            "--target-dir".into(),
            target_dir.display().to_string(),
        ]);
        if let Some(t) = &self.target {
            args.push("--target".into());
            args.push(t.clone());
        }
        args.extend(self.features.cargo_args());
        args.extend(flags().config_args());
        for (k, v) in &self.profile_overrides {
            args.push("--config".into());
            args.push(format!("profile.{}.{}={}", self.profile, k, v));
        }
        args
    }
}

/// The values cargo will use for `keys` of profile `name` in this project, when its
/// manifest and cargo's defaults alone decide them (see [`profile::known_values`]): the
/// config files that could set profiles are those of the current directory's ancestors,
/// the workspace's, and `$CARGO_HOME`'s.
pub fn known_profile_values(
    project: &Project,
    name: &str,
    keys: &[&str],
) -> Option<BTreeMap<String, String>> {
    let dirs = config_dirs(project);
    let dirs: Vec<&Path> = dirs.iter().map(PathBuf::as_path).collect();
    let env_has_profile = std::env::vars_os()
        .any(|(k, _)| k.to_str().is_some_and(|k| k.starts_with("CARGO_PROFILE_")));
    profile::known_values(&project.workspace_root, &dirs, env_has_profile, name, keys)
}

/// The folders whose config files cargo reads for this project: the `.cargo` of the
/// current directory's ancestors, of the workspace's, and `$CARGO_HOME`.
fn config_dirs(project: &Project) -> Vec<PathBuf> {
    let cwd = std::env::current_dir().unwrap_or_default();
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
    let mut dirs: Vec<PathBuf> = cwd
        .ancestors()
        .chain(project.workspace_root.ancestors())
        .map(|d| d.join(".cargo"))
        .collect();
    dirs.extend(home);
    dirs
}

/// The first `Cargo.toml` in `dir` or its ancestors (how cargo finds the manifest).
fn nearest_manifest(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .map(|d| d.join("Cargo.toml"))
        .find(|m| m.is_file())
}

/// User flags first, then ours: later flags win in rustc, so a stage's `-Ctarget-cpu`
/// overrides the user's, but nothing of the user's is dropped.
pub fn compose_rustflags(user: &[String], ours: &[String]) -> Vec<String> {
    user.iter().chain(ours).cloned().collect()
}

/// The linker flag that keeps relocations in the output (`--emit-relocs`), which BOLT
/// needs to move code. It adds sections that are never loaded: the code is unchanged.
pub const EMIT_RELOCS_FLAG: &str = "-Clink-args=-Wl,-q";

/// Whether `settings`' profile keeps the symbol table (`strip` is not `true`/`"symbols"`)
/// as far as the manifest and cargo's defaults tell (`None`: unknown here).
pub fn keeps_symbols(project: &Project, settings: &BuildSettings) -> Option<bool> {
    let strip = match settings.profile_overrides.get("strip") {
        Some(v) => v.clone(),
        None => known_profile_values(project, &settings.profile, &["strip"])?.remove("strip")?,
    };
    Some(profile::normalize("strip", &strip) != "\"symbols\"")
}

/// The last `-Ctarget-cpu=X` (or `-C target-cpu=X`) in `flags`.
pub fn target_cpu_of(flags: &[String]) -> Option<String> {
    codegen_option(flags, "target-cpu")
}

/// The value of the last `-C<name>=X` (or `-C <name>=X`) in `flags`: later ones win in rustc.
pub fn codegen_option(flags: &[String], name: &str) -> Option<String> {
    let mut found = None;
    let mut prev_c = false;
    for f in flags {
        let f = f.as_str();
        let opt = if prev_c {
            Some(f)
        } else {
            f.strip_prefix("-C")
        };
        prev_c = f == "-C";
        let value = opt
            .and_then(|o| o.strip_prefix(name))
            .and_then(|o| o.strip_prefix('='));
        if let Some(v) = value {
            found = Some(v.to_string());
        }
    }
    found
}

/// What one build produced.
#[derive(Debug, Clone)]
pub struct Built {
    pub binary: PathBuf,
    pub seconds: f64,
    /// The build log as a terminal would show it: cargo's stderr lines merged with rustc's
    /// rendered diagnostics (warnings included), in arrival order.
    pub stderr: String,
    /// The command, for messages and the report.
    pub command: String,
    /// The peak resident memory of cargo and the compilers it ran (`None`: reused, or the
    /// OS does not say).
    pub peak_rss_bytes: Option<u64>,
}

/// Where builds are kept for reuse (see [`reuse`]): `<optimize_dir>/cache/builds/`, under
/// keys that also hold rustc's full version line.
pub struct BuildCache<'a> {
    pub optimize_dir: &'a Path,
    pub toolchain: &'a str,
}

impl BuildCache<'_> {
    /// The binary an earlier build of the same inputs left in `target_dir`, when it and
    /// every input are unchanged.
    pub fn reusable(
        &self,
        project: &Project,
        settings: &BuildSettings,
        target_dir: &Path,
    ) -> Option<Built> {
        let key = reuse::key(project, settings, target_dir, self.toolchain);
        reuse::reusable(&self.store(), &self.blobs(), &key)
    }

    /// [`build`], then keep what it was made from for the next run. A binary cargo calls
    /// fresh that is not the one its kept record says this build made (truncated or
    /// changed in the target dir: cargo's freshness looks at times, not bytes) is removed
    /// so cargo links it again; the warning saying so comes back with the build.
    pub fn build(
        &self,
        project: &Project,
        settings: &BuildSettings,
        target_dir: &Path,
        on_line: &mut dyn FnMut(&str),
    ) -> Result<(Built, Option<String>), CargoError> {
        let key = reuse::key(project, settings, target_dir, self.toolchain);
        let (mut built, fresh) = build_once(project, settings, target_dir, on_line)?;
        let mut warning = None;
        if fresh {
            if let Some(recorded) = reuse::tampered(&self.store(), &key, &built.binary) {
                let removed = reuse::remove_output(&built.binary);
                warning = Some(format!(
                    "{} is not the binary cargo built (its digest is not {recorded}, the one \
                     recorded when it was built): removed ({removed}) and built again",
                    built.binary.display()
                ));
                built = build_once(project, settings, target_dir, on_line)?.0;
            }
        }
        reuse::keep(
            &self.store(),
            &self.blobs(),
            &key,
            &built,
            &project.workspace_root,
        );
        Ok((built, warning))
    }

    fn store(&self) -> crate::store::Store {
        crate::store::Store::new(self.optimize_dir, "builds")
    }

    fn blobs(&self) -> crate::store::Blobs {
        crate::store::Blobs::new(self.optimize_dir, "blobs")
    }
}

/// Build `settings` into `target_dir`; `on_line` sees each line cargo prints (progress).
pub fn build(
    project: &Project,
    settings: &BuildSettings,
    target_dir: &Path,
    on_line: &mut dyn FnMut(&str),
) -> Result<Built, CargoError> {
    build_once(project, settings, target_dir, on_line).map(|(built, _)| built)
}

/// [`build`], and whether cargo called the binary's artifact fresh (it compiled nothing).
fn build_once(
    project: &Project,
    settings: &BuildSettings,
    target_dir: &Path,
    on_line: &mut dyn FnMut(&str),
) -> Result<(Built, bool), CargoError> {
    let mut args = settings.cargo_args(project, target_dir);
    args.insert(1, "--message-format=json".into());
    let flags = settings.all_rustflags();
    let command = format!(
        "CARGO_ENCODED_RUSTFLAGS='{}' cargo {}",
        flags.join(" "),
        settings.cargo_args(project, target_dir).join(" ")
    );
    let start = Instant::now();
    let mut child = spawn(&args, &flags)?;
    // cargo's JSON messages on stdout (artifacts, rustc's diagnostics) and its own lines on
    // stderr are read side by side and merged in arrival order, so `stderr` reads as a
    // terminal would have shown it.
    let (tx, rx) = std::sync::mpsc::channel::<BuildEvent>();
    let mut readers = Vec::new();
    if let Some(out) = child.stdout.take() {
        let tx = tx.clone();
        readers.push(std::thread::spawn(move || {
            for event in build_events(BufReader::new(out)) {
                if tx.send(event).is_err() {
                    break;
                }
            }
        }));
    }
    if let Some(err) = child.stderr.take() {
        let tx = tx.clone();
        readers.push(std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                if tx.send(BuildEvent::Text(line)).is_err() {
                    break;
                }
            }
        }));
    }
    drop(tx);
    let mut stderr = String::new();
    let mut exe = None;
    for event in rx {
        match event {
            BuildEvent::Text(text) => {
                for line in text.lines() {
                    on_line(line);
                    stderr.push_str(line);
                    stderr.push('\n');
                }
            }
            BuildEvent::Executable(path, fresh) => exe = Some((path, fresh)),
        }
    }
    for r in readers {
        let _ = r.join();
    }
    let (status, peak_rss_bytes) =
        crate::sys::wait_with_peak(&mut child).map_err(CargoError::Spawn)?;
    if !status.success() {
        return Err(CargoError::Build {
            command,
            status: status.to_string(),
            tail: crate::process::tail_lines(stderr.as_bytes(), 30),
        });
    }
    let (binary, fresh) = exe.ok_or_else(|| CargoError::NoArtifact(project.bin.clone()))?;
    let built = Built {
        binary,
        seconds: start.elapsed().as_secs_f64(),
        stderr,
        command,
        peak_rss_bytes,
    };
    Ok((built, fresh))
}

/// Which runner [`test`] uses for the package's own tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TestRunner {
    /// `cargo test`: the harness prints `test name ... FAILED`.
    Cargo,
    /// `cargo nextest run`: prints `FAIL [time] binary name`.
    Nextest,
}

impl TestRunner {
    /// `cargo nextest` when it is installed, else `cargo test`;
    /// `CARGO_OPTIMIZE_TEST_RUNNER=cargo|nextest` decides instead.
    pub fn detect() -> Self {
        match std::env::var("CARGO_OPTIMIZE_TEST_RUNNER").as_deref() {
            Ok("cargo") => return TestRunner::Cargo,
            Ok("nextest") => return TestRunner::Nextest,
            _ => {}
        }
        let nextest = Command::new(cargo_program())
            .args(["nextest", "--version"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if nextest {
            TestRunner::Nextest
        } else {
            TestRunner::Cargo
        }
    }
}

/// What running the package's tests printed (a failing test is not an error here).
#[derive(Debug, Clone)]
pub struct TestRun {
    pub success: bool,
    pub status: String,
    pub stdout: String,
    pub stderr: String,
    pub seconds: f64,
    /// The command, for messages.
    pub command: String,
}

/// Build and run the package's own tests with exactly `settings` (profile, profile
/// overrides, rustflags, target, features) into `target_dir`, every test even after a
/// failure; `on_line` sees each line cargo prints on stderr (progress).
pub fn test(
    project: &Project,
    settings: &BuildSettings,
    target_dir: &Path,
    runner: TestRunner,
    on_line: &mut dyn FnMut(&str),
) -> Result<TestRun, CargoError> {
    let mut args = match runner {
        TestRunner::Cargo => {
            settings.command_args(&["test"], None, "--profile", project, target_dir)
        }
        TestRunner::Nextest => {
            let mut a = settings.command_args(
                &["nextest", "run"],
                None,
                "--cargo-profile",
                project,
                target_dir,
            );
            a.extend(["--no-tests=pass", "--color", "never"].map(String::from));
            a
        }
    };
    args.push("--no-fail-fast".into());
    let flags = settings.all_rustflags();
    let command = format!(
        "CARGO_ENCODED_RUSTFLAGS='{}' cargo {}",
        flags.join(" "),
        args.join(" ")
    );
    let start = Instant::now();
    let mut child = spawn(&args, &flags)?;
    let stdout = child.stdout.take();
    let out_thread = std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut out) = stdout {
            let mut bytes = Vec::new();
            let _ = std::io::Read::read_to_end(&mut out, &mut bytes);
            text = String::from_utf8_lossy(&bytes).into_owned();
        }
        text
    });
    let mut stderr = String::new();
    if let Some(err) = child.stderr.take() {
        let mut reader = BufReader::new(err);
        let mut buf = Vec::new();
        while reader.read_until(b'\n', &mut buf).unwrap_or(0) > 0 {
            let line = String::from_utf8_lossy(&buf);
            on_line(line.trim_end());
            stderr.push_str(&line);
            buf.clear();
        }
    }
    let status = child.wait().map_err(CargoError::Spawn)?;
    let stdout = out_thread.join().unwrap_or_default();
    Ok(TestRun {
        success: status.success(),
        status: status.to_string(),
        stdout,
        stderr,
        seconds: start.elapsed().as_secs_f64(),
        command,
    })
}

fn cargo_program() -> std::ffi::OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

/// Start cargo with `args` and exactly `flags` as rustflags (user flags included, see
/// the module doc), stdout and stderr piped, no terminal decoration.
fn spawn(args: &[String], flags: &[String]) -> Result<std::process::Child, CargoError> {
    command(args, flags).spawn().map_err(CargoError::Spawn)
}

thread_local! {
    /// Whether the builds this thread starts are background work ([`build_in_background`]).
    static IN_BACKGROUND: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// From now on, the builds this thread starts run at the lowest CPU priority
/// (`sys::lower_priority`): `context::ahead`'s builders call it.
pub fn build_in_background() {
    IN_BACKGROUND.with(|b| b.set(true));
}

/// The command [`spawn`] starts. Inside a job of `jobs::run` it joins the run's jobserver:
/// `configure_make` sets `CARGO_MAKEFLAGS` (and `MAKEFLAGS`, `MFLAGS`) to
/// `--jobserver-auth=R,W` and keeps those two fds open across exec. cargo connects to it as
/// a client instead of making its own pool of `-j` tokens: `GlobalContext::new` reads
/// `jobserver::Client::from_env_ext(true)` once (`static GLOBAL_JOBSERVER`), and
/// `BuildRunner::new` takes `gctx.jobserver_from_env()` when it is there, creating
/// `Client::new(jobs)` only when not (rust-lang/cargo at af373f7: `src/context/mod.rs`,
/// `src/compiler/build_runner/mod.rs`; `src/cargo/util/context/mod.rs` and
/// `src/cargo/core/compiler/build_runner/mod.rs` in releases before the move). Its first
/// rustc runs on the token the job holds (cargo's "implicit token", `job_queue/mod.rs`),
/// further ones on tokens from the shared pool, so concurrent builds share the run's CPU
/// slots. (cargo ignores `-j` with a warning then, `build_config.rs`; we pass none.) The
/// command line's `-j`, `--locked`, `--frozen`, `--offline` follow cargo's subcommand
/// ([`Flags::spawn_args`]).
fn command(args: &[String], flags: &[String]) -> Command {
    command_with(args, flags, &self::flags())
}

/// [`command`] with `cargo_flags` instead of the command line's.
fn command_with(args: &[String], flags: &[String], cargo_flags: &Flags) -> Command {
    let mut cmd = Command::new(cargo_program());
    let server = crate::jobs::current_jobserver();
    let nextest = args.first().is_some_and(|a| a == "nextest");
    let at = (1 + usize::from(nextest)).min(args.len());
    let mut all = args.to_vec();
    all.splice(at..at, cargo_flags.spawn_args(nextest, server.is_some()));
    cmd.args(all)
        .env("CARGO_ENCODED_RUSTFLAGS", flags.join("\x1f"))
        .env_remove("RUSTFLAGS")
        .env("CARGO_TERM_COLOR", "never")
        .env("CARGO_TERM_PROGRESS_WHEN", "never")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(client) = server {
        client.configure_make(&mut cmd);
    }
    if IN_BACKGROUND.with(std::cell::Cell::get) {
        crate::sys::lower_priority(&mut cmd);
    }
    cmd
}

/// What a build reports, in the order it happens.
#[derive(Debug, PartialEq)]
enum BuildEvent {
    /// Text for the build log: a line cargo printed on stderr, or one rendered rustc
    /// diagnostic (possibly several lines).
    Text(String),
    /// A `compiler-artifact` message with an executable, and whether cargo called it fresh.
    Executable(PathBuf, bool),
}

/// The events in cargo's `--message-format=json` stdout: executables of compiled
/// artifacts and rustc's diagnostics as rustc renders them; anything else is skipped.
fn build_events<R: BufRead>(stdout: R) -> impl Iterator<Item = BuildEvent> {
    use cargo_metadata::Message;
    Message::parse_stream(stdout).filter_map(|m| match m.ok()? {
        Message::CompilerArtifact(a) => a
            .executable
            .map(|e| BuildEvent::Executable(e.into_std_path_buf(), a.fresh)),
        Message::CompilerMessage(m) => m.message.rendered.map(BuildEvent::Text),
        _ => None,
    })
}

/// The user's effective rustflags for `target` (the host when `None`), exactly as cargo
/// would choose them from the environment and the config files seen from `cwd`.
///
/// `cfg` is `rustc --print cfg` output for the target (to match `target.'cfg(…)'` tables).
pub fn user_rustflags(
    env: &dyn Fn(&str) -> Option<String>,
    cwd: &Path,
    cargo_home: Option<&Path>,
    triple: &str,
    cfg: &[String],
) -> Result<Vec<String>, CargoError> {
    if let Some(enc) = env("CARGO_ENCODED_RUSTFLAGS") {
        return Ok(if enc.is_empty() {
            Vec::new()
        } else {
            enc.split('\x1f').map(str::to_string).collect()
        });
    }
    if let Some(flags) = env("RUSTFLAGS") {
        return Ok(split_flags(&flags));
    }
    let config = CargoConfig::discover(cwd, cargo_home)?;
    // target.<triple>.rustflags and every matching target.'cfg(..)'.rustflags are joined.
    let env_key = format!(
        "CARGO_TARGET_{}_RUSTFLAGS",
        triple.to_uppercase().replace(['-', '.'], "_")
    );
    let mut target_flags: Option<Vec<String>> = env(&env_key).map(|s| split_flags(&s));
    // The triple's own table first, then the cfg tables (cargo's order).
    let mut tables = config.target_rustflags();
    tables.sort_by_key(|(k, _)| k.starts_with("cfg("));
    let cfg = parse_cfg(cfg);
    for (key, flags) in tables {
        let applies = key
            .parse::<cargo_platform::Platform>()
            .is_ok_and(|p| p.matches(triple, &cfg));
        if applies {
            target_flags.get_or_insert_with(Vec::new).extend(flags);
        }
    }
    if let Some(f) = target_flags {
        return Ok(f);
    }
    if let Some(flags) = env("CARGO_BUILD_RUSTFLAGS") {
        return Ok(split_flags(&flags));
    }
    Ok(config.build_rustflags().unwrap_or_default())
}

/// The same as [`user_rustflags`] for this process's environment and directory.
pub fn user_rustflags_here(triple: &str, cfg: &[String]) -> Result<Vec<String>, CargoError> {
    let cwd = std::env::current_dir().unwrap_or_default();
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
    user_rustflags(
        &|k| std::env::var(k).ok(),
        &cwd,
        cargo_home.as_deref(),
        triple,
        cfg,
    )
}

fn split_flags(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
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

/// The config file cargo reads in the `.cargo` folder `dir`: `config` when it exists — cargo
/// prefers it to `config.toml` beside it (and warns "both … exist. Using …/config") —, else
/// `config.toml`.
pub fn config_file(dir: &Path) -> PathBuf {
    let plain = dir.join("config");
    if plain.is_file() {
        plain
    } else {
        dir.join("config.toml")
    }
}

/// The cargo config files that apply, lowest precedence first (cargo's merge order:
/// `$CARGO_HOME/config.toml`, then the directories from `/` down to `cwd`).
struct CargoConfig {
    files: Vec<(PathBuf, toml::Table)>,
}

impl CargoConfig {
    fn discover(cwd: &Path, cargo_home: Option<&Path>) -> Result<Self, CargoError> {
        let mut dirs: Vec<PathBuf> = cwd.ancestors().map(|d| d.join(".cargo")).collect();
        dirs.reverse();
        if let Some(home) = cargo_home {
            // CARGO_HOME is read once, first, even when it is also an ancestor.
            dirs.retain(|d| d != home);
            dirs.insert(0, home.to_path_buf());
        }
        let mut files = Vec::new();
        for dir in dirs {
            let path = config_file(&dir);
            if let Ok(text) = std::fs::read_to_string(&path) {
                let table: toml::Table =
                    text.parse()
                        .map_err(|e: toml::de::Error| CargoError::Config {
                            path: path.clone(),
                            message: e.to_string(),
                        })?;
                files.push((path, table));
            }
        }
        Ok(CargoConfig { files })
    }

    /// `build.rustflags` merged across files (arrays concatenate, later files last).
    fn build_rustflags(&self) -> Option<Vec<String>> {
        let mut out: Option<Vec<String>> = None;
        for (_, t) in &self.files {
            if let Some(v) = t.get("build").and_then(|b| b.get("rustflags")) {
                out.get_or_insert_with(Vec::new).extend(flags_value(v));
            }
        }
        out
    }

    /// `(key, flags)` of every `[target.<key>] rustflags`, in merge order.
    fn target_rustflags(&self) -> Vec<(String, Vec<String>)> {
        let mut merged: Vec<(String, Vec<String>)> = Vec::new();
        for (_, t) in &self.files {
            let Some(targets) = t.get("target").and_then(|v| v.as_table()) else {
                continue;
            };
            for (key, v) in targets {
                if let Some(flags) = v.get("rustflags") {
                    match merged.iter_mut().find(|(k, _)| k == key) {
                        Some((_, f)) => f.extend(flags_value(flags)),
                        None => merged.push((key.clone(), flags_value(flags))),
                    }
                }
            }
        }
        merged
    }
}

fn flags_value(v: &toml::Value) -> Vec<String> {
    match v {
        toml::Value::String(s) => split_flags(s),
        toml::Value::Array(a) => a
            .iter()
            .filter_map(|x| x.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    }
}

/// `rustc --print cfg` lines (`unix`, `target_os="linux"`) as cargo's cfg values; lines
/// that are not one are skipped.
fn parse_cfg(lines: &[String]) -> Vec<cargo_platform::Cfg> {
    lines.iter().filter_map(|l| l.trim().parse().ok()).collect()
}

/// Whether a cfg expression (`unix`, `target_os = "linux"`, `all(..)`, `any(..)`,
/// `not(..)`) holds for `rustc --print cfg` lines, as cargo decides it for
/// `[target.'cfg(…)']` tables. An expression cargo cannot parse matches nothing.
#[cfg(test)]
pub fn cfg_matches(expr: &str, cfg: &[String]) -> bool {
    expr.parse::<cargo_platform::CfgExpr>()
        .is_ok_and(|e| e.matches(&parse_cfg(cfg)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> Vec<String> {
        [
            "unix",
            "target_os=\"linux\"",
            "target_arch=\"x86_64\"",
            "debug_assertions",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    }

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    const HOST: &str = "x86_64-unknown-linux-gnu";

    #[test]
    fn encoded_rustflags_win_over_everything() {
        let dir = tempfile::tempdir().unwrap();
        let env = env_of(&[
            ("CARGO_ENCODED_RUSTFLAGS", "-Cfoo=a b\x1f--cfg\x1fx"),
            ("RUSTFLAGS", "-Cbar"),
        ]);
        let f = user_rustflags(&env, dir.path(), None, HOST, &cfg()).unwrap();
        assert_eq!(f, vec!["-Cfoo=a b", "--cfg", "x"]);
        let empty = env_of(&[("CARGO_ENCODED_RUSTFLAGS", ""), ("RUSTFLAGS", "-Cbar")]);
        assert!(user_rustflags(&empty, dir.path(), None, HOST, &cfg())
            .unwrap()
            .is_empty());
    }

    #[test]
    fn rustflags_env_split_on_whitespace() {
        let dir = tempfile::tempdir().unwrap();
        let env = env_of(&[("RUSTFLAGS", "  --cfg  user_flag -Ctarget-cpu=native ")]);
        let f = user_rustflags(&env, dir.path(), None, HOST, &cfg()).unwrap();
        assert_eq!(f, vec!["--cfg", "user_flag", "-Ctarget-cpu=native"]);
    }

    #[test]
    fn config_build_rustflags_merge_from_home_and_ancestors() {
        let root = tempfile::tempdir().unwrap();
        let home = root.path().join("home");
        let proj = root.path().join("a/b");
        std::fs::create_dir_all(home.join("")).unwrap();
        std::fs::create_dir_all(proj.join(".cargo")).unwrap();
        std::fs::create_dir_all(root.path().join("a/.cargo")).unwrap();
        std::fs::write(
            home.join("config.toml"),
            "[build]\nrustflags = \"-Chome\"\n",
        )
        .unwrap();
        std::fs::write(
            root.path().join("a/.cargo/config.toml"),
            "[build]\nrustflags = [\"-Cparent\"]\n",
        )
        .unwrap();
        std::fs::write(
            proj.join(".cargo/config.toml"),
            "[build]\nrustflags = [\"--cfg\", \"user_flag\"]\n",
        )
        .unwrap();
        let f = user_rustflags(&env_of(&[]), &proj, Some(&home), HOST, &cfg()).unwrap();
        assert_eq!(f, vec!["-Chome", "-Cparent", "--cfg", "user_flag"]);
    }

    #[test]
    fn with_config_and_config_toml_in_one_folder_cargo_reads_config() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join(".cargo");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("config.toml"),
            "[build]\nrustflags = [\"-Ctoml\"]\n",
        )
        .unwrap();
        let f = user_rustflags(&env_of(&[]), root.path(), None, HOST, &cfg()).unwrap();
        assert_eq!(f, vec!["-Ctoml"]);
        std::fs::write(dir.join("config"), "[build]\nrustflags = [\"-Cplain\"]\n").unwrap();
        let f = user_rustflags(&env_of(&[]), root.path(), None, HOST, &cfg()).unwrap();
        assert_eq!(f, vec!["-Cplain"], "cargo reads `config` when both exist");
        assert_eq!(config_file(&dir), dir.join("config"));
    }

    #[test]
    fn target_tables_beat_build_and_cfg_tables_join() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join(".cargo")).unwrap();
        std::fs::write(
            root.path().join(".cargo/config.toml"),
            r#"
[build]
rustflags = ["-Cbuild"]
[target.x86_64-unknown-linux-gnu]
rustflags = ["-Ctriple"]
[target.'cfg(all(unix, target_arch = "x86_64"))']
rustflags = ["-Ccfg"]
[target.'cfg(windows)']
rustflags = ["-Cwindows"]
"#,
        )
        .unwrap();
        let f = user_rustflags(&env_of(&[]), root.path(), None, HOST, &cfg()).unwrap();
        assert_eq!(f, vec!["-Ctriple", "-Ccfg"]);
        // An env var for the triple joins the config tables.
        let env = env_of(&[("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUSTFLAGS", "-Cenv")]);
        let f = user_rustflags(&env, root.path(), None, HOST, &cfg()).unwrap();
        assert_eq!(f, vec!["-Cenv", "-Ctriple", "-Ccfg"]);
    }

    #[test]
    fn cfg_expressions() {
        let c = cfg();
        assert!(cfg_matches("unix", &c));
        assert!(!cfg_matches("windows", &c));
        assert!(cfg_matches("target_os = \"linux\"", &c));
        assert!(cfg_matches("all(unix, not(windows))", &c));
        assert!(cfg_matches("any(windows, target_arch=\"x86_64\")", &c));
        assert!(!cfg_matches(
            "all(unix, any(windows, target_os = \"macos\"))",
            &c
        ));
    }

    #[test]
    fn composition_keeps_user_flags_first() {
        let user = vec!["--cfg".to_string(), "user_flag".to_string()];
        let ours = vec!["-Cprofile-generate=/tmp/x".to_string()];
        assert_eq!(
            compose_rustflags(&user, &ours),
            vec!["--cfg", "user_flag", "-Cprofile-generate=/tmp/x"]
        );
    }

    #[test]
    fn settings_hash_changes_with_flags_and_overrides() {
        let base = BuildSettings {
            profile: "release".into(),
            profile_overrides: BTreeMap::new(),
            user_rustflags: vec![],
            rustflags: vec![],
            target: None,
            features: Features::default(),
        };
        let a = base.hash();
        assert_eq!(a, base.clone().hash());
        assert_ne!(a, base.with_rustflags(["-Cx"]).hash());
        let mut lto = base.clone();
        lto.profile_overrides.insert("lto".into(), "\"fat\"".into());
        assert_ne!(a, lto.hash());
        let args = lto.cargo_args(&Project::for_tests("p", "0.1.0"), Path::new("/t"));
        assert!(args
            .windows(2)
            .any(|w| w[0] == "--config" && w[1] == "profile.release.lto=\"fat\""));
    }

    #[test]
    fn build_messages_give_executables_and_rendered_diagnostics() {
        let artifact = |exe: &str| {
            serde_json::json!({
                "reason": "compiler-artifact",
                "package_id": "path+file:///p#demo@0.1.0",
                "manifest_path": "/p/Cargo.toml",
                "target": {
                    "kind": ["bin"], "crate_types": ["bin"], "name": "demo",
                    "src_path": "/p/src/main.rs", "edition": "2021",
                    "doc": true, "doctest": false, "test": true
                },
                "profile": {
                    "opt_level": "3", "debuginfo": 0, "debug_assertions": false,
                    "overflow_checks": false, "test": false
                },
                "features": [],
                "filenames": [exe],
                "executable": exe,
                "fresh": false
            })
            .to_string()
        };
        let warning = serde_json::json!({
            "reason": "compiler-message",
            "package_id": "path+file:///p#demo@0.1.0",
            "manifest_path": "/p/Cargo.toml",
            "target": {
                "kind": ["bin"], "crate_types": ["bin"], "name": "demo",
                "src_path": "/p/src/main.rs", "edition": "2021",
                "doc": true, "doctest": false, "test": true
            },
            "message": {
                "message": "no profile data available for function f",
                "code": null, "level": "warning", "spans": [], "children": [],
                "rendered": "warning: no profile data available for function f\n\n"
            }
        })
        .to_string();
        let stdout = [
            warning,
            "not json".to_string(),
            artifact("/t/release/demo"),
            r#"{"reason":"build-finished","success":true}"#.to_string(),
        ]
        .join("\n");
        let events: Vec<BuildEvent> = build_events(stdout.as_bytes()).collect();
        assert_eq!(
            events,
            [
                BuildEvent::Text("warning: no profile data available for function f\n\n".into()),
                BuildEvent::Executable(PathBuf::from("/t/release/demo"), false),
            ]
        );
    }

    /// What `cargo` was started with, for one variable.
    fn cargo_env(cmd: &Command, key: &str) -> Option<String> {
        cmd.get_envs()
            .find(|(k, _)| *k == key)
            .and_then(|(_, v)| v.map(|v| v.to_string_lossy().into_owned()))
    }

    #[test]
    fn the_command_line_s_cargo_flags_follow_cargo_s_subcommand() {
        // No run's jobserver around (it would take -j's place).
        let _serial = crate::jobs::tests::serial();
        let f = Flags {
            jobs: Some(2),
            frozen: true,
            ..Flags::default()
        };
        let args = |c: &Command| -> Vec<String> {
            c.get_args()
                .map(|a| a.to_string_lossy().into_owned())
                .collect()
        };
        let build = command_with(&["build".into(), "--lib".into()], &[], &f);
        assert_eq!(args(&build), ["build", "--frozen", "--jobs", "2", "--lib"]);
        let nextest = command_with(&["nextest".into(), "run".into()], &[], &f);
        assert_eq!(
            args(&nextest),
            ["nextest", "run", "--frozen", "--build-jobs", "2"]
        );
    }

    #[test]
    fn cargo_inside_a_job_joins_the_run_s_jobserver() {
        let _serial = crate::jobs::tests::serial();
        let args = ["build".to_string()];
        assert_eq!(cargo_env(&command(&args, &[]), "CARGO_MAKEFLAGS"), None);
        let mut graph = crate::jobs::Graph::new();
        graph.add("build", "fast", &[], ());
        let opts = crate::jobs::Options {
            workers: 1,
            tokens: 2,
        };
        let seen = std::sync::Mutex::new(None);
        crate::jobs::run(&graph, &opts, &crate::ui::Ui::plain(), |_, _| {
            *seen.lock().unwrap() = cargo_env(&command(&args, &[]), "CARGO_MAKEFLAGS");
            crate::jobs::Outcome::Done
        });
        let flags = seen.into_inner().unwrap().expect("CARGO_MAKEFLAGS is set");
        assert!(flags.contains("--jobserver-auth="), "{flags}");
        assert_eq!(cargo_env(&command(&args, &[]), "CARGO_MAKEFLAGS"), None);
    }
}
