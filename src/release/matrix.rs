//! What a release builds: `[release]` and the command line's filters, with the defaults
//! taken from the last run (its kept stages, profile overrides and CPU level), resolved
//! into the artifacts — one per target × flavor × CPU level — and the groups they are
//! verified in (one portable baseline per target × flavor).
//!
//! Must not: build or run anything but `rustc --print` (the jobs do).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::bail;

use crate::cargo::cc::CBuild;
use crate::cargo::{BuildSettings, Features, Project};
use crate::cli::ReleaseArgs;
use crate::report::{self, Status};
use crate::spec::{Flavor, ReleaseSpec};
use crate::stages::{self, changing, Changes, StageName};

/// The CPU level every release has: no `-Ctarget-cpu`, runs on any machine of the target.
pub(crate) const PORTABLE: &str = "portable";

/// What the last run of `cargo optimize` kept, for the defaults.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct LastRun {
    pub(crate) id: String,
    pub(crate) stages: Vec<StageName>,
    pub(crate) overrides: BTreeMap<String, String>,
    pub(crate) cpu: Option<String>,
    /// The global allocator its winner was built with.
    pub(crate) allocator: Option<String>,
    /// The C compiler (and flags) its winner's C and C++ were built with.
    pub(crate) c: Option<crate::cargo::cc::CBuild>,
}

impl LastRun {
    /// The newest run's report under `optimize_dir`, when there is one that can be read.
    pub(crate) fn read(optimize_dir: &Path) -> Option<LastRun> {
        let path = report::locate(optimize_dir, None).ok()?;
        let r = report::load(&path).ok()?;
        let fin = r.final_.as_ref()?;
        let kept = |name: &str| {
            r.stages
                .iter()
                .any(|s| s.name == name && s.status == Status::Kept)
        };
        let stages = (stages::released().into_iter())
            .filter(|s| kept(s.as_str()))
            .collect();
        let settings = fin.settings.as_ref();
        Some(LastRun {
            id: r.run_id.clone(),
            stages,
            overrides: settings
                .map(|s| s.profile_overrides.clone())
                .unwrap_or_default(),
            cpu: settings.and_then(|s| s.target_cpu()),
            allocator: settings.and_then(|s| s.allocator.clone()),
            c: settings.and_then(|s| s.c.clone()),
        })
    }
}

/// A target of the matrix, or why it is left out.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Target {
    pub(crate) triple: String,
    /// Why it cannot be built here, and the fix.
    pub(crate) skipped: Option<(String, String)>,
}

/// The release, resolved.
#[derive(Debug, Clone)]
pub(crate) struct Matrix {
    pub(crate) targets: Vec<Target>,
    pub(crate) flavors: Vec<Flavor>,
    /// `portable` first (unless `--no-portable`), then the levels.
    pub(crate) cpus: Vec<String>,
    /// Among pgo and bolt, in that order.
    pub(crate) stages: Vec<StageName>,
    /// Profile key → TOML literal.
    pub(crate) overrides: BTreeMap<String, String>,
    /// The global allocator every artifact is built with: the last run's kept one.
    pub(crate) allocator: Option<String>,
    /// The last run's C compiler for C and C++, given to the artifacts of its target (the
    /// host's; other targets keep `cc`'s default), and whether their PGO builds give the C
    /// the profile too (whole-program PGO was kept).
    pub(crate) c: Option<crate::cargo::cc::CBuild>,
    /// Where each choice came from, for the dry run and the manifest.
    pub(crate) origin: Vec<String>,
    /// The one flavor is the command line's selection (no `[release.flavors]`): its name
    /// is left out of file names.
    pub(crate) implicit_flavor: bool,
}

/// What the command line and the host add to `[release]`.
pub(crate) struct Inputs<'a> {
    pub(crate) spec: &'a ReleaseSpec,
    pub(crate) args: &'a ReleaseArgs,
    pub(crate) last: Option<LastRun>,
    pub(crate) host: &'a str,
    /// The features of the command line (the implicit flavor).
    pub(crate) selection: &'a Features,
    /// Whether a target's standard library is installed.
    pub(crate) installed: &'a dyn Fn(&str) -> bool,
    /// `[stages] allow-panic-abort`, for a profile preset.
    pub(crate) allow_panic_abort: bool,
}

