//! What cargo's configuration says, read as cargo reads it: the config file a `.cargo`
//! folder holds (`config` before `config.toml`), the folders cargo reads them from, the
//! command line's `--config KEY=VALUE` / `--config FILE` (above every file: cargo's
//! precedence is command line, then environment, then files), the user's effective
//! rustflags (`CARGO_ENCODED_RUSTFLAGS`, else `RUSTFLAGS`, else the config's
//! `target.<triple>.rustflags` / matching `target.'cfg(…)'.rustflags`, else
//! `build.rustflags`), and the build target (`build.target`, `CARGO_BUILD_TARGET`); how a
//! stage's flags compose with them and are read back.

use std::path::{Path, PathBuf};

use super::{CargoError, Project};

/// The user's effective rustflags for `target` (the host when `None`), exactly as cargo
/// would choose them from the environment, the command line's `--config` values (`cli`)
/// and the config files seen from `cwd`.
///
/// `cfg` is `rustc --print cfg` output for the target (to match `target.'cfg(…)'` tables).
pub(crate) fn user_rustflags(
    env: &dyn Fn(&str) -> Option<String>,
    cwd: &Path,
    cargo_home: Option<&Path>,
    cli: &[String],
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
    let config = CargoConfig::discover(cwd, cargo_home, cli)?;
    // target.<triple>.rustflags and every matching target.'cfg(..)'.rustflags are joined.
    let env_key = format!(
        "CARGO_TARGET_{}_RUSTFLAGS",
        triple.to_uppercase().replace(['-', '.'], "_")
    );
    let mut target_flags: Option<Vec<String>> = env(&env_key).map(|s| split_flags(&s));
    // The triple's own table first, then the cfg tables (cargo's order).
    let mut tables = config.target_rustflags();
    tables.sort_by_key(|(k, _)| k.starts_with("cfg("));
    for (key, flags) in tables {
        if target_applies(&key, triple, cfg) {
            target_flags.get_or_insert_with(Vec::new).extend(flags);
        }
    }
    if let Some(f) = target_flags {
        return Ok(f);
    }
    // `--config build.rustflags=…` beats the environment; config arrays join, the command
    // line's last.
    if config.cli_sets(&["build", "rustflags"]) {
        return Ok(config.build_rustflags().unwrap_or_default());
    }
    if let Some(flags) = env("CARGO_BUILD_RUSTFLAGS") {
        return Ok(split_flags(&flags));
    }
    Ok(config.build_rustflags().unwrap_or_default())
}

/// Cargo's home folder: `$CARGO_HOME`, else `.cargo` in the user's home (`$HOME`, else the
/// home folder of the user's account, as cargo's `home` crate finds it when `HOME` is unset).
pub(crate) fn cargo_home() -> Option<PathBuf> {
    cargo_home_of(std::env::var_os("CARGO_HOME"), std::env::home_dir)
}

/// [`cargo_home`] of `CARGO_HOME`'s value and a way to find the user's home folder.
fn cargo_home_of(
    var: Option<std::ffi::OsString>,
    home_dir: impl FnOnce() -> Option<PathBuf>,
) -> Option<PathBuf> {
    match var.filter(|v| !v.is_empty()) {
        Some(v) => Some(PathBuf::from(v)),
        None => home_dir().map(|h| h.join(".cargo")),
    }
}

/// The same as [`user_rustflags`] for this process's environment, directory and command
/// line.
pub(crate) fn user_rustflags_here(triple: &str, cfg: &[String]) -> Result<Vec<String>, CargoError> {
    let cwd = std::env::current_dir().unwrap_or_default();
    let cargo_home = cargo_home();
    user_rustflags(
        &|k| std::env::var(k).ok(),
        &cwd,
        cargo_home.as_deref(),
        &super::flags().config,
        triple,
        cfg,
    )
}

/// Whether the user chose the linker for `triple` (`CARGO_TARGET_<TRIPLE>_LINKER`, a
/// `linker` in a matching `[target.…]` table of the config files or the command line's
/// `--config`, or `-Clinker` among `rustflags`), as cargo would see it from `cwd`.
pub(crate) fn linker_set(
    env: &dyn Fn(&str) -> Option<String>,
    cwd: &Path,
    cargo_home: Option<&Path>,
    cli: &[String],
    (triple, cfg): (&str, &[String]),
    rustflags: &[String],
) -> Result<bool, CargoError> {
    let var = format!(
        "CARGO_TARGET_{}_LINKER",
        triple.to_uppercase().replace(['-', '.'], "_")
    );
    if env(&var).is_some_and(|v| !v.is_empty()) || codegen_option(rustflags, "linker").is_some() {
        return Ok(true);
    }
    let config = CargoConfig::discover(cwd, cargo_home, cli)?;
    Ok(config.files.iter().any(|(_, t)| {
        let targets = t.get("target").and_then(|v| v.as_table());
        targets.is_some_and(|targets| {
            targets
                .iter()
                .any(|(key, v)| v.get("linker").is_some() && target_applies(key, triple, cfg))
        })
    }))
}

