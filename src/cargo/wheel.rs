//! A Python extension module built to ship: a wheel made by maturin as the user has it
//! (`maturin` on `PATH`, else `<interpreter> -m maturin`; neither: an error with the fix
//! `pip install maturin`), given a run's settings the way a candidate build gets them — the
//! profile (`--release`, or `--profile P`) and its overrides as `--config
//! profile.<P>.<key>=…`, `--target`, the features, every rustflag in
//! `CARGO_ENCODED_RUSTFLAGS`, the C compiler's variables — for the interpreter the host
//! runs. Then the module file is read back out of the wheel (a zip: the entry named
//! `<module><EXT_SUFFIX>`) and compared with the file the run measured ([`identity`]): the
//! same bytes, else the same defined function symbols (maturin may strip or patch the
//! file), else the difference is named.
//!
//! Must not: decide what ships (the caller gives the settings), or write anywhere but the
//! wheel folder and the cargo target directory it is given.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::{child, BuildSettings, Project};

/// The bound of `maturin --version`.
const ASK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// How maturin is started here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Maturin {
    program: PathBuf,
    /// `["-m", "maturin"]` when it runs as the interpreter's module.
    before: Vec<String>,
}

impl Maturin {
    /// `maturin` on `PATH`, else `interpreter -m maturin` when that answers `--version`;
    /// else why not, with the fix.
    pub(crate) fn find(interpreter: &Path) -> anyhow::Result<Maturin> {
        if let Some(program) = crate::toolchain::find_on_path("maturin") {
            return Ok(Maturin {
                program,
                before: Vec::new(),
            });
        }
        let module = Maturin {
            program: interpreter.to_path_buf(),
            before: vec!["-m".into(), "maturin".into()],
        };
        let asked = crate::process::Command::new(&module.program)
            .args(module.before.iter().chain([&"--version".to_string()]))
            .timeout(ASK_TIMEOUT)
            .label("maturin --version");
        let why = match crate::process::run(&asked) {
            Ok(o) if o.status.success() && !o.timed_out => return Ok(module),
            Ok(o) => o.stderr_tail(2).trim().to_string(),
            Err(e) => e.to_string(),
        };
        anyhow::bail!(
            "maturin, which builds the wheel, is not installed: not on PATH, and `{} -m maturin` fails ({why})\n  fix: pip install maturin (for the interpreter the workloads run: `{} -m pip install --user maturin`)",
            interpreter.display(),
            interpreter.display()
        )
    }

    /// How it is started, for messages (`maturin`, `python3 -m maturin`).
    pub(crate) fn line(&self) -> String {
        let mut words = vec![self.program.display().to_string()];
        words.extend(self.before.iter().cloned());
        words.join(" ")
    }
}

/// How maturin names a cargo profile: `--release`, else `--profile P`.
pub(crate) fn profile_args(profile: &str) -> Vec<String> {
    match profile {
        "release" => vec!["--release".into()],
        p => vec!["--profile".into(), p.into()],
    }
}

/// The arguments after `maturin` that build a wheel of `settings` for `interpreter` into
/// `out`, compiling in `target_dir`.
pub(crate) fn build_args(
    settings: &BuildSettings,
    project: &Project,
    interpreter: &Path,
    out: &Path,
    target_dir: &Path,
) -> Vec<String> {
    let mut args: Vec<String> = vec!["build".into()];
    args.extend(profile_args(&settings.profile));
    for (flag, value) in [
        ("--manifest-path", &project.manifest_path),
        ("--interpreter", &interpreter.to_path_buf()),
        ("--out", &out.to_path_buf()),
        ("--target-dir", &target_dir.to_path_buf()),
    ] {
        args.extend([flag.to_string(), value.display().to_string()]);
    }
    args.extend(settings.selection_args());
    args
}

/// A wheel built, and the command that built it (for the manifest).
#[derive(Debug, Clone)]
pub(crate) struct Wheel {
    pub(crate) path: PathBuf,
    pub(crate) command: String,
}

