//! `cargo optimize profile collect`: the instrumented binary to deploy. It is the PGO
//! stage's instrumented build of the project's settings (the plan's baseline: its cargo
//! profile, features, your rustflags; the host target named, as the stage names it), built
//! through a `Context` by `stage::pgo::instrument_into` with `-Cprofile-generate=<dir>`,
//! the folder the deployed binary writes into. rustc names the file `default_%m.profraw`
//! there: `%m` makes every process of the same binary merge its counts into one file as it
//! exits, so a host keeps one profile per binary, however often it runs.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::cargo::BuildSettings;
use crate::context::Plan;
use crate::context::{DirLock, RunDir};

/// The collector built, and what the operator needs to know.
#[derive(Debug)]
pub(crate) struct Collector {
    pub(crate) bin: String,
    /// The copy to deploy.
    pub(crate) binary: PathBuf,
    /// The folder compiled in.
    pub(crate) dir: PathBuf,
    /// Whether it is the default (no `--dir`).
    pub(crate) default: bool,
    /// The instrumented build's settings, the profile flag included.
    pub(crate) settings: BuildSettings,
}

/// Build the collector of `plan`'s project, writing into `dir` (default: a private folder
/// of yours, [`default_dir`]), and copy it to `output` (default
/// `target/optimize/collect/<bin>-instrumented`). A folder that exists must be private
/// ([`check_private`]); the default one is made, mode 0700, when missing.
pub(crate) fn build(
    plan: &Plan,
    output: Option<&Path>,
    dir: Option<&Path>,
) -> anyhow::Result<Collector> {
    let bin = plan.project.bin.clone();
    let safe = crate::util::file_safe(&bin, "-_.");
    let uid = crate::sys::current_uid();
    let default = dir.is_none();
    let dir = match dir {
        Some(d) => {
            let d = checked_dir(d)?;
            check_private(&d, uid, &format!("--dir {}", d.display()))?;
            d
        }
        None => {
            let d = default_dir(&safe, &|k| std::env::var_os(k))?;
            check_private(&d, uid, "the collector's default folder")?;
            create_private(&d)?;
            d
        }
    };
    let _lock = DirLock::for_run(&plan.optimize_dir)?;
    let _lockfile =
        crate::cargo::RunLockfile::for_run(&plan.project, &plan.optimize_dir, &plan.ui)?;
    // The build's steps need a run folder; the collector's own is stable (no run record).
    let run = RunDir {
        id: "collect".into(),
        root: plan.optimize_dir.join("collect"),
    };
    std::fs::create_dir_all(&run.root)
        .with_context(|| format!("cannot create {}", run.root.display()))?;
    let ctx = crate::context::Context::new(plan, &plan.spec, &run);
    plan.ui.step(&format!(
        "building the collector of `{bin}`: instrumented, writing into {}",
        dir.display()
    ));
    let (settings, built) =
        crate::stage::pgo::instrument_into(&ctx, &plan.baseline, "collect", None, &dir)?;
    let binary = match output {
        Some(p) => crate::util::absolute(p),
        None => run.root.join(format!("{safe}-instrumented")),
    };
    copy_whole(&built.binary, &binary)?;
    Ok(Collector {
        bin,
        binary,
        dir,
        default,
        settings,
    })
}

/// `--dir`: absolute, since it is compiled in and the binary runs elsewhere.
fn checked_dir(dir: &Path) -> anyhow::Result<PathBuf> {
    if !dir.is_absolute() {
        anyhow::bail!(
            "--dir {}: must be an absolute path: it is compiled into the binary, which runs in other working directories and on other hosts\n  fix: --dir /var/tmp/{}",
            dir.display(),
            dir.display()
        );
    }
    Ok(dir.to_path_buf())
}

