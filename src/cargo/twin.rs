//! BOLT's input linked beside the build it comes from: the final link of a build whose BOLT
//! input will be asked for runs twice, the second time with `-Wl,-q` into a twin file, so
//! the input (a relink of that build with the flag, `cargo::relink`) is a copy of the twin
//! instead of a compilation of the package's crate and, under LTO, the whole program's
//! link-time optimization again (under fat LTO, a third full-length build beside the PGO
//! build and the allocator's).
//! Figures: docs/src/decisions.md, "BOLT's input is a twin of its build's link".
//!
//! How: a build with [`BuildSettings::relocs_twin`] names this program as rustc's linker
//! (`-Clinker=<this executable>`, in the rustflags, which change no symbol: the binary is
//! the one a plain build links) and sets [`ENV`] to the binary's crate name. Started so,
//! the program is the linker ([`as_linker`]): it runs the real one (`cc`, rustc's own on
//! the GNU Linux targets this is used for; none is used when the user configured one,
//! [`possible`]) with rustc's arguments, then, for the binary's own link, once more with
//! `-Wl,-q -o <output>.emit-relocs` appended (the driver takes the last `-o`). A link it
//! cannot twin (arguments in an `@file`, the second link failing) leaves no twin, and the
//! input is relinked as before.
//!
//! What is trusted: a twin is taken ([`take`]) only when the relink asks for `-Wl,-q`
//! alone, its base is built, and the twin's original (`deps/<crate>-<hash>`) is the base's
//! binary byte for byte and no newer than the twin; the copy is checked as an executable.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::{BuildSettings, Built, Project, EMIT_RELOCS_FLAG};

/// Set in a twin build's environment: the crate name of the binary whose link is twinned.
pub(crate) const ENV: &str = "CARGO_OPTIMIZE_LINK_TWIN";

/// The linker rustc runs itself on the targets [`possible`] allows.
const REAL_LINKER: &str = "cc";

/// What a twin's name adds to its original's.
const SUFFIX: &str = ".emit-relocs";

/// Whether builds for `triple` can link a twin: a GNU Linux target (rustc links through
/// `cc` there) whose linker the user did not configure (`linker_set`: their configured
/// linker could be anything, and is not ours to run).
pub(crate) fn possible(triple: &str, linker_set: bool) -> bool {
    triple.contains("-linux-gnu") && !linker_set
}

/// The rustflags and environment of a build of `settings` (its compile rustflags
/// given): a twin build's, and a relink's of a twin build (whose crates must see the same
/// rustflags as its base's, or cargo compiles them all again), name this program as
/// rustc's linker, which twins the binary's link for the first ([`ENV`] set to its crate
/// name) and only passes the second's through (set empty). Others are left as they are.
pub(super) fn arrange(
    project: &Project,
    settings: &BuildSettings,
    mut flags: Vec<String>,
) -> (Vec<String>, Vec<(String, String)>) {
    let wanted = settings.relocs_twin && project.harness.is_none() && project.library.is_none();
    let Some(exe) = std::env::current_exe().ok().filter(|_| wanted) else {
        return (flags, Vec::new());
    };
    flags.push(format!("-Clinker={}", exe.display()));
    let krate = match settings.relink_base(project) {
        Some(_) => String::new(),
        None => crate_name(project),
    };
    (flags, vec![(ENV.to_string(), krate)])
}

/// [`ENV`]'s value for `project`: its binary's crate name, as cargo names its output.
fn crate_name(project: &Project) -> String {
    project.bin.replace('-', "_")
}

/// When rustc started this program as the linker of a twin build (or of its relink): link,
/// twin the binary's link (not the relink's), and return the exit code to end with; `None` otherwise.
pub(crate) fn as_linker() -> Option<i32> {
    let krate = std::env::var_os(ENV)?.to_string_lossy().into_owned();
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let out = output(&args).filter(|o| !krate.is_empty() && is_binary(o, &krate));
    if let Some(o) = &out {
        // A stale twin must never outlive a link that does not write it again.
        let _ = std::fs::remove_file(twin_of(o));
    }
    let code = link(&args);
    if code != 0 {
        return Some(code);
    }
    if let Some(o) = out {
        let twin = twin_of(&o);
        let mut again = args;
        again.extend(["-Wl,-q".into(), "-o".into(), twin.clone().into_os_string()]);
        if link(&again) != 0 {
            let _ = std::fs::remove_file(&twin);
            eprintln!(
                "cargo-optimize: linking {} with -Wl,-q failed; BOLT's input will be relinked instead",
                twin.display()
            );
        }
    }
    Some(0)
}

/// Run the real linker with `args`, its output passed through (rustc reads it); its exit
/// code. The wait has the bound of the build it is part of: the cargo call's timeout kills
/// the whole process tree, this program and its linker included (`cargo::child`).
fn link(args: &[OsString]) -> i32 {
    match std::process::Command::new(REAL_LINKER).args(args).status() {
        Ok(s) => s.code().unwrap_or(1),
        Err(e) => {
            eprintln!("cargo-optimize: cannot run the linker `{REAL_LINKER}`: {e}");
            1
        }
    }
}

