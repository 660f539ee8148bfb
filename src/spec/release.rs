//! `[release]`: what `cargo optimize release` builds — targets × flavors (feature sets) × CPU
//! levels —, validated like the rest of the spec (file:line:col and a fix).
//!
//! Owns: the types ([`ReleaseSpec`], [`Flavor`]), their validation, and which workloads a
//! flavor trains and verifies on ([`Flavor::applies_to`]). `profile` goes through the same
//! validation as `[stages] profile` (`Validator::profile`). Must not: build or run anything
//! (the release command does).

use std::path::{Path, PathBuf};

use toml::Spanned;

use super::raw::{RawFlavor, RawRelease};
use super::validate::{did_you_mean, Validator};
use super::{clean_path, ProfileChoice, SpecError, Workload};
use crate::stages::{self, Changes, StageName};

/// What `cargo optimize release` builds. `Default` when the spec has no `[release]`.
#[derive(Debug, Clone, Default)]
pub(crate) struct ReleaseSpec {
    /// Target triples; empty = the host.
    pub targets: Vec<String>,
    /// Flavors in the order written; empty = one flavor from the command line's selection.
    pub flavors: Vec<Flavor>,
    /// CPU levels besides `portable`; `None` = not written.
    pub cpu: Option<Vec<String>>,
    /// Stages among Pgo and Bolt only, in the order they run; `None` = not written.
    pub stages: Option<Vec<StageName>>,
    /// `None` = not written.
    pub profile: Option<ProfileChoice>,
    /// Absolute (relative paths resolved against the spec's folder); `None` = not written.
    pub out_dir: Option<PathBuf>,
}

/// One feature set of a release (`[release.flavors.<name>]`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Flavor {
    pub name: String,
    pub features: Vec<String>,
    pub no_default_features: bool,
    /// false: this machine cannot run it (built without PGO, not verified).
    pub run: bool,
    /// Workload name patterns (`*` glob); empty = every workload.
    pub workloads: Vec<String>,
    /// The spec line of the flavor's table (for messages).
    pub line: usize,
}

impl Flavor {
    /// Whether the workload named `workload_name` trains and verifies this flavor: every
    /// workload when `workloads` is empty, else those matching one of its patterns (`*`
    /// matches any run of characters, everything else itself).
    pub(crate) fn applies_to(&self, workload_name: &str) -> bool {
        self.workloads.is_empty() || self.workloads.iter().any(|p| glob(p, workload_name))
    }
}

/// `"pgo" and "bolt"`: names quoted, the last two joined by "and".
fn quoted(names: &[&str]) -> String {
    let q: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    match q.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => q.concat(),
    }
}

/// At most this many workload names are listed in a fix.
const LISTED_NAMES: usize = 8;

/// `name` matches `pattern`, where `*` matches any run of characters (none included).
fn glob(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        // No `*`: the whole name.
        return rest.is_empty();
    };
    // Each middle part at its leftmost place leaves the most room for the ones after it.
    for part in middle {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    rest.ends_with(last)
}

/// The architectures (a triple's first part) of `rustc --print target-list`, by prefix:
/// `arm` covers armv7, arm64e…; `riscv` riscv64gc…; `thumb` thumbv7em…; `wasm` wasm32….
const ARCHES: &[&str] = &[
    "aarch64",
    "amdgcn",
    "arm",
    "avr",
    "bpf",
    "csky",
    "hexagon",
    "i386",
    "i586",
    "i686",
    "loongarch",
    "m68k",
    "mips",
    "msp430",
    "nvptx",
    "powerpc",
    "riscv",
    "s390x",
    "sparc",
    "thumb",
    "wasm",
    "x86_64",
    "xtensa",
];

/// Characters allowed in target triples and flavor names (both end up in file names).
fn file_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')
}