/// The collector's folder without `--dir`: `$XDG_STATE_HOME/cargo-optimize/<bin>-pgo`, else
/// `~/.local/state/cargo-optimize/<bin>-pgo` — a folder of yours, never a shared one such
/// as `/tmp`, where another local user could make it first and plant a symlink where the
/// profile goes (the binary, run by you or root, would then overwrite its target).
fn default_dir(safe: &str, env: &dyn Fn(&str) -> Option<OsString>) -> anyhow::Result<PathBuf> {
    let absolute = |k: &str| env(k).map(PathBuf::from).filter(|p| p.is_absolute());
    let state =
        absolute("XDG_STATE_HOME").or_else(|| absolute("HOME").map(|h| h.join(".local/state")));
    let Some(state) = state else {
        anyhow::bail!("no private folder for the collector's profiles: neither XDG_STATE_HOME nor HOME is an absolute path\n  fix: --dir DIR, a folder only you can write (mode 0700), e.g. --dir /var/lib/{safe}-pgo");
    };
    Ok(state.join("cargo-optimize").join(format!("{safe}-pgo")))
}

/// Make `dir` (and its missing parents) when it is missing, the folder itself mode 0700.
fn create_private(dir: &Path) -> anyhow::Result<()> {
    let parent = dir.parent().unwrap_or(Path::new("/"));
    let made = std::fs::create_dir_all(parent).and_then(|_| crate::sys::create_private_dir(dir));
    match made {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => Err(e).with_context(|| {
            format!("cannot create the collector's folder {}\n  fix: --dir DIR, a folder only you can write", dir.display())
        }),
        _ => Ok(()),
    }
}

/// A folder the collector will write into, when it exists, must be a folder of user `uid`
/// (as must a symlink to it) that no one else can write into — or only with the sticky
/// bit, under which others cannot replace what is in it: else another local user could
/// plant a symlink where the profile goes, and the binary would overwrite its target.
/// `what` names it in the error (the flag, or the default).
fn check_private(dir: &Path, uid: Option<u32>, what: &str) -> anyhow::Result<()> {
    // Where the platform has no owners and modes (Windows), a folder's ACL is its own.
    let Some(uid) = uid else {
        return Ok(());
    };
    let fix = |how: &str| {
        format!("  fix: {how}, or give a folder only you can write: --dir DIR (mode 0700)")
    };
    let link = match std::fs::symlink_metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        other => other.with_context(|| format!("{what}: cannot read {}", dir.display()))?,
    };
    let meta =
        std::fs::metadata(dir).with_context(|| format!("{what}: cannot read {}", dir.display()))?;
    let d = dir.display();
    let owner = [&link, &meta]
        .into_iter()
        .filter_map(crate::sys::owner)
        .find(|&o| o != uid);
    if let Some(owner) = owner {
        anyhow::bail!("{what}: {d} belongs to another user (uid {owner}; you are uid {uid}), who could plant a symlink where the profile goes and have the collector overwrite any file you can write\n{}", fix(&format!("remove it (`rm -r {d}`) and collect again")));
    }
    if !meta.is_dir() {
        anyhow::bail!(
            "{what}: {d} is not a folder\n{}",
            fix(&format!("remove it (`rm {d}`)"))
        );
    }
    let mode = crate::sys::mode(&meta) & 0o7777;
    // The kernel follows no other user's symlink in a sticky world-writable folder (/tmp)
    // while `fs.protected_symlinks` is on; in a group-writable one it does.
    let protected = mode & 0o1002 == 0o1002 && protected_symlinks();
    if mode & 0o022 != 0 && !protected {
        let who = if mode & 0o002 != 0 {
            "everyone"
        } else {
            "its group"
        };
        let sticky = match mode & 0o1000 {
            0 => "not sticky",
            _ if mode & 0o002 != 0 => "sticky, but fs.protected_symlinks is off",
            _ => "sticky, which guards no symlink in a folder only a group can write",
        };
        anyhow::bail!("{what}: {d} can be written by {who} (mode {mode:04o}, {sticky}): another user could plant a symlink where the profile goes and have the collector overwrite any file you can write\n{}", fix(&format!("`chmod 700 {d}`")));
    }
    Ok(())
}

