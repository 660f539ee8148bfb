//! The profile stage: the best candidate's build with release-profile overrides (LTO,
//! codegen-units, opt-level, …) from a preset or the spec's inline table.
//!
//! Overrides reach cargo as `--config profile.<p>.<key>=<value>` (through
//! `BuildSettings::profile_overrides`): the user's files are never edited. `--explain`
//! builds the baseline plus each setting alone, so the report can say what each one is
//! worth on its own ([`explain`]).
//!
//! With the default preset (`max`) the stage searches a small space of release settings
//! ([`SEARCH`]: LTO fat/thin × codegen-units 1/16 × opt-level 3/2, `incremental = false`,
//! and `panic = "abort"` only when allowed): `max` first, as before, then in a default run
//! `lto=thin cgu=16 O3` once `max` was kept (else the search stops there: [`PRUNED`]) and
//! measured to within ±5 % (else the settings after it could not be told apart from it:
//! [`too_coarse_for_the_search`]), and the two between them, raced, only when that one was
//! kept too ([`NOT_PAST_THE_FIRST`]); all eight
//! with `--thorough` (`Stages::thorough`), each built on the stage's starting best (two at a
//! time, ahead) and measured against the best so far, so a hopeless one stops at its first
//! look (the ladder's futility rule) and the winner continues up the ladder. The pipeline then names a cheaper-to-build candidate within the
//! margin of the winner ([`cheaper_note`]).
//!
//! Presets (also documented in docs/src/stages.md and the spec skeleton):
//! - `max`: `lto = "fat"`, `codegen-units = 1`, `opt-level = 3`, `incremental = false`, and
//!   `panic = "abort"` only when `allow-panic-abort = true` (it breaks `catch_unwind` and
//!   skips `Drop` on panic);
//! - `balanced`: `lto = "thin"`, `codegen-units = 16`, `opt-level = 3`, `incremental = false`
//!   (parallel codegen, cheaper builds than `max`);
//! - `size`: `opt-level = "s"`, `lto = "thin"`, `codegen-units = 1`, `strip = true`.

use std::cell::OnceCell;
use std::rc::Rc;

use super::{Build, Candidate, Context, Offer, Rival, StageError, Standing};
use crate::bench::Estimate;
use crate::cargo::profile::normalize;
use crate::cargo::BuildSettings;
use crate::context::facts::{Explained, StageFacts};
use crate::spec::{ProfileChoice, Stages};
use crate::stages::StageName;

/// The overrides of a preset, as `(cargo profile key, TOML value)`.
pub(crate) fn preset(
    name: &str,
    allow_panic_abort: bool,
) -> Option<Vec<(&'static str, toml::Value)>> {
    use toml::Value::{Boolean as B, Integer as I, String as S};
    let mut v = match name {
        "max" => vec![
            ("lto", S("fat".into())),
            ("codegen-units", I(1)),
            ("opt-level", I(3)),
            ("incremental", B(false)),
        ],
        "balanced" => vec![
            ("lto", S("thin".into())),
            ("codegen-units", I(16)),
            ("opt-level", I(3)),
            ("incremental", B(false)),
        ],
        "size" => vec![
            ("opt-level", S("s".into())),
            ("lto", S("thin".into())),
            ("codegen-units", I(1)),
            ("strip", B(true)),
        ],
        _ => return None,
    };
    if name == "max" && allow_panic_abort {
        v.push(("panic", S("abort".into())));
    }
    Some(v)
}

/// The overrides the spec asks for, key → TOML literal (the form `profile_overrides` takes),
/// in the order they are explained.
pub(crate) fn overrides(choice: &ProfileChoice, allow_panic_abort: bool) -> Vec<(String, String)> {
    match choice {
        ProfileChoice::Preset(name) => preset(name, allow_panic_abort)
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ProfileChoice::Overrides(map) => map
            .iter()
            .map(|(k, v)| (k.clone(), v.to_string()))
            .collect(),
    }
}