impl Matrix {
    pub(crate) fn resolve(i: &Inputs) -> anyhow::Result<Matrix> {
        let mut origin = Vec::new();
        let targets = targets(i);
        let (flavors, implicit_flavor) = flavors(i)?;
        let stages = stages(i, &mut origin)?;
        let overrides = overrides(i, &mut origin);
        let cpus = cpus(i, &mut origin)?;
        let allocator = i.last.as_ref().and_then(|l| l.allocator.clone());
        if let (Some(a), Some(last)) = (&allocator, &i.last) {
            origin.push(format!(
                "global allocator: {a} (what the last run, {}, kept)",
                last.id
            ));
        }
        let c = i.last.as_ref().and_then(|l| l.c.clone());
        if let (Some(c), Some(last)) = (&c, &i.last) {
            let whole = c.flags.iter().any(|f| f.starts_with("-fprofile-use="));
            origin.push(format!(
                "C/C++ compiled by {} for {}{} (what the last run, {}, kept; other targets keep cc's default compiler)",
                c.cc.display(),
                c.target,
                if whole { ", trained and optimized with the Rust code (whole-program PGO)" } else { "" },
                last.id
            ));
        }
        Ok(Matrix {
            targets,
            flavors,
            cpus,
            stages,
            overrides,
            allocator,
            c,
            origin,
            implicit_flavor,
        })
    }

    /// The targets that can be built here.
    pub(crate) fn buildable(&self) -> impl Iterator<Item = &str> {
        self.targets
            .iter()
            .filter(|t| t.skipped.is_none())
            .map(|t| t.triple.as_str())
    }
}

fn targets(i: &Inputs) -> Vec<Target> {
    let list = match (&i.args.targets, i.spec.targets.is_empty()) {
        (Some(t), _) => t.clone(),
        (None, false) => i.spec.targets.clone(),
        (None, true) => vec![i.host.to_string()],
    };
    let mut seen = Vec::new();
    list.into_iter()
        .map(|t| t.trim().to_string())
        .filter(|t| {
            !t.is_empty() && !seen.contains(t) && {
                seen.push(t.clone());
                true
            }
        })
        .map(|triple| {
            let skipped = (!(i.installed)(&triple)).then(|| {
                (
                    format!("the standard library for {triple} is not installed"),
                    format!("rustup target add {triple}"),
                )
            });
            Target { triple, skipped }
        })
        .collect()
}

fn flavors(i: &Inputs) -> anyhow::Result<(Vec<Flavor>, bool)> {
    if i.spec.flavors.is_empty() {
        if let Some(names) = &i.args.flavors {
            bail!(
                "--flavors {}: optimize.toml has no [release.flavors]\n  fix: add e.g. [release.flavors.{}] features = [\"…\"] to optimize.toml, or leave --flavors out",
                names.join(","),
                names.first().map(String::as_str).unwrap_or("fast")
            );
        }
        let implicit = Flavor {
            name: "default".into(),
            features: i.selection.features.clone(),
            no_default_features: i.selection.no_default_features,
            run: true,
            workloads: Vec::new(),
            line: 0,
        };
        return Ok((vec![implicit], true));
    }
    let Some(names) = &i.args.flavors else {
        return Ok((i.spec.flavors.clone(), false));
    };
    let known: Vec<&str> = i.spec.flavors.iter().map(|f| f.name.as_str()).collect();
    let mut chosen = Vec::new();
    for n in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
        let Some(f) = i.spec.flavors.iter().find(|f| f.name == n) else {
            let near = strsim_nearest(n, &known)
                .map(|k| format!("did you mean `{k}`? "))
                .unwrap_or_default();
            bail!(
                "--flavors: no flavor `{n}` in [release.flavors]\n  fix: {near}the flavors are {}",
                known.join(", ")
            );
        };
        if !chosen.iter().any(|c: &Flavor| c.name == f.name) {
            chosen.push(f.clone());
        }
    }
    if chosen.is_empty() {
        bail!(
            "--flavors names no flavor\n  fix: give one of {}",
            known.join(", ")
        );
    }
    Ok((chosen, false))
}

fn strsim_nearest<'k>(name: &str, known: &[&'k str]) -> Option<&'k str> {
    known
        .iter()
        .map(|k| (strsim::jaro_winkler(name, k), *k))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| k)
}

