//! Everything that runs cargo: metadata (which package, which binary), builds, the
//! artifact path of a build, and the composition of rustflags.
//!
//! This is the ONLY module that runs cargo. It knows nothing about stages: it builds one
//! `BuildSettings` into one target dir and says where the binary is and how long it took.
//! It does not import the CLI: the command line's cargo flags reach it as plain data
//! (`Selection`, `Flags`, set once by `lib.rs`). Every cargo it runs is bounded and killed
//! whole when the bound passes (`child`); the parts: `workspace` (metadata, the package
//! rule), `config` (cargo's config and rustflags precedence), `reuse` (builds not run again),
//! `relink`, `lockfile`, `cc` (C and C++), `alloc`, `executable`, `runner`, `wrapper`
//! (sccache), `profile`, `flags`; `library` (a `cdylib` a host loads) and `wheel` (a Python
//! extension module built by maturin to ship, checked against the measured file).
//!
//! Rustflags: cargo takes `CARGO_ENCODED_RUSTFLAGS`, else `RUSTFLAGS`, else the config's
//! `target.<triple>.rustflags` / matching `target.'cfg(…)'.rustflags`, else
//! `build.rustflags`. Setting our own flags through any of these would silently replace
//! the user's, so [`user_rustflags`] reproduces cargo's choice and every build passes
//! `user flags + stage flags` as `CARGO_ENCODED_RUSTFLAGS`.

pub(crate) mod alloc;
pub(crate) mod cc;
mod child;
mod config;
mod executable;
mod flags;
pub(crate) mod library;
pub(crate) mod lockfile;
pub(crate) mod profile;
mod relink;
mod reuse;
pub(crate) mod runner;
pub(crate) mod twin;
pub(crate) mod wheel;
mod workspace;
pub(crate) mod wrapper;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

pub(crate) use child::{build_in_background, build_timeout};
pub(crate) use config::{
    build_target_here, cargo_home, codegen_option, compose_rustflags, config_file, linker_set_here,
    target_applies, target_cpu_of, user_rustflags, user_rustflags_here, BuildTarget,
};
use config::{config_dirs, parse_cfg, CargoConfig};
use flags::flags;
pub(crate) use flags::{cli_config, set_flags, Flags};
pub(crate) use lockfile::RunLockfile;
pub(crate) use workspace::{Features, Project, Selection, Workspace};

#[derive(Debug, thiserror::Error)]
pub(crate) enum CargoError {
    #[error("cargo metadata failed for {manifest}:\n{message}")]
    Metadata { manifest: String, message: String },
    #[error("package `{0}` is not in this workspace\n  fix: pick one of: {1}")]
    UnknownPackage(String, String),
    #[error(
        "{0}\n  fix: pass -p/--package NAME (or set `package = \"NAME\"` in optimize.toml); {1}"
    )]
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
    /// The private copy of a build with an allocator could not be made (the message has
    /// the fix).
    #[error("{0}")]
    Alloc(String),
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
    /// Not started, or waited for no longer: the run's budget is spent (`Context::build`).
    #[error("not built: the run's budget is spent")]
    OutOfBudget,
    #[error("cargo built `{0}` but reported no executable for it")]
    NoArtifact(String),
    #[error("cannot read cargo config {path}: {message}")]
    Config { path: PathBuf, message: String },
    /// The record of a `Cargo.lock` the tool made could not be used (the message has the
    /// fix).
    #[error("{0}")]
    Lockfile(String),
    #[error("{what} did not finish within {bound} and was stopped, with everything it started\n  fix: {fix}")]
    TimedOut {
        what: String,
        bound: String,
        fix: String,
    },
    #[error("{var}={value:?} is not a bound for cargo builds: {problem}\n  fix: give a duration such as {var}=4h (default: 2h), or unset it")]
    BadTimeout {
        var: &'static str,
        value: String,
        problem: String,
    },
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
    #[serde(rename = "rustflags")]
    pub stage_rustflags: Vec<String>,
    /// `--target`: `None` builds for the host the way a plain `cargo build` does.
    pub target: Option<String>,
    pub features: Features,
    /// The global allocator swapped in (`cargo::alloc`): the build compiles a private copy
    /// of the workspace with it. Left out of the hash when `None`, so settings without one
    /// name the target dirs and cache entries they always did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allocator: Option<String>,
    /// The compiler and flags `cc` gives the C and C++ build scripts compile (`cc::CBuild`:
    /// clang, its profile flags). `None` — left out of the hash — leaves them as cargo's
    /// environment has them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub c: Option<cc::CBuild>,
    /// Link the binary a second time with `-Wl,-q` beside it (`cargo::twin`), for BOLT's
    /// input; the binary is the one a build without it links. Left out of the hash when
    /// false.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub relocs_twin: bool,
}