/// What the spec chose, for messages and the report: `max` or `inline overrides`.
fn choice_name(choice: &ProfileChoice) -> String {
    match choice {
        ProfileChoice::Preset(name) => format!("preset `{name}`"),
        ProfileChoice::Overrides(_) => "inline overrides".into(),
    }
}

/// One point of the profile search: LTO, codegen-units and opt-level.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Point {
    pub lto: &'static str,
    pub cgu: i64,
    pub opt: i64,
}

const fn point(lto: &'static str, cgu: i64, opt: i64) -> Point {
    Point { lto, cgu, opt }
}

/// The search space, `max` first; a default run tries the first [`DEFAULT_POINTS`] (the
/// third and fourth only after the second was kept), `--thorough` all.
pub(crate) const SEARCH: [Point; 8] = [
    point("fat", 1, 3),
    point("thin", 16, 3),
    point("fat", 16, 3),
    point("thin", 1, 3),
    point("fat", 1, 2),
    point("thin", 16, 2),
    point("fat", 16, 2),
    point("thin", 1, 2),
];

/// How many points of [`SEARCH`] a default run builds: `max` and three more.
pub(crate) const DEFAULT_POINTS: usize = 4;

/// How many candidates the stage builds: the search's points with the default preset, else
/// one.
pub(crate) fn candidates(stages: &Stages) -> usize {
    match searches(stages) {
        true if stages.thorough => SEARCH.len(),
        true => DEFAULT_POINTS,
        false => 1,
    }
}

/// How many candidates the stage builds at least: a default run's search stops after `max`
/// when `max` is not kept ([`PRUNED`]), and after the next point when that one is not
/// ([`NOT_PAST_THE_FIRST`]); `--thorough` builds every one.
pub(crate) fn least(stages: &Stages) -> usize {
    match stages.thorough {
        true => candidates(stages),
        false => 1,
    }
}

/// Whether the stage searches: the default preset `max`, not another preset or a table.
fn searches(stages: &Stages) -> bool {
    matches!(&stages.profile, ProfileChoice::Preset(name) if name == "max")
}

/// The profile stage's contract.
pub(crate) struct Profile;

impl super::Stage for Profile {
    fn offers<'c>(&self, ctx: &'c Context, standing: &Standing) -> Vec<Offer<'c>> {
        offers(ctx, standing)
    }

    fn count(&self, plan: &crate::context::Plan) -> super::Count {
        let stages = &plan.spec.stages;
        super::Count {
            least: least(stages),
            most: candidates(stages),
        }
    }

    /// Its candidates on `best`, then the pgo stage's instrumented build on the preset
    /// (once the preset is kept, it is trained and PGO's build starts: `pgo::speculate`),
    /// and the next stages' guessed on the preset: a preset is kept more often than not.
    fn ahead(&self, ctx: &Context, stages: &[StageName], best: &BuildSettings) -> super::Ahead {
        let settings = ahead(ctx, best);
        let preset = settings
            .first()
            .filter(|(l, _)| l == StageName::Profile.as_str());
        let preset = preset.map(|(_, s)| s.clone());
        let mut groups = vec![(None, settings)];
        if let Some(s) = &preset {
            groups.push((Some(s.clone()), super::pgo::ahead(ctx, stages, s)));
        }
        super::Ahead {
            groups,
            next_on: Some(preset.unwrap_or_else(|| best.clone())),
        }
    }
}