impl Validator<'_> {
    /// `[release]`, once the workloads (which flavors' `workloads` patterns name) are known.
    /// A `panic = "abort"` profile override needs `[stages] allow-panic-abort`, as in
    /// `[stages] profile`.
    pub(super) fn release(
        &self,
        raw: RawRelease,
        root: &Path,
        workloads: &[Workload],
        allow_panic_abort: bool,
    ) -> Result<ReleaseSpec, SpecError> {
        let mut spec = ReleaseSpec::default();
        for t in raw.targets.iter().flatten() {
            self.target(t)?;
        }
        self.no_duplicates(raw.targets.iter().flatten(), "target")?;
        spec.targets = strings(raw.targets.unwrap_or_default());
        if let Some(cpu) = raw.cpu {
            for c in &cpu {
                self.release_cpu(c)?;
            }
            self.no_duplicates(&cpu, "cpu")?;
            spec.cpu = Some(strings(cpu));
        }
        if let Some(stages) = raw.stages {
            spec.stages = Some(self.release_stages(&stages)?);
        }
        if let Some(profile) = raw.profile {
            spec.profile = Some(self.profile(profile, allow_panic_abort)?);
        }
        if let Some(dir) = raw.out_dir {
            if dir.get_ref().trim().is_empty() {
                return Err(self.at(
                    &dir,
                    "`out-dir` is empty",
                    Some("write a folder such as out-dir = \"dist\" (relative to the spec's folder), or remove `out-dir`".into()),
                ));
            }
            spec.out_dir = Some(clean_path(&root.join(dir.get_ref())));
        }
        let mut flavors: Vec<(Spanned<String>, RawFlavor)> =
            raw.flavors.unwrap_or_default().into_iter().collect();
        flavors.sort_by_key(|(name, _)| name.span().start);
        for (name, flavor) in flavors {
            spec.flavors.push(self.flavor(name, flavor, workloads)?);
        }
        Ok(spec)
    }

    /// A target triple: at least two `-`-separated parts of [A-Za-z0-9_.].
    fn target(&self, t: &Spanned<String>) -> Result<(), SpecError> {
        let triple = t.get_ref();
        let fix = || {
            Some("write a target triple such as \"x86_64-unknown-linux-gnu\" (`rustc --print target-list` lists them), or leave `targets` empty for the host".into())
        };
        if triple.trim().is_empty() {
            return Err(self.at(t, "empty target triple", fix()));
        }
        if let Some(c) = triple.chars().find(|c| !file_name_char(*c)) {
            return Err(self.at(
                t,
                format!(
                    "target \"{}\" contains {c:?}: a triple has only letters, digits, '_', '.' and '-'",
                    triple.escape_debug()
                ),
                fix(),
            ));
        }
        if triple.split('-').count() < 2 || triple.split('-').any(str::is_empty) {
            return Err(self.at(
                t,
                format!("\"{triple}\" is not a target triple: it needs at least two parts separated by '-'"),
                fix(),
            ));
        }
        let arch = triple.split('-').next().unwrap_or_default();
        // A custom target is a JSON file cargo reads (`my-target.json`).
        if !triple.ends_with(".json") && !ARCHES.iter().any(|a| arch.starts_with(a)) {
            return Err(self.at(
                t,
                format!("\"{triple}\" is not a target triple: `{arch}` is no architecture rustc builds for (a triple is arch-vendor-os[-env], e.g. x86_64-unknown-linux-gnu)"),
                fix(),
            ));
        }
        Ok(())
    }

    /// A CPU level of `[release] cpu`: any name rustc may know, but not `portable` (always
    /// built) or `native` (this machine's, not a level to ship).
    fn release_cpu(&self, c: &Spanned<String>) -> Result<(), SpecError> {
        match c.get_ref().as_str() {
            name if name.trim().is_empty() => Err(self.at(
                c,
                "empty cpu name",
                Some("write a CPU level such as \"x86-64-v3\"".into()),
            )),
            "portable" => Err(self.at(
                c,
                "`portable` cannot be listed in [release] cpu",
                Some("portable is always built; list only the levels to build besides it".into()),
            )),
            "native" => Err(self.at(
                c,
                "a release names CPU levels, not this machine's (`native`)",
                Some("use an x86-64 level such as x86-64-v3, or a CPU name from `rustc --print target-cpus`".into()),
            )),
            _ => Ok(()),
        }
    }

    /// `[release] stages`: those a release carries (`stages::released`) only, each once;
    /// returned in the order they run.
    fn release_stages(&self, list: &[Spanned<String>]) -> Result<Vec<StageName>, SpecError> {
        let released = stages::released();
        let names: Vec<&str> = released.iter().map(|s| s.as_str()).collect();
        let only = format!("only {} apply to a release", quoted(&names));
        let mut out: Vec<StageName> = Vec::new();
        for item in list {
            let name = item.get_ref().as_str();
            let stage = match StageName::tried(name) {
                Some(s) if s.row().release => s,
                Some(s) if s.row().changes == Changes::ProfileSettings => {
                    return Err(self.at(
                        item,
                        format!("stage \"{name}\" cannot be listed in [release] stages: {only}"),
                        Some("set `profile` in [release] instead".into()),
                    ))
                }
                Some(s) if s.row().changes == Changes::TargetCpu => {
                    return Err(self.at(
                        item,
                        format!("stage \"{name}\" cannot be listed in [release] stages: {only}"),
                        Some("list CPU levels in `cpu` instead".into()),
                    ))
                }
                _ => {
                    return Err(self.at(
                        item,
                        format!("unknown release stage \"{name}\": {only}"),
                        Some(super::validate::choices_fix(name, &names, "release stages")),
                    ))
                }
            };
            if out.contains(&stage) {
                return Err(self.at(
                    item,
                    format!("stage \"{stage}\" is listed twice"),
                    Some("remove the second one".into()),
                ));
            }
            out.push(stage);
        }
        out.sort();
        Ok(out)
    }

    fn flavor(
        &self,
        name: Spanned<String>,
        raw: RawFlavor,
        workloads: &[Workload],
    ) -> Result<Flavor, SpecError> {
        let line = self.line(name.span().start);
        let n = name.get_ref();
        let fix = || {
            Some("name flavors with letters, digits, '_', '.' and '-' (the name is part of the artifacts' file names), e.g. [release.flavors.cuda]".into())
        };
        if n.is_empty() {
            return Err(self.at(&name, "empty flavor name", fix()));
        }
        if let Some(c) = n.chars().find(|c| !file_name_char(*c)) {
            return Err(self.at(
                &name,
                format!("flavor name \"{}\" contains {c:?}", n.escape_debug()),
                fix(),
            ));
        }
        if n.chars().all(|c| c == '.') {
            return Err(self.at(
                &name,
                format!("flavor name \"{n}\" cannot be a file name"),
                fix(),
            ));
        }
        for f in raw.features.iter().flatten() {
            self.feature(f)?;
        }
        self.no_duplicates(raw.features.iter().flatten(), "feature")?;
        let patterns = match &raw.workloads {
            Some(list) => {
                if list.get_ref().is_empty() {
                    return Err(self.at(
                        list,
                        "`workloads` is an empty list",
                        Some("remove `workloads` to train and verify on every workload, or name some".into()),
                    ));
                }
                for p in list.get_ref() {
                    self.workload_pattern(p, workloads)?;
                }
                self.no_duplicates(list.get_ref(), "workload pattern")?;
                list.get_ref().iter().map(|p| p.get_ref().clone()).collect()
            }
            None => Vec::new(),
        };
        Ok(Flavor {
            name: name.into_inner(),
            features: strings(raw.features.unwrap_or_default()),
            no_default_features: raw.no_default_features.unwrap_or(false),
            run: raw.run.unwrap_or(true),
            workloads: patterns,
            line,
        })
    }

    /// A cargo feature (`name` or `dep/feature`): one per string.
    fn feature(&self, f: &Spanned<String>) -> Result<(), SpecError> {
        let name = f.get_ref();
        if name.trim().is_empty() {
            return Err(self.at(
                f,
                "empty feature name",
                Some("write a feature of the package, or `dep/feature`".into()),
            ));
        }
        if let Some(c) = name.chars().find(|c| c.is_whitespace() || *c == ',') {
            let split: Vec<String> = name
                .split(|c: char| c.is_whitespace() || c == ',')
                .filter(|s| !s.is_empty())
                .map(|s| toml::Value::String(s.to_owned()).to_string())
                .collect();
            return Err(self.at(
                f,
                format!("feature \"{}\" contains {c:?}", name.escape_debug()),
                Some(format!(
                    "one feature per string: features = [{}]",
                    split.join(", ")
                )),
            ));
        }
        Ok(())
    }

    /// A flavor's `workloads` entry must select at least one workload of the spec.
    fn workload_pattern(
        &self,
        p: &Spanned<String>,
        workloads: &[Workload],
    ) -> Result<(), SpecError> {
        let pattern = p.get_ref();
        let names: Vec<&str> = workloads.iter().map(|w| w.name.as_str()).collect();
        if pattern.is_empty() {
            return Err(self.at(
                p,
                "empty workload pattern",
                Some("write a workload name, or a pattern such as \"infer-*\" (`*` matches any characters)".into()),
            ));
        }
        if names.iter().any(|n| glob(pattern, n)) {
            return Ok(());
        }
        let listed = list_names(&names);
        if pattern.contains('*') {
            return Err(self.at(
                p,
                format!("workload pattern \"{pattern}\" matches no workload"),
                Some(format!(
                    "correct the pattern (`*` matches any characters); workloads: {listed}"
                )),
            ));
        }
        let expansions: Vec<&str> = names
            .iter()
            .copied()
            .filter(|n| n.starts_with(&format!("{pattern}[")))
            .collect();
        let fix = if let Some(first) = expansions.first() {
            format!("\"{pattern}\" is a matrix workload, expanded into workloads named like \"{first}\": write \"{pattern}[*\" for all of them, or one full name")
        } else if let Some(near) = did_you_mean(pattern, &names) {
            format!("did you mean \"{near}\"? workloads: {listed}")
        } else {
            format!("name a workload of this spec, or use `*` (such as \"{pattern}*\"); workloads: {listed}")
        };
        Err(self.at(p, format!("no workload is named \"{pattern}\""), Some(fix)))
    }

    /// Each string of `items` once.
    fn no_duplicates<'s>(
        &self,
        items: impl IntoIterator<Item = &'s Spanned<String>>,
        what: &str,
    ) -> Result<(), SpecError> {
        let mut seen: Vec<&str> = Vec::new();
        for item in items {
            if seen.contains(&item.get_ref().as_str()) {
                return Err(self.at(
                    item,
                    format!("{what} \"{}\" is listed twice", item.get_ref()),
                    Some("remove the second one".into()),
                ));
            }
            seen.push(item.get_ref());
        }
        Ok(())
    }
}