/// [`linker_set`] for this process's environment, directory and command line.
pub(crate) fn linker_set_here(
    triple: &str,
    cfg: &[String],
    rustflags: &[String],
) -> Result<bool, CargoError> {
    let cwd = std::env::current_dir().unwrap_or_default();
    let cargo_home = cargo_home();
    let env = |k: &str| std::env::var(k).ok();
    let cli = &super::flags().config;
    linker_set(
        &env,
        &cwd,
        cargo_home.as_deref(),
        cli,
        (triple, cfg),
        rustflags,
    )
}

/// The target cargo builds for when the command line names none, and where that was said
/// (for messages): `--config build.target=…`, else `CARGO_BUILD_TARGET`, else `build.target`
/// of the nearest config file that sets it (cargo's precedence). `None`: the host. A
/// `.json` target file is made absolute (a config file's is relative to the folder that
/// holds its `.cargo`); several targets at once are refused with the fix.
pub(crate) fn build_target(
    env: &dyn Fn(&str) -> Option<String>,
    cwd: &Path,
    cargo_home: Option<&Path>,
    cli: &[String],
) -> Result<Option<BuildTarget>, CargoError> {
    let config = CargoConfig::discover(cwd, cargo_home, cli)?;
    let (files, cli_tables) = config.files.split_at(config.first_cli);
    // A config file's `.json` path is relative to the folder that holds its `.cargo`; the
    // command line's and the environment's to the current directory.
    let value_in = |base: Option<&Path>, (path, t): &(PathBuf, toml::Table)| {
        let v = t.get("build")?.get("target")?;
        let base = base.or_else(|| path.parent()?.parent()).unwrap_or(cwd);
        Some((v.clone(), base.to_path_buf(), path.display().to_string()))
    };
    let found = (cli_tables.iter().rev())
        .find_map(|f| value_in(Some(cwd), f))
        .or_else(|| {
            let v = env("CARGO_BUILD_TARGET").filter(|v| !v.is_empty())?;
            let from = "CARGO_BUILD_TARGET".to_string();
            Some((toml::Value::String(v), cwd.to_path_buf(), from))
        })
        .or_else(|| files.iter().rev().find_map(|f| value_in(None, f)));
    let Some((value, base, from)) = found else {
        return Ok(None);
    };
    let names: Vec<&str> = match &value {
        toml::Value::String(s) => vec![s.as_str()],
        toml::Value::Array(a) => a.iter().filter_map(|v| v.as_str()).collect(),
        _ => Vec::new(),
    };
    match names.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(BuildTarget {
            triple: target_name(one, &base),
            from: format!("build.target = {value} ({from})"),
        })),
        _ => Err(CargoError::Config {
            path: PathBuf::from(from),
            message: format!(
                "build.target = {value} builds for several targets, and cargo optimize \
                 measures one\n  fix: pass --target TRIPLE to choose one"
            ),
        }),
    }
}

/// A build target and where it was set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BuildTarget {
    pub triple: String,
    /// `build.target = "x" (/p/.cargo/config.toml)`, `build.target = "x" (CARGO_BUILD_TARGET)`.
    pub from: String,
}

/// A target name as rustc takes it: a triple, or a `.json` target file made absolute.
fn target_name(name: &str, base: &Path) -> String {
    if name.ends_with(".json") {
        base.join(name).display().to_string()
    } else {
        name.to_string()
    }
}

/// [`build_target`] for this process's environment, directory and command line.
pub(crate) fn build_target_here() -> Result<Option<BuildTarget>, CargoError> {
    let cwd = std::env::current_dir().unwrap_or_default();
    let cargo_home = cargo_home();
    build_target(
        &|k| std::env::var(k).ok(),
        &cwd,
        cargo_home.as_deref(),
        &super::flags().config,
    )
}

fn split_flags(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}

/// The config file cargo reads in the `.cargo` folder `dir`: `config` when it exists — cargo
/// prefers it to `config.toml` beside it (and warns "both … exist. Using …/config") —, else
/// `config.toml`.
pub(crate) fn config_file(dir: &Path) -> PathBuf {
    let plain = dir.join("config");
    if plain.is_file() {
        plain
    } else {
        dir.join("config.toml")
    }
}