/// Whether the kernel refuses to follow another user's symlink in a sticky world-writable
/// folder (`/proc/sys/fs/protected_symlinks` is 1).
fn protected_symlinks() -> bool {
    std::fs::read_to_string("/proc/sys/fs/protected_symlinks").is_ok_and(|v| v.trim() == "1")
}

/// Copy `from` to `to` as every `-o` is written (`util::atomic::write_file`: through a
/// symlink, into a device or pipe, a regular file replaced whole with `from`'s mode).
fn copy_whole(from: &Path, to: &Path) -> anyhow::Result<()> {
    let parent = to.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent)
        .with_context(|| format!("cannot create {}", parent.display()))?;
    crate::util::atomic::write_file(to, from)?;
    Ok(())
}

impl Collector {
    /// Where it writes, the settings it was built with, and what to do next.
    pub(crate) fn describe(&self) -> String {
        let s = &self.settings;
        let file = self.dir.join("default_%m.profraw");
        let folder = match self.default {
            true => "the default folder: a private one of yours (mode 0700) under $XDG_STATE_HOME, else ~/.local/state; --dir DIR chooses another, never one others can write",
            false => "the folder given with --dir",
        };
        format!(
            "collector: {binary}\n\
             \x20 deploy it in place of `{bin}`; it writes its profile into\n\
             \x20   {file}\n\
             \x20 ({folder})\n\
             \x20 when a process exits normally (returns from main or calls std::process::exit; a signal or an abort writes nothing).\n\
             \x20 %m: every process of this binary merges its counts into that one file as it exits (LLVM's online merging, under a file lock),\n\
             \x20 so a host keeps one profile per binary, never more than one profile's size, however often it runs.\n\
             \x20 LLVM_PROFILE_FILE=<dir>/{bin}-%4m.profraw at run time instead: a pool of 4 files, for many short processes exiting at once.\n\
             built with (a profile is valid only for a binary built with these same settings):\n\
             \x20 cargo profile: {profile}\n\
             \x20 features: {features}\n\
             \x20 target: {target}\n\
             \x20 rustflags: {rustflags}\n\
             {c}\
             then: gather {glob} from each host, and\n\
             \x20 cargo optimize profile merge -o merged.profdata host-a.profraw host-b.profraw …\n\
             \x20 cargo optimize --pgo-profile merged.profdata\n\
             \x20 (the pgo build adds what earlier stages kept, and changes to the source since: its row says how many of the profile's functions no longer match)\n",
            binary = self.binary.display(),
            bin = self.bin,
            file = file.display(),
            profile = s.profile,
            features = features(&s.features),
            target = s.target.as_deref().unwrap_or("the host"),
            rustflags = s.all_rustflags().join(" "),
            c = (s.c.as_ref())
                .map(|c| format!(
                    "  C/C++ (built by cc, counted with the Rust): {} {}\n",
                    c.cc.display(),
                    c.flags.join(" ")
                ))
                .unwrap_or_default(),
            glob = self.dir.join("default_*.profraw").display(),
        )
    }
}

