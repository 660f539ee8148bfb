//! The cpu stage: the best candidate's build with `-Ctarget-cpu=X`, one candidate per CPU
//! the spec lists (default: the highest x86-64 level this CPU supports, then `native`).
//!
//! A candidate this machine cannot run is skipped with the features it lacks: rustc says
//! which target features a `target-cpu` enables (`rustc --print cfg -Ctarget-cpu=X`), and
//! `native` says which ones this CPU has. A name rustc does not know is a failure (a typo
//! in the spec must not pass silently).
//!
//! Unlike most stages this one offers several candidates ([`offers`]); the
//! pipeline verifies and measures them in order, each against the best so far, so a later
//! (less portable) CPU must beat an earlier one measurably to replace it. Must not: measure
//! or decide (the pipeline does).

use std::collections::BTreeSet;

use super::{Build, Candidate, Context, Offer, Rival, StageError, Standing};
use crate::cargo::{target_cpu_of, BuildSettings};
use crate::context::facts::StageFacts;
use crate::process;
use crate::stages::StageName;
use crate::toolchain::{CpuFacts, X86Level};

/// One candidate per target-cpu the spec lists (or the default ones), each against the
/// best so far.
pub(crate) fn offers<'c>(ctx: &'c Context, standing: &Standing) -> Vec<Offer<'c>> {
    let best = standing.best;
    let fail = |e: StageError| vec![Offer::against_best(Err(e))];
    let triple = best
        .settings
        .target
        .clone()
        .unwrap_or_else(|| ctx.plan.rustc.host.clone());
    if triple != ctx.plan.rustc.host {
        return fail(StageError::NotAvailable(format!(
            "building for {triple}, not this machine ({}): its binaries cannot run here",
            ctx.plan.rustc.host
        )));
    }
    let facts = CpuFacts::gather();
    let names = match &ctx.spec.stages.cpu {
        Some(list) => list.clone(),
        None => default_candidates(facts.arch, facts.x86_64_level, facts.aarch64_cpu.as_deref()),
    };
    let native = match features(&triple, "native") {
        Ok(f) => f,
        Err(e) => {
            return fail(StageError::Failed(format!(
                "cannot tell which features this CPU has: {e}"
            )))
        }
    };
    announce(ctx, &names, &facts);
    // By default `native` comes after the highest level and is built only when that level
    // was kept: it adds this CPU's extra features and scheduling model to the level's, and
    // when the level's own features changed nothing measurable, the rest rarely does; that
    // spares a build of the whole program.
    // Figures: docs/src/decisions.md, "`native` is built only after a kept level".
    let after_level = ctx.spec.stages.cpu.is_none() && names.len() > 1;
    let listed = ctx.spec.stages.cpu.is_some() && names.len() > 1;
    let on_level = match names.first().filter(|_| after_level) {
        Some(level) if check(&triple, level, &native).is_ok() => beside_level(ctx, standing, level),
        _ => Vec::new(),
    };
    let native_cpu = facts.native_cpu;
    names
        .into_iter()
        .map(|name| {
            let (best, triple, native, native_cpu, cpu) = (
                best.clone(),
                triple.clone(),
                native.clone(),
                native_cpu.clone(),
                name.clone(),
            );
            let beside = if name == "native" {
                on_level.clone()
            } else {
                Vec::new()
            };
            let make = move || {
                ctx.build_ahead(beside);
                let built = check(&triple, &cpu, &native)
                    .and_then(|()| build(ctx, &best, &cpu, native_cpu.as_deref()));
                if let Err(StageError::NotAvailable(why)) = &built {
                    ctx.ui().info(&format!("cpu ({cpu}): skipped: {why}"));
                }
                built
            };
            (name, make)
        })
        .map(|(name, make)| offer(name, Box::new(make), (after_level, listed)))
        .collect()
}

