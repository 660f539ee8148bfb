//! cargo's runner for a target: the program `cargo run` and `cargo test` start a target's
//! binaries through (`CARGO_TARGET_<TRIPLE>_RUNNER`, else `target.<triple>.runner`, else
//! the one `target.'cfg(…)'.runner` that matches, from the config files seen from the
//! current directory, nearest first). A binary this machine cannot run natively (another
//! architecture) runs through it: under an emulator such as `qemu-aarch64`, or on a board
//! through a remote-run script.
//!
//! Must not: run anything (it says what the runner is and whether its program exists).

use std::path::{Path, PathBuf};

use super::{parse_cfg, CargoConfig, CargoError};

/// A runner: its program and the arguments before the binary's path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Runner {
    pub program: PathBuf,
    pub args: Vec<String>,
    /// Where it was set, for messages: `CARGO_TARGET_…_RUNNER` or `<config file>:
    /// target.<key>.runner`.
    pub from: String,
}

impl Runner {
    /// Its program's file name (`qemu-aarch64`), for messages and the manifest.
    pub(crate) fn name(&self) -> String {
        self.program
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| self.program.display().to_string())
    }

    /// The whole command line before the binary, for messages.
    pub(crate) fn line(&self) -> String {
        std::iter::once(self.program.display().to_string())
            .chain(self.args.iter().cloned())
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The program exists (a path that is a file, or a name found on `PATH`), else the
    /// error with the fix.
    pub(crate) fn check_exists(&self, triple: &str) -> Result<(), String> {
        let found = if self.program.components().count() > 1 {
            self.program.is_file()
        } else {
            std::env::var_os("PATH").is_some_and(|paths| {
                std::env::split_paths(&paths).any(|d| d.join(&self.program).is_file())
            })
        };
        match found {
            true => Ok(()),
            false => Err(format!(
                "the runner for {triple} (`{}`, from {}) does not exist\n  fix: install it (for an emulator on Debian: `apt-get install qemu-user`), or correct the runner in {}",
                self.line(),
                self.from,
                self.from
            )),
        }
    }
}

/// The runner cargo would use for `triple`, as seen from `cwd`. `cfg` is `rustc --print
/// cfg --target <triple>` output (to match `target.'cfg(…)'` tables).
pub(crate) fn target_runner(
    env: &dyn Fn(&str) -> Option<String>,
    cwd: &Path,
    cargo_home: Option<&Path>,
    cli: &[String],
    triple: &str,
    cfg: &[String],
) -> Result<Option<Runner>, CargoError> {
    let key = format!(
        "CARGO_TARGET_{}_RUNNER",
        triple.to_uppercase().replace(['-', '.'], "_")
    );
    if let Some(line) = env(&key).filter(|l| !l.trim().is_empty()) {
        let mut words = line.split_whitespace().map(str::to_string);
        let program = PathBuf::from(words.next().unwrap_or_default());
        return Ok(Some(Runner {
            program,
            args: words.collect(),
            from: key,
        }));
    }
    let config = CargoConfig::discover(cwd, cargo_home, cli)?;
    let cfg = parse_cfg(cfg);
    // The nearest file that sets one wins; the triple's own table before a cfg table.
    for (path, table) in config.files.iter().rev() {
        let Some(targets) = table.get("target").and_then(|v| v.as_table()) else {
            continue;
        };
        let mut keys: Vec<&String> = targets.keys().collect();
        keys.sort_by_key(|k| k.starts_with("cfg("));
        for k in keys {
            let applies = k == triple
                || (k.starts_with("cfg(")
                    && k.parse::<cargo_platform::Platform>()
                        .is_ok_and(|p| p.matches(triple, &cfg)));
            let value = targets[k].get("runner");
            if let (true, Some(v)) = (applies, value) {
                return Ok(runner_value(v, path, k));
            }
        }
    }
    Ok(None)
}

/// The same as [`target_runner`] for this process's environment and directory.
pub(crate) fn target_runner_here(
    triple: &str,
    cfg: &[String],
) -> Result<Option<Runner>, CargoError> {
    let cwd = std::env::current_dir().unwrap_or_default();
    let cargo_home = super::cargo_home();
    target_runner(
        &|k| std::env::var(k).ok(),
        &cwd,
        cargo_home.as_deref(),
        &super::flags().config,
        triple,
        cfg,
    )
}

