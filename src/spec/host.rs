//! `command = ["python3", "bench/run.py"]` workloads: a host program run instead of the
//! crate's binary, which loads the library being optimized (a Python extension module, a
//! C-ABI `cdylib`). The workload's `args` follow the command's own words; `stdin`, `env`,
//! `cwd`, `expect`, `metric` and `use` work as for a binary. One spec times one kind of
//! thing: every workload runs a command, or none does.
//!
//! Each run gets the candidate's folder (`bin/<tag>/`, holding the library under the name
//! the host loads) first on `PYTHONPATH` and `LD_LIBRARY_PATH` ([`library_env`]): the
//! jail builds the environment from nothing, so they are added like the workload's own
//! `env`, and the caller's `LD_LIBRARY_PATH` (a pass-through variable) follows the folder.

use std::ffi::OsString;
use std::path::Path;

use toml::Spanned;

use super::validate::Validator;
use super::{SpecError, Workload};

/// The variables that put a candidate's folder first where a host looks for libraries:
/// Python's module path, and the dynamic loader's.
pub(crate) const LIBRARY_PATH_VARS: [&str; 2] = ["PYTHONPATH", "LD_LIBRARY_PATH"];

impl Validator<'_> {
    /// A workload's `command`, each word expanded as `args` are: not empty, its program
    /// not an empty string, and not with `cargo` (which runs a harness instead).
    pub(super) fn host_command(
        &self,
        command: Option<&Spanned<Vec<Spanned<String>>>>,
        cargo: Option<&Spanned<String>>,
        expand: &mut dyn FnMut(&Spanned<String>) -> Result<String, SpecError>,
    ) -> Result<Option<Vec<String>>, SpecError> {
        let Some(command) = command else {
            return Ok(None);
        };
        if let Some(cargo) = cargo {
            return Err(self.at(
                cargo,
                "a workload with `command` runs a host program, and `cargo` runs a harness: it cannot do both",
                Some("remove `cargo` (the host program loads the library being optimized), or remove `command`".into()),
            ));
        }
        let words = command.get_ref();
        match words.first() {
            None => {
                return Err(self.at(
                    command,
                    "`command` is empty: it names the host program to run",
                    Some("give the program and its first arguments, e.g. command = [\"python3\", \"bench/run.py\"]".into()),
                ))
            }
            Some(w) if w.get_ref().trim().is_empty() => {
                return Err(self.at(
                    w,
                    "`command`'s first word is empty: it names the host program to run",
                    Some("name the program, e.g. \"python3\" (found on PATH) or a path relative to `cwd`".into()),
                ))
            }
            Some(_) => {}
        }
        words
            .iter()
            .map(&mut *expand)
            .collect::<Result<_, _>>()
            .map(Some)
    }

    /// Every workload runs a host program (`command`) or none does: one spec optimizes one
    /// thing, a binary or a library. `bin` names a binary, which a host never runs.
    pub(super) fn hosts_agree(
        &self,
        workloads: &[Workload],
        has_bin: bool,
    ) -> Result<(), SpecError> {
        let first = &workloads[0];
        let runs = |w: &Workload| match &w.host {
            Some(h) => format!("the host program `{}` (`command`)", h[0]),
            None => "the crate's binary".to_string(),
        };
        if let Some(w) = (workloads.iter()).find(|w| w.host.is_some() != first.host.is_some()) {
            return Err(self.invalid(
                self.line_start(w.line),
                format!(
                    "workload `{}` runs {} but workload `{}` runs {}: one spec optimizes one thing, a binary or a library a host program loads",
                    w.name,
                    runs(w),
                    first.name,
                    runs(first)
                ),
                Some("give every workload a `command` (the library is optimized) or none (the binary is), or put them in two specs and pick one with --spec".into()),
            ));
        }
        if has_bin && first.host.is_some() {
            return Err(self.invalid(
                0,
                "`bin` is set, but the workloads run a host program (`command`) that loads the package's library",
                Some("remove `bin`, or remove `command` from the workloads to optimize the binary".into()),
            ));
        }
        Ok(())
    }
}

/// The environment that makes a host load the library in `folder` (a candidate's
/// `bin/<tag>/`): the folder first on [`LIBRARY_PATH_VARS`], before what the workload's
/// `env` gives them and, for `LD_LIBRARY_PATH`, the caller's value the jail passes through.
pub(crate) fn library_env(w: &Workload, folder: &Path) -> Vec<(String, OsString)> {
    let passed = crate::process::passed(&w.env_pass);
    LIBRARY_PATH_VARS
        .iter()
        .map(|var| {
            let after = w.env.get(*var).map(OsString::from).or_else(|| {
                (passed.iter())
                    .find(|(k, _)| k == var)
                    .map(|(_, v)| v.clone())
            });
            let mut value = folder.as_os_str().to_owned();
            if let Some(rest) = after.filter(|v| !v.is_empty()) {
                value.push(":");
                value.push(rest);
            }
            (var.to_string(), value)
        })
        .collect()
}