/// What starts beside the default level and `native` after it: PGO's instrumented build on
/// the level, wanted when the level is kept and `native` dropped, as it almost always is
/// (returned, for `native`'s build to start beside it). Both start ahead now, beside the
/// level's build or, when that was built ahead, beside its comparison (on the CPUs the
/// timing leaves: `context::ahead`): side by side, the builds take less time than one after
/// the other. When the level is dropped both are stopped (`Context::build_ahead_on`):
/// nobody will ask for them.
/// Figures: docs/src/decisions.md, "The level's builds start side by side".
fn beside_level(
    ctx: &Context,
    standing: &Standing,
    level: &str,
) -> Vec<(String, crate::cargo::BuildSettings)> {
    let level_settings = settings_for(&standing.best.settings, level);
    let instrumented = super::pgo::ahead(ctx, standing.expected, &level_settings);
    let native = settings_for(&standing.best.settings, "native");
    let mut wanted = vec![(crate::context::label("cpu", Some("native")), native)];
    wanted.extend(instrumented.iter().cloned());
    ctx.build_ahead_on(&level_settings, wanted);
    instrumented
}

/// Say which CPUs the stage tries, and what this one is.
fn announce(ctx: &Context, names: &[String], facts: &CpuFacts) {
    ctx.ui().info(&format!(
        "cpu: candidates {} (this CPU: {}{})",
        names.join(", "),
        facts.model.as_deref().unwrap_or("unknown model"),
        facts
            .native_cpu
            .as_deref()
            .map(|n| format!(", LLVM calls it {n}"))
            .unwrap_or_default()
    ));
}

/// The offer of target-cpu `name`: by default `native` after a level only when the level
/// was kept (`after_level`); the levels a `[stages] cpu` list names (`listed`) raced against
/// the best; else built now.
fn offer<'c>(
    name: String,
    make: Box<dyn FnOnce() -> Result<Candidate, StageError> + 'c>,
    (after_level, listed): (bool, bool),
) -> Offer<'c> {
    Offer {
        candidate: if after_level && name == "native" {
            Build::IfPreviousKept {
                build: make,
                why_not: "not built: the CPU level before it was not kept, and `native` only adds this CPU's extra features and tuning to it (list it in `[stages] cpu` to try it anyway)".into(),
            }
        } else if listed {
            Build::Raced(Box::new(move |_, _| make()))
        } else {
            Build::Now(make())
        },
        variant: Some(name),
        rival: Rival::Best,
    }
}

/// The highest x86-64 level this CPU reaches (when above the v1 baseline every x86-64
/// binary already targets), or on aarch64 the core LLVM names (`neoverse-v1`, `apple-m2`),
/// then `native`.
pub(crate) fn default_candidates(
    arch: &str,
    level: Option<X86Level>,
    aarch64_cpu: Option<&str>,
) -> Vec<String> {
    let mut v = Vec::new();
    if arch == "x86_64" {
        if let Some(l) = level.filter(|l| *l > X86Level::V1) {
            v.push(l.target_cpu().to_string());
        }
    }
    if let (true, Some(cpu)) = (arch == "aarch64", aarch64_cpu) {
        v.push(cpu.to_string());
    }
    v.push("native".to_string());
    v
}

/// Why this machine cannot run code built for `triple` with target-cpu `name`, if it
/// cannot (another target, or a CPU level this one lacks features of).
pub(crate) fn cannot_run(host: &str, triple: &str, name: &str) -> Option<String> {
    if triple != host {
        return Some(format!("built for {triple}, not this machine ({host})"));
    }
    let native = match features(triple, "native") {
        Ok(f) => f,
        Err(e) => return Some(format!("cannot tell which features this CPU has: {e}")),
    };
    check(triple, name, &native).err().map(|e| e.to_string())
}

/// Whether this CPU can run code built for `name`.
fn check(triple: &str, name: &str, native: &BTreeSet<String>) -> Result<(), StageError> {
    if name == "native" {
        return Ok(());
    }
    let wanted = features(triple, name).map_err(StageError::Failed)?;
    let missing = missing_features(&wanted, native);
    if missing.is_empty() {
        Ok(())
    } else {
        Err(StageError::NotAvailable(format!(
            "this CPU cannot run code built for target-cpu {name}: it lacks {}",
            missing.join(", ")
        )))
    }
}