fn strings(items: Vec<Spanned<String>>) -> Vec<String> {
    items.into_iter().map(Spanned::into_inner).collect()
}

/// Workload names for a fix, quoted, the first [`LISTED_NAMES`] of them.
fn list_names(names: &[&str]) -> String {
    let mut listed: Vec<String> = names
        .iter()
        .take(LISTED_NAMES)
        .map(|n| format!("\"{n}\""))
        .collect();
    if names.len() > LISTED_NAMES {
        listed.push(format!("… ({} in all)", names.len()));
    }
    listed.join(", ")
}

#[cfg(test)]
mod tests {
    use super::super::fixture::{Fixture, ONE};
    use super::*;

    /// Workloads the flavors' patterns can name.
    const WORKLOADS: &str = "[[workload]]\nname = \"infer-small\"\n\n[[workload]]\nname = \"infer-large\"\n\n[[workload]]\nname = \"train\"\n";

    fn flavor(workloads: &[&str]) -> Flavor {
        Flavor {
            name: "f".into(),
            features: Vec::new(),
            no_default_features: false,
            run: true,
            workloads: workloads.iter().map(|w| w.to_string()).collect(),
            line: 1,
        }
    }

    #[test]
    fn a_full_table_is_read_in_the_order_written() {
        let f = Fixture::new();
        let spec = f.ok(&format!(
            r#"[release]
targets = ["x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu"]
cpu = ["x86-64-v3"]
stages = ["bolt", "pgo"]
profile = "max"
out-dir = "dist"

[release.flavors.cpu]
features = ["fast-math", "serde/std"]
no-default-features = true

[release.flavors.cuda]
features = ["cuda"]
run = false
workloads = ["infer-*", "train"]

[release.flavors.a-plain]

{WORKLOADS}"#
        ));
        let r = &spec.release;
        assert_eq!(
            r.targets,
            ["x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu"]
        );
        assert_eq!(r.cpu, Some(vec!["x86-64-v3".to_owned()]));
        assert_eq!(r.stages, Some(vec![StageName::Pgo, StageName::Bolt]));
        assert_eq!(r.profile, Some(ProfileChoice::Preset("max".into())));
        assert_eq!(r.out_dir, Some(f.root().join("dist")));
        assert_eq!(
            r.flavors,
            [
                Flavor {
                    name: "cpu".into(),
                    features: vec!["fast-math".into(), "serde/std".into()],
                    no_default_features: true,
                    run: true,
                    workloads: vec![],
                    line: 8,
                },
                Flavor {
                    name: "cuda".into(),
                    features: vec!["cuda".into()],
                    no_default_features: false,
                    run: false,
                    workloads: vec!["infer-*".into(), "train".into()],
                    line: 12,
                },
                Flavor {
                    name: "a-plain".into(),
                    features: vec![],
                    no_default_features: false,
                    run: true,
                    workloads: vec![],
                    line: 17,
                },
            ]
        );
        assert!(r.flavors[1].applies_to("infer-large") && !r.flavors[1].applies_to("other"));
    }