/// The cargo config files that apply, lowest precedence first (cargo's merge order:
/// `$CARGO_HOME/config.toml`, then the directories from `/` down to `cwd`, then the command
/// line's `--config` values in their order).
pub(super) struct CargoConfig {
    /// Each file (a `--config KEY=VALUE` named `--config KEY=VALUE`) and its table.
    pub(super) files: Vec<(PathBuf, toml::Table)>,
    /// Where the command line's start in `files`.
    pub(super) first_cli: usize,
}

impl CargoConfig {
    pub(super) fn discover(
        cwd: &Path,
        cargo_home: Option<&Path>,
        cli: &[String],
    ) -> Result<Self, CargoError> {
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
                files.push((path.clone(), parse_table(&text, path)?));
            }
        }
        let first_cli = files.len();
        for arg in cli {
            files.push(cli_table(cwd, arg)?);
        }
        Ok(CargoConfig { files, first_cli })
    }

    /// Whether a `--config` value sets the key at `path` (`["build", "rustflags"]`).
    pub(super) fn cli_sets(&self, path: &[&str]) -> bool {
        self.files[self.first_cli..].iter().any(|(_, t)| {
            let mut v = Some(t);
            for (i, k) in path.iter().enumerate() {
                let Some(next) = v.and_then(|t| t.get(*k)) else {
                    return false;
                };
                if i + 1 == path.len() {
                    return true;
                }
                v = next.as_table();
            }
            false
        })
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

fn parse_table(text: &str, path: PathBuf) -> Result<toml::Table, CargoError> {
    text.parse()
        .map_err(|e: toml::de::Error| CargoError::Config {
            path,
            message: e.to_string(),
        })
}

/// One `--config` value as cargo reads it: the path of a file when one exists there (from
/// `cwd`), else `KEY=VALUE` in TOML (`build.rustflags=["-Cx"]`).
fn cli_table(cwd: &Path, arg: &str) -> Result<(PathBuf, toml::Table), CargoError> {
    let path = cwd.join(arg);
    if !arg.is_empty() && path.exists() {
        let text = std::fs::read_to_string(&path).map_err(|e| CargoError::Config {
            path: path.clone(),
            message: e.to_string(),
        })?;
        return Ok((path.clone(), parse_table(&text, path)?));
    }
    let name = PathBuf::from(format!("--config {arg}"));
    Ok((name.clone(), parse_table(arg, name)?))
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

/// Whether a `[target.KEY]` table (a triple, or `cfg(…)`) applies to `triple`, whose
/// `rustc --print cfg` lines are `cfg`, as cargo decides it.
pub(crate) fn target_applies(key: &str, triple: &str, cfg: &[String]) -> bool {
    key.parse::<cargo_platform::Platform>()
        .is_ok_and(|p| p.matches(triple, &parse_cfg(cfg)))
}

/// `rustc --print cfg` lines (`unix`, `target_os="linux"`) as cargo's cfg values; lines
/// that are not one are skipped.
pub(super) fn parse_cfg(lines: &[String]) -> Vec<cargo_platform::Cfg> {
    lines.iter().filter_map(|l| l.trim().parse().ok()).collect()
}

/// Whether a cfg expression (`unix`, `target_os = "linux"`, `all(..)`, `any(..)`,
/// `not(..)`) holds for `rustc --print cfg` lines, as cargo decides it for
/// `[target.'cfg(…)']` tables. An expression cargo cannot parse matches nothing.
#[cfg(test)]
pub(crate) fn cfg_matches(expr: &str, cfg: &[String]) -> bool {
    expr.parse::<cargo_platform::CfgExpr>()
        .is_ok_and(|e| e.matches(&parse_cfg(cfg)))
}

/// The folders whose config files cargo reads for this project: the `.cargo` of the
/// current directory's ancestors, of the workspace's, and `$CARGO_HOME`.
pub(super) fn config_dirs(project: &Project) -> Vec<PathBuf> {
    let cwd = std::env::current_dir().unwrap_or_default();
    let home = cargo_home();
    let mut dirs: Vec<PathBuf> = cwd
        .ancestors()
        .chain(project.workspace_root.ancestors())
        .map(|d| d.join(".cargo"))
        .collect();
    dirs.extend(home);
    dirs
}

/// User flags first, then ours: later flags win in rustc, so a stage's `-Ctarget-cpu`
/// overrides the user's, but nothing of the user's is dropped.
pub(crate) fn compose_rustflags(user: &[String], ours: &[String]) -> Vec<String> {
    user.iter().chain(ours).cloned().collect()
}

/// The last `-Ctarget-cpu=X` (or `-C target-cpu=X`) in `flags`.
pub(crate) fn target_cpu_of(flags: &[String]) -> Option<String> {
    codegen_option(flags, "target-cpu")
}

/// The value of the last `-C<name>=X` (or `-C <name>=X`) in `flags`: later ones win in rustc.
pub(crate) fn codegen_option(flags: &[String], name: &str) -> Option<String> {
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

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
        let f = user_rustflags(&env, dir.path(), None, &[], HOST, &cfg()).unwrap();
        assert_eq!(f, vec!["-Cfoo=a b", "--cfg", "x"]);
        let empty = env_of(&[("CARGO_ENCODED_RUSTFLAGS", ""), ("RUSTFLAGS", "-Cbar")]);
        assert!(user_rustflags(&empty, dir.path(), None, &[], HOST, &cfg())
            .unwrap()
            .is_empty());
    }

    #[test]
    fn a_linker_is_set_by_the_environment_a_matching_table_or_a_rustflag() {
        let dir = tempfile::tempdir().unwrap();
        let here = (HOST, &cfg()[..]);
        let set = |env: &[(&str, &str)], cli: &[String], flags: &[&str]| {
            let flags: Vec<String> = flags.iter().map(|f| f.to_string()).collect();
            linker_set(&env_of(env), dir.path(), None, cli, here, &flags).unwrap()
        };
        assert!(!set(
            &[],
            &[],
            &["-Clinker-flavor=gcc", "-Clink-arg=-fuse-ld=lld"]
        ));
        assert!(set(
            &[("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER", "clang")],
            &[],
            &[]
        ));
        assert!(set(&[], &[], &["-C", "linker=clang"]));
        let table = |t: &str| vec![format!("target.{t}.linker=\"clang\"")];
        assert!(set(&[], &table(HOST), &[]));
        assert!(set(&[], &table("'cfg(unix)'"), &[]));
        assert!(!set(&[], &table("aarch64-unknown-linux-gnu"), &[]));
        std::fs::create_dir_all(dir.path().join(".cargo")).unwrap();
        let file = format!("[target.{HOST}]\nlinker = \"clang\"\n");
        std::fs::write(dir.path().join(".cargo/config.toml"), file).unwrap();
        assert!(set(&[], &[], &[]));
    }

    #[test]
    fn rustflags_env_split_on_whitespace() {
        let dir = tempfile::tempdir().unwrap();
        let env = env_of(&[("RUSTFLAGS", "  --cfg  user_flag -Ctarget-cpu=native ")]);
        let f = user_rustflags(&env, dir.path(), None, &[], HOST, &cfg()).unwrap();
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
        let f = user_rustflags(&env_of(&[]), &proj, Some(&home), &[], HOST, &cfg()).unwrap();
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
        let f = user_rustflags(&env_of(&[]), root.path(), None, &[], HOST, &cfg()).unwrap();
        assert_eq!(f, vec!["-Ctoml"]);
        std::fs::write(dir.join("config"), "[build]\nrustflags = [\"-Cplain\"]\n").unwrap();
        let f = user_rustflags(&env_of(&[]), root.path(), None, &[], HOST, &cfg()).unwrap();
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
        let f = user_rustflags(&env_of(&[]), root.path(), None, &[], HOST, &cfg()).unwrap();
        assert_eq!(f, vec!["-Ctriple", "-Ccfg"]);
        // An env var for the triple joins the config tables.
        let env = env_of(&[("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUSTFLAGS", "-Cenv")]);
        let f = user_rustflags(&env, root.path(), None, &[], HOST, &cfg()).unwrap();
        assert_eq!(f, vec!["-Cenv", "-Ctriple", "-Ccfg"]);
    }

    /// `dir/.cargo/config.toml` with `text`.
    fn config_in(dir: &Path, text: &str) {
        std::fs::create_dir_all(dir.join(".cargo")).unwrap();
        std::fs::write(dir.join(".cargo/config.toml"), text).unwrap();
    }

    #[test]
    fn the_build_target_is_the_command_line_s_then_the_environment_s_then_the_nearest_file_s() {
        let root = tempfile::tempdir().unwrap();
        let (home, proj) = (root.path().join("home"), root.path().join("a/b"));
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(home.join("config.toml"), "build.target = \"home-t\"\n").unwrap();
        let target = |env: &[(&str, &str)], cli: &[&str]| {
            let cli: Vec<String> = cli.iter().map(|s| s.to_string()).collect();
            build_target(&env_of(env), &proj, Some(&home), &cli)
        };
        std::fs::create_dir_all(&proj).unwrap();
        assert_eq!(target(&[], &[]).unwrap().unwrap().triple, "home-t");
        config_in(&root.path().join("a"), "[build]\ntarget = \"parent-t\"\n");
        assert_eq!(target(&[], &[]).unwrap().unwrap().triple, "parent-t");
        config_in(&proj, "[build]\ntarget = [\"near-t\"]\n");
        let near = target(&[], &[]).unwrap().unwrap();
        assert_eq!(near.triple, "near-t", "the nearest file wins");
        let file = proj.join(".cargo/config.toml").display().to_string();
        assert_eq!(near.from, format!("build.target = [\"near-t\"] ({file})"));
        let env = [("CARGO_BUILD_TARGET", "env-t")];
        let from_env = target(&env, &[]).unwrap().unwrap();
        assert_eq!(from_env.triple, "env-t", "the environment beats every file");
        assert!(
            from_env.from.contains("CARGO_BUILD_TARGET"),
            "{}",
            from_env.from
        );
        let cli = target(&env, &["build.target=\"cli-t\""]).unwrap().unwrap();
        assert_eq!(cli.triple, "cli-t", "--config beats the environment");
        // A target file is relative to the folder holding the `.cargo` that names it.
        config_in(&proj, "build.target = \"my.json\"\n");
        let json = target(&[], &[]).unwrap().unwrap().triple;
        assert_eq!(json, proj.join("my.json").display().to_string());
        config_in(&proj, "build.target = [\"x-t\", \"y-t\"]\n");
        let e = target(&[], &[]).unwrap_err().to_string();
        assert!(
            e.contains("several targets") && e.contains("fix: pass --target"),
            "{e}"
        );
        let none = build_target(&env_of(&[]), root.path(), None, &[]).unwrap();
        assert_eq!(none, None, "nothing set: the host");
    }

    #[test]
    fn command_line_config_rustflags_are_kept_and_beat_the_environment() {
        let root = tempfile::tempdir().unwrap();
        config_in(root.path(), "[build]\nrustflags = [\"-Cfile\"]\n");
        let flags = |env: &[(&str, &str)], cli: &[&str]| {
            let cli: Vec<String> = cli.iter().map(|s| s.to_string()).collect();
            user_rustflags(&env_of(env), root.path(), None, &cli, HOST, &cfg()).unwrap()
        };
        let cli = ["build.rustflags=[\"-Ccli\"]"];
        assert_eq!(
            flags(&[], &cli),
            ["-Cfile", "-Ccli"],
            "arrays join, the command line's last"
        );
        let env = [("CARGO_BUILD_RUSTFLAGS", "-Cenv")];
        assert_eq!(flags(&env, &[]), ["-Cenv"]);
        assert_eq!(
            flags(&env, &cli),
            ["-Cfile", "-Ccli"],
            "--config beats the environment"
        );
        let triple = format!("target.{HOST}.rustflags=[\"-Ctriple\"]");
        assert_eq!(
            flags(&env, &[&triple]),
            ["-Ctriple"],
            "a target table beats [build]"
        );
        let cfg_table = "target.'cfg(unix)'.rustflags=[\"-Cunix\"]";
        assert_eq!(flags(&[], &[&triple, cfg_table]), ["-Ctriple", "-Cunix"]);
        // A --config that names a file reads it as one more config file.
        let extra = root.path().join("extra.toml");
        std::fs::write(&extra, "build.rustflags = [\"-Cextra\"]\n").unwrap();
        assert_eq!(flags(&[], &["extra.toml"]), ["-Cfile", "-Cextra"]);
        let bad = user_rustflags(
            &env_of(&[]),
            root.path(),
            None,
            &["build.=".into()],
            HOST,
            &cfg(),
        );
        assert!(bad.unwrap_err().to_string().contains("--config build.="));
    }

    #[test]
    fn cargo_home_without_home_is_the_account_s_home_folder() {
        let account = || Some(PathBuf::from("/home/u"));
        assert_eq!(
            cargo_home_of(None, account),
            Some(PathBuf::from("/home/u/.cargo"))
        );
        let set = Some(std::ffi::OsString::from("/ch"));
        assert_eq!(cargo_home_of(set, account), Some(PathBuf::from("/ch")));
        assert_eq!(cargo_home_of(Some("".into()), || None), None);
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
}