impl BuildSettings {
    /// A plain build of `profile`: no overrides, flags, target, features or allocator.
    #[cfg(test)]
    pub(crate) fn plain(profile: &str) -> Self {
        BuildSettings {
            profile: profile.into(),
            profile_overrides: BTreeMap::new(),
            user_rustflags: Vec::new(),
            stage_rustflags: Vec::new(),
            target: None,
            features: Features::default(),
            allocator: None,
            c: None,
            relocs_twin: false,
        }
    }

    /// The flags rustc will see: the user's, then ours.
    pub fn all_rustflags(&self) -> Vec<String> {
        compose_rustflags(&self.user_rustflags, &self.stage_rustflags)
    }

    /// The variables `cc` reads that this build sets (none without [`BuildSettings::c`]).
    pub fn c_env(&self) -> Vec<(String, String)> {
        self.c
            .as_ref()
            .map(cc::CBuild::env_vars)
            .unwrap_or_default()
    }

    /// Where cargo puts this build's outputs in `target_dir`: `[<triple>/]<profile dir>`
    /// (`dev` and `test` build into `debug`, `bench` into `release`).
    pub fn output_dir(&self, target_dir: &Path) -> PathBuf {
        let dir = match self.profile.as_str() {
            "dev" | "test" => "debug",
            "bench" => "release",
            other => other,
        };
        match &self.target {
            Some(t) => target_dir.join(t).join(dir),
            None => target_dir.join(dir),
        }
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
        s.stage_rustflags.extend(flags.into_iter().map(Into::into));
        s
    }

    /// The cargo command line (without `cargo`) that reproduces this build: `build --bin`
    /// (a relink: `rustc --bin … -- <link flags>`, see [`relink`]), for a harness
    /// `bench --no-run --bench T` / `test --no-run --test T` (`--lib`), for a library a host
    /// loads `build --lib`.
    pub fn cargo_args(&self, project: &Project, target_dir: &Path) -> Vec<String> {
        use crate::spec::HarnessKind;
        if project.library.is_some() {
            let mut args = self.command_args(&["build"], None, "--profile", project, target_dir);
            args.push("--lib".into());
            return args;
        }
        let Some(h) = &project.harness else {
            let relinks = self.relink_base(project).is_some();
            let sub = if relinks { "rustc" } else { "build" };
            let mut args =
                self.command_args(&[sub], Some(&project.bin), "--profile", project, target_dir);
            args.extend(relink::args(project, self, target_dir));
            return args;
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
            // `name@version`: the name alone is ambiguous when the dependency graph holds
            // another version of the package (itoa's benches pull in an older itoa).
            format!("{}@{}", project.package, project.version),
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
        args.extend(self.selection_args());
        args
    }

    /// What cargo and maturin alike take of these settings after the profile: `--target`,
    /// the features, the user's `--config` flags, and the profile's overrides as
    /// `--config profile.<P>.<key>=<value>`.
    pub(crate) fn selection_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        if let Some(t) = &self.target {
            args.extend(["--target".into(), t.clone()]);
        }
        args.extend(self.features.cargo_args());
        args.extend(flags().config_args());
        for (k, v) in &self.profile_overrides {
            args.extend([
                "--config".into(),
                format!("profile.{}.{k}={v}", self.profile),
            ]);
        }
        args
    }
}