    #[test]
    fn other_forms_of_the_values() {
        let f = Fixture::new();
        // A profile table, empty lists, an absolute out-dir, inline flavor tables.
        let spec = f.ok(&format!(
            "[release]\ntargets = []\ncpu = []\nstages = []\nprofile = {{ lto = \"fat\", codegen-units = 1 }}\nout-dir = \"/tmp/rel/./x\"\nflavors = {{ b = {{}}, a = {{ features = [] }} }}\n{ONE}"
        ));
        let r = &spec.release;
        assert!(r.targets.is_empty());
        assert_eq!(r.cpu, Some(vec![]));
        assert_eq!(r.stages, Some(vec![]));
        let Some(ProfileChoice::Overrides(o)) = &r.profile else {
            panic!("expected overrides, got {:?}", r.profile)
        };
        assert_eq!(o["lto"], toml::Value::String("fat".into()));
        assert_eq!(o["codegen-units"], toml::Value::Integer(1));
        assert_eq!(r.out_dir, Some(PathBuf::from("/tmp/rel/x")));
        let names: Vec<&str> = r.flavors.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["b", "a"]);
        assert_eq!(r.flavors[0].line, 7);
        // The profile table is `[stages] profile`'s: panic = "abort" needs the opt-in.
        let (line, col, _, fix) = f.err(&format!(
            "[release]\nprofile = {{ panic = \"abort\" }}\n{ONE}"
        ));
        assert_eq!((line, col), (2, 21));
        assert!(fix.contains("allow-panic-abort = true"), "{fix}");
        let spec = f.ok(&format!(
            "[stages]\nallow-panic-abort = true\n[release]\nprofile = {{ panic = \"abort\" }}\n{ONE}"
        ));
        assert!(matches!(
            spec.release.profile,
            Some(ProfileChoice::Overrides(_))
        ));
    }

    #[test]
    fn absent_or_empty_table_is_the_default() {
        let f = Fixture::new();
        for text in [ONE.to_owned(), format!("[release]\n{ONE}")] {
            let r = f.ok(&text).release;
            assert!(r.targets.is_empty() && r.flavors.is_empty());
            assert_eq!(r.cpu, None);
            assert_eq!(r.stages, None);
            assert_eq!(r.profile, None);
            assert_eq!(r.out_dir, None);
        }
    }

    #[test]
    fn unknown_keys_say_what_was_meant() {
        let f = Fixture::new();
        let (line, col, msg, fix) = f.err(&format!("[release]\ntarget = []\n{ONE}"));
        assert_eq!((line, col), (2, 1));
        assert_eq!(msg, "unknown key `target` in [release]");
        assert!(
            fix.starts_with("did you mean `targets`? valid keys in [release]: targets, cpu,"),
            "{fix}"
        );
        let (line, col, msg, fix) = f.err(&format!(
            "[release.flavors.a]\nno_default_features = true\n{ONE}"
        ));
        assert_eq!((line, col), (2, 1));
        assert_eq!(
            msg,
            "unknown key `no_default_features` in a [release.flavors.<name>] table"
        );
        assert!(
            fix.starts_with("did you mean `no-default-features`?"),
            "{fix}"
        );
        // A key of [release] written in a flavor says where it belongs.
        let (line, _, _, fix) = f.err(&format!("[release.flavors.a]\ncpu = []\n{ONE}"));
        assert_eq!(line, 2);
        assert!(
            fix.starts_with("`cpu` belongs in [stages] or in [release];"),
            "{fix}"
        );
        let (line, col, msg, fix) = f.err(&format!("[release]\nprofile = {{ lot = true }}\n{ONE}"));
        assert_eq!((line, col), (2, 13));
        assert_eq!(msg, "unknown key `lot` in a profile table");
        assert!(fix.starts_with("did you mean `lto`?"), "{fix}");
    }

    #[test]
    fn targets_are_triples_each_once() {
        let f = Fixture::new();
        let (line, col, msg, fix) = f.err(&format!(
            "[release]\ntargets = [\n  \"x86_64-unknown-linux-gnu\",\n  \"x86_64\",\n]\n{ONE}"
        ));
        assert_eq!((line, col), (4, 3));
        assert_eq!(
            msg,
            "\"x86_64\" is not a target triple: it needs at least two parts separated by '-'"
        );
        assert!(fix.contains("rustc --print target-list"), "{fix}");
        for bad in ["x86_64-", "-linux"] {
            let (line, _, msg, _) = f.err(&format!("[release]\ntargets = [\"{bad}\"]\n{ONE}"));
            assert_eq!(line, 2);
            assert!(
                msg.ends_with("at least two parts separated by '-'"),
                "{msg}"
            );
        }
        let (line, col, msg, _) = f.err(&format!(
            "[release]\ntargets = [\"x86_64 unknown-linux\"]\n{ONE}"
        ));
        assert_eq!((line, col), (2, 12));
        assert!(
            msg.starts_with("target \"x86_64 unknown-linux\" contains ' '"),
            "{msg}"
        );
        let (line, _, msg, _) = f.err(&format!("[release]\ntargets = [\"\"]\n{ONE}"));
        assert_eq!((line, msg.as_str()), (2, "empty target triple"));
        let (line, col, msg, fix) = f.err(&format!(
            "[release]\ntargets = [\"arm-b\", \"x86_64-d\", \"arm-b\"]\n{ONE}"
        ));
        assert_eq!((line, col), (2, 33));
        assert_eq!(msg, "target \"arm-b\" is listed twice");
        assert_eq!(fix, "remove the second one");
        f.ok(&format!(
            "[release]\ntargets = [\"thumbv7em-none-eabihf\", \"wasm32-wasip1\", \"x86_64-pc-windows-msvc\", \"arm64e-apple-darwin\", \"riscv64gc-unknown-linux-gnu\", \"i686-pc-windows-msvc\", \"thumbv8m.main-none-eabi\", \"powerpc64le-unknown-linux-gnu\", \"my-target.json\"]\n{ONE}"
        ));
    }

    #[test]
    fn cpu_levels_exclude_portable_and_native() {
        let f = Fixture::new();
        let (line, col, msg, fix) = f.err(&format!(
            "[release]\ncpu = [\"x86-64-v3\", \"portable\"]\n{ONE}"
        ));
        assert_eq!((line, col), (2, 21));
        assert_eq!(msg, "`portable` cannot be listed in [release] cpu");
        assert_eq!(
            fix,
            "portable is always built; list only the levels to build besides it"
        );
        let (line, col, msg, fix) = f.err(&format!("[release]\n\ncpu = [\"native\"]\n{ONE}"));
        assert_eq!((line, col), (3, 8));
        assert_eq!(
            msg,
            "a release names CPU levels, not this machine's (`native`)"
        );
        assert_eq!(
            fix,
            "use an x86-64 level such as x86-64-v3, or a CPU name from `rustc --print target-cpus`"
        );
        let (line, _, msg, _) = f.err(&format!(
            "[release]\ncpu = [\"x86-64-v3\", \"x86-64-v3\"]\n{ONE}"
        ));
        assert_eq!(
            (line, msg.as_str()),
            (2, "cpu \"x86-64-v3\" is listed twice")
        );
        let (line, _, msg, _) = f.err(&format!("[release]\ncpu = [\" \"]\n{ONE}"));
        assert_eq!((line, msg.as_str()), (2, "empty cpu name"));
        // Other names are rustc's to check.
        let spec = f.ok(&format!(
            "[release]\ncpu = [\"x86-64-v4\", \"znver4\", \"neoverse-v1\"]\n{ONE}"
        ));
        assert_eq!(spec.release.cpu.map(|c| c.len()), Some(3));
    }

    #[test]
    fn stages_are_pgo_and_bolt_only() {
        let f = Fixture::new();
        let (line, col, msg, fix) =
            f.err(&format!("[release]\nstages = [\"pgo\", \"blot\"]\n{ONE}"));
        assert_eq!((line, col), (2, 18));
        assert_eq!(
            msg,
            "unknown release stage \"blot\": only \"pgo\" and \"bolt\" apply to a release"
        );
        assert_eq!(
            fix,
            "did you mean \"bolt\"? release stages: \"pgo\", \"bolt\""
        );
        let (line, _, msg, fix) = f.err(&format!("[release]\nstages = [\"baseline\"]\n{ONE}"));
        assert_eq!(line, 2);
        assert!(
            msg.starts_with("unknown release stage \"baseline\""),
            "{msg}"
        );
        assert_eq!(fix, "release stages: \"pgo\", \"bolt\"");
        let (line, col, msg, fix) = f.err(&format!("[release]\nstages = [\"profile\"]\n{ONE}"));
        assert_eq!((line, col), (2, 11));
        assert!(
            msg.starts_with("stage \"profile\" cannot be listed in [release] stages"),
            "{msg}"
        );
        assert_eq!(fix, "set `profile` in [release] instead");
        let (line, _, msg, fix) = f.err(&format!("[release]\nstages = [\"cpu\", \"pgo\"]\n{ONE}"));
        assert_eq!(line, 2);
        assert!(msg.starts_with("stage \"cpu\" cannot be listed"), "{msg}");
        assert_eq!(fix, "list CPU levels in `cpu` instead");
        let (line, col, msg, fix) =
            f.err(&format!("[release]\nstages = [\"pgo\", \"pgo\"]\n{ONE}"));
        assert_eq!((line, col), (2, 18));
        assert_eq!(msg, "stage \"pgo\" is listed twice");
        assert_eq!(fix, "remove the second one");
    }

    #[test]
    fn profile_is_validated_as_in_stages() {
        let f = Fixture::new();
        let (line, col, msg, fix) = f.err(&format!("[release]\nprofile = \"fast\"\n{ONE}"));
        assert_eq!((line, col), (2, 11));
        assert_eq!(msg, "unknown profile preset \"fast\"");
        assert!(fix.contains("\"max\", \"balanced\", \"size\""), "{fix}");
        let (line, col, msg, fix) =
            f.err(&format!("[release]\nprofile = {{ opt-level = 4 }}\n{ONE}"));
        assert_eq!((line, col), (2, 25));
        assert_eq!(msg, "invalid profile value opt-level = 4");
        assert!(fix.starts_with("opt-level takes"), "{fix}");
    }

    #[test]
    fn out_dir_is_not_empty() {
        let f = Fixture::new();
        let (line, col, msg, fix) = f.err(&format!("[release]\nout-dir = \"\"\n{ONE}"));
        assert_eq!((line, col), (2, 11));
        assert_eq!(msg, "`out-dir` is empty");
        assert!(fix.contains("out-dir = \"dist\""), "{fix}");
    }

    #[test]
    fn flavor_names_are_file_names() {
        let f = Fixture::new();
        let (line, col, msg, fix) = f.err(&format!("[release.flavors.\"with space\"]\n{ONE}"));
        assert_eq!((line, col), (1, 18));
        assert_eq!(msg, "flavor name \"with space\" contains ' '");
        assert!(fix.contains("letters, digits, '_', '.' and '-'"), "{fix}");
        let (line, _, msg, _) = f.err(&format!("[release]\nflavors = {{ \"a/b\" = {{}} }}\n{ONE}"));
        assert_eq!(
            (line, msg.as_str()),
            (2, "flavor name \"a/b\" contains '/'")
        );
        let (line, _, msg, _) = f.err(&format!("[release.flavors.\"\"]\n{ONE}"));
        assert_eq!((line, msg.as_str()), (1, "empty flavor name"));
        let (line, _, msg, _) = f.err(&format!("[release.flavors.\"..\"]\n{ONE}"));
        assert_eq!(
            (line, msg.as_str()),
            (1, "flavor name \"..\" cannot be a file name")
        );
        let spec = f.ok(&format!("[release.flavors.\"v1.2_gpu-X\"]\n{ONE}"));
        assert_eq!(spec.release.flavors[0].name, "v1.2_gpu-X");
    }

    #[test]
    fn features_are_one_per_string_each_once() {
        let f = Fixture::new();
        let (line, col, msg, fix) = f.err(&format!(
            "[release.flavors.a]\nfeatures = [\"simd\", \"fast-math, cuda\"]\n{ONE}"
        ));
        assert_eq!((line, col), (2, 21));
        assert_eq!(msg, "feature \"fast-math, cuda\" contains ','");
        assert_eq!(
            fix,
            "one feature per string: features = [\"fast-math\", \"cuda\"]"
        );
        let (line, _, msg, _) = f.err(&format!(
            "[release.flavors.a]\nfeatures = [\"fast math\"]\n{ONE}"
        ));
        assert_eq!(
            (line, msg.as_str()),
            (2, "feature \"fast math\" contains ' '")
        );
        let (line, _, msg, _) = f.err(&format!("[release.flavors.a]\nfeatures = [\"\"]\n{ONE}"));
        assert_eq!((line, msg.as_str()), (2, "empty feature name"));
        let (line, col, msg, _) = f.err(&format!(
            "[release.flavors.a]\nfeatures = [\"x\", \"dep/y\", \"x\"]\n{ONE}"
        ));
        assert_eq!((line, col), (2, 27));
        assert_eq!(msg, "feature \"x\" is listed twice");
    }

    #[test]
    fn workload_patterns_name_workloads_of_the_spec() {
        let f = Fixture::new();
        let (line, col, msg, fix) = f.err(&format!(
            "[release.flavors.a]\nworkloads = [\"infer-smal\"]\n{WORKLOADS}"
        ));
        assert_eq!((line, col), (2, 14));
        assert_eq!(msg, "no workload is named \"infer-smal\"");
        assert_eq!(
            fix,
            "did you mean \"infer-small\"? workloads: \"infer-small\", \"infer-large\", \"train\""
        );
        let (line, _, msg, fix) = f.err(&format!(
            "[release.flavors.a]\nworkloads = [\"zzz\"]\n{WORKLOADS}"
        ));
        assert_eq!((line, msg.as_str()), (2, "no workload is named \"zzz\""));
        assert!(
            fix.starts_with("name a workload of this spec, or use `*`"),
            "{fix}"
        );
        let (line, col, msg, fix) = f.err(&format!(
            "[release.flavors.a]\nworkloads = [\"train\", \"eval-*\"]\n{WORKLOADS}"
        ));
        assert_eq!((line, col), (2, 23));
        assert_eq!(msg, "workload pattern \"eval-*\" matches no workload");
        assert!(
            fix.ends_with("workloads: \"infer-small\", \"infer-large\", \"train\""),
            "{fix}"
        );
        let (line, _, msg, _) = f.err(&format!(
            "[release.flavors.a]\nworkloads = [\"\"]\n{WORKLOADS}"
        ));
        assert_eq!((line, msg.as_str()), (2, "empty workload pattern"));
        let (line, col, msg, fix) =
            f.err(&format!("[release.flavors.a]\nworkloads = []\n{WORKLOADS}"));
        assert_eq!((line, col), (2, 13));
        assert_eq!(msg, "`workloads` is an empty list");
        assert!(fix.starts_with("remove `workloads`"), "{fix}");
        let (line, _, msg, _) = f.err(&format!(
            "[release.flavors.a]\nworkloads = [\"train\", \"train\"]\n{WORKLOADS}"
        ));
        assert_eq!(
            (line, msg.as_str()),
            (2, "workload pattern \"train\" is listed twice")
        );
        // A matrix workload's base name is not a workload name; the fix says how to match it.
        let (_, _, msg, fix) = f.err(
            "[release.flavors.a]\nworkloads = [\"m\"]\n[[workload]]\nname = \"m\"\nargs = [\"{n}\"]\nmatrix = { n = [\"1\", \"2\"] }\n",
        );
        assert_eq!(msg, "no workload is named \"m\"");
        assert!(
            fix.contains("\"m[n=1]\"") && fix.contains("\"m[*\""),
            "{fix}"
        );
        f.ok(
            "[release.flavors.a]\nworkloads = [\"m[*\", \"m[n=2]\"]\n[[workload]]\nname = \"m\"\nargs = [\"{n}\"]\nmatrix = { n = [\"1\", \"2\"] }\n",
        );
    }

    #[test]
    fn long_workload_lists_are_cut() {
        let names: Vec<String> = (0..10).map(|i| format!("w{i}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let listed = list_names(&names);
        assert!(listed.starts_with("\"w0\", \"w1\","), "{listed}");
        assert!(listed.ends_with("\"w7\", … (10 in all)"), "{listed}");
    }

    #[test]
    fn applies_to_globs_with_star_only() {
        assert!(flavor(&[]).applies_to("anything"));
        let f = flavor(&["infer-*"]);
        assert!(f.applies_to("infer-small") && f.applies_to("infer-"));
        assert!(!f.applies_to("infer") && !f.applies_to("train-infer-x"));
        let f = flavor(&["exact"]);
        assert!(f.applies_to("exact") && !f.applies_to("exact2") && !f.applies_to("xexact"));
        let f = flavor(&["*"]);
        assert!(f.applies_to("") && f.applies_to("x"));
        let f = flavor(&["*-large", "parse[*"]);
        assert!(f.applies_to("infer-large") && f.applies_to("parse[size=10]"));
        assert!(!f.applies_to("infer-larger") && !f.applies_to("parse"));
        let f = flavor(&["a*b*c"]);
        assert!(f.applies_to("abc") && f.applies_to("a-b-b-c") && f.applies_to("abcbc"));
        assert!(!f.applies_to("acb") && !f.applies_to("ab"));
        // `*` must not let the prefix and suffix overlap.
        let f = flavor(&["ab*ba"]);
        assert!(!f.applies_to("aba") && f.applies_to("abba"));
        // Only `*` is special.
        let f = flavor(&["w?"]);
        assert!(f.applies_to("w?") && !f.applies_to("w1"));
        let f = flavor(&["x**y"]);
        assert!(f.applies_to("xy") && f.applies_to("x-y"));
    }
}