/// `default`, `default + a, b`, `all`, `none + a`.
fn features(f: &crate::cargo::Features) -> String {
    let base = match (f.all_features, f.no_default_features) {
        (true, _) => "all",
        (false, true) => "no default",
        (false, false) => "default",
    };
    match f.features.is_empty() {
        true => base.to_string(),
        false => format!("{base} + {}", f.features.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_collector_goes_through_a_symlink_and_never_replaces_a_pipe_or_a_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let built = d.join("built");
        std::fs::write(&built, b"collector").unwrap();
        std::fs::write(d.join("real"), b"old").unwrap();
        crate::sys::symlink("real", d.join("link")).unwrap();
        copy_whole(&built, &d.join("link")).unwrap();
        let link = std::fs::symlink_metadata(d.join("link")).unwrap();
        assert!(link.file_type().is_symlink(), "the link was replaced");
        assert_eq!(std::fs::read(d.join("real")).unwrap(), b"collector");
        let fifo = d.join("p");
        crate::sys::testing::mkfifo(&fifo).unwrap();
        let e = copy_whole(&built, &fifo).unwrap_err();
        assert!(format!("{e:#}").contains("no process is reading"), "{e:#}");
        let kind = std::fs::symlink_metadata(&fifo).unwrap().file_type();
        assert!(crate::sys::testing::is_fifo(&kind), "the pipe was replaced");
        let e = copy_whole(&built, d).unwrap_err();
        assert!(format!("{e:#}").contains("it is a directory"), "{e:#}");
        assert!(d.is_dir());
    }

    #[test]
    fn the_folder_compiled_in_must_be_absolute() {
        let err = checked_dir(Path::new("pgo")).unwrap_err().to_string();
        assert!(err.contains("must be an absolute path"), "{err}");
        assert!(err.contains("fix: --dir /var/tmp/pgo"), "{err}");
        assert_eq!(
            checked_dir(Path::new("/srv/p")).unwrap(),
            PathBuf::from("/srv/p")
        );
    }

    #[test]
    fn the_default_folder_is_a_private_one_of_yours_never_tmp() {
        fn env<'a>(vars: &'a [(&str, &str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
            move |k| {
                vars.iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| OsString::from(v))
            }
        }
        let state = [("XDG_STATE_HOME", "/s"), ("HOME", "/home/u")];
        assert_eq!(
            default_dir("demo", &env(&state)).unwrap(),
            PathBuf::from("/s/cargo-optimize/demo-pgo")
        );
        let home = [("XDG_STATE_HOME", "rel"), ("HOME", "/home/u")];
        assert_eq!(
            default_dir("demo", &env(&home)).unwrap(),
            PathBuf::from("/home/u/.local/state/cargo-optimize/demo-pgo")
        );
        let err = default_dir("demo", &env(&[])).unwrap_err().to_string();
        assert!(err.contains("fix: --dir DIR"), "{err}");

        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a/b/demo-pgo");
        create_private(&dir).unwrap();
        let mode = crate::sys::mode(&std::fs::metadata(&dir).unwrap());
        assert_eq!(mode & 0o777, 0o700);
        create_private(&dir).unwrap();
    }

    #[test]
    fn a_folder_another_user_owns_or_can_write_into_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("p");
        let me = crate::sys::owner(&std::fs::metadata(tmp.path()).unwrap());
        assert!(check_private(&dir, me, "--dir").is_ok(), "a missing folder");
        std::fs::create_dir(&dir).unwrap();
        let chmod = |m: u32| crate::sys::set_mode(&dir, m);
        for ok in [0o700, 0o755] {
            chmod(ok).unwrap();
            assert!(check_private(&dir, me, "--dir").is_ok(), "{ok:o}");
        }
        for bad in [0o777, 0o770, 0o1770] {
            chmod(bad).unwrap();
            let err = check_private(&dir, me, "--dir x").unwrap_err().to_string();
            assert!(err.starts_with("--dir x: "), "{err}");
            assert!(
                err.contains("plant a symlink") && err.contains("fix: `chmod 700"),
                "{err}"
            );
        }
        chmod(0o1777).unwrap();
        assert_eq!(
            check_private(&dir, me, "--dir").is_ok(),
            protected_symlinks()
        );
        chmod(0o700).unwrap();
        let err = check_private(&dir, me.map(|u| u + 1), "the default")
            .unwrap_err()
            .to_string();
        assert!(err.contains("belongs to another user"), "{err}");
        assert!(err.contains("fix: remove it (`rm -r"), "{err}");
        let file = tmp.path().join("f");
        std::fs::write(&file, "").unwrap();
        let err = check_private(&file, me, "--dir").unwrap_err().to_string();
        assert!(err.contains("is not a folder"), "{err}");
    }

    #[test]
    fn features_are_described() {
        let mut f = crate::cargo::Features {
            features: vec![],
            all_features: false,
            no_default_features: false,
        };
        assert_eq!(features(&f), "default");
        f.features = vec!["simd".into(), "jit".into()];
        f.no_default_features = true;
        assert_eq!(features(&f), "no default + simd, jit");
    }
}