/// The values cargo will use for `keys` of profile `name` in this project, when its
/// manifest and cargo's defaults alone decide them (see [`profile::known_values`]): the
/// config files that could set profiles are those of the current directory's ancestors,
/// the workspace's, and `$CARGO_HOME`'s.
pub(crate) fn known_profile_values(
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

/// The linker flag that keeps relocations in the output (`--emit-relocs`), which BOLT
/// needs to move code. It adds sections that are never loaded: the code is unchanged.
pub(crate) const EMIT_RELOCS_FLAG: &str = "-Clink-args=-Wl,-q";

/// Whether `settings`' profile keeps the symbol table (`strip` is not `true`/`"symbols"`)
/// as far as the manifest and cargo's defaults tell (`None`: unknown here).
pub(crate) fn keeps_symbols(project: &Project, settings: &BuildSettings) -> Option<bool> {
    let strip = match settings.profile_overrides.get("strip") {
        Some(v) => v.clone(),
        None => known_profile_values(project, &settings.profile, &["strip"])?.remove("strip")?,
    };
    Some(profile::normalize("strip", &strip) != "\"symbols\"")
}

/// The rustflag that turns LTO off whatever the profile says: rustc takes the last `-Clto`,
/// and cargo puts rustflags after its own. `-C metadata` ignores rustflags, so symbol and
/// codegen-unit names stay those of the profile's own build.
pub(crate) const NO_LTO_FLAG: &str = "-Clto=off";

/// Whether `settings`' profile links with LTO across crates (`lto` is `"fat"`, `true` or
/// `"thin"`) as far as the manifest and cargo's defaults tell (`None`: unknown here).
pub(crate) fn uses_lto(project: &Project, settings: &BuildSettings) -> Option<bool> {
    let lto = match settings.profile_overrides.get("lto") {
        Some(v) => v.clone(),
        None => known_profile_values(project, &settings.profile, &["lto"])?.remove("lto")?,
    };
    Some(matches!(
        profile::normalize("lto", &lto).as_str(),
        "\"fat\"" | "\"thin\""
    ))
}

/// What one build produced.
#[derive(Debug, Clone)]
pub(crate) struct Built {
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
pub(crate) struct BuildCache<'a> {
    pub optimize_dir: &'a Path,
    pub toolchain: &'a str,
}

impl BuildCache<'_> {
    /// The binary an earlier build of the same inputs left in `target_dir`, when it and
    /// every input are unchanged.
    pub(crate) fn reusable(
        &self,
        project: &Project,
        settings: &BuildSettings,
        target_dir: &Path,
    ) -> Option<Built> {
        alloc::prepare(project, settings).ok()?;
        let project = &alloc::source(project, settings);
        let key = reuse::key(project, settings, target_dir, self.toolchain);
        reuse::reusable(
            &self.store(),
            &self.blobs(),
            &key,
            dest(settings, target_dir),
        )
    }

    /// [`build`], then keep what it was made from for the next run. A binary cargo calls
    /// fresh that is not the one its kept record says this build made, or no whole
    /// executable for the target (truncated or changed in the target dir: cargo's
    /// freshness looks at times, not bytes), is removed so cargo links it again; the
    /// warning saying so comes back with the build.
    pub(crate) fn build(
        &self,
        project: &Project,
        settings: &BuildSettings,
        target_dir: &Path,
        on_line: &mut dyn FnMut(&str),
    ) -> Result<(Built, Option<String>), CargoError> {
        alloc::prepare(project, settings)?;
        let project = &alloc::source(project, settings);
        let key = reuse::key(project, settings, target_dir, self.toolchain);
        let store = self.store();
        let recorded = |binary: &Path| {
            reuse::tampered(&store, &key, target_dir, binary).map(|digest| {
                format!("its digest is not {digest}, the one recorded when it was built")
            })
        };
        let (built, warning) = match twin::take(project, settings, target_dir) {
            Some(built) => (built, None),
            None => build_checked(project, settings, target_dir, on_line, &recorded)?,
        };
        let dest = dest(settings, target_dir);
        reuse::keep(
            &store,
            &self.blobs(),
            &key,
            &built,
            dest,
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

/// Where `settings` build into `target_dir`, for [`reuse`].
fn dest<'a>(settings: &'a BuildSettings, target_dir: &'a Path) -> reuse::CopyDest<'a> {
    reuse::CopyDest {
        target_dir,
        target: settings.target.as_deref(),
    }
}

/// Build `settings` into `target_dir`; `on_line` sees each line cargo prints (progress). A
/// binary cargo calls fresh that is no whole executable for the target is linked again; the
/// warning saying so comes back with the build.
pub(crate) fn build(
    project: &Project,
    settings: &BuildSettings,
    target_dir: &Path,
    on_line: &mut dyn FnMut(&str),
) -> Result<(Built, Option<String>), CargoError> {
    alloc::prepare(project, settings)?;
    let project = &alloc::source(project, settings);
    build_checked(project, settings, target_dir, on_line, &|_| None)
}

/// [`build_once`], and a binary cargo calls fresh checked (cargo judges freshness by file
/// times, so a truncated or edited output looks fresh): when `recorded` says it is not the
/// binary that was built, or it is no whole executable for the target
/// (`executable::check`), it is removed with its `deps/` original and cargo links it again.
fn build_checked(
    project: &Project,
    settings: &BuildSettings,
    target_dir: &Path,
    on_line: &mut dyn FnMut(&str),
    recorded: &dyn Fn(&Path) -> Option<String>,
) -> Result<(Built, Option<String>), CargoError> {
    let (built, fresh) = build_once(project, settings, target_dir, on_line)?;
    if !fresh {
        return Ok((built, None));
    }
    let why = recorded(&built.binary)
        .or_else(|| executable::check(&built.binary, settings.target.as_deref()).err());
    let Some(why) = why else {
        return Ok((built, None));
    };
    let deps = relink::deps_of(project, settings, target_dir, &built.binary);
    let removed = reuse::remove_output(&built.binary, deps.as_deref());
    let warning = format!(
        "{} is not the binary cargo built ({why}): removed ({removed}) and built again",
        built.binary.display()
    );
    let (built, _) = build_once(project, settings, target_dir, on_line)?;
    Ok((built, Some(warning)))
}

/// A build that failed for a full disk (or quota) says so with the fix, whatever the tool
/// that hit it made of it (a linker's bare `No space left on device`, rustc's `LLVM ERROR:
/// IO failure on output stream`, which reads like a compiler bug); else nothing.
fn disk_full_fix(stderr: &str, target_dir: &Path) -> String {
    const SIGNS: [&str; 2] = ["No space left on device", "Disk quota exceeded"];
    if !SIGNS.iter().any(|s| stderr.contains(s)) {
        return String::new();
    }
    format!(
        "\nthe disk is full: the build could not write into {}\n  fix: free space on that disk (`df -h {}`; `cargo optimize clean` removes old runs and builds), or point --target-dir at a disk with room",
        target_dir.display(),
        target_dir.display()
    )
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
    let flags = settings.compile_rustflags(project);
    // The command that reproduces the binary: a twin's linker is not part of it.
    let command = shell_line(settings, &flags, &settings.cargo_args(project, target_dir));
    let (flags, twin_env) = twin::arrange(project, settings, flags);
    let start = Instant::now();
    // cargo's JSON messages on stdout (artifacts, rustc's diagnostics) and its own lines on
    // stderr come in arrival order, so `stderr` reads as a terminal would have shown it.
    let mut stderr = String::new();
    let mut exe = None;
    let outcome = child::run(
        self::command(&args, &flags)
            .envs(settings.c_env())
            .envs(twin_env),
        &format!("the build `{command}`"),
        build_timeout()?,
        &child::build_fix(),
        &mut |stream, line| {
            let text = match stream {
                child::Pipe::Stderr => line.to_string(),
                child::Pipe::Stdout => match build_event(line) {
                    Some(BuildEvent::Text(text)) => text,
                    Some(BuildEvent::Executable(path, fresh)) => {
                        exe = Some((path, fresh));
                        return;
                    }
                    None => return,
                },
            };
            for line in text.lines() {
                on_line(line);
                stderr.push_str(line);
                stderr.push('\n');
            }
        },
    )?;
    let status = outcome.status;
    let peak_rss_bytes = (crate::sys::PEAK_COVERS_CHILDREN && outcome.max_rss_bytes > 0)
        .then_some(outcome.max_rss_bytes);
    if !status.success() {
        let mut tail = crate::process::tail_lines(stderr.as_bytes(), 30);
        tail.push_str(&disk_full_fix(&stderr, target_dir));
        return Err(CargoError::Build {
            command,
            status: status.to_string(),
            tail,
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

/// The command line that reproduces a cargo call of `settings`, pasted into a POSIX shell:
/// the C compiler's variables (`cc::CBuild`), the rustflags, then cargo's arguments, each
/// word quoted where the shell would change it (`--config profile.release.lto="fat"` loses
/// its quotes unquoted, and cargo then reads a boolean).
fn shell_line(settings: &BuildSettings, flags: &[String], args: &[String]) -> String {
    let c: String = (settings.c_env().iter())
        .map(|(k, v)| format!("{k}={} ", shell_word(v)))
        .collect();
    let args: Vec<_> = args.iter().map(|a| shell_word(a)).collect();
    format!("{c}{}cargo {}", rustflags_assignment(flags), args.join(" "))
}

/// `word` as one shell word: as it is when the shell changes nothing in it (`=` included,
/// which only the first word makes an assignment), else quoted.
fn shell_word(word: &str) -> std::borrow::Cow<'_, str> {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c);
    match !word.is_empty() && word.chars().all(plain) {
        true => word.into(),
        false => shell_words::quote(word),
    }
}

/// `flags` as a shell assignment cargo reads: `RUSTFLAGS` (split on whitespace) when no
/// flag holds any, else `CARGO_ENCODED_RUSTFLAGS`, joined with its separator (a control
/// character) by `printf`; nothing without flags.
fn rustflags_assignment(flags: &[String]) -> String {
    if flags.is_empty() {
        return String::new();
    }
    if !flags
        .iter()
        .any(|f| f.is_empty() || f.contains(char::is_whitespace))
    {
        return format!("RUSTFLAGS={} ", shell_word(&flags.join(" ")));
    }
    let format = vec!["%s"; flags.len()].join("\\037");
    let words: Vec<_> = flags.iter().map(|f| shell_word(f)).collect();
    format!(
        "CARGO_ENCODED_RUSTFLAGS=\"$(printf '{format}' {})\" ",
        words.join(" ")
    )
}

/// Which runner [`test`] uses for the package's own tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum TestRunner {
    /// `cargo test`: the harness prints `test name ... FAILED`.
    Cargo,
    /// `cargo nextest run`: prints `FAIL [time] binary name`.
    Nextest,
}

impl TestRunner {
    /// `cargo nextest` when it is installed, else `cargo test`;
    /// `CARGO_OPTIMIZE_TEST_RUNNER=cargo|nextest` decides instead. A probe that does not
    /// answer within [`child::PROBE_TIMEOUT`] is stopped, and `warn` told so (`cargo test`
    /// then).
    pub(crate) fn detect(warn: impl FnOnce(String)) -> Self {
        match std::env::var("CARGO_OPTIMIZE_TEST_RUNNER").as_deref() {
            Ok("cargo") => return TestRunner::Cargo,
            Ok("nextest") => return TestRunner::Nextest,
            _ => {}
        }
        let what = "the probe `cargo nextest --version`";
        let probe = crate::process::Command::new(cargo_program())
            .args(["nextest", "--version"])
            .timeout(child::PROBE_TIMEOUT)
            .label(what);
        match crate::process::run(&probe) {
            Ok(o) if o.timed_out => {
                warn(format!(
                    "{what} did not finish within {} and was stopped: the crate's tests run \
                     with `cargo test`\n  fix: set CARGO_OPTIMIZE_TEST_RUNNER=cargo (or \
                     nextest) to skip the probe",
                    child::bound_text(child::PROBE_TIMEOUT)
                ));
                TestRunner::Cargo
            }
            Ok(o) if o.status.success() => TestRunner::Nextest,
            _ => TestRunner::Cargo,
        }
    }
}

/// What running the package's tests printed (a failing test is not an error here).
#[derive(Debug, Clone)]
pub(crate) struct TestRun {
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
pub(crate) fn test(
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
    let command = shell_line(settings, &flags, &args);
    let start = Instant::now();
    let (mut stdout, mut stderr) = (String::new(), String::new());
    let outcome = child::run(
        self::command(&args, &flags).envs(settings.c_env()),
        &format!("the crate's tests `{command}`"),
        build_timeout()?,
        &child::build_fix(),
        &mut |stream, line| {
            let into = match stream {
                child::Pipe::Stdout => &mut stdout,
                child::Pipe::Stderr => {
                    on_line(line.trim_end());
                    &mut stderr
                }
            };
            into.push_str(line);
            into.push('\n');
        },
    )?;
    Ok(TestRun {
        success: outcome.status.success(),
        status: outcome.status.to_string(),
        stdout,
        stderr,
        seconds: start.elapsed().as_secs_f64(),
        command,
    })
}

fn cargo_program() -> std::ffi::OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

/// The cargo command every build and test run starts (through [`child::run`]). Inside a job of `jobs::run` it joins the run's jobserver:
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
    cmd.args(all);
    child::for_build(&mut cmd, flags);
    cmd
}

/// What a build reports, in the order it happens.
#[derive(Debug, PartialEq)]
enum BuildEvent {
    /// Text for the build log: a line cargo printed on stderr, or one rendered rustc
    /// diagnostic (possibly several lines).
    Text(String),
    /// A `compiler-artifact` message with an executable (or a `cdylib`'s file), and whether
    /// cargo called it fresh.
    Executable(PathBuf, bool),
}

/// The event of one line of cargo's `--message-format=json` stdout: the executable of a
/// compiled artifact, or a rustc diagnostic as rustc renders it; anything else is `None`.
fn build_event(line: &str) -> Option<BuildEvent> {
    use cargo_metadata::Message;
    match serde_json::from_str::<Message>(line).ok()? {
        Message::CompilerArtifact(a) => match a.executable {
            Some(e) => Some(BuildEvent::Executable(e.into_std_path_buf(), a.fresh)),
            // A library a host loads: its `cdylib` file (a build script's has none).
            None if a.target.is_cdylib() => (a.filenames.into_iter())
                .map(|f| f.into_std_path_buf())
                .find(|f| library::is_shared_object(f))
                .map(|f| BuildEvent::Executable(f, a.fresh)),
            None => None,
        },
        Message::CompilerMessage(m) => m.message.rendered.map(BuildEvent::Text),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_build_s_command_line_is_what_a_shell_hands_cargo_unchanged() {
        let flags = |f: &[&str]| f.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let mut settings = BuildSettings::plain("release");
        settings.stage_rustflags = flags(&["-Cprofile-use=/p/a.profdata", "-Ctarget-cpu=native"]);
        let args = flags(&["build", "--config", "profile.release.lto=\"fat\""]);
        let line = shell_line(&settings, &settings.stage_rustflags, &args);
        assert_eq!(
            line,
            "RUSTFLAGS='-Cprofile-use=/p/a.profdata -Ctarget-cpu=native' cargo build --config 'profile.release.lto=\"fat\"'"
        );
        let words = shell_words::split(&line).unwrap();
        assert_eq!(words[4], "profile.release.lto=\"fat\"");
        // A flag with a space cannot go through RUSTFLAGS.
        let spaced = flags(&["-Cprofile-use=/my dir/a.profdata", "-Cx"]);
        assert_eq!(
            rustflags_assignment(&spaced),
            "CARGO_ENCODED_RUSTFLAGS=\"$(printf '%s\\037%s' '-Cprofile-use=/my dir/a.profdata' -Cx)\" "
        );
        assert_eq!(rustflags_assignment(&[]), "");
    }

    use super::*;

    #[test]
    fn a_build_that_failed_for_a_full_disk_says_so_with_the_fix() {
        let llvm = "error: could not compile `x`\nLLVM ERROR: IO failure on output stream: No space left on device\n";
        let said = disk_full_fix(llvm, Path::new("/t/optimize/build/1"));
        assert!(said.contains("the disk is full"), "{said}");
        assert!(
            said.contains("fix: free space") && said.contains("/t/optimize/build/1"),
            "{said}"
        );
        assert_eq!(
            disk_full_fix("error[E0308]: mismatched types", Path::new("/t")),
            ""
        );
    }

    #[test]
    fn settings_hash_changes_with_flags_and_overrides() {
        let base = BuildSettings::plain("release");
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
    fn lto_across_crates_is_fat_true_or_thin_in_the_overrides() {
        let project = Project::for_tests("p", "0.1.0");
        let with = |lto: &str| {
            let mut s = BuildSettings::plain("release");
            s.profile_overrides.insert("lto".into(), lto.into());
            uses_lto(&project, &s)
        };
        for lto in ["\"fat\"", "true", "\"thin\""] {
            assert_eq!(with(lto), Some(true), "{lto}");
        }
        for lto in ["false", "\"off\""] {
            assert_eq!(with(lto), Some(false), "{lto}");
        }
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
        let events: Vec<BuildEvent> = stdout.lines().filter_map(build_event).collect();
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
            crate::jobs::JobOutcome::Done
        });
        let flags = seen.into_inner().unwrap().expect("CARGO_MAKEFLAGS is set");
        assert!(flags.contains("--jobserver-auth="), "{flags}");
        assert_eq!(cargo_env(&command(&args, &[]), "CARGO_MAKEFLAGS"), None);
    }
}