/// The best so far with the preset's (or the inline table's) profile keys on top; with
/// `max`, the search's other points after it, built when the ladder reaches them, each on
/// the stage's starting best: `--thorough`'s raced together against the best after `max`;
/// a default run's first alone, then the other two raced against it once it was kept.
pub(crate) fn offers<'c>(ctx: &'c Context, standing: &Standing) -> Vec<Offer<'c>> {
    let mut offers = vec![Offer::against_best(prepare(ctx, standing.best))];
    let n = candidates(&ctx.spec.stages);
    let thorough = ctx.spec.stages.thorough;
    if thorough && n > 1 {
        announce_search(ctx, 1..n);
    }
    // A default run decides when the ladder reaches the first point after `max` whether
    // the search goes on, and again at the second whether it goes past the first; every
    // point after the first follows that second decision.
    let stops: Rc<OnceCell<Option<String>>> = Rc::default();
    for (i, &point) in SEARCH[1..n].iter().enumerate() {
        let base = standing.best.clone();
        let expected = standing.expected.to_vec();
        let stops = Rc::clone(&stops);
        let build = move |best: &Candidate, max: Option<&Estimate>| {
            if !thorough {
                let why = match i {
                    0 => stops.get_or_init(|| search_stops(best.stage, max)).clone(),
                    _ => match stops.get().cloned().flatten() {
                        Some(why) => Some(why),
                        None => past_the_first(best),
                    },
                };
                if let Some(why) = why {
                    return Err(StageError::Pruned(why));
                }
                match i {
                    0 => {
                        announce_search(ctx, 1..2);
                        // `max` kept: the point builds beside the pgo stage's work on
                        // `max` (its instrumented build, a serial chain under fat LTO,
                        // built and trained now; its optimized build started ahead).
                        ctx.build_ahead(ahead_points(ctx, &base.settings, 1..2));
                        super::pgo::speculate(ctx, &expected, &best.settings);
                    }
                    1 => {
                        // The rest, two at a time, once the first was kept.
                        announce_search(ctx, 2..n);
                        ctx.build_ahead(ahead_points(ctx, &base.settings, 2..n));
                    }
                    _ => {}
                }
            }
            build_point(ctx, &base, point)
        };
        // A default run's first point is measured alone (the rest follow its verdict);
        // the rest, and all of `--thorough`'s, are raced.
        let candidate = match (thorough, i) {
            (false, 0) => Build::OnBest(Box::new(build)),
            _ => Build::Raced(Box::new(build)),
        };
        offers.push(Offer {
            variant: Some(point_name(point)),
            rival: Rival::Best,
            candidate,
        });
    }
    offers
}

/// The search's points `range` of [`SEARCH`], said when they are about to be built.
fn announce_search(ctx: &Context, range: std::ops::Range<usize>) {
    let points: Vec<String> = SEARCH[range.clone()]
        .iter()
        .map(|p| point_name(*p))
        .collect();
    let after = match range.start {
        1 => "`max`".to_string(),
        _ => format!("`{}`", point_name(SEARCH[1])),
    };
    ctx.ui().info(&format!(
        "profile: searching {} more setting(s) after {after}: {}{}",
        points.len(),
        points.join("; "),
        match (ctx.spec.stages.thorough, range.start) {
            (true, _) => "",
            (false, 1) => " (the others only if it is faster; --thorough: all 8)",
            (false, _) => " (--thorough: all 8)",
        }
    ));
}

/// Why a default run's search stops after its first point (`best` is the best so far when
/// the ladder reaches the second): the first point was not kept ([`NOT_PAST_THE_FIRST`]);
/// `None` when it was, and the search goes on.
fn past_the_first(best: &Candidate) -> Option<String> {
    let first = point_name(SEARCH[1]);
    let kept = best.stage == StageName::Profile && best.variant() == Some(first.as_str());
    (!kept).then(|| NOT_PAST_THE_FIRST.to_string())
}

/// Why a default run's search stops when its first point, `lto=thin cgu=16 O3` (the
/// cheapest build, and the farthest from `max` in both LTO and codegen units), was not
/// faster than `max`: the other two lie between the two, and none of the three was faster
/// in any run on record, while waiting for the other two's builds costs a slow-building
/// crate a noticeable share of its run.
/// Figures: docs/src/decisions.md, "The profile search stops after its first point".
const NOT_PAST_THE_FIRST: &str = "search stopped after `lto=thin cgu=16 O3`: it was not faster than `max`, and the settings between the two rarely are (--thorough searches all 8)";