fn stages(i: &Inputs, origin: &mut Vec<String>) -> anyhow::Result<Vec<StageName>> {
    if let Some(list) = &i.args.stages {
        let mut out = Vec::new();
        for s in list.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
            match s {
                "none" => {}
                other => match StageName::tried(other).filter(|s| s.row().release) {
                    Some(stage) => out.push(stage),
                    None => bail!(
                        "--stages: `{other}` is not a release stage\n  fix: give {}, or none (profile overrides are [release] profile; CPU levels are --cpu)",
                        names(&stages::released())
                    ),
                },
            }
        }
        out.sort();
        out.dedup();
        origin.push(format!("stages: {} (--stages)", names(&out)));
        return Ok(out);
    }
    if let Some(list) = &i.spec.stages {
        origin.push(format!("stages: {} ([release] stages)", names(list)));
        return Ok(list.clone());
    }
    match &i.last {
        Some(last) => {
            origin.push(format!(
                "stages: {} (what the last run, {}, kept)",
                names(&last.stages),
                last.id
            ));
            Ok(last.stages.clone())
        }
        None => {
            let pgo = changing(Changes::TrainingProfile);
            origin.push(format!("stages: {pgo} (no earlier run to take them from; `cargo optimize` measures which ones pay off)"));
            Ok(vec![pgo])
        }
    }
}