/// What `wanted` needs that `have` lacks.
pub(crate) fn missing_features(wanted: &BTreeSet<String>, have: &BTreeSet<String>) -> Vec<String> {
    wanted.difference(have).cloned().collect()
}

/// The first of `names` rustc does not know as a target-cpu for `triple` (its index and
/// rustc's word with the fix), checked before anything is built.
pub(crate) fn unknown_name(triple: &str, names: &[String]) -> Option<(usize, String)> {
    names
        .iter()
        .enumerate()
        .filter(|(_, n)| n.as_str() != "native")
        .find_map(|(i, n)| match features(triple, n) {
            Err(e) if e.contains("does not know") => Some((i, e)),
            _ => None,
        })
}

/// The target features rustc enables for `-Ctarget-cpu=<cpu>` on `triple`.
fn features(triple: &str, cpu: &str) -> Result<BTreeSet<String>, String> {
    let flag = format!("-Ctarget-cpu={cpu}");
    let out = process::run_tool(
        crate::toolchain::rustc_program(),
        ["--print", "cfg", "--target", triple, &flag],
    )
    .map_err(|e| e.to_string())?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("is not a recognized processor") {
        return Err(format!(
            "rustc does not know target-cpu `{cpu}` for {triple}\n  fix: pick a name from `rustc --print target-cpus` (or an x86-64 level such as x86-64-v3)"
        ));
    }
    if !out.status.success() {
        return Err(format!(
            "`rustc --print cfg {flag}` failed ({}): {}",
            out.status,
            out.stderr_tail(5)
        ));
    }
    Ok(parse_features(&String::from_utf8_lossy(&out.stdout)))
}

/// `target_feature="avx2"` lines of `rustc --print cfg`.
pub(crate) fn parse_features(cfg: &str) -> BTreeSet<String> {
    cfg.lines()
        .filter_map(|l| l.trim().strip_prefix("target_feature="))
        .map(|v| v.trim_matches('"').to_string())
        .collect()
}

/// `best` built for CPU `name`. The stage's flag replaces an earlier stage flag of the same
/// kind; the user's own flags stay first (a user `-Ctarget-cpu` is overridden because ours
/// comes later).
fn settings_for(best: &BuildSettings, name: &str) -> BuildSettings {
    let mut settings = best.clone();
    settings
        .stage_rustflags
        .retain(|f| target_cpu_of(std::slice::from_ref(f)).is_none());
    settings.with_rustflags([format!("-Ctarget-cpu={name}")])
}

/// The cpu stage's contract.
pub(crate) struct Cpu;

impl super::Stage for Cpu {
    fn offers<'c>(&self, ctx: &'c Context, standing: &Standing) -> Vec<Offer<'c>> {
        offers(ctx, standing)
    }

    /// The spec's list, else a level and `native` (built only when the level is kept).
    fn count(&self, plan: &crate::context::Plan) -> super::Count {
        let list = plan.spec.stages.cpu.as_ref().map(Vec::len);
        super::Count {
            least: list.unwrap_or(1),
            most: list.unwrap_or(2),
        }
    }

    /// Its levels on `best` (on the candidate `best` is, when that is not the baseline);
    /// the stages after it are not guessed.
    fn ahead(&self, ctx: &Context, _stages: &[StageName], best: &BuildSettings) -> super::Ahead {
        let on = (*best != ctx.plan.baseline).then(|| best.clone());
        super::Ahead {
            groups: vec![(on, ahead(ctx, best))],
            next_on: None,
        }
    }

    /// `[stages] cpu`: every name one rustc knows for `triple`.
    fn check(&self, plan: &crate::context::Plan, triple: &str) -> anyhow::Result<()> {
        let Some(names) = &plan.spec.stages.cpu else {
            return Ok(());
        };
        if let Some((i, why)) = unknown_name(triple, names) {
            let line = plan.spec.stages.cpu_lines.get(i).copied().unwrap_or(0);
            anyhow::bail!("{}:{line}: [stages] cpu: {why}", plan.spec.path.display());
        }
        Ok(())
    }
}

