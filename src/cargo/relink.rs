//! Builds that differ from another only in how the final binary is linked: a relink, not
//! a rebuild of every crate.
//!
//! A stage flag that only the final link reads ([`LINK_ONLY`]: BOLT's `-Wl,-q`) would, as
//! rustflags, change every crate's fingerprint, so cargo would compile every dependency
//! again (with fat LTO for profile `max`). Instead the build is
//! `cargo rustc --bin X … -- <link flags>` with the other flags as rustflags, and its
//! intermediate artifacts (`deps/`, fingerprints) are those of the same settings without
//! the link flags — the *base* — through cargo's `build.build-dir`: the base's target dir,
//! which lies beside this build's (target dirs are named by their settings' hash side by
//! side, `Context::build_dir`). The dependencies the base compiled are fresh, only the
//! package's own binary is compiled and linked again, and its binary is uplifted into this
//! build's own target dir, so the base's binary is never overwritten (and the base stays
//! fresh afterwards). cargo locks the build dir, so the two never run at once.
//!
//! A relink needs its base built: one whose base is not built yet (the base is building
//! beside it, started at the same time) compiles its crates in a build dir of its own, the
//! same `cargo rustc … -- <link flags>` command, instead of waiting on the base's lock for
//! the base's whole build and then linking alone (after it, the relink holds up whatever
//! waits for it; beside it, it is done when the base is).
//! Figures: docs/src/decisions.md, "BOLT's input is built beside the PGO build".
//!
//! `-C metadata` (hence symbol names) does not depend on rustflags nor on `cargo rustc`'s
//! extra arguments, so the relinked binary is the one a full build with the link flag in
//! `RUSTFLAGS` makes, byte for byte (cargo 1.95: checked on `lto-helps`); `apply`'s
//! printed command, which builds it that way, stays true.
//!
//! A harness build (a bench or test target) is built the ordinary way, flags and all.

use std::path::{Path, PathBuf};

use super::{BuildSettings, Project, EMIT_RELOCS_FLAG};

/// Stage rustflags that only the final link reads.
pub(crate) const LINK_ONLY: &[&str] = &[EMIT_RELOCS_FLAG];

impl BuildSettings {
    /// The build whose compiled crates this one links again: these settings without their
    /// link-only stage flags, when they have some and `project` builds a binary; `None`
    /// for an ordinary build.
    pub fn relink_base(&self, project: &Project) -> Option<BuildSettings> {
        let program = project.harness.is_none() && project.library.is_none();
        if !program || self.link_flags().is_empty() {
            return None;
        }
        let mut base = self.clone();
        base.stage_rustflags
            .retain(|f| !LINK_ONLY.contains(&f.as_str()));
        Some(base)
    }

    /// The stage flags only the final link reads, in order.
    pub(super) fn link_flags(&self) -> Vec<String> {
        (self.stage_rustflags.iter())
            .filter(|f| LINK_ONLY.contains(&f.as_str()))
            .cloned()
            .collect()
    }

    /// The rustflags cargo gives every crate of this build (`CARGO_ENCODED_RUSTFLAGS`):
    /// all of them, but a relink's link flags, which go to the final link alone.
    pub(super) fn compile_rustflags(&self, project: &Project) -> Vec<String> {
        match self.relink_base(project) {
            Some(base) => base.all_rustflags(),
            None => self.all_rustflags(),
        }
    }
}

/// The folder holding a build's intermediate artifacts (`deps/`): a relink's base target
/// dir, beside `target_dir`, when the base is built there; else `target_dir` itself.
pub(super) fn build_dir(project: &Project, settings: &BuildSettings, target_dir: &Path) -> PathBuf {
    built_base_dir(project, settings, target_dir).unwrap_or_else(|| target_dir.to_path_buf())
}