/// Build the wheel of `args` ([`build_args`]; `out` is its `--out`, empty before) with
/// `settings`' rustflags and C variables, bounded as a build is; each line of maturin's
/// output to `on_line`.
pub(crate) fn build(
    maturin: &Maturin,
    args: &[String],
    settings: &BuildSettings,
    out: &Path,
    on_line: &mut dyn FnMut(&str),
) -> anyhow::Result<Wheel> {
    let flags = settings.all_rustflags();
    let mut cmd = std::process::Command::new(&maturin.program);
    cmd.args(maturin.before.iter().chain(args))
        .envs(settings.c_env());
    child::for_build(&mut cmd, &flags);
    let command = shell_line(maturin, settings, &flags, args);
    let mut tail: Vec<String> = Vec::new();
    let outcome = child::run(
        &mut cmd,
        &format!("the wheel's build `{}`", maturin.line()),
        child::build_timeout()?,
        &child::build_fix(),
        &mut |_, line| {
            on_line(line);
            tail.push(line.to_string());
            if tail.len() > 30 {
                tail.remove(0);
            }
        },
    )?;
    if !outcome.status.success() {
        anyhow::bail!(
            "`{command}` failed ({}):\n{}",
            outcome.status,
            crate::util::indent(&tail.join("\n"), "  ")
        );
    }
    let wheels: Vec<PathBuf> = std::fs::read_dir(out)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "whl"))
        .collect();
    match wheels.as_slice() {
        [one] => Ok(Wheel {
            path: one.clone(),
            command,
        }),
        _ => anyhow::bail!(
            "`{command}` left {} wheels in {}, not one",
            wheels.len(),
            out.display()
        ),
    }
}

/// The command as a shell line: the C variables, the rustflags, maturin and its arguments.
pub(crate) fn shell_line(
    maturin: &Maturin,
    settings: &BuildSettings,
    flags: &[String],
    args: &[String],
) -> String {
    let c: String = (settings.c_env().iter())
        .map(|(k, v)| format!("{k}={} ", super::shell_word(v)))
        .collect();
    let program = maturin.program.display().to_string();
    let words: Vec<_> = (std::iter::once(&program).chain(&maturin.before).chain(args))
        .map(|a| super::shell_word(a).into_owned())
        .collect();
    format!(
        "{c}{}{}",
        super::rustflags_assignment(flags),
        words.join(" ")
    )
}

/// The bytes of the file named `file` (its last path component) in the wheel `wheel`, read
/// with the `zip` crate (its CRC-32 checked as the entry is read to its end).
pub(crate) fn module_in(wheel: &Path, file: &str) -> anyhow::Result<Vec<u8>> {
    let bad = |why: String| anyhow::anyhow!("{}: {why}", wheel.display());
    let opened = std::fs::File::open(wheel)?;
    let mut archive = zip::ZipArchive::new(opened).map_err(|e| bad(e.to_string()))?;
    let names: Vec<String> = (archive.file_names())
        .map(|n| n.map(|n| n.into_owned()))
        .collect::<Result<_, _>>()
        .map_err(|e| bad(e.to_string()))?;
    let named: Vec<&String> = (names.iter())
        .filter(|n| n.rsplit('/').next() == Some(file))
        .collect();
    let [one] = named.as_slice() else {
        return Err(bad(format!(
            "{} entries named {file} (the module the host imports), not one; it holds: {}",
            named.len(),
            names.join(", ")
        )));
    };
    let mut entry = archive.by_name(one).map_err(|e| bad(e.to_string()))?;
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut entry, &mut bytes).map_err(|e| bad(e.to_string()))?;
    Ok(bytes)
}

/// Whether a built file is the one measured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Identity {
    SameBytes,
    /// The bytes differ, the defined function symbols (this many) do not.
    SameSymbols(usize),
    /// How they differ.
    Differs(String),
}

impl Identity {
    /// One line for the user and the manifest.
    pub(crate) fn text(&self) -> String {
        match self {
            Identity::SameBytes => "same bytes as the file the run measured".into(),
            Identity::SameSymbols(n) => format!(
                "same {n} defined function symbols as the file the run measured (the bytes differ: the wheel's build step strips or patches it)"
            ),
            Identity::Differs(why) => format!("not the file the run measured: {why}"),
        }
    }
}

/// `built` against `measured`: the same bytes, else the same defined function symbols
/// (the symbol table's, or the dynamic one's when there is none), else how they differ.
pub(crate) fn identity(built: &[u8], measured: &[u8]) -> Identity {
    if built == measured {
        return Identity::SameBytes;
    }
    let (b, m) = match (defined_functions(built), defined_functions(measured)) {
        (Ok(b), Ok(m)) => (b, m),
        (Err(e), _) | (_, Err(e)) => return Identity::Differs(e),
    };
    if b == m {
        return Identity::SameSymbols(b.len());
    }
    let some = |s: Vec<&String>| {
        let shown: Vec<&str> = s.iter().take(3).map(|s| s.as_str()).collect();
        format!("{} (e.g. {})", s.len(), shown.join(", "))
    };
    Identity::Differs(format!(
        "the bytes differ, and so do the defined functions: {} only in the built one, {} only in the measured one",
        some(b.difference(&m).collect()),
        some(m.difference(&b).collect())
    ))
}

