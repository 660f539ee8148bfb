//! The profile stage: the best candidate's build with release-profile overrides (LTO,
//! codegen-units, opt-level, …) from a preset or the spec's inline table.
//!
//! Overrides reach cargo as `--config profile.<p>.<key>=<value>` (through
//! `BuildSettings::profile_overrides`): the user's files are never edited. `--explain`
//! builds the baseline plus each setting alone, so the report can say what each one is
//! worth on its own ([`explain`]).
//!
//! Presets (also documented in README and the spec skeleton):
//! - `max`: `lto = "fat"`, `codegen-units = 1`, `opt-level = 3`, `incremental = false`, and
//!   `panic = "abort"` only when `allow-panic-abort = true` (it breaks `catch_unwind` and
//!   skips `Drop` on panic);
//! - `balanced`: `lto = "thin"`, `codegen-units = 16`, `opt-level = 3`, `incremental = false`
//!   (parallel codegen, cheaper builds than `max`);
//! - `size`: `opt-level = "s"`, `lto = "thin"`, `codegen-units = 1`, `strip = true`.

use std::collections::BTreeMap;

use super::{Candidate, Context, StageError};
use crate::bench::Estimate;
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

pub fn prepare(ctx: &Context, best: &Candidate) -> Result<Candidate, StageError> {
    let stages = &ctx.spec.stages;
    let list = overrides(&stages.profile, stages.allow_panic_abort);
    if list.is_empty() {
        return Err(StageError::NotAvailable(format!(
            "{} sets no profile keys",
            choice_name(&stages.profile)
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
    let built = ctx.build("profile", &settings)?;
    let (binary, size_bytes) = ctx.install(StageName::Profile, &built.binary)?;
    let mut facts = serde_json::Map::new();
    facts.insert(
        "choice".into(),
        match &stages.profile {
            ProfileChoice::Preset(name) => name.clone().into(),
            ProfileChoice::Overrides(_) => "inline".into(),
        },
    );
    facts.insert(
        "overrides".into(),
        serde_json::to_value(list.iter().cloned().collect::<BTreeMap<_, _>>()).unwrap_or_default(),
    );
    facts.insert("cargo_command".into(), built.command.clone().into());
    let mut notes = Vec::new();
    if settings.profile_overrides.get("panic").map(String::as_str) == Some("\"abort\"") {
        notes.push(
            "panic = \"abort\" (allowed by allow-panic-abort): a panic ends the process without unwinding"
                .into(),
        );
    }
    Ok(Candidate {
        stage: StageName::Profile,
        binary,
        settings,
        size_bytes,
        build_seconds: built.seconds,
        notes,
        facts,
    })
}

/// `lto = "fat", codegen-units = 1`.
pub fn describe(list: &[(String, String)]) -> String {
    list.iter()
        .map(|(k, v)| format!("{k} = {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One setting's own effect, measured alone on top of the baseline.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Explained {
    pub setting: String,
    /// TOML literal, e.g. `"fat"` or `1`.
    pub value: String,
    pub binary: Option<String>,
    pub size_bytes: Option<u64>,
    pub build_seconds: Option<f64>,
    /// The binary's code is byte-identical to the baseline's: the base profile already has
    /// this setting, so it is not measured.
    pub same_code_as_baseline: bool,
    /// Time ratio against the baseline (below 1 is faster).
    pub vs_baseline: Option<Estimate>,
    /// Why it could not be built or measured.
    pub error: Option<String>,
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
        let mut settings = baseline.settings.clone();
        settings
            .profile_overrides
            .insert(key.clone(), value.clone());
        let label = format!("profile --explain {key}");
        let built = match ctx.build(&label, &settings) {
            Ok(b) => b,
            Err(e) => {
                ctx.ui.warn(&format!("{label}: {e}"));
                entry.error = Some(e.to_string());
                out.push(entry);
                continue;
            }
        };
        let name = format!("profile-explain-{}", sanitize(key));
        let (binary, size) = match ctx.install_as(&name, &built.binary) {
            Ok(x) => x,
            Err(e) => {
                entry.error = Some(e.to_string());
                out.push(entry);
                continue;
            }
        };
        entry.binary = Some(binary.display().to_string());
        entry.size_bytes = Some(size);
        entry.build_seconds = Some(built.seconds);
        if same_code(&baseline.binary, &binary) {
            ctx.ui.info(&format!(
                "{key} = {value}: same machine code as the baseline (its profile already has it)"
            ));
            entry.same_code_as_baseline = true;
            out.push(entry);
            continue;
        }
        let cand = Candidate {
            stage: StageName::Profile,
            binary,
            settings,
            size_bytes: size,
            build_seconds: built.seconds,
            notes: Vec::new(),
            facts: [("variant".to_string(), format!("{key} alone").into())]
                .into_iter()
                .collect(),
        };
        match measure(&cand) {
            Ok(e) => {
                ctx.ui.info(&format!(
                    "{key} = {value} alone vs baseline: time ratio {:.3} [{:.3}, {:.3}] → {}",
                    e.ratio, e.ci_low, e.ci_high, e.verdict
                ));
                entry.vs_baseline = Some(e);
            }
            Err(e) => {
                ctx.ui.warn(&format!("{label}: measuring failed: {e:#}"));
                entry.error = Some(format!("measuring failed: {e:#}"));
            }
        }
        out.push(entry);
    }
    out
}

fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
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

/// The bytes of the named section of a 64-bit little-endian ELF file.
fn elf_section<'a>(file: &'a [u8], name: &str) -> Option<&'a [u8]> {
    let u16_at = |o: usize| Some(u16::from_le_bytes(file.get(o..o + 2)?.try_into().ok()?));
    let u32_at = |o: usize| Some(u32::from_le_bytes(file.get(o..o + 4)?.try_into().ok()?));
    let u64_at = |o: usize| Some(u64::from_le_bytes(file.get(o..o + 8)?.try_into().ok()?));
    if file.get(0..4)? != b"\x7fELF" || *file.get(4)? != 2 || *file.get(5)? != 1 {
        return None;
    }
    let shoff = usize::try_from(u64_at(0x28)?).ok()?;
    let shentsize = usize::from(u16_at(0x3a)?);
    let shnum = usize::from(u16_at(0x3c)?);
    let shstrndx = usize::from(u16_at(0x3e)?);
    let header = |i: usize| shoff.checked_add(i.checked_mul(shentsize)?);
    let strtab = header(shstrndx)?;
    let str_off = usize::try_from(u64_at(strtab + 0x18)?).ok()?;
    for i in 0..shnum {
        let h = header(i)?;
        let name_off = str_off.checked_add(usize::try_from(u32_at(h)?).ok()?)?;
        let rest = file.get(name_off..)?;
        let end = rest.iter().position(|&c| c == 0)?;
        if &rest[..end] == name.as_bytes() {
            let off = usize::try_from(u64_at(h + 0x18)?).ok()?;
            let size = usize::try_from(u64_at(h + 0x20)?).ok()?;
            return file.get(off..off.checked_add(size)?);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

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