/// The path after `-o`, when the arguments are all on the command line.
fn output(args: &[OsString]) -> Option<PathBuf> {
    if args.iter().any(|a| a.to_string_lossy().starts_with('@')) {
        return None;
    }
    let i = args.iter().rposition(|a| a == "-o")?;
    args.get(i + 1).map(PathBuf::from)
}

/// Whether `out` is the binary's own output (`deps/<crate>-<hash>`), not a build script's
/// or a library's.
fn is_binary(out: &Path, krate: &str) -> bool {
    let name = out.file_name().map(|n| n.to_string_lossy().into_owned());
    name.and_then(|n| n.strip_prefix(&format!("{krate}-")).map(str::to_string))
        .is_some_and(|hash| !hash.is_empty() && hash.chars().all(|c| c.is_ascii_hexdigit()))
}

/// Where the twin of the link into `original` goes: beside it, [`SUFFIX`] appended.
fn twin_of(original: &Path) -> PathBuf {
    let mut name = original.as_os_str().to_os_string();
    name.push(SUFFIX);
    PathBuf::from(name)
}

/// The relink `settings` asks for, made from its base's twin: copied to where the relink's
/// binary goes in `target_dir`, when the relink adds `-Wl,-q` alone and the base's build
/// left a twin of the binary it holds (see the module doc); `None` otherwise.
pub(super) fn take(
    project: &Project,
    settings: &BuildSettings,
    target_dir: &Path,
) -> Option<Built> {
    let started = Instant::now();
    let base = settings.relink_base(project)?;
    if !base.relocs_twin || settings.link_flags() != [EMIT_RELOCS_FLAG] {
        return None;
    }
    let base_dir = super::relink::built_base_dir(project, settings, target_dir)?;
    let out = base.output_dir(&base_dir);
    let binary = out.join(&project.bin);
    let twin = find(&out.join("deps"), &crate_name(project), &binary)?;
    let dest = settings.output_dir(target_dir).join(&project.bin);
    std::fs::create_dir_all(dest.parent()?).ok()?;
    let copy = |from: &Path, to: &Path| {
        crate::util::atomic::with_temp(to, |tmp| std::fs::copy(from, tmp).map(drop)).ok()
    };
    copy(&twin, &dest)?;
    // The base's dep-info: the same sources made it, and the build cache keeps a build by
    // them (`reuse::keep`), so an unchanged run reuses this one.
    copy(&binary.with_extension("d"), &dest.with_extension("d"))?;
    super::executable::check(&dest, settings.target.as_deref()).ok()?;
    Some(Built {
        binary: dest,
        seconds: started.elapsed().as_secs_f64(),
        stderr: String::new(),
        command: super::shell_line(
            settings,
            &settings.compile_rustflags(project),
            &settings.cargo_args(project, target_dir),
        ),
        peak_rss_bytes: None,
    })
}

/// The twin in `deps` whose original is `binary` byte for byte and no newer than it.
fn find(deps: &Path, krate: &str, binary: &Path) -> Option<PathBuf> {
    let want = crate::store::file_digest(binary).ok()?;
    let entries = std::fs::read_dir(deps).ok()?;
    entries.flatten().map(|e| e.path()).find(|twin| {
        let Some(original) = twin.to_str().and_then(|t| t.strip_suffix(SUFFIX)) else {
            return false;
        };
        let original = Path::new(original);
        let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
        is_binary(original, krate)
            && modified(twin) >= modified(original)
            && modified(original).is_some()
            && crate::store::file_digest(original).ok() == Some(want)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    #[test]
    fn the_output_is_the_last_o_unless_arguments_are_in_a_file() {
        let a = args(&["-m64", "x.o", "-o", "/t/deps/demo-0a1b", "-nodefaultlibs"]);
        assert_eq!(output(&a), Some(PathBuf::from("/t/deps/demo-0a1b")));
        assert_eq!(output(&args(&["@/tmp/linker-args"])), None);
        assert_eq!(output(&args(&["x.o"])), None);
    }

    #[test]
    fn only_the_binary_s_own_link_is_twinned() {
        let yes = |p: &str| is_binary(Path::new(p), "pulldown_cmark");
        assert!(yes("/t/release/deps/pulldown_cmark-041eb8066ea17284"));
        assert!(!yes("/t/release/build/x/build_script_build-0a1b"));
        assert!(!yes("/t/release/deps/libpulldown_cmark-0a1b.so"));
        assert!(!yes("/t/release/deps/pulldown_cmark-0a1b.emit-relocs"));
        assert!(!yes("/t/release/deps/pulldown_cmark_escape-0a1b"));
    }

    #[test]
    fn only_gnu_linux_targets_with_rustc_s_own_linker_twin() {
        assert!(possible("x86_64-unknown-linux-gnu", false));
        assert!(!possible("x86_64-unknown-linux-gnu", true));
        assert!(!possible("x86_64-unknown-linux-musl", false));
        assert!(!possible("x86_64-pc-windows-msvc", false));
    }
}