/// The library a host program loads, as `init` proposes workloads for it.
pub(crate) enum Hosted<'a> {
    /// A pyo3 extension module, imported under this name.
    Module(&'a str),
    /// A plain C-ABI library, by its lib target's name (loaded as `lib<name>.so`).
    Plain(&'a str),
}

/// The commented spec `init` writes for a library a host loads: the skeleton's tables
/// (without `bin`, and without `[release]`, which builds binaries), then two workloads
/// running a script the user writes (said in the comments, with an example), and the eval
/// workload's comparison options of the skeleton.
pub(crate) fn skeleton_for_host(hosted: Hosted) -> String {
    let text = super::skeleton("x");
    let head = text
        .split("# `cargo optimize release`")
        .next()
        .unwrap_or_default();
    let bin_line = head
        .lines()
        .find(|l| l.starts_with("bin = "))
        .unwrap_or_default();
    let head = head.replace(
        bin_line,
        "# No `bin`: the workloads run a host program (`command`) that loads the package's cdylib.",
    );
    let tail = text.find("expect = \"exact\"").map_or("", |at| &text[at..]);
    let (asset, name) = match hosted {
        Hosted::Module(m) => (include_str!("skeleton_pyo3.toml"), m),
        Hosted::Plain(n) => (include_str!("skeleton_cdylib.toml"), n),
    };
    format!("{head}{}{tail}", asset.replace("@NAME@", name))
}

#[cfg(test)]
mod tests {
    use super::super::fixture::Fixture;
    use std::path::Path;

    const HOSTED: &str = "[[workload]]\nname = \"h\"\ncommand = [\"python3\", \"{root}/run.py\"]\nargs = [\"eval\"]\nenv = { PYTHONPATH = \"/mine\" }\n";

    #[test]
    fn a_command_workload_runs_the_host_with_the_candidate_s_folder_first() {
        let f = Fixture::new();
        let spec = f.ok(HOSTED);
        let w = &spec.workloads[0];
        let root = w.cwd.display().to_string();
        let run_py = format!("{root}/run.py");
        assert_eq!(
            w.host.as_deref(),
            Some(&["python3".to_string(), run_py.clone()][..])
        );
        let jail = crate::process::Jail::new(Path::new("/nonexistent"));
        let cmd = w.command(Path::new("/r/bin/pgo/hotpath.cpython-311.so"), &jail);
        assert_eq!(cmd.program, Path::new("python3"));
        assert_eq!(cmd.args, [run_py.as_str(), "eval"]);
        let var = |k: &str| {
            (cmd.env.iter().rev())
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.to_string_lossy().into_owned())
        };
        assert_eq!(var("PYTHONPATH").as_deref(), Some("/r/bin/pgo:/mine"));
        assert!(var("LD_LIBRARY_PATH").unwrap().starts_with("/r/bin/pgo"));
        // The host's script is an input: its bytes are keyed.
        assert!(w.input_paths().is_empty() || w.input_paths()[0].ends_with("run.py"));
    }

    #[test]
    fn command_mixed_with_binary_workloads_or_cargo_or_bin_is_refused_at_its_line() {
        let f = Fixture::new();
        let mixed = format!("{HOSTED}\n[[workload]]\nname = \"b\"\nargs = [\"x\"]\n");
        let (line, _, msg, fix) = f.err(&mixed);
        assert_eq!(line, 7, "{msg}");
        assert!(msg.contains("workload `b` runs the crate's binary but workload `h` runs the host program `python3`"), "{msg}");
        assert!(fix.contains("give every workload a `command`"), "{fix}");
        let (line, _, msg, _) =
            f.err("[[workload]]\nname = \"h\"\ncommand = [\"python3\"]\ncargo = \"bench\"\n");
        assert_eq!(line, 4, "{msg}");
        assert!(msg.contains("cannot do both"), "{msg}");
        let (line, col, msg, _) = f.err("[[workload]]\nname = \"h\"\ncommand = []\n");
        assert_eq!((line, col), (3, 11), "{msg}");
        assert!(msg.contains("`command` is empty"), "{msg}");
        let (_, _, msg, fix) = f.err(&format!("bin = \"x\"\n{HOSTED}"));
        assert!(msg.contains("`bin` is set"), "{msg}");
        assert!(fix.contains("remove `bin`"), "{fix}");
    }

    /// `init`'s spec for a library parses, runs `python3 bench/run.py` on different
    /// inputs to train and to time, and says what the user must write, with an example.
    #[test]
    fn the_host_skeletons_parse_and_say_what_to_write() {
        use super::{skeleton_for_host, Hosted};
        let f = Fixture::new();
        for (hosted, load) in [
            (Hosted::Module("hotpath"), "import hotpath"),
            (Hosted::Plain("fast"), "ctypes.CDLL(\"libfast.so\")"),
        ] {
            let text = skeleton_for_host(hosted);
            let spec = f.ok(&text);
            assert_eq!(spec.bin, None);
            let [train, eval] = &spec.workloads[..] else {
                panic!("two workloads: {text}")
            };
            assert!(train.train && !train.eval && eval.eval && !eval.train);
            for w in [train, eval] {
                let host = w.host.as_deref().unwrap();
                assert_eq!(host[0], "python3");
                assert!(host[1].ends_with("bench/run.py"), "{host:?}");
            }
            assert_ne!(train.args, eval.args, "train and eval run different inputs");
            for said in ["WRITE bench/run.py", load, "print(", "expect = \"exact\""] {
                assert!(text.contains(said), "{said}: {text}");
            }
            assert!(
                !text.contains("@NAME@") && !text.contains("[release]"),
                "{text}"
            );
            assert!(!text.lines().any(|l| l.starts_with("bin = ")), "{text}");
        }
    }
}