/// The names of the functions `bytes` (a shared object) defines.
fn defined_functions(bytes: &[u8]) -> Result<BTreeSet<String>, String> {
    use object::{Object, ObjectSymbol, SymbolKind};
    let file = object::File::parse(bytes).map_err(|e| format!("not an object file: {e}"))?;
    let pick = |s: &object::Symbol| {
        (s.is_definition() && s.kind() == SymbolKind::Text)
            .then(|| s.name().ok().map(str::to_string))
            .flatten()
    };
    let mut names: BTreeSet<String> = file.symbols().filter_map(|s| pick(&s)).collect();
    if names.is_empty() {
        names = file.dynamic_symbols().filter_map(|s| pick(&s)).collect();
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A wheel holding `files` (name, content, deflated?).
    fn wheel_of(path: &Path, files: &[(&str, &[u8], bool)]) {
        let mut w = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
        for (name, content, deflate) in files {
            let method = match deflate {
                true => zip::CompressionMethod::Deflated,
                false => zip::CompressionMethod::Stored,
            };
            let options = zip::write::SimpleFileOptions::default().compression_method(method);
            w.start_file(*name, options).unwrap();
            std::io::Write::write_all(&mut w, content).unwrap();
        }
        w.finish().unwrap();
    }

    #[test]
    fn the_module_is_read_out_of_the_wheel_checked_and_only_when_it_is_one_entry() {
        let d = tempfile::tempdir().unwrap();
        let wheel = d.path().join("m.whl");
        let module = b"\x7fELF module bytes ".repeat(50);
        let file = "m.cpython-311-x86_64-linux-gnu.so";
        let name = format!("pkg/{file}");
        wheel_of(
            &wheel,
            &[
                ("pkg/__init__.py", b"from .m import *\n", false),
                (&name, &module, true),
            ],
        );
        assert_eq!(module_in(&wheel, file).unwrap(), module);
        let e = module_in(&wheel, "other.so").unwrap_err().to_string();
        assert!(
            e.contains("0 entries named other.so") && e.contains(&name),
            "{e}"
        );
        let stored = d.path().join("stored.whl");
        wheel_of(&stored, &[(&name, &module, false)]);
        let mut damaged = std::fs::read(&stored).unwrap();
        let at = damaged.windows(9).position(|w| w == b"ELF modul").unwrap();
        damaged[at] ^= 0xff;
        std::fs::write(&stored, damaged).unwrap();
        assert!(
            module_in(&stored, file).is_err(),
            "a changed byte fails its CRC"
        );
        std::fs::write(&stored, b"not a zip at all").unwrap();
        assert!(module_in(&stored, file).is_err());
    }

    #[test]
    fn a_wheel_is_built_with_the_profile_its_overrides_the_target_and_features() {
        let mut s = BuildSettings::plain("release");
        s.profile_overrides.insert("lto".into(), "\"fat\"".into());
        s.target = Some("x86_64-unknown-linux-gnu".into());
        s.features.features = vec!["fast".into()];
        let project = Project::for_tests("p", "0.1.0");
        let args = build_args(
            &s,
            &project,
            Path::new("/usr/bin/python3"),
            Path::new("/o"),
            Path::new("/t"),
        );
        let line = args.join(" ");
        assert!(line.starts_with("build --release --manifest-path /p/Cargo.toml --interpreter /usr/bin/python3 --out /o --target-dir /t --target x86_64-unknown-linux-gnu --features fast"), "{line}");
        assert!(
            line.ends_with("--config profile.release.lto=\"fat\""),
            "{line}"
        );
        assert_eq!(profile_args("optimized"), ["--profile", "optimized"]);
    }

    #[test]
    fn the_same_bytes_are_the_same_file_and_other_bytes_are_compared_by_symbols() {
        assert_eq!(identity(b"abc", b"abc"), Identity::SameBytes);
        // This test's own executable: the same symbols, other bytes (one byte of a string
        // constant changed).
        const MARK: &str = "wheel-identity-mark-7c1e";
        std::hint::black_box(MARK);
        let me = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let at = (me.windows(MARK.len()))
            .position(|w| w == MARK.as_bytes())
            .unwrap();
        let mut other = me.clone();
        other[at] ^= 0x01;
        match identity(&me, &other) {
            Identity::SameSymbols(n) => assert!(n > 10, "{n}"),
            Identity::SameBytes => panic!("the bytes differ"),
            Identity::Differs(why) => panic!("{why}"),
        }
        let differs = identity(b"not an object", &me);
        assert!(matches!(differs, Identity::Differs(_)), "{differs:?}");
        assert!(differs.text().starts_with("not the file the run measured"));
    }
}