/// The target dir of the base a build of `settings` into `target_dir` relinks: beside
/// `target_dir`, named by the base's hash, when the base's binary is there (see the
/// module doc); `None` for an ordinary build or a base not built yet.
pub(super) fn built_base_dir(
    project: &Project,
    settings: &BuildSettings,
    target_dir: &Path,
) -> Option<PathBuf> {
    let base = settings.relink_base(project)?;
    let dir = target_dir.with_file_name(base.hash());
    let out = base.output_dir(&dir);
    let built = [project.bin.clone(), format!("{}.exe", project.bin)]
        .iter()
        .any(|name| out.join(name).is_file());
    built.then_some(dir)
}

/// A relink's cargo arguments after the common ones: the base's build dir (when it is
/// built), then the link flags for the final crate alone; nothing for an ordinary build.
pub(super) fn args(project: &Project, settings: &BuildSettings, target_dir: &Path) -> Vec<String> {
    if settings.relink_base(project).is_none() {
        return Vec::new();
    }
    let mut args = Vec::new();
    if let Some(dir) = built_base_dir(project, settings, target_dir) {
        let dir = crate::util::toml_string(&dir.display().to_string());
        args.extend(["--config".to_string(), format!("build.build-dir={dir}")]);
    }
    args.push("--".to_string());
    args.extend(settings.link_flags());
    args
}

/// `args` without the `--config build.build-dir=…` a relink of a built base has (see
/// [`args`]): what it builds, wherever its crates are compiled.
pub(super) fn without_build_dir(args: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(args.len());
    for a in args {
        if a.starts_with("build.build-dir=") && out.last().is_some_and(|l| l == "--config") {
            out.pop();
        } else {
            out.push(a);
        }
    }
    out
}