/// The settings [`offers`] builds at once on top of `best` (for [`super::ahead`]): every
/// candidate CPU this machine runs, except a `native` built only if the level before it
/// is kept.
pub(crate) fn ahead(ctx: &Context, best: &BuildSettings) -> Vec<(String, BuildSettings)> {
    let triple = best
        .target
        .clone()
        .unwrap_or_else(|| ctx.plan.rustc.host.clone());
    if triple != ctx.plan.rustc.host {
        return Vec::new();
    }
    let facts = CpuFacts::gather();
    let names = match &ctx.spec.stages.cpu {
        Some(list) => list.clone(),
        None => default_candidates(facts.arch, facts.x86_64_level, facts.aarch64_cpu.as_deref()),
    };
    let after_level = ctx.spec.stages.cpu.is_none() && names.len() > 1;
    let Ok(native) = features(&triple, "native") else {
        return Vec::new();
    };
    names
        .iter()
        .filter(|n| !(after_level && *n == "native"))
        .filter(|n| check(&triple, n, &native).is_ok())
        .map(|n| (crate::context::label("cpu", Some(n)), settings_for(best, n)))
        .collect()
}

fn build(
    ctx: &Context,
    best: &Candidate,
    name: &str,
    native_cpu: Option<&str>,
) -> Result<Candidate, StageError> {
    let settings = settings_for(&best.settings, name);
    let native = name == "native";
    let facts = StageFacts {
        variant: Some(name.to_string()),
        target_cpu: Some(name.to_string()),
        native_cpu: native_cpu.filter(|_| native).map(str::to_string),
        ..Default::default()
    };
    let (mut cand, _) = super::build_candidate(ctx, StageName::Cpu, settings, facts)?;
    if native {
        cand.notes.push(format!(
            "built for this machine's CPU{}: it may crash (illegal instruction) on other CPUs",
            native_cpu.map(|n| format!(" ({n})")).unwrap_or_default()
        ));
    }
    Ok(cand)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_level_then_native() {
        assert_eq!(
            default_candidates("x86_64", Some(X86Level::V4), None),
            ["x86-64-v4", "native"]
        );
        assert_eq!(
            default_candidates("x86_64", Some(X86Level::V1), None),
            ["native"]
        );
        assert_eq!(default_candidates("x86_64", None, None), ["native"]);
        assert_eq!(default_candidates("aarch64", None, None), ["native"]);
        assert_eq!(
            default_candidates("aarch64", None, Some("neoverse-v1")),
            ["neoverse-v1", "native"]
        );
    }

    #[test]
    fn features_from_cfg_and_what_is_missing() {
        let cfg = "debug_assertions\ntarget_feature=\"avx2\"\ntarget_feature=\"sse2\"\nunix\n";
        let f = parse_features(cfg);
        assert_eq!(f.iter().collect::<Vec<_>>(), ["avx2", "sse2"]);
        let have = parse_features("target_feature=\"sse2\"\n");
        assert_eq!(missing_features(&f, &have), ["avx2"]);
        assert!(missing_features(&have, &f).is_empty());
    }

    #[test]
    fn native_has_what_x86_64_baseline_needs() {
        let triple = crate::toolchain::rustc()
            .map(|r| r.host)
            .unwrap_or_default();
        if !triple.starts_with("x86_64") {
            return;
        }
        let native = features(&triple, "native").unwrap();
        assert!(check(&triple, "x86-64", &native).is_ok());
        let unknown = features(&triple, "no-such-cpu").unwrap_err();
        assert!(unknown.contains("does not know"), "{unknown}");
    }
}
