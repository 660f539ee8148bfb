//! `cargo optimize profile collect`: the instrumented binary to deploy. It is the PGO
//! stage's instrumented build of the project's settings (the plan's baseline: its cargo
//! profile, features, your rustflags; the host target named, as the stage names it), built
//! through a `Context` by `stage::pgo::instrument_into` with `-Cprofile-generate=<dir>`,
//! the folder the deployed binary writes into. rustc names the file `default_%m.profraw`
//! there: `%m` makes every process of the same binary merge its counts into one file as it
//! exits, so a host keeps one profile per binary, however often it runs.

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::cargo::BuildSettings;
use crate::context::{DirLock, RunDir};
use crate::pipeline::{self, Plan};

/// The collector built, and what the operator needs to know.
#[derive(Debug)]
pub(crate) struct Collector {
    pub(crate) bin: String,
    /// The copy to deploy.
    pub(crate) binary: PathBuf,
    /// The folder compiled in.
    pub(crate) dir: PathBuf,
    /// The instrumented build's settings, the profile flag included.
    pub(crate) settings: BuildSettings,
}

/// Build the collector of `plan`'s project, writing into `dir` (default `/tmp/<bin>-pgo`),
/// and copy it to `output` (default `target/optimize/collect/<bin>-instrumented`).
pub(crate) fn build(
    plan: &Plan,
    output: Option<&Path>,
    dir: Option<&Path>,
) -> anyhow::Result<Collector> {
    let bin = plan.project.bin.clone();
    let safe = crate::util::file_safe(&bin, "-_.");
    let dir = match dir {
        Some(d) => checked_dir(d)?,
        None => PathBuf::from(format!("/tmp/{safe}-pgo")),
    };
    let _lock = DirLock::for_run(&plan.optimize_dir)?;
    // The build's steps need a run folder; the collector's own is stable (no run record).
    let run = RunDir {
        id: "collect".into(),
        root: plan.optimize_dir.join("collect"),
    };
    std::fs::create_dir_all(&run.root)
        .with_context(|| format!("cannot create {}", run.root.display()))?;
    let ctx = pipeline::context(plan, &plan.spec, &run);
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

/// Copy `from` to `to` through a temporary file renamed into place (the mode kept).
fn copy_whole(from: &Path, to: &Path) -> anyhow::Result<()> {
    let parent = to.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent)
        .with_context(|| format!("cannot create {}", parent.display()))?;
    let tmp = parent.join(format!(".collector-{}.tmp", std::process::id()));
    let copied = std::fs::copy(from, &tmp).and_then(|_| std::fs::rename(&tmp, to));
    if let Err(e) = copied {
        let _ = std::fs::remove_file(&tmp);
        return Err(e).with_context(|| format!("cannot write the collector to {}", to.display()));
    }
    Ok(())
}

impl Collector {
    /// Where it writes, the settings it was built with, and what to do next.
    pub(crate) fn describe(&self) -> String {
        let s = &self.settings;
        let file = self.dir.join("default_%m.profraw");
        format!(
            "collector: {binary}\n\
             \x20 deploy it in place of `{bin}`; it writes its profile into\n\
             \x20   {file}\n\
             \x20 when a process exits normally (returns from main or calls std::process::exit; a signal or an abort writes nothing).\n\
             \x20 %m: every process of this binary merges its counts into that one file as it exits (LLVM's online merging, under a file lock),\n\
             \x20 so a host keeps one profile per binary, never more than one profile's size, however often it runs.\n\
             \x20 LLVM_PROFILE_FILE=<dir>/{bin}-%4m.profraw at run time instead: a pool of 4 files, for many short processes exiting at once.\n\
             built with (a profile is valid only for a binary built with these same settings):\n\
             \x20 cargo profile: {profile}\n\
             \x20 features: {features}\n\
             \x20 target: {target}\n\
             \x20 rustflags: {rustflags}\n\
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