/// The `deps/` folder holding cargo's original of `binary` (built into `target_dir`): in
/// the build dir, at the same place below it.
pub(super) fn deps_of(
    project: &Project,
    settings: &BuildSettings,
    target_dir: &Path,
    binary: &Path,
) -> Option<PathBuf> {
    let profile_dir = binary.parent()?;
    let below = profile_dir
        .strip_prefix(target_dir)
        .unwrap_or(Path::new(""));
    match settings.relink_base(project) {
        Some(_) => Some(
            build_dir(project, settings, target_dir)
                .join(below)
                .join("deps"),
        ),
        None => Some(profile_dir.join("deps")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cargo::Features;

    fn settings(flags: &[&str]) -> BuildSettings {
        BuildSettings {
            profile: "max".into(),
            profile_overrides: Default::default(),
            user_rustflags: vec!["-Cuser".into()],
            stage_rustflags: flags.iter().map(|f| f.to_string()).collect(),
            target: Some("x86_64-unknown-linux-gnu".into()),
            features: Features::default(),
            allocator: None,
            c: None,
            relocs_twin: false,
        }
    }

    #[test]
    fn a_link_only_flag_makes_a_relink_of_the_build_without_it() {
        let project = Project::for_tests("demo", "0.1.0");
        let pgo = settings(&["-Cprofile-use=/p.profdata"]);
        let input = pgo.with_rustflags([EMIT_RELOCS_FLAG]);
        assert_eq!(pgo.relink_base(&project), None);
        assert_eq!(input.relink_base(&project), Some(pgo.clone()));
        // Every crate sees the base's flags; the report still lists -Wl,-q.
        assert_eq!(input.compile_rustflags(&project), pgo.all_rustflags());
        assert!(input
            .all_rustflags()
            .contains(&EMIT_RELOCS_FLAG.to_string()));

        let tmp = tempfile::tempdir().unwrap();
        let build = tmp.path();
        built_binary(&pgo, &build.join(pgo.hash()));
        let target_dir = build.join(input.hash());
        let args = input.cargo_args(&project, &target_dir);
        assert_eq!(args[0], "rustc");
        assert!(args.windows(2).any(|w| w == ["--bin", "demo"]), "{args:?}");
        let at = args.iter().position(|a| a == "--").expect("--");
        assert_eq!(args[at + 1..], [EMIT_RELOCS_FLAG.to_string()]);
        let dir = format!("build.build-dir='{}'", build.join(pgo.hash()).display());
        assert_eq!(args[at - 2..at], ["--config".to_string(), dir]);
        // The ordinary build is unchanged.
        let plain = pgo.cargo_args(&project, &build.join(pgo.hash()));
        assert_eq!(plain[0], "build");
        assert!(!plain.iter().any(|a| a == "--" || a.contains("build-dir")));
    }

    #[test]
    fn a_harness_build_keeps_its_link_flag_among_the_rustflags() {
        let mut project = Project::for_tests("demo", "0.1.0");
        project.harness = Some(crate::spec::Harness {
            kind: crate::spec::HarnessKind::Bench,
            target: Some("b".into()),
        });
        let input = settings(&[EMIT_RELOCS_FLAG]);
        assert_eq!(input.relink_base(&project), None);
        assert_eq!(input.compile_rustflags(&project), input.all_rustflags());
        let args = input.cargo_args(&project, Path::new("/t/x"));
        assert_eq!(args[0], "bench");
    }

    /// A binary where cargo would have built `settings`' into `target_dir`.
    fn built_binary(settings: &BuildSettings, target_dir: &Path) {
        let out = settings.output_dir(target_dir);
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(out.join("demo"), b"\x7fELF").unwrap();
    }

    #[test]
    fn a_link_only_flag_whose_base_is_not_built_builds_its_crates_in_its_own_dir() {
        let project = Project::for_tests("demo", "0.1.0");
        let base = settings(&[]);
        let input = base.with_rustflags([EMIT_RELOCS_FLAG]);
        let tmp = tempfile::tempdir().unwrap();
        let target_dir = tmp.path().join(input.hash());
        // The same command, the link flag for the final crate alone, but no base build dir:
        // the base's lock would hold it for the base's whole build.
        let args = input.cargo_args(&project, &target_dir);
        assert_eq!(args[0], "rustc");
        assert!(!args.iter().any(|a| a.contains("build-dir")), "{args:?}");
        let at = args.iter().position(|a| a == "--").expect("--");
        assert_eq!(args[at + 1..], [EMIT_RELOCS_FLAG.to_string()]);
        assert_eq!(input.compile_rustflags(&project), base.all_rustflags());
        let binary = target_dir.join("x86_64-unknown-linux-gnu/max/demo");
        assert_eq!(
            deps_of(&project, &input, &target_dir, &binary),
            Some(target_dir.join("x86_64-unknown-linux-gnu/max/deps"))
        );
        // Once the base is built, the same build is a relink of it: the same build for the
        // build cache's key.
        let before = input.cargo_args(&project, &target_dir);
        built_binary(&base, &tmp.path().join(base.hash()));
        let relinked = tmp.path().join(base.hash());
        assert_eq!(build_dir(&project, &input, &target_dir), relinked);
        let after = input.cargo_args(&project, &target_dir);
        assert_ne!(after, before);
        assert_eq!(without_build_dir(after), before);
    }

    #[test]
    fn a_relink_s_deps_are_in_its_base_s_target_dir() {
        let project = Project::for_tests("demo", "0.1.0");
        let base = settings(&[]);
        let input = base.with_rustflags([EMIT_RELOCS_FLAG]);
        let tmp = tempfile::tempdir().unwrap();
        let build = tmp.path();
        built_binary(&base, &build.join(base.hash()));
        let target_dir = build.join(input.hash());
        let binary = target_dir.join("x86_64-unknown-linux-gnu/max/demo");
        assert_eq!(
            deps_of(&project, &input, &target_dir, &binary),
            Some(
                build
                    .join(base.hash())
                    .join("x86_64-unknown-linux-gnu/max/deps")
            )
        );
        let own = build.join(base.hash());
        let binary = own.join("x86_64-unknown-linux-gnu/max/demo");
        assert_eq!(
            deps_of(&project, &base, &own, &binary),
            Some(own.join("x86_64-unknown-linux-gnu/max/deps"))
        );
    }
}