/// A config value (`"qemu-aarch64 -L /x"` or `["qemu-aarch64", "-L", "/x"]`) as a runner;
/// a program path with a `/` is relative to the folder holding `.cargo/` (cargo's rule).
fn runner_value(v: &toml::Value, file: &Path, key: &str) -> Option<Runner> {
    let words: Vec<String> = match v {
        toml::Value::String(s) => s.split_whitespace().map(str::to_string).collect(),
        toml::Value::Array(a) => a
            .iter()
            .filter_map(|x| x.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    };
    let (program, args) = words.split_first()?;
    let mut program = PathBuf::from(program);
    if program.is_relative() && program.components().count() > 1 {
        if let Some(root) = file.parent().and_then(Path::parent) {
            program = root.join(program);
        }
    }
    Some(Runner {
        program,
        args: args.to_vec(),
        from: format!("{}: target.{key}.runner", file.display()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const AARCH64: &str = "aarch64-unknown-linux-gnu";

    fn cfg() -> Vec<String> {
        ["unix", "target_os=\"linux\"", "target_arch=\"aarch64\""]
            .iter()
            .map(|s| s.to_string())
            .collect()
    }

    fn none(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn the_environment_wins_then_the_nearest_file_and_the_triple_before_a_cfg() {
        let root = tempfile::tempdir().unwrap();
        let home = root.path().join("home");
        let proj = root.path().join("a/proj");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(proj.join(".cargo")).unwrap();
        std::fs::create_dir_all(root.path().join("a/.cargo")).unwrap();
        std::fs::write(
            home.join("config.toml"),
            "[target.aarch64-unknown-linux-gnu]\nrunner = \"home-runner\"\n",
        )
        .unwrap();
        let found =
            |cwd: &Path| target_runner(&none, cwd, Some(&home), &[], AARCH64, &cfg()).unwrap();
        assert_eq!(found(&proj).unwrap().program, PathBuf::from("home-runner"));
        std::fs::write(
            root.path().join("a/.cargo/config.toml"),
            "[target.'cfg(target_arch = \"aarch64\")']\nrunner = [\"qemu-aarch64\", \"-L\", \"/usr/aarch64-linux-gnu\"]\n[target.aarch64-unknown-linux-gnu]\nrunner = \"scripts/run-on-board\"\n",
        )
        .unwrap();
        let r = found(&proj).unwrap();
        assert_eq!(
            r.program,
            root.path().join("a/scripts/run-on-board"),
            "a path is relative to the folder holding .cargo/"
        );
        std::fs::write(
            proj.join(".cargo/config.toml"),
            "[target.'cfg(target_arch = \"aarch64\")']\nrunner = [\"qemu-aarch64\", \"-L\", \"/usr/aarch64-linux-gnu\"]\n",
        )
        .unwrap();
        let r = found(&proj).unwrap();
        assert_eq!(
            (r.name(), r.args.clone()),
            (
                "qemu-aarch64".into(),
                vec!["-L".into(), "/usr/aarch64-linux-gnu".into()]
            )
        );
        assert!(r.from.contains("target.cfg(target_arch"), "{}", r.from);
        // Another target has none.
        let x86 = target_runner(
            &none,
            &proj,
            Some(&home),
            &[],
            "x86_64-unknown-linux-gnu",
            &[],
        );
        assert_eq!(x86.unwrap(), None);
        let env = |k: &str| {
            (k == "CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER")
                .then(|| "qemu-aarch64 -cpu max".into())
        };
        let r = target_runner(&env, &proj, Some(&home), &[], AARCH64, &cfg())
            .unwrap()
            .unwrap();
        assert_eq!(r.line(), "qemu-aarch64 -cpu max");
        assert_eq!(r.from, "CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER");
    }

    #[test]
    fn a_runner_that_does_not_exist_is_named_with_the_fix() {
        let r = Runner {
            program: "qemu-nowhere-7".into(),
            args: vec![],
            from: "CARGO_TARGET_X_RUNNER".into(),
        };
        let e = r.check_exists(AARCH64).unwrap_err();
        assert!(
            e.contains("`qemu-nowhere-7`") && e.contains("fix: install it"),
            "{e}"
        );
        let sh = Runner {
            program: "sh".into(),
            ..r
        };
        assert_eq!(sh.check_exists(AARCH64), Ok(()));
    }
}
