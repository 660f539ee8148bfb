//! The profile stage: the best candidate's build with release-profile overrides (LTO,
//! codegen-units, opt-level, …) from a preset or the spec's inline table.
//!
//! Overrides reach cargo as `--config profile.<p>.<key>=<value>` (through
//! `BuildSettings::profile_overrides`): the user's files are never edited. `--explain`
//! builds the baseline plus each setting alone, so the report can say what each one is
//! worth on its own ([`explain`]).
//!
//! Presets (also documented in docs/src/stages.md and the spec skeleton):
//! - `max`: `lto = "fat"`, `codegen-units = 1`, `opt-level = 3`, `incremental = false`, and
//!   `panic = "abort"` only when `allow-panic-abort = true` (it breaks `catch_unwind` and
//!   skips `Drop` on panic);
//! - `balanced`: `lto = "thin"`, `codegen-units = 16`, `opt-level = 3`, `incremental = false`
//!   (parallel codegen, cheaper builds than `max`);
//! - `size`: `opt-level = "s"`, `lto = "thin"`, `codegen-units = 1`, `strip = true`.

use super::{Candidate, Context, Offer, StageError, Standing};
use crate::bench::Estimate;
use crate::cargo::profile::normalize;
use crate::cargo::BuildSettings;
use crate::context::facts::{Explained, StageFacts};
use crate::spec::{ProfileChoice, StageName};

/// The overrides of a preset, as `(cargo profile key, TOML value)`.
pub fn preset(name: &str, allow_panic_abort: bool) -> Option<Vec<(&'static str, toml::Value)>> {
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
pub fn overrides(choice: &ProfileChoice, allow_panic_abort: bool) -> Vec<(String, String)> {
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

/// The best so far with the preset's (or the inline table's) profile keys on top.
pub fn offers<'c>(ctx: &'c Context, standing: &Standing) -> Vec<Offer<'c>> {
    vec![Offer::against_best(prepare(ctx, standing.best))]
}

/// The settings [`offers`] would build on top of `best` (for [`super::ahead`]): `None`
/// when it would build nothing.
pub fn ahead(ctx: &Context, best: &BuildSettings) -> Option<BuildSettings> {
    let stages = &ctx.spec.stages;
    let list = overrides(&stages.profile, stages.allow_panic_abort);
    if list.is_empty() || already_in_effect(ctx, best, &list) {
        return None;
    }
    let mut settings = best.clone();
    settings.profile_overrides.extend(list);
    Some(settings)
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
    ctx.ui.info(&format!(
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
    let Some(known) = crate::cargo::known_profile_values(ctx.project, &s.profile, &keys) else {
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
pub fn describe(list: &[(String, String)]) -> String {
    list.iter()
        .map(|(k, v)| format!("{k} = {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `--explain`: build the baseline with each of the profile stage's settings alone and
/// measure each against the baseline with `measure(candidate)`. Never fails: a setting
/// that cannot be built or measured says so in its entry.
pub fn explain(
    ctx: &Context,
    baseline: &Candidate,
    measure: &mut dyn FnMut(&Candidate) -> anyhow::Result<Estimate>,
) -> Vec<Explained> {
    let stages = &ctx.spec.stages;
    let list = overrides(&stages.profile, stages.allow_panic_abort);
    let mut out = Vec::new();
    for (i, (key, value)) in list.iter().enumerate() {
        ctx.ui.step(&format!(
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
        if let Err(e) = explain_one(ctx, baseline, (key, value), &mut entry, measure) {
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
    (key, value): (&String, &String),
    entry: &mut Explained,
    measure: &mut dyn FnMut(&Candidate) -> anyhow::Result<Estimate>,
) -> Result<(), String> {
    let mut settings = baseline.settings.clone();
    (settings.profile_overrides).insert(key.clone(), value.clone());
    let label = format!("profile --explain {key}");
    let built = ctx.build(&label, &settings).map_err(|e| {
        ctx.ui.warn(&format!("{label}: {e}"));
        e.to_string()
    })?;
    let name = format!("profile-explain-{}", crate::util::file_safe(key, "-"));
    let (binary, size) = (ctx.install_as(&name, &built.binary)).map_err(|e| e.to_string())?;
    entry.binary = Some(binary.display().to_string());
    entry.size_bytes = Some(size);
    entry.build_seconds = Some(built.seconds);
    if same_code(&baseline.binary, &binary) {
        ctx.ui.info(&format!(
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
        ctx.ui.warn(&format!("{label}: measuring failed: {e:#}"));
        format!("measuring failed: {e:#}")
    })?;
    ctx.ui.info(&format!(
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