/// Why a default run's search stops when `max` is not kept: the points after it trade
/// speed for build time, so when the fastest setting gains nothing over the best so far,
/// three more builds and comparisons (on a crate of quick builds, a third of the run) would
/// most likely find nothing either.
const PRUNED: &str = "search not run: `max` was not faster than the best so far, and the cheaper settings after it rarely are (--thorough searches all 8)";

/// The widest interval, as a relative half-width around its estimate, of `max`'s comparison
/// that still lets a default run's search go on. The settings after `max` rarely differ from
/// it by more than a few percent, and each is kept only when *faster* than `max`: measured
/// with the same share of the time and the same noise, none can be told apart from `max`
/// when `max` itself was measured no closer than this: the search's builds would be spent
/// on comparisons that cannot conclude.
/// Figures: docs/src/decisions.md, "The profile search needs `max` within ±5 %".
const SEARCH_PRECISION: f64 = 0.05;

/// Why a default run's search stops after a kept `max` measured too coarsely to tell the
/// settings after it apart ([`SEARCH_PRECISION`]); `None` when it goes on.
fn too_coarse_for_the_search(max: &Estimate) -> Option<String> {
    let half_width = (max.ci_high / max.ci_low).ln() / 2.0;
    (half_width > SEARCH_PRECISION.ln_1p()).then(|| {
        format!(
            "search not run: `max` was measured to within ±{:.1} % only ({:.3} [{:.3}, {:.3}]), and the settings after it rarely differ from it by more than {:.0} % (--thorough searches all 8; a longer max-time measures closer)",
            half_width.exp_m1() * 100.0,
            max.ratio,
            max.ci_low,
            max.ci_high,
            SEARCH_PRECISION * 100.0
        )
    })
}

/// Why a default run's search stops after `max` (`max` is the latest row, `best` the stage
/// of the best so far): `max` was not kept ([`PRUNED`]), or measured too coarsely
/// ([`too_coarse_for_the_search`]); `None` when it goes on.
fn search_stops(best: StageName, max: Option<&Estimate>) -> Option<String> {
    if best != StageName::Profile {
        return Some(match max {
            Some(_) => PRUNED.into(),
            None => UNMEASURED.into(),
        });
    }
    max.and_then(too_coarse_for_the_search)
}

/// Why a default run's search stops when `max` was not measured at all: dropped unbuilt
/// (the release profile has its settings already), or its build failed.
const UNMEASURED: &str = "search not run: `max` was not measured (its row says why), and the cheaper settings after it rarely beat it (--thorough searches all 8)";

/// `lto=thin cgu=16 O3`.
pub(crate) fn point_name(p: Point) -> String {
    format!("lto={} cgu={} O{}", p.lto, p.cgu, p.opt)
}

/// One point's overrides, as `(key, TOML literal)`.
fn point_overrides(p: Point, allow_panic_abort: bool) -> Vec<(String, String)> {
    let Point { lto, cgu, opt } = p;
    let mut v = vec![
        ("lto".to_string(), format!("\"{lto}\"")),
        ("codegen-units".to_string(), cgu.to_string()),
        ("opt-level".to_string(), opt.to_string()),
        ("incremental".to_string(), "false".to_string()),
    ];
    if allow_panic_abort {
        v.push(("panic".to_string(), "\"abort\"".to_string()));
    }
    v
}