fn names(stages: &[StageName]) -> String {
    if stages.is_empty() {
        return "none".into();
    }
    stages
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn overrides(i: &Inputs, origin: &mut Vec<String>) -> BTreeMap<String, String> {
    let (map, from) = match (&i.spec.profile, &i.last) {
        (Some(choice), _) => (
            crate::stage::profile::overrides(choice, i.allow_panic_abort)
                .into_iter()
                .collect(),
            "[release] profile".to_string(),
        ),
        (None, Some(last)) => (last.overrides.clone(), format!("the last run, {}", last.id)),
        (None, None) => (BTreeMap::new(), "no earlier run".to_string()),
    };
    let shown = if map.is_empty() {
        "none".to_string()
    } else {
        map.iter()
            .map(|(k, v)| format!("{k} = {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    origin.push(format!("profile overrides: {shown} ({from})"));
    map
}

fn cpus(i: &Inputs, origin: &mut Vec<String>) -> anyhow::Result<Vec<String>> {
    let (levels, from): (Vec<String>, String) = match (&i.args.cpu, &i.spec.cpu, &i.last) {
        (Some(list), _, _) => (list.clone(), "--cpu".into()),
        (None, Some(list), _) => (list.clone(), "[release] cpu".into()),
        (None, None, Some(last)) => match last.cpu.as_deref() {
            Some("native") => {
                origin.push(format!("the last run, {}, chose target-cpu native (this machine's CPU), which a release does not ship; name a level in [release] cpu to build one", last.id));
                (Vec::new(), "the last run".into())
            }
            Some(level) => (
                vec![level.to_string()],
                format!("the last run, {}", last.id),
            ),
            None => (Vec::new(), format!("the last run, {}", last.id)),
        },
        (None, None, None) => (Vec::new(), "no earlier run".into()),
    };
    let mut cpus = vec![PORTABLE.to_string()];
    for l in levels.iter().map(|l| l.trim()).filter(|l| !l.is_empty()) {
        match l {
            "none" | PORTABLE => {}
            "native" => bail!(
                "{from}: `native` is this machine's CPU, not a level a release can name\n  fix: use an x86-64 level such as x86-64-v3, or a CPU name from `rustc --print target-cpus`"
            ),
            l if !cpus.iter().any(|c| c == l) => cpus.push(l.to_string()),
            _ => {}
        }
    }
    if i.args.no_portable {
        cpus.retain(|c| c != PORTABLE);
        if cpus.is_empty() {
            bail!("--no-portable leaves no artifact: {from} names no CPU level\n  fix: name a level with --cpu (e.g. --cpu x86-64-v3 --no-portable), or leave --no-portable out");
        }
    }
    origin.push(format!("CPU levels: {} ({from})", cpus.join(", ")));
    Ok(cpus)
}

/// One artifact of the matrix.
#[derive(Debug, Clone)]
pub(crate) struct Artifact {
    /// `<bin>-<version>-<target>[-<flavor>][-<cpu>]`: the file's name in the output folder.
    pub(crate) name: String,
    /// For progress lines: `<flavor>/<cpu>`, with the target first when there are several.
    pub(crate) label: String,
    pub(crate) target: String,
    pub(crate) flavor: usize,
    pub(crate) cpu: String,
    /// The group (target × flavor) whose portable baseline verifies it.
    pub(crate) group: usize,
    /// What it is built with before PGO's flags.
    pub(crate) settings: BuildSettings,
    /// Why this machine cannot run it (then it is built without PGO and not verified).
    pub(crate) cannot_run: Option<String>,
    /// The name of cargo's runner its workloads run through (another architecture's
    /// binary under `qemu-aarch64`): trained and verified there, never timed.
    pub(crate) runner: Option<String>,
    pub(crate) pgo: bool,
    pub(crate) bolt: bool,
    /// Its PGO build gives the C and C++ the profile too (whole-program PGO).
    pub(crate) c_profile: bool,
}

/// A target × flavor: its portable baseline (the user's profile, no stage flags) is
/// what its artifacts are verified against.
#[derive(Debug, Clone)]
pub(crate) struct Group {
    pub(crate) label: String,
    pub(crate) flavor: usize,
    pub(crate) baseline: BuildSettings,
    /// Some artifact of the group runs here (so the baseline is built and recorded).
    pub(crate) verified: bool,
}

/// What every artifact shares: the project, the base profile and each target's user
/// rustflags.
pub(crate) struct Base<'a> {
    pub(crate) project: &'a Project,
    pub(crate) profile: &'a str,
    pub(crate) user_rustflags: &'a dyn Fn(&str) -> anyhow::Result<Vec<String>>,
    /// Why this machine cannot run `target` built for a CPU level (`None`: portable).
    pub(crate) cannot_run: &'a dyn Fn(&str, Option<&str>) -> Option<String>,
}

impl Matrix {
    /// The allocator `triple`'s artifacts are built with: a target the allocator cannot be
    /// built for here (no C compiler for it: a cross target without its gcc) keeps the
    /// system allocator.
    fn allocator_for(&self, project: &Project, triple: &str) -> Option<String> {
        (self.allocator.as_deref())
            .and_then(crate::cargo::alloc::named)
            .filter(|a| crate::cargo::alloc::refusal(project, a, triple).is_none())
            .map(|a| a.name.to_string())
    }

    /// The artifacts and groups, targets outermost, then flavors, then CPU levels.
    pub(crate) fn artifacts(&self, base: &Base) -> anyhow::Result<(Vec<Artifact>, Vec<Group>)> {
        let many_targets = self.buildable().count() > 1;
        let mut artifacts = Vec::new();
        let mut groups = Vec::new();
        for triple in self.buildable() {
            let user_rustflags = (base.user_rustflags)(triple)?;
            let allocator = self.allocator_for(base.project, triple);
            for (fi, flavor) in self.flavors.iter().enumerate() {
                let features = Features {
                    features: flavor.features.clone(),
                    all_features: false,
                    no_default_features: flavor.no_default_features,
                };
                let baseline = BuildSettings {
                    profile: base.profile.to_string(),
                    profile_overrides: BTreeMap::new(),
                    user_rustflags: user_rustflags.clone(),
                    stage_rustflags: Vec::new(),
                    target: Some(triple.to_string()),
                    features,
                    allocator: None,
                    c: None,
                    relocs_twin: false,
                };
                let group = groups.len();
                let mut verified = false;
                for cpu in self.cpus.iter().filter(|c| level_applies(c, triple)) {
                    let mut settings = baseline.clone();
                    settings.profile_overrides = self.overrides.clone();
                    settings.allocator = allocator.clone();
                    let c = self.c.as_ref().filter(|c| c.target == triple);
                    settings.c = c.map(|c| CBuild {
                        flags: Vec::new(),
                        ..c.clone()
                    });
                    if cpu != PORTABLE {
                        settings.stage_rustflags.push(format!("-Ctarget-cpu={cpu}"));
                    }
                    let cannot_run = if flavor.run {
                        (base.cannot_run)(triple, (cpu != PORTABLE).then_some(cpu.as_str()))
                    } else {
                        Some(format!(
                            "[release.flavors.{}] run = false: this machine cannot run it",
                            flavor.name
                        ))
                    };
                    verified |= cannot_run.is_none();
                    let runs = cannot_run.is_none();
                    artifacts.push(Artifact {
                        name: self.file_name(base.project, triple, &flavor.name, cpu),
                        label: label(many_targets.then_some(triple), &flavor.name, cpu),
                        target: triple.to_string(),
                        flavor: fi,
                        cpu: cpu.clone(),
                        group,
                        settings,
                        cannot_run,
                        runner: None,
                        pgo: runs && self.stages.contains(&changing(Changes::TrainingProfile)),
                        c_profile: c.is_some_and(|c| {
                            c.flags.iter().any(|f| f.starts_with("-fprofile-use="))
                        }),
                        bolt: runs && self.stages.contains(&changing(Changes::CodeLayout)),
                    });
                }
                groups.push(Group {
                    label: label(many_targets.then_some(triple), &flavor.name, PORTABLE)
                        .trim_end_matches("/portable")
                        .to_string(),
                    flavor: fi,
                    baseline,
                    verified,
                });
            }
        }
        Ok((artifacts, groups))
    }

    fn file_name(&self, project: &Project, triple: &str, flavor: &str, cpu: &str) -> String {
        let mut name = format!("{}-{}-{triple}", project.bin, project.version);
        if !self.implicit_flavor {
            name.push('-');
            name.push_str(flavor);
        }
        if cpu != PORTABLE {
            name.push('-');
            name.push_str(&crate::util::file_safe(cpu, "-_."));
        }
        name
    }
}

/// Whether CPU level `cpu` is built for `triple`: the x86-64 levels only for x86-64
/// targets (an aarch64 target of the same release gets its portable build); any other name
/// for every target (rustc says whether it knows it).
pub(crate) fn level_applies(cpu: &str, triple: &str) -> bool {
    let arm = ["neoverse-", "apple-", "cortex-", "ampere", "a64fx"];
    if cpu.starts_with("x86-64") {
        triple.starts_with("x86_64")
    } else if arm.iter().any(|p| cpu.starts_with(p)) {
        triple.starts_with("aarch64") || triple.starts_with("arm64")
    } else {
        true
    }
}

fn label(target: Option<&str>, flavor: &str, cpu: &str) -> String {
    match target {
        Some(t) => format!("{t}/{flavor}/{cpu}"),
        None => format!("{flavor}/{cpu}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cpu_level_applies_to_its_architectures_targets_only() {
        let (x86, arm) = ("x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu");
        assert!(level_applies("x86-64-v3", x86) && !level_applies("x86-64-v3", arm));
        assert!(level_applies("neoverse-v1", arm) && !level_applies("neoverse-v1", x86));
        assert!(level_applies("apple-m1", "aarch64-apple-darwin"));
        assert!(level_applies("native", x86) && level_applies("znver4", x86));
    }

    fn flavor(name: &str, features: &[&str]) -> Flavor {
        Flavor {
            name: name.into(),
            features: features.iter().map(|f| f.to_string()).collect(),
            no_default_features: true,
            run: true,
            workloads: Vec::new(),
            line: 1,
        }
    }

    fn resolve(
        spec: &ReleaseSpec,
        args: &ReleaseArgs,
        last: Option<LastRun>,
    ) -> anyhow::Result<Matrix> {
        let installed = |t: &str| t == "x86_64-unknown-linux-gnu";
        Matrix::resolve(&Inputs {
            spec,
            args,
            last,
            host: "x86_64-unknown-linux-gnu",
            selection: &Features::default(),
            installed: &installed,
            allow_panic_abort: false,
        })
    }

    fn last() -> LastRun {
        LastRun {
            allocator: None,
            c: None,
            id: "r1".into(),
            stages: vec![StageName::Pgo],
            overrides: [("lto".to_string(), "\"fat\"".to_string())].into(),
            cpu: Some("x86-64-v3".into()),
        }
    }

    #[test]
    fn defaults_come_from_the_last_run() {
        let m = resolve(
            &ReleaseSpec::default(),
            &ReleaseArgs::default(),
            Some(last()),
        )
        .unwrap();
        assert_eq!(m.stages, [StageName::Pgo]);
        assert_eq!(m.cpus, ["portable", "x86-64-v3"]);
        assert_eq!(m.overrides.get("lto").map(String::as_str), Some("\"fat\""));
        assert!(m.implicit_flavor && m.flavors.len() == 1);
        assert_eq!(
            m.targets,
            [Target {
                triple: "x86_64-unknown-linux-gnu".into(),
                skipped: None
            }]
        );
        assert!(
            m.origin
                .iter()
                .any(|o| o.contains("what the last run, r1, kept")),
            "{:?}",
            m.origin
        );
        // No earlier run: PGO, portable, no overrides.
        let m = resolve(&ReleaseSpec::default(), &ReleaseArgs::default(), None).unwrap();
        assert_eq!(
            (m.stages, m.cpus),
            (vec![StageName::Pgo], vec!["portable".to_string()])
        );
        assert!(m.overrides.is_empty());
        // A last run that chose `native` ships no level.
        let native = LastRun {
            cpu: Some("native".into()),
            ..last()
        };
        let m = resolve(
            &ReleaseSpec::default(),
            &ReleaseArgs::default(),
            Some(native),
        )
        .unwrap();
        assert_eq!(m.cpus, ["portable"]);
    }

    #[test]
    fn the_spec_beats_the_last_run_and_flags_beat_the_spec() {
        let spec = ReleaseSpec {
            cpu: Some(vec!["x86-64-v2".into()]),
            stages: Some(vec![StageName::Pgo, StageName::Bolt]),
            flavors: vec![flavor("a", &["fa"]), flavor("b", &["fb"])],
            targets: vec![
                "x86_64-unknown-linux-gnu".into(),
                "aarch64-unknown-linux-gnu".into(),
            ],
            ..Default::default()
        };
        let m = resolve(&spec, &ReleaseArgs::default(), Some(last())).unwrap();
        assert_eq!(m.cpus, ["portable", "x86-64-v2"]);
        assert_eq!(m.stages, [StageName::Pgo, StageName::Bolt]);
        let skipped = &m.targets[1];
        assert_eq!(
            skipped.skipped.as_ref().map(|s| s.1.as_str()),
            Some("rustup target add aarch64-unknown-linux-gnu")
        );
        assert_eq!(
            m.buildable().collect::<Vec<_>>(),
            ["x86_64-unknown-linux-gnu"]
        );
        let args = ReleaseArgs {
            cpu: Some(vec!["none".into()]),
            stages: Some(vec!["none".into()]),
            flavors: Some(vec!["b".into()]),
            ..Default::default()
        };
        let m = resolve(&spec, &args, Some(last())).unwrap();
        assert_eq!(m.cpus, ["portable"]);
        assert!(m.stages.is_empty());
        assert_eq!(m.flavors, [flavor("b", &["fb"])]);
    }

    #[test]
    fn bad_flags_are_errors_with_the_fix() {
        let spec = ReleaseSpec {
            flavors: vec![flavor("sieve", &[])],
            ..Default::default()
        };
        let err = |args: ReleaseArgs| resolve(&spec, &args, None).unwrap_err().to_string();
        let e = err(ReleaseArgs {
            flavors: Some(vec!["seive".into()]),
            ..Default::default()
        });
        assert!(
            e.contains("no flavor `seive`") && e.contains("did you mean `sieve`"),
            "{e}"
        );
        let e = err(ReleaseArgs {
            cpu: Some(vec!["native".into()]),
            ..Default::default()
        });
        assert!(
            e.contains("--cpu: `native`") && e.contains("x86-64-v3"),
            "{e}"
        );
        let e = err(ReleaseArgs {
            stages: Some(vec!["cpu".into()]),
            ..Default::default()
        });
        assert!(
            e.contains("not a release stage") && e.contains("--cpu"),
            "{e}"
        );
        let e = resolve(
            &ReleaseSpec::default(),
            &ReleaseArgs {
                flavors: Some(vec!["x".into()]),
                ..Default::default()
            },
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("no [release.flavors]"), "{e}");
    }

    #[test]
    fn no_portable_leaves_only_the_levels_and_needs_one() {
        let args = ReleaseArgs {
            cpu: Some(vec!["x86-64-v3".into()]),
            no_portable: true,
            ..Default::default()
        };
        let m = resolve(&ReleaseSpec::default(), &args, None).unwrap();
        assert_eq!(m.cpus, ["x86-64-v3"]);
        let args = ReleaseArgs {
            cpu: Some(vec!["none".into()]),
            ..args
        };
        let e = resolve(&ReleaseSpec::default(), &args, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--no-portable leaves no artifact"), "{e}");
    }

    #[test]
    fn artifacts_are_named_and_only_what_runs_here_is_trained_and_verified() {
        let spec = ReleaseSpec {
            flavors: vec![
                flavor("cpu", &["be-cpu"]),
                Flavor {
                    run: false,
                    ..flavor("cuda", &["be-cuda"])
                },
            ],
            ..Default::default()
        };
        let args = ReleaseArgs {
            cpu: Some(vec!["x86-64-v4".into()]),
            ..Default::default()
        };
        let m = resolve(&spec, &args, Some(last())).unwrap();
        let project = Project::for_tests("tool", "1.2.0");
        // This machine lacks v4.
        let cannot = |_: &str, cpu: Option<&str>| cpu.map(|c| format!("lacks {c}"));
        let flags = |_: &str| Ok(vec!["-Cuser".to_string()]);
        let (arts, groups) = m
            .artifacts(&Base {
                project: &project,
                profile: "release",
                user_rustflags: &flags,
                cannot_run: &cannot,
            })
            .unwrap();
        let names: Vec<_> = arts.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "tool-1.2.0-x86_64-unknown-linux-gnu-cpu",
                "tool-1.2.0-x86_64-unknown-linux-gnu-cpu-x86-64-v4",
                "tool-1.2.0-x86_64-unknown-linux-gnu-cuda",
                "tool-1.2.0-x86_64-unknown-linux-gnu-cuda-x86-64-v4",
            ]
        );
        let trained: Vec<_> = arts.iter().map(|a| a.pgo).collect();
        assert_eq!(trained, [true, false, false, false]);
        assert_eq!(arts[1].cannot_run.as_deref(), Some("lacks x86-64-v4"));
        assert!(arts[2]
            .cannot_run
            .as_deref()
            .unwrap()
            .contains("run = false"));
        // Settings: the user's flags first, the level's flag, the last run's overrides,
        // the flavor's features only, the target named.
        let s = &arts[1].settings;
        assert_eq!(s.all_rustflags(), ["-Cuser", "-Ctarget-cpu=x86-64-v4"]);
        assert_eq!(
            s.profile_overrides.get("lto").map(String::as_str),
            Some("\"fat\"")
        );
        assert_eq!(
            (s.features.features.clone(), s.features.no_default_features),
            (vec!["be-cpu".to_string()], true)
        );
        assert_eq!(s.target.as_deref(), Some("x86_64-unknown-linux-gnu"));
        // The baseline is the user's profile as it is.
        assert!(
            groups[0].baseline.profile_overrides.is_empty()
                && groups[0].baseline.stage_rustflags.is_empty()
        );
        assert_eq!((groups[0].verified, groups[1].verified), (true, false));

        // The graph: training and verifying only for the artifact that runs here, one
        // baseline for its group, a package job for every artifact.
        let g = super::super::work::graph(&arts, &groups);
        let count = |kind: &str| g.iter().filter(|(_, j)| j.kind == kind).count();
        assert_eq!(
            (
                count("train"),
                count("verify"),
                count("record"),
                count("package")
            ),
            (1, 1, 1, 4)
        );
        assert_eq!(
            count("build"),
            2 + 3 + 1,
            "cpu/portable: instrumented + PGO; 3 plain; 1 baseline"
        );
    }

    #[test]
    fn x86_64_levels_are_built_for_x86_64_targets_only() {
        let spec = ReleaseSpec {
            targets: vec![
                "x86_64-unknown-linux-gnu".into(),
                "aarch64-unknown-linux-gnu".into(),
            ],
            cpu: Some(vec!["x86-64-v3".into()]),
            ..Default::default()
        };
        let installed = |_: &str| true;
        let m = Matrix::resolve(&Inputs {
            spec: &spec,
            args: &ReleaseArgs::default(),
            last: None,
            host: "x86_64-unknown-linux-gnu",
            selection: &Features::default(),
            installed: &installed,
            allow_panic_abort: false,
        })
        .unwrap();
        let project = Project::for_tests("tool", "1.0.0");
        let (arts, _) = m
            .artifacts(&Base {
                project: &project,
                profile: "release",
                user_rustflags: &|_: &str| Ok(vec![]),
                cannot_run: &|_: &str, _: Option<&str>| None,
            })
            .unwrap();
        let cells: Vec<(&str, &str)> = arts
            .iter()
            .map(|a| (a.target.as_str(), a.cpu.as_str()))
            .collect();
        assert_eq!(
            cells,
            [
                ("x86_64-unknown-linux-gnu", "portable"),
                ("x86_64-unknown-linux-gnu", "x86-64-v3"),
                ("aarch64-unknown-linux-gnu", "portable"),
            ]
        );
        assert!(level_applies("neoverse-n1", "aarch64-unknown-linux-gnu"));
    }
}