/// A point of the search built on `base` (the best when the stage began).
fn build_point(ctx: &Context, base: &Candidate, point: Point) -> Result<Candidate, StageError> {
    let list = point_overrides(point, ctx.spec.stages.allow_panic_abort);
    if already_in_effect(ctx, &base.settings, &list) {
        return Err(StageError::Redundant(format!(
            "profile `{}` already has {}: the candidate would be the {} build again, so it was not built",
            base.settings.profile,
            describe(&list),
            base.label()
        )));
    }
    let mut settings = base.settings.clone();
    settings.profile_overrides.extend(list.iter().cloned());
    let facts = StageFacts {
        variant: Some(point_name(point)),
        choice: Some("search".into()),
        overrides: Some(list.iter().cloned().collect()),
        ..Default::default()
    };
    let (mut cand, built) = super::build_candidate(ctx, StageName::Profile, settings, facts)?;
    cand.facts.cargo_command = Some(built.command.clone());
    Ok(cand)
}

/// The note for the profile stage's winner when a candidate measured against it came out
/// within the margin and builds in under 90 % of its time: `(label, ratio, its build
/// seconds)` of the cheapest such one, and the winner's build seconds.
pub(crate) fn cheaper_note(cheaper: (&str, f64, f64), winner_build: f64) -> String {
    let (label, ratio, secs) = cheaper;
    format!(
        "{label} is within the margin of this one (time ratio {ratio:.3}) and builds in {} instead of {}: the cheaper choice when build time matters",
        crate::util::format_secs(secs),
        crate::util::format_secs(winner_build)
    )
}

/// The settings [`offers`] builds on top of `best` (for [`super::ahead`]), labelled: the
/// preset (or table) first, then, with `--thorough`, the search's other points; none that
/// would be `best` again.
pub(crate) fn ahead(ctx: &Context, best: &BuildSettings) -> Vec<(String, BuildSettings)> {
    let stages = &ctx.spec.stages;
    let with = |list: Vec<(String, String)>| -> Option<BuildSettings> {
        if list.is_empty() || already_in_effect(ctx, best, &list) {
            return None;
        }
        let mut settings = best.clone();
        settings.profile_overrides.extend(list);
        Some(settings)
    };
    let first = with(overrides(&stages.profile, stages.allow_panic_abort))
        .map(|s| (StageName::Profile.as_str().to_string(), s));
    // A default run's search waits for `max`'s verdict (see PRUNED); --thorough's does not.
    let points = match stages.thorough {
        true => ahead_points(ctx, best, 1..candidates(stages)),
        false => Vec::new(),
    };
    first.into_iter().chain(points).collect()
}

/// The search's points `range` built on `best`, labelled; none that would be `best` again.
fn ahead_points(
    ctx: &Context,
    best: &BuildSettings,
    range: std::ops::Range<usize>,
) -> Vec<(String, BuildSettings)> {
    let allow = ctx.spec.stages.allow_panic_abort;
    SEARCH[range]
        .iter()
        .filter_map(|&p| {
            let list = point_overrides(p, allow);
            if already_in_effect(ctx, best, &list) {
                return None;
            }
            let mut settings = best.clone();
            settings.profile_overrides.extend(list);
            let label = crate::context::label("profile", Some(&point_name(p)));
            Some((label, settings))
        })
        .collect()
}

fn prepare(ctx: &Context, best: &Candidate) -> Result<Candidate, StageError> {
    let stages = &ctx.spec.stages;
    let list = overrides(&stages.profile, stages.allow_panic_abort);
    if list.is_empty() {
        return Err(StageError::NotAvailable(format!(
            "{} sets no profile keys",
            choice_name(&stages.profile)
        )));
    }
    if already_in_effect(ctx, &best.settings, &list) {
        return Err(StageError::Redundant(format!(
            "profile `{}` already has {} (read from Cargo.toml and cargo's defaults): the candidate would be the {} build again, so it was not built",
            best.settings.profile,
            describe(&list),
            best.label()
        )));
    }
    let mut settings = best.settings.clone();
    settings.profile_overrides.extend(list.iter().cloned());
    ctx.ui().info(&format!(
        "profile: {} on top of `{}`: {}",
        choice_name(&stages.profile),
        settings.profile,
        describe(&list)
    ));
    let abort = settings.profile_overrides.get("panic").map(String::as_str) == Some("\"abort\"");
    let facts = StageFacts {
        choice: Some(match &stages.profile {
            ProfileChoice::Preset(name) => name.clone(),
            ProfileChoice::Overrides(_) => "inline".into(),
        }),
        overrides: Some(list.iter().cloned().collect()),
        ..Default::default()
    };
    let (mut cand, built) = super::build_candidate(ctx, StageName::Profile, settings, facts)?;
    cand.facts.cargo_command = Some(built.command.clone());
    if abort {
        cand.notes.push(
            "panic = \"abort\" (allowed by allow-panic-abort): a panic ends the process without unwinding"
                .into(),
        );
    }
    Ok(cand)
}

/// Whether every override in `list` is what the best candidate's profile already uses:
/// its own overrides, else what the manifest and cargo's defaults decide. Unknown (a config
/// file or the environment can set profiles) counts as not in effect: then it is built.
fn already_in_effect(ctx: &Context, s: &BuildSettings, list: &[(String, String)]) -> bool {
    let keys: Vec<&str> = list
        .iter()
        .map(|(k, _)| k.as_str())
        .filter(|k| !s.profile_overrides.contains_key(*k))
        .collect();
    let Some(known) = crate::cargo::known_profile_values(&ctx.plan.project, &s.profile, &keys)
    else {
        return false;
    };
    list.iter().all(|(k, v)| {
        let current = match s.profile_overrides.get(k) {
            Some(o) => normalize(k, o),
            None => known.get(k).cloned().unwrap_or_default(),
        };
        current == normalize(k, v)
    })
}

/// `lto = "fat", codegen-units = 1`.
pub(crate) fn describe(list: &[(String, String)]) -> String {
    list.iter()
        .map(|(k, v)| format!("{k} = {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `--explain`: build the baseline with each of the profile stage's settings alone and
/// measure each against the baseline with `measure(candidate)`. Never fails: a setting
/// that cannot be built or measured says so in its entry.
pub(crate) fn explain(
    ctx: &Context,
    baseline: &Candidate,
    measure: &mut dyn FnMut(&Candidate) -> anyhow::Result<Estimate>,
) -> Vec<Explained> {
    let stages = &ctx.spec.stages;
    let list = overrides(&stages.profile, stages.allow_panic_abort);
    let mut out = Vec::new();
    for (i, (key, value)) in list.iter().enumerate() {
        ctx.ui().step(&format!(
            "profile --explain [{}/{}]: {key} = {value} alone",
            i + 1,
            list.len()
        ));
        let mut entry = Explained {
            setting: key.clone(),
            value: value.clone(),
            binary: None,
            size_bytes: None,
            build_seconds: None,
            same_code_as_baseline: false,
            vs_baseline: None,
            error: None,
        };
        if let Err(e) = explain_one(ctx, baseline, key, value, &mut entry, measure) {
            entry.error = Some(e);
        }
        out.push(entry);
    }
    out
}

/// One setting alone: built on the baseline's settings, compared with the baseline's code,
/// measured when the code differs; what was found goes into `entry`, an error is returned.
fn explain_one(
    ctx: &Context,
    baseline: &Candidate,
    key: &str,
    value: &str,
    entry: &mut Explained,
    measure: &mut dyn FnMut(&Candidate) -> anyhow::Result<Estimate>,
) -> Result<(), String> {
    let mut settings = baseline.settings.clone();
    (settings.profile_overrides).insert(key.to_string(), value.to_string());
    let label = format!("profile --explain {key}");
    let built = ctx.build(&label, &settings).map_err(|e| {
        ctx.ui().warn(&format!("{label}: {e}"));
        e.to_string()
    })?;
    let name = format!("profile-explain-{}", crate::util::file_safe(key, "-"));
    let (binary, size) = (ctx.install_as(&name, &built.binary)).map_err(|e| e.to_string())?;
    entry.binary = Some(binary.display().to_string());
    entry.size_bytes = Some(size);
    entry.build_seconds = Some(built.seconds);
    if same_code(&baseline.binary, &binary) {
        ctx.ui().info(&format!(
            "{key} = {value}: same machine code as the baseline (its profile already has it)"
        ));
        entry.same_code_as_baseline = true;
        return Ok(());
    }
    let cand = Candidate {
        stage: StageName::Profile,
        binary,
        settings,
        size_bytes: size,
        build_seconds: built.seconds,
        notes: Vec::new(),
        facts: StageFacts {
            variant: Some(format!("{key} alone")),
            ..Default::default()
        },
    };
    let e = measure(&cand).map_err(|e| {
        ctx.ui().warn(&format!("{label}: measuring failed: {e:#}"));
        format!("measuring failed: {e:#}")
    })?;
    ctx.ui().info(&format!(
        "{key} = {value} alone vs baseline: time ratio {:.3} [{:.3}, {:.3}] → {}",
        e.ratio, e.ci_low, e.ci_high, e.verdict
    ));
    entry.vs_baseline = Some(e);
    Ok(())
}

/// Whether two executables have the same code (their `.text` sections are equal). The whole
/// files differ even for identical code: symbol hashes depend on the profile settings.
fn same_code(a: &std::path::Path, b: &std::path::Path) -> bool {
    match (std::fs::read(a), std::fs::read(b)) {
        (Ok(a), Ok(b)) => match (elf_section(&a, ".text"), elf_section(&b, ".text")) {
            (Some(x), Some(y)) => x == y,
            _ => a == b,
        },
        _ => false,
    }
}

/// The bytes of the named section of an object file (ELF, Mach-O, PE), if it has one.
fn elf_section<'a>(file: &'a [u8], name: &str) -> Option<&'a [u8]> {
    use object::{Object, ObjectSection};
    let obj = object::File::parse(file).ok()?;
    obj.section_by_name(name)?.data().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn presets_are_exact() {
        let lit = |name, abort| {
            overrides(&ProfileChoice::Preset(String::from(name)), abort)
                .into_iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            lit("max", false),
            [
                "lto=\"fat\"",
                "codegen-units=1",
                "opt-level=3",
                "incremental=false"
            ]
        );
        assert!(lit("max", true).contains(&"panic=\"abort\"".to_string()));
        assert!(!lit("balanced", true).iter().any(|s| s.starts_with("panic")));
        assert_eq!(
            lit("balanced", false),
            [
                "lto=\"thin\"",
                "codegen-units=16",
                "opt-level=3",
                "incremental=false"
            ]
        );
        assert_eq!(
            lit("size", false),
            [
                "opt-level=\"s\"",
                "lto=\"thin\"",
                "codegen-units=1",
                "strip=true"
            ]
        );
        assert!(preset("nope", false).is_none());
    }

    #[test]
    fn a_max_measured_too_coarsely_stops_the_default_search() {
        let est = |ratio, ci_low, ci_high| Estimate {
            ratio,
            ci_low,
            ci_high,
            verdict: crate::bench::Verdict::Faster,
            confidence: 0.95,
        };
        // Noisy runs: ±6.8 % cannot tell settings a few percent apart.
        let why = too_coarse_for_the_search(&est(0.922, 0.863, 0.984)).expect("stopped");
        assert!(
            why.starts_with(
                "search not run: `max` was measured to within ±6.8 % only (0.922 [0.863, 0.984])"
            ),
            "{why}"
        );
        assert!(why.contains("--thorough searches all 8"), "{why}");
        // Quiet runs: ±2.6 %, the search goes on.
        assert_eq!(too_coarse_for_the_search(&est(0.962, 0.937, 0.987)), None);
        // Just inside and just outside ±5 %.
        assert_eq!(
            too_coarse_for_the_search(&est(0.9, 0.9 / 1.049, 0.9 * 1.049)),
            None
        );
        assert!(too_coarse_for_the_search(&est(0.9, 0.9 / 1.051, 0.9 * 1.051)).is_some());
        // What the search's points follow: max not kept, kept but coarse, kept and close.
        let coarse = est(0.922, 0.863, 0.984);
        let close = est(0.962, 0.937, 0.987);
        assert_eq!(
            search_stops(StageName::Baseline, Some(&close)).as_deref(),
            Some(PRUNED)
        );
        assert_eq!(
            search_stops(StageName::Baseline, None).as_deref(),
            Some(UNMEASURED)
        );
        assert!(search_stops(StageName::Profile, Some(&coarse))
            .is_some_and(|w| w.contains("measured to within ±6.8 %")));
        assert_eq!(search_stops(StageName::Profile, Some(&close)), None);
    }

    #[test]
    fn a_default_search_goes_past_its_first_point_only_when_that_point_was_kept() {
        let cand = |stage, variant: Option<&str>| Candidate {
            stage,
            binary: Default::default(),
            settings: BuildSettings::plain("release"),
            size_bytes: 0,
            build_seconds: 0.0,
            notes: Vec::new(),
            facts: StageFacts {
                variant: variant.map(str::to_string),
                ..Default::default()
            },
        };
        let first = point_name(SEARCH[1]);
        assert_eq!(
            past_the_first(&cand(StageName::Profile, Some(&first))),
            None
        );
        for (stage, variant) in [
            (StageName::Profile, None),
            (StageName::Profile, Some("lto=fat cgu=16 O3")),
            (StageName::Baseline, None),
        ] {
            assert_eq!(
                past_the_first(&cand(stage, variant)).as_deref(),
                Some(NOT_PAST_THE_FIRST)
            );
        }
        assert!(NOT_PAST_THE_FIRST.contains(&format!("after `{first}`")));
    }

    #[test]
    fn the_search_is_max_and_three_more_or_all_eight() {
        let mut stages = Stages::default();
        assert_eq!(candidates(&stages), DEFAULT_POINTS);
        stages.thorough = true;
        assert_eq!(candidates(&stages), 8);
        // `max` is the first point, as the preset has it.
        let max: Vec<(String, String)> = overrides(&stages.profile, false);
        assert_eq!(point_overrides(SEARCH[0], false), max);
        assert_eq!(
            point_overrides(SEARCH[0], true),
            overrides(&stages.profile, true)
        );
        // Every point once.
        let mut all: Vec<String> = SEARCH.iter().map(|p| point_name(*p)).collect();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), 8);
        assert_eq!(point_name(SEARCH[1]), "lto=thin cgu=16 O3");
        stages.profile = ProfileChoice::Preset("balanced".into());
        assert_eq!(candidates(&stages), 1);
        let note = cheaper_note(("profile (lto=thin cgu=16 O3)", 1.004, 12.0), 40.0);
        assert!(note.starts_with("profile (lto=thin cgu=16 O3) is within the margin of this one (time ratio 1.004) and builds in 12"), "{note}");
    }

    #[test]
    fn inline_overrides_become_toml_literals() {
        let mut m = BTreeMap::new();
        m.insert("lto".to_string(), toml::Value::Boolean(true));
        m.insert("opt-level".to_string(), toml::Value::String("z".into()));
        let o = overrides(&ProfileChoice::Overrides(m), false);
        assert_eq!(
            o,
            [
                ("lto".to_string(), "true".to_string()),
                ("opt-level".to_string(), "\"z\"".to_string())
            ]
        );
        assert_eq!(describe(&o), "lto = true, opt-level = \"z\"");
    }

    #[test]
    fn text_section_of_this_test_binary() {
        let me = std::env::current_exe().unwrap();
        let bytes = std::fs::read(&me).unwrap();
        let text = elf_section(&bytes, ".text").expect(".text");
        assert!(!text.is_empty());
        assert!(elf_section(&bytes, ".no-such-section").is_none());
        assert!(elf_section(b"not an elf", ".text").is_none());
        assert!(same_code(&me, &me));
    }
}
